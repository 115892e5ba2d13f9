"""Event-stream sessions on disk: the companion files of a session (Claude Code's subagent
transcripts beside it), found by the glob its format's spec declares (`document.stream.children`)."""

from __future__ import annotations

import glob
import os
import stat
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath


def _suffixless(name: str) -> str:
    return name.rsplit(".", 1)[0] if "." in name else name


def companions(pattern: str, path: str) -> list[str]:
    """The regular files (no links) that `pattern` names beside the session file `path`, sorted."""
    base = Path(path).parent
    wanted = pattern.replace("{stem}", glob.escape(_suffixless(Path(path).name))).replace("{key}", "*")
    out = []
    for found in sorted(base.glob(wanted)):
        try:
            st = os.lstat(found)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and not any(
            p.is_symlink() for p in found.relative_to(base).parents if p != Path(".")
        ):
            out.append(str(found))
    return out


def owner(pattern: str, path: str) -> str | None:
    """The session file `path` is a companion of (when it exists), else None."""
    parts = PurePosixPath(pattern).parts
    mine = Path(path)
    if len(mine.parts) <= len(parts):
        return None
    base = Path(*mine.parts[: len(mine.parts) - len(parts)])
    stem = mine.parts[len(mine.parts) - len(parts)]
    rel = PurePosixPath(*mine.parts[len(mine.parts) - len(parts) :]).as_posix()
    if not fnmatchcase(rel, pattern.replace("{stem}", glob.escape(stem)).replace("{key}", "*")):
        return None
    for name in os.listdir(base) if base.is_dir() else ():
        if _suffixless(name) == stem and name != stem and (base / name).is_file():
            return str(base / name)
    return None
