"""Where an object's pods are, as migrate needs it: the pod spec that takes `resourceClaims`
and the containers that take `resources.claims`.

The pod-template finder (`dra_guard.model.pod_templates`) says where the pods are; only places
whose schema is known are sites: the built-in workloads, the workload CRDs of
`CRD_POD_TEMPLATES` (JobSet, LeaderWorkerSet, the Kubeflow jobs and training runtimes,
Ray, KServe's runtimes and LLM services), Argo Workflows and KServe InferenceServices.  A
pod spec the finder found only by its shape, in a kind nobody told it about, is no site:
that CRD's schema need not take `resourceClaims` there, so writing one could break the
object or be dropped by its controller.  The plan refuses such requests with their path.
Whether a known kind's controller copes with a claim in place of its device-plugin request
is `dra_guard.migrate.operators`' question.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dra_guard.building.spec import name_from_id
from dra_guard.migrate.edits import Path
from dra_guard.model.manifest import ContainerView, get_path
from dra_guard.model.pod_templates import (
    ARGO_GROUP,
    ARGO_WORKFLOW_SPECS,
    BUILTIN_GROUPS,
    CRD_POD_TEMPLATES,
    KSERVE_GROUP,
    PodSpecView,
    api_group,
    pod_specs,
)

#: Container lists of a pod spec whose `resources` migrate rewrites (ephemeral containers
#: may not have any).
CONTAINER_LISTS = ("initContainers", "containers")
#: Argo's sidecars run alongside the main container (its initContainers and containerSet
#: containers are in the lists above).
_ARGO_SIDECARS = "sidecars"
#: An Argo `container` or `script` template runs as the pod's container named `main`,
#: whatever its own `name` says.
_ARGO_MAIN_FIELDS = ("container", "script")
#: Path steps that say nothing about which pod of an object this is.
_GENERIC_STEPS = frozenset({"spec", "template"})
_ROLE_SUFFIX = re.compile(r"(PodTemplate|GroupSpecs?|Template|ReplicaSpecs)$")


@dataclass(frozen=True)
class Container:
    path: Path
    name: str
    #: Runs alongside the others (a regular container or a sidecar), not before them.
    concurrent: bool


@dataclass(frozen=True, eq=False)
class PodSite:
    """One pod spec (or Argo template): its claims go to `path` + `resourceClaims`.

    Compared by identity: the plan groups an object's containers by the site they are in."""

    path: Path
    containers: tuple[Container, ...]
    #: Tells this site from an object's other sites in template names (`workers`, `leader`).
    label: str
    #: Claims the pods get from elsewhere while this site's own list is empty, and lose
    #: once it has one: an Argo template's list replaces the workflow's, it is not merged.
    inherited_claims: tuple[Mapping[str, Any], ...] = ()

    @property
    def claims_path(self) -> Path:
        return (*self.path, "resourceClaims")


def site_label(obj: Mapping[str, Any], path: Path) -> str:
    """A short name for the pod spec at `path`: the names of the list items on the way
    (`replicatedJobs[].name`, `workerGroupSpecs[].groupName`, Argo `templates[].name`),
    else the last telling key (`leaderTemplate` -> `leader`, `pytorchReplicaSpecs.Worker`
    -> `worker`, KServe `predictor`)."""
    names = []
    for depth, part in enumerate(path):
        if isinstance(part, int):
            item = get_path(obj, path[: depth + 1])
            named = item.get("name") or item.get("groupName") if isinstance(item, Mapping) else None
            names.append(str(named) if isinstance(named, str) and named else str(part))
    if not names:
        telling = [part for part in path if isinstance(part, str) and part not in _GENERIC_STEPS]
        names = [_ROLE_SUFFIX.sub("", telling[-1]) or telling[-1]] if telling else ["pod"]
    try:
        return name_from_id("-".join(names), "label")
    except ValueError:
        return "pod"


