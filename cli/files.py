"""Reading inputs and writing outputs: `-` is stdin/stdout; files are written atomically."""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import click

from mapc.engine.inputs import (
    LIMIT_ENV,
    NotRegularFile,
    kind,
    limited_lines,
    open_regular,
    read_input,
    too_large,
)

__all__ = ["LIMIT_ENV", "NotRegularFile", "input_limit", "limited_lines", "open_regular"]


def input_limit() -> int | None:
    """The largest input, in bytes, that the running command reads (None: no limit; `--max-input-bytes`,
    from the job's `Options`: cli/boundary.py)."""
    from mapc.cli.boundary import options

    return options().max_input_bytes


def check_limit(path: str, limit: int | None) -> None:
    """MapcError `input.too_large` when file `path` is over `limit` by its size (OSError when unreadable)."""
    if limit is not None:
        size = Path(path).stat().st_size
        if size > limit:
            raise too_large(size, limit)


_COMMAND: Any = object()


def read_limited(path: str, limit: int | None = _COMMAND) -> bytes:
    """The bytes of the regular file `path`; MapcError `input.too_large` over `limit` (default: the
    running command's `--max-input-bytes`), counting the bytes read, not trusting the size;
    `NotRegularFile` (an OSError) for a FIFO, a device, …"""
    return read_input(path, input_limit() if limit is _COMMAND else limit)


def read_bytes(path: str) -> bytes:
    """The bytes of `path`, or of stdin for ``-``; an unreadable file is a usage error (exit 2), one
    over `--max-input-bytes` invalid input (exit 1)."""
    from mapc.cli.boundary import file_context

    limit = input_limit()
    with file_context(path):
        if path == "-":
            data = sys.stdin.buffer.read() if limit is None else sys.stdin.buffer.read(limit + 1)
            if limit is not None and len(data) > limit:
                raise too_large(f"more than {limit}", limit)
            return data
        try:
            return read_limited(path, limit)
        except NotRegularFile as exc:
            message = f"cannot read {shown(path)}: {exc.strerror}; give its content on stdin as -"
            raise click.BadParameter(message, param_hint="INPUT") from None
        except OSError as exc:
            raise click.BadParameter(f"cannot read {shown(path)}: {exc.strerror or exc}", param_hint="INPUT") from None


def write_chunks(path: str, chunks: Iterator[bytes]) -> None:
    """Write `chunks` to `path` through a temporary file renamed into place once all are written;
    if making them fails, the temporary file is removed and `path` is left as it was."""
    target = Path(path)
    try:
        fd, tmp = _temporary(target)
    except OSError as exc:
        raise _unwritable(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:  # any failure, Ctrl-C included: no temporary file left behind, then re-raised
        Path(tmp).unlink(missing_ok=True)
        raise


def is_jsonl(path: str) -> bool:
    """JSONL/NDJSON inputs are recognized by their extension."""
    return path.endswith((".jsonl", ".ndjson"))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_bytes(path: str | None, data: bytes) -> None:
    """Write `data` to stdout, or to `path` through a temporary file renamed into place."""
    if path is None or path == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    try:
        write_atomically(Path(path), data)
    except OSError as exc:
        raise _unwritable(path, exc) from None


def _temporary(target: Path) -> tuple[int, str]:
    """A new hidden temporary file beside `target` (its descriptor and name), made as `tempfile.mkstemp`
    makes one (a random name, created exclusively, mode 0600), without importing tempfile (with
    shutil and random, milliseconds of a small `mapc run -o`)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    name = ""
    for _ in range(100):  # as mkstemp: another name when one is taken
        name = os.path.join(target.parent or ".", f".{target.name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(name, flags, 0o600), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", name)


def _unwritable(path: str, exc: OSError) -> click.BadParameter:
    """An output that cannot be written (no such directory, no permission) is a usage error."""
    return click.BadParameter(f"cannot write {path}: {exc.strerror or exc}", param_hint="-o")


def write_atomically(target: Path, data: bytes) -> None:
    """Write `data` to `target` through a temporary file in the same directory, renamed into place.

    Readers see the old file or the whole new one, never a part; on any error the temporary file is
    removed and `target` is left as it was.  (No click here: corpus workers use it too.)
    """
    fd, tmp = _temporary(target)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a written file gets the usual mode
        os.replace(tmp, target)
    except BaseException:  # any failure, Ctrl-C included: no temporary file left behind, then re-raised
        Path(tmp).unlink(missing_ok=True)
        raise


def document_path(path: str) -> str | None:
    """The input's path as a document id: relative to the working directory when it lies inside,
    else its file name (formats that name documents by path reject absolute paths and `..`)."""
    if path == "-":
        return None
    p = Path(path)
    try:
        return p.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return p.name


@dataclass(frozen=True, slots=True)
class Found:
    """A file a directory walk came upon: `path` as shown, `rel` its posix path relative to the root.

    `size` is set for a regular file; a symbolic link (`link`, never followed) and anything else
    that is not a regular file (`other`: ``a FIFO``, ``a socket``, …) have none.
    """

    path: str
    rel: str
    size: int | None
    link: bool = False
    other: str | None = None


def walk(root: str, suffixes: tuple[str, ...], errors: list[OSError], prune: Path | None = None) -> Iterator[Found]:
    """The files under `root` whose names end in one of `suffixes`, one directory at a time in sorted order.

    The one walk of `mapc convert DIR` and `mapc store DIR`.  Hidden entries (a leading ``.``) and
    Lance tables (``*.lance`` directories) are passed over; the directory `prune` (an output directory
    inside `root`) is not entered; symbolic links, to files or to directories, are never followed but
    yielded (`Found.link`) so the caller can say so; a FIFO, device or socket with a matching name is
    yielded unopened (`Found.other`).  Directories that cannot be listed go to `errors`.
    """
    for dirpath, dirnames, filenames in os.walk(root, onerror=errors.append):
        rel_dir = PurePosixPath(Path(dirpath).relative_to(root).as_posix())
        keep = []
        for name in sorted(dirnames):
            full = os.path.join(dirpath, name)
            if name.startswith(".") or name.endswith(".lance"):
                continue
            if os.path.islink(full):
                yield Found(full, str(rel_dir / name), None, link=True)
            elif prune is None or Path(os.path.realpath(full)) != prune:
                keep.append(name)
        dirnames[:] = keep
        for name in sorted(filenames):
            if name.startswith(".") or not name.endswith(suffixes):
                continue
            full = os.path.join(dirpath, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue  # vanished while walking
            rel = str(rel_dir / name)
            if stat.S_ISLNK(st.st_mode):
                yield Found(full, rel, None, link=True)
            elif not stat.S_ISREG(st.st_mode):
                yield Found(full, rel, None, other=kind(st.st_mode))
            else:
                yield Found(full, rel, st.st_size)


_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def shown(text: str) -> str:
    """`text` (a file name, or a line holding one) safe to print on one line of a terminal or a log.

    Control characters (a newline, a carriage return, an escape sequence), C1 controls, U+2028 and
    U+2029 and the lone surrogates of undecodable bytes become ``\\xNN`` / ``\\uNNNN``, so a file named
    ``a.json\\nconverted 9 files`` cannot forge a line of mapc's output.  Backslashes are kept.
    """
    return _UNSAFE.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)
