"""DRA010: DRA claims the target Kubernetes release (or the claim's driver) would refuse."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

from dra_guard.contract.catalog import EXCLUSIVITY_GUARD, KubernetesRelease
from dra_guard.contract.dra_fields import FIELDS, RELEASES
from dra_guard.contract.findings import Severity
from dra_guard.model.manifest import (
    ALL,
    ALLOCATION_MODES,
    CLAIM_KINDS,
    EXACT_COUNT,
    DeviceRequestView,
    Path,
    claim_devices,
    count_value,
    get_path,
    is_dra_object,
    items,
    mapping,
    shown,
    text,
)
from dra_guard.model.opaque import CONFIG_KIND_FOR_CLASS, NVIDIA_GPU_DRIVER, decodes_cel, nvidia_problems
from dra_guard.ruleapi.admission_form import (
    REQUESTS,
    Admission,
    AdmissionTarget,
    Validation,
    bodies,
    devices_list,
    string,
)
from dra_guard.ruleapi.context import Context, Resource, Violation
from dra_guard.ruleapi.declarations import Example

ID = "DRA010"
NAME = "invalid-dra-schema"
SEVERITY = Severity.HIGH
SUMMARY = (
    "ResourceClaims and templates must use the fields, values and request names the target Kubernetes "
    "release accepts, and NVIDIA opaque parameters its driver decodes."
)
RATIONALE = (
    "The API server rejects unknown fields under strict validation, and with lax validation drops them "
    "silently: `allowMultipleAllocations` in a request (the standard's own example), flat request fields "
    "under v1/v1beta2, `exactly` under v1beta1, or `capacity` on a release before 1.34 then protect nothing. "
    "Fields are checked against the official OpenAPI schema of the release in `kubernetes-version` (not the "
    "union of all releases), and so is the apiVersion (v1alpha3 claims only up to 1.33, v1 from 1.34). The API "
    "server also refuses an allocationMode other than ExactCount or All, a count that is not an int64 (NaN, a "
    "fraction, a string) or is negative, any count with All (0 and absent are the default: 1 for ExactCount), "
    "a non-boolean adminAccess, a request with both `exactly` and `firstAvailable`, and constraints or configs "
    "naming a request the claim does not have (the other rules read a refused value fail-closed, so it hides "
    "no finding); a selector on "
    "`device.allowMultipleAllocations` does not compile without the DRAConsumableCapacity gate. NVIDIA's GPU "
    "driver decodes `opaque.parameters` strictly (unknown fields and kinds fail), in its admission webhook when "
    "deployed, else only when the node prepares the claim."
)
REMEDIATION = (
    "Use the request shape of the apiVersion: {name, exactly: {...}} or {name, firstAvailable: [...]} for "
    "v1 and v1beta2, flat {name, deviceClassName, ...} for v1beta1 and v1alpha3, and only fields the target "
    "release has; fix the value or name the message points at; express exclusivity with the selector "
    f"`{EXCLUSIVITY_GUARD}` (1.36+) or the dra-guard.io/allow-multiple-allocations annotation."
)
#: The kinds this rule looks at (the engine runs it on nothing else).
KINDS = frozenset(CLAIM_KINDS)
CROSS_OBJECT = False
WAIVABLE = True
OPTIONS = ()
FACETS = {
    "unserved-version": "the target release does not serve the kind in this apiVersion",
    "unknown-field": "a field the release's schema does not have",
    "request-shape": "a request without exactly one of `exactly` and `firstAvailable` (or with a class beside them)",
    "invalid-value": "an allocationMode, count, adminAccess or toleration value the API server refuses",
    "unknown-request": "a constraint or config entry names a request the claim does not have",
    "guard-without-gate": "device.allowMultipleAllocations on a release where it does not compile",
    "nvidia-parameters": "opaque parameters for gpu.nvidia.com that the driver's strict decoder refuses",
    "nvidia-config-kind": "an NVIDIA config kind that does not fit its devices' class",
}
_CLAIM = """\
apiVersion: resource.k8s.io/%s
kind: ResourceClaim
metadata: {name: slice, namespace: team-a}
spec:
  devices:
    requests:
    - %s
