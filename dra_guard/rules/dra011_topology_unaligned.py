"""DRA011: several devices of a class that has an alignment, without a constraint on it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from dra_guard.contract.catalog import DEVICE_CLASSES, DeviceClass
from dra_guard.contract.findings import Severity
from dra_guard.model.manifest import CLAIM_KINDS, DeviceRequestView, claim_devices, items, mapping, text
from dra_guard.ruleapi.admission_form import (
    REQUESTS,
    Admission,
    AdmissionTarget,
    Validation,
    bodies,
    devices_list,
    not_admin_access,
    string,
    string_list,
)
from dra_guard.ruleapi.config import EXTRA_CLASSES
from dra_guard.ruleapi.context import Context, Resource, Violation
from dra_guard.ruleapi.declarations import Example

ID = "DRA011"
NAME = "topology-unaligned"
SEVERITY = Severity.MEDIUM
SUMMARY = (
    "A claim for several devices of a class whose driver publishes an alignment attribute on every device "
    "(MIG: the parent GPU) must share it with matchAttribute."
)
RATIONALE = (
    "All devices of one claim go to the same consumer, so spreading them is a matter of locality and "
    "performance, not of isolation: MIG slices of different parent GPUs share no memory fabric, and traffic "
    "between them leaves the GPU. Alignment is asked for only where the driver publishes the attribute on "
    "every device (gpu.nvidia.com/parentUUID on MIG devices, or the topology-attribute of an extra-classes "
    "entry): a matchAttribute on an attribute a device lacks makes the claim unallocatable on that node, "
    "which is why resource.kubernetes.io/pcieRoot (published only where derivable by NVIDIA and AMD, never by "
    "the TPU and example drivers) is accepted but never required."
)
REMEDIATION = (
    "Add constraints: [{requests: [<names>], matchAttribute: gpu.nvidia.com/parentUUID}] for MIG slices of one "
    "GPU (the topology-attribute of the class for classes configured under extra-classes)."
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
        exactly: {deviceClassName: %s, allocationMode: ExactCount, count: 2}
      constraints: [%s]
"""
EXAMPLES = (
    Example(
        title="Two MIG slices that may come from different GPUs",
        manifests=_TEMPLATE % ("mig.nvidia.com", ""),
        findings=("ResourceClaimTemplate/pair#/spec/spec/devices",),
    ),
    Example(
        title="Two slices of one parent GPU",
        manifests=_TEMPLATE % ("mig.nvidia.com", "{requests: [gpu], matchAttribute: gpu.nvidia.com/parentUUID}"),
    ),
    Example(
        title="Two TPU chips: the driver publishes nothing to align on (they are on one host anyway)",
        manifests=_TEMPLATE % ("tpu.google.com", ""),
    ),
    Example(
        title="A class from the configuration, with the attribute its devices share",
        manifests=_TEMPLATE % ("fpga.example.org", ""),
        findings=("ResourceClaimTemplate/pair#/spec/spec/devices",),
        config={
            "extra-classes": {
                "fpga.example.org": {
                    "pin-attribute": "fpga.example.org/bitstream",
                    "topology-attribute": "fpga.example.org/board",
                }
            }
        },
    ),
)


def _device_count(requests: list[DeviceRequestView]) -> int:
    """Devices the top-level request allocates: its count, or the largest alternative's."""
    # All, or a count the API server refuses: an unknown number, possibly many.
    return max((request.count or 2 for request in requests), default=0)


