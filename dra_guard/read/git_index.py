"""Which files git tracks in a repository, read from its index without running git.

Git's ignore rules apply to untracked files only: a file in the index stays tracked, and
`kubectl apply -R` applies it, whatever a `.gitignore` added later says, and `git add -f`
tracks files inside an ignored folder.  The walk (`dra_guard.read.walk.Ignores`) asks
here before it leaves out what a `.gitignore` matches.  No `git` binary is needed: the
index is read as `Documentation/gitformat-index.txt` describes it (versions 2, 3 and 4,
SHA-1 or SHA-256 object names, sparse directory entries), once per repository.

A split index (`core.splitIndex`) keeps most entries in the shared index its `link`
extension names (`sharedindex.<hash>` in the git folder): both are read, and a file is
tracked when either holds it.  The link's bitmaps of entries deleted since are not
decoded, so a file removed from the index after the last split counts as tracked until git
writes the shared index again: the walk then checks it when it is still on disk (more, never
less, than git lists).

An index that cannot be read (a version this module does not know, a checksum that does
not match, a missing shared index) gives None: the walk then goes by the patterns alone, as
it did before it read the index, just as it goes on when a `.gitignore` cannot be read.
"""

from __future__ import annotations

import hashlib
import os
import struct
from typing import NamedTuple

from dra_guard.read.files import Refused, read_head, read_regular

_SIGNATURE = b"DIRC"
#: ctime, mtime (seconds, nanoseconds), dev, ino, mode, uid, gid, size: ten 32-bit fields.
_STAT_BYTES = 40
#: In an entry's 16-bit flags: a second flags word follows (version 3 and later).
_EXTENDED = 0x4000
_NAME_LENGTH = 0x0FFF
#: The largest index read (a repository of a million files has an index of ~100 MB).
MAX_INDEX_BYTES = 1 << 30


class Tracked(NamedTuple):
    """What a repository's index holds, as paths relative to its root with `/`."""

    files: frozenset[str]
    #: Every folder that holds a tracked file at any depth.
    folders: frozenset[str]
    #: Folders a sparse index keeps as one entry: everything below them is tracked.
    trees: frozenset[str]

    def holds(self, relative: str, is_dir: bool) -> bool:
        """Whether git tracks the file `relative`, or (`is_dir`) a file inside the folder."""
        if relative in (self.folders if is_dir else self.files):
            return True
        if self.trees:
            path = relative
            while path:
                if path in self.trees:
                    return True
                path = path.rpartition("/")[0]
        return False


EMPTY = Tracked(frozenset(), frozenset(), frozenset())


def tracked(root: str) -> Tracked | None:
    """The files the repository at `root` (a folder holding `.git`) tracks: none when it has
    no index yet (nothing added), None when its index cannot be read."""
    found = read_tracked(root)
    return found if isinstance(found, Tracked) else None


class Unread(NamedTuple):
    """An index that cannot be read: its path, and why."""

    path: str
    why: str


def read_tracked(root: str) -> Tracked | Unread:
    """`tracked`, saying which index could not be read and why where it gives None."""
    git_dir = _git_dir(root)
    if git_dir is None:
        return Unread(os.path.join(root, ".git"), "no git folder that a `.git` file names")
    index = os.path.join(git_dir, "index")
    try:
        # Opened as inputs are (a FIFO named index would block the walk for good).
        data = read_regular(index, MAX_INDEX_BYTES)
    except FileNotFoundError:
        return EMPTY
    except (OSError, ValueError, Refused) as error:  # ValueError: a NUL in the path a `.git` file gave
        return Unread(index, _why(error))
    try:
        names, shared = _read_index(data)
        if shared is not None:
            index = os.path.join(git_dir, f"sharedindex.{shared}")
            names += parse_index(read_regular(index, MAX_INDEX_BYTES))
    except (OSError, ValueError, Refused) as error:
        return Unread(index, _why(error))
    return _tracked(names)


def _why(error: Exception) -> str:
    return (error.strerror or str(error)) if isinstance(error, OSError) else str(error)


def _git_dir(root: str) -> str | None:
    """The repository's git folder: `.git`, or where a worktree's or submodule's `.git`
    file points (`gitdir: PATH`, relative to `root` when not absolute)."""
    dot_git = os.path.join(root, ".git")
    if os.path.isdir(dot_git):
        return dot_git
    first = os.fsdecode(read_head(dot_git, 4096).partition(b"\n")[0])  # b"" unless a regular file
    if not first.startswith("gitdir:") or "\0" in first:
        return None
    return os.path.join(root, first[len("gitdir:") :].strip())


def exclude_file(root: str) -> str:
    """The repository's `info/exclude`: in its common git folder, which a worktree's git
    folder names in its `commondir` file (git's `repository.c`), a submodule's is its own."""
    git_dir = _git_dir(root) or os.path.join(root, ".git")
    common = os.fsdecode(read_head(os.path.join(git_dir, "commondir"), 4096).partition(b"\n")[0]).strip()
    if common and "\0" not in common:
        git_dir = os.path.join(git_dir, common)
    return os.path.join(git_dir, "info", "exclude")


def parse_index(data: bytes) -> list[bytes]:
    """The path of every entry of the index `data` (a sparse directory's ends in `/`);
    ValueError where it is no index this module can read, or a split index."""
    names, shared = _read_index(data)
    if shared is not None:
        raise ValueError("a split index: most of its entries are in its shared index")
    return names


