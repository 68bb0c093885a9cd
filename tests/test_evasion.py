"""Ways people (or generators) hide a legacy request or a weak claim, and that they fail."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from dra_guard.contract.catalog import EXCLUSIVITY_GUARD
from dra_guard.engine.run import check_stream
from dra_guard.read.loader import Source
from testkit.rulecases import config, findings, request_body, retag, rule_ids, template, workload

LEGACY = {"nvidia.com/mig-1g.10gb": 1}


def _container(section: str = "limits") -> dict[str, Any]:
    return {"name": "c", "image": "i", "resources": {section: dict(LEGACY)}}


def _pod(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": spec}


@pytest.mark.parametrize(
    ("obj", "pointer"),
    [
        (_pod({"initContainers": [_container()], "containers": []}), "/spec/initContainers/0"),
        (_pod({"ephemeralContainers": [_container()]}), "/spec/ephemeralContainers/0"),
        (_pod({"containers": [_container("requests")]}), "/spec/containers/0/resources/requests"),
        (_pod({"containers": [{"name": "c"}], "resources": {"limits": dict(LEGACY)}}), "/spec/resources/limits"),
        (
            {
                "apiVersion": "batch/v1",
                "kind": "CronJob",
                "metadata": {"name": "nightly"},
                "spec": {
                    "schedule": "@daily",
                    "jobTemplate": {"spec": {"template": {"spec": {"containers": [_container()]}}}},
                },
            },
            "/spec/jobTemplate/spec/template/spec/containers/0",
        ),
        (
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [{"apiVersion": "v1", "kind": "ConfigMap"}, _pod({"containers": [_container()]})],
            },
            "/items/1/spec/containers/0",
        ),
        (
            {"apiVersion": "v1", "kind": "PodList", "items": [_pod({"containers": [_container()]})]},
            "/items/0/spec/containers/0",
        ),
        (
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "metadata": {"name": "js"},
                "spec": {
                    "replicatedJobs": [
                        {"name": "w", "template": {"spec": {"template": {"spec": {"containers": [_container()]}}}}}
                    ]
                },
            },
            "/spec/replicatedJobs/0/template/spec/template/spec/containers/0",
        ),
        (
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayCluster",
                "metadata": {"name": "rc"},
                "spec": {
                    "workerGroupSpecs": [{"groupName": "g", "template": {"spec": {"containers": [_container()]}}}]
                },
            },
            "/spec/workerGroupSpecs/0/template/spec/containers/0",
        ),
        (
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "PyTorchJob",
                "metadata": {"name": "pt"},
                "spec": {"pytorchReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [_container()]}}}}},
            },
            "/spec/pytorchReplicaSpecs/Worker/template/spec/containers/0",
        ),
        (
            {
                "apiVersion": "leaderworkerset.x-k8s.io/v1",
                "kind": "LeaderWorkerSet",
                "metadata": {"name": "lws"},
                "spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": {"containers": [_container()]}}}},
            },
            "/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0",
        ),
    ],
    ids=[
        "initContainers",
        "ephemeralContainers",
        "requests-only",
        "pod-level",
        "CronJob",
        "List",
        "PodList",
        "JobSet",
        "RayCluster",
        "PyTorchJob",
        "LeaderWorkerSet",
    ],
)
def test_legacy_requests_cannot_hide(obj: dict[str, Any], pointer: str) -> None:
    (finding,) = findings(obj)
    assert finding.rule == "DRA001"
    assert finding.path.startswith(pointer)


@pytest.mark.parametrize(
    "expression",
    [
        "device.attributes['gpu.nvidia.com'].profile == '1g.10gb' || true",
        "true || device.attributes['gpu.nvidia.com'].profile == '1g.10gb'",
        "(device.attributes['gpu.nvidia.com'].profile == '1g.10gb' || device.driver != '')",
        "device.attributes['gpu.nvidia.com'].profile == device.attributes['gpu.nvidia.com'].profile",
        "device.attributes['gpu.nvidia.com'].profile == '1g.10gb' &&",
        "device.attributes['gpu.nvidia.com'].profile = '1g.10gb'",
        "",
    ],
)
def test_tautological_and_broken_selectors_fail(expression: str) -> None:
    obj = template()
    # The builders' exclusivity guard stays, in a selector of its own: only the pin is judged.
    request_body(obj)["selectors"] = [{"cel": {"expression": expression}}, {"cel": {"expression": EXCLUSIVITY_GUARD}}]
    assert rule_ids(retag(obj)) == {"DRA002"}


def test_stale_tag_after_raising_the_count() -> None:
    obj = template()
    request_body(obj)["count"] = 7
    # Seven unaligned devices are a topology finding too; the tag catches the edit itself.
    assert rule_ids(obj) == {"DRA011", "DRA012"}


def test_suppression_needs_a_reason() -> None:
    obj = _pod({"containers": [_container()]})
    obj["metadata"]["annotations"] = {"dra-guard.io/ignore-DRA001": "  "}
    (finding,) = findings(obj)
    assert finding.rule == "DRA001" and "gives no reason" in finding.message
    obj["metadata"]["annotations"] = {"dra-guard.io/ignore-DRA001": "benchmark node pool, ticket OPS-12"}
    assert findings(obj) == []


def test_suppression_on_the_pod_template_metadata() -> None:
    template_obj, workload_obj = workload()
    workload_obj["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = dict(LEGACY)
    assert rule_ids(template_obj, workload_obj) == {"DRA001"}
    workload_obj["spec"]["template"]["metadata"]["annotations"] = {"dra-guard.io/ignore-DRA001": "migrating in Q3"}
    assert rule_ids(template_obj, workload_obj) == set()


def test_a_waiver_on_the_controller_itself_does_not_reach_its_pods() -> None:
    """The pods a Deployment makes carry its template's annotations, not its own: a waiver
    there would leave every pod to be denied, so it waives nothing, with a note."""
    template_obj, workload_obj = workload()
    workload_obj["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = dict(LEGACY)
    workload_obj["metadata"]["annotations"] = {"dra-guard.io/ignore-DRA001": "migrating in Q3"}
    (finding,) = findings(template_obj, workload_obj)
    assert finding.rule == "DRA001"
    assert "is on the Deployment itself, and the pods it makes carry only their template's annotations" in (
        finding.message
    )
    workload_obj["spec"]["template"]["metadata"]["annotations"] = {"dra-guard.io/ignore-DRA001": "migrating in Q3"}
    assert rule_ids(template_obj, workload_obj) == set()


def test_a_kind_named_like_a_controller_in_another_group_is_judged_as_its_operator() -> None:
    """Volcano's `batch.volcano.sh` Job is not Kubernetes' Job, and is not taken for one: the
    message names its operator's kind as found, not batch/v1's rule.  Its pods carry their
    task template's annotations and a few scheduling keys of the Job's, not the Job's own
    waiver (volcano-sh/volcano pkg/controllers/job/job_controller_util.go `createJobPod`),
    so the Job's own waiver waives nothing either."""
    template_obj, workload_obj = workload()
    workload_obj["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = dict(LEGACY)
    workload_obj["metadata"]["annotations"] = {"dra-guard.io/ignore-DRA001": "migrating in Q3"}
    volcano = {**workload_obj, "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"}
    assert "DRA001" in rule_ids(template_obj, volcano)
    assert "DRA001" in rule_ids(template_obj, {**workload_obj, "apiVersion": "batch/v1", "kind": "Job"})


def _gpu_pod_spec() -> dict[str, Any]:
    return {"containers": [_container()]}


def _gpu_template() -> dict[str, Any]:
    return {"metadata": {}, "spec": _gpu_pod_spec()}


def _operator(api_version: str, kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "w", "namespace": "ns"}, "spec": spec}


