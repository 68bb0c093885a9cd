"""Reading one input's bytes without hanging and without growing without bound.

`open_input` is how `check` reads: an input of up to `STREAM_ABOVE` bytes whole, a larger
one in blocks (`Opened.blocks`), so that memory follows the largest document, not the file
(`dra_guard.kubectl_yaml.read_pieces`); standard input that large is first copied to an
unlinked temporary file, so that it can be read again.

A path is opened with `O_NONBLOCK` (where the OS has it), so that opening a FIFO never
waits for a writer, and `fstat`-checked: only a regular file is read, so a FIFO, a socket
or a device (`/dev/zero`) named on the command line or met by a walk (or swapped in for a
file while one runs) is refused, never read.  At most `limit` bytes are read from a file or
from standard input (the `max-file-bytes` option); a larger input is refused, naming its
size and the option.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import sys
from collections.abc import Iterator
from typing import IO, Any, BinaryIO

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


def _open(path: str) -> int:
    """`path` opened to read as an input is; Refused for a socket, which POSIX `open`
    refuses with ENXIO ("No such device or address") before fstat could name it."""
    try:
        return os.open(path, _OPEN_FLAGS)
    except OSError as error:
        if error.errno in (errno.ENXIO, errno.EOPNOTSUPP):
            try:
                mode = os.stat(path).st_mode
            except OSError:
                raise error from None
            if stat.S_ISSOCK(mode):
                raise Refused(f"not a regular file ({_kind(mode)}): not read") from None
        raise


def too_large(size: str, limit: int, option: str = LIMIT_OPTION) -> str:
    return f"{size}, larger than {option} ({limit} bytes): not read; raise {option} in the configuration to check it"


def read_regular(path: str, limit: int, option: str = LIMIT_OPTION) -> bytes:
    """The bytes of the regular file `path`: OSError when it cannot be opened or read,
    Refused when it is no regular file or holds more than `limit` bytes."""
    descriptor = _open(path)
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise Refused(f"not a regular file ({_kind(status.st_mode)}): not read")
        if status.st_size > limit:
            raise TooLarge(too_large(f"{status.st_size} bytes", limit, option))
        return _read_descriptor(descriptor, status.st_size, limit, option)
    finally:
        os.close(descriptor)


def _read_descriptor(descriptor: int, size: int, limit: int, option: str = LIMIT_OPTION) -> bytes:
    chunks: list[bytes] = []
    total = 0
    want = max(size + 1, 1 << 16)  # files that say they are empty (/proc) still say something
    while total <= limit:
        chunk = os.read(descriptor, min(want, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if total > limit:  # it grew while it was read
        raise TooLarge(too_large(f"more than {limit} bytes", limit, option))
    return b"".join(chunks)


class _ClosedInput(io.RawIOBase):
    """Standard input where the process has none (`dra-guard check - <&-`: Python sets
    `sys.stdin` to None): reading it fails as reading a closed descriptor does."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        raise OSError(errno.EBADF, "standard input is closed")


def standard_input() -> BinaryIO:
    """The process's standard input, as bytes."""
    if sys.stdin is None:
        return io.BufferedReader(_ClosedInput())
    return sys.stdin.buffer


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


def read_head(path: str, size: int) -> bytes:
    """Up to the first `size` bytes of a regular file, opened as an input is (never waiting
    on a FIFO); empty for anything else, or what cannot be read."""
    try:
        descriptor = os.open(path, _OPEN_FLAGS)
    except OSError:
        return b""
    try:
        return os.read(descriptor, size) if stat.S_ISREG(os.fstat(descriptor).st_mode) else b""
    except OSError:
        return b""
    finally:
        os.close(descriptor)


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


#: Inputs larger than this are read in blocks of `BLOCK_BYTES`, never whole.
STREAM_ABOVE = 8 << 20
BLOCK_BYTES = 1 << 20


class Opened:
    """An input ready to read: `data` when it is small, else blocks of a regular file.

    `blocks()` reads the file from its start, each time it is called; reading stops, and
    `problem` says why, if the file grew past the cap or could not be read."""

    def __init__(self, data: bytes | None, descriptor: int = -1, limit: int = 0, spool: IO[bytes] | None = None):
        self.data = data
        self._descriptor = descriptor
        self._limit = limit
        self._spool = spool
        self.problem: str | None = None
        self._contains: dict[bytes, bool] = {}

    def blocks(self) -> Iterator[bytes]:
        offset = 0
        while True:
            try:
                block = os.pread(self._descriptor, BLOCK_BYTES, offset)
            except OSError as error:
                self.problem = f"cannot read: {error.strerror or error}"
                return
            if not block:
                return
            offset += len(block)
            if offset > self._limit:
                self.problem = too_large(f"more than {self._limit} bytes", self._limit)
                return
            yield block

    def read_all(self) -> bytes:
        """The whole input (at most the cap: `blocks` stops there)."""
        return self.data if self.data is not None else b"".join(self.blocks())

    def contains(self, needle: bytes) -> bool:
        """Whether the input holds `needle` anywhere (found once, then remembered)."""
        if needle not in self._contains:
            if self.data is not None:
                self._contains[needle] = needle in self.data
            else:
                tail, found = b"", False
                for block in self.blocks():
                    if needle in tail + block[: len(needle)] or needle in block:
                        found = True
                        break
                    tail = block[-len(needle) + 1 :] if len(needle) > 1 else b""
                self._contains[needle] = found
        return self._contains[needle]

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()
        elif self._descriptor >= 0:
            os.close(self._descriptor)
        self._descriptor = -1


def open_input(path: str, limit: int, stdin: BinaryIO | None = None) -> Opened | str:
    """An input to read (from `stdin` when it is given: the input `-`), or why it is not read."""
    try:
        if stdin is not None:
            return _open_stream(stdin, limit)
        descriptor = _open(path)
    except Refused as refused:
        return refused.reason
    except OSError as error:
        return f"cannot read: {error.strerror or error}"
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise Refused(f"not a regular file ({_kind(status.st_mode)}): not read")
        if status.st_size > limit:
            raise TooLarge(too_large(f"{status.st_size} bytes", limit))
        if status.st_size > STREAM_ABOVE:
            return Opened(None, descriptor, limit)
        data = _read_descriptor(descriptor, status.st_size, limit)
    except Refused as refused:
        os.close(descriptor)
        return refused.reason
    except OSError as error:
        os.close(descriptor)
        return f"cannot read: {error.strerror or error}"
    os.close(descriptor)
    return Opened(data)


def _open_stream(stream: BinaryIO, limit: int) -> Opened:
    """Standard input: whole when it is small, else copied to an unlinked temporary file."""
    head = read_stream(stream, limit) if limit <= STREAM_ABOVE else _read_some(stream, STREAM_ABOVE + 1)
    if len(head) <= STREAM_ABOVE:
        return Opened(head)
    import tempfile

    # Not a `with`: the spool lives as long as the input is read (Opened.close closes it).
    spool = tempfile.TemporaryFile(prefix="dra-guard-stdin-")  # noqa: SIM115
    try:
        spool.write(head)
        total = len(head)
        while True:
            block = stream.read(BLOCK_BYTES)
            if not block:
                break
            total += len(block)
            if total > limit:
                raise TooLarge(too_large(f"more than {limit} bytes", limit))
            spool.write(block)
        spool.flush()
    except BaseException:
        spool.close()
        raise
    return Opened(None, spool.fileno(), limit, spool)


def _read_some(stream: BinaryIO, size: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while total < size:
        chunk = stream.read(min(_CHUNK, size - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)
