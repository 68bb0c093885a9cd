"""DRA010: DRA objects with fields their apiVersion does not have."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from dra_guard.context import Context, Resource, Violation
from dra_guard.dra_fields import FIELDS
from dra_guard.findings import Severity
from dra_guard.manifest import (
    ALL,
    ALLOCATION_MODES,
    CLAIM_KINDS,
    EXACT_COUNT,
    DeviceRequestView,
    Path,
    count_value,
    is_dra_object,
    items,
    shown,
    text,
)
from dra_guard.rulekit import Example

ID = "DRA010"
NAME = "invalid-dra-schema"
SEVERITY = Severity.HIGH
SUMMARY = "ResourceClaims and templates must use only the fields their resource.k8s.io version has."
RATIONALE = (
    "The API server rejects unknown fields under strict validation, and with lax validation drops them "
    "silently: `allowMultipleAllocations` in a request (the standard's own example), flat request fields "
    "under v1/v1beta2, or `exactly` under v1beta1 then protect nothing. Field lists come from the official "
    "OpenAPI schemas of Kubernetes 1.31-1.37. Values the API server refuses are reported too: a count that "
    "is not a whole number (NaN, a fraction, a string, beyond int64) or is negative, an allocationMode "
    "other than ExactCount or All, a count with All, a non-boolean adminAccess, a request with both "
    "`exactly` and `firstAvailable`. The other rules read such a request fail-closed (an unknown mode is "
    "exclusive and not an exact count), so a refused value never hides a finding."
)
REMEDIATION = (
    "Use the request shape of the apiVersion: {name, exactly: {...}} or {name, firstAvailable: [...]} for "
    "v1 and v1beta2, flat {name, deviceClassName, ...} for v1beta1 and v1alpha3; express exclusivity with "
    'the dra-guard.io/allow-multiple-allocations: "false" annotation.'
)
#: The kinds this rule looks at (the engine runs it on nothing else).
KINDS = frozenset(CLAIM_KINDS)
CROSS_OBJECT = False
WAIVABLE = True
OPTIONS = ()
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
        manifests="""\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: slice, namespace: team-a}
spec:
  devices:
    requests:
    - {name: gpu, deviceClassName: mig.nvidia.com, allocationMode: ExactCount, count: 1}
""",
        findings=(
            "ResourceClaim/slice#/spec/devices/requests/0",
            "ResourceClaim/slice#/spec/devices/requests/0/allocationMode",
            "ResourceClaim/slice#/spec/devices/requests/0/count",
            "ResourceClaim/slice#/spec/devices/requests/0/deviceClassName",
        ),
    ),
    Example(
        title="A count the API server refuses (a fraction), and a misspelt allocation mode",
        manifests="""\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: slice, namespace: team-a}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: mig.nvidia.com, allocationMode: ExactCount, count: 1.5}
    - name: more
      exactly: {deviceClassName: mig.nvidia.com, allocationMode: Exact, count: 1}
""",
        findings=(
            "ResourceClaim/slice#/spec/devices/requests/0/exactly/count",
            "ResourceClaim/slice#/spec/devices/requests/1/exactly/allocationMode",
        ),
    ),
    Example(
        title="The request shape of v1beta1",
        manifests="""\
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: slice, namespace: team-a}
spec:
  devices:
    requests:
    - {name: gpu, deviceClassName: mig.nvidia.com, allocationMode: ExactCount, count: 1}
