"""The lifecycle oracle (testkit/lifecycle.py) on small cases whose expected output is written
here from the upstream source it cites, and every builder output through it."""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable, Iterable
from typing import Any

import kubernetes_validate
import pytest

from dra_guard import AcceleratorSlice, isolated_workload
from dra_guard.admission.emulate import admit
from dra_guard.admission.policy import admission_objects
from dra_guard.admission.webhook import Webhook
from dra_guard.contract.catalog import RESOURCE_API_VERSIONS, WORKLOAD_KINDS
from dra_guard.engine.run import check_objects
from dra_guard.ruleapi.admission_form import AdmissionTarget
from dra_guard.rules import RULES
from testkit import lifecycle, targets
from testkit.lifecycle import (
    KUBE_CONTROLLER_MANAGER,
    KUBE_SCHEDULER,
    Cluster,
    Created,
    claim_generate_name,
    claims_for,
    cluster_creates,
    convert_claim_spec,
    extended_resource_claims,
    pods_of,
)
from testkit.operator_pods import inference_service_deployments, jobset_jobs
from testkit.rulecases import UNSCRUBBED_ACCEPTED, config
from testkit.targets import target_for

SA = "system:serviceaccount:kube-system:"
#: A generated name: the generateName and 5 characters of the API server's alphabet.
SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]{5}"

CLAIM_SPEC: dict[str, Any] = {
    "devices": {
        "requests": [
            {
                "name": "gpu",
                "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1},
            }
        ]
    }
}


def rct(name: str = "gpu-template", namespace: str | None = "team-a", **spec_metadata: Any) -> dict[str, Any]:
    """A ResourceClaimTemplate whose outer metadata differs from what its claims get."""
    metadata: dict[str, Any] = {"name": name, "annotations": {"outer": "not-copied"}, "labels": {"outer": "no"}}
    if namespace:
        metadata["namespace"] = namespace
    spec: dict[str, Any] = {"spec": copy.deepcopy(CLAIM_SPEC)}
    if spec_metadata:
        spec["metadata"] = spec_metadata
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": metadata, "spec": spec}


def pod_template(labels: dict[str, str] | None = None, **extra_metadata: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": labels or {"app": "web"}, **extra_metadata},
        "spec": {
            "containers": [
                {"name": "main", "image": "registry.example/app:1", "resources": {"claims": [{"name": "gpu"}]}}
            ],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}],
        },
    }


def deployment(replicas: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "team-a", "annotations": {"team": "a"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": pod_template(annotations={"note": "from-template"}),
        },
    }


def of_kind(created: Iterable[Created], kind: str) -> list[Created]:
    return [item for item in created if item.kind == kind]


def owner(obj: dict[str, Any]) -> dict[str, Any]:
    (reference,) = obj["metadata"]["ownerReferences"]
    return dict(reference)