_RAY_CLUSTER_SPEC = {"workerGroupSpecs": [{"groupName": "g", "template": _gpu_template()}]}

#: An operator's object with one pod spec asking for a legacy GPU, and the mapping (as keys
#: from the object) whose `annotations` its pods get, read from each operator's source
#: (dra_guard/model/pod_templates.py `OWN_ANNOTATIONS_REACH_PODS` cites them).
OPERATOR_WORKLOADS: dict[str, tuple[dict[str, Any], tuple[str | int, ...]]] = {
    "JobSet": (
        _operator(
            "jobset.x-k8s.io/v1alpha2",
            "JobSet",
            {"replicatedJobs": [{"name": "r", "template": {"spec": {"template": _gpu_template()}}}]},
        ),
        ("spec", "replicatedJobs", 0, "template", "spec", "template", "metadata"),
    ),
    "LeaderWorkerSet": (
        _operator(
            "leaderworkerset.x-k8s.io/v1",
            "LeaderWorkerSet",
            {"leaderWorkerTemplate": {"workerTemplate": _gpu_template()}},
        ),
        ("spec", "leaderWorkerTemplate", "workerTemplate", "metadata"),
    ),
    "DisaggregatedSet": (
        _operator(
            "disaggregatedset.x-k8s.io/v1",
            "DisaggregatedSet",
            {"roles": [{"spec": {"leaderWorkerTemplate": {"workerTemplate": _gpu_template()}}}]},
        ),
        ("spec", "roles", 0, "spec", "leaderWorkerTemplate", "workerTemplate", "metadata"),
    ),
    "PyTorchJob": (
        _operator("kubeflow.org/v1", "PyTorchJob", {"pytorchReplicaSpecs": {"Worker": {"template": _gpu_template()}}}),
        ("spec", "pytorchReplicaSpecs", "Worker", "template", "metadata"),
    ),
    "MPIJob": (
        _operator("kubeflow.org/v2beta1", "MPIJob", {"mpiReplicaSpecs": {"Worker": {"template": _gpu_template()}}}),
        ("spec", "mpiReplicaSpecs", "Worker", "template", "metadata"),
    ),
    "TrainingRuntime": (
        _operator(
            "trainer.kubeflow.org/v1alpha1",
            "TrainingRuntime",
            {
                "template": {
                    "spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": _gpu_template()}}}]}
                }
            },
        ),
        ("spec", "template", "spec", "replicatedJobs", 0, "template", "spec", "template", "metadata"),
    ),
    "RayCluster": (
        _operator("ray.io/v1", "RayCluster", copy.deepcopy(_RAY_CLUSTER_SPEC)),
        ("spec", "workerGroupSpecs", 0, "template", "metadata"),
    ),
    "RayJob": (
        _operator("ray.io/v1", "RayJob", {"rayClusterSpec": copy.deepcopy(_RAY_CLUSTER_SPEC)}),
        ("spec", "rayClusterSpec", "workerGroupSpecs", 0, "template", "metadata"),
    ),
    "RayService": (
        _operator("ray.io/v1", "RayService", {"rayClusterConfig": copy.deepcopy(_RAY_CLUSTER_SPEC)}),
        ("spec", "rayClusterConfig", "workerGroupSpecs", 0, "template", "metadata"),
    ),
    "ServingRuntime": (
        _operator("serving.kserve.io/v1alpha1", "ServingRuntime", _gpu_pod_spec()),
        ("spec",),
    ),
    "LLMInferenceService": (
        _operator("serving.kserve.io/v1alpha2", "LLMInferenceService", {"template": _gpu_pod_spec()}),
        ("spec",),
    ),
    "Workflow": (
        _operator(
            "argoproj.io/v1alpha1",
            "Workflow",
            {"entrypoint": "t", "templates": [{"name": "t", "container": _container()}]},
        ),
        ("spec", "templates", 0, "metadata"),
    ),
    # Argo puts the workflow's `spec.podMetadata` on every pod as well (workflowpod.go
    # `addMetadata`).
    "Workflow, podMetadata": (
        _operator(
            "argoproj.io/v1alpha1",
            "Workflow",
            {"entrypoint": "t", "templates": [{"name": "t", "container": _container()}]},
        ),
        ("spec", "podMetadata"),
    ),
    "CronWorkflow, podMetadata": (
        _operator(
            "argoproj.io/v1alpha1",
            "CronWorkflow",
            {"workflowSpec": {"entrypoint": "t", "templates": [{"name": "t", "container": _container()}]}},
        ),
        ("spec", "workflowSpec", "podMetadata"),
    ),
    "VolcanoJob": (
        _operator(
            "batch.volcano.sh/v1alpha1", "Job", {"tasks": [{"name": "t", "replicas": 2, "template": _gpu_template()}]}
        ),
        ("spec", "tasks", 0, "template", "metadata"),
    ),
}

