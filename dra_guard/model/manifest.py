"""Read-only views over raw Kubernetes objects: pod specs, claims, device requests.

Every accessor tolerates wrongly typed input (it sees nothing rather than raising);
`shape_problems()` reports those wrong types separately, so rules stay simple and the
engine never raises on arbitrary documents.  Paths are tuples for `json_pointer()`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from dra_guard.contract import catalog

Path = tuple[str | int, ...]

#: Where the pod spec sits in each kind that has pods.  The table lives in the catalog,
#: shared with the builders; it is re-exported here for the rules.
POD_SPEC_PATHS: Mapping[str, Path] = catalog.POD_SPEC_PATHS

CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
CLAIM_KINDS = ("ResourceClaim", "ResourceClaimTemplate")
RESOURCE_GROUP = "resource.k8s.io/"


_EMPTY: Mapping[str, Any] = {}


def mapping(value: object) -> Mapping[str, Any]:
    # Loaded documents are plain dicts and absent fields None: the exact tests skip the
    # slower ABC check, which most objects would otherwise pay dozens of times.
    if type(value) is dict:
        return value
    if value is None or not isinstance(value, Mapping):
        return _EMPTY
    return value


def items(value: object) -> Sequence[Any]:
    if type(value) is list:
        return value
    if value is None or not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        return ()
    return value


def get_path(obj: object, path: Path) -> Any:
    current: Any = obj
    for part in path:
        if type(part) is str and type(current) is dict:
            # The usual step: a key of a loaded mapping (what `mapping` would return as is).
            current = current.get(part)
        elif isinstance(part, int):
            sequence = items(current)
            current = sequence[part] if part < len(sequence) else None
        else:
            current = mapping(current).get(part)
    return current


def text(value: object) -> str:
    return value if isinstance(value, str) else ""


def shown(value: object, limit: int = 40) -> str:
    """A value for a message, shortened; never raises.

    An integer of thousands of digits has no str() (Python refuses beyond 4,300 digits),
    and a document can hold one; it is described instead.
    """
    if type(value) is int and value.bit_length() > 64:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    try:
        written = repr(value)
    except ValueError:
        return f"a {type(value).__name__} too large to print"
    return written if len(written) <= limit else written[: limit - 3] + "..."


def metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(obj.get("metadata"))


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(metadata(obj).get("annotations"))


#: Where an accelerator claim's declarations stand: a claim's metadata; a template's own
#: metadata and its `spec.metadata`, which kube-controller-manager copies onto every claim
#: it creates from the template (docs/admission.md, "What the cluster creates").
CLAIM_METADATA_PATH = ("spec", "metadata")


def declaration_places(obj: Mapping[str, Any]) -> tuple[tuple[tuple[str, ...], Mapping[str, Any]], ...]:
    """(path of the metadata, its annotations) for each place the declarations must stand."""
    own = (("metadata",), annotations_of(obj))
    if obj.get("kind") != "ResourceClaimTemplate":
        return (own,)
    claim_metadata = mapping(mapping(obj.get("spec")).get("metadata"))
    return own, (CLAIM_METADATA_PATH, mapping(claim_metadata.get("annotations")))


def is_list_kind(obj: Mapping[str, Any]) -> bool:
    """`List` and every `*List` (PodList, ...) carry objects in `items`."""
    kind = obj.get("kind")
    return isinstance(kind, str) and kind.endswith("List") and "items" in obj


def is_dra_object(obj: Mapping[str, Any]) -> bool:
    return text(obj.get("apiVersion")).startswith(RESOURCE_GROUP)


# --- pods -------------------------------------------------------------------------


class ContainerView(NamedTuple):
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


# --- claims and device requests -----------------------------------------------------


def cel_expressions(selectors: object) -> tuple[str, ...]:
    """The CEL expressions of a `selectors` list (a request's or a DeviceClass's), in order;
    entries without one (or not mappings) are skipped: the schema rules report those."""
    return tuple(
        expression
        for selector in items(selectors)
        if isinstance(expression := get_path(selector, ("cel", "expression")), str)
    )


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


#: The allocation modes the API server accepts; it defaults an empty mode to ExactCount.
EXACT_COUNT = "ExactCount"
ALL = "All"
ALLOCATION_MODES = (EXACT_COUNT, ALL)
#: Counts are int64 in every resource.k8s.io version.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def count_value(value: object) -> int | None:
    """The int64 a written `count` decodes to (0 for absent or null), or None if it cannot.

    An integral float counts (`2.0`: Pulumi delivers every number as a float, and kubectl
    writes a YAML float with no fraction as a JSON integer); NaN, infinities, fractions,
    strings, booleans and integers beyond int64 make the API server refuse the object.
    """
    if value is None:
        return 0
    if type(value) is int:
        return value if INT64_MIN <= value <= INT64_MAX else None
    if type(value) is float and math.isfinite(value) and value.is_integer() and INT64_MIN <= value < 2.0**63:
        return int(value)
    return None


@dataclass(frozen=True)
class DeviceRequestView:
    """One request that allocates devices: flat, `exactly`, or a `firstAvailable` entry.

    `body` is the request as the API server stores it: an absent or null
    `allocationMode` is ExactCount, and an ExactCount request's absent, null or 0 `count`
    is 1 (`SetDefaults_ExactDeviceRequest` / `SetDefaults_DeviceSubRequest` /
    `SetDefaults_DeviceRequest` in kubernetes `pkg/apis/resource/<version>/defaults.go`:
    `count` is an int64, so 0 and absent are the same value).  `raw` is what was written,
    for rules about explicitness.  Values the API server refuses stay as written in both.
    """

    #: Path of the mapping that holds deviceClassName, selectors, count, ...
    path: Path
    #: Name of the top-level request (what claims and constraints refer to).
    request_name: str
    #: The request as written.
    raw: Mapping[str, Any]
    #: "flat" (v1alpha3/v1beta1), "exactly" (v1beta2/v1) or "firstAvailable".
    shape: str
    #: The request with the API server's defaults applied.
    body: Mapping[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "body", _with_defaults(self.raw))

    @property
    def device_class(self) -> str:
        return text(self.body.get("deviceClassName"))

    @property
    def allocation_mode(self) -> object:
        """ "ExactCount", "All", or the refused value as written."""
        return self.body["allocationMode"]

    @property
    def count(self) -> int | None:
        """Devices an ExactCount request takes; None for All and for a count the API server refuses."""
        if self.allocation_mode != EXACT_COUNT:
            return None
        stored = count_value(self.body.get("count"))
        return stored if stored is not None and stored > 0 else None

    @property
    def admin_access(self) -> bool:
        """`adminAccess: true`: access to devices whatever other claims hold them (monitoring);
        a `firstAvailable` entry has no such field."""
        return self.shape != "firstAvailable" and self.body.get("adminAccess") is True

    @property
    def qualified_name(self) -> str:
        if self.shape == "firstAvailable":
            return f"{self.request_name}/{text(self.raw.get('name'))}"
        return self.request_name


def _with_defaults(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    mode = raw.get("allocationMode")
    defaults: dict[str, Any] = {}
    if mode is None or mode == "":
        mode = defaults["allocationMode"] = EXACT_COUNT
    if mode == EXACT_COUNT and count_value(raw.get("count")) == 0:
        defaults["count"] = 1
    return {**raw, **defaults} if defaults else raw


def device_requests(obj: Mapping[str, Any]) -> Iterator[DeviceRequestView]:
    """Every request that allocates devices, as the API server reads the request list.

    A request is its `firstAvailable` entries when that list is non-empty; otherwise it is
    the request itself (flat, v1alpha3/v1beta1) or its `exactly` (v1beta2/v1): an empty or
    null `firstAvailable` is unset (Go decodes both to a nil slice), and so is a null
    `exactly`.  A request that sets both is refused by the API server (the invalid-dra-schema rule says so);
    both are analysed here, so that the one the user meant cannot hide the other.
    """
    located = claim_devices(obj)
    if located is None:
        return
    devices_path, devices = located
    for index, request in enumerate(items(devices.get("requests"))):
        if not isinstance(request, Mapping):
            continue
        path: Path = (*devices_path, "requests", index)
        name = text(request.get("name"))
        alternatives = items(request.get("firstAvailable"))
        exactly = request.get("exactly")
        if isinstance(exactly, Mapping):
            yield DeviceRequestView((*path, "exactly"), name, exactly, "exactly")
        elif ("exactly" not in request and not alternatives) or _names_a_class(request):
            yield DeviceRequestView(path, name, request, "flat")
        for sub_index, sub_request in enumerate(alternatives):
            if isinstance(sub_request, Mapping):
                yield DeviceRequestView((*path, "firstAvailable", sub_index), name, sub_request, "firstAvailable")


def _names_a_class(request: Mapping[str, Any]) -> bool:
    """A flat request's deviceClassName: then v1alpha3/v1beta1 read it as a request even
    next to `firstAvailable` or `exactly: null` (which the API server then refuses)."""
    return bool(text(request.get("deviceClassName")))


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


def _field_problems(found: list[tuple[Path, str]], base: object, base_path: Path, fields: tuple[_Field, ...]) -> None:
    if type(base) is not dict and not isinstance(base, Mapping):
        return
    for key, usual, acceptable, description in fields:
        value = base.get(key)
        if value is not None and type(value) is not usual and not isinstance(value, acceptable):
            found.append(((*base_path, key), f"must be {description}, not {type(value).__name__}"))


def _not_a_mapping(value: object) -> bool:
    return value is not None and type(value) is not dict and not isinstance(value, Mapping)


def shape_problems(
    obj: Mapping[str, Any], requests: Iterable[DeviceRequestView] | None = None
) -> list[tuple[Path, str]]:
    """Wrongly typed fields that would hide content from the rules, in document order.

    A list, not a generator: nearly every object has none, and the engine asks of every
    object.  `requests`: the object's `device_requests`, where the caller has them already.
    """
    if "apiVersion" not in obj and "kind" not in obj:
        return [((), "is not a Kubernetes object (it has no apiVersion and no kind)")]
    found: list[tuple[Path, str]] = []
    for key in ("apiVersion", "kind"):
        if type(obj.get(key)) is not str:
            found.append(((key,), "must be a string" if key in obj else "is missing"))
    for key in ("metadata", "spec"):
        if _not_a_mapping(obj.get(key)):
            found.append(((key,), f"must be a mapping, not {type(obj.get(key)).__name__}"))
    meta = obj.get("metadata")
    _field_problems(found, meta, ("metadata",), _METADATA_FIELDS)
    for key, value in annotations_of(obj).items():
        if type(value) is not str:
            found.append(
                (
                    ("metadata", "annotations", str(key)),
                    f"annotation values must be strings, not {type(value).__name__}",
                )
            )
    kind = obj.get("kind")
    spec_path = POD_SPEC_PATHS.get(kind) if isinstance(kind, str) else None
    if spec_path is not None:
        spec = get_path(obj, spec_path)
        if _not_a_mapping(spec):
            found.append((spec_path, f"must be a mapping, not {type(spec).__name__}"))
        _field_problems(found, spec, spec_path, _POD_SPEC_FIELDS)
        for list_name in CONTAINER_LISTS:
            for index, container in enumerate(items(mapping(spec).get(list_name))):
                if type(container) is not dict and not isinstance(container, Mapping):
                    found.append(
                        (
                            (*spec_path, list_name, index),
                            f"a container must be a mapping, not {type(container).__name__}",
                        )
                    )
                elif _not_a_mapping(container.get("resources")):
                    found.append(((*spec_path, list_name, index, "resources"), "must be a mapping"))
    located = claim_devices(obj)
    if located is not None:
        devices_path, _ = located
        devices = get_path(obj, devices_path)
        if _not_a_mapping(devices):
            found.append((devices_path, f"must be a mapping, not {type(devices).__name__}"))
        _field_problems(found, devices, devices_path, _DEVICES_FIELDS)
        for request in device_requests(obj) if requests is None else requests:
            # A refused `count` or `allocationMode` is a finding (invalid-dra-schema), not an input error.
            selectors = request.raw.get("selectors")
            if selectors is not None and not isinstance(selectors, list):
                found.append(((*request.path, "selectors"), "must be a list"))
    return found


_Named = TypeVar("_Named")


def in_namespace(candidates: Sequence[_Named], namespace: str, space: Callable[[_Named], str]) -> _Named | None:
    """The object of one name that a reference from `namespace` means: the one in that
    namespace, else the only one where either side names no namespace (manifests often
    leave it to `kubectl apply -n`); None if there is none, or several could be meant.
    `space` says an object's namespace."""
    for candidate in candidates:
        if space(candidate) == namespace:
            return candidate
    loose = [candidate for candidate in candidates if not space(candidate) or not namespace]
    return loose[0] if len(loose) == 1 else None
