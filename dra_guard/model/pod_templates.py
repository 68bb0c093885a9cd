"""Where an object keeps the pods it makes: one finder for every rule that reads pod specs.

Three sources, tried in order:

1. Built-in workloads (`catalog.POD_SPEC_PATHS`: Pod, Deployment, ..., CronJob).
2. A table of workload CRDs whose pod templates sit at known paths -- JobSet,
   LeaderWorkerSet, the Kubeflow jobs and training runtimes, Ray, KServe serving
   runtimes -- and two kinds that build pods from parts: Argo Workflows (a pod per
   template, with workflow-level claims as a fallback) and KServe InferenceServices (pod
   fields inline in each component).  tests/fixtures/crds/POD-TEMPLATES.md gives each path
   with the upstream type it comes from.
3. For any other kind outside Kubernetes' own API groups, a structural search: a mapping
   with a `containers` list of container-shaped mappings is a pod spec.  So a CRD nobody
   told us about cannot hide a pod either.

Objects of Kubernetes' own groups that are not workloads (ConfigMap, Service,
ResourceClaim, ...) have no pods, and cost one dict lookup.  Every pod spec found outside
a Pod is treated as a template that stamps out many pods: a claim named there is shared.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from dra_guard.model.manifest import (
    CONTAINER_LISTS,
    POD_SPEC_PATHS,
    ContainerView,
    Path,
    get_path,
    items,
    mapping,
    text,
)

#: API groups served by Kubernetes itself: an unknown kind there has no pods (the API
#: server knows every kind it serves), so the structural search never runs on them.
BUILTIN_GROUPS = frozenset(
    {
        "",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "apps",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "extensions",
        "flowcontrol.apiserver.k8s.io",
        "internal.apiserver.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
        "storagemigration.k8s.io",
    }
)


class _Any:
    """A path step that matches every item of a list and every value of a mapping."""

    def __repr__(self) -> str:
        return "*"


ANY = _Any()
Pattern = tuple["str | _Any", ...]


class PodSpecView(NamedTuple):
    """One pod spec of an object, with the containers and pod claims its pods get."""

    #: Where the pod spec (or, for an Argo template, the template) is.
    path: Path
    spec: Mapping[str, Any]
    #: Metadata of the pod (Pod) or of the pod template, where waivers may sit.
    template_metadata: Mapping[str, Any]
    #: True when the spec is a template that stamps out many pods.
    is_template: bool
    containers: tuple[ContainerView, ...]
    #: The pod's `resourceClaims` entries with their paths (which need not be under `path`).
    claims: tuple[tuple[Path, Mapping[str, Any]], ...]
    #: False when the pods also get containers or claims from elsewhere (a KServe
    #: ServingRuntime, or pods not defined here), so unused or undeclared claims prove nothing.
    complete: bool = True
    #: Said after "container"/"pod claim" in messages when an object has pods of several kinds.
    where: str = ""
    #: Where `template_metadata` is; None for a pod spec written without metadata of its own.
    metadata_path: Path | None = None
    #: Where pods whose metadata merges several places (an Argo template's pods: the
    #: workflow's `spec.podMetadata`, then the template's `metadata`) get each from: (path,
    #: that metadata) in the order applied, a later one winning on a key in both;
    #: `template_metadata` is the merge.  Empty where it is all at `metadata_path`.
    metadata_layers: tuple[tuple[Path, Mapping[str, Any]], ...] = ()

    def annotation_places(self) -> tuple[Path, ...]:
        """The path of each `annotations` map whose entries the pods get (written or not)."""
        if self.metadata_layers:
            return tuple((*path, "annotations") for path, _ in self.metadata_layers)
        return () if self.metadata_path is None else ((*self.metadata_path, "annotations"),)

    def annotation_path(self, key: str) -> Path | None:
        """Where the annotation `key` the pods get is written: the place that wins."""
        if self.metadata_layers:
            for path, metadata in reversed(self.metadata_layers):
                if key in mapping(metadata.get("annotations")):
                    return (*path, "annotations", key)
            return None
        if self.metadata_path is None or key not in mapping(self.template_metadata.get("annotations")):
            return None
        return (*self.metadata_path, "annotations", key)


# --- the table ------------------------------------------------------------------------

# A PodTemplateSpec: the pod spec under `spec`, its metadata beside it.
_TEMPLATE = "template"
# A pod spec inline that holds the `annotations` its pods get itself (KServe's
# ServingRuntimePodSpec, inlined in ServingRuntimeSpec and WorkerSpec: "Annotations that will
# be add to the pod", pkg/apis/serving/v1alpha1/servingruntime_types.go; the predictor's pods
# get them, components/predictor.go `buildObjectMeta` and `reconcileWorker`).
_INLINE_WITH_ANNOTATIONS = "inline, with its annotations"
# A pod spec inline whose parent holds the `annotations` its pods get (KServe's WorkloadSpec
# and SchedulerSpec: `annotations` beside `template` and `worker`, put on the pod templates
# by pkg/controller/v1alpha2/llmisvc/workload_single_node.go, workload_multi_node.go and
# scheduler.go with `utils.PropagateMap`).
_INLINE_ANNOTATIONS_BESIDE = "inline, annotations beside"

_RAY_CLUSTER: tuple[Pattern, ...] = (("headGroupSpec", "template"), ("workerGroupSpecs", ANY, "template"))
_REPLICATED_JOBS: Pattern = ("replicatedJobs", ANY, "template", "spec", "template")
_LEADER_WORKER: tuple[Pattern, ...] = (
    ("leaderWorkerTemplate", "leaderTemplate"),
    ("leaderWorkerTemplate", "workerTemplate"),
)


def _under(prefix: Pattern, patterns: tuple[Pattern, ...]) -> tuple[Pattern, ...]:
    return tuple((*prefix, *pattern) for pattern in patterns)


#: (API group, kind) -> (how the pod is written, where) for CRDs with pod templates at fixed paths.
CRD_POD_TEMPLATES: Mapping[tuple[str, str], tuple[tuple[str, Pattern], ...]] = {
    key: tuple((style, pattern) for pattern in patterns)
    for key, style, patterns in (
        (("jobset.x-k8s.io", "JobSet"), _TEMPLATE, (("spec", *_REPLICATED_JOBS),)),
        (("leaderworkerset.x-k8s.io", "LeaderWorkerSet"), _TEMPLATE, _under(("spec",), _LEADER_WORKER)),
        (
            ("disaggregatedset.x-k8s.io", "DisaggregatedSet"),
            _TEMPLATE,
            _under(("spec", "roles", ANY, "spec"), _LEADER_WORKER),
        ),
        *(
            (("kubeflow.org", kind), _TEMPLATE, (("spec", field, ANY, "template"),))
            for kind, field in (
                ("PyTorchJob", "pytorchReplicaSpecs"),
                ("TFJob", "tfReplicaSpecs"),
                ("MPIJob", "mpiReplicaSpecs"),
                ("XGBoostJob", "xgbReplicaSpecs"),
                ("PaddleJob", "paddleReplicaSpecs"),
                ("JAXJob", "jaxReplicaSpecs"),
            )
        ),
        *(
            (("trainer.kubeflow.org", kind), _TEMPLATE, (("spec", "template", "spec", *_REPLICATED_JOBS),))
            for kind in ("TrainingRuntime", "ClusterTrainingRuntime")
        ),
        # No pod template: its pods come from the runtime it names (resourcesPerNode is
        # a ResourceRequirements, which the legacy-resource rule reads on its own).
        (("trainer.kubeflow.org", "TrainJob"), _TEMPLATE, ()),
        (("ray.io", "RayCluster"), _TEMPLATE, _under(("spec",), _RAY_CLUSTER)),
        (
            ("ray.io", "RayJob"),
            _TEMPLATE,
            (*_under(("spec", "rayClusterSpec"), _RAY_CLUSTER), ("spec", "submitterPodTemplate")),
        ),
        (("ray.io", "RayService"), _TEMPLATE, _under(("spec", "rayClusterConfig"), _RAY_CLUSTER)),
        (
            ("ray.io", "RayCronJob"),
            _TEMPLATE,
            (
                *_under(("spec", "jobTemplate", "rayClusterSpec"), _RAY_CLUSTER),
                ("spec", "jobTemplate", "submitterPodTemplate"),
            ),
        ),
        *(
            (("serving.kserve.io", kind), _INLINE_WITH_ANNOTATIONS, (("spec",), ("spec", "workerSpec")))
            for kind in ("ServingRuntime", "ClusterServingRuntime")
        ),
        *(
            (
                ("serving.kserve.io", kind),
                _INLINE_ANNOTATIONS_BESIDE,
                (
                    ("spec", "template"),
                    ("spec", "worker"),
                    ("spec", "prefill", "template"),
                    ("spec", "prefill", "worker"),
                    ("spec", "router", "scheduler", "template"),
                ),
            )
            for kind in ("LLMInferenceService", "LLMInferenceServiceConfig")
        ),
    )
}
ARGO_GROUP = "argoproj.io"
ARGO_WORKFLOW_SPECS: Mapping[str, Path] = {
    "Workflow": ("spec",),
    "WorkflowTemplate": ("spec",),
    "ClusterWorkflowTemplate": ("spec",),
    "CronWorkflow": ("spec", "workflowSpec"),
}
KSERVE_GROUP = "serving.kserve.io"


# --- whose annotations the pods get ---------------------------------------------------

#: Operators' kinds whose pods carry the object's own `metadata.annotations` as well as
#: their pod spec's: a waiver there reaches the pods that admission judges.  Read from each
#: operator's source:
#:
#: * KServe InferenceService (kserve/kserve @ aaac4e294dae2c7b1aa1886447793f3aa1c30912,
#:   pkg/controller/v1beta1/inferenceservice/components/predictor.go `buildPredictorResources`
#:   and `buildObjectMeta`, the same in transformer.go and explainer.go): the pod metadata is the
#:   union of the runtime's, the InferenceService's own (less the configured
#:   `serviceAnnotationDisallowedList`) and the component's annotations, and becomes the
#:   Deployment's (reconcilers/deployment/deployment_reconciler.go `createRawDefaultDeployment`)
#:   or Knative revision's pod template.
#:
#: Every other kind's own annotations stay off its pods, which get their pod template's (and a
#: few keys the operator picks):
#:
#: * JobSet (kubernetes-sigs/jobset @ 08dfbdfd682714a9ab929633eca8dc95315187e7,
#:   pkg/controllers/jobset_controller.go `constructJob`, `labelAndAnnotateObject`): the
#:   replicated job's template, plus JobSet keys and only the exclusive-placement annotations.
#: * LeaderWorkerSet, DisaggregatedSet (kubernetes-sigs/lws @
#:   060ab4da17eea1f0865fcbd3236bb1075e2cea32, pkg/controllers/leaderworkerset_controller.go
#:   `constructLeaderStatefulSetApplyConfiguration`, pod_controller.go
#:   `constructWorkerStatefulSetApplyConfiguration`): the LeaderWorkerSet's annotations go on its
#:   StatefulSets, not their pod templates; pkg/controllers/disaggregatedset/lws_manager.go
#:   `Create` copies a role's metadata onto the LeaderWorkerSet it makes.
#: * Kubeflow v1 jobs (kubeflow/training-operator @ 078ec30ff26649a07d2e28893c332d4cef70e233,
#:   branch release-1.9, pkg/controller.v1/common/pod.go `createNewPod`,
#:   control/pod_control.go `getPodsAnnotationSet`; mpi/mpijob_controller.go) and MPIJob v2
#:   (kubeflow/mpi-operator @ caa3c47fc42eb762635f78045ec0fcd1a89eb038,
#:   pkg/controller/mpi_job_controller.go `newWorker`, `newLauncherPodTemplate`): the replica's
#:   template only (the job's own go on its PodGroup).
#: * TrainingRuntime, ClusterTrainingRuntime (kubeflow/trainer @
#:   8c0f5059bd51ec3ba6d6a6a7b2e1471de7bc13b3, pkg/runtime/core/trainingruntime.go
#:   `newRuntimeInfo`, pkg/runtime/framework/plugins/jobset/jobset.go `Build`): the runtime's
#:   `spec.template.metadata` goes on the JobSet (which does not pass it on), its own metadata
#:   nowhere.
#: * RayCluster, RayJob, RayService, RayCronJob (ray-project/kuberay @
#:   feeaf72facab4881ba2b179248bb67315634e229, ray-operator/controllers/ray/common/pod.go
#:   `DefaultHeadPodTemplate`, `DefaultWorkerPodTemplate`, `BuildPod`; rayjob_controller.go
#:   `constructRayClusterForRayJob`, `createNewK8sJob`): the group's template plus Ray keys; a
#:   RayJob's or RayService's annotations go on the RayCluster only.
#: * ServingRuntime, ClusterServingRuntime, LLMInferenceService, LLMInferenceServiceConfig
#:   (kserve/kserve @ aaac4e294dae2c7b1aa1886447793f3aa1c30912): a runtime's `spec.annotations`
#:   and `spec.workerSpec.annotations` (predictor.go `buildObjectMeta`, `reconcileWorker`;
#:   its metadata only picks image tags, `UpdateImageTag`); an LLMInferenceService's own
#:   annotations only under approved prefixes (pkg/controller/v1alpha2/llmisvc/
#:   workload_single_node.go `propagateDeploymentMetadata`, workload_multi_node.go
#:   `propagateTopLevelLeaderWorkerSetMetadata`), its pods those of the WorkloadSpec beside
#:   each template (`_INLINE_ANNOTATIONS_BESIDE`).
#: * Argo Workflow, WorkflowTemplate, ClusterWorkflowTemplate, CronWorkflow
#:   (argoproj/argo-workflows @ f016ad89eb269d282aec06dc491c29f396a38df4,
#:   workflow/controller/workflowpod.go `addMetadata`): `spec.podMetadata` and the template's
#:   `metadata`.
#: * Volcano Job, `batch.volcano.sh` (volcano-sh/volcano @
#:   ed72c7c815a9fd547a787134676f73d42e9d049c, pkg/controllers/job/job_controller_util.go
#:   `createJobPod`): the task's template plus a few scheduling keys of the Job's.
#:
#: A kind nobody told us about (found by the structural search) counts as not passing its
#: own on: every operator that writes a PodTemplateSpec passes its metadata to the pods, and
#: one that does not has been read here first.
OWN_ANNOTATIONS_REACH_PODS: frozenset[tuple[str, str]] = frozenset({(KSERVE_GROUP, "InferenceService")})


def own_annotations_stay_off_pods(obj: Mapping[str, Any]) -> bool:
    """Whether the object is an operator's (outside Kubernetes' own API groups) whose pods do
    not carry its own `metadata.annotations`: every kind but `OWN_ANNOTATIONS_REACH_PODS`.
    Kubernetes' own controllers are not answered here: which of their kinds make pods is the
    catalog's (`POD_CONTROLLER_KINDS`)."""
    group = api_group(obj)
    if group in BUILTIN_GROUPS:
        return False
    return (group, text(obj.get("kind"))) not in OWN_ANNOTATIONS_REACH_PODS