_WAIVER = {"dra-guard.io/ignore-DRA001": "burn-in before the driver is installed, OPS-142"}


def _annotate(obj: dict[str, Any], keys: tuple[str | int, ...]) -> None:
    holder: Any = obj
    for key in keys:
        holder = holder.setdefault(key, {}) if isinstance(holder, dict) else holder[key]
    holder["annotations"] = dict(_WAIVER)


@pytest.mark.parametrize("name", list(OPERATOR_WORKLOADS))
def test_an_operators_own_waiver_does_not_reach_the_pods_it_makes(name: str) -> None:
    """These operators give the pods they make their pod template's annotations, not their
    own: a waiver on the object itself would pass `check` and leave every pod to be denied by
    admission, so it waives nothing, with a note; where the pods get it, it waives."""
    obj, pod_annotations = copy.deepcopy(OPERATOR_WORKLOADS[name][0]), OPERATOR_WORKLOADS[name][1]
    obj["metadata"]["annotations"] = dict(_WAIVER)
    (finding,) = [finding for finding in findings(obj) if finding.rule == "DRA001"]
    assert f"is on the {obj['kind']} itself, and the pods it makes carry only their template's annotations" in (
        finding.message
    )
    argo = "/spec/workflowSpec" if obj["kind"] == "CronWorkflow" else "/spec"
    if obj["apiVersion"].startswith("argoproj.io/"):
        places = (
            f"{argo}/podMetadata/annotations or {argo}/templateDefaults/metadata/annotations or "
            f"{argo}/templates/0/metadata/annotations"
        )
        expected = f"the annotations its pods get, at {places}"
    elif pod_annotations[-1] == "metadata":
        expected = "the pod template's metadata.annotations"
    else:
        expected = "the annotations its pods get, at /spec/annotations"
    assert f"put it in {expected}" in finding.message
    _annotate(obj, pod_annotations)
    assert "DRA001" not in rule_ids(obj)


