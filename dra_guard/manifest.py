"""Read-only views over raw Kubernetes objects: pod specs, claims, device requests.

Every accessor tolerates wrongly typed input (it sees nothing rather than raising);
`shape_problems()` reports those wrong types separately, so rules stay simple and the
engine never raises on arbitrary documents.  Paths are tuples for `json_pointer()`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dra_guard import catalog

Path = tuple[str | int, ...]

#: Where the pod spec sits in each kind that has pods.  The table lives in the catalog,
#: shared with the builders; it is re-exported here for the rules.
POD_SPEC_PATHS: Mapping[str, Path] = catalog.POD_SPEC_PATHS

CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
CLAIM_KINDS = ("ResourceClaim", "ResourceClaimTemplate")
RESOURCE_GROUP = "resource.k8s.io/"


_EMPTY: Mapping[str, Any] = {}


def mapping(value: object) -> Mapping[str, Any]:
    # Loaded documents are plain dicts; the exact-type test skips the slower ABC check.
    if type(value) is dict or isinstance(value, Mapping):
        return value
    return _EMPTY


def items(value: object) -> Sequence[Any]:
    if type(value) is list or (isinstance(value, Sequence) and not isinstance(value, (str, bytes))):
        return value
    return ()


def get_path(obj: object, path: Path) -> Any:
    current: Any = obj
    for part in path:
        if isinstance(part, int):
            sequence = items(current)
            current = sequence[part] if part < len(sequence) else None
        else:
            current = mapping(current).get(part)
    return current


def text(value: object) -> str:
    return value if isinstance(value, str) else ""


def metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(obj.get("metadata"))


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(metadata(obj).get("annotations"))


def is_list_kind(obj: Mapping[str, Any]) -> bool:
    """`List` and every `*List` (PodList, ...) carry objects in `items`."""
    kind = obj.get("kind")
    return isinstance(kind, str) and kind.endswith("List") and "items" in obj


def is_dra_object(obj: Mapping[str, Any]) -> bool:
    return text(obj.get("apiVersion")).startswith(RESOURCE_GROUP)


# --- pods -------------------------------------------------------------------------


@dataclass(frozen=True)
class PodSpecView:
    path: Path
    spec: Mapping[str, Any]
    #: Metadata of the pod (Pod) or of the pod template (controllers).
    template_metadata: Mapping[str, Any]
    #: True when the spec is a template that stamps out many pods.
    is_template: bool


def pod_spec(obj: Mapping[str, Any]) -> PodSpecView | None:
    kind = obj.get("kind")
    path = POD_SPEC_PATHS.get(kind) if isinstance(kind, str) else None
    if path is None:
        return None
    spec = get_path(obj, path)
    if not isinstance(spec, Mapping):
        return None
    template_metadata = metadata(obj) if kind == "Pod" else mapping(get_path(obj, (*path[:-1], "metadata")))
    return PodSpecView(path, spec, template_metadata, is_template=kind != "Pod")


@dataclass(frozen=True)
class ContainerView:
    path: Path
    container: Mapping[str, Any]

    @property
    def name(self) -> str:
        return text(self.container.get("name"))

    def claims(self) -> Iterator[tuple[Path, Mapping[str, Any]]]:
        resources = mapping(self.container.get("resources"))
        for index, claim in enumerate(items(resources.get("claims"))):
            if isinstance(claim, Mapping):
                yield (*self.path, "resources", "claims", index), claim


def containers(view: PodSpecView) -> Iterator[ContainerView]:
    for list_name in CONTAINER_LISTS:
        for index, container in enumerate(items(view.spec.get(list_name))):
            if isinstance(container, Mapping):
                yield ContainerView((*view.path, list_name, index), container)


def pod_claims(view: PodSpecView) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    for index, claim in enumerate(items(view.spec.get("resourceClaims"))):
        if isinstance(claim, Mapping):
            yield (*view.path, "resourceClaims", index), claim


# --- claims and device requests -----------------------------------------------------


def claim_devices(obj: Mapping[str, Any]) -> tuple[Path, Mapping[str, Any]] | None:
    """`spec.devices` of a ResourceClaim, `spec.spec.devices` of a ResourceClaimTemplate."""
    if not is_dra_object(obj):
        return None
    kind = obj.get("kind")
    if kind == "ResourceClaim":
        path: Path = ("spec", "devices")
    elif kind == "ResourceClaimTemplate":
        path = ("spec", "spec", "devices")
    else:
        return None
    return path, mapping(get_path(obj, path))


@dataclass(frozen=True)
class DeviceRequestView:
    """One request that allocates devices: flat, `exactly`, or a `firstAvailable` entry."""

    #: Path of the mapping that holds deviceClassName, selectors, count, ...
    path: Path
    #: Name of the top-level request (what claims and constraints refer to).
    request_name: str
    body: Mapping[str, Any]
    #: "flat" (v1alpha3/v1beta1), "exactly" (v1beta2/v1) or "firstAvailable".
    shape: str

    @property
    def device_class(self) -> str:
        return text(self.body.get("deviceClassName"))

    @property
    def qualified_name(self) -> str:
        if self.shape == "firstAvailable":
            return f"{self.request_name}/{text(self.body.get('name'))}"
        return self.request_name


def device_requests(obj: Mapping[str, Any]) -> Iterator[DeviceRequestView]:
    located = claim_devices(obj)
    if located is None:
        return
    devices_path, devices = located
    for index, request in enumerate(items(devices.get("requests"))):
        if not isinstance(request, Mapping):
            continue
        path: Path = (*devices_path, "requests", index)
        name = text(request.get("name"))
        if "exactly" in request:
            yield DeviceRequestView((*path, "exactly"), name, mapping(request.get("exactly")), "exactly")
        elif "firstAvailable" in request:
            for sub_index, sub_request in enumerate(items(request.get("firstAvailable"))):
                if isinstance(sub_request, Mapping):
                    yield DeviceRequestView((*path, "firstAvailable", sub_index), name, sub_request, "firstAvailable")
        else:
            yield DeviceRequestView(path, name, request, "flat")


def request_names(obj: Mapping[str, Any]) -> set[str]:
    """Names a container claim's `request` may use: requests and `request/sub-request`."""
    names: set[str] = set()
    for request in device_requests(obj):
        names.add(request.request_name)
        names.add(request.qualified_name)
    return names