"""
EXAMPLES = (
    Example(
        title="The standard's own example: allowMultipleAllocations in a request",
        manifests="""\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: slice, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: mig.nvidia.com
          allocationMode: ExactCount
          count: 1
          allowMultipleAllocations: false
""",
        findings=("ResourceClaimTemplate/slice#/spec/spec/devices/requests/0/exactly/allowMultipleAllocations",),
    ),
    Example(
        title="Flat request fields under v1, which wraps them in `exactly`",
        manifests=_CLAIM % ("v1", "{name: gpu, deviceClassName: mig.nvidia.com, allocationMode: ExactCount, count: 1}"),
        findings=(
            "ResourceClaim/slice#/spec/devices/requests/0",
            "ResourceClaim/slice#/spec/devices/requests/0/allocationMode",
            "ResourceClaim/slice#/spec/devices/requests/0/count",
            "ResourceClaim/slice#/spec/devices/requests/0/deviceClassName",
        ),
    ),
    Example(
        title="The request shape of v1beta1",
        manifests=_CLAIM
        % ("v1beta1", "{name: gpu, deviceClassName: mig.nvidia.com, allocationMode: ExactCount, count: 1}"),
    ),
    Example(
        title="Kubernetes 1.33 has no capacity field yet (it came with consumable capacity in 1.34)",
        manifests=_CLAIM
        % ("v1beta1", "{name: gpu, deviceClassName: mig.nvidia.com, count: 1, capacity: {requests: {memory: 1Gi}}}"),
        findings=("ResourceClaim/slice#/spec/devices/requests/0/capacity",),
        config={"kubernetes-version": "1.33"},
    ),
    Example(
        title="A count the API server refuses (a fraction), and a misspelt allocation mode",
        manifests=_CLAIM
        % (
            "v1",
            "{name: gpu, exactly: {deviceClassName: mig.nvidia.com, count: 1.5}}\n"
            "    - {name: more, exactly: {deviceClassName: mig.nvidia.com, allocationMode: Exact, count: 1}}",
        ),
        findings=(
            "ResourceClaim/slice#/spec/devices/requests/0/exactly/count",
            "ResourceClaim/slice#/spec/devices/requests/1/exactly/allocationMode",
        ),
    ),
    Example(
        title="An NVIDIA config with a misspelt field, which the driver's strict decoder refuses",
        manifests="""\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: slice, namespace: team-a}
spec:
  devices:
    requests:
    - {name: gpu, exactly: {deviceClassName: gpu.nvidia.com, allocationMode: ExactCount, count: 1}}
    config:
    - requests: [gpu]
      opaque:
        driver: gpu.nvidia.com
        parameters:
          apiVersion: resource.nvidia.com/v1beta1
          kind: GpuConfig
          sharing: {strategy: TimeSlicing, timeSlicingConfig: {intervall: Long}}
""",
        findings=(
            "ResourceClaim/slice#/spec/devices/config/0/opaque/parameters/sharing/timeSlicingConfig",
            "ResourceClaim/slice#/spec/devices/config/0/opaque/parameters/sharing/timeSlicingConfig/intervall",
        ),
    ),
)

_TOLERATION_OPERATORS = ("Exists", "Equal")
_TOLERATION_EFFECTS = ("NoSchedule", "NoExecute")
_GUARD_REFERENCE = re.compile(r"\bdevice\s*\.\s*allowMultipleAllocations\b")


def _release_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@lru_cache(maxsize=64)
def _fields(api_version: str, release: str) -> Mapping[str, frozenset[str]] | None:
    """type -> fields the release's schema has in `api_version`; None if it serves no claims there."""
    target = _release_key(release)
    types: dict[str, frozenset[str]] = {}
    for type_name, fields in FIELDS.get(api_version, {}).items():
        present = frozenset(
            name for name, (first, last) in fields.items() if _release_key(first) <= target <= _release_key(last)
        )
        if present:  # a type the release does not have yet (or any more) has no fields
            types[type_name] = present
    return types if "ResourceClaimSpec" in types else None


