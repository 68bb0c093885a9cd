"""Where an object's pods are, as migrate needs it: the pod spec that takes `resourceClaims`
and the containers that take `resources.claims`.

Only places whose shape is known are sites: a pod spec found by guessing could sit in a
CRD whose schema has no `resourceClaims` there, so writing one would break the object.
Today that is the built-in kinds of `catalog.POD_SPEC_PATHS`; a request anywhere else
(JobSet, LeaderWorkerSet, Kubeflow, Ray, Argo, unknown CRDs) is refused by the plan with
its path, for a person to migrate.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dra_guard.catalog import POD_SPEC_PATHS
from dra_guard.migrate.edits import Path
from dra_guard.spec import name_from_id

#: Container lists of a pod spec whose `resources` migrate rewrites (ephemeral containers
#: may not have any).
CONTAINER_LISTS = ("initContainers", "containers")
#: Path steps that say nothing about which pod of an object this is.
_GENERIC_STEPS = frozenset({"spec", "template"})
_ROLE_SUFFIX = re.compile(r"(PodTemplate|GroupSpecs?|Template|ReplicaSpecs)$")


@dataclass(frozen=True)
class Container:
    path: Path
    name: str
    #: Runs alongside the others (a regular container or a sidecar), not before them.
    concurrent: bool


@dataclass(frozen=True)
class PodSite:
    """One pod spec: its claims go to `path` + `resourceClaims`."""

    path: Path
    containers: tuple[Container, ...]
    #: Tells this site from an object's other sites in template names (`workers`, `leader`).
    label: str

    @property
    def claims_path(self) -> Path:
        return (*self.path, "resourceClaims")


def _get(obj: object, path: Path) -> Any:
    for part in path:
        if isinstance(part, int):
            obj = obj[part] if isinstance(obj, list) and part < len(obj) else None
        else:
            obj = obj.get(part) if isinstance(obj, Mapping) else None
    return obj


def site_label(obj: Mapping[str, Any], path: Path) -> str:
    """A short name for the pod spec at `path`: the names of the list items on the way
    (`replicatedJobs[].name`, `workerGroupSpecs[].groupName`), else the last telling key
    (`leaderTemplate` -> `leader`, `pytorchReplicaSpecs.Worker` -> `worker`)."""
    names = []
    for depth, part in enumerate(path):
        if isinstance(part, int):
            item = _get(obj, path[: depth + 1])
            named = item.get("name") or item.get("groupName") if isinstance(item, Mapping) else None
            names.append(str(named) if isinstance(named, str) and named else str(part))
    if not names:
        telling = [part for part in path if isinstance(part, str) and part not in _GENERIC_STEPS]
        names = [_ROLE_SUFFIX.sub("", telling[-1]) or telling[-1]] if telling else ["pod"]
    try:
        return name_from_id("-".join(names), "label")
    except ValueError:
        return "pod"


def pod_sites(obj: Mapping[str, Any]) -> list[PodSite]:
    """The pod specs of `obj` that migrate may rewrite, in document order."""
    kind = obj.get("kind")
    path = POD_SPEC_PATHS.get(kind) if isinstance(kind, str) else None
    if path is None or not isinstance(_get(obj, path), Mapping):
        return []
    return [PodSite(path, tuple(_containers(obj, path)), site_label(obj, path))]


def _containers(obj: Mapping[str, Any], spec_path: Path) -> list[Container]:
    spec = _get(obj, spec_path)
    found = []
    for list_name in CONTAINER_LISTS:
        containers = spec.get(list_name) if isinstance(spec, Mapping) else None
        for index, container in enumerate(containers if isinstance(containers, list) else []):
            if isinstance(container, Mapping):
                concurrent = list_name == "containers" or container.get("restartPolicy") == "Always"
                name = container.get("name")
                found.append(
                    Container((*spec_path, list_name, index), name if isinstance(name, str) else "", concurrent)
                )
    return found
