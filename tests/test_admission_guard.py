"""`AdmissionGuard` in cdk8s and in Pulumi deploys what `dra-guard admission-policy`
prints for the same settings: cdk8s `Testing.synth` and the Pulumi mocks harness against
the real CLI, with and without the webhook (docs/admission.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pulumi
import pytest
import yaml
from cdk8s import Chart
from cdk8s import Testing as Cdk8sTesting  # not `Testing`: pytest would collect it

import constructs_dra
import pulumi_dra
from dra_guard.admission.deploy import ADMISSION_GUARD_OPTION_NAMES, WEBHOOK_SETTING_NAMES
from dra_guard.contract.tags import normalise_numbers

pytestmark = pytest.mark.e2e  # every test here starts a process (tests/conftest.py)

DRA_GUARD = str(Path(sys.executable).parent / "dra-guard")
CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIBguard\n-----END CERTIFICATE-----\n"
CONFIG = {"admin-namespaces": ["gpu-ops"], "disable": ["DRA011"]}


class RecordingMocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.registered: list[tuple[str, str, dict[str, Any]]] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.registered.append((args.typ, args.name, args.inputs))
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        return {}


@pytest.fixture
def mocks() -> RecordingMocks:
    recording = RecordingMocks()
    pulumi.runtime.set_mocks(recording, preview=False)
    return recording


# The same settings in each front end's terms: the CLI's flags, the constructs' arguments.
CASES: dict[str, tuple[list[str], dict[str, Any]]] = {
    "policies": ([], {}),
    "policies-audit-config": (
        ["--enforcement", "Audit", "--kubernetes-version", "1.34", "--name", "acme", "--config", "guard.yaml"],
        {"enforcement": "Audit", "kubernetes_version": "1.34", "name_prefix": "acme", "config": CONFIG},
    ),
    "webhook": (
        [
            "--deploy-webhook",
            "--webhook-image",
            "registry.example/dra-guard:0.1.0",
            "--webhook-namespace",
            "dra-guard",
            "--tls-secret",
            "dra-guard-tls",
            "--ca-bundle",
            "ca.pem",
        ],
        {
            "webhook": constructs_dra.WebhookDeployment(
                image="registry.example/dra-guard:0.1.0",
                namespace="dra-guard",
                tls_secret="dra-guard-tls",
                ca_bundle=CA_PEM,
            )
        },
    ),
    "webhook-keyed-as-mapping": (
        [
            "--enforcement",
            "Warn",
            "--admin-namespace-label",
            "dra-guard.io/admin=true",
            "--config",
            "guard.yaml",
            "--deploy-webhook",
            "--webhook-image",
            "registry.example/dra-guard@sha256:" + "0" * 64,
            "--webhook-namespace",
            "security",
            "--tls-secret",
            "webhook-tls",
            "--ca-bundle",
            "ca.pem",
            "--hmac-key-secret",
            "tag-key",
            "--webhook-replicas",
            "3",
        ],
        {
            "enforcement": "Warn",
            "admin_namespace_label": "dra-guard.io/admin=true",
            "config": CONFIG,
            "webhook": {
                "image": "registry.example/dra-guard@sha256:" + "0" * 64,
                "namespace": "security",
                "tls_secret": "webhook-tls",
                "ca_bundle": CA_PEM.encode(),
                "hmac_key_secret": "tag-key",
                "replicas": 3,
            },
        },
    ),
    "webhook-opt-in-ignore-own-claim-writers": (
        [
            "--claim-writer",
            "eks:resource-claim-controller",
            "--claim-writer",
            "system:kube-scheduler",
            "--deploy-webhook",
            "--webhook-image",
            "registry.example/dra-guard:0.1.0",
            "--webhook-namespace",
            "dra-guard",
            "--tls-secret",
            "dra-guard-tls",
            "--ca-bundle",
            "ca.pem",
            "--webhook-namespaces",
            "opt-in",
            "--webhook-namespace-label",
            "tenants.example.com/gpu=yes",
            "--webhook-failure-policy",
            "Ignore",
        ],
        {
            "claim_writers": ["eks:resource-claim-controller", "system:kube-scheduler"],
            "webhook": {
                "image": "registry.example/dra-guard:0.1.0",
                "namespace": "dra-guard",
                "tls_secret": "dra-guard-tls",
                "ca_bundle": CA_PEM,
                "namespaces": "opt-in",
                "namespace_label": "tenants.example.com/gpu=yes",
                "failure_policy": "Ignore",
            },
        },
    ),
}


def cli_objects(tmp_path: Path, flags: list[str]) -> list[dict[str, Any]]:
    (tmp_path / "ca.pem").write_text(CA_PEM)
    (tmp_path / "guard.yaml").write_text(yaml.safe_dump(CONFIG))
    result = subprocess.run(
        [DRA_GUARD, "admission-policy", *flags], capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    return list(yaml.safe_load_all(result.stdout))


@pytest.mark.parametrize("case", list(CASES))
def test_cdk8s_synthesizes_what_the_cli_prints(tmp_path: Path, case: str) -> None:
    flags, arguments = CASES[case]
    # A chart namespace must not land on the cluster-scoped objects.
    chart = Chart(Cdk8sTesting.app(), "guard", namespace="elsewhere")
    constructs_dra.AdmissionGuard(chart, "admission", **arguments)
    synthesized = Cdk8sTesting.synth(chart)
    assert synthesized == cli_objects(tmp_path, flags)
    for obj in synthesized:
        kubernetes_validate.validate(obj, "1.36.0", strict=True)
    assert ("Deployment" in {obj["kind"] for obj in synthesized}) == ("webhook" in case)


def type_token(obj: dict[str, Any]) -> str:
    """pulumi-kubernetes' type token: `kubernetes:apps/v1:Deployment`, `kubernetes:core/v1:Service`."""
    api_version = obj["apiVersion"] if "/" in obj["apiVersion"] else f"core/{obj['apiVersion']}"
    return f"kubernetes:{api_version}:{obj['kind']}"