def test_an_inference_services_own_waiver_reaches_its_pods() -> None:
    """KServe gives the pods of an InferenceService's components its own annotations as well
    as the component's (kserve/kserve components/predictor.go `buildObjectMeta`): both waive."""
    isvc = _operator("serving.kserve.io/v1beta1", "InferenceService", {"predictor": _gpu_pod_spec()})
    assert "DRA001" in rule_ids(isvc)
    assert "DRA001" not in rule_ids({**isvc, "metadata": {"name": "w", "namespace": "ns", "annotations": _WAIVER}})
    isvc["spec"]["predictor"]["annotations"] = dict(_WAIVER)
    assert "DRA001" not in rule_ids(isvc)


def test_an_unknown_operators_inline_pod_spec_has_no_annotation_that_waives() -> None:
    """A kind nobody described, with a pod spec written without metadata: what its operator
    gives its pods is unknown, so its own waiver is not taken for theirs (the safe side), and
    the note says to use the configuration's `waivers`, which does waive it."""
    obj = _operator("example.com/v1", "Trainer", {"worker": _gpu_pod_spec()})
    obj["metadata"]["annotations"] = dict(_WAIVER)
    (finding,) = [finding for finding in findings(obj) if finding.rule == "DRA001"]
    assert "this pod spec has no annotations of its own: waive it with a `waivers` entry" in finding.message
    entry = {"rule": "DRA001", "kind": "Trainer", "reason": "burn-in, OPS-142"}
    assert "DRA001" not in rule_ids(obj, config=config({"waivers": [entry]}))


