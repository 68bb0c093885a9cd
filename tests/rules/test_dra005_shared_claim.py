"""DRA005 `shared-claim`: cases beyond its EXAMPLES, across resource.k8s.io versions."""

from __future__ import annotations

from typing import Any

import pytest

from dra_guard.contract.findings import Finding
from testkit import rulecases
from testkit.rulecases import (
    claim,
    config,
    devices,
    pod,
    template,
    workload,
)


def findings(*objects: Any, **options: Any) -> list[Finding]:
    """The findings but DRA016's: these pods share claims and run no scrubber, which is the
    scrubber rule's business (tests/rules/test_dra016_scrub_before_use.py)."""
    return [f for f in rulecases.findings(*objects, **options) if f.rule != "DRA016"]


def rule_ids(*objects: Any, **options: Any) -> set[str]:
    return {f.rule for f in findings(*objects, **options)}


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "Job"])
def test_dra005_controllers_must_not_name_a_claim(kind: str) -> None:
    objects = workload(kind)
    template_obj, workload_obj = objects.claim_template, objects.workload
    claims = workload_obj["spec"]["template"]["spec"]["resourceClaims"]
    claims[0] = {"name": "accelerator", "resourceClaimName": "shared"}
    assert rule_ids(template_obj, workload_obj, claim()) >= {"DRA005"}


def test_dra005_claim_used_by_two_pods_and_by_one() -> None:
    def user(name: str) -> dict[str, Any]:
        obj = pod(
            containers=[{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}],
            resourceClaims=[{"name": "gpu", "resourceClaimName": "slice"}],
        )
        obj["metadata"]["name"] = name
        return obj

    shared = findings(claim(), user("a"), user("b"))
    assert [(f.rule, f.object.name) for f in shared] == [("DRA005", "a"), ("DRA005", "b")]
    assert findings(claim(), user("a")) == []


def _owned_by(obj: dict[str, Any], pod_name: str, *, controller: bool = True) -> dict[str, Any]:
    """`obj` with the owner reference the resource-claim controller gives the claim it makes
    for pod `pod_name` (testkit.lifecycle.controller_ref)."""
    reference = {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": "u-" + pod_name}
    if controller:
        reference.update(controller=True, blockOwnerDeletion=True)
    obj["metadata"]["ownerReferences"] = [reference]
    obj["metadata"].setdefault("annotations", {})["resource.kubernetes.io/pod-claim-name"] = "gpu"
    return obj


def _naming(pod_name: str, claim_name: str = "slice") -> dict[str, Any]:
    obj = pod(
        containers=[{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}],
        resourceClaims=[{"name": "gpu", "resourceClaimName": claim_name}],
    )
    obj["metadata"]["name"] = pod_name
    return obj


def test_dra005_a_pod_naming_the_claim_made_for_another_pod_shares_it() -> None:
    """The claim of pod a's template is a's (its controller owner): pod b naming it by
    resourceClaimName is given a's devices, and no other pod of the input names it."""
    (finding,) = findings(_owned_by(claim(), "a"), _naming("b"))
    assert (finding.rule, finding.object.name, finding.facet) == ("DRA005", "b", "pods-share-claim")
    assert "Pod/a (the pod it was made for" in finding.message
    # Either order: the claim may come after the pod.
    assert rule_ids(_naming("b"), _owned_by(claim(), "a")) == {"DRA005"}


def test_dra005_the_owner_itself_or_a_claim_nobody_controls_is_not_shared() -> None:
    assert findings(_owned_by(claim(), "a"), _naming("a")) == []
    assert findings(_owned_by(claim(), "a", controller=False), _naming("b")) == []
    nic = _owned_by(claim(), "a")
    nic["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "efa.networking.k8s.aws"
    assert findings(nic, _naming("b")) == []


def test_dra005_pod_group_claims_are_shared() -> None:
    group = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ns"},
        "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "slice"}]},
    }
    assert rule_ids(group) == {"DRA005"}
    group["spec"]["resourceClaims"] = []
    assert rule_ids(group) == set()


def test_dra005_claims_for_non_accelerators_may_be_shared() -> None:
    """non-accelerator-classes, and the catalog's own (NICs, CPU profiles), count here too."""

    def user(name: str) -> dict[str, Any]:
        obj = pod(
            containers=[{"name": "c", "image": "i", "resources": {"claims": [{"name": "nic"}]}}],
            resourceClaims=[{"name": "nic", "resourceClaimName": "slice"}],
        )
        obj["metadata"]["name"] = name
        return obj

    nic_claim = claim()
    nic_claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "net.example.com"
    assert findings(nic_claim, user("a"), user("b")) == []
    fpga_claim = claim()
    fpga_claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "fpga.example.org"
    assert {f.rule for f in findings(fpga_claim, user("a"), user("b"))} >= {"DRA005"}
    configured = config({"non-accelerator-classes": ["fpga.example.org"]})
    assert [f for f in findings(fpga_claim, user("a"), user("b"), config=configured) if f.rule == "DRA005"] == []


# --- template claims a PodGroup shares (DRAWorkloadResourceClaims, KEP-5729) -----------


def _group(claims: list[dict[str, str]], name: str = "group-1") -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "resourceClaims": claims},
    }


