"""What makes the shards of a CI matrix one check: the same input, file by file and byte for
byte, and the same configuration.  Every shard works both out for the whole input, not only
its share, so that `merge` can tell shards of one checkout from shards of two (a matrix job
run again after the branch moved) even where the file list and sizes are the same.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import fields, is_dataclass
from datetime import date
from enum import Enum
from typing import Any

from dra_guard.distribute.pool import dispatchable
from dra_guard.read.files import open_input
from dra_guard.read.inputs import CHART, RENDERED, Unit
from dra_guard.read.walk import walk_tree
from dra_guard.ruleapi.config import Config
from dra_guard.ruleapi.options import Secret


def input_digest(units: Iterable[Unit], limit: int) -> str:
    """Every part of the input, in order, with its contents: each file's bytes (read as the
    check reads them, at most `limit`), what the kustomizations rendered, each chart folder's
    files.  Standard input counts by name only: each shard has its own (a CI matrix gives it
    none)."""
    digest = hashlib.blake2b(digest_size=32)
    for unit in units:
        digest.update(
            json.dumps([unit.position, unit.kind, unit.path, unit.found, unit.in_chart]).encode(
                "utf-8", "surrogateescape"
            )
        )
        if dispatchable(unit):
            _file(digest, unit.path, limit)
        elif unit.kind == RENDERED:
            for item in unit.rendered:  # documents and errors: dataclasses, whose repr holds their values
                digest.update(repr(item).encode("utf-8", "surrogateescape"))
        elif unit.kind == CHART:
            _folder(digest, unit.path, limit)
    return digest.hexdigest()


def _file(digest: Any, path: str, limit: int) -> None:
    """The file's bytes, opened as the check opens an input (`open_input`: non-blocking,
    regular files only, so a FIFO in the tree never hangs a shard); what stops them being
    read (gone, no regular file, past `limit`) stands in for them, as the check reports it."""
    opened = open_input(path, limit)
    if isinstance(opened, str):
        digest.update(("\0" + opened).encode("utf-8", "surrogateescape"))
        return
    try:
        for block in [opened.data] if opened.data is not None else opened.blocks():
            digest.update(block)
        if opened.problem is not None:
            digest.update(("\0" + opened.problem).encode("utf-8", "surrogateescape"))
    finally:
        opened.close()


def _folder(digest: Any, folder: str, limit: int) -> None:
    """Each regular file under `folder` (links not followed into other folders), by its
    path relative to the folder, in sorted order."""
    for root, folders, files in walk_tree(folder):
        folders.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            digest.update(os.path.relpath(path, folder).encode("utf-8", "surrogateescape") + b"\0")
            _file(digest, path, limit)


def config_fingerprint(config: Config) -> str:
    """The configuration's values, canonically, hashed: secrets count only as set."""
    digest = hashlib.sha256(json.dumps(_canonical(dict(config.values)), sort_keys=True).encode("utf-8"))
    return digest.hexdigest()


def _canonical(value: Any) -> Any:
    if isinstance(value, Secret):
        return "<secret>"
    if isinstance(value, Mapping):
        return {str(key): _canonical(item) for key, item in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, set | frozenset):
        return sorted((_canonical(item) for item in value), key=repr)
    if isinstance(value, list | tuple):
        return [_canonical(item) for item in value]
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, date):
        return value.isoformat()
    if is_dataclass(value) and not isinstance(value, type):
        return [type(value).__name__, {item.name: _canonical(getattr(value, item.name)) for item in fields(value)}]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)