def _served(release: str) -> list[str]:
    return sorted(version for version in FIELDS if _fields(version, release) is not None)


def check(resource: Resource, context: Context) -> Iterator[Violation]:
    obj = resource.obj
    if resource.kind not in CLAIM_KINDS or not is_dra_object(obj):
        return
    release = context.config.kubernetes_release
    if _release_key(release.version) > _release_key(RELEASES[-1]):  # pragma: no cover - a stale table
        return
    version = text(obj.get("apiVersion"))
    # Only versions the table has are asked: the cache never keeps an input's string.
    fields = _fields(version, release.version) if version in FIELDS else None
    if fields is None:
        served = ", ".join(_served(release.version))
        yield Violation(
            ("apiVersion",),
            f"Kubernetes {release.version} does not serve {resource.kind}s in {version} ({served})",
            facet="unserved-version",
        )
        return
    yield from _unknown_fields(resource, fields, f"{version} (Kubernetes {release.version})")
    located = claim_devices(obj)
    if located is None:
        return
    devices_path, devices = located
    yield from _values(resource)
    yield from _request_references(devices, devices_path)
    yield from _guard_without_gate(resource, release, context.config.exclusivity_guard_compiles)
    yield from _nvidia_parameters(resource, devices, devices_path)


# --- fields the release's schema has --------------------------------------------------


def _unknown(value: object, allowed: frozenset[str], path: Path, what: str, version: str) -> Iterator[Violation]:
    if not isinstance(value, Mapping):
        return
    for key in value:
        if key not in allowed:
            yield Violation((*path, str(key)), f"{what} has no field {key!r} in {version}", facet="unknown-field")


def _unknown_fields(resource: Resource, fields: Mapping[str, frozenset[str]], version: str) -> Iterator[Violation]:
    spec: Any = resource.obj.get("spec")
    claim_spec_path: Path = ("spec",)
    if resource.kind == "ResourceClaimTemplate":
        yield from _unknown(spec, fields["ResourceClaimTemplateSpec"], ("spec",), "ResourceClaimTemplateSpec", version)
        spec = spec.get("spec") if isinstance(spec, Mapping) else None
        claim_spec_path = ("spec", "spec")
    yield from _unknown(spec, fields["ResourceClaimSpec"], claim_spec_path, "ResourceClaimSpec", version)
    devices = spec.get("devices") if isinstance(spec, Mapping) else None
    devices_path = (*claim_spec_path, "devices")
    yield from _unknown(devices, fields["DeviceClaim"], devices_path, "DeviceClaim", version)
    if not isinstance(devices, Mapping):
        return
    wrapped = "ExactDeviceRequest" in fields
    for index, request in enumerate(items(devices.get("requests"))):
        path = (*devices_path, "requests", index)
        yield from _unknown(request, fields["DeviceRequest"], path, "a device request", version)
        if not isinstance(request, Mapping):
            continue
        if wrapped:
            exactly = request.get("exactly")
            yield from _unknown(exactly, fields["ExactDeviceRequest"], (*path, "exactly"), "exactly", version)
            yield from _one_of_exactly_first_available(request, path, version)
            body = exactly if isinstance(exactly, Mapping) else {}
            yield from _request_parts(body, fields, (*path, "exactly"), version)
        else:
            yield from _request_parts(request, fields, path, version)
            if text(request.get("deviceClassName")) and items(request.get("firstAvailable")):
                yield Violation(
                    path,
                    f"a device request in {version} sets both deviceClassName and `firstAvailable`; it takes one",
                    facet="request-shape",
                )
        for sub_index, sub_request in enumerate(items(request.get("firstAvailable"))):
            sub_path = (*path, "firstAvailable", sub_index)
            yield from _unknown(sub_request, fields["DeviceSubRequest"], sub_path, "a firstAvailable entry", version)
            if isinstance(sub_request, Mapping):
                yield from _request_parts(sub_request, fields, sub_path, version)
    for index, constraint in enumerate(items(devices.get("constraints"))):
        path = (*devices_path, "constraints", index)
        yield from _unknown(constraint, fields["DeviceConstraint"], path, "a constraint", version)
    for index, config in enumerate(items(devices.get("config"))):
        path = (*devices_path, "config", index)
        yield from _unknown(config, fields["DeviceClaimConfiguration"], path, "a config entry", version)
        if isinstance(config, Mapping) and "OpaqueDeviceConfiguration" in fields:
            opaque = config.get("opaque")
            yield from _unknown(opaque, fields["OpaqueDeviceConfiguration"], (*path, "opaque"), "opaque", version)