@pytest.mark.parametrize("rule", ["DRA004", "DRA006"])
def test_non_waivable_rules_cannot_be_suppressed(rule: str) -> None:
    obj = template()
    if rule == "DRA004":
        del obj["metadata"]["annotations"]["dra-guard.io/sanitization"]
        del obj["spec"]["metadata"]["annotations"]["dra-guard.io/sanitization"]
    else:
        request_body(obj)["adminAccess"] = True
    obj["metadata"]["annotations"][f"dra-guard.io/ignore-{rule}"] = "trust me"
    # DRA004 on a template: the template's own declaration and its claims' (spec.metadata).
    found = findings(retag(obj))
    assert len(found) == (2 if rule == "DRA004" else 1)
    assert all(finding.rule == rule and "cannot be waived" in finding.message for finding in found)
    # ...unless the configuration makes them waivable.
    assert findings(obj, config=config({"non-waivable": []})) == []


def test_suppressing_one_rule_leaves_the_others() -> None:
    obj = template()
    del obj["metadata"]["annotations"]["dra-guard.io/allow-multiple-allocations"]
    del request_body(obj)["count"]
    obj["metadata"]["annotations"]["dra-guard.io/ignore-DRA003"] = "reviewed"
    assert rule_ids(retag(obj)) == {"DRA008"}


def test_disabled_and_enabled_rules() -> None:
    obj = copy.deepcopy(template())
    del request_body(obj)["count"]
    retag(obj)
    assert rule_ids(obj, config=config({"disable": ["DRA008"]})) == set()
    assert rule_ids(obj, config=config({"enable": ["DRA001"]})) == set()


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "escaped.yaml",
            'kind: Pod\nspec:\n  containers:\n  - resources:\n      limits:\n        "nvidia.com\\x2fgpu": 1\n',
        ),
        (
            "unicode.yaml",
            'kind: Pod\nspec:\n  containers:\n  - resources:\n      limits: {"nvidia\\u002ecom/gpu": 1}\n',
        ),
        (
            "folded.yaml",
            "kind: Pod\nspec:\n  containers:\n  - resources:\n      limits:\n"
            '        ? "nvidia.com/\\\n          gpu"\n        : 1\n',
        ),
        ("slash.json", '{"kind": "Pod", "spec": {"containers": [{"resources": {"limits": {"nvidia.com\\/gpu": 1}}}]}}'),
        (
            "alias.yaml",
            "kind: Pod\nx: &k nvidia.com/gpu\nspec:\n  containers:\n  - resources:\n      limits: {*k : 1}\n",
        ),
        (
            "merge.yaml",
            "kind: Pod\nx: &r {nvidia.com/gpu: 1}\nspec:\n  containers:\n  - resources:\n      limits: {<<: *r}\n",
        ),
    ],
)
def test_legacy_names_spelt_with_escapes_or_aliases_are_still_found(tmp_path: Path, name: str, text: str) -> None:
    """The loader path skips objects whose text cannot spell a legacy name; these can."""
    path = tmp_path / name
    with_api_version = text.replace('"kind": "Pod"', '"apiVersion": "v1", "kind": "Pod"')
    path.write_text(with_api_version.replace("kind: Pod\n", "apiVersion: v1\nkind: Pod\n"))
    report = check_stream(Source([str(path)]))
    assert report.errors == []
    assert [finding.rule for finding in report.findings] == ["DRA001"]
