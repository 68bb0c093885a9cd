"""The pod-template finder: known kinds, Argo and KServe, and any other kind with a pod spec.

The CRD fixtures (tests/fixtures/crds, see test_crd_fixtures.py) cover each known kind
end to end; these tests cover what the fixtures do not: kinds nobody told us about,
inline Argo templates, KServe's runtime merge, waivers per template, namespaces.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from dra_guard.engine.run import check_objects
from dra_guard.model import pod_templates
from dra_guard.model.pod_templates import pod_specs
from testkit.rulecases import findings, template


def _objects(text: str) -> list[dict[str, Any]]:
    return [obj for obj in yaml.safe_load_all(text) if obj]


def _located(*objects: dict[str, Any]) -> set[tuple[str, str, str]]:
    """Where the rules report, but the scrubber rule: these pods run none, and DRA016's own
    tests (tests/rules/test_dra016_scrub_before_use.py) find pod templates through the same finder."""
    return {(f.rule, f.object.name, f.path) for f in findings(*objects) if f.rule != "DRA016"}


SHARED = {"name": "gpu", "resourceClaimName": "shared"}
USES_GPU = {"name": "main", "image": "cuda", "resources": {"claims": [{"name": "gpu"}]}}


def test_a_kind_nobody_told_us_about_has_its_pod_templates_found() -> None:
    (obj,) = _objects(
        """
apiVersion: batch.example.com/v1
kind: Trainer
metadata: {name: t, namespace: ns}
spec:
  roles:
  - name: worker
    podTemplate:
      metadata: {annotations: {team: a}}
      spec:
        resourceClaims: [{name: gpu, resourceClaimName: shared}]
        containers:
        - {name: main, image: cuda, resources: {claims: [{name: gpu}, {name: missing}]}}
"""
    )
    (view,) = pod_specs(obj)
    assert view.path == ("spec", "roles", 0, "podTemplate", "spec") and view.template_metadata == {
        "annotations": {"team": "a"}
    }
    assert _located(obj) == {
        ("DRA005", "t", "/spec/roles/0/podTemplate/spec/resourceClaims/0/resourceClaimName"),
        ("DRA009", "t", "/spec/roles/0/podTemplate/spec/containers/0/resources/claims/1/name"),
    }


def test_the_structural_search_needs_container_shaped_containers() -> None:
    obj = {
        "apiVersion": "example.com/v1",
        "kind": "Inventory",
        "metadata": {"name": "i"},
        "spec": {"containers": ["a", "b"], "racks": {"containers": [{"size": 20}]}},
    }
    assert pod_specs(obj) == ()


@pytest.mark.parametrize(
    "obj",
    [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"x": "y"}},
        {"apiVersion": "v1", "kind": "Service", "spec": {"containers": [{"name": "not-a-pod"}]}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": {"spec": {"containers": []}}}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate"},
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "spec": {}},
    ],
    ids=["configmap", "service", "deployment", "claim-template", "jobset"],
)
def test_known_kinds_never_take_the_structural_search(monkeypatch: pytest.MonkeyPatch, obj: dict[str, Any]) -> None:
    """The fallback walks the whole object: built-in and tabled kinds must not pay for it."""

    def refuse(obj: Any) -> Any:
        raise AssertionError("structural search on a known kind")

    monkeypatch.setattr(pod_templates, "_search", refuse)
    pod_specs(obj)
    check_objects([obj])


def test_argo_inline_templates_in_steps_and_dag_tasks() -> None:
    (obj,) = _objects(
        """
apiVersion: argoproj.io/v1alpha1
kind: WorkflowTemplate
metadata: {name: w, namespace: ns}
spec:
  templates:
  - name: main
    steps:
    - - name: a
        inline:
          resourceClaims: [{name: gpu, resourceClaimName: shared}]
          container: {image: cuda, resources: {claims: [{name: gpu}]}}
  - name: graph
    dag:
      tasks:
      - name: b
        inline:
          container: {image: cuda, resources: {claims: [{name: gpu}]}}
"""
    )
    assert [view.path for view in pod_specs(obj)] == [
        ("spec", "templates", 0, "steps", 0, 0, "inline"),
        ("spec", "templates", 1, "dag", "tasks", 0, "inline"),
    ]
    assert _located(obj) == {
        ("DRA005", "w", "/spec/templates/0/steps/0/0/inline/resourceClaims/0/resourceClaimName"),
        ("DRA009", "w", "/spec/templates/1/dag/tasks/0/inline/container/resources/claims/0/name"),
    }


def test_argo_workflow_claims_reach_templates_called_from_elsewhere() -> None:
    """No template of its own falls back to them, yet templateRef'd templates do."""
    (obj,) = _objects(
        """
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: w, namespace: ns}
spec:
  resourceClaims: [{name: gpu, resourceClaimName: shared}]
  templates:
  - name: main
    steps: [[{name: a, templateRef: {name: library, template: train}}]]
"""
    )
    assert _located(obj) == {("DRA005", "w", "/spec/resourceClaims/0/resourceClaimName")}