def test_deployment_makes_a_replicaset_its_pods_and_their_claims() -> None:
    template = rct(annotations={"dra-guard.io/sanitization": "WipeOnDeallocate"}, labels={"tenant": "a"})
    created = cluster_creates([template, deployment()], tenant="alice")

    assert [(c.kind, c.writer) for c in created[:2]] == [("ResourceClaimTemplate", "alice"), ("Deployment", "alice")]
    (rs_made,) = of_kind(created, "ReplicaSet")
    rs = rs_made.obj
    assert rs_made.writer == SA + "deployment-controller"
    pod_hash = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{pod_hash}"
    assert rs["metadata"]["namespace"] == "team-a"
    assert rs["metadata"]["labels"] == {"app": "web", "pod-template-hash": pod_hash}
    # The Deployment's annotations, then the revision and replica annotations (max = 2 + 25% up).
    assert rs["metadata"]["annotations"] == {
        "team": "a",
        "deployment.kubernetes.io/revision": "1",
        "deployment.kubernetes.io/desired-replicas": "2",
        "deployment.kubernetes.io/max-replicas": "3",
    }
    assert rs["spec"]["selector"] == {"matchLabels": {"app": "web", "pod-template-hash": pod_hash}}
    assert owner(rs) == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "web",
        "uid": lifecycle.uid_of(deployment()),
        "controller": True,
        "blockOwnerDeletion": True,
    }

    pods = of_kind(created, "Pod")
    assert len(pods) == 2
    assert {p.writer for p in pods} == {SA + "replicaset-controller"}
    assert len({p.obj["metadata"]["name"] for p in pods}) == 2
    for made in pods:
        pod = made.obj
        assert pod["metadata"]["generateName"] == f"web-{pod_hash}-"
        assert re.fullmatch(f"web-{pod_hash}-{SUFFIX}", pod["metadata"]["name"])
        assert pod["metadata"]["namespace"] == "team-a"
        assert pod["metadata"]["labels"] == {"app": "web", "pod-template-hash": pod_hash}
        assert pod["metadata"]["annotations"] == {"note": "from-template"}
        assert owner(pod) == {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": rs["metadata"]["name"],
            "uid": rs["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        assert pod["spec"] == pod_template()["spec"]

    claims = of_kind(created, "ResourceClaim")
    assert {c.writer for c in claims} == {SA + "resource-claim-controller"}
    by_owner = {owner(c.obj)["name"]: c.obj for c in claims}
    assert set(by_owner) == {p.obj["metadata"]["name"] for p in pods}
    for made in pods:
        pod = made.obj
        claim = by_owner[pod["metadata"]["name"]]
        assert claim["apiVersion"] == "resource.k8s.io/v1"
        assert claim["metadata"]["generateName"] == f"{pod['metadata']['name']}-gpu-"
        assert re.fullmatch(f"{pod['metadata']['name']}-gpu-{SUFFIX}", claim["metadata"]["name"])
        assert claim["metadata"]["namespace"] == "team-a"
        # Only template.spec.metadata reaches the claim, with the pod claim's name.
        assert claim["metadata"]["annotations"] == {
            "dra-guard.io/sanitization": "WipeOnDeallocate",
            "resource.kubernetes.io/pod-claim-name": "gpu",
        }
        assert claim["metadata"]["labels"] == {"tenant": "a"}
        assert owner(claim) == {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": pod["metadata"]["name"],
            "uid": pod["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        assert claim["spec"] == CLAIM_SPEC


def test_a_template_without_spec_metadata_gives_a_claim_with_only_the_pod_claim_name() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team-a"},
        "spec": pod_template()["spec"],
    }
    (made,) = claims_for(pod, {("team-a", "gpu-template"): rct()})
    assert made.obj["metadata"]["annotations"] == {"resource.kubernetes.io/pod-claim-name": "gpu"}
    assert "labels" not in made.obj["metadata"]
    assert made.writer == SA + "resource-claim-controller"


def test_a_template_in_another_namespace_or_missing_gives_no_claim() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team-b"},
        "spec": pod_template()["spec"],
    }
    assert claims_for(pod, {("team-a", "gpu-template"): rct()}) == []
    by_name = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-a"}}
    by_name["spec"] = {
        "containers": [{"name": "c", "image": "i"}],
        "resourceClaims": [{"name": "x", "resourceClaimName": "c"}],
    }
    assert claims_for(by_name, {("team-a", "gpu-template"): rct()}) == []


@pytest.mark.parametrize(
    ("pod", "pod_claim", "expected"),
    [
        ("web-7d4b9c-abcde", "gpu", "web-7d4b9c-abcde-gpu-"),
        # 57 characters exactly: kept whole, trailing dash and all.
        ("p" * 40, "c" * 15, "p" * 40 + "-" + "c" * 15 + "-"),
        # 72 > 57: pod 40 * 57 // 72 = 31, claim 30 * 57 // 72 = 23, joined by one dash, none after.
        ("p" * 40, "c" * 30, "p" * 31 + "-" + "c" * 23),
        # 63 + 63 + 2 = 128: 63 * 57 // 128 = 28 of each.
        ("p" * 63, "c" * 63, "p" * 28 + "-" + "c" * 28),
    ],
)
def test_claim_generate_name_truncates_both_parts_in_proportion(pod: str, pod_claim: str, expected: str) -> None:
    assert claim_generate_name(pod, pod_claim) == expected


def test_generated_names_keep_58_characters_and_add_5() -> None:
    name = lifecycle.generated_name("x" * 70)
    assert re.fullmatch("x" * 58 + SUFFIX, name)
    assert lifecycle.generated_name("a-", "0") != lifecycle.generated_name("a-", "1")


def statefulset() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "team-a"},
        "spec": {
            "replicas": 2,
            "serviceName": "db-headless",
            "selector": {"matchLabels": {"app": "db"}},
            "template": pod_template({"app": "db"}),
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}],
        },
    }