def api_group(obj: Mapping[str, Any]) -> str | None:
    """The group of the object's apiVersion ("" for core); None without an apiVersion, which
    then counts as a group we do not know (the object is an input error anyway)."""
    version = obj.get("apiVersion")
    return version.rpartition("/")[0] if isinstance(version, str) else None


def pod_specs(obj: Mapping[str, Any]) -> tuple[PodSpecView, ...]:
    """Every pod spec of the object, in document order."""
    kind = text(obj.get("kind"))
    group = api_group(obj)
    if group in BUILTIN_GROUPS:
        path = POD_SPEC_PATHS.get(kind)
        return () if path is None else _builtin(obj, kind, path)
    if group is None:
        return tuple(_search(obj))
    known = CRD_POD_TEMPLATES.get((group, kind))
    if known is not None:
        return tuple(_at_patterns(obj, known))
    if group == ARGO_GROUP and kind in ARGO_WORKFLOW_SPECS:
        return tuple(_argo(obj, ARGO_WORKFLOW_SPECS[kind]))
    if group == KSERVE_GROUP and kind == "InferenceService":
        return tuple(_kserve(obj))
    return tuple(_search(obj))


def waiver_places(obj: Mapping[str, Any]) -> tuple[Path, ...]:
    """Every `annotations` map, written or not, where an `ignore-<rule>` annotation may waive
    a finding of the object: its own metadata's, then each pod spec's, those its pods get
    (`PodSpecView.annotation_places`).  The engine reads waivers from no other
    (`dra_guard.engine.run._annotation_waiver`); front ends that must know whether a waiver
    may yet appear (the Pulumi pack, of a value unknown at preview) ask here."""
    places: dict[Path, None] = {("metadata", "annotations"): None}
    for view in pod_specs(obj):
        places.update(dict.fromkeys(view.annotation_places()))
    return tuple(places)


