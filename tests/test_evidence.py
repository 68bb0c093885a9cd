"""A finding's declared evidence is all it rests on (`Violation.evidence`).

The Pulumi pack keeps a finding on an object with unknown parts only when neither its
path nor its evidence touches them, so a rule that declares too little evidence would
make the pack report findings that may not hold.  This test takes every finding that
declares evidence, changes or removes each other value of its object in turn, and
checks that the finding stays.  The object's identity (`apiVersion`, `kind`: the
Pulumi type) and the rule's own waiver annotation are not changed.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from dra_guard.contract.catalog import IGNORE_ANNOTATION_PREFIX
from dra_guard.contract.findings import Finding
from dra_guard.engine.run import check_objects
from dra_guard.read.config_file import parse_config
from dra_guard.rules import RULES

Path = tuple[str | int, ...]

HANDWRITTEN = [
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "labels": {"a": "b"}},
        "spec": {
            "containers": [
                {"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "1"}}},
                {"name": "d", "image": "j", "resources": {"requests": {"nvidia.com/mig-1g.10gb": 1}}},
            ]
        },
    },
    {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": "t",
            "namespace": "team-a",
            "annotations": {"dra-guard.io/sanitization": "Never", "dra-guard.io/tenant": "a"},
        },
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": "mig.nvidia.com",
                                "adminAccess": True,
                                "allocationMode": "ExactCount",
                                "count": 2,
                                "selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}],
                            },
                        }
                    ]
                }
            }
        },
    },
]


def _example_objects() -> Iterator[dict[str, Any]]:
    for rule in RULES.values():
        for example in rule.examples:
            for document in yaml.safe_load_all(example.manifests):
                if isinstance(document, dict):
                    yield document
    yield from HANDWRITTEN


def _leaves(value: Any, path: Path = ()) -> Iterator[Path]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, (*path, index))
    else:
        yield path


def _parts(pointer: str) -> Path:
    if not pointer:
        return ()
    return tuple(part.replace("~1", "/").replace("~0", "~") for part in pointer[1:].split("/"))


def _touches(path: Path, other: Path) -> bool:
    common = min(len(path), len(other))
    return tuple(map(str, path[:common])) == tuple(map(str, other[:common]))


def _set(obj: dict[str, Any], path: Path, value: Any) -> None:
    target: Any = obj
    for part in path[:-1]:
        target = target[part]
    if value is _REMOVE:
        if isinstance(target, dict):
            del target[path[-1]]
        else:
            target[path[-1]] = None
    else:
        target[path[-1]] = value


_REMOVE = object()
_CHANGED = "changed-value"
# Values a change can take that options give a meaning to, so that a rule resting on an
# undeclared field (an admin namespace, a non-accelerator class) loses its finding.
CONFIG = parse_config({"admin-namespaces": [_CHANGED], "non-accelerator-classes": [_CHANGED]}, RULES)


def _with_evidence(obj: dict[str, Any]) -> list[Finding]:
    return [f for f in check_objects([obj], CONFIG).findings if f.evidence is not None and not f.cross_object]


CASES = [(obj, finding) for obj in _example_objects() for finding in _with_evidence(obj)]


def test_some_findings_declare_evidence() -> None:
    assert {finding.rule for _, finding in CASES} >= {"DRA001", "DRA004", "DRA006"}


@pytest.mark.parametrize(("obj", "finding"), CASES, ids=[f"{f.rule}{f.path}" for _, f in CASES])
def test_a_finding_holds_whatever_its_evidence_leaves_out(obj: dict[str, Any], finding: Finding) -> None:
    assert finding.evidence is not None
    rests_on = [_parts(finding.path), *(_parts(pointer) for pointer in finding.evidence)]
    waiver = ("metadata", "annotations", IGNORE_ANNOTATION_PREFIX + finding.rule)
    for leaf in _leaves(obj):
        if leaf in (("apiVersion",), ("kind",)) or any(_touches(leaf, part) for part in rests_on):
            continue
        if _touches(leaf, waiver):
            continue
        for replacement in (_CHANGED, 7, _REMOVE):
            changed = copy.deepcopy(obj)
            _set(changed, leaf, replacement)
            found = {(f.rule, f.path) for f in check_objects([changed], CONFIG).findings}
            assert (finding.rule, finding.path) in found, (leaf, replacement)