def test_statefulset_pods_are_named_by_ordinal_and_get_their_identity() -> None:
    created = cluster_creates([rct(), statefulset()])
    pods = of_kind(created, "Pod")
    assert [p.obj["metadata"]["name"] for p in pods] == ["db-0", "db-1"]
    assert {p.writer for p in pods} == {SA + "statefulset-controller"}
    for ordinal, made in enumerate(pods):
        pod = made.obj
        labels = pod["metadata"]["labels"]
        assert labels["app"] == "db"
        assert labels["statefulset.kubernetes.io/pod-name"] == f"db-{ordinal}"
        assert labels["apps.kubernetes.io/pod-index"] == str(ordinal)
        assert labels["controller-revision-hash"].startswith("db-")
        assert pod["spec"]["hostname"] == f"db-{ordinal}"
        assert pod["spec"]["subdomain"] == "db-headless"
        assert pod["spec"]["volumes"] == [
            {"name": "data", "persistentVolumeClaim": {"claimName": f"data-db-{ordinal}"}}
        ]
        assert owner(pod)["kind"] == "StatefulSet"
        assert owner(pod)["blockOwnerDeletion"] is True
    claims = of_kind(created, "ResourceClaim")
    assert sorted(c.obj["metadata"]["generateName"] for c in claims) == ["db-0-gpu-", "db-1-gpu-"]


def job(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "team-a"},
        "spec": {
            "template": {
                **pod_template({"app": "train"}),
                "spec": {**pod_template()["spec"], "restartPolicy": "Never"},
            },
            **spec,
        },
    }


def test_job_pods_carry_the_api_server_labels_and_the_tracking_finalizer() -> None:
    created = cluster_creates([rct(), job(parallelism=2)])
    pods = of_kind(created, "Pod")
    assert len(pods) == 2
    uid = lifecycle.uid_of(job())
    for made in pods:
        pod = made.obj
        assert made.writer == SA + "job-controller"
        assert pod["metadata"]["generateName"] == "train-"
        assert pod["metadata"]["labels"] == {
            "app": "train",
            "job-name": "train",
            "batch.kubernetes.io/job-name": "train",
            "controller-uid": uid,
            "batch.kubernetes.io/controller-uid": uid,
        }
        assert pod["metadata"]["finalizers"] == ["batch.kubernetes.io/job-tracking"]
        assert owner(pod) == {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "train",
            "uid": uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    assert len(of_kind(created, "ResourceClaim")) == 2


def test_indexed_job_pods_get_their_completion_index() -> None:
    pods = pods_of(job(completionMode="Indexed", completions=3, parallelism=2))
    assert [p["metadata"]["generateName"] for p in pods] == ["train-0-", "train-1-"]
    for index, pod in enumerate(pods):
        assert pod["metadata"]["annotations"] == {"batch.kubernetes.io/job-completion-index": str(index)}
        assert pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == str(index)
        assert pod["spec"]["hostname"] == f"train-{index}"
        assert pod["spec"]["containers"][0]["env"] == [
            {
                "name": "JOB_COMPLETION_INDEX",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}},
            }
        ]


def test_a_suspended_job_or_manual_selector() -> None:
    assert pods_of(job(suspend=True)) == []
    (pod,) = pods_of(job(manualSelector=True, selector={"matchLabels": {"app": "train"}}))
    assert pod["metadata"]["labels"] == {"app": "train"}


