"""What the fast reader needs beyond rapidyaml's Python API: quiet parses, JSON written
into a reused buffer, the addresses of the buffers its tree points into, and its tree's
calls made without the Python proxy's cost (`TreeCalls`).

Imported only with rapidyaml (fast.py), so that a process that never uses it does not
pay for ctypes and threading at start-up.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any


class Native:
    """rapidyaml's calls as the fast reader makes them."""

    def __init__(self, ryml: Any) -> None:
        self.tree = TreeCalls(ryml)
        self.quiet = QuietStderr(self.tree)
        self._emitted = threading.local()

    @staticmethod
    def hold(held: bool) -> None:
        """Inside a batch (`fast.holding_stderr`) or not: at its end, descriptor 2 is given back."""
        Held.depth = 1 if held else 0
        if not held:
            release_held()

    def emit_json(self, tree: Any, node: int) -> bytes:
        """rapidyaml's JSON of `node`, written into a buffer kept per thread: its
        `emit_json` returns a malloc'd copy that is never freed (1 KiB lost per document)."""
        buffer = self._emitted.__dict__.get("buffer")
        if buffer is None:
            buffer = self._emitted.buffer = bytearray(1 << 16)
        emit = self.tree.emit_json_to_substr
        failed, size = emit(tree, node, buffer)
        if failed:
            buffer = self._emitted.buffer = bytearray(max(size, 2 * len(buffer)))
            failed, size = emit(tree, node, buffer)
            if failed:  # pragma: no cover - the buffer was made big enough
                raise ValueError("rapidyaml could not write the document as JSON")
        return bytes(memoryview(buffer)[:size])

    #: Whether `address` can tell (CPython's buffer API through ctypes); if not, libyaml
    #: gives the lines.
    knows_addresses = True

    @staticmethod
    def base_address(buffer: bytearray) -> int | None:
        """Where a (non-empty) buffer's bytes are."""
        try:
            return ctypes.addressof(ctypes.c_char.from_buffer(buffer))
        except (TypeError, ValueError):  # an empty buffer
            return None

    @staticmethod
    def address(view: Any) -> int | None:
        """Where a read-only memoryview's bytes are (rapidyaml's keys and scalars)."""
        if _BUFFER_API is None:
            return None
        get, release = _BUFFER_API
        buffer = _Py_buffer()
        if get(view, ctypes.byref(buffer), 0) != 0:
            return None
        try:
            address: int | None = buffer.buf
            return address
        finally:
            release(ctypes.byref(buffer))


class Held:
    """How many `holding_stderr()` blocks are open (fast.py), and the descriptor 2 they
    saved once it was first swapped: while one is open, descriptor 2 stays swapped from
    the first parse to the end of the block, not swapped back and forth per parse."""

    depth = 0
    saved: int | None = None


class TreeCalls:
    """rapidyaml's tree calls, each taking the tree first: `calls.is_map(tree, node)`.

    rapidyaml's Python API is SWIG's: a `ryml.Tree` is a Python proxy, and every call
    through it (`tree.is_map(node)`) makes SWIG find the C++ tree by looking the proxy's
    `this` attribute up, about 0.5 us a call, 6 % of a check's instructions at 6,000
    documents (callgrind), for the ~15 calls a document's reading makes.  Where the wheel's
    extension module has SWIG's usual functions (`_ryml.Tree_is_map`, `_ryml.new_Tree`,
    ...), the trees are made as SWIG's own objects and those functions called on them
    directly, which takes ~0.1 us (the object owns the C++ tree, and frees it, as the
    proxy would).  Otherwise the proxy's methods are used, as before.
    """

    #: The tree's calls the fast reader makes.
    QUERIES = (
        "root_id",
        "size",
        "is_stream",
        "num_children",
        "first_child",
        "child",
        "find_child",
        "is_map",
        "is_seq",
        "is_block",
        "has_val",
        "val_is_null",
        "is_val_literal",
        "is_val_folded",
        "key",
        "val",
    )

    # Set from QUERIES, each `(tree, *arguments)`.
    root_id: Any
    size: Any
    is_stream: Any
    num_children: Any
    first_child: Any
    child: Any
    find_child: Any
    is_map: Any
    is_seq: Any
    is_block: Any
    has_val: Any
    val_is_null: Any
    is_val_literal: Any
    is_val_folded: Any
    key: Any
    val: Any

    def __init__(self, ryml: Any) -> None:
        extension: Any = getattr(ryml, "_ryml", None)
        direct = extension is not None and all(
            callable(getattr(extension, name, None))
            for name in (
                "new_Tree",
                "parse_substr",
                "parse_csubstr",
                "emit_json_to_substr",
                *(f"Tree_{query}" for query in self.QUERIES),
            )
        )
        #: Whether the calls skip the proxy (tests/test_fast_reader.py holds that they do).
        self.direct = direct
        source, prefix = (extension, "Tree_") if direct else (ryml.Tree, "")
        for query in self.QUERIES:
            setattr(self, query, getattr(source, prefix + query))
        functions: Any = extension if direct else ryml
        self.new_tree: Any = extension.new_Tree if direct else ryml.Tree
        self.parse_substr: Any = functions.parse_substr
        self.parse_csubstr: Any = functions.parse_csubstr
        self.emit_json_to_substr: Any = functions.emit_json_to_substr

    def parse_in_place(self, buffer: bytearray) -> Any:
        """A new tree of `buffer`, parsed in place (its scalars point into the buffer)."""
        tree = self.new_tree()
        self.parse_substr(buffer, tree)
        return tree

    def parse_in_arena(self, data: bytes) -> Any:
        """A new tree of `data`, parsed in a copy in the tree's arena."""
        tree = self.new_tree()
        self.parse_csubstr(data, tree)
        return tree


