"""Issue 20, point 1: both readers against kubectl on the official YAML test suite.

tests/fixtures/yaml-test-suite holds every `in.yaml` of yaml/yaml-test-suite (the `data`
branch at 6ad3d2c62885d82fc349026c136ef560838fdf3d, MIT licence beside them), one file per
test named `<test id>[-<subtest>].in` so that no walk takes them for manifests. Nobody here
wrote them: they are the YAML 1.2 edge cases (flow collections, comments, block-scalar
headers, empty keys, tabs, directives, anchors) every YAML reader is measured on, about a
quarter of them invalid YAML.

Each input is wrapped as the value of a ConfigMap key (indented under it, empty lines kept
empty) and read by kubectl, by the fast reader and by PyYAML alone: each reader sends
exactly what kubectl sends, or refuses and sends no more than kubectl
(test_kubectl_differential's verdict).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dra_guard.kubectl_yaml import fast
from tests.test_yaml_fuzz import _GUARDS, _fast_disagrees, kubectl_verdicts

needs_the_fast_reader = pytest.mark.skipif(fast.active_parser() != "rapidyaml", reason="the fast reader is off here")

SUITE = Path(__file__).parent / "fixtures" / "yaml-test-suite"


def inputs() -> list[Path]:
    return sorted(SUITE.glob("*.in"))


def wrapped(text: bytes) -> bytes:
    """The test's input as the value of a ConfigMap key."""
    lines = [b"    " + line if line.strip(b"\r") else line for line in text.split(b"\n")]
    header = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: yts}\ndata:\n  value:\n"
    return header + b"\n".join(lines)


def test_the_suite_is_all_here() -> None:
    # The data branch at that commit: 352 tests, 402 inputs with the subtests.
    assert len(inputs()) == 402
    assert (SUITE / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")


@pytest.mark.e2e
def test_point1_yaml_test_suite_readers_agree_with_kubectl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    named = [(f"{path.stem}.yaml", wrapped(path.read_bytes())) for path in inputs()]
    readers = ("rapidyaml", "pyyaml") if fast.active_parser() == "rapidyaml" else ("pyyaml",)
    verdicts, wrong = kubectl_verdicts(named, tmp_path, monkeypatch, readers)
    assert wrong == [], f"{len(wrong)} wrong, the first:\n" + "\n".join(wrong[:3])
    # Not idle: most inputs are read, and some are refused by all.
    for reader in readers:
        assert verdicts[f"{reader}: same"] >= 200 and verdicts[f"{reader}: both refuse"] >= 30, verdicts


@needs_the_fast_reader
def test_point1_yaml_test_suite_finds_the_empty_key_bug_without_its_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite is not idle: the fast reader takes about 80 of its inputs, and without the
    guard for empty keys and misread colons it reads 9 of them (4ABK, 4MUZ, CFD4, ...)
    differently from libyaml (13 before the screens for flow collections over lines, which
    now decline some of them too)."""
    texts = [wrapped(path.read_bytes()).decode(errors="replace") for path in inputs()]
    assert sum(fast.decode_plain(text) not in (fast.DECLINED, fast.EMPTY) for text in texts) >= 75
    assert not any(_fast_disagrees(text) for text in texts)
    _GUARDS["empty key, misread colon"](monkeypatch)
    assert sum(_fast_disagrees(text) for text in texts) >= 8