_GPU_CONTAINER = {"name": "main", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": 1}}}
_DRA001_WAIVER = {"dra-guard.io/ignore-DRA001": "burn-in, OPS-142"}


def _argo(kind: str, workflow_spec: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """An Argo object of `kind` with `workflow_spec` where its kind keeps it, and that place."""
    spec, where = (
        ({"schedule": "0 * * * *", "workflowSpec": workflow_spec}, "/spec/workflowSpec")
        if kind == "CronWorkflow"
        else (workflow_spec, "/spec")
    )
    metadata = {"name": "w"} if kind == "ClusterWorkflowTemplate" else {"name": "w", "namespace": "ns"}
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": kind, "metadata": metadata, "spec": spec}, where


@pytest.mark.parametrize("kind", list(pod_templates.ARGO_WORKFLOW_SPECS))
def test_argo_template_defaults_metadata_is_between_the_workflows_and_the_templates(kind: str) -> None:
    """Argo merges `templateDefaults` into each template before `addMetadata`, the template's
    own values winning (workflow/controller/operator.go `mergedTemplateDefaultsInto`): a GPU
    share asked for there passed unseen, and a waiver there did not waive."""
    plain = {"name": "main", "container": {"name": "main", "image": "cuda"}}
    shared, where = _argo(
        kind,
        {
            "podMetadata": {"annotations": {"team": "a", "gpu-memory": "2000"}},
            "templateDefaults": {"metadata": {"annotations": {"gpu-fraction": "0.5", "gpu-memory": "4000"}}},
            "templates": [plain, {**plain, "name": "own", "metadata": {"annotations": {"gpu-fraction": "0.25"}}}],
        },
    )
    assert [view.template_metadata["annotations"] for view in pod_specs(shared)] == [
        {"team": "a", "gpu-fraction": "0.5", "gpu-memory": "4000"},
        {"team": "a", "gpu-fraction": "0.25", "gpu-memory": "4000"},
    ]
    assert _located(shared) == {
        ("DRA001", "w", f"{where}/templateDefaults/metadata/annotations/gpu-fraction"),
        ("DRA001", "w", f"{where}/templateDefaults/metadata/annotations/gpu-memory"),
        ("DRA001", "w", f"{where}/templates/1/metadata/annotations/gpu-fraction"),
    }
    waived, _ = _argo(
        kind,
        {
            "templateDefaults": {"metadata": {"annotations": dict(_DRA001_WAIVER)}},
            "templates": [{"name": "a", "container": dict(_GPU_CONTAINER)}],
        },
    )
    assert "DRA001" not in {rule for rule, _, _ in _located(waived)}


@pytest.mark.parametrize("kind", list(pod_templates.ARGO_WORKFLOW_SPECS))
def test_argo_pod_metadata_is_on_every_pod(kind: str) -> None:
    """Argo gives every pod the workflow's `podMetadata`, with the template's `metadata`
    copied over it (argo-workflows workflow/controller/workflowpod.go `addMetadata`): a
    waiver there waives, as the webhook does on the pods, and a GPU share asked for there
    is reported once, where it is written; a key in both is the template's."""
    templates = [
        {"name": "a", "container": dict(_GPU_CONTAINER)},
        {"name": "b", "script": {**_GPU_CONTAINER, "source": "train"}},
    ]
    waived, _ = _argo(kind, {"podMetadata": {"annotations": dict(_DRA001_WAIVER)}, "templates": templates})
    assert "DRA001" not in {rule for rule, _, _ in _located(waived)}

    quarter = {
        "name": "c",
        "container": {"name": "main", "image": "cuda"},
        "metadata": {"annotations": {"gpu-fraction": "0.25"}},
    }
    shares = [{"name": "a", "container": {"name": "main", "image": "cuda"}}, dict(quarter), {**quarter, "name": "d"}]
    shared, where = _argo(
        kind, {"podMetadata": {"annotations": {"gpu-fraction": "0.5", "team": "a"}}, "templates": shares}
    )
    assert [view.template_metadata["annotations"] for view in pod_specs(shared)] == [
        {"gpu-fraction": "0.5", "team": "a"},
        {"gpu-fraction": "0.25", "team": "a"},
        {"gpu-fraction": "0.25", "team": "a"},
    ]
    assert _located(shared) == {
        ("DRA001", "w", f"{where}/podMetadata/annotations/gpu-fraction"),
        ("DRA001", "w", f"{where}/templates/1/metadata/annotations/gpu-fraction"),
        ("DRA001", "w", f"{where}/templates/2/metadata/annotations/gpu-fraction"),
    }
    assert len([finding for finding in findings(shared) if finding.rule == "DRA001"]) == 3


def test_argo_pod_metadata_reaches_templates_called_from_elsewhere() -> None:
    """The pods of templates a workflow calls by templateRef get its `podMetadata` too: a
    waiver there waives what its workflow-level claims do to them."""
    claims = {"resourceClaims": [{"name": "gpu", "resourceClaimName": "shared"}]}
    steps = [{"name": "main", "steps": [[{"name": "a", "templateRef": {"name": "library", "template": "train"}}]]}]
    workflow, _ = _argo("Workflow", {**claims, "templates": steps})
    assert _located(workflow) == {("DRA005", "w", "/spec/resourceClaims/0/resourceClaimName")}
    waiver = {"dra-guard.io/ignore-DRA005": "one reader at a time, OPS-7"}
    waived, _ = _argo("Workflow", {**claims, "podMetadata": {"annotations": waiver}, "templates": steps})
    assert _located(waived) == set()


def test_kserve_model_containers_may_get_their_claims_from_the_serving_runtime() -> None:
    def service(predictor: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "serving.kserve.io/v1beta1",
            "kind": "InferenceService",
            "metadata": {"name": "s", "namespace": "ns"},
            "spec": {"predictor": predictor},
        }

    model = {"modelFormat": {"name": "tensorflow"}, "resources": {"claims": [{"name": "gpu"}]}}
    assert _located(service({"model": model})) == set()
    custom = {"containers": [{"name": "kserve-container", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}]}
    assert _located(service(custom)) == {("DRA009", "s", "/spec/predictor/containers/0/resources/claims/0/name")}


def test_kserve_inline_pod_specs_carry_the_annotations_their_pods_get() -> None:
    """A ServingRuntime's pods get its `spec.annotations` (ServingRuntimePodSpec, inline), an
    LLMInferenceService's those of the WorkloadSpec beside each template (kserve/kserve
    components/predictor.go `buildObjectMeta`, llmisvc/workload_single_node.go): a waiver or
    a scheduler's GPU-share annotation there is on the pods, so the finder gives it."""
    gpu = {"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}
    waiver = {"dra-guard.io/ignore-DRA001": "burn-in, OPS-142"}
    runtime = {
        "apiVersion": "serving.kserve.io/v1alpha1",
        "kind": "ServingRuntime",
        "metadata": {"name": "rt", "namespace": "ns"},
        "spec": {"containers": [gpu], "annotations": waiver},
    }
    llm = {
        "apiVersion": "serving.kserve.io/v1alpha2",
        "kind": "LLMInferenceService",
        "metadata": {"name": "llm", "namespace": "ns"},
        "spec": {
            "annotations": waiver,
            "template": {"containers": [gpu]},
            "prefill": {
                "annotations": {"gpu-fraction": "0.5"},
                "template": {"containers": [{"name": "p", "image": "i"}]},
            },
        },
    }
    assert [(view.metadata_path, view.template_metadata) for view in pod_specs(runtime)] == [
        (("spec",), {"annotations": waiver})
    ]
    assert [view.metadata_path for view in pod_specs(llm)] == [("spec",), ("spec", "prefill")]
    assert _located(runtime) == set()
    assert _located(llm) == {("DRA001", "llm", "/spec/prefill/annotations/gpu-fraction")}


def _pytorch_job(worker_annotations: dict[str, str]) -> dict[str, Any]:
    def replica(annotations: dict[str, str]) -> dict[str, Any]:
        spec = {"resourceClaims": [dict(SHARED)], "containers": [dict(USES_GPU)]}
        return {"replicas": 2, "template": {"metadata": {"annotations": annotations}, "spec": spec}}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {"pytorchReplicaSpecs": {"Master": replica({}), "Worker": replica(worker_annotations)}},
    }


def test_a_waiver_on_one_pod_template_waives_only_that_template() -> None:
    waived = _pytorch_job({"dra-guard.io/ignore-DRA005": "workers share a read-only device, see OPS-7"})
    assert _located(waived) == {
        ("DRA005", "j", "/spec/pytorchReplicaSpecs/Master/template/spec/resourceClaims/0/resourceClaimName")
    }
    assert len(_located(_pytorch_job({}))) == 2


def _pod(name: str, namespace: str | None) -> dict[str, Any]:
    metadata = {"name": name} if namespace is None else {"name": name, "namespace": namespace}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"resourceClaims": [dict(SHARED)], "containers": [dict(USES_GPU)]},
    }


def test_dra005_across_pods_with_and_without_a_namespace() -> None:
    """Issue 14 item 1: the pod without a namespace lands where the input is applied,
    which may be tenant-a: the two pods are compared as one namespace."""
    assert {(rule, name) for rule, name, _ in _located(_pod("a", "tenant-a"), _pod("b", None))} == {
        ("DRA005", "a"),
        ("DRA005", "b"),
    }
    assert _located(_pod("a", "tenant-a"), _pod("b", "tenant-b")) == set()


def test_builtin_pod_views_are_unchanged() -> None:
    """What the rules saw before the finder: one view per built-in workload, at its path."""
    claim_template = template()
    assert pod_specs(claim_template) == ()
    (view,) = pod_specs(_pod("a", "ns"))
    assert view.path == ("spec",) and not view.is_template and view.complete
