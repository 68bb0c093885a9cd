"""Reading one input's bytes without hanging and without growing without bound.

A path is opened with `O_NONBLOCK` (where the OS has it), so that opening a FIFO never
waits for a writer, and `fstat`-checked: only a regular file is read, so a FIFO, a socket
or a device (`/dev/zero`) named on the command line or met by a walk (or swapped in for a
file while one runs) is refused, never read.  At most `limit` bytes are read from a file or
from standard input (the `max-file-bytes` option); a larger input is refused, naming its
size and the option.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

#: The option that sets the cap, as messages name it.
LIMIT_OPTION = "max-file-bytes"
_CHUNK = 1 << 20
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)


class Refused(Exception):
    """An input that is not read: not a regular file, or larger than the cap."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class TooLarge(Refused):
    """An input larger than the cap."""


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "an unknown kind of file"


def too_large(size: str, limit: int, option: str = LIMIT_OPTION) -> str:
    return f"{size}, larger than {option} ({limit} bytes): not read; raise {option} in the configuration to check it"


def read_regular(path: str, limit: int, option: str = LIMIT_OPTION) -> bytes:
    """The bytes of the regular file `path`: OSError when it cannot be opened or read,
    Refused when it is no regular file or holds more than `limit` bytes."""
    descriptor = os.open(path, _OPEN_FLAGS)
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise Refused(f"not a regular file ({_kind(status.st_mode)}): not read")
        if status.st_size > limit:
            raise TooLarge(too_large(f"{status.st_size} bytes", limit, option))
        chunks: list[bytes] = []
        total = 0
        want = max(status.st_size + 1, 1 << 16)  # files that say they are empty (/proc) still say something
        while total <= limit:
            chunk = os.read(descriptor, min(want, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(descriptor)
    if total > limit:  # it grew while it was read
        raise TooLarge(too_large(f"more than {limit} bytes", limit, option))
    return b"".join(chunks)


def read_stream(stream: BinaryIO, limit: int, option: str = LIMIT_OPTION) -> bytes:
    """At most `limit` bytes of `stream` (standard input); Refused when it holds more."""
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = stream.read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if total > limit:
        raise TooLarge(too_large(f"more than {limit} bytes", limit, option))
    return b"".join(chunks)


def read_input(path: str, limit: int, stdin: BinaryIO | None = None) -> bytes | str:
    """An input's bytes (read from `stdin` when it is given: the input `-`), or why it was
    not read, as an input error says it."""
    try:
        if stdin is not None:
            return read_stream(stdin, limit)
        return read_regular(path, limit)
    except Refused as refused:
        return refused.reason
    except OSError as error:
        return f"cannot read: {error.strerror or error}"
