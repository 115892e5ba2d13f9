"""Reading inputs and writing outputs: `-` is stdin/stdout; files are written atomically."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import click

from mapc.engine.problems import MapcError


def input_limit() -> int | None:
    """The largest input, in bytes, that the running command reads (None: no limit; `--max-input-bytes`)."""
    from mapc.cli.boundary import options

    return options().max_input_bytes


def check_limit(path: str, limit: int | None) -> None:
    """MapcError `input.too_large` when file `path` is over `limit` (OSError when it is unreadable)."""
    if limit is not None:
        size = Path(path).stat().st_size
        if size > limit:
            raise _too_large(size, limit)


def read_limited(path: str, limit: int | None) -> bytes:
    """The bytes of file `path`; MapcError `input.too_large` (before reading) over `limit` bytes."""
    check_limit(path, limit)
    return Path(path).read_bytes()


def _too_large(size: int | str, limit: int) -> MapcError:
    message = f"the input is {size} bytes, over the limit of {limit} (--max-input-bytes)"
    return MapcError.single("input.too_large", "", message)


def read_bytes(path: str) -> bytes:
    """The bytes of `path`, or of stdin for ``-``; an unreadable file is a usage error (exit 2), one
    over `--max-input-bytes` invalid input (exit 1)."""
    from mapc.cli.boundary import file_context

    limit = input_limit()
    with file_context(path):
        if path == "-":
            data = sys.stdin.buffer.read() if limit is None else sys.stdin.buffer.read(limit + 1)
            if limit is not None and len(data) > limit:
                raise _too_large(f"more than {limit}", limit)
            return data
        try:
            return read_limited(path, limit)
        except OSError as exc:
            raise click.BadParameter(f"cannot read {path}: {exc.strerror or exc}", param_hint="INPUT") from None


def write_chunks(path: str, chunks: Iterator[bytes]) -> None:
    """Write `chunks` to `path` through a temporary file renamed into place once all are written;
    if making them fails, the temporary file is removed and `path` is left as it was."""
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    except OSError as exc:
        raise _unwritable(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
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


def _unwritable(path: str, exc: OSError) -> click.BadParameter:
    """An output that cannot be written (no such directory, no permission) is a usage error."""
    return click.BadParameter(f"cannot write {path}: {exc.strerror or exc}", param_hint="-o")


def write_atomically(target: Path, data: bytes) -> None:
    """Write `data` to `target` through a temporary file in the same directory, renamed into place.

    Readers see the old file or the whole new one, never a part; on any error the temporary file is
    removed and `target` is left as it was.  (No click here: corpus workers use it too.)
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a written file gets the usual mode
        os.replace(tmp, target)
    except BaseException:
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
