"""An on-disk cache of what loading a spec costs: its parsed YAML and the code compiled for it.

Off unless a caller turns it on (`use(directory)`): the library never writes files on its own; the
command line turns it on in the user's cache directory (cli/main.py, docs/cli.md "Spec cache").

What is cached, and why it is safe:

- the *data* of a parsed spec file (JSON: the plain values and the line/column of each node), keyed
  by a hash of the spec text and of mapc's version.  It is read back as untrusted data and goes through
  the same checks as a spec file read from YAML (engine/spec.py), so it can say no more than a spec can.
- the *bytecode* of code that mapc generates (a compiled spec, a compiled JSON Schema), keyed by a hash
  of the generated source.  A spec given by path has its source made again on every run; a shipped
  spec's whole compiled program may be kept (below).
- the *generated source and constants* of a shipped JSON Schema (engine/schema.py), keyed by the
  schema's text and the compiler's own source, so that checking a Storyline does not compile the
  hub schema on every run; the constants are tagged JSON (regexes, sets, JSON values).
- the *compiled program* of a shipped spec (engine/stored.py): its values pickled beside the bytecode
  of its generated code, keyed by the spec's text and a fingerprint of the engine's and the formats'
  modules, so that a run of a shipped spec loads it without reading, checking or compiling the spec.

Code runs when loaded, so a code, schema or program entry is used only when all of these hold: the directory
and the file belong to this user and nobody else may write to them (as ssh checks its keys); and the
entry carries a keyed hash (BLAKE3) of its name and its bytes under a secret that only this user's
mapc knows (a 0600 file in the directory), so an entry not written by this user's mapc — copied in,
planted by another account, or damaged — is ignored and made again.

Anything wrong with the cache (unwritable, damaged, another version) means it is not used: never an error.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import stat
import sys
from pathlib import Path
from types import CodeType
from typing import Any

import blake3
import orjson

_VERSION = "1"
_state: dict[str, Any] = {"dir": None, "secret": None}


def _tag() -> bytes:
    from mapc import __version__

    return f"mapc {__version__} cache {_VERSION} python {sys.implementation.cache_tag}".encode()


def use(directory: str | os.PathLike[str] | None) -> None:
    """Cache in `directory` (made if needed, mode 0700), or not at all (None, the default)."""
    _state["dir"] = None if directory is None else Path(directory)
    _state["secret"] = None


def directory() -> Path | None:
    """The cache directory in use, if any."""
    found: Path | None = _state["dir"]
    return found


def _private(path: Path, *, is_dir: bool) -> bool:
    """Whether `path` belongs to this user and nobody else may write to it."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    kind = stat.S_ISDIR(st.st_mode) if is_dir else stat.S_ISREG(st.st_mode)
    mine = not hasattr(os, "geteuid") or st.st_uid == os.geteuid()
    return kind and mine and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _root() -> Path | None:
    root: Path | None = _state["dir"]
    if root is None:
        return None
    try:
        root.mkdir(parents=True, mode=0o700, exist_ok=True)
    except OSError:
        return None
    return root if _private(root, is_dir=True) else None


def _secret(root: Path) -> bytes | None:
    if _state["secret"] is not None:
        return bytes(_state["secret"])
    key = root / "secret"
    try:
        if not key.exists():
            _write(key, os.urandom(32))
        if not _private(key, is_dir=False) or stat.S_IMODE(os.lstat(key).st_mode) & 0o077:
            return None
        secret = key.read_bytes()
    except OSError:
        return None
    if len(secret) != 32:
        return None
    _state["secret"] = secret
    return secret


def _write(target: Path, data: bytes) -> None:
    """Write through a 0600 temporary file renamed into place (readers see all of it or none)."""
    import tempfile  # only when writing: a cache hit does not pay for it

    fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, target)
    except BaseException:  # any failure, Ctrl-C included: no temporary file left behind, then re-raised
        Path(tmp).unlink(missing_ok=True)
        raise


def _entry(kind: str, key: bytes) -> tuple[Path, bytes] | None:
    root = _root()
    if root is None:
        return None
    secret = _secret(root)
    if secret is None:
        return None
    name = blake3.blake3(_tag() + b"\0" + kind.encode() + b"\0" + key).hexdigest()
    return root / f"{kind}-{name}", secret


def _load(kind: str, key: bytes) -> bytes | None:
    entry = _entry(kind, key)
    if entry is None:
        return None
    path, secret = entry
    if not _private(path, is_dir=False):
        return None
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    mac, body = blob[:32], blob[32:]
    if blake3.blake3(path.name.encode() + body, key=secret).digest() != mac:
        return None  # not written by this user's mapc, or damaged: made again
    return body


def _store(kind: str, key: bytes, body: bytes) -> None:
    entry = _entry(kind, key)
    if entry is None:
        return
    path, secret = entry
    mac = blake3.blake3(path.name.encode() + body, key=secret).digest()
    with contextlib.suppress(OSError):  # a cache that cannot be written is no cache
        _write(path, mac + body)


def compiled(source: str, filename: str) -> CodeType:
    """``compile(source, filename, "exec")``, from the cache when it holds this very source's code."""
    key = blake3.blake3(source.encode("utf-8", "surrogatepass") + b"\0" + filename.encode()).digest()
    body = _load("code", key)
    if body is not None:
        try:
            code = marshal.loads(body)
            if isinstance(code, CodeType):
                return code
        except (ValueError, EOFError, TypeError):
            pass
    code = compile(source, filename, "exec")
    if _state["dir"] is not None:
        _store("code", key, marshal.dumps(code))
    return code


def entry(kind: str, key: bytes) -> bytes | None:
    """The bytes kept under (`kind`, `key`) by `store_entry` (this user's mapc wrote them: their keyed
    hash matches), or None.  What they hold may run code when loaded (engine/stored.py)."""
    return _load(kind, key)


def store_entry(kind: str, key: bytes, body: bytes) -> None:
    """Keep `body` under (`kind`, `key`), with its keyed hash."""
    if _state["dir"] is not None:
        _store(kind, key, body)


def data(kind: str, key: bytes) -> Any | None:
    """The JSON data kept under (`kind`, `key`) by `store_data`, or None; the caller checks its shape."""
    body = _load(kind, key)
    if body is None:
        return None
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def store_data(kind: str, key: bytes, value: Any) -> None:
    """Keep `value` (JSON data) under (`kind`, `key`); data orjson cannot write is not kept."""
    if _state["dir"] is None:
        return
    try:
        body = orjson.dumps(value)
    except TypeError:
        return
    _store(kind, key, body)


def spec_data(text: str) -> Any | None:
    """The cached parse of spec `text` (JSON data, checked again by the caller), or None."""
    return data("spec", text.encode("utf-8", "surrogatepass"))


def store_spec_data(text: str, value: Any) -> None:
    """Keep the parse of spec `text`; data orjson cannot write is not kept."""
    store_data("spec", text.encode("utf-8", "surrogatepass"), value)
