"""The policy pack as a process, over the Pulumi Analyzer gRPC protocol (no Pulumi CLI needed)."""

from __future__ import annotations

import copy
import io
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from dra_guard.cli.main import main
from dra_guard.rules import RULES
from pulumi_dra.policies import build_policies
from testkit.pack_process import analyze, configure, info, running_pack, struct
from testkit.pulumi_props import UNKNOWN, claim_user, compliant_pair, legacy_pod, shared_claim, type_token
from testkit.rulecases import retag

pytestmark = pytest.mark.e2e  # every test here starts a process (tests/conftest.py)

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
    ) + len(["readable-input", "verifiable-contents"])
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


def test_an_unknown_value_next_to_a_known_legacy_request_stays_mandatory(pack: analyzer_pb2_grpc.AnalyzerStub) -> None:
    pod = legacy_pod()
    pod["spec"]["containers"][0]["image"] = UNKNOWN
    pod["metadata"]["labels"] = {"build": UNKNOWN}
    results = diagnostics(analyze(pack, "kubernetes:core/v1:Pod", pod))
    mandatory = [(policy, message) for policy, level, message in results if level == MANDATORY]
    ((policy, message),) = mandatory
    assert policy == "dra001-legacy-extended-resource" and "nvidia.com/mig-1g.10gb" in message
    # Every policy whose rule looks at Pods adds the advisory, DRA001 included: the
    # unknown values could hide other findings.
    advisory = {policy for policy, level, message in results if level == ADVISORY}
    assert "dra001-legacy-extended-resource" in advisory
    assert all("cannot verify until apply" in message for _, level, message in results if level == ADVISORY)
    assert "dra002-profile-not-pinned" not in advisory  # it never looks at Pods
    # With the request itself unknown, nothing is mandatory: only advisories.
    pod = legacy_pod()
    pod["spec"]["containers"][0]["resources"] = UNKNOWN
    results = diagnostics(analyze(pack, "kubernetes:core/v1:Pod", pod))
    assert results and all(level == ADVISORY for _, level, _ in results)


def test_a_helm_v3_release_gets_the_advisory(pack: analyzer_pb2_grpc.AnalyzerStub) -> None:
    release = {"chart": "gpu-operator", "repositoryOpts": {"repo": "https://helm.ngc.nvidia.com/nvidia"}}
    ((policy, level, message),) = diagnostics(analyze(pack, "kubernetes:helm.sh/v3:Release", release))
    assert (policy, level) == ("verifiable-contents", ADVISORY)
    assert "contents cannot be verified before apply" in message and "kubernetes:helm.sh/v4:Chart" in message
    # A v4 Chart is a component: its objects arrive one by one and are checked.
    assert diagnostics(analyze(pack, "kubernetes:helm.sh/v4:Chart", {"chart": "x"})) == []


def test_patches_are_checked_for_what_they_set(pack: analyzer_pb2_grpc.AnalyzerStub) -> None:
    # Adds a legacy GPU request to a Deployment that lives elsewhere.
    patch = {
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {
            "template": {"spec": {"containers": [{"name": "web", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}
        },
    }
    results = diagnostics(analyze(pack, "kubernetes:apps/v1:DeploymentPatch", patch))
    mandatory = [(p, m) for p, level, m in results if level == MANDATORY]
    assert [p for p, _ in mandatory] == ["dra001-legacy-extended-resource"]
    assert "Deployment/ns/web" in mandatory[0][1]
    assert ("verifiable-contents", ADVISORY) in {(p, level) for p, level, _ in results}
    # A claim-template patch that sets an invalid sanitization value and adminAccess (on one
    # request: adminAccess alone is DRA006's only, sanitization is not asked of it).
    template, _ = compliant_pair()
    patch = {
        "metadata": {
            "name": template["metadata"]["name"],
            "namespace": "ns",
            "annotations": {"dra-guard.io/sanitization": "Never"},
        },
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {"name": "gpu", "exactly": {"deviceClassName": "mig.nvidia.com", "adminAccess": True}},
                        {"name": "own", "exactly": {"deviceClassName": "mig.nvidia.com"}},
                    ]
                }
            }
        },
    }
    results = diagnostics(analyze(pack, "kubernetes:resource.k8s.io/v1:ResourceClaimTemplatePatch", patch))
    mandatory = sorted(p for p, level, _ in results if level == MANDATORY)
    assert mandatory == ["dra004-sanitization-undeclared", "dra006-admin-access"]
    # What only the merged object would show (a missing tag, an unpinned profile) is not
    # reported as a violation: the patch may leave them as they are.
    assert not any(p in ("dra012-isolation-tag", "dra002-profile-not-pinned") for p in mandatory)
    # A patch that sets nothing wrong has only the advisory.
    harmless = {"metadata": {"name": "web", "namespace": "ns"}, "spec": {"replicas": 3}}
    results = diagnostics(analyze(pack, "kubernetes:apps/v1:DeploymentPatch", harmless))
    assert [(p, level) for p, level, _ in results] == [("verifiable-contents", ADVISORY)]


