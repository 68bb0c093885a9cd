"""What a check sees of a file, read by the fast reader or by PyYAML alone: the one way the
reading tests (test_fast_reader, test_yaml_fuzz) compare the two readers."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from dra_guard.contract.findings import InputError
from dra_guard.kubectl_yaml import fast
from dra_guard.read.loader import Document, iter_bytes


def paths(value: Any, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Every path in a JSON-like value, the value's own first."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for position, item in enumerate(value):
            yield from paths(item, (*prefix, position))


def reading(data: bytes, name: str) -> list[Any]:
    """Everything a check sees of a file: objects with their lines, errors with theirs."""
    seen: list[Any] = []
    for item in iter_bytes(data, name):
        if isinstance(item, InputError):
            seen.append(("error", item.file, item.line, item.message))
        else:
            assert isinstance(item, Document)
            lines = [item.line_of(path) for path in paths(item.obj)]
            seen.append(("object", json.dumps(item.obj, sort_keys=True), item.index, item.line, lines))
    return seen


def with_pyyaml_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader as it is where the rapidyaml wheel is not installed."""
    monkeypatch.setattr(fast._Rapidyaml, "module", None)
    monkeypatch.setattr(fast._Rapidyaml, "loaded", True)


def both_readings(
    files: Sequence[bytes], name: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[list[Any]], list[list[Any]]]:
    """Each file's `reading` by the fast reader, then by PyYAML alone (one patch for all)."""
    fast_readings = [reading(data, name) for data in files]
    with monkeypatch.context() as patch:
        with_pyyaml_only(patch)
        references = [reading(data, name) for data in files]
    return fast_readings, references
