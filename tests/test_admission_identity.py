"""The ResourceClaims the control plane writes for pods are admitted by who writes them, and
only by that: the policies (emulated as the API server evaluates them) and the webhook agree.

Who writes them, from kubernetes/kubernetes (cited in full in dra_guard/admission/policy.py):

* the resource-claim controller (@ 3de376ecf6955ccd1b2ae31ffb310ae082b11cb1
  pkg/controller/resourceclaim/controller.go, `handleClaim`): a pod's claim from its
  ResourceClaimTemplate, with the template's `spec.metadata` and `spec.spec`, the annotation
  `resource.kubernetes.io/pod-claim-name`, `generateName: <pod>-<pod claim>-` and a
  controller owner reference to the Pod; as
  `system:serviceaccount:kube-system:resource-claim-controller`, or
  `system:kube-controller-manager` without --use-service-account-credentials;
* the kube-scheduler (@ 16913111deb1a4c4ff76f4ba7ffd9ebef397a303
  pkg/scheduler/framework/plugins/dynamicresources/extendeddynamicresources.go,
  `createExtendedResourceClaimInAPI`, with the scheduler's own client): the claim of a pod's
  DRA-backed extended resources (KEP-5004), annotated
  `resource.kubernetes.io/extended-resource-claim: "true"`, `generateName:
  <pod>-extended-resources-`, requests `container-<i>-request-<j>`; as `system:kube-scheduler`
  (staging/src/k8s.io/apiserver/pkg/authentication/user/user.go). It also adds its finalizer
  to every claim it allocates with an update (dynamicresources.go `bindClaim`), so updates are
  exempt too.

A tenant can write every one of those owner references and annotations: a look-alike written
under a tenant's name is denied like any other claim. A template is never exempt.
"""

from __future__ import annotations

import copy
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_guard import AcceleratorSlice, claim_template
from dra_guard.admission.cost import evaluate
from dra_guard.admission.deploy import AdmissionGuardSpec, WebhookDeployment, admission_guard_objects
from dra_guard.admission.emulate import admit, denied_rules
from dra_guard.admission.policy import CLAIM_WRITER_CONDITION, admission_objects, claim_writer_exemption
from dra_guard.admission.webhook import Webhook
from dra_guard.contract.catalog import ANNOTATION_PREFIX
from dra_guard.read.config_file import parse_config
from dra_guard.ruleapi.admission_form import AdmissionTarget
from dra_guard.ruleapi.config import CLAIM_WRITERS, Config
from dra_guard.rules import RULES

DRA_GUARD = str(Path(sys.executable).parent / "dra-guard")
KEY = "identity-test-key-3c1d"
#: Tenants, and names that only look like a claim writer's: the match is exact.
TENANTS = (
    "system:serviceaccount:tenant-a:default",
    "alice",
    "system:serviceaccount:tenant-a:resource-claim-controller",
    "system:serviceaccount:kube-system:resource-claim-controller-2",
    "system:kube-scheduler:impostor",
    "",
)
POD_UID = "0c2b7a4e-55b0-4b53-9d3e-4d6f0b0a7c11"


def template(**changes: Any) -> dict[str, Any]:
    return claim_template(name="slice", slice=AcceleratorSlice.nvidia_mig("1g.10gb"), namespace="tenant-a", **changes)