def _member(group: str = "group-1", claim_name: str = "gpu", template_name: str = "one-gpu") -> dict[str, Any]:
    return pod(
        containers=[{"name": "c", "image": "i", "resources": {"claims": [{"name": claim_name}]}}],
        schedulingGroup={"podGroupName": group},
        resourceClaims=[{"name": claim_name, "resourceClaimTemplateName": template_name}],
    )


def _dra005(*objects: dict[str, Any], **kwargs: Any) -> list[tuple[str, str]]:
    return [(f.object.kind, f.path) for f in findings(*objects, **kwargs) if f.rule == "DRA005"]


def test_dra005_a_template_claim_the_pods_group_declares_is_shared() -> None:
    declared = _group([{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}])
    where = ("Pod", "/spec/resourceClaims/0/resourceClaimTemplateName")
    assert where in _dra005(_member(), declared)
    assert where in _dra005(declared, _member())  # before or after the pod
    (finding,) = [f for f in findings(_member(), declared) if f.rule == "DRA005" and f.path == where[1]]
    assert "PodGroup 'group-1'" in finding.message and finding.cross_object


@pytest.mark.parametrize(
    "member",
    [
        _member(group="group-2"),  # another group
        _member(claim_name="other"),  # every field must be equal: the name too
        _member(template_name="two-gpus"),  # ... and the template
    ],
    ids=["other-group", "other-name", "other-template"],
)
def test_dra005_a_claim_the_group_does_not_declare_is_the_pods_own(member: dict[str, Any]) -> None:
    declared = _group([{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}])
    assert ("Pod", "/spec/resourceClaims/0/resourceClaimTemplateName") not in _dra005(member, declared)


def test_dra005_without_the_group_among_the_objects_nothing_is_known() -> None:
    assert _dra005(_member()) == []


def test_dra005_group_claims_for_non_accelerators_may_be_shared() -> None:
    nic = template()
    nic["metadata"]["name"] = "one-gpu"
    devices(nic)["requests"][0]["exactly"]["deviceClassName"] = "net.example.com"
    declared = _group([{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}])
    assert _dra005(_member(), declared, nic) == []


# --- a Workload's nested templates, a Job's scheduling claims (WorkloadWithJob, 1.37) ------


def _job_sharing(kind: str, claims: list[dict[str, str]]) -> dict[str, Any]:
    """kubernetes/api @ 10b39a39 batch/v1/types.go `JobSchedulingConfiguration.ResourceClaims`:
    "which ResourceClaims may be shared among Pods in the Job"."""
    objects = workload("Job")
    job = objects.workload
    job["spec"]["scheduling"] = {"schedulingPolicy": {"gang": {"minCount": 2}}, "resourceClaims": claims}
    if kind == "CronJob":
        return {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": job["metadata"],
            "spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": job["spec"]}},
        }
    return job


