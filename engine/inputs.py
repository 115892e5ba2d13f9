"""Reading an input file: a regular file only, and never more than the input limit.

A FIFO, a device or a socket named like an input (``corpus/x.json`` a FIFO, ``/dev/zero``) would
block the open or never end; such a file is refused before a byte is read (`NotRegularFile`).  The
limit (``mapc --max-input-bytes N``, passed through the environment so worker processes apply it
too) is enforced on the bytes actually read, not on what ``st_size`` claims: a file that grows
while it is read is cut off at the limit and refused.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from typing import BinaryIO, Final

from mapc.engine.problems import MapcError

LIMIT_ENV: Final = "MAPC_MAX_INPUT_BYTES"

_KINDS: Final = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotRegularFile(OSError):
    """The path names something other than a regular file; `strerror` says what."""


def kind(mode: int) -> str:
    """What a file of `mode` is, in words (``a FIFO``); ``a regular file`` for one."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def input_limit() -> int | None:
    """The largest input, in bytes, that a command reads (None: no limit)."""
    text = os.environ.get(LIMIT_ENV, "")
    return int(text) if text.isdigit() and int(text) > 0 else None


def too_large(size: int | str, limit: int) -> MapcError:
    message = f"the input is {size} bytes, over the limit of {limit} (--max-input-bytes)"
    return MapcError.single("input.too_large", "", message)


def open_regular(path: str) -> BinaryIO:
    """`path` opened for reading; `NotRegularFile` (an OSError) unless it is a regular file.

    The open does not block (``O_NONBLOCK``: a FIFO without a writer would wait forever), and the
    check is made on the open descriptor, so a name swapped for a FIFO after a check cannot slip by.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(0, f"not a regular file ({kind(mode)})", path)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:  # any failure, Ctrl-C included: the descriptor is closed, then re-raised
        os.close(fd)
        raise


def read_input(path: str, limit: int | None = None) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them (default: `input_limit`).

    A file whose size is over the limit is refused unread; one that turns out longer while it is
    read is refused once ``limit + 1`` bytes have been read (`input.too_large`).
    """
    limit = input_limit() if limit is None else limit
    with open_regular(path) as handle:
        if limit is None:
            return handle.read()
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise too_large(size, limit)
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise too_large(f"more than {limit}", limit)
    return data


def limited_lines(handle: BinaryIO, limit: int | None) -> Iterator[bytes]:
    """The lines of `handle`, refusing (`input.too_large`) once more than `limit` bytes were read."""
    read = 0
    for line in handle:
        read += len(line)
        if limit is not None and read > limit:
            raise too_large(f"more than {limit}", limit)
        yield line