""",
    ),
)


def _unknown(value: object, allowed: frozenset[str], path: Path, what: str, version: str) -> Iterator[Violation]:
    if not isinstance(value, Mapping):
        return
    for key in value:
        if key not in allowed:
            yield Violation((*path, str(key)), f"{what} has no field {key!r} in {version}")


def check(resource: Resource, context: Context) -> Iterator[Violation]:
    obj = resource.obj
    if resource.kind not in CLAIM_KINDS or not is_dra_object(obj):
        return
    version = text(obj.get("apiVersion"))
    fields = FIELDS.get(version)
    if fields is None:
        served = ", ".join(sorted(FIELDS))
        yield Violation(("apiVersion",), f"{version} is not served by any supported Kubernetes release ({served})")
        return
    spec: Any = obj.get("spec")
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
            yield from _selectors(body, fields, (*path, "exactly"), version)
        else:
            yield from _selectors(request, fields, path, version)
            if text(request.get("deviceClassName")) and items(request.get("firstAvailable")):
                yield Violation(
                    path, f"a device request in {version} sets both deviceClassName and `firstAvailable`; it takes one"
                )
        for sub_index, sub_request in enumerate(items(request.get("firstAvailable"))):
            sub_path = (*path, "firstAvailable", sub_index)
            yield from _unknown(sub_request, fields["DeviceSubRequest"], sub_path, "a firstAvailable entry", version)
            if isinstance(sub_request, Mapping):
                yield from _selectors(sub_request, fields, sub_path, version)
    yield from _request_values(resource)
    for index, constraint in enumerate(items(devices.get("constraints"))):
        path = (*devices_path, "constraints", index)
        yield from _unknown(constraint, fields["DeviceConstraint"], path, "a constraint", version)
    for index, config in enumerate(items(devices.get("config"))):
        path = (*devices_path, "config", index)
        yield from _unknown(config, fields["DeviceClaimConfiguration"], path, "a config entry", version)


def _one_of_exactly_first_available(request: Mapping[str, Any], path: Path, version: str) -> Iterator[Violation]:
    """v1beta2/v1 `validateDeviceRequest`: exactly one of the two (an empty or null list is unset)."""
    has_exactly = request.get("exactly") is not None
    has_alternatives = bool(items(request.get("firstAvailable")))
    if not has_exactly and not has_alternatives:
        yield Violation(path, f"a device request in {version} needs `exactly` or `firstAvailable`")
    elif has_exactly and has_alternatives:
        yield Violation(path, f"a device request in {version} sets both `exactly` and `firstAvailable`; it takes one")


def _request_values(resource: Resource) -> Iterator[Violation]:
    """Values the API server refuses in a request (kubernetes `pkg/apis/resource/validation`
    `validateDeviceAllocationMode`, and int64/bool decoding), as written: the defaults
    (absent or null mode is ExactCount, absent, null or 0 count is 1) are valid."""
    for request in resource.requests:
        label = f"request {request.qualified_name!r}"
        mode = request.raw.get("allocationMode")
        if mode not in (None, "") and mode not in ALLOCATION_MODES:
            yield Violation(
                (*request.path, "allocationMode"),
                f"{label}: allocationMode {shown(mode)} is not one of {', '.join(ALLOCATION_MODES)}; "
                "the API server refuses it",
            )
        yield from _count_value(request, label)
        admin = request.raw.get("adminAccess")
        if admin is not None and type(admin) is not bool:
            yield Violation(
                (*request.path, "adminAccess"),
                f"{label}: adminAccess {shown(admin)} is not true or false; the API server refuses it",
            )


def _count_value(request: DeviceRequestView, label: str) -> Iterator[Violation]:
    written = request.raw.get("count")
    count = count_value(written)
    path = (*request.path, "count")
    if count is None:
        yield Violation(path, f"{label}: count {shown(written)} is not an integer; the API server refuses it")
    elif request.allocation_mode == EXACT_COUNT and count < 0:
        yield Violation(path, f"{label}: count {count} must be positive with allocationMode ExactCount")
    elif request.allocation_mode == ALL and count != 0:
        yield Violation(path, f"{label}: count must not be set with allocationMode All (it takes every device)")


def _selectors(
    body: Mapping[str, Any], fields: Mapping[str, frozenset[str]], path: Path, version: str
) -> Iterator[Violation]:
    for index, selector in enumerate(items(body.get("selectors"))):
        selector_path = (*path, "selectors", index)
        yield from _unknown(selector, fields["DeviceSelector"], selector_path, "a selector", version)
        if isinstance(selector, Mapping):
            cel = selector.get("cel")
            yield from _unknown(cel, fields["CELDeviceSelector"], (*selector_path, "cel"), "a CEL selector", version)