class QuietStderr:
    """rapidyaml's C++ error handler writes its own text to file descriptor 2 before
    raising; dra-guard reports that document through libyaml instead, with file, line
    and why.  So descriptor 2 points at /dev/null while rapidyaml parses (a lock keeps
    threads from interleaving the swap; a write from another thread in that window is
    lost, which only a parse error makes possible output anyway).  Inside
    `fast.holding_stderr()` (a batch of files: a worker's, a check's) it is swapped once
    for the batch."""

    def __init__(self, calls: TreeCalls) -> None:
        self._calls = calls
        self._lock = threading.Lock()
        self._null: int | None = None

    def parse(self, data: bytes) -> Any:
        """The tree of `data`, parsed in an arena copy (an exception if it is no YAML)."""
        with self._quiet():
            return self._calls.parse_in_arena(data)

    def parse_in_place(self, buffers: Sequence[bytearray | None]) -> list[Any]:
        """The tree of each buffer, parsed in place (its scalars point into the buffer),
        or None for a buffer rapidyaml cannot parse: many documents, one swap of fd 2."""
        trees: list[Any] = []
        with self._quiet():
            for buffer in buffers:
                try:
                    trees.append(None if buffer is None else self._calls.parse_in_place(buffer))
                except Exception:  # rapidyaml's parse errors: libyaml says what is wrong, and where
                    trees.append(None)
        return trees

    @contextlib.contextmanager
    def _quiet(self) -> Iterator[None]:
        with self._lock:
            if Held.saved is not None:
                yield  # swapped for the batch already
                return
            try:
                if self._null is None:
                    self._null = os.open(os.devnull, os.O_WRONLY)
                saved = os.dup(2)
            except OSError:  # no descriptor 2, or none left: parse as is
                yield
                return
            try:
                os.dup2(self._null, 2)
                yield
            finally:
                if Held.depth:
                    Held.saved = saved  # given back when the batch ends
                else:
                    os.dup2(saved, 2)
                    os.close(saved)


def release_held() -> None:
    """Give descriptor 2 back, if a batch swapped it (`fast.holding_stderr`)."""
    saved = Held.saved
    if saved is not None:
        Held.saved = None
        os.dup2(saved, 2)
        os.close(saved)


class _Py_buffer(ctypes.Structure):
    """CPython's Py_buffer, to learn where a read-only memoryview's bytes are."""

    _fields_ = (
        ("buf", ctypes.c_void_p),
        ("obj", ctypes.py_object),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", ctypes.c_void_p),
        ("strides", ctypes.c_void_p),
        ("suboffsets", ctypes.c_void_p),
        ("internal", ctypes.c_void_p),
    )


def _buffer_api() -> tuple[Any, Any] | None:
    try:
        get, release = ctypes.pythonapi.PyObject_GetBuffer, ctypes.pythonapi.PyBuffer_Release
    except (AttributeError, ValueError):  # not CPython
        return None
    get.argtypes = (ctypes.py_object, ctypes.POINTER(_Py_buffer), ctypes.c_int)
    get.restype = ctypes.c_int
    release.argtypes = (ctypes.POINTER(_Py_buffer),)
    release.restype = None
    return get, release


_BUFFER_API = _buffer_api()
Native.knows_addresses = _BUFFER_API is not None
