"""The policy pack as a process, over the Pulumi Analyzer gRPC protocol (no Pulumi CLI needed)."""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from dra_guard import isolation_tag
from dra_guard.rules import RULES
from pulumi_dra.policies import build_policies
from testkit.pack_process import analyze, configure, info, running_pack, struct
from testkit.pulumi_props import UNKNOWN, claim_user, compliant_pair, legacy_pod, shared_claim, type_token

MANDATORY = analyzer_pb2.EnforcementLevel.Value("MANDATORY")
ADVISORY = analyzer_pb2.EnforcementLevel.Value("ADVISORY")


@pytest.fixture(scope="module")
def pack() -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    with running_pack() as stub:
        configure(stub, {})  # the CLI applies schema defaults; the pack must not need them
        yield stub


def diagnostics(response: Any) -> list[tuple[str, int, str]]:
    return [(d.policyName, d.enforcementLevel, d.message) for d in response.diagnostics]


def violations(response: Any) -> list[tuple[str, str]]:
    """(policy, what it reported): the SDK puts the policy's description before the message."""
    return [(d.policyName, d.message.removeprefix(d.description + "\n")) for d in response.diagnostics]


def test_analyzer_info_lists_every_policy(pack: analyzer_pb2_grpc.AnalyzerStub) -> None:
    analyzer = info(pack)
    assert analyzer.name == "dra-guard" and analyzer.supportsConfig
    names = [policy.name for policy in analyzer.policies]
    assert names == [policy.name for policy in build_policies()]
    assert names[0] == "dra001-legacy-extended-resource" and len(names) == len(RULES) + sum(
        rule.cross_object for rule in RULES.values()
    )
    levels = {policy.name: policy.enforcementLevel for policy in analyzer.policies}
    assert levels["dra004-sanitization-undeclared"] == MANDATORY
    assert levels["dra009-claim-wiring"] == ADVISORY
    schema = next(p for p in analyzer.policies if p.name == "dra006-admin-access").configSchema
    assert "adminNamespaces" in schema.properties


def test_compliant_resources_pass(pack: analyzer_pb2_grpc.AnalyzerStub) -> None:
    for obj in compliant_pair():
        assert diagnostics(analyze(pack, type_token(obj), obj)) == []


def test_legacy_pod_is_a_mandatory_violation(pack: analyzer_pb2_grpc.AnalyzerStub) -> None:
    ((policy, level, message),) = diagnostics(analyze(pack, "kubernetes:core/v1:Pod", legacy_pod()))
    assert (policy, level) == ("dra001-legacy-extended-resource", MANDATORY)
    assert "DRA001 [critical] Pod/ns/legacy" in message and "nvidia.com/mig-1g.10gb" in message


def test_crd_resource(pack: analyzer_pb2_grpc.AnalyzerStub) -> None:
    ray = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "rc", "namespace": "ns"},
        "spec": {"workerGroupSpecs": [{"groupName": "g", "template": legacy_pod()}]},
    }
    ((policy, _, _),) = diagnostics(analyze(pack, "kubernetes:ray.io/v1:RayCluster", ray))
    assert policy == "dra001-legacy-extended-resource"


def test_float_counts_keep_tags_valid_and_edits_are_caught(pack: analyzer_pb2_grpc.AnalyzerStub) -> None:
    template, _ = compliant_pair()
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    assert diagnostics(analyze(pack, type_token(template), template)) == []  # arrives as 2.0
    edited = copy.deepcopy(template)
    edited["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 7
    found = {policy for policy, _, _ in diagnostics(analyze(pack, type_token(edited), edited))}
    # The claim keeps its parentUUID constraint, so only the stale tag gives the edit away.
    assert found == {"dra012-isolation-tag"}


def test_unknown_values_are_advisory(pack: analyzer_pb2_grpc.AnalyzerStub) -> None:
    pod = legacy_pod()
    pod["spec"]["containers"][0]["image"] = UNKNOWN
    results = diagnostics(analyze(pack, "kubernetes:core/v1:Pod", pod))
    assert results, "an unknown value must be reported, not silently passed"
    assert all(level == ADVISORY and "cannot verify until apply" in message for _, level, message in results)


def test_configuration_over_grpc() -> None:
    admin, _ = compliant_pair()
    admin["spec"]["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    admin["metadata"]["annotations"]["dra-guard.io/isolation-tag"] = isolation_tag(admin)
    with running_pack() as stub:
        configure(stub, {})
        assert [p for p, _, _ in diagnostics(analyze(stub, type_token(admin), admin))] == ["dra006-admin-access"]
        configure(stub, {"dra006-admin-access": {"adminNamespaces": ["ns"]}})
        assert diagnostics(analyze(stub, type_token(admin), admin)) == []


def test_bad_configuration_gets_the_clis_message(tmp_path: Path) -> None:
    """The pack refuses what the CLI refuses, in the same words (the key spelt as written)."""
    (tmp_path / ".dra-guard.yaml").write_text("admin-namespaces: ns\n")
    cli = subprocess.run(
        [sys.executable, "-m", "dra_guard.cli", "check", "."], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert cli.returncode == 2
    assert cli.stderr == "dra-guard: ./.dra-guard.yaml: admin-namespaces: must be a list of strings\n"
    with running_pack() as stub:
        configure(stub, {"dra006-admin-access": {"adminNamespaces": "ns"}})
        results = violations(analyze(stub, "kubernetes:core/v1:Pod", legacy_pod()))
    assert ("dra006-admin-access", "policy dra006-admin-access: adminNamespaces: must be a list of strings") in results
    # The other policies, configured correctly (here: not at all), still check.
    assert [policy for policy, _ in results] == ["dra001-legacy-extended-resource", "dra006-admin-access"]


def test_a_missing_hmac_key_is_a_config_error_for_every_policy_configured_with_it() -> None:
    template, _ = compliant_pair()
    policies = [policy.name for policy in build_policies()]
    with running_pack() as stub:
        configure(stub, {name: {"hmacKeyEnv": "DRA_GUARD_TEST_UNSET_KEY"} for name in policies})
        results = violations(analyze(stub, type_token(template), template))
    assert results == [
        (
            rule.slug,
            f"policy {rule.slug}: hmacKeyEnv names DRA_GUARD_TEST_UNSET_KEY, which is not set or empty; "
            "isolation tags cannot be verified without the key",
        )
        for rule in RULES.values()
    ]


def test_analyze_stack_reports_shared_claims(pack: analyzer_pb2_grpc.AnalyzerStub) -> None:
    objects = [shared_claim(), claim_user("a"), claim_user("b")]
    resources = [
        analyzer_pb2.AnalyzerResource(
            type=type_token(obj),
            properties=struct(obj),
            urn=f"urn:{obj['metadata']['name']}",
            name=obj["metadata"]["name"],
        )
        for obj in objects
    ]
    response = pack.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=resources), timeout=60)
    shared = [d for d in response.diagnostics if d.policyName == "dra005-shared-claim-stack"]
    assert sorted(d.urn for d in shared) == ["urn:a", "urn:b"]
    assert all(d.enforcementLevel == MANDATORY for d in shared)