def kind_key(obj: Mapping[str, Any]) -> tuple[str | None, str]:
    """(API group, kind): "" is the core group, None an object without an apiVersion."""
    kind = obj.get("kind")
    return api_group(obj), kind if isinstance(kind, str) else ""


def knows_pods_of(obj: Mapping[str, Any]) -> bool:
    """Whether the finder knows this kind's pod templates by their paths, not by their shape."""
    group, kind = kind_key(obj)
    if group is None:
        return False
    if group in BUILTIN_GROUPS or (group, kind) in CRD_POD_TEMPLATES:
        return True
    return (group == ARGO_GROUP and kind in ARGO_WORKFLOW_SPECS) or (
        group == KSERVE_GROUP and kind == "InferenceService"
    )


def unknown_kind_reason(obj: Mapping[str, Any]) -> str:
    """Why a request in an object with no sites cannot be migrated."""
    group, kind = kind_key(obj)
    if group not in BUILTIN_GROUPS and not knows_pods_of(obj):
        spelled = f"{kind or '?'} ({group})" if group else kind or "?"
        return (
            f"kind {spelled} is no workload migrate knows: a pod spec found there only by its shape "
            "may sit where the CRD's schema takes no resourceClaims"
        )
    return f"kind {kind or '?'} has no pod template migrate knows"


def pod_sites(obj: Mapping[str, Any]) -> list[PodSite]:
    """The pod specs of `obj` that migrate may rewrite, in document order."""
    if not knows_pods_of(obj):
        return []
    sites = []
    argo_fallback = _argo_fallback(obj)
    for view in pod_specs(obj):
        containers = tuple(container for container in map(_container, view.containers) if container is not None)
        if not containers:
            continue  # an Argo workflow's own claims for templates defined elsewhere
        inherited: tuple[Mapping[str, Any], ...] = ()
        if argo_fallback and not _own_claims(view):
            inherited = argo_fallback
        sites.append(PodSite(view.path, containers, site_label(obj, view.path), inherited))
    return sites


def _own_claims(view: PodSpecView) -> bool:
    claims = view.spec.get("resourceClaims")
    return isinstance(claims, list) and bool(claims)


def argo_workflow_spec(obj: Mapping[str, Any]) -> tuple[Path, Mapping[str, Any]] | None:
    """The WorkflowSpec of an Argo Workflow, CronWorkflow or (Cluster)WorkflowTemplate."""
    group, kind = kind_key(obj)
    path = ARGO_WORKFLOW_SPECS.get(kind) if group == ARGO_GROUP else None
    if path is None:
        return None
    spec = get_path(obj, path)
    return (path, spec) if isinstance(spec, Mapping) else None


def _argo_fallback(obj: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    """The claims a template without its own gets: `templateDefaults`' (merged into every
    template before its pod is built), else the workflow's (Argo v4.1
    `workflow/controller/workflowpod.go` and `operator.go` mergedTemplateDefaultsInto)."""
    found = argo_workflow_spec(obj)
    if found is None:
        return ()
    _, workflow = found
    defaults = workflow.get("templateDefaults")
    for source in (defaults if isinstance(defaults, Mapping) else {}, workflow):
        claims = source.get("resourceClaims")
        if isinstance(claims, list) and claims:
            return tuple(claim for claim in claims if isinstance(claim, Mapping))
    return ()


def _container(view: ContainerView) -> Container | None:
    path: Path = view.path
    if isinstance(path[-1], str):
        # Argo runs a `container`/`script` template as the pod's `main` container; a KServe
        # model container is named after its field when it has no name.
        return Container(path, "main" if path[-1] in _ARGO_MAIN_FIELDS else view.name or path[-1], True)
    if path[-2] not in CONTAINER_LISTS and path[-2] != _ARGO_SIDECARS:
        return None  # ephemeral containers take no resources
    concurrent = path[-2] != "initContainers" or view.container.get("restartPolicy") == "Always"
    return Container(path, view.name, concurrent)