# --- legacy resources ---------------------------------------------------------------


def _resource_sections(obj: object, track_paths: bool) -> Iterator[tuple[Any, str, Mapping[str, Any]]]:
    """(link to the enclosing mapping, "limits"|"requests", quantities) at any depth.

    Walks the whole object so CRDs (JobSet, RayCluster, PyTorchJob, LeaderWorkerSet, ...)
    cannot hide a request behind a path we do not know.  Iterative, so a deeply nested
    document cannot exhaust the stack.  Paths are linked (parent, key) pairs, built only
    when `track_paths`, because this walk visits every node of every object.
    """
    stack: list[tuple[Any, Any]] = [(obj, None)]
    while stack:
        current, link = stack.pop()
        if type(current) is dict or isinstance(current, Mapping):
            for key, value in current.items():
                if key == "resources" and isinstance(value, Mapping):
                    for section in ("limits", "requests"):
                        quantities = value.get(section)
                        if isinstance(quantities, Mapping):
                            yield link, section, quantities
                if type(value) in (dict, list) or isinstance(value, (Mapping, list, tuple)):
                    stack.append((value, (link, str(key)) if track_paths else None))
        else:
            for index, value in enumerate(current):
                if type(value) in (dict, list) or isinstance(value, (Mapping, list, tuple)):
                    stack.append((value, (link, index) if track_paths else None))


def resource_quantities(obj: object) -> Iterator[tuple[Path, str]]:
    """Every key of every `resources.limits` / `resources.requests` mapping, with its path."""
    for link, section, quantities in _resource_sections(obj, track_paths=True):
        for name in quantities:
            if isinstance(name, str):
                yield (*_unlink(link), "resources", section, name), name


def resource_names(obj: object) -> Iterator[str]:
    """The same keys without paths: answers "is there a legacy name?" for less."""
    for _, _, quantities in _resource_sections(obj, track_paths=False):
        yield from (name for name in quantities if isinstance(name, str))


