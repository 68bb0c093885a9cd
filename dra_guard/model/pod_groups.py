"""The claims an object shares among every pod of a group, wherever the API puts them.

Kubernetes makes one ResourceClaim for a pod group and reserves it for the whole group:

* a PodGroup's `spec.resourceClaims` (scheduling.k8s.io);
* a Workload's pod group templates, `spec.podGroupTemplates[].resourceClaims`, and those
  nested in its composite templates, `spec.compositePodGroupTemplates[]` (each holding
  `podGroupTemplates` and more `compositePodGroupTemplates`: kubernetes/api @ 10b39a39,
  scheduling/v1beta1/types.go `CompositePodGroupTemplate`);
* a Job's `spec.scheduling.resourceClaims` (WorkloadWithJob, alpha in 1.37: "which
  ResourceClaims may be shared among Pods in the Job", batch/v1/types.go
  `JobSchedulingConfiguration` @ 10b39a39, added in ac027108), and so a CronJob's
  `spec.jobTemplate.spec.scheduling.resourceClaims`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from dra_guard.model.manifest import Path, get_path, items, mapping, text

#: The API group of PodGroup and Workload, and of Job and CronJob, as apiVersion begins.
SCHEDULING_API = "scheduling.k8s.io/"
BATCH_API = "batch/"
#: Where a Job's shared claims sit, and a CronJob's.
_JOB_CLAIMS: Mapping[str, Path] = {
    "Job": ("spec", "scheduling", "resourceClaims"),
    "CronJob": ("spec", "jobTemplate", "spec", "scheduling", "resourceClaims"),
}


def group_claims(kind: str, obj: Mapping[str, Any]) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    """(path, claim) for each claim `obj` shares among every pod of a group (see the module);
    nothing for any other kind or API group."""
    api_version = text(obj.get("apiVersion"))
    spec = mapping(obj.get("spec"))
    if kind == "PodGroup" and api_version.startswith(SCHEDULING_API):
        yield from _claims(spec, ("spec",))
    elif kind == "Workload" and api_version.startswith(SCHEDULING_API):
        yield from _workload_claims(spec)
    elif kind in _JOB_CLAIMS and api_version.startswith(BATCH_API):
        path = _JOB_CLAIMS[kind]
        for index, claim in enumerate(items(get_path(obj, path))):
            yield (*path, index), mapping(claim)


def _workload_claims(spec: Mapping[str, Any]) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    # Depth first, in document order, without recursion (upstream allows 4 levels; a file
    # may hold more, and is read to the end all the same).
    pending: list[tuple[Path, Mapping[str, Any]]] = [(("spec",), spec)]
    while pending:
        path, holder = pending.pop()
        for group_index, group in enumerate(items(holder.get("podGroupTemplates"))):
            yield from _claims(mapping(group), (*path, "podGroupTemplates", group_index))
        nested = list(enumerate(items(holder.get("compositePodGroupTemplates"))))
        for index, composite in reversed(nested):
            pending.append(((*path, "compositePodGroupTemplates", index), mapping(composite)))


def _claims(holder: Mapping[str, Any], path: Path) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    for index, claim in enumerate(items(holder.get("resourceClaims"))):
        yield (*path, "resourceClaims", index), mapping(claim)