@pytest.mark.parametrize(
    ("kind", "where"),
    [("Job", "/spec/scheduling/resourceClaims/0"), ("CronJob", "/spec/jobTemplate/spec/scheduling/resourceClaims/0")],
)
def test_dra005_a_jobs_scheduling_claims_are_shared_by_its_pod_group(kind: str, where: str) -> None:
    sharing = _job_sharing(kind, [{"name": "accelerator", "resourceClaimTemplateName": "slice"}])
    (finding,) = [f for f in findings(sharing) if f.rule == "DRA005"]
    assert (finding.object.kind, finding.path) == (kind, where)
    assert f"shared by every pod of the {kind}'s pod group" in finding.message and not finding.cross_object
    # A NIC's claim may be shared; a Job without scheduling claims shares nothing.
    nic = template()
    nic["metadata"]["name"] = "slice"
    devices(nic)["requests"][0]["exactly"]["deviceClassName"] = "net.example.com"
    assert [f for f in findings(sharing, nic) if f.rule == "DRA005"] == []
    assert [f for f in findings(_job_sharing(kind, [])) if f.rule == "DRA005"] == []


def test_dra005_a_workloads_nested_composite_templates_share_their_claims() -> None:
    """scheduling/v1beta1 `CompositePodGroupTemplate` holds podGroupTemplates and more
    composite templates; each nested PodGroupTemplate's resourceClaims is the group's."""
    inner = {"name": "workers", "resourceClaims": [{"name": "gpu", "resourceClaimName": "shared-mig"}]}
    composite = {"name": "outer", "compositePodGroupTemplates": [{"name": "mid", "podGroupTemplates": [inner]}]}
    group = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "train", "namespace": "ns"},
        "spec": {"compositePodGroupTemplates": [composite]},
    }
    assert _dra005(group) == [
        (
            "Workload",
            "/spec/compositePodGroupTemplates/0/compositePodGroupTemplates/0/podGroupTemplates/0/resourceClaims/0",
        )
    ]


def _generated_pod(**metadata: Any) -> dict[str, Any]:
    obj = pod(
        containers=[{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}],
        resourceClaims=[{"name": "gpu", "resourceClaimName": "slice"}],
    )
    del obj["metadata"]["name"]
    obj["metadata"].update(metadata)
    return obj


def test_point3_a_pod_with_generate_name_naming_a_claim_is_a_sharer_each_create() -> None:
    """Issue 20, point 3: `kubectl create` of a Pod with generateName makes a new pod each
    time, all naming the one claim, like a Deployment's replicas."""
    found = findings(claim(), _generated_pod(generateName="worker-"))
    assert [(f.rule, f.object.generate_name, f.path) for f in found] == [
        ("DRA005", "worker-", "/spec/resourceClaims/0/resourceClaimName")
    ]
    assert "generateName 'worker-'" in found[0].message and not found[0].cross_object
    # Alone (the claim not among the objects) too: fail closed, as for a pod template.
    assert rule_ids(_generated_pod(generateName="worker-")) == {"DRA005"}
    # A template instead of a claim: one claim per pod, nothing shared.
    from_template = _generated_pod(generateName="worker-")
    from_template["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "slice"}]
    assert "DRA005" not in rule_ids(from_template, template())


def test_point3_a_pod_with_a_name_of_its_own_is_created_once() -> None:
    assert rule_ids(claim(), _generated_pod(name="worker", generateName="worker-")) == set()


def test_point3_at_admission_the_name_is_the_generated_one() -> None:
    """Validating admission runs after the API server filled `name` from generateName
    (kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go
    `create`: SetName(GenerateName(...)) before BeforeCreate and createValidation; names/
    generate.go: at most 58 characters of it and 5 random ones): such a name counts as none."""
    assert rule_ids(claim(), _generated_pod(name="worker-x7k2q", generateName="worker-")) == {"DRA005"}
    long_prefix = "w" * 60
    assert rule_ids(claim(), _generated_pod(name="w" * 58 + "abcde", generateName=long_prefix)) == {"DRA005"}
    assert rule_ids(claim(), _generated_pod(name="worker-x7k2", generateName="worker-")) == set()


@pytest.mark.parametrize(
    "metadata",
    [
        {"generateName": "worker-"},
        {"generateName": "worker-", "name": "worker-x7k2q"},
        {"generateName": "worker-", "name": "worker"},
        {"generateName": "w" * 60, "name": "w" * 58 + "abcde"},
    ],
)
def test_point3_the_policy_decides_as_the_engine(metadata: dict[str, str]) -> None:
    from tests.test_admission_parity import assert_parity

    obj = _generated_pod(**metadata)
    obj["metadata"].setdefault("name", "")  # as admission sees it: the generated name, or none written
    if not obj["metadata"]["name"]:
        del obj["metadata"]["name"]
    assert_parity(obj)