def check(resource: Resource, context: Context) -> Iterator[Violation]:
    # Requests of each class that asks for alignment, by top-level request name.
    by_class: dict[str, tuple[DeviceClass, dict[str, list[DeviceRequestView]]]] = {}
    for request in context.accelerator_requests(resource):
        known = context.config.device_class(request.device_class)
        if known is not None and known.default_alignment is not None:
            _, by_request = by_class.setdefault(request.device_class, (known, {}))
            by_request.setdefault(request.request_name, []).append(request)
    if not by_class:
        return
    located = claim_devices(resource.obj)
    if located is None:
        return
    devices_path, devices = located
    for class_name, (known, by_request) in by_class.items():
        total = sum(_device_count(requests) for requests in by_request.values())
        if total < 2 or known.default_alignment is None:
            continue
        acceptable = set(known.topology_attributes)
        names = set(by_request)
        if any(_aligns(entry, acceptable, names) for entry in items(devices.get("constraints"))):
            continue
        others = sorted(acceptable - {known.default_alignment})
        wanted = known.default_alignment + (f" (or {', '.join(others)})" if others else "")
        # allocationMode: All takes every matching device: how many is not known before allocation.
        if any(request.body.get("allocationMode") == "All" for requests in by_request.values() for request in requests):
            how_many = f"an unknown number of {class_name} devices (allocationMode: All takes every matching one)"
        else:
            how_many = f"{total} {class_name} devices"
        yield Violation(
            devices_path,
            f"{how_many} ({', '.join(sorted(names))}) with no matchAttribute on {wanted} across them",
        )


def _aligns(constraint: object, acceptable: set[str], names: set[str]) -> bool:
    entry = mapping(constraint)
    covered = {text(name) for name in items(entry.get("requests"))}
    return text(entry.get("matchAttribute")) in acceptable and (not covered or names <= covered)


# --- admission ---------------------------------------------------------------------------


def _admission(target: AdmissionTarget) -> Admission:
    """For each accelerator class with an alignment (MIG's parent GPU, an extra class's
    topology-attribute), compiled in: two or more devices of it (two requests, or a count of
    2 or more, or All) need a constraint whose matchAttribute is one of the class's topology
    attributes and whose requests (none: all) include every request of the class.  Counts
    are read as stored: the API server has defaulted them (ExactCount, 1) and refused 0."""
    config = target.config
    extra: Mapping[str, DeviceClass] = config.get(EXTRA_CLASSES)
    classes = {**DEVICE_CLASSES, **extra}
    # Each class's acceptable attributes, the one to ask for first (for the message).
    alignments = {
        name: [known.default_alignment, *sorted(set(known.topology_attributes) - {known.default_alignment})]
        for name, known in sorted(classes.items())
        if known.default_alignment is not None and config.is_accelerator(name)
    }
    table = "{" + ", ".join(f"{string(name)}: [{', '.join(map(string, names))}]" for name, names in alignments.items())
    table += "}"
    # adminAccess requests are no accelerator requests (`Context.accelerator_requests`).
    of_class = f"has(b.deviceClassName) && b.deviceClassName == k && {not_admin_access('b', config)}"
    names = f"variables.requests.filter(r, {bodies('r')}.exists(b, {of_class})).map(r, has(r.name) ? r.name : '')"
    several = (
        f"(size({names}) >= 2 || variables.requests.exists(r, {bodies('r')}.exists(b, {of_class} && "
        "((has(b.allocationMode) && b.allocationMode == 'All') || (has(b.count) && b.count >= 2)))))"
    )
    aligned = (
        f"variables.constraints.exists(c, has(c.matchAttribute) && c.matchAttribute in {table}[k] && "
        f"(!has(c.requests) || size(c.requests) == 0 || {names}.all(n, n in c.requests)))"
    )
    return Admission(
        kinds=tuple(sorted(CLAIM_KINDS)),
        variables=(
            ("requests", REQUESTS),
            ("constraints", devices_list("constraints")),
            ("unaligned", f"{string_list(alignments)}.filter(k, {several} && !{aligned})"),
        ),
        validations=(
            Validation(
                expression="size(variables.unaligned) == 0",
                message="several devices of a class with an alignment attribute have no matchAttribute on it "
                "across them",
                message_expression="'several ' + variables.unaligned[0] + ' devices with no matchAttribute on ' + "
                f"{table}[variables.unaligned[0]][0] + ' across them'",
            ),
        ),
    )


ADMISSION = _admission