def _view(
    path: Path,
    spec: Mapping[str, Any],
    template_metadata: Mapping[str, Any],
    is_template: bool = True,
    **kwargs: Any,
) -> PodSpecView:
    return PodSpecView(
        path,
        spec,
        template_metadata,
        is_template,
        standard_containers(path, spec),
        claims_of(path, spec),
        **kwargs,
    )


# Tuples built in a loop, not generators: every workload of the input has a pod spec, and
# the views are kept with the resource (`Resource.pods`).  Loaded documents hold plain
# dicts: the exact type test skips the ABC check.


def standard_containers(path: Path, spec: Mapping[str, Any]) -> tuple[ContainerView, ...]:
    found = []
    for list_name in CONTAINER_LISTS:
        for index, container in enumerate(items(spec.get(list_name))):
            if type(container) is dict or isinstance(container, Mapping):
                found.append(ContainerView((*path, list_name, index), container))
    return tuple(found)


def claims_of(path: Path, spec: Mapping[str, Any]) -> tuple[tuple[Path, Mapping[str, Any]], ...]:
    return tuple(
        ((*path, "resourceClaims", index), claim)
        for index, claim in enumerate(items(spec.get("resourceClaims")))
        if type(claim) is dict or isinstance(claim, Mapping)
    )


def _builtin(obj: Mapping[str, Any], kind: str, path: Path) -> tuple[PodSpecView, ...]:
    # The pod template (or the Pod) is walked to once: the spec and its metadata sit in it.
    holder = mapping(get_path(obj, path[:-1]))
    spec = get_path(holder, path[-1:])
    if type(spec) is not dict and not isinstance(spec, Mapping):
        return ()
    if kind == "Pod":
        return (_view(path, spec, mapping(obj.get("metadata")), is_template=False, metadata_path=("metadata",)),)
    metadata_path = (*path[:-1], "metadata")
    return (_view(path, spec, mapping(holder.get("metadata")), metadata_path=metadata_path),)