def test_input_shape_errors_are_reported(pack: analyzer_pb2_grpc.AnalyzerStub) -> None:
    pod = legacy_pod()
    pod["spec"]["containers"] = {"c": pod["spec"]["containers"][0]}  # a mapping, not a list
    results = diagnostics(analyze(pack, "kubernetes:core/v1:Pod", pod))
    ((_, level, message),) = [r for r in results if r[0] == "readable-input"]
    assert level == MANDATORY and "/spec/containers must be a list, not dict" in message


def test_configuration_over_grpc() -> None:
    admin, _ = compliant_pair()
    admin["spec"]["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    retag(admin)
    with running_pack() as stub:
        configure(stub, {})
        assert [p for p, _, _ in diagnostics(analyze(stub, type_token(admin), admin))] == ["dra006-admin-access"]
        configure(stub, {"dra006-admin-access": {"adminNamespaces": ["ns"]}})
        assert diagnostics(analyze(stub, type_token(admin), admin)) == []


def test_bad_configuration_gets_the_clis_message(tmp_path: Path) -> None:
    """The pack refuses what the CLI refuses, in the same words (the key spelt as written)."""
    (tmp_path / ".dra-guard.yaml").write_text("admin-namespaces: ns\n")
    cli = subprocess.run(
        [sys.executable, "-m", "dra_guard.cli", "check", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
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


def test_the_pack_init_pulumi_writes_runs_the_installed_policies(tmp_path: Path) -> None:
    """`dra-guard init pulumi` in a project, then the pack started as Pulumi's language host
    starts a Python pack: the Python of the virtualenv PulumiPolicy.yaml names (relative to
    the pack) runs `pulumi.policy`, which runs the pack's `__main__.py`."""
    project = tmp_path / "project"
    project.mkdir()
    (project / ".venv").symlink_to(sys.prefix, target_is_directory=True)  # the project's virtualenv
    stdout, stderr = io.StringIO(), io.StringIO()
    assert main(["init", "pulumi", "--dir", str(project)], stdout, stderr) == 0, stderr.getvalue()
    pack = project / "policy-pack"
    runtime = yaml.safe_load((pack / "PulumiPolicy.yaml").read_text())["runtime"]
    assert runtime["name"] == "python"
    python = pack / runtime["options"]["virtualenv"] / "bin" / "python"
    assert python.is_file() and not (pack / "pulumi_dra").exists()  # nothing of ours is copied in
    with running_pack(pack, python=python) as stub:
        configure(stub, {})
        analyzer = info(stub)
        assert analyzer.name == "dra-guard"
        assert [policy.name for policy in analyzer.policies] == [policy.name for policy in build_policies()]
        ((policy, level, message),) = diagnostics(analyze(stub, "kubernetes:core/v1:Pod", legacy_pod()))
        assert (policy, level) == ("dra001-legacy-extended-resource", MANDATORY)
        assert "DRA001 [critical] Pod/ns/legacy" in message
        for obj in compliant_pair():
            assert diagnostics(analyze(stub, type_token(obj), obj)) == []