def test_a_cronjob_starts_a_job_that_starts_pods() -> None:
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "team-a"},
        "spec": {
            "schedule": "0 0 * * *",
            "jobTemplate": {"metadata": {"labels": {"run": "nightly"}}, "spec": job()["spec"]},
        },
    }
    created = cluster_creates([rct(), cron])
    (job_made,) = of_kind(created, "Job")
    assert job_made.writer == SA + "cronjob-controller"
    # 2026-01-01T00:00Z is 1767225600 s, 29453760 minutes after the epoch.
    assert job_made.obj["metadata"]["name"] == "nightly-29453760"
    assert job_made.obj["metadata"]["labels"] == {"run": "nightly"}
    assert job_made.obj["metadata"]["annotations"] == {
        "batch.kubernetes.io/cronjob-scheduled-timestamp": "2026-01-01T00:00:00Z"
    }
    assert owner(job_made.obj)["kind"] == "CronJob"
    (pod,) = of_kind(created, "Pod")
    assert pod.writer == SA + "job-controller"
    assert pod.obj["metadata"]["generateName"] == "nightly-29453760-"
    assert len(of_kind(created, "ResourceClaim")) == 1


def test_a_daemonset_makes_one_pod_per_node() -> None:
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "team-a"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": pod_template({"app": "agent"})},
    }
    pods = of_kind(cluster_creates([ds], cluster=Cluster(nodes=("n1", "n2"))), "Pod")
    assert {p.writer for p in pods} == {SA + "daemon-set-controller"}
    assert [
        p.obj["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] for p in pods
    ] == [
        {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}
        for node in ("n1", "n2")
    ]
    assert all(p.obj["metadata"]["generateName"] == "agent-" for p in pods)


def test_a_pod_is_itself_and_lands_in_the_default_namespace() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "solo"}, "spec": pod_template()["spec"]}
    created = cluster_creates([rct(namespace=None), pod], tenant="bob")
    assert [(c.kind, c.writer) for c in created] == [
        ("ResourceClaimTemplate", "bob"),
        ("Pod", "bob"),
        ("ResourceClaim", SA + "resource-claim-controller"),
    ]
    (landed,) = pods_of(pod)
    assert landed["metadata"]["namespace"] == "default"
    assert created[2].obj["metadata"]["namespace"] == "default"
    assert owner(created[2].obj)["uid"] == landed["metadata"]["uid"]


def test_without_service_account_credentials_every_controller_is_the_manager() -> None:
    created = cluster_creates([rct(), deployment(1)], cluster=Cluster(use_service_account_credentials=False))
    assert [c.writer for c in created[2:]] == [KUBE_CONTROLLER_MANAGER] * 3


def test_claims_are_read_back_in_the_version_asked_for() -> None:
    flat = {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.example.com", "count": 2}]}}
    exact = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 2}}]}}
    assert convert_claim_spec(flat, "resource.k8s.io/v1beta1", "resource.k8s.io/v1") == exact
    assert convert_claim_spec(exact, "resource.k8s.io/v1beta2", "resource.k8s.io/v1alpha3") == flat
    assert convert_claim_spec(exact, "resource.k8s.io/v1beta2", "resource.k8s.io/v1") == exact
    first = {"devices": {"requests": [{"name": "r", "firstAvailable": [{"name": "a", "deviceClassName": "c"}]}]}}
    assert convert_claim_spec(first, "resource.k8s.io/v1beta1", "resource.k8s.io/v1") == first
    template = rct()
    template["apiVersion"] = "resource.k8s.io/v1beta1"
    template["spec"]["spec"] = flat
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team-a"},
        "spec": pod_template()["spec"],
    }
    (as_v1,) = claims_for(pod, {("team-a", "gpu-template"): template})
    (as_stored,) = claims_for(pod, {("team-a", "gpu-template"): template}, api_version=None)
    assert (as_v1.obj["apiVersion"], as_v1.obj["spec"]) == ("resource.k8s.io/v1", exact)
    assert (as_stored.obj["apiVersion"], as_stored.obj["spec"]) == ("resource.k8s.io/v1beta1", flat)


GPU_CLASS: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu.example.com"},
    "spec": {
        "selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}],
        "extendedResourceName": "example.com/gpu",
    },
}