@pytest.mark.parametrize("case", list(CASES))
def test_pulumi_registers_what_the_cli_prints(mocks: RecordingMocks, tmp_path: Path, case: str) -> None:
    flags, arguments = CASES[case]
    names: list[list[str]] = []

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def program() -> pulumi.Output[Any]:
        guard = pulumi_dra.AdmissionGuard("admission", **arguments)
        return pulumi.Output.all(guard.policy_names, guard.resources[-1].urn).apply(names.append)

    program()
    expected = cli_objects(tmp_path, flags)
    assert mocks.registered[0][:2] == ("dra-guard:index:AdmissionGuard", "admission")
    # Typed resources whose inputs are the whole objects. Registration order follows
    # dependencies (a binding waits for its policy), so compare by type and name.
    registered = {
        (typ, inputs["metadata"]["name"]): normalise_numbers(inputs) for typ, _, inputs in mocks.registered[1:]
    }
    assert len(registered) == len(mocks.registered) - 1
    assert registered == {(type_token(obj), obj["metadata"]["name"]): obj for obj in expected}
    ((policy_names, last_urn),) = names
    assert policy_names == [obj["metadata"]["name"] for obj in expected if obj["kind"] == "ValidatingAdmissionPolicy"]
    assert "dra-guard:index:AdmissionGuard$kubernetes:" in last_urn  # children of the component


def test_both_front_ends_take_the_specs_arguments() -> None:
    import inspect

    for front_end in (constructs_dra.AdmissionGuard, pulumi_dra.AdmissionGuard):
        parameters = inspect.signature(front_end.__init__).parameters
        assert "options" in parameters and parameters["options"].kind is inspect.Parameter.VAR_KEYWORD
    assert constructs_dra.WebhookDeployment is pulumi_dra.WebhookDeployment
    assert ADMISSION_GUARD_OPTION_NAMES == (
        "enforcement",
        "kubernetes_version",
        "admin_namespace_label",
        "name_prefix",
        "config",
        "claim_writers",
        "webhook",
    )
    assert "image" in WEBHOOK_SETTING_NAMES


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"enforcement": "Block"}, "enforcement: must be one of Deny, Warn, Audit"),
        ({"webhook": {"namespace": "x", "tls_secret": "t", "ca_bundle": CA_PEM}}, "webhook: needs image"),
    ],
)
def test_cdk8s_refuses_bad_arguments_before_joining_the_tree(arguments: dict[str, Any], message: str) -> None:
    chart = Chart(Cdk8sTesting.app(), "guard")
    with pytest.raises(ValueError, match=message):
        constructs_dra.AdmissionGuard(chart, "admission", **arguments)
    assert chart.node.children == []


def test_pulumi_refuses_bad_arguments_before_registering(mocks: RecordingMocks) -> None:
    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def program() -> pulumi.Output[Any]:
        with pytest.raises(TypeError, match=r"^webhok: not an argument of AdmissionGuard \(did you mean webhook\?\)"):
            pulumi_dra.AdmissionGuard("admission", webhok={})  # type: ignore[call-arg]
        return pulumi.Output.from_input(None)

    program()
    assert mocks.registered == []