def _matches(value: Any, pattern: Pattern, path: Path = ()) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    """(path, mapping) for every mapping the pattern reaches."""
    if not pattern:
        if isinstance(value, Mapping):
            yield path, value
        return
    step, rest = pattern[0], pattern[1:]
    if isinstance(step, str):
        yield from _matches(mapping(value).get(step), rest, (*path, step))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _matches(item, rest, (*path, str(key)))
    else:
        for index, item in enumerate(items(value)):
            yield from _matches(item, rest, (*path, index))


def _at_patterns(obj: Mapping[str, Any], known: tuple[tuple[str, Pattern], ...]) -> Iterator[PodSpecView]:
    for style, pattern in known:
        for path, found in _matches(obj, pattern):
            if style == _INLINE_WITH_ANNOTATIONS:
                yield _view(path, found, {"annotations": found.get("annotations")}, metadata_path=path)
            elif style == _INLINE_ANNOTATIONS_BESIDE:
                beside = mapping(get_path(obj, path[:-1])).get("annotations")
                yield _view(path, found, {"annotations": beside}, metadata_path=path[:-1])
            else:
                spec = found.get("spec")
                if isinstance(spec, Mapping):
                    metadata = mapping(found.get("metadata"))
                    yield _view((*path, "spec"), spec, metadata, metadata_path=(*path, "metadata"))


