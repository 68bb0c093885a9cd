"""DRA014: claims the cluster's published devices cannot satisfy, and pins that still match
several profiles there."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dra_guard.contract.findings import Severity
from dra_guard.model.manifest import CLAIM_KINDS, claim_devices, is_dra_object, is_list_kind, items
from dra_guard.ruleapi.admission_form import NotAdmissible
from dra_guard.ruleapi.context import Context, Pending, Resource
from dra_guard.ruleapi.declarations import Example
from dra_guard.ruleapi.device_classes import selectors_of
from dra_guard.ruleapi.options import ConfigError, Option, OptionType, ParseContext

if TYPE_CHECKING:
    from dra_guard.model.allocation import Alternative, Constraint, Request

ID = "DRA014"
NAME = "unsatisfiable"
SEVERITY = Severity.HIGH
SUMMARY = (
    "Against the cluster's ResourceSlices (check --slices, resource-slices, or ResourceSlices in the files "
    "named and the objects given; not those a directory walk meets), every accelerator claim must be "
    "allocatable, and a pin must select devices of one profile."
)
RATIONALE = (
    "A claim no node can satisfy leaves its pods pending forever, and the reason is rarely visible in a "
    "manifest: a matchAttribute on an attribute the driver does not publish (resource.kubernetes.io/pcieRoot "
    "on TPU chips; a device without the attribute is never chosen), more devices than one node or root "
    "complex holds, a MIG profile the GPUs are not partitioned into, a selector on an attribute the devices "
    "do not publish (an evaluation error: the allocator aborts the claim). The claim is evaluated the way the "
    "structured-parameters allocator evaluates it: the DeviceClass's selectors (from a DeviceClass among the "
    "objects, extra-classes.<class>.selector, or the driver's own class in the catalog), then the request's, "
    "with cel-python; ExactCount and All; matchAttribute and distinctAttribute; firstAvailable; every device "
    "of a claim on one node (or in a pool every node reaches); the counters of partitionable devices "
    "(sharedCounters of a pool, consumesCounters of a device, KEP-4815, as NVIDIA's DynamicMIG publishes "
    "them): a device fits only while every counter covers what the claim's devices draw together, and a "
    "pool naming a counter set or counter it lacks is invalid. Devices and counters already allocated to "
    "other claims, consumable capacity and taints are not modelled: they can only make a claim that fits "
    "here fail in the cluster, never the reverse. A claim that cannot be decided (a class whose selectors "
    "dra-guard does not know, CEL that cel-python cannot evaluate) is not reported. A request that tries "
    "to pin its class's profile attribute but whose selectors still match devices with several values of "
    "it (profile != '3g.20gb', profile in [...]) lets the allocator hand out any of those profiles. Only checked when "
    "ResourceSlices are given; an admission policy never sees them."
)
REMEDIATION = (
    "Ask only for what the nodes publish: drop a matchAttribute on an attribute the driver does not publish "
    "(or use `topology=` only where it does), lower the count to what one node holds, pin a profile that "
    "exists, and pin with `==` on the class's pin attribute."
)
#: The kinds this rule looks at (the engine runs it on nothing else).
KINDS = frozenset(CLAIM_KINDS)
# It needs the ResourceSlices (and DeviceClasses) of the whole input.
CROSS_OBJECT = True
WAIVABLE = True


@dataclass(frozen=True)
class SliceSet:
    """ResourceSlices read from files (`resource-slices`, `check --slices`)."""

    #: The files, as given.
    paths: tuple[str, ...] = ()
    #: The ResourceSlice objects they hold (List items expanded).
    slices: tuple[Mapping[str, Any], ...] = ()

    def __add__(self, other: SliceSet) -> SliceSet:
        return SliceSet(self.paths + other.paths, self.slices + other.slices)


class SliceFiles(OptionType[SliceSet]):
    """Files of ResourceSlices, read when the configuration is: a file that cannot be read, or
    that holds no ResourceSlice, is a configuration error naming it (and the line)."""

    description = "list of file paths"

    def parse(self, key: str, value: object, context: ParseContext) -> SliceSet:
        if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
            raise ConfigError(f"{key}: must be a list of file paths")
        if context.read_manifests is None:
            raise ConfigError(f"{key}: names files, and this configuration is parsed where none is read")
        result = SliceSet()
        for path in value:
            where = path if context.directory is None else os.path.join(context.directory, path)
            try:
                loaded = context.read_manifests(where)
            except ConfigError as error:
                raise ConfigError(f"{key}: {error}") from None
            slices = tuple(obj for document in loaded for obj in _objects(document) if _is_slice(obj))
            if not slices:
                raise ConfigError(
                    f"{key}: {where} holds no ResourceSlice (write it with `kubectl get resourceslices -o yaml`)"
                )
            result = result + SliceSet((where,), slices)
        return result

    def json_schema(self) -> dict[str, Any]:
        return {"type": "array", "items": {"type": "string"}}

    def to_json(self, value: object) -> Any:
        return list(value.paths) if isinstance(value, SliceSet) else value


def _objects(obj: object) -> Iterator[Mapping[str, Any]]:
    if isinstance(obj, Mapping):
        if is_list_kind(obj):
            yield from (item for item in items(obj.get("items")) if isinstance(item, Mapping))
        else:
            yield obj


def _is_slice(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "ResourceSlice" and is_dra_object(obj)


RESOURCE_SLICES: Option[SliceSet] = Option(
    key="resource-slices",
    type=SliceFiles(),
    command_line="--slices",
    default=SliceSet(),
    doc="Files of the cluster's ResourceSlices, as `kubectl get resourceslices -o yaml` writes them (relative "
    "to the configuration file's folder; `check --slices` adds more): claims are evaluated against the devices "
    "they publish. ResourceSlices among the objects count too when they are in a file named on the command line, "
    "on stdin or given to enforce() or the Pulumi pack; those a directory walk or a glob finds (an example's "
    "captured node) are checked as objects but describe no cluster.",
    default_doc="none",
)
OPTIONS = (RESOURCE_SLICES,)
_SLICE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: tpu-node-1-tpu.google.com}
spec:
  driver: tpu.google.com
  nodeName: tpu-node-1
  pool: {name: tpu-node-1, generation: 1, resourceSliceCount: 1}
  devices:
  - {name: "0", attributes: {tpuGen: {string: v6e}, index: {int: 0}}}
  - {name: "1", attributes: {tpuGen: {string: v6e}, index: {int: 1}}}
  - {name: "2", attributes: {tpuGen: {string: v6e}, index: {int: 2}}}
  - {name: "3", attributes: {tpuGen: {string: v6e}, index: {int: 3}}}
"""
_CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: four-chips, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - name: tpu
        exactly:
          deviceClassName: tpu.google.com
          count: 4
          selectors:
          - cel: {expression: "device.attributes['tpu.google.com'].tpuGen == 'v6e'"}%s
