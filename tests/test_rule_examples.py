"""Every rule's EXAMPLES, through every way the rules run: the engine, cdk8s `enforce()` on a
chart of raw ApiObjects, and the Pulumi policy pack over gRPC.  Each must report exactly
the findings the example lists, for its rule (other rules' findings are not its business).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from cdk8s import ApiObject, ApiObjectMetadata, Chart, JsonPatch
from cdk8s import Testing as Cdk8sTesting  # not `Testing`: pytest would collect it
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from constructs_dra import enforce
from dra_guard.engine.run import check_objects
from dra_guard.read.config_file import parse_config
from dra_guard.ruleapi.declarations import Example
from dra_guard.rules import RULES, Rule
from pulumi_dra.policies import CROSS_OBJECT_SUFFIX, build_policies
from testkit.pack_process import analyze, configure, running_pack, struct
from testkit.pulumi_props import type_token

CASES = [
    pytest.param(rule, example, id=f"{rule.id}-{index}")
    for rule in RULES.values()
    for index, example in enumerate(rule.examples)
]
# "DRA001 [critical] Pod/team-a/trainer (construct c/o0, at /spec/...): ..." (enforce) and
# "DRA001 [critical] Pod/team-a/trainer at /spec/...: ..." (Pulumi): rule, kind, name, path.
_MESSAGE = re.compile(r"^(DRA\d{3}) \[\w+\] ([^/]+)/[^/]+/(\S+) (?:\(construct \S+, )?at (\S+?)\)?: ")


def objects(example: Example) -> list[dict[str, Any]]:
    return [obj for obj in yaml.safe_load_all(example.manifests) if obj is not None]


def located(message: str) -> tuple[str, str]:
    """(rule, `Kind/name#pointer`) from a front end's message."""
    match = _MESSAGE.match(message)
    assert match, message
    rule, kind, name, path = match.groups()
    return rule, f"{kind}/{name}#{'' if path == '/' else path}"


@pytest.mark.parametrize(("rule", "example"), CASES)
def test_engine(rule: Rule, example: Example) -> None:
    config = parse_config(example.config, RULES, f"{rule.id} example", environ={})
    report = check_objects(objects(example), config)
    assert report.errors == []
    found = [finding for finding in report.findings if finding.rule == rule.id]
    assert sorted(f"{f.object.kind}/{f.object.name}#{f.path}" for f in found) == sorted(example.findings)
    if not rule.cross_object:
        assert not any(finding.cross_object for finding in found), "only cross-object rules see other objects"


@pytest.mark.parametrize(("rule", "example"), CASES)
def test_cdk8s_enforce(rule: Rule, example: Example) -> None:
    chart = Chart(Cdk8sTesting.app(), "examples")
    for index, obj in enumerate(objects(example)):
        api_object = ApiObject(
            chart,
            f"o{index}",
            api_version=obj["apiVersion"],
            kind=obj["kind"],
            metadata=ApiObjectMetadata(name=obj["metadata"]["name"]),
        )
        for key, value in obj.items():
            if key not in ("apiVersion", "kind"):
                api_object.add_json_patch(JsonPatch.add(f"/{key}", value))
    messages = enforce(chart, dict(example.config), fail_on="low").validate()
    found = [where for rule_id, where in map(located, messages) if rule_id == rule.id]
    assert sorted(found) == sorted(example.findings)


@pytest.fixture(scope="module")
def pack() -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    with running_pack() as stub:
        yield stub


@pytest.mark.e2e
@pytest.mark.parametrize(("rule", "example"), CASES)
def test_pulumi_pack(pack: analyzer_pb2_grpc.AnalyzerStub, rule: Rule, example: Example) -> None:
    """Per-resource policies see one object each; the rule's stack policy adds what needs them all."""
    policy_config = {RULES.options[key].camel_key: value for key, value in example.config.items()}
    configure(pack, {policy.name: policy_config for policy in build_policies()} if policy_config else {})
    found = []
    resources = []
    for index, obj in enumerate(objects(example)):
        token, urn = type_token(obj), f"urn:pulumi:dev::examples::{type_token(obj)}::o{index}"
        resources.append(analyzer_pb2.AnalyzerResource(type=token, properties=struct(obj), urn=urn, name=f"o{index}"))
        response = analyze(pack, token, obj, name=f"o{index}")
        found += [d.message for d in response.diagnostics if d.policyName == rule.slug]
    stack = pack.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=resources), timeout=60)
    found += [d.message for d in stack.diagnostics if d.policyName == rule.slug + CROSS_OBJECT_SUFFIX]
    locations = [located(message.partition("\n")[2]) for message in found]  # the SDK prepends the description
    assert sorted(where for _, where in locations) == sorted(example.findings)
    assert {rule_id for rule_id, _ in locations} <= {rule.id}
