"""Memory that would grow with the input: what is kept per object, and per document read.

The peak RSS of a whole check at 6,000 and 60,000 documents is `make bench`'s to measure
(README, "Performance"); these tests hold the mechanisms that keep it flat.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from bench.corpus import compliant_pair, dra_heavy_group
from dra_guard.engine.run import Checker
from dra_guard.kubectl_yaml import fast

_STATM = Path("/proc/self/statm")


def _resident_bytes() -> int:
    return int(_STATM.read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(fast.active_parser() != "rapidyaml" or not _STATM.exists(), reason="rapidyaml on Linux only")
def test_reading_documents_keeps_nothing_of_them() -> None:
    # rapidyaml's emit_json returns a malloc'd buffer it never frees (about 1 KiB per
    # document); the reader writes the JSON into a buffer of its own instead.
    texts = [yaml.safe_dump(obj) for index in range(300) for obj in dra_heavy_group(index)]

    def read_all() -> None:
        for text, parsed in zip(texts, fast.parse_plain(texts), strict=True):
            assert fast.decode_plain(text, parsed) is not fast.DECLINED

    read_all()
    before = _resident_bytes()
    for _ in range(3):
        read_all()
    assert _resident_bytes() - before < len(texts) * 3 * 256


def test_the_json_of_a_document_bigger_than_the_buffer() -> None:
    big = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"k": "x" * 200_000}}
    text = yaml.safe_dump(big)
    assert fast.decode_plain(text) == big
    assert fast.decode_plain("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: small}\n")["metadata"] == {
        "name": "small"
    }


def test_pending_findings_keep_their_facts_once() -> None:
    checker = Checker()
    for index in range(4):
        for built in compliant_pair(index % 2):
            obj = json.loads(json.dumps(built))  # each object its own strings, as read from a file
            obj["metadata"]["name"] += f"-{index}"
            checker.add_object(obj)
    deferred = [entry for entry in checker._deferred if entry.kind.rule.id == "DRA014"]
    assert len(deferred) >= 8
    # Claims with the same requests share one set of facts, whatever their names.
    assert len({id(entry.args) for entry in deferred}) <= 4
    assert len({id(entry.kind) for entry in deferred}) <= 2
