"""What marks a facts file (`dra-guard check --shard I/N --facts-out F`), apart from the
shards machinery so that a walk can tell one without importing it.

A facts file is dra-guard's own output, never an input: a walk that meets one (the facts of
shard 1, written into the tree that shard 2 then walks) leaves it out, as it leaves out the
report file, so that every shard selects the same files and a check of the tree reports
what it would have without it.
"""

from __future__ import annotations

import json

from dra_guard.read.files import read_head

FORMAT = "dra-guard facts"
#: 2: the header holds the body's checksum, and the input's digest covers its contents.
FORMAT_VERSION = 2
#: A header is a few hundred bytes: its keys, four SHA-256 digests and small values.
_HEADER_BYTES = 4096
#: What the payload begins with: pickle's protocol marker (`codec.dump_value`).
_PAYLOAD_START = b"\x80"
#: The keys of a header (`shards.check_shard`), exactly: one holding anything else, such as
#: `kind` and `items`, may be a Kubernetes object itself.
HEADER_KEYS = frozenset(
    {"configuration", "dra-guard", "format", "input", "parts", "python"}
    | {"sha256", "shard", "shards", "today", "version"}
)


def is_facts_file(path: str) -> bool:
    """Whether `path` is a regular file whose first line is a facts header with this
    version's keys, followed by a pickled payload.

    Both make it safe to leave out: kubectl reads a JSON file as a stream of objects and
    applies each it can, so a file that only begins like a facts file could hide a manifest
    behind that line, or in it (`{"format": "dra-guard facts", "kind": "List", "items":
    [...]}`); but the header's keys are dra-guard's alone, and nothing can follow a byte
    0x80, which no JSON or YAML reader gets past."""
    line, newline, rest = read_head(path, _HEADER_BYTES).partition(b"\n")
    if not newline or not line.startswith(b"{") or not rest.startswith(_PAYLOAD_START):
        return False
    try:
        header = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: a header nested past Python's stack
        return False
    return isinstance(header, dict) and header.keys() == HEADER_KEYS and header.get("format") == FORMAT
