"""What workload controllers do with a device-plugin request besides passing it to the pod,
and so what migrate must refuse, say or add when a claim replaces the request.

A claim in the pod template is all a Deployment needs.  The controllers of workload CRDs
also read the request: KubeRay turns a GPU limit into `ray start --num-gpus`, Kubeflow
Trainer counts a runtime's GPUs and overwrites its `node` container's resources, the MPI
operator decides from the launcher's GPU limit whether the launcher is a worker,
LeaderWorkerSet injects the TPU environment only where `google.com/tpu` is asked for,
KServe picks a runtime's GPU image from the model container's limit and runs services in
Knative, which refuses claims.  Each rule below names the upstream code it rests on, at the
revisions tests/fixtures/crds/POD-TEMPLATES.md lists; README.md "Migrate from the device
plugin" says the same for users.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dra_guard.migrate.edits import Edit, Path
from dra_guard.migrate.sites import Container, PodSite, argo_workflow_spec, kind_key
from dra_guard.model.manifest import get_path
from dra_guard.model.pod_templates import ARGO_GROUP, KSERVE_GROUP, KSERVE_MERGED_CONTAINERS

#: Kinds that live in no namespace, while the pods they describe look for their
#: ResourceClaimTemplate in their own.
CLUSTER_SCOPED = {
    ("trainer.kubeflow.org", "ClusterTrainingRuntime"): "TrainJobs",
    (ARGO_GROUP, "ClusterWorkflowTemplate"): "workflows",
}
#: KServe's annotation for how an InferenceService is run, and the values that mean plain
#: Deployments (`pkg/constants/constants.go`: `RawDeployment` is the old name of `Standard`).
KSERVE_DEPLOYMENT_MODE = "serving.kserve.io/deploymentMode"
KSERVE_STANDARD_MODES = frozenset({"Standard", "RawDeployment"})
#: The annotation from which KServe's pod webhook sets a GKE accelerator node selector.
KSERVE_GKE_ACCELERATOR = "serving.kserve.io/gke-accelerator"
#: Component fields that KServe merges into the ServingRuntime's container (the finder's
#: "merged" containers).
_KSERVE_RUNTIME_CONTAINERS = frozenset(KSERVE_MERGED_CONTAINERS)
_LWS_GROUPS = frozenset({"leaderworkerset.x-k8s.io", "disaggregatedset.x-k8s.io"})
_TRAINING_RUNTIMES = frozenset({"TrainingRuntime", "ClusterTrainingRuntime"})
#: KubeRay's GPU resource names (`ray-operator/controllers/ray/utils/resources.go` IsGPUResourceKey).
_KUBERAY_MIG = re.compile(r"nvidia\.com/mig-\d+g\.\d+gb$")
_KUBERAY_TPU = "google.com/tpu"


@dataclass(frozen=True)
class Removal:
    """The legacy keys migrate takes out of one container, by section (`limits`, `requests`)."""

    site: PodSite
    container: Container
    removed: Mapping[str, Sequence[str]]

    def paths(self) -> Iterator[tuple[Path, str]]:
        for section, names in self.removed.items():
            for name in names:
                yield (*self.container.path, "resources", section, name), name


@dataclass
class Review:
    """What the object's controllers make of the change: refusals, notes, extra edits
    (paths from the object's root)."""

    errors: list[tuple[Path, str]] = field(default_factory=list)
    notes: list[tuple[Path, str]] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)


def review(obj: Mapping[str, Any], removals: Sequence[Removal]) -> Review:
    """Refusals, notes and edits for replacing `removals` in `obj`."""
    result = Review()
    if not removals:
        return result
    group, kind = kind_key(obj)
    if group == KSERVE_GROUP:
        _kserve(obj, kind, removals, result)
    elif group == ARGO_GROUP:
        _argo(obj, kind, removals, result)
    elif group == "ray.io":
        for site in dict.fromkeys(removal.site for removal in removals):
            _kuberay(obj, site, [removal for removal in removals if removal.site is site], result)
    for removal in removals:
        for path, resource in removal.paths():
            reason = _refusal(group, kind, removal, resource)
            if reason is not None:
                result.errors.append((path, f"{resource}: {reason}"))
    scoped = CLUSTER_SCOPED.get((group or "", kind))
    if scoped is not None and not result.errors:
        result.notes.append(
            (
                ("metadata",),
                f"a {kind} has no namespace, and the pods of the {scoped} that use it look for their "
                "ResourceClaimTemplate in their own: create the template(s) in each of those namespaces "
                "(written here for --namespace; the isolation tag binds the namespace, so migrate once per "
                "namespace)",
            )
        )
    return result