def generated_claim(source: dict[str, Any], pod: str = "trainer-0", pod_claim: str = "accelerator") -> dict[str, Any]:
    """The claim the resource-claim controller makes from `source` for a pod (handleClaim)."""
    meta = source["spec"].get("metadata") or {}
    return {
        "apiVersion": source["apiVersion"],
        "kind": "ResourceClaim",
        "metadata": {
            "name": f"{pod}-{pod_claim}-x7k2q",
            "generateName": f"{pod}-{pod_claim}-",
            "namespace": source["metadata"]["namespace"],
            "labels": dict(meta.get("labels") or {}),
            "annotations": {**(meta.get("annotations") or {}), "resource.kubernetes.io/pod-claim-name": pod_claim},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod,
                    "uid": POD_UID,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": copy.deepcopy(source["spec"]["spec"]),
    }


def look_alike(source: dict[str, Any]) -> dict[str, Any]:
    """What a tenant writes to pass for a generated claim: the owner reference and the
    `pod-claim-name` annotation forged, no dra-guard declarations."""
    claim = generated_claim(source)
    annotations = claim["metadata"]["annotations"]
    claim["metadata"]["annotations"] = {k: v for k, v in annotations.items() if not k.startswith(ANNOTATION_PREFIX)}
    claim["metadata"]["labels"] = {}
    return claim


def extended_resource_claim(pod: str = "trainer-0") -> dict[str, Any]:
    """The claim the scheduler creates for a pod asking for `nvidia.com/gpu: 1` where a
    DeviceClass maps it (createExtendedResourceClaimInAPI): no declarations, no pin."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": f"{pod}-extended-resources-9qv4z",
            "generateName": f"{pod}-extended-resources-",
            "namespace": "tenant-a",
            "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": POD_UID, "controller": True}],
        },
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "container-0-request-0",
                        "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1},
                    }
                ]
            }
        },
    }


def policies(config: Config | None = None) -> list[dict[str, Any]]:
    return admission_objects(RULES, AdmissionTarget(config or Config()))


POLICIES = policies()
CLAIMS = {"look-alike": look_alike(template()), "extended-resource": extended_resource_claim()}


def user(name: str) -> dict[str, Any]:
    return {"username": name, "groups": ["system:authenticated"]}


def review(obj: dict[str, Any] | None, username: str, operation: str = "CREATE") -> dict[str, Any]:
    """An AdmissionRequest as the API server sends the webhook."""
    source = obj or {}
    group, _, version = str(source.get("apiVersion", "v1")).rpartition("/")
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": group, "version": version, "kind": source.get("kind", "")},
        "operation": operation,
        "namespace": "tenant-a",
        "name": source.get("metadata", {}).get("name", ""),
        "userInfo": user(username),
    }
    if obj is not None:
        request["object"] = obj
    return request


# --- the policies ----------------------------------------------------------------------


def test_every_policy_on_claims_exempts_the_claim_writers_and_no_other_does() -> None:
    assert CLAIM_WRITERS == (
        "system:serviceaccount:kube-system:resource-claim-controller",
        "system:kube-controller-manager",
        "system:kube-scheduler",
    )
    checked = 0
    for policy in POLICIES:
        if policy["kind"] != "ValidatingAdmissionPolicy":
            continue
        resources = {name for rule in policy["spec"]["matchConstraints"]["resourceRules"] for name in rule["resources"]}
        conditions = {c["name"]: c["expression"] for c in policy["spec"].get("matchConditions", [])}
        if "resourceclaims" in resources:
            checked += 1
            assert conditions[CLAIM_WRITER_CONDITION] == claim_writer_exemption(CLAIM_WRITERS)
        else:
            assert CLAIM_WRITER_CONDITION not in conditions
    assert checked >= 8


@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
@pytest.mark.parametrize("tenant", TENANTS)
@pytest.mark.parametrize("shape", list(CLAIMS))
def test_a_claim_a_tenant_writes_is_denied_whatever_it_forges(shape: str, tenant: str, operation: str) -> None:
    denials = admit(POLICIES, CLAIMS[shape], user_info=user(tenant), operation=operation)
    assert "DRA004" in denied_rules(denials), denials  # no sanitization declared


@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
@pytest.mark.parametrize("writer", CLAIM_WRITERS)
@pytest.mark.parametrize("shape", list(CLAIMS))
def test_the_same_claim_written_by_a_claim_writer_is_admitted(shape: str, writer: str, operation: str) -> None:
    assert admit(POLICIES, CLAIMS[shape], user_info=user(writer), operation=operation) == []


@pytest.mark.parametrize("writer", [*CLAIM_WRITERS, "alice"])
def test_a_template_is_never_exempt(writer: str) -> None:
    """The template is what admission checks for its claims (its spec cannot change)."""
    bare = template()
    bare["metadata"]["annotations"] = {}
    assert {"DRA004", "DRA012"} <= denied_rules(admit(POLICIES, bare, user_info=user(writer)))
    unpinned = claim_template(
        name="slice", slice=AcceleratorSlice.nvidia_mig("1g.10gb"), namespace="tenant-a"
    )  # built compliant, then its selector removed
    unpinned["spec"]["spec"]["devices"]["requests"][0]["exactly"].pop("selectors")
    assert "DRA002" in denied_rules(admit(POLICIES, unpinned, user_info=user(writer), operation="CREATE"))


@pytest.mark.parametrize("writer", CLAIM_WRITERS)
def test_pods_are_never_exempt(writer: str) -> None:
    """kube-controller-manager writes pods too (a ReplicaSet's, without service-account
    credentials): only ResourceClaims are exempt."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "tenant-a"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
    }
    assert "DRA001" in denied_rules(admit(POLICIES, pod, user_info=user(writer)))