# --- Argo Workflows ---------------------------------------------------------------------

#: Template fields that make the template run a pod (steps, dag, suspend, http and
#: plugin templates run none of their own).
_ARGO_POD_TEMPLATES = ("container", "script", "containerSet", "resource", "data")


def _argo(obj: Mapping[str, Any], workflow_path: Path) -> Iterator[PodSpecView]:
    """A pod per template that runs one.  Its pod claims are the template's
    `resourceClaims`, or when it has none the workflow's: the template list replaces the
    workflow list, it is not merged (Argo v4.1 `workflow/controller/workflowpod.go`).

    Its metadata is the workflow's `podMetadata` with the template's `metadata` copied over
    it, the template's winning on a key in both (argoproj/argo-workflows @
    f016ad89eb269d282aec06dc491c29f396a38df4, workflow/controller/workflowpod.go
    `addMetadata`): a waiver or a GPU-share annotation in `podMetadata` is on every pod.  A
    WorkflowTemplate's `podMetadata` reaches the pods of a workflow that runs it whole
    (`workflowTemplateRef`; workflow/util/merge.go `JoinWorkflowSpec`), not those of one of
    its templates another workflow calls by `templateRef`, which get the caller's.  Before
    that, the workflow's `templateDefaults` are merged into each template, the template's
    own values winning (workflow/controller/operator.go `mergedTemplateDefaultsInto`, a
    strategic merge): its `metadata` lies between the two."""
    workflow = mapping(get_path(obj, workflow_path))
    pod_metadata_path = (*workflow_path, "podMetadata")
    pod_metadata = mapping(workflow.get("podMetadata"))
    defaults_path = (*workflow_path, "templateDefaults", "metadata")
    defaults = mapping(get_path(workflow, ("templateDefaults", "metadata")))
    pod_level = _argo_pod_metadata(pod_metadata, defaults)
    fallback = tuple(claims_of(workflow_path, workflow))
    falls_back = False
    for path, template in _argo_templates(workflow, (*workflow_path, "templates")):
        if not any(field in template for field in _ARGO_POD_TEMPLATES):
            continue
        own = tuple(claims_of(path, template))
        falls_back = falls_back or not own
        metadata = mapping(template.get("metadata"))
        yield PodSpecView(
            path,
            template,
            _argo_pod_metadata(pod_level, metadata),
            True,
            tuple(_argo_containers(path, template)),
            own or fallback,
            where=f" of template {text(template.get('name'))!r}",
            metadata_path=(*path, "metadata"),
            metadata_layers=(
                (pod_metadata_path, pod_metadata),
                (defaults_path, defaults),
                ((*path, "metadata"), metadata),
            ),
        )
    if fallback and not falls_back:
        # Workflow-level claims still reach the pods of templates this workflow calls
        # through templateRef, which are defined elsewhere; so does its `podMetadata`.
        yield PodSpecView(
            workflow_path,
            workflow,
            pod_metadata,
            True,
            (),
            fallback,
            complete=False,
            metadata_path=pod_metadata_path,
        )