def _refusal(group: str | None, kind: str, removal: Removal, resource: str) -> str | None:
    """Why replacing `resource` in this container would change what the controller does."""
    if group == "trainer.kubeflow.org" and kind in _TRAINING_RUNTIMES and removal.container.name == "node":
        return (
            "Kubeflow Trainer reads the node container's resources: a TrainJob's resourcesPerNode replaces "
            "them, claims included (pkg/runtime/core/trainingruntime.go), and the torch, MPI and XGBoost "
            "policies count GPUs there (pkg/runtime/runtime.go GetNumGPUPerNode; without one, torch's "
            'numProcPerNode "auto" becomes the CPU count); replace it by hand and set numProcPerNode'
        )
    if group == "kubeflow.org" and kind == "MPIJob" and "Launcher" in removal.site.path and "gpu" in resource:
        return (
            "the MPI operator makes a launcher with a GPU limit one of the MPI hosts and blanks "
            "NVIDIA_VISIBLE_DEVICES in any other (training-operator pkg/controller.v1/mpi/mpijob.go "
            "isGPULauncher); replace it by hand"
        )
    if group in _LWS_GROUPS and resource == _KUBERAY_TPU:
        return (
            "LeaderWorkerSet sets TPU_WORKER_HOSTNAMES and the other TPU variables only in pods that "
            "request google.com/tpu (lws pkg/utils/accelerators/tpu.go); replace it by hand"
        )
    return None


# --- KServe ------------------------------------------------------------------------------


def _kserve(obj: Mapping[str, Any], kind: str, removals: Sequence[Removal], result: Review) -> None:
    first, resource = next(removals[0].paths())
    if kind in ("ServingRuntime", "ClusterServingRuntime"):
        result.errors.append(
            (
                first,
                f"{resource}: a {kind}'s pod runs under every InferenceService that selects it, in that "
                "service's deployment mode, and Knative (KServe's default mode) refuses resources.claims "
                "(knative/serving issue 15332); give the claims to InferenceServices run as Standard",
            )
        )
        return
    if kind != "InferenceService":
        return
    annotations = get_path(obj, ("metadata", "annotations"))
    mode = annotations.get(KSERVE_DEPLOYMENT_MODE) if isinstance(annotations, Mapping) else None
    if mode not in KSERVE_STANDARD_MODES:
        if mode == "ModelMesh":
            why = "ModelMesh serves it from pods of its own (deploymentMode ModelMesh)"
        else:
            # Knative, Serverless, or unset or unknown: the configured default, Knative as shipped.
            why = (
                f"KServe runs it with Knative ({KSERVE_DEPLOYMENT_MODE} {mode or 'unset'}; Knative is the "
                "default of KServe's shipped inferenceservice-config), which refuses resources.claims "
                "(knative/serving issue 15332)"
            )
        result.errors.append(
            (first, f"{resource}: {why}; annotate {KSERVE_DEPLOYMENT_MODE}: Standard, or replace it by hand")
        )
        return
    for removal in removals:
        path = removal.site.path
        component = path[:-1] if path[-1] == "workerSpec" else path
        if isinstance(get_path(obj, (*component, "workerSpec")), Mapping):
            why = _KSERVE_MULTI_NODE
        elif removal.container.path[-1] in _KSERVE_RUNTIME_CONTAINERS:
            why = _KSERVE_MERGED
        else:
            if "nvidia.com/gpu" in removal.removed.get("limits", ()) and any(
                isinstance(found, Mapping) and KSERVE_GKE_ACCELERATOR in found
                for found in (annotations, get_path(obj, (*component, "annotations")))
            ):
                result.notes.append((removal.site.path, _KSERVE_GKE))
            continue
        result.errors.extend((request, f"{resource}: {why}") for request, resource in removal.paths())


_KSERVE_MULTI_NODE = (
    "a multi-node predictor (workerSpec) gets nvidia.com/gpu from KServe itself "
    "(reconcilers/deployment/deployment_reconciler.go addGPUResourceToDeployment); replace it by hand"
)
_KSERVE_GKE = (
    f"KServe's pod webhook adds the node selector cloud.google.com/gke-accelerator from {KSERVE_GKE_ACCELERATOR} "
    "only to pods with an nvidia.com/gpu limit (pkg/webhook/admission/pod/accelerator_injector.go): "
    "set that nodeSelector in the component yourself"
)
_KSERVE_MERGED = (
    "KServe merges this container into one it builds (from the ServingRuntime, or the explainer image) "
    "and picks a model's GPU or CPU image from its GPU limit (inferenceservice/utils/utils.go "
    "UpdateImageTag); move the model into the component's containers, or replace it by hand"
)


# --- Argo Workflows --------------------------------------------------------------------------


