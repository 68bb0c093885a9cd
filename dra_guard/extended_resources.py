"""Every place an object asks for a resource by name (`nvidia.com/gpu: 1`).

* Kubernetes' own kinds, exactly where the API server reads them: the containers and the
  pod-level `resources` of every pod spec, and a LimitRange's `default`,
  `defaultRequest`, `max`, `min` and `maxLimitRequestRatio` (for type Container the API
  server defaults `default` from `max` and `defaultRequest` from `min`, kubernetes
  `pkg/apis/core/v1/defaults.go` `SetDefaults_LimitRangeItem`, so those inject too; for
  the other types they only cap, like a ResourceQuota, which asks for nothing).
* Any other kind: every ResourceRequirements-shaped mapping (one with a `limits` or
  `requests` mapping) at any depth, whatever its key (`resources`, TrainJob's
  `resourcesPerNode`, ...), so a CRD cannot hide a request behind a path we do not know.
* KubeVirt: the device-plugin names VMs pass through, `gpus[].deviceName` and
  `hostDevices[].deviceName`.
* Argo Workflows: `podSpecPatch` strings and resource templates' `manifest` strings, read
  as YAML; text that cannot be read, and resource names that are `{{...}}` placeholders
  (Argo fills them in at run time), are `Unverifiable`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from dra_guard.embedded import Unreadable, read_embedded
from dra_guard.findings import json_pointer
from dra_guard.kustomize import is_kustomization, patches
from dra_guard.manifest import Path, items, mapping, text
from dra_guard.pod_templates import ARGO_GROUP, BUILTIN_GROUPS, PodSpecView, api_group

REQUIREMENT_SECTIONS = ("limits", "requests")
#: LimitRange fields that add their quantities to containers (for type Container).
LIMIT_RANGE_DEFAULTS = ("default", "defaultRequest")
LIMIT_RANGE_BOUNDS = ("max", "min", "maxLimitRequestRatio")
KUBEVIRT_DEVICE_LISTS = ("gpus", "hostDevices")
#: Argo string fields that hold YAML: a pod spec patch, a Kubernetes object.
ARGO_POD_SPEC_PATCH = "podSpecPatch"
ARGO_MANIFEST = "manifest"


@dataclass(frozen=True)
class Asked:
    """A resource name an object asks for."""

    #: The key naming the resource (or KubeVirt's `deviceName`, or the string holding it).
    path: Path
    name: str
    #: "limits" / "requests", a LimitRange field, or a KubeVirt device list.
    section: str
    #: For a name inside a string or a file: the JSON pointer to it inside what was read,
    #: and what holds it ("podSpecPatch", "the patch file kustomize/gpu.yaml").
    inner: str = ""
    holder: str = ""


@dataclass(frozen=True)
class Unverifiable:
    """Something that may ask for resources, but what cannot be known from the manifest."""

    path: Path
    why: str


def asked_resources(
    obj: Mapping[str, Any], pods: tuple[PodSpecView, ...], source: str | None = None
) -> Iterator[Asked | Unverifiable]:
    """What the object asks for; `source` is its file, where a kustomization's patch files are."""
    group = api_group(obj)
    if is_kustomization(obj):
        yield from _kustomization(obj, source)
        return
    if group in BUILTIN_GROUPS:
        if obj.get("kind") == "LimitRange":
            yield from _limit_range(obj)
        for pod in pods:
            yield from _requirements(pod.path, pod.spec)
            for container in pod.containers:
                yield from _requirements(container.path, container.container)
        return
    kubevirt = group is not None and (group == "kubevirt.io" or group.endswith(".kubevirt.io"))
    yield from _anywhere(obj, (), argo=group == ARGO_GROUP, kubevirt=kubevirt)


def _requirements(path: Path, owner: Mapping[str, Any]) -> Iterator[Asked]:
    """The names in `owner["resources"]` (a container's or a pod's)."""
    resources = mapping(owner.get("resources"))
    for section in REQUIREMENT_SECTIONS:
        for name in mapping(resources.get(section)):
            if isinstance(name, str):
                yield Asked((*path, "resources", section, name), name, section)


def _limit_range(obj: Mapping[str, Any]) -> Iterator[Asked]:
    for index, item in enumerate(items(mapping(obj.get("spec")).get("limits"))):
        limit = mapping(item)
        # Only type Container turns bounds into defaults; an unknown type is read that way.
        injects = text(limit.get("type")) not in ("Pod", "PersistentVolumeClaim")
        fields = (*LIMIT_RANGE_DEFAULTS, *LIMIT_RANGE_BOUNDS) if injects else LIMIT_RANGE_DEFAULTS
        for field in fields:
            for name in mapping(limit.get(field)):
                if isinstance(name, str):
                    yield Asked(("spec", "limits", index, field, name), name, field)