def _argo_pod_metadata(workflow_level: Mapping[str, Any], template: Mapping[str, Any]) -> Mapping[str, Any]:
    """The labels and annotations `addMetadata` gives a template's pods (`_argo`)."""
    if not workflow_level:
        return template
    return {
        field: {**mapping(workflow_level.get(field)), **mapping(template.get(field))}
        for field in ("annotations", "labels")
    }


def _argo_templates(workflow: Mapping[str, Any], path: Path) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    """Every template: the workflow's, and those written inline in steps and DAG tasks."""
    stack = [((*path, index), template) for index, template in enumerate(items(workflow.get("templates")))]
    stack.reverse()
    while stack:
        template_path, template = stack.pop()
        if not isinstance(template, Mapping):
            continue
        yield template_path, template
        inline: list[tuple[Path, Any]] = []
        for group_index, group in enumerate(items(template.get("steps"))):
            for step_index, step in enumerate(items(group)):
                inline.append(
                    ((*template_path, "steps", group_index, step_index, "inline"), mapping(step).get("inline"))
                )
        tasks = items(mapping(template.get("dag")).get("tasks"))
        for task_index, task in enumerate(tasks):
            inline.append(((*template_path, "dag", "tasks", task_index, "inline"), mapping(task).get("inline")))
        stack.extend(reversed(inline))