def extended_pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "trainer", "namespace": "team-a"},
        "spec": {
            # Index 0: an init container wanting 3, of which the later main container's 2 count.
            "initContainers": [{"name": "warm", "image": "i", "resources": {"requests": {"example.com/gpu": "3"}}}],
            "containers": [
                # Index 1: cpu sorts before example.com/gpu, so its request is number 1.
                {"name": "main", "image": "i", "resources": {"requests": {"cpu": "1", "example.com/gpu": 2}}},
                # Index 2: the implicit name, from limits alone (requests default to limits).
                {
                    "name": "side",
                    "image": "i",
                    "resources": {"limits": {"deviceclass.resource.kubernetes.io/gpu.example.com": 1}},
                },
            ],
        },
    }


def test_extended_resources_give_one_scheduler_claim() -> None:
    (made,) = extended_resource_claims(extended_pod(), [GPU_CLASS])
    pod = pods_of(extended_pod())[0]
    assert made.writer == KUBE_SCHEDULER
    claim = made.obj
    assert claim["apiVersion"] == "resource.k8s.io/v1"
    assert claim["metadata"]["generateName"] == "trainer-extended-resources-"
    assert re.fullmatch(f"trainer-extended-resources-{SUFFIX}", claim["metadata"]["name"])
    assert claim["metadata"]["namespace"] == "team-a"
    assert claim["metadata"]["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert "labels" not in claim["metadata"]
    assert owner(claim) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "trainer",
        "uid": pod["metadata"]["uid"],
        "controller": True,
    }

    def request(name: str, count: int) -> dict[str, Any]:
        return {
            "name": name,
            "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": count},
        }

    assert claim["spec"] == {
        "devices": {
            "requests": [
                request("container-0-request-0", 1),
                request("container-1-request-1", 2),
                request("container-2-request-0", 1),
            ]
        }
    }


def test_an_init_container_covered_by_later_containers_asks_for_nothing_more() -> None:
    pod = extended_pod()
    pod["spec"]["initContainers"][0]["resources"]["requests"]["example.com/gpu"] = "2"
    (made,) = extended_resource_claims(pod, [GPU_CLASS])
    assert [r["name"] for r in made.obj["spec"]["devices"]["requests"]] == [
        "container-1-request-1",
        "container-2-request-0",
    ]


def test_no_device_class_no_extended_claim() -> None:
    assert extended_resource_claims(extended_pod(), []) == []
    other = copy.deepcopy(GPU_CLASS)
    other["metadata"]["name"] = "other.example.com"
    with pytest.raises(ValueError, match=re.escape("example.com/gpu")):
        extended_resource_claims(extended_pod(), [GPU_CLASS, other])


def test_cluster_creates_includes_the_scheduler_claim_from_classes_in_the_input() -> None:
    created = cluster_creates([GPU_CLASS, extended_pod()])
    assert [(c.kind, c.writer) for c in created] == [
        ("DeviceClass", lifecycle.DEFAULT_TENANT),
        ("Pod", lifecycle.DEFAULT_TENANT),
        ("ResourceClaim", KUBE_SCHEDULER),
    ]


def test_the_oracle_is_deterministic_and_leaves_its_input_alone() -> None:
    inputs = [
        rct(),
        deployment(),
        statefulset(),
        job(completionMode="Indexed", completions=2),
        GPU_CLASS,
        extended_pod(),
    ]
    before = copy.deepcopy(inputs)
    assert cluster_creates(inputs) == cluster_creates(copy.deepcopy(inputs))
    assert inputs == before


def test_what_the_oracle_creates_is_valid_in_strict_mode() -> None:
    inputs = [
        rct(),
        deployment(),
        statefulset(),
        job(completionMode="Indexed", completions=2),
        GPU_CLASS,
        extended_pod(),
    ]
    for made in cluster_creates(inputs):
        kubernetes_validate.validate(made.obj, "1.36.0", strict=True)


SLICES = {
    "mig": AcceleratorSlice.nvidia_mig("1g.10gb"),
    "gpu": AcceleratorSlice.nvidia_gpu("NVIDIA H100 80GB HBM3", 2),
    "tpu": AcceleratorSlice.google_tpu("v6e", 4),
    "amd": AcceleratorSlice.amd_gpu("cpx_nps4"),
}