def _anywhere(value: object, base: Path, *, argo: bool, kubevirt: bool) -> Iterator[Asked | Unverifiable]:
    """Every ResourceRequirements-shaped mapping below `value` (and, for Argo and KubeVirt,
    their own ways to ask), in document order.

    Iterative, so a deeply nested document cannot exhaust the stack.  It visits every
    node of the object: a node's path is a (parent link, key) pair, made into a tuple
    only for a mapping that can ask for something, and only scalars' containers are
    pushed, so the walk allocates little (what it leaves behind fragments the heap).
    """
    stack: list[tuple[Any, Any]] = [(value, None)]
    while stack:
        current, link = stack.pop()
        if type(current) is dict or isinstance(current, Mapping):
            if argo or kubevirt or "limits" in current or "requests" in current:
                path = (*base, *_unlink(link))
                for section in REQUIREMENT_SECTIONS:
                    quantities = current.get(section)
                    if isinstance(quantities, Mapping):
                        for name in quantities:
                            if not isinstance(name, str):
                                continue
                            if argo and "{{" in name:
                                why = f"the resource name {name!r} is a placeholder"
                                yield Unverifiable((*path, section, name), why)
                            else:
                                yield Asked((*path, section, name), name, section)
                if kubevirt:
                    yield from _kubevirt_devices(current, path)
                if argo:
                    yield from _argo_strings(current, path)
            for key, item in reversed(list(current.items())):
                if type(item) in (dict, list) or isinstance(item, (Mapping, list, tuple)):
                    stack.append((item, (link, str(key))))
        elif isinstance(current, (list, tuple)):
            for index in range(len(current) - 1, -1, -1):
                item = current[index]
                if type(item) in (dict, list) or isinstance(item, (Mapping, list, tuple)):
                    stack.append((item, (link, index)))


def _unlink(link: Any) -> Path:
    parts: list[str | int] = []
    while link is not None:
        link, part = link
        parts.append(part)
    return tuple(reversed(parts))


def _kubevirt_devices(current: Mapping[str, Any], path: Path) -> Iterator[Asked]:
    for section in KUBEVIRT_DEVICE_LISTS:
        for index, device in enumerate(items(current.get(section))):
            name = mapping(device).get("deviceName")
            if isinstance(name, str):
                yield Asked((*path, section, index, "deviceName"), name, section)


def _argo_strings(current: Mapping[str, Any], path: Path) -> Iterator[Asked | Unverifiable]:
    patch = current.get(ARGO_POD_SPEC_PATCH)
    if isinstance(patch, str):
        yield from _embedded((*path, ARGO_POD_SPEC_PATCH), patch)
    resource_template = current.get("resource")
    if isinstance(resource_template, Mapping) and isinstance(resource_template.get(ARGO_MANIFEST), str):
        yield from _embedded((*path, "resource", ARGO_MANIFEST), resource_template[ARGO_MANIFEST])


def _embedded(path: Path, source: str) -> Iterator[Asked | Unverifiable]:
    try:
        value = read_embedded(source)
    except Unreadable as unreadable:
        yield Unverifiable(path, f"{path[-1]} cannot be read: {unreadable}")
        return
    if not isinstance(value, (Mapping, list)):
        if "{{" in source:
            yield Unverifiable(path, f"{path[-1]} is a placeholder filled in at run time")
        return
    for found in _anywhere(value, (), argo=True, kubevirt=False):
        if isinstance(found, Asked):
            yield Asked(path, found.name, found.section, json_pointer(found.path), str(path[-1]))
        else:
            yield Unverifiable(path, f"{path[-1]}, at {json_pointer(found.path)}: {found.why}")


# --- kustomizations -----------------------------------------------------------------


def _kustomization(obj: Mapping[str, Any], source: str | None) -> Iterator[Asked | Unverifiable]:
    for patch in patches(obj, source):
        holder = f"the patch file {patch.file}" if patch.file else "the inline patch"
        if isinstance(patch.documents, Unreadable):
            yield Unverifiable(patch.path, f"{holder} cannot be read ({patch.documents})")
            continue
        several = len(patch.documents) > 1
        for number, document in enumerate(patch.documents, 1):
            for path, name, section in _in_patch(document):
                inner = json_pointer(path) + (f" of document {number}" if several else "")
                yield Asked(patch.path, name, section, inner, holder)


def _in_patch(document: Any) -> Iterator[tuple[Path, str, str]]:
    """(path in the patch, name, section) for each resource name a patch writes."""
    if isinstance(document, list):  # JSON 6902 operations
        for index, operation in enumerate(document):
            yield from _in_operation(index, mapping(operation))
        return
    for found in _anywhere(document, (), argo=False, kubevirt=False):
        if isinstance(found, Asked):
            yield found.path, found.name, found.section


def _in_operation(index: int, operation: Mapping[str, Any]) -> Iterator[tuple[Path, str, str]]:
    """A JSON 6902 operation names a resource in its `path` (…/limits/nvidia.com~1gpu), in
    the keys of its `value` when the path ends at limits or requests, or anywhere in a
    `value` that holds ResourceRequirements."""
    target = operation.get("path")
    tokens = (
        [token.replace("~1", "/").replace("~0", "~") for token in target.split("/")[1:]]
        if isinstance(target, str)
        else []
    )
    for position, token in enumerate(tokens[:-1]):
        if token in REQUIREMENT_SECTIONS:
            yield (index, "path"), tokens[position + 1], token
    value = operation.get("value")
    if tokens and tokens[-1] in REQUIREMENT_SECTIONS and isinstance(value, Mapping):
        for name in value:
            if isinstance(name, str):
                yield (index, "value", name), name, tokens[-1]
    for found in _anywhere(value, (index, "value"), argo=False, kubevirt=False):
        if isinstance(found, Asked):
            yield found.path, found.name, found.section