def _argo_containers(path: Path, template: Mapping[str, Any]) -> Iterator[ContainerView]:
    for field in ("container", "script"):
        container = template.get(field)
        if isinstance(container, Mapping):
            yield ContainerView((*path, field), container)
    container_set = mapping(template.get("containerSet"))
    for index, container in enumerate(items(container_set.get("containers"))):
        if isinstance(container, Mapping):
            yield ContainerView((*path, "containerSet", "containers", index), container)
    for list_name in ("initContainers", "sidecars"):
        for index, container in enumerate(items(template.get(list_name))):
            if isinstance(container, Mapping):
                yield ContainerView((*path, list_name, index), container)


# --- KServe InferenceService ---------------------------------------------------------

#: Component fields that are a container merged with the ServingRuntime's `kserve-container`.
KSERVE_MERGED_CONTAINERS = (
    "model",
    "sklearn",
    "xgboost",
    "tensorflow",
    "pytorch",
    "triton",
    "onnx",
    "huggingface",
    "pmml",
    "lightgbm",
    "paddle",
    "art",
)


def _kserve(obj: Mapping[str, Any]) -> Iterator[PodSpecView]:
    """Pod fields inline in each component.  A component with a model (or framework)
    container gets its pod from the ServingRuntime too (`MergePodSpec`), so its claims may
    be declared there."""
    spec = mapping(obj.get("spec"))
    components: list[tuple[Path, Any]] = [(("spec", name), spec.get(name)) for name in ("predictor", "transformer")]
    components.append((("spec", "explainer"), spec.get("explainer")))
    for index, canary in enumerate(items(spec.get("canary"))):
        components.append((("spec", "canary", index, "predictor"), mapping(canary).get("predictor")))
    for path, component in list(components):
        if isinstance(component, Mapping) and isinstance(component.get("workerSpec"), Mapping):
            components.append(((*path, "workerSpec"), component["workerSpec"]))
    for path, component in components:
        if not isinstance(component, Mapping):
            continue
        merged = [
            ContainerView((*path, field), container)
            for field in KSERVE_MERGED_CONTAINERS
            if isinstance(container := component.get(field), Mapping)
        ]
        # Components carry their own annotations and labels (ComponentExtensionSpec).
        metadata = {"annotations": component.get("annotations"), "labels": component.get("labels")}
        yield PodSpecView(
            path,
            component,
            metadata,
            True,
            (*standard_containers(path, component), *merged),
            tuple(claims_of(path, component)),
            complete=not merged,
            # The component holds its annotations itself.
            metadata_path=path,
        )


# --- any other kind -------------------------------------------------------------------


def _container_shaped(value: object) -> bool:
    return isinstance(value, Mapping) and (isinstance(value.get("image"), str) or isinstance(value.get("name"), str))


def is_pod_spec_shaped(value: Mapping[str, Any]) -> bool:
    """A `containers` list of container-shaped mappings (with an image or a name)."""
    containers = value.get("containers")
    return isinstance(containers, list) and bool(containers) and all(_container_shaped(c) for c in containers)


def _search(obj: Mapping[str, Any]) -> Iterator[PodSpecView]:
    """Pod-spec-shaped mappings anywhere in the object, outermost first, in document order.

    Iterative, so a deeply nested document cannot exhaust the stack.  A pod spec found
    is not searched further: nothing inside a pod spec is another pod.
    """
    stack: list[tuple[Path, Any, Mapping[str, Any]]] = [((), obj, {})]
    while stack:
        path, value, parent = stack.pop()
        if isinstance(value, Mapping):
            if path and is_pod_spec_shaped(value):
                beside = path[-1] == "spec"
                metadata = mapping(parent.get("metadata")) if beside else {}
                yield _view(path, value, metadata, metadata_path=(*path[:-1], "metadata") if beside else None)
                continue
            children = [((*path, str(key)), item, value) for key, item in value.items()]
        elif isinstance(value, (list, tuple)):
            children = [((*path, index), item, {}) for index, item in enumerate(value)]
        else:
            continue
        stack.extend(reversed(children))