def _argo(obj: Mapping[str, Any], kind: str, removals: Sequence[Removal], result: Review) -> None:
    found = argo_workflow_spec(obj)
    workflow_path, workflow = found if found else ((), {})
    shared = kind in ("WorkflowTemplate", "ClusterWorkflowTemplate")
    for site in dict.fromkeys(removal.site for removal in removals):
        own = get_path(obj, site.claims_path)
        if site.inherited_claims and shared:
            result.errors.append((site.path, _ARGO_SHARED_FALLBACK))
        elif site.inherited_claims:
            names = ", ".join(str(claim.get("name")) for claim in site.inherited_claims)
            result.notes.append(
                (site.path, f"the claims this template inherited ({names}) are copied into its own list")
            )
        elif not (isinstance(own, list) and own) and (shared or "workflowTemplateRef" in workflow):
            result.notes.append((site.path, _ARGO_REPLACES_UNSEEN))
    result.notes.append((workflow_path, _ARGO_4_1))


_ARGO_4_1 = (
    "needs Argo Workflows 4.1 or later, where templates take resourceClaims (an older controller ignores "
    "them, and the pods would get no device); a template's list replaces the workflow-level one rather "
    "than adding to it (workflow/controller/workflowpod.go)"
)
_ARGO_SHARED_FALLBACK = (
    "this template has no resourceClaims of its own, and what its pods get instead depends on how it is "
    "called (the workflow-level claims through workflowTemplateRef, the calling workflow's through "
    "templateRef), which a list of its own would replace; give it its claims by hand"
)
_ARGO_REPLACES_UNSEEN = (
    "its own resourceClaims replace any workflow-level ones its pods would otherwise get, from a calling "
    "workflow or a referenced WorkflowTemplate"
)


# --- KubeRay -------------------------------------------------------------------------------


def _is_kuberay_gpu(name: str) -> bool:
    return name.endswith("gpu") or _KUBERAY_MIG.search(name) is not None


def _whole(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    return int(value) if isinstance(value, str) and value.isdigit() else None


def _kuberay(obj: Mapping[str, Any], site: PodSite, removals: Sequence[Removal], result: Review) -> None:
    """Keep what KubeRay made of the Ray container's limits (`ray-operator/controllers/ray/
    common/pod.go` generateRayStartCommand): the first non-zero GPU limit, in name order,
    becomes `num-gpus` unless rayStartParams or the group's `resources` give one; a
    `google.com/tpu` limit becomes a `TPU` Ray resource."""
    if site.path[-2:] != ("template", "spec"):
        return
    group_path = site.path[:-2]
    if not (group_path[-1:] == ("headGroupSpec",) or group_path[-2:-1] == ("workerGroupSpecs",)):
        return  # a RayJob's submitter pod runs no Ray node
    ray_container = (*site.path, "containers", 0)
    removed = {
        name
        for removal in removals
        if removal.container.path == ray_container
        for name in removal.removed.get("limits", ())
    }
    limits = get_path(obj, (*ray_container, "resources", "limits"))
    if not removed or not isinstance(limits, Mapping):
        return
    group = get_path(obj, group_path)
    if not isinstance(group, Mapping):
        return
    params, group_resources = group.get("rayStartParams"), group.get("resources")
    from_group = isinstance(group_resources, Mapping) and any(
        _is_kuberay_gpu(str(name).lower()) for name in group_resources
    )
    winner = next(
        (name for name in sorted(map(str, limits)) if _is_kuberay_gpu(name) and _whole(limits[name]) != 0), None
    )
    if winner in removed and not from_group and not (isinstance(params, Mapping) and "num-gpus" in params):
        count = str(_whole(limits[winner]))
        if isinstance(params, Mapping):
            result.edits.append(Edit("add", (*group_path, "rayStartParams", "num-gpus"), count))
        elif "rayStartParams" not in group:
            result.edits.append(Edit("add", (*group_path, "rayStartParams"), {"num-gpus": count}))
        else:
            result.errors.append(((*group_path, "rayStartParams"), "rayStartParams is not a mapping"))
            return
        result.notes.append(
            (
                (*group_path, "rayStartParams"),
                f'rayStartParams num-gpus "{count}" added: KubeRay derived it from the {winner} limit, '
                "which the claim replaces",
            )
        )
    if _KUBERAY_TPU in removed and _whole(limits[_KUBERAY_TPU]) != 0:
        result.notes.append(
            (
                (*group_path, "rayStartParams"),
                f"KubeRay gave this Ray node a TPU resource of {limits[_KUBERAY_TPU]} from its google.com/tpu "
                'limit; add it to rayStartParams resources (\'"{"TPU": N}"\') if the Ray tasks ask for TPU',
            )
        )