def _request_parts(
    body: Mapping[str, Any], fields: Mapping[str, frozenset[str]], path: Path, version: str
) -> Iterator[Violation]:
    for index, selector in enumerate(items(body.get("selectors"))):
        selector_path = (*path, "selectors", index)
        yield from _unknown(selector, fields["DeviceSelector"], selector_path, "a selector", version)
        if isinstance(selector, Mapping):
            cel = selector.get("cel")
            yield from _unknown(cel, fields["CELDeviceSelector"], (*selector_path, "cel"), "a CEL selector", version)
    if "DeviceToleration" in fields:
        for index, toleration in enumerate(items(body.get("tolerations"))):
            toleration_path = (*path, "tolerations", index)
            yield from _unknown(toleration, fields["DeviceToleration"], toleration_path, "a toleration", version)
    if "CapacityRequirements" in fields:
        capacity = body.get("capacity")
        yield from _unknown(capacity, fields["CapacityRequirements"], (*path, "capacity"), "capacity", version)


# --- values the API server refuses ------------------------------------------------------


def _one_of_exactly_first_available(request: Mapping[str, Any], path: Path, version: str) -> Iterator[Violation]:
    """v1beta2/v1 `validateDeviceRequest`: exactly one of the two (an empty or null list is unset)."""
    has_exactly = request.get("exactly") is not None
    has_alternatives = bool(items(request.get("firstAvailable")))
    if not has_exactly and not has_alternatives:
        yield Violation(
            path, f"a device request in {version} needs `exactly` or `firstAvailable`", facet="request-shape"
        )
    elif has_exactly and has_alternatives:
        yield Violation(
            path,
            f"a device request in {version} sets both `exactly` and `firstAvailable`; it takes one",
            facet="request-shape",
        )


def _values(resource: Resource) -> Iterator[Violation]:
    """Values the API server refuses in a request, as written (validation.go
    `validateDeviceAllocationMode`, int64 and bool decoding, toleration enums).  The
    defaults are valid: an absent or null mode is ExactCount, an absent, null or 0 count
    of an ExactCount request is 1 (`SetDefaults_*`: count is an int64, 0 is unset)."""
    for request in resource.requests:
        label = f"request {request.qualified_name!r}"
        mode = request.raw.get("allocationMode")
        if mode not in (None, "") and mode not in ALLOCATION_MODES:
            yield Violation(
                (*request.path, "allocationMode"),
                f"{label}: allocationMode must be ExactCount or All, got {shown(mode)}; the API server refuses it",
                facet="invalid-value",
            )
        yield from _count_value(request, label)
        admin = request.raw.get("adminAccess")
        if admin is not None and type(admin) is not bool:
            yield Violation(
                (*request.path, "adminAccess"),
                f"{label}: adminAccess {shown(admin)} is not true or false; the API server refuses it",
                facet="invalid-value",
            )
        yield from _tolerations(request)