def _unlink(link: Any) -> Path:
    parts: list[str | int] = []
    while link is not None:
        link, part = link
        parts.append(part)
    return tuple(reversed(parts))


# --- wrong types --------------------------------------------------------------------

# (field, the type documents usually hold, the type that is acceptable, description);
# the exact-type test first, because loaded documents hold plain dicts and lists and the
# ABC isinstance check is slow on the hot path.
_Field = tuple[str, type, type, str]
_METADATA_FIELDS: tuple[_Field, ...] = (
    ("name", str, str, "a string"),
    ("namespace", str, str, "a string"),
    ("annotations", dict, Mapping, "a mapping"),
    ("labels", dict, Mapping, "a mapping"),
)
_POD_SPEC_FIELDS: tuple[_Field, ...] = (
    ("containers", list, list, "a list"),
    ("initContainers", list, list, "a list"),
    ("ephemeralContainers", list, list, "a list"),
    ("resourceClaims", list, list, "a list"),
)
_DEVICES_FIELDS: tuple[_Field, ...] = (
    ("requests", list, list, "a list"),
    ("constraints", list, list, "a list"),
    ("config", list, list, "a list"),
)


def _field_problems(base: object, base_path: Path, fields: tuple[_Field, ...]) -> Iterator[tuple[Path, str]]:
    if not isinstance(base, Mapping):
        return
    for key, usual, acceptable, description in fields:
        value = base.get(key)
        if value is not None and type(value) is not usual and not isinstance(value, acceptable):
            yield (*base_path, key), f"must be {description}, not {type(value).__name__}"


def _not_a_mapping(value: object) -> bool:
    return value is not None and type(value) is not dict and not isinstance(value, Mapping)


def shape_problems(obj: Mapping[str, Any]) -> Iterator[tuple[Path, str]]:
    """Wrongly typed fields that would hide content from the rules."""
    if "apiVersion" not in obj and "kind" not in obj:
        yield (), "is not a Kubernetes object (it has no apiVersion and no kind)"
        return
    for key in ("apiVersion", "kind"):
        if type(obj.get(key)) is not str:
            yield (key,), "must be a string" if key in obj else "is missing"
    for key in ("metadata", "spec"):
        if _not_a_mapping(obj.get(key)):
            yield (key,), f"must be a mapping, not {type(obj.get(key)).__name__}"
    meta = obj.get("metadata")
    yield from _field_problems(meta, ("metadata",), _METADATA_FIELDS)
    for key, value in annotations_of(obj).items():
        if type(value) is not str:
            yield (
                ("metadata", "annotations", str(key)),
                f"annotation values must be strings, not {type(value).__name__}",
            )
    kind = obj.get("kind")
    spec_path = POD_SPEC_PATHS.get(kind) if isinstance(kind, str) else None
    if spec_path is not None:
        spec = get_path(obj, spec_path)
        if _not_a_mapping(spec):
            yield spec_path, f"must be a mapping, not {type(spec).__name__}"
        yield from _field_problems(spec, spec_path, _POD_SPEC_FIELDS)
        for list_name in CONTAINER_LISTS:
            for index, container in enumerate(items(mapping(spec).get(list_name))):
                if type(container) is not dict and not isinstance(container, Mapping):
                    yield (
                        (*spec_path, list_name, index),
                        f"a container must be a mapping, not {type(container).__name__}",
                    )
                elif _not_a_mapping(container.get("resources")):
                    yield (*spec_path, list_name, index, "resources"), "must be a mapping"
    located = claim_devices(obj)
    if located is not None:
        devices_path, _ = located
        devices = get_path(obj, devices_path)
        if _not_a_mapping(devices):
            yield devices_path, f"must be a mapping, not {type(devices).__name__}"
        yield from _field_problems(devices, devices_path, _DEVICES_FIELDS)
        for request in device_requests(obj):
            selectors = request.body.get("selectors")
            if selectors is not None and not isinstance(selectors, list):
                yield (*request.path, "selectors"), "must be a list"
            count = request.body.get("count")
            if count is not None and (isinstance(count, bool) or not isinstance(count, (int, float))):
                yield (*request.path, "count"), f"must be a number, not {type(count).__name__}"