"""
_ON_ONE_ROOT = "\n      constraints:\n      - {requests: [tpu], matchAttribute: resource.kubernetes.io/pcieRoot}"
EXAMPLES = (
    Example(
        title="Four TPU chips on one PCIe root: the TPU driver publishes no pcieRoot, so no chip is ever chosen",
        manifests=f"{_SLICE}---\n{_CLAIM % _ON_ONE_ROOT}",
        findings=("ResourceClaimTemplate/four-chips#/spec/spec/devices",),
    ),
    Example(
        title="Four chips of the node, without the constraint",
        manifests=f"{_SLICE}---\n{_CLAIM % ''}",
    ),
)


def check(resource: Resource, context: Context) -> Iterator[Pending]:
    located = claim_devices(resource.obj)
    accelerator = context.accelerator_requests(resource)
    if located is None or not accelerator or _no_slices_will_come(context):
        return
    path, devices = located
    # The allocator is imported by the first claim: a check without claims (a pre-commit
    # run on other files) does not pay for it at start-up.
    from dra_guard.model.allocation import constraints_of, requests_of

    # Small facts only (names, selectors, counts): the claim itself is let go, and the
    # facts are kept once for every claim with the same requests (context.shared).
    requests = context.shared(tuple(requests_of(resource.requests)))
    constraints = context.shared(tuple(constraints_of(devices)))
    yield Pending(path, _unsatisfiable, context.shared((context, requests, constraints)))
    alternatives = {
        alternative.qualified_name: alternative for request in requests for alternative in request.alternatives
    }
    for view in accelerator:
        alternative = alternatives.get(view.qualified_name)
        if alternative is not None and context.config.device_class(view.device_class) is not None:
            yield Pending(view.path, _ambiguous, context.shared((context, alternative)))


class _Devices:
    """The allocator over every ResourceSlice given, with class selectors filled in as claims need them."""

    def __init__(self, context: Context) -> None:
        from dra_guard.model.allocation import Allocator, SliceCollector

        collector = SliceCollector()
        for obj in context.config.get(RESOURCE_SLICES).slices:
            collector.add(obj)
        collector.extend(context.slices)
        self.given = collector.slices > 0
        self.inventory = collector.inventory()
        self.classes: dict[str, tuple[str, ...]] = {}
        self.allocator = Allocator(self.inventory, self.classes)
        self._context = context

    def know(self, device_class: str) -> tuple[str, ...] | None:
        """The class's selectors (from the input, the configuration or the catalog), for the allocator."""
        if device_class not in self.classes:
            found = selectors_of(device_class, self._context.config, self._context.class_selectors(device_class))
            if found is None:
                return None
            self.classes[device_class] = found.expressions
        return self.classes[device_class]