def _count_value(request: DeviceRequestView, label: str) -> Iterator[Violation]:
    written = request.raw.get("count")
    count = count_value(written)
    path = (*request.path, "count")
    if count is None:
        yield Violation(
            path, f"{label}: count {shown(written)} is not an integer; the API server refuses it", facet="invalid-value"
        )
    elif request.allocation_mode == EXACT_COUNT and count < 0:
        yield Violation(
            path,
            f"{label}: count {count} must be greater than zero with allocationMode ExactCount",
            facet="invalid-value",
        )
    elif request.allocation_mode == ALL and count != 0:
        yield Violation(
            path,
            f"{label}: count may not be set with allocationMode All (it takes every device)",
            facet="invalid-value",
        )


def _tolerations(request: DeviceRequestView) -> Iterator[Violation]:
    for index, toleration in enumerate(items(request.body.get("tolerations"))):
        entry, path = mapping(toleration), (*request.path, "tolerations", index)
        operator, effect = entry.get("operator", "Equal"), entry.get("effect", "")
        if operator not in _TOLERATION_OPERATORS:
            yield Violation(
                (*path, "operator"),
                f"a toleration's operator must be Exists or Equal, got {shown(operator)}",
                facet="invalid-value",
            )
        if effect not in ("", *_TOLERATION_EFFECTS):
            yield Violation(
                (*path, "effect"),
                f"a toleration's effect must be NoSchedule, NoExecute or empty, got {shown(effect)}",
                facet="invalid-value",
            )


def _request_references(devices: Mapping[str, Any], devices_path: Path) -> Iterator[Violation]:
    """Constraints and configs may name requests (`req`) and subrequests (`req/sub`) of this claim only."""
    names: set[str] = set()
    for request in items(devices.get("requests")):
        top = text(mapping(request).get("name"))
        names.add(top)
        names.update(f"{top}/{text(mapping(sub).get('name'))}" for sub in items(mapping(request).get("firstAvailable")))
    for section, what in (("constraints", "a constraint"), ("config", "a config entry")):
        for index, entry in enumerate(items(devices.get(section))):
            for position, name in enumerate(items(mapping(entry).get("requests"))):
                if name not in names:
                    yield Violation(
                        (*devices_path, section, index, "requests", position),
                        f"{what} names request {name!r}, which this claim does not have ({', '.join(sorted(names))})",
                        facet="unknown-request",
                    )


def _guard_without_gate(resource: Resource, release: KubernetesRelease, compiles: bool) -> Iterator[Violation]:
    """`device.allowMultipleAllocations` exists in the CEL environment only with DRAConsumableCapacity."""
    if compiles:
        return
    for request in resource.requests:
        for index, selector in enumerate(items(request.body.get("selectors"))):
            expression = get_path(selector, ("cel", "expression"))
            if isinstance(expression, str) and _GUARD_REFERENCE.search(expression):
                gate = (
                    "has no DRAConsumableCapacity gate"
                    if not release.consumable_capacity_exists
                    else (
                        "runs without the DRAConsumableCapacity gate by default (set consumable-capacity: true "
                        "if your cluster turns it on)"
                    )
                )
                yield Violation(
                    (*request.path, "selectors", index, "cel", "expression"),
                    f"request {request.qualified_name!r}: device.allowMultipleAllocations does not compile on "
                    f"Kubernetes {release.version}, which {gate}; the API server refuses the claim",
                    facet="guard-without-gate",
                )


# --- opaque parameters ----------------------------------------------------------------