def build_options(api_version: str) -> dict[str, Any]:
    """What a builder needs to target `api_version` (a beta one needs its runtime-config
    where testkit.targets knows of it)."""
    options: dict[str, Any] = {"api_version": api_version, "kubernetes_version": target_for(api_version)}
    runtime_config = getattr(targets, "runtime_config_for", None)
    if runtime_config is not None and runtime_config(api_version):
        options["runtime_config"] = runtime_config(api_version)
    return options


@pytest.mark.parametrize("api_version", RESOURCE_API_VERSIONS)
@pytest.mark.parametrize("kind", WORKLOAD_KINDS)
def test_what_the_cluster_creates_from_builder_output_is_valid_in_strict_mode(kind: str, api_version: str) -> None:
    objects = isolated_workload(
        "app", image="i", slice=SLICES["mig"], namespace="ns", workload_kind=kind, **build_options(api_version)
    )
    created = cluster_creates(list(objects), claim_api_version=None)
    assert {c.kind for c in created} >= {"Pod", "ResourceClaim"}
    for made in created:
        kubernetes_validate.validate(made.obj, f"{target_for(api_version)}.0", strict=True)


@pytest.mark.parametrize("api_version", RESOURCE_API_VERSIONS)
@pytest.mark.parametrize("kind", WORKLOAD_KINDS)
@pytest.mark.parametrize("accelerator", list(SLICES.values()), ids=list(SLICES))
def test_what_the_cluster_creates_from_builder_output_passes(
    accelerator: AcceleratorSlice, kind: str, api_version: str
) -> None:
    objects = isolated_workload(
        "app", image="i", slice=accelerator, namespace="ns", workload_kind=kind, **build_options(api_version)
    )
    created = cluster_creates(list(objects), claim_api_version=None)
    claims = of_kind(created, "ResourceClaim")
    assert claims, "the builder's pods name a template, so the controller makes claims"
    assert {c.writer for c in claims} == {SA + "resource-claim-controller"}
    chosen = config({"kubernetes-version": target_for(api_version), **UNSCRUBBED_ACCEPTED})
    report = check_objects([c.obj for c in created], chosen)
    assert (report.errors, report.findings) == ([], [])
    for claim in claims:
        alone = check_objects([claim.obj], chosen)
        assert (alone.errors, alone.findings) == ([], []), claim.obj["metadata"]["name"]


@functools.lru_cache(maxsize=8)
def _admission_for(kubernetes_version: str) -> tuple[list[dict[str, Any]], Webhook]:
    chosen = config({"kubernetes-version": kubernetes_version, **UNSCRUBBED_ACCEPTED})
    return admission_objects(RULES, AdmissionTarget(chosen)), Webhook(RULES, chosen, all_rules=True)


@pytest.mark.parametrize("api_version", RESOURCE_API_VERSIONS)
@pytest.mark.parametrize("kind", WORKLOAD_KINDS)
@pytest.mark.parametrize("accelerator", list(SLICES.values()), ids=list(SLICES))
def test_admission_admits_what_the_cluster_creates_from_builder_output(
    accelerator: AcceleratorSlice, kind: str, api_version: str
) -> None:
    """Every object the cluster derives from a builder output passes the generated policies
    (emulated) and the webhook (every rule, in-process) when its real writer writes it; the
    generated claims pass even when a tenant writes them, so they do not rely on the
    claim writers' exemption: they carry the declarations and a claim tag that verifies."""
    objects = isolated_workload(
        "app", image="i", slice=accelerator, namespace="ns", workload_kind=kind, **build_options(api_version)
    )
    policies, webhook = _admission_for(target_for(api_version))
    for made in cluster_creates(list(objects), claim_api_version=None):
        writers = [made.writer] + (["system:serviceaccount:ns:default"] if made.kind == "ResourceClaim" else [])
        for writer in writers:
            assert admit(policies, made.obj, user_info={"username": writer}) == [], (made.kind, writer)
            request = {
                "uid": "u",
                "kind": {"group": "", "version": "", "kind": made.kind},
                "operation": "CREATE",
                "namespace": "ns",
                "userInfo": {"username": writer},
                "object": made.obj,
            }
            assert webhook.review(request)["allowed"], (made.kind, writer, webhook.review(request))