def test_the_claim_writers_are_configurable_and_an_empty_list_exempts_nobody() -> None:
    managed = parse_config({"admission-claim-writers": ["eks:resource-claim-controller"]}, RULES, "test")
    claim = CLAIMS["look-alike"]
    assert admit(policies(managed), claim, user_info=user("eks:resource-claim-controller")) == []
    assert "DRA004" in denied_rules(admit(policies(managed), claim, user_info=user("system:kube-scheduler")))
    nobody = parse_config({"admission-claim-writers": []}, RULES, "test")
    assert all(
        CLAIM_WRITER_CONDITION not in {c["name"] for c in policy["spec"].get("matchConditions", [])}
        for policy in policies(nobody)
        if policy["kind"] == "ValidatingAdmissionPolicy"
    )
    assert "DRA004" in denied_rules(admit(policies(nobody), claim, user_info=user("system:kube-scheduler")))


def test_the_condition_is_total_where_a_request_lacks_its_fields() -> None:
    """`dra_guard.admission.cost` evaluates policies with an empty `request`: the guards make
    the exemption false there (the object is checked), not an error."""
    result = evaluate(claim_writer_exemption(CLAIM_WRITERS), {"request": {}})
    assert result.value is True
    exempt = {"kind": {"group": "resource.k8s.io", "kind": "ResourceClaim"}, "userInfo": {"username": CLAIM_WRITERS[0]}}
    assert evaluate(claim_writer_exemption(CLAIM_WRITERS), {"request": exempt}).value is False


# --- the webhook -----------------------------------------------------------------------


@pytest.mark.parametrize("tenant", TENANTS)
def test_the_webhook_denies_a_tenants_look_alike(tenant: str) -> None:
    """With every rule (a cluster without the policies) the missing declarations deny."""
    webhook = Webhook(RULES, Config(), all_rules=True)
    for claim in CLAIMS.values():
        response = webhook.review(review(claim, tenant))
        assert response["allowed"] is False and "DRA004" in response["status"]["message"]


@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
@pytest.mark.parametrize("writer", CLAIM_WRITERS)
def test_the_webhook_admits_the_claim_writers_claims(writer: str, operation: str) -> None:
    webhook = Webhook(RULES, Config(), all_rules=True)
    for claim in CLAIMS.values():
        assert webhook.review(review(claim, writer, operation))["allowed"] is True


def test_the_webhook_checks_what_it_alone_decides_for_tenants_only() -> None:
    """A claim whose tags were made with another key: the digest is the webhook's to check
    (the policies see well-formed HMAC tags); a tenant is denied, a claim writer is not."""
    keyed = parse_config({"hmac-key-env": "K"}, RULES, "test", environ={"K": KEY})
    claim = generated_claim(template(hmac_key="somebody-elses-key"))
    claim["metadata"]["annotations"][ANNOTATION_PREFIX + "isolation-tag"] = "hmac-sha256:" + "0" * 64
    webhook = Webhook(RULES, keyed)
    denied = webhook.review(review(claim, "alice"))
    assert denied["allowed"] is False and denied["status"]["message"].startswith("DRA012: ResourceClaim/tenant-a/")
    assert webhook.review(review(claim, "system:kube-scheduler"))["allowed"] is True
    managed = parse_config({"hmac-key-env": "K", "admission-claim-writers": []}, RULES, "test", environ={"K": KEY})
    assert Webhook(RULES, managed).review(review(claim, "system:kube-scheduler"))["allowed"] is False


