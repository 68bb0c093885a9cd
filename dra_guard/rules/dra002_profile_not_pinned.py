"""DRA002: accelerator requests whose selectors do not pin one profile."""

from __future__ import annotations

from collections.abc import Iterator

from dra_guard.context import Context, Resource, Violation
from dra_guard.findings import Severity
from dra_guard.manifest import CLAIM_KINDS, get_path, items, text
from dra_guard.rulekit import Example
from dra_guard.selectors import Pin, analyse

ID = "DRA002"
NAME = "profile-not-pinned"
SEVERITY = Severity.HIGH
SUMMARY = "Every accelerator request must pin one profile with a CEL selector on the class's pinning attribute."
RATIONALE = (
    "Without a pin the scheduler may hand out any slice the class offers (a 7g.80gb for a job sized for "
    "1g.10gb, or another tenant's partition layout). A pin counts only as a top-level && conjunct "
    "device.attributes['<domain>'].<attribute> == '<literal>': under || (e.g. `|| true`), ! or ?: it "
    "constrains nothing. An attribute the class does not publish never matches: a MIG `profile` selector "
    "on class gpu.nvidia.com (which selects whole GPUs) is the standard's own example of this."
)
REMEDIATION = (
    "Add a selector such as device.attributes['gpu.nvidia.com'].profile == '1g.10gb' on class "
    "mig.nvidia.com (productName for gpu.nvidia.com, tpuGen for tpu.google.com, partitionProfile for gpu.amd.com)."
)
#: The kinds this rule looks at (the engine runs it on nothing else).
KINDS = frozenset(CLAIM_KINDS)
CROSS_OBJECT = False
WAIVABLE = True
OPTIONS = ()
EXAMPLES = (
    Example(
        title="A MIG request without a selector: any profile will do",
        manifests="""\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: slice, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: mig.nvidia.com, allocationMode: ExactCount, count: 1}
""",
        findings=("ResourceClaimTemplate/slice#/spec/spec/devices/requests/0/exactly",),
    ),
    Example(
        title="A pin under || constrains nothing",
        manifests="""\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: slice, namespace: team-a}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: mig.nvidia.com
        allocationMode: ExactCount
        count: 1
        selectors:
        - cel: {expression: "device.attributes['gpu.nvidia.com'].profile == '1g.10gb' || true"}
""",
        findings=("ResourceClaim/slice#/spec/devices/requests/0/exactly",),
    ),
    Example(
        title="A MIG profile selector on the whole-GPU class never matches",
        manifests="""\
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaimTemplate
metadata: {name: slice, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        deviceClassName: gpu.nvidia.com
        allocationMode: ExactCount
        count: 1
        selectors:
        - cel: {expression: "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}
""",
        findings=("ResourceClaimTemplate/slice#/spec/spec/devices/requests/0",),
    ),
    Example(
        title="One MIG profile pinned in a top-level conjunct",
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
          selectors:
          - cel:
              expression: >-
                device.driver == 'gpu.nvidia.com' &&
                device.attributes['gpu.nvidia.com'].profile == '1g.10gb'
""",
    ),
)


def check(resource: Resource, context: Context) -> Iterator[Violation]:
    for request in context.accelerator_requests(resource):
        label = f"request {request.qualified_name!r}"
        if not request.device_class:
            yield Violation(request.path, f"{label} names no deviceClassName, so nothing about the device is pinned")
            continue
        known = context.config.device_class(request.device_class)
        pins: list[Pin] = []
        broken = False
        for index, selector in enumerate(items(request.body.get("selectors"))):
            expression = get_path(selector, ("cel", "expression"))
            if not isinstance(expression, str):
                continue
            analysis = analyse(expression)
            if analysis.error is not None:
                broken = True
                yield Violation(
                    (*request.path, "selectors", index, "cel", "expression"),
                    f"{label}: selector is not valid CEL ({analysis.error})",
                )
            pins.extend(analysis.pins)
        if broken:
            continue
        wanted = known.qualified_pin_attribute if known else "device.attributes['<domain>'].<attribute>"
        good = [pin for pin in pins if known is None or pin.qualified_attribute == known.qualified_pin_attribute]
        if good:
            continue
        if pins:
            others = ", ".join(sorted({pin.qualified_attribute for pin in pins}))
            hint = ""
            if request.device_class == "gpu.nvidia.com" and any(pin.attribute == "profile" for pin in pins):
                hint = "; MIG slices are requested from class mig.nvidia.com"
            yield Violation(
                request.path,
                f"{label} on class {request.device_class} pins {others}, which that class does not publish "
                f"for pinning; it is pinned by {wanted}{hint}",
            )
        else:
            yield Violation(
                request.path,
                f"{label} on class {text(request.device_class)} does not pin {wanted} to one value "
                "in a top-level && conjunct",
            )