def test_a_tenants_look_alike_of_a_generated_claim_is_denied() -> None:
    """Forged owner reference and pod-claim-name, no declarations: denied when a tenant
    writes it, by the policies and the webhook; exempt only under a claim writer's name."""
    objects = isolated_workload("app", image="i", slice=SLICES["mig"], namespace="ns")
    (claim,) = of_kind(cluster_creates(list(objects)), "ResourceClaim")
    look_alike = copy.deepcopy(claim.obj)
    look_alike["metadata"]["annotations"] = {"resource.kubernetes.io/pod-claim-name": "accelerator"}
    look_alike["metadata"].pop("labels", None)
    policies, webhook = _admission_for("1.36")
    tenant = {"username": "system:serviceaccount:ns:default"}
    assert {denial.rule for denial in admit(policies, look_alike, user_info=tenant)} >= {"DRA004", "DRA012"}
    request = {
        "uid": "u",
        "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceClaim"},
        "operation": "CREATE",
        "namespace": "ns",
        "userInfo": tenant,
        "object": look_alike,
    }
    assert not webhook.review(request)["allowed"]
    assert admit(policies, look_alike, user_info={"username": claim.writer}) == []
    assert webhook.review({**request, "userInfo": {"username": claim.writer}})["allowed"]


def test_a_pod_naming_the_claim_made_for_another_pod_is_reported_and_denied() -> None:
    """Pod `thief` names, by resourceClaimName, the claim the resource-claim controller made
    from a builder Job's template for that Job's pod: the scheduler reserves it for both (a
    claim named by resourceClaimName is never checked against its owner), so `check` and the
    webhook (which reads the claim) report DRA005 on the thief; the owner's pod and its claim
    stay admitted."""
    objects = isolated_workload("app", image="i", slice=SLICES["mig"], namespace="ns", workload_kind="Job")
    created = cluster_creates(list(objects))
    (owner_pod,) = of_kind(created, "Pod")
    (claim,) = of_kind(created, "ResourceClaim")
    thief = copy.deepcopy(owner_pod.obj)
    thief["metadata"] = {"name": "thief", "namespace": "ns"}
    thief["spec"]["resourceClaims"] = [
        {"name": entry["name"], "resourceClaimName": claim.obj["metadata"]["name"]}
        for entry in owner_pod.obj["spec"]["resourceClaims"]
    ]
    chosen = config({"kubernetes-version": "1.36", **UNSCRUBBED_ACCEPTED})
    report = check_objects([c.obj for c in created] + [thief], chosen)
    assert report.errors == []
    assert {(f.rule, f.object.name) for f in report.findings} == {("DRA005", "thief")}

    class Claims:
        def get(self, namespace: str, name: str) -> dict[str, Any] | None:
            return next(
                (t.obj for t in of_kind(created, "ResourceClaimTemplate") if t.obj["metadata"]["name"] == name), None
            )

        def get_claim(self, namespace: str, name: str) -> dict[str, Any] | None:
            return claim.obj if name == claim.obj["metadata"]["name"] else None

    webhook = Webhook(RULES, chosen, templates=Claims(), all_rules=True)

    def review(obj: dict[str, Any]) -> dict[str, Any]:
        request = {
            "uid": "u",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "operation": "CREATE",
            "namespace": "ns",
            "userInfo": {"username": "system:serviceaccount:ns:default"},
            "object": obj,
        }
        return webhook.review(request)

    denied = review(thief)
    assert not denied["allowed"] and "DRA005" in denied["status"]["message"], denied
    assert review(owner_pod.obj)["allowed"]