@pytest.mark.parametrize("writer", CLAIM_WRITERS)
def test_the_webhook_never_exempts_a_template(writer: str) -> None:
    forged = template(hmac_key="somebody-elses-key")
    keyed = parse_config({"hmac-key-env": "K"}, RULES, "test", environ={"K": KEY})
    response = Webhook(RULES, keyed).review(review(forged, writer))
    assert response["allowed"] is False and response["status"]["message"].startswith("DRA012: ")


def test_a_request_that_only_names_the_kind_is_not_exempt() -> None:
    """The exemption needs the request's kind, the object's kind and the username to agree."""
    webhook = Webhook(RULES, Config(), all_rules=True)
    claim = CLAIMS["look-alike"]
    mislabelled = review(claim, "system:kube-scheduler")
    mislabelled["kind"] = {"group": "", "version": "v1", "kind": "ResourceClaim"}
    assert webhook.review(mislabelled)["allowed"] is False


# --- the CLI and the constructs ----------------------------------------------------------


@pytest.mark.e2e
def test_the_cli_flag_replaces_the_claim_writers_everywhere(tmp_path: Path) -> None:
    ca = "-----BEGIN CERTIFICATE-----\nMIIBid\n-----END CERTIFICATE-----\n"
    (tmp_path / "ca.pem").write_text(ca)
    flags = ["--claim-writer", "gke:resource-claim-controller", "--claim-writer", "system:kube-scheduler"]
    deploy = ["--deploy-webhook", "--webhook-image", "i", "--webhook-namespace", "dra-guard"]
    deploy += ["--tls-secret", "t", "--ca-bundle", "ca.pem"]
    result = subprocess.run(
        [DRA_GUARD, "admission-policy", *flags, *deploy], capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    objects = list(yaml.safe_load_all(result.stdout))
    writers = ["gke:resource-claim-controller", "system:kube-scheduler"]
    spec = AdmissionGuardSpec(
        claim_writers=writers,
        webhook=WebhookDeployment(image="i", namespace="dra-guard", tls_secret="t", ca_bundle=ca),
    )
    assert objects == admission_guard_objects(spec)
    expected = claim_writer_exemption(writers)
    conditions = [
        c["expression"]
        for obj in objects
        for c in (obj["spec"].get("matchConditions", []) if obj["kind"] == "ValidatingAdmissionPolicy" else [])
        if c["name"] == CLAIM_WRITER_CONDITION
    ]
    assert conditions and set(conditions) == {expected}
    (configuration,) = (obj for obj in objects if obj["kind"] == "ValidatingWebhookConfiguration")
    entry, _ = configuration["webhooks"]  # the objects' entry, then the reservations'
    assert {"name": CLAIM_WRITER_CONDITION, "expression": expected} in entry["matchConditions"]
    (config_map,) = (obj for obj in objects if obj["kind"] == "ConfigMap")
    assert yaml.safe_load(config_map["data"]["dra-guard.yaml"])["admission-claim-writers"] == writers


@pytest.mark.parametrize(
    ("writers", "message"),
    [
        ("system:kube-scheduler", r"^claim_writers: must be a list of strings"),
        ([""], r"^claim_writers\[0\]: must be a non-empty printable string"),
        (["ok", 3], r"^claim_writers\[1\]: must be a string"),
    ],
)
def test_bad_claim_writers_are_refused_by_name(writers: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AdmissionGuardSpec(claim_writers=writers)  # type: ignore[arg-type]