def _nvidia_parameters(resource: Resource, devices: Mapping[str, Any], devices_path: Path) -> Iterator[Violation]:
    classes: dict[str, set[str]] = {}
    for request in resource.requests:
        classes.setdefault(request.request_name, set()).add(request.device_class)
    for index, entry in enumerate(items(devices.get("config"))):
        opaque = mapping(mapping(entry).get("opaque"))
        if opaque.get("driver") != NVIDIA_GPU_DRIVER:
            continue
        path = (*devices_path, "config", index, "opaque", "parameters")
        parameters = opaque.get("parameters")
        for problem in nvidia_problems(parameters):
            yield Violation((*path, *problem.path), f"NVIDIA config: {problem.message}", facet="nvidia-parameters")
        kind = mapping(parameters).get("kind")
        named = [text(name).partition("/")[0] for name in items(mapping(entry).get("requests"))]
        covered = {device_class for name in (named or list(classes)) for device_class in classes.get(name, ())}
        for device_class in sorted(covered):
            wanted = CONFIG_KIND_FOR_CLASS.get(device_class)
            if (
                wanted is not None
                and isinstance(kind, str)
                and kind in CONFIG_KIND_FOR_CLASS.values()
                and kind != wanted
            ):
                yield Violation(
                    (*path, "kind"),
                    f"NVIDIA config: a {kind} applies to devices of class {device_class}, which take a {wanted}; "
                    "the node fails to prepare the claim",
                    facet="nvidia-config-kind",
                )


# --- admission ---------------------------------------------------------------------------

_NVIDIA_MESSAGE = "NVIDIA config:"


def _admission(target: AdmissionTarget) -> Admission:
    """NVIDIA's opaque parameters, the one part of this rule that reaches admission.

    The API server decodes and validates a claim before any policy sees it: a field its
    release does not have is refused (strict field validation) or dropped (lax), an
    apiVersion it does not serve never arrives, and it refuses an invalid allocationMode,
    count, adminAccess or toleration, both `exactly` and `firstAvailable`, constraints or
    configs naming no request, and a selector that does not compile (the exclusivity guard
    without DRAConsumableCapacity).  Opaque parameters it only requires to be a JSON object
    of at most 10 KiB: whether NVIDIA's driver decodes them is decided here."""
    parameters = "c.opaque.parameters"
    wanted = "{" + ", ".join(f"{string(cls)}: {string(kind)}" for cls, kind in sorted(CONFIG_KIND_FOR_CLASS.items()))
    wanted += "}"
    config_kinds = "[" + ", ".join(sorted({string(kind) for kind in CONFIG_KIND_FOR_CLASS.values()})) + "]"
    kind = f"{parameters}.kind"
    covered = (
        "(!has(c.requests) || size(c.requests) == 0 || c.requests.exists(n, n == r.name || n.startsWith(r.name + '/')))"
    )
    misfit = (
        f"type({parameters}) == map && has({kind}) && type({kind}) == string && {kind} in {config_kinds} && "
        f"variables.requests.exists(r, {covered} && {bodies('r')}.exists(b, has(b.deviceClassName) && "
        f"b.deviceClassName in {wanted} && {wanted}[b.deviceClassName] != {kind}))"
    )
    nvidia = f"has(c.opaque) && has(c.opaque.driver) && c.opaque.driver == {string(NVIDIA_GPU_DRIVER)}"
    refused = f"{nvidia} && has({parameters}) && (!({decodes_cel(parameters)}) || ({misfit}))"
    entry = "variables.refused[0]"
    first = f"has({entry}.requests) && size({entry}.requests) > 0 ? 'request ' + {entry}.requests[0] : 'every request'"
    return Admission(
        kinds=tuple(sorted(CLAIM_KINDS)),
        variables=(("requests", REQUESTS), ("refused", f"{devices_list('config')}.filter(c, {refused})")),
        validations=(
            Validation(
                expression="size(variables.refused) == 0",
                message=f"{_NVIDIA_MESSAGE} opaque parameters for driver {NVIDIA_GPU_DRIVER} that its strict decoder "
                "refuses, or a config kind that does not fit its devices' class",
                message_expression=f"{string(_NVIDIA_MESSAGE + ' the opaque parameters for ')} + ({first}) + "
                + string(
                    f" are refused by the {NVIDIA_GPU_DRIVER} driver's strict decoder, or their kind does not fit "
                    "the devices' class"
                ),
            ),
        ),
        covers=frozenset({"nvidia-parameters", "nvidia-config-kind"}),
    )


ADMISSION = _admission
