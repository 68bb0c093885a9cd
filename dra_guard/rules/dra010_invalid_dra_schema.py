"""DRA010: DRA objects with fields their apiVersion does not have."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from dra_guard.context import Context, Resource, Violation
from dra_guard.dra_fields import FIELDS
from dra_guard.findings import Severity
from dra_guard.manifest import CLAIM_KINDS, Path, is_dra_object, items, text
from dra_guard.rulekit import Example

ID = "DRA010"
NAME = "invalid-dra-schema"
SEVERITY = Severity.HIGH
SUMMARY = "ResourceClaims and templates must use only the fields their resource.k8s.io version has."
RATIONALE = (
    "The API server rejects unknown fields under strict validation, and with lax validation drops them "
    "silently: `allowMultipleAllocations` in a request (the standard's own example), flat request fields "
    "under v1/v1beta2, or `exactly` under v1beta1 then protect nothing. Field lists come from the official "
    "OpenAPI schemas of Kubernetes 1.31-1.37."
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
            if exactly is None and "firstAvailable" not in request:
                yield Violation(path, f"a device request in {version} needs `exactly` or `firstAvailable`")
            body = exactly if isinstance(exactly, Mapping) else {}
            yield from _selectors(body, fields, (*path, "exactly"), version)
        else:
            yield from _selectors(request, fields, path, version)
        for sub_index, sub_request in enumerate(items(request.get("firstAvailable"))):
            sub_path = (*path, "firstAvailable", sub_index)
            yield from _unknown(sub_request, fields["DeviceSubRequest"], sub_path, "a firstAvailable entry", version)
            if isinstance(sub_request, Mapping):
                yield from _selectors(sub_request, fields, sub_path, version)
    for index, constraint in enumerate(items(devices.get("constraints"))):
        path = (*devices_path, "constraints", index)
        yield from _unknown(constraint, fields["DeviceConstraint"], path, "a constraint", version)
    for index, config in enumerate(items(devices.get("config"))):
        path = (*devices_path, "config", index)
        yield from _unknown(config, fields["DeviceClaimConfiguration"], path, "a config entry", version)


def _selectors(
    body: Mapping[str, Any], fields: Mapping[str, frozenset[str]], path: Path, version: str
) -> Iterator[Violation]:
    for index, selector in enumerate(items(body.get("selectors"))):
        selector_path = (*path, "selectors", index)
        yield from _unknown(selector, fields["DeviceSelector"], selector_path, "a selector", version)
        if isinstance(selector, Mapping):
            cel = selector.get("cel")
            yield from _unknown(cel, fields["CELDeviceSelector"], (*selector_path, "cel"), "a CEL selector", version)