@pytest.mark.parametrize("on_template", [False, True], ids=["on-the-deployment", "on-the-template"])
def test_a_waiver_is_honoured_only_where_the_pods_carry_it(on_template: bool) -> None:
    """A Deployment asking for nvidia.com/gpu with an ignore-DRA001 waiver: its pods get the
    template's annotations only.  On the template, the Deployment and every pod it makes pass
    `check` and the policies; on the Deployment itself, the waiver would leave the pods to be
    denied, so `check` and the policies report the Deployment already."""
    waiver = {"dra-guard.io/ignore-DRA001": "burn-in before the driver is installed, OPS-142"}
    gpu = {"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}
    template: dict[str, Any] = {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [gpu]}}
    deployment_obj: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "w"}}, "template": template},
    }
    (template["metadata"] if on_template else deployment_obj["metadata"])["annotations"] = waiver
    policies, _ = _admission_for("1.36")
    chosen = config({"kubernetes-version": "1.36", **UNSCRUBBED_ACCEPTED})
    created = cluster_creates([deployment_obj])
    assert [c.kind for c in created] == ["Deployment", "ReplicaSet", "Pod"]
    for made in created:
        denied = {d.rule for d in admit(policies, made.obj, user_info={"username": made.writer})}
        reported = {f.rule for f in check_objects([made.obj], chosen).findings}
        assert (denied, reported) == ((set(), set()) if on_template else ({"DRA001"}, {"DRA001"})), made.kind


_WAIVER = {"dra-guard.io/ignore-DRA001": "burn-in before the driver is installed, OPS-142"}
_GPU_CONTAINER = {"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}


def _jobset(where: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    pod_template: dict[str, Any] = {"metadata": {}, "spec": {"restartPolicy": "Never", "containers": [_GPU_CONTAINER]}}
    jobset: dict[str, Any] = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "train", "namespace": "ns"},
        "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {"template": pod_template}}}]},
    }
    if where == "own":
        jobset["metadata"]["annotations"] = dict(_WAIVER)
    elif where == "template":
        pod_template["metadata"]["annotations"] = dict(_WAIVER)
    return jobset, jobset_jobs(jobset)


def _inference_service(where: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    isvc: dict[str, Any] = {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "llm", "namespace": "ns"},
        "spec": {"predictor": {"containers": [_GPU_CONTAINER]}},
    }
    if where == "own":
        isvc["metadata"]["annotations"] = dict(_WAIVER)
    elif where == "template":
        isvc["spec"]["predictor"]["annotations"] = dict(_WAIVER)
    return isvc, inference_service_deployments(isvc)


@pytest.mark.parametrize("where", ["none", "own", "template"])
@pytest.mark.parametrize("operator", [_jobset, _inference_service], ids=["JobSet", "InferenceService"])
def test_check_on_an_operators_object_agrees_with_admission_on_the_pods_it_makes(
    operator: Callable[[str], tuple[dict[str, Any], list[dict[str, Any]]]], where: str
) -> None:
    """A JobSet (whose pods get only their template's annotations) and an InferenceService
    (whose pods also get its own: testkit/operator_pods.py cites both) asking for
    nvidia.com/gpu, with an ignore-DRA001 waiver nowhere, on the object itself or on the pod
    template: `check`'s verdict on the object is the webhook's and the policies' on every pod
    the operator makes, and `check`'s on the workloads it creates."""
    obj, made_by_operator = operator(where)
    chosen = config({"kubernetes-version": "1.36", **UNSCRUBBED_ACCEPTED})
    policies, _ = _admission_for("1.36")
    webhook = Webhook(RULES, chosen, all_rules=True)
    reported = "DRA001" in {f.rule for f in check_objects([obj], chosen).findings}
    created = cluster_creates(made_by_operator)
    pods = of_kind(created, "Pod")
    assert pods, "the operator's workloads make pods"
    for made in created:
        denied = {d.rule for d in admit(policies, made.obj, user_info={"username": made.writer})}
        assert ("DRA001" in denied, "DRA001" in {f.rule for f in check_objects([made.obj], chosen).findings}) == (
            reported,
            reported,
        ), made.kind
    for pod in pods:
        request = {
            "uid": "u",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "operation": "CREATE",
            "namespace": "ns",
            "userInfo": {"username": pod.writer},
            "object": pod.obj,
        }
        review = webhook.review(request)
        assert (not review["allowed"] and "DRA001" in review["status"]["message"]) == reported, review
    # Without a waiver both report; the own waiver of a JobSet waives neither; the rest waive.
    assert reported == (where == "none" or (where == "own" and obj["kind"] == "JobSet"))