def _read_index(data: bytes) -> tuple[list[bytes], str | None]:
    """The paths an index holds, and the hash naming its shared index when it is split
    (the entries it replaces there, written without a path, are left out)."""
    if len(data) < 12 or data[:4] != _SIGNATURE:
        raise ValueError("not a git index")
    version, count = struct.unpack_from(">II", data, 4)
    if version not in (2, 3, 4):
        raise ValueError(f"index version {version}")
    for hash_size in _hash_sizes(data):
        try:
            names, offset = _entries(data, version, count, hash_size)
            shared = _shared_index(data, offset, len(data) - hash_size, hash_size)
        except (ValueError, struct.error, IndexError):
            continue
        if b"" in names and shared is None:
            continue  # only a split index writes an entry without a path
        return [name for name in names if name], shared
    raise ValueError("entries that do not fit the index")


def _hash_sizes(data: bytes) -> tuple[int, ...]:
    """The object-name sizes the index may use, told by its trailing checksum (SHA-1 or
    SHA-256 of what precedes it); both when it is all zeros (`index.skipHash`)."""
    if len(data) > 20 and hashlib.sha1(data[:-20]).digest() == data[-20:]:
        return (20,)
    if len(data) > 32 and hashlib.sha256(data[:-32]).digest() == data[-32:]:
        return (32,)
    if len(data) > 20 and not any(data[-20:]):
        return (20, 32)
    raise ValueError("the index's checksum does not match")


#: The longest path read from an index: far past any real one (Linux's PATH_MAX is 4,096).
_MAX_NAME_BYTES = 1 << 16
#: Version 4 writes each name as a cut of the previous one plus what differs, so names may
#: add up to more than the index holds: at most this many times its size (plus a MiB), or a
#: crafted 3 MB index of ever longer names took 1.6 GB.  Real prefix compression saves far
#: less.
_NAMES_PER_INDEX_BYTE = 16


def _entries(data: bytes, version: int, count: int, hash_size: int) -> tuple[list[bytes], int]:
    """The entries' paths (empty for one a split index replaces), and where they end."""
    names: list[bytes] = []
    budget = _NAMES_PER_INDEX_BYTE * len(data) + (1 << 20)
    offset = 12
    end = len(data) - hash_size
    previous = b""
    flags_at = _STAT_BYTES + hash_size
    for _ in range(count):
        start = offset
        (flags,) = struct.unpack_from(">H", data, start + flags_at)
        offset = start + flags_at + 2
        if flags & _EXTENDED:
            if version < 3:
                raise ValueError("extended flags in a version 2 index")
            offset += 2
        if version == 4:
            strip, offset = _varint(data, offset)
            if strip > len(previous):
                raise ValueError("a name that strips more than the previous one holds")
            nul = data.index(b"\0", offset, end)
            name = previous[: len(previous) - strip] + data[offset:nul]
            offset = nul + 1
        else:
            nul = data.index(b"\0", offset, end)
            name = data[offset:nul]
            # 1 to 8 NULs end the name and pad the entry to a multiple of 8 bytes.
            offset = start + ((offset - start + len(name) + 8) & ~7)
            if data[nul:offset].strip(b"\0"):
                raise ValueError("padding that is not NUL")
        if (flags & _NAME_LENGTH) != min(len(name), _NAME_LENGTH):
            raise ValueError("a name whose length differs from its entry's")
        budget -= len(name)
        if len(name) > _MAX_NAME_BYTES or budget < 0:
            raise ValueError("names longer than a repository's paths")
        if offset > end:
            raise ValueError("an entry past the end of the index")
        names.append(name)
        previous = name
    return names, offset


def _shared_index(data: bytes, offset: int, end: int, hash_size: int) -> str | None:
    """The hash (hex) of the shared index a split index's `link` extension names; None
    when there is none, or when it is all zeros (the index needs no shared one)."""
    shared = None
    while offset + 8 <= end:
        signature = data[offset : offset + 4]
        (size,) = struct.unpack_from(">I", data, offset + 4)
        if signature == b"link":
            if size < hash_size:
                raise ValueError("a link extension shorter than an object name")
            named = data[offset + 8 : offset + 8 + hash_size]
            shared = named.hex() if any(named) else None
        offset += 8 + size
    if offset != end:
        raise ValueError("extensions that do not fit the index")
    return shared


def _varint(data: bytes, offset: int) -> tuple[int, int]:
    """Git's offset varint (`varint.c`): each byte's high bit says another follows, and every
    byte after the first adds one before shifting.  (value, offset past it)."""
    byte = data[offset]
    offset += 1
    value = byte & 0x7F
    while byte & 0x80:
        byte = data[offset]
        offset += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, offset


def _tracked(names: list[bytes]) -> Tracked:
    files: set[str] = set()
    folders: set[str] = set()
    trees: set[str] = set()
    for raw in names:
        name = os.fsdecode(raw)  # as os.scandir names files: undecodable bytes kept as surrogates
        if name.endswith("/"):
            name = name[:-1]
            trees.add(name)
            folders.add(name)
        else:
            files.add(name)
        folder = name.rpartition("/")[0]
        while folder and folder not in folders:
            folders.add(folder)
            folder = folder.rpartition("/")[0]
    return Tracked(frozenset(files), frozenset(folders), frozenset(trees))