def _no_slices_will_come(context: Context) -> bool:
    """No ResourceSlice is in the configuration, none was in the input so far, and the caller
    says none will come: both pending findings would resolve to nothing (`_devices`), so
    the check is not worth its pending findings' cost (the webhook, on every claim)."""
    return context.input_has_no_slices and not context.has_slices and not context.config.get(RESOURCE_SLICES).slices


def _devices(context: Context) -> _Devices | None:
    if not context.has_slices and not context.config.get(RESOURCE_SLICES).slices:
        # No ResourceSlice given (the usual case, and every Pulumi resource checked on
        # its own): no allocator to build, as `_Devices.given` would say.
        return None
    devices = context.derived(ID, lambda: _Devices(context))
    return devices if devices.given else None


def _unsatisfiable(context: Context, requests: tuple[Request, ...], constraints: tuple[Constraint, ...]) -> str | None:
    devices = _devices(context)
    if devices is None:
        return None
    for request in requests:
        for alternative in request.alternatives:
            devices.know(alternative.device_class)  # unknown: the allocator says "undecided"
    verdict = devices.allocator.decide(requests, constraints)
    if verdict.status != "unsatisfiable":
        return None
    nodes = len(devices.inventory.nodes)
    where = f"{nodes} node{'s' * (nodes != 1)}" if nodes else "the pools"
    return f"no node can allocate this claim ({where} in the ResourceSlices given): {verdict.reason}"


def _ambiguous(context: Context, alternative: Alternative) -> str | None:
    devices = _devices(context)
    known = context.config.device_class(alternative.device_class)
    if devices is None or known is None:
        return None
    class_selectors = devices.know(alternative.device_class)
    reference = _reference(known.domain, known.pin_attribute)
    if not any(reference.search(expression) for expression in (*(class_selectors or ()), *alternative.selectors)):
        return None  # no pin tried: unpinned requests are DRA002's
    attribute = known.qualified_pin_attribute
    values = sorted({str(value) for value in devices.allocator.pin_values(alternative, attribute) if value is not None})
    if len(values) < 2:
        return None
    return (
        f"request {alternative.qualified_name!r} tries to pin {attribute}, but its selectors match devices of "
        f"{len(values)} values of it in the ResourceSlices given ({', '.join(values)}): the allocator may hand "
        "out any of them"
    )


def _reference(domain: str, attribute: str) -> re.Pattern[str]:
    quoted = rf"""(?:'{re.escape(domain)}'|"{re.escape(domain)}")"""
    name = rf"""(?:\.\s*{attribute}\b|\[\s*(?:'{attribute}'|"{attribute}")\s*\])"""
    return re.compile(rf"device\s*\.\s*attributes\s*\[\s*{quoted}\s*\]\s*{name}")


ADMISSION = NotAdmissible(
    "needs the cluster's ResourceSlices, which an admission request does not carry; the webhook checks it "
    "only with resource-slices files in its configuration"
)
