"""DRA011: several devices in one claim without a topology constraint."""

from __future__ import annotations

from collections.abc import Iterator

from dra_guard.catalog import PCIE_ROOT, topology_attribute_for
from dra_guard.context import Context, Resource, Violation
from dra_guard.findings import Severity
from dra_guard.manifest import CLAIM_KINDS, DeviceRequestView, claim_devices, items, mapping, text
from dra_guard.rulekit import Example

ID = "DRA011"
NAME = "topology-unaligned"
SEVERITY = Severity.MEDIUM
SUMMARY = (
    "A claim for several devices must align them with matchAttribute on the PCIe root (or, for MIG, the parent GPU)."
)
RATIONALE = (
    "Devices of one claim spread over PCIe roots or parent GPUs cross isolation boundaries and NUMA "
    "domains: slices of different physical GPUs share no memory fabric, and peer traffic leaves the "
    "switch. The standard asks for device affinity matching the node topology."
)
REMEDIATION = (
    "Add constraints: [{requests: [<names>], matchAttribute: resource.kubernetes.io/pcieRoot}] "
    "(gpu.nvidia.com/parentUUID for MIG slices of one GPU)."
)
#: The kinds this rule looks at (the engine runs it on nothing else).
KINDS = frozenset(CLAIM_KINDS)
CROSS_OBJECT = False
WAIVABLE = True
OPTIONS = ()
_TEMPLATE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: pair, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: mig.nvidia.com, allocationMode: ExactCount, count: 2}
      constraints: [%s]
"""
EXAMPLES = (
    Example(
        title="Two MIG slices that may come from different GPUs",
        manifests=_TEMPLATE % "",
        findings=("ResourceClaimTemplate/pair#/spec/spec/devices",),
    ),
    Example(
        title="Two slices of one parent GPU",
        manifests=_TEMPLATE % "{requests: [gpu], matchAttribute: gpu.nvidia.com/parentUUID}",
    ),
)


def _device_count(requests: list[DeviceRequestView]) -> int:
    """Devices the top-level request allocates: its count, or the largest alternative's."""
    counts = []
    for request in requests:
        if request.body.get("allocationMode") == "All":
            counts.append(2)  # an unknown number, possibly many
            continue
        count = request.body.get("count", 1)
        counts.append(int(count) if isinstance(count, (int, float)) and not isinstance(count, bool) else 1)
    return max(counts, default=0)


def check(resource: Resource, context: Context) -> Iterator[Violation]:
    accelerator = context.accelerator_requests(resource)
    if not accelerator:
        return
    by_request: dict[str, list[DeviceRequestView]] = {}
    for request in accelerator:
        by_request.setdefault(request.request_name, []).append(request)
    total = sum(_device_count(requests) for requests in by_request.values())
    if total < 2:
        return
    located = claim_devices(resource.obj)
    if located is None:
        return
    devices_path, devices = located
    names = set(by_request)
    # PCIe root always aligns; a class's own attribute aligns when every request shares it.
    class_attributes = {topology_attribute_for(request.device_class) for request in accelerator}
    acceptable = {PCIE_ROOT} | (class_attributes if len(class_attributes) == 1 else set())
    for entry in items(devices.get("constraints")):
        constraint = mapping(entry)
        covered = {text(name) for name in items(constraint.get("requests"))}
        if text(constraint.get("matchAttribute")) in acceptable and (not covered or names <= covered):
            return
    wanted = " or ".join(sorted(acceptable))
    # allocationMode: All takes every matching device: how many is not known before allocation.
    if any(request.body.get("allocationMode") == "All" for request in accelerator):
        how_many = "an unknown number of accelerator devices (allocationMode: All takes every matching one)"
    else:
        how_many = f"{total} accelerator devices"
    yield Violation(
        devices_path,
        f"{how_many} ({', '.join(sorted(names))}) with no constraint matching {wanted} across them",
    )
