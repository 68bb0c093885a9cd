"""Could the DRA allocator ever satisfy this claim?  Evaluated against published ResourceSlices.

This follows the scheduler's structured-parameters allocator as far as a manifest can
decide it: a device is a candidate for a request when every selector of the request's
DeviceClass and then every selector of the request is true for it (CEL, evaluated with
cel-python); a request takes `count` distinct devices (ExactCount) or every candidate
(All, at least one); `matchAttribute` devices must all carry the attribute with one value,
`distinctAttribute` devices must all carry it with different values; all devices of one
claim come from one node (plus pools that every node reaches); a `firstAvailable` request
takes the first alternative that fits.  A selector that reads an attribute a candidate
device does not have is an evaluation error, and the allocator then aborts the claim.

Partitionable devices (KEP-4815, `DRAPartitionableDevices`): a pool's ResourceSlices publish
counter sets (`spec.sharedCounters`), and a device that `consumesCounters` from them can be
allocated only while every counter of those sets still covers what the claim's devices
draw together (k8s.io/dynamic-resource-allocation structured/internal/incubating
allocator_incubating.go checkAvailableCounters: available = the set's value, consumed = the
sum over the devices allocated so far, refused when available < consumed); a device that
names a counter set or counter the pool does not publish, or a counter set named twice in a
pool, makes the whole pool invalid, and no device of it is allocated (pools_incubating.go
buildPool, getAndValidateCounterSets, validateDeviceCounterConsumption).  This is how NVIDIA's
DynamicMIG publishes a GPU: the full GPU and every MIG placement, each drawing on the GPU's
counter set (one `memory-slice-<N>` counter per memory slice, and its capacities), so two
placements that share a memory slice, or a placement and the full GPU, never go together.

Not modelled: devices already allocated to other claims (and the counters they consume),
consumable capacity, taints, node selectors of network-attached pools (treated as reachable
everywhere), clusters with `DRAPartitionableDevices` off (where devices that consume counters
are never allocated).  Each of those can only make a claim that fits here fail in a real
cluster, never the reverse, so "unsatisfiable" is never a false alarm about the slices given;
where cel-python cannot evaluate an expression the verdict is "undecided".
"""

from __future__ import annotations

import itertools
import math
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

from dra_guard.contract.memo import memo_short
from dra_guard.model.manifest import DeviceRequestView, cel_expressions, get_path, items, mapping, text
from dra_guard.model.selectors import CEL_SELECTOR_MAX_LENGTH, byte_length

#: Search steps one claim may take before the verdict is "undecided" (a bound, not a limit
#: real claims reach: a claim for 8 of 64 candidate devices needs a few hundred).
MAX_SEARCH_STEPS = 200_000
_DOMAIN_REFERENCE = re.compile(r"""device\.attributes\[\s*(?:'([^'\\]*)'|"([^"\\]*)")\s*\]""")
_MISSING = ("no such member", "no such key")
# A resource.Quantity: sign, number, then a binary-SI, decimal-SI or exponent suffix.
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?")
_SUFFIX = {
    **{name: Fraction(1024) ** power for power, name in enumerate(("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
    **{name: Fraction(10) ** power for name, power in (("n", -9), ("u", -6), ("m", -3), ("k", 3), ("M", 6))},
    **{name: Fraction(10) ** power for name, power in (("G", 9), ("T", 12), ("P", 15), ("E", 18))},
}
#: The largest decimal exponent (`1e100`) computed exactly.  Go keeps a quantity's exponent
#: as a scale, so `1e999999999` costs it nothing; here it would be a number of a billion
#: digits.  Past this bound a non-zero amount is no quantity dra-guard compares (None: not a
#: limit), far above any counter a driver publishes (they are bytes and counts).
MAX_DECIMAL_EXPONENT = 100

Status = Literal["satisfiable", "unsatisfiable", "undecided"]


@dataclass(frozen=True)
class Device:
    """One device of a ResourceSlice, with its attributes fully qualified."""

    pool: str
    name: str
    #: The node it is attached to; None for pools every node reaches (nodeSelector, allNodes).
    node: str | None
    driver: str
    #: "<domain>/<name>" -> value (str, int, bool; versions as their string).
    attributes: Mapping[str, Any]
    allow_multiple_allocations: bool = False
    #: What it draws from its pool's counter sets when allocated (`consumesCounters`):
    #: (counter set, ((counter, amount), ...)) pairs; an amount that is no quantity is None.
    consumes: tuple[tuple[str, tuple[tuple[str, Fraction | None], ...]], ...] = ()

    @property
    def label(self) -> str:
        return f"{self.pool}/{self.name}"

    def cel_device(self, extra_domains: Iterable[str] = ()) -> dict[str, Any]:
        """The `device` variable of the DRA CEL environment, as plain data."""
        attributes: dict[str, dict[str, Any]] = {domain: {} for domain in extra_domains}
        for qualified, value in self.attributes.items():
            domain, _, name = qualified.rpartition("/")
            attributes.setdefault(domain, {})[name] = value
        return {
            "driver": self.driver,
            "attributes": attributes,
            "capacity": {},
            "allowMultipleAllocations": self.allow_multiple_allocations,
        }


#: A counter set's counters: name -> value (None: not a quantity, so not a limit).
Counters = dict[str, Fraction | None]


@dataclass
class Inventory:
    """The devices of a set of ResourceSlices, by node."""

    devices: list[Device] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    #: Slices that could not be read, as "<slice>: why".
    problems: list[str] = field(default_factory=list)
    #: (pool, counter set name) -> its counters, from the pool's `sharedCounters`.
    counter_sets: dict[tuple[str, str], Counters] = field(default_factory=dict)
    #: Pools the allocator refuses to allocate from (pool -> why); their devices are not listed.
    invalid_pools: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_objects(cls, objects: Iterable[Mapping[str, Any]]) -> Inventory:
        """From ResourceSlice objects (v1beta1, v1beta2, v1); other kinds are ignored.

        Per pool only the newest generation counts, as for the scheduler.
        """
        collector = SliceCollector()
        for obj in objects:
            collector.add(obj)
        return collector.inventory()

    def _add_slice(self, obj: Mapping[str, Any], nodes: set[str]) -> None:
        spec = mapping(obj.get("spec"))
        driver = text(spec.get("driver"))
        node = spec.get("nodeName")
        label = text(mapping(obj.get("metadata")).get("name")) or _pool_key(obj)
        if not driver:
            self.problems.append(f"ResourceSlice {label}: no spec.driver")
            return
        if isinstance(node, str) and node:
            nodes.add(node)
        else:
            node = None
        for device in _devices(obj, driver, node):
            self.devices.append(device)

    def reachable_from(self, node: str) -> list[Device]:
        return [device for device in self.devices if device.node is None or device.node == node]


class SliceCollector:
    """ResourceSlices as they arrive (a check's input, a `--slices` file), kept as devices
    per pool, generation and slice; `inventory()` keeps each pool's newest generation."""

    def __init__(self) -> None:
        #: pool -> generation -> slice name -> (its devices, its node or None, its counter sets).
        self._pools: dict[str, dict[int, dict[str, _Slice]]] = {}
        self._problems: list[str] = []
        #: ResourceSlice objects taken: a file given with --slices may also be among the
        #: checked objects, and a slice counts once.
        self.slices = 0

    def add(self, obj: Mapping[str, Any]) -> None:
        if obj.get("kind") != "ResourceSlice":
            return
        generations = self._pools.setdefault(_pool_key(obj), {})
        held = generations.setdefault(_generation(get_path(obj, ("spec", "pool", "generation"))), {})
        name = text(mapping(obj.get("metadata")).get("name")) or f"#{self.slices}"
        if name in held:
            return
        part = Inventory()
        nodes: set[str] = set()
        part._add_slice(obj, nodes)
        held[name] = (part.devices, next(iter(nodes), None), _counter_sets(obj))
        self._problems.extend(part.problems)
        self.slices += 1

    def extend(self, other: SliceCollector) -> None:
        """Add the slices another collector holds (the input's, after a file's), each once."""
        for pool, generations in other._pools.items():
            mine = self._pools.setdefault(pool, {})
            for generation, held in generations.items():
                for name, entry in held.items():
                    if name not in mine.setdefault(generation, {}):
                        mine[generation][name] = entry
                        self.slices += 1
        self._problems.extend(other._problems)

    def inventory(self) -> Inventory:
        inventory = Inventory(problems=list(self._problems))
        nodes: set[str] = set()
        for pool, generations in self._pools.items():
            newest = generations[max(generations)].values()
            invalid = _add_counter_sets(inventory.counter_sets, pool, [sets for _, _, sets in newest])
            for devices, node, _ in newest:
                if node is not None:
                    nodes.add(node)
                invalid = invalid or _unknown_counters(inventory.counter_sets, pool, devices)
                inventory.devices.extend(devices)
            if invalid is not None:
                # The allocator skips an invalid pool: none of its devices is ever allocated.
                inventory.invalid_pools[pool] = invalid
                inventory.devices = [device for device in inventory.devices if device.pool != pool]
        inventory.nodes = sorted(nodes)
        return inventory


#: One ResourceSlice: its devices, its node (None: every node), its counter sets.
_Slice = tuple[list[Device], str | None, list[tuple[str, Counters]]]


def _counter_sets(obj: Mapping[str, Any]) -> list[tuple[str, Counters]]:
    """`spec.sharedCounters` of a slice, as (name, counters)."""
    return [
        (text(mapping(raw).get("name")), _counters(mapping(raw).get("counters")))
        for raw in items(get_path(obj, ("spec", "sharedCounters")))
    ]


def _counters(raw: object) -> Counters:
    return {str(name): quantity(get_path(counter, ("value",))) for name, counter in mapping(raw).items()}


def _add_counter_sets(
    into: dict[tuple[str, str], Counters], pool: str, per_slice: Iterable[list[tuple[str, Counters]]]
) -> str | None:
    """Add a pool's counter sets; why the pool is invalid, if a name comes twice."""
    for sets in per_slice:
        for name, counters in sets:
            if (pool, name) in into:
                return f"duplicate counter set name {name}"
            into[pool, name] = counters
    return None


def _unknown_counters(
    counter_sets: Mapping[tuple[str, str], Counters], pool: str, devices: Iterable[Device]
) -> str | None:
    """Why the pool is invalid, if a device consumes from a counter set or counter it does not publish."""
    for device in devices:
        for set_name, counters in device.consumes:
            published = counter_sets.get((pool, set_name))
            if published is None:
                return f"device {device.name}: counter set {set_name} not found"
            missing = next((name for name, _ in counters if name not in published), None)
            if missing is not None:
                return f"device {device.name}: counter {missing} not found in counter set {set_name}"
    return None


def quantity(value: object) -> Fraction | None:
    """A resource.Quantity (`1`, `80Gi`, `500m`, `1e3`) as an exact number; None if it is none."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(value) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    match = _QUANTITY.fullmatch(value.strip())
    if match is None:
        return None
    number, suffix = Fraction(match.group(1)), match.group(2) or ""
    if suffix[:1] in ("e", "E"):
        exponent = int(suffix[1:])
        if number == 0:
            return number
        if abs(exponent) > MAX_DECIMAL_EXPONENT:
            return None
        return number * Fraction(10) ** exponent
    return number * _SUFFIX[suffix]


def _generation(value: object) -> int:
    if type(value) is int:
        return value
    # Pulumi hands every number over as a float.
    return int(value) if isinstance(value, float) and value.is_integer() else 0


def _devices(obj: Mapping[str, Any], driver: str, node: str | None) -> Iterable[Device]:
    spec = mapping(obj.get("spec"))
    for raw in items(spec.get("devices")):
        device = mapping(raw)
        # v1beta1 nests a device's fields under `basic`.
        body = mapping(device.get("basic")) or device
        attributes: dict[str, Any] = {}
        for name, typed in mapping(body.get("attributes")).items():
            value = _attribute_value(typed)
            if value is not None:
                attributes[name if "/" in name else f"{driver}/{name}"] = value
        yield Device(
            pool=_pool_key(obj),
            name=text(device.get("name")),
            node=node,
            driver=driver,
            attributes=attributes,
            allow_multiple_allocations=body.get("allowMultipleAllocations") is True,
            consumes=tuple(
                (
                    text(mapping(raw).get("counterSet")),
                    tuple(sorted(_counters(mapping(raw).get("counters")).items())),
                )
                for raw in items(body.get("consumesCounters"))
            ),
        )


def _pool_key(obj: Mapping[str, Any]) -> str:
    spec = mapping(obj.get("spec"))
    return f"{text(spec.get('driver'))}/{text(get_path(spec, ('pool', 'name')))}"


def _attribute_value(typed: object) -> Any:
    """`{string: x}` / `{int: n}` / `{bool: b}` / `{version: v}` -> x / n / b / v."""
    for key in ("string", "int", "bool", "version"):
        value = mapping(typed).get(key)
        if key == "int" and isinstance(value, float) and value.is_integer():
            return int(value)  # Pulumi hands every number over as a float; CEL tells 0.0 from 0
        if isinstance(value, (str, int, float)):  # bool is an int; anything else the API server refuses
            return value
    return None


# --- CEL --------------------------------------------------------------------------------

_Outcome = Literal["true", "false", "missing", "unknown"]


# A selector is compiled for every device it is tried on: long ones (up to the 10 KiB the
# API server accepts) are kept too, a few, or each device compiles them again.  A compiled
# program is large (about 6 MiB for 10 KiB of CEL, measured), so few are kept.
@memo_short(maxsize=128, longer=CEL_SELECTOR_MAX_LENGTH, longer_maxsize=8)
def _program(expression: str) -> Any:
    import celpy

    if byte_length(expression) > CEL_SELECTOR_MAX_LENGTH:
        return None  # longer than the API server accepts (DRA002 says so): "unknown", not compiled
    environment = celpy.Environment()
    try:
        return environment.program(environment.compile(expression))
    except Exception:  # a parse failure is DRA002's to report; here it only means "unknown"
        return None


@memo_short(maxsize=4096, longer=CEL_SELECTOR_MAX_LENGTH, longer_maxsize=64)
def _referenced_domains(expression: str) -> tuple[str, ...]:
    return tuple(sorted({a or b for a, b in _DOMAIN_REFERENCE.findall(expression)}))


#: When selectors may no longer be evaluated (`time.monotonic()`), in this context; None:
#: whenever.  The webhook sets it to the review's deadline (`evaluations_until`).
_EVALUATE_UNTIL: ContextVar[float | None] = ContextVar("evaluate_until", default=None)


class EvaluationOverdue(Exception):
    """Selectors were still being evaluated at the deadline `evaluations_until` set."""


@contextmanager
def evaluations_until(deadline: float | None) -> Iterator[None]:
    """Within it, evaluating a selector on a device after `deadline` raises
    EvaluationOverdue, so that a caller with a deadline (the webhook, whose review thread
    keeps its slot until it ends) is not held past it by an inventory of thousands of
    devices; the rule fails, which the engine reports as an input error, never as a pass."""
    token = _EVALUATE_UNTIL.set(deadline)
    try:
        yield
    finally:
        _EVALUATE_UNTIL.reset(token)


class _Evaluator:
    """Evaluates selectors on devices, memoised per (expression, device)."""

    def __init__(self) -> None:
        self._results: dict[tuple[str, int], tuple[_Outcome, str]] = {}

    def evaluate(self, expression: str, device: Device) -> tuple[_Outcome, str]:
        key = (expression, id(device))
        cached = self._results.get(key)
        if cached is None:
            deadline = _EVALUATE_UNTIL.get()
            if deadline is not None and time.monotonic() > deadline:
                raise EvaluationOverdue(
                    "the deadline passed while its selectors were being evaluated on the devices of the "
                    "ResourceSlices given, so whether the claim can be allocated is not known"
                )
            cached = self._results[key] = _evaluate(expression, device)
        return cached


def _evaluate(expression: str, device: Device) -> tuple[_Outcome, str]:
    from celpy.adapter import json_to_cel
    from celpy.celtypes import BoolType
    from celpy.evaluation import CELEvalError

    program = _program(expression)
    if program is None:
        return "unknown", "the expression does not compile"
    try:
        # An attribute domain the device does not have is an empty map in the DRA environment.
        activation = {"device": json_to_cel(device.cel_device(_referenced_domains(expression)))}
        result = program.evaluate(activation)
    except CELEvalError as error:
        message = str(error.args[0]) if error.args else str(error)
        if any(marker in message for marker in _MISSING):
            return "missing", message
        return "unknown", message
    except Exception as error:  # cel-python lacks some DRA functions (semver, quantity)
        return "unknown", str(error)
    if isinstance(result, BoolType):
        return ("true" if bool(result) else "false"), ""
    if isinstance(result, CELEvalError):
        message = str(result.args[0]) if result.args else str(result)
        return ("missing" if any(marker in message for marker in _MISSING) else "unknown"), message
    return "unknown", f"the expression gives {type(result).__name__}, not a bool"


# --- requests ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Alternative:
    """One way to satisfy a top-level request: the request itself, or a firstAvailable entry."""

    #: "req" or "req/sub", as constraints and container claims name it.
    qualified_name: str
    device_class: str
    selectors: tuple[str, ...]
    mode: str
    count: int


@dataclass(frozen=True)
class Request:
    name: str
    alternatives: tuple[Alternative, ...]


def requests_of(views: Iterable[DeviceRequestView]) -> list[Request]:
    """Top-level requests in order, each with its alternatives (API defaults applied)."""
    grouped: dict[str, list[Alternative]] = {}
    for view in views:
        body = view.body
        selectors = cel_expressions(body.get("selectors"))
        mode = view.allocation_mode
        grouped.setdefault(view.request_name, []).append(
            Alternative(
                qualified_name=view.qualified_name,
                device_class=view.device_class,
                selectors=selectors,
                mode=mode if isinstance(mode, str) else "ExactCount",
                count=view.count or 1,
            )
        )
    return [Request(name, tuple(alternatives)) for name, alternatives in grouped.items()]


@dataclass(frozen=True)
class Constraint:
    #: Request names it covers ("req" covers every alternative of req); empty = all.
    requests: frozenset[str]
    attribute: str
    distinct: bool

    def covers(self, alternative: Alternative) -> bool:
        if not self.requests:
            return True
        top = alternative.qualified_name.partition("/")[0]
        return top in self.requests or alternative.qualified_name in self.requests


def constraints_of(devices: Mapping[str, Any]) -> list[Constraint]:
    result = []
    for raw in items(devices.get("constraints")):
        constraint = mapping(raw)
        names = frozenset(name for name in items(constraint.get("requests")) if isinstance(name, str))
        for key, distinct in (("matchAttribute", False), ("distinctAttribute", True)):
            attribute = constraint.get(key)
            if isinstance(attribute, str) and attribute:
                result.append(Constraint(names, attribute, distinct))
    return result


# --- the verdict ------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    status: Status
    #: Why it cannot be satisfied or decided; empty when satisfiable.
    reason: str = ""
    #: The node where it fits, when satisfiable.
    node: str | None = None


class _Undecided(Exception):
    pass


class _Aborted(Exception):
    """A selector error: the allocator aborts the whole claim."""


@dataclass
class Allocator:
    """Decides claims against one inventory; `classes` maps a DeviceClass name to its selectors."""

    inventory: Inventory
    classes: Mapping[str, Sequence[str]]
    _evaluator: _Evaluator = field(default_factory=_Evaluator)

    def candidates(self, alternative: Alternative, devices: Sequence[Device]) -> list[Device]:
        """Devices the class and the request's selectors both accept; raises _Aborted/_Undecided."""
        class_selectors = self.classes.get(alternative.device_class)
        if class_selectors is None:
            raise _Undecided(f"DeviceClass {alternative.device_class!r} is unknown (give it with the slices)")
        chosen = []
        for device in devices:
            if all(self._accepts(expression, device) for expression in (*class_selectors, *alternative.selectors)):
                chosen.append(device)
        return chosen

    def _accepts(self, expression: str, device: Device) -> bool:
        outcome, message = self._evaluator.evaluate(expression, device)
        if outcome == "missing":
            raise _Aborted(f"selector {expression!r} fails on device {device.label} ({message})")
        if outcome == "unknown":
            raise _Undecided(f"cannot evaluate {expression!r} here ({message})")
        return outcome == "true"

    def decide(self, requests: Sequence[Request], constraints: Sequence[Constraint]) -> Verdict:
        if not requests:
            return Verdict("satisfiable")
        if not self.inventory.nodes and not any(device.node is None for device in self.inventory.devices):
            return Verdict("unsatisfiable", "no ResourceSlice publishes any device")
        reasons: dict[str, list[str]] = {}
        undecided: str | None = None
        for node in self.inventory.nodes or [""]:
            devices = self.inventory.reachable_from(node)
            try:
                reason = self._fits(requests, constraints, devices)
            except _Aborted as aborted:
                return Verdict("unsatisfiable", f"allocation aborts: {aborted}")
            except _Undecided as why:
                undecided = undecided or str(why)
                continue
            if reason is None:
                return Verdict("satisfiable", node=node or None)
            reasons.setdefault(reason, []).append(node or "any node")
        if undecided is not None:
            return Verdict("undecided", undecided)
        reason = "; ".join(f"{_some(nodes)}: {reason}" for reason, nodes in reasons.items())
        if self.inventory.invalid_pools:
            skipped = ", ".join(f"{pool} ({why})" for pool, why in sorted(self.inventory.invalid_pools.items()))
            reason += f"; the allocator takes no device from invalid pools: {skipped}"
        return Verdict("unsatisfiable", reason)

    def _fits(
        self, requests: Sequence[Request], constraints: Sequence[Constraint], devices: Sequence[Device]
    ) -> str | None:
        """None when the claim fits on these devices, else why not (for the first alternative set)."""
        first_reason: str | None = None
        for choice in itertools.product(*(request.alternatives for request in requests)):
            candidates = [self.candidates(alternative, devices) for alternative in choice]
            reason = _assign(choice, candidates, constraints, self.inventory.counter_sets)
            if reason is None:
                return None
            first_reason = first_reason or reason
        return first_reason

    def pin_values(self, alternative: Alternative, attribute: str) -> set[Any]:
        """Values of `attribute` among every device, on any node, the request could get."""
        try:
            matched = self.candidates(alternative, self.inventory.devices)
        except (_Aborted, _Undecided):
            return set()
        return {device.attributes.get(attribute) for device in matched}


def _some(nodes: Sequence[str], shown: int = 3) -> str:
    """Node names for a message: a few, and how many more (a cluster has hundreds)."""
    more = len(nodes) - shown
    return ", ".join(nodes[:shown]) + (f" and {more} more" if more > 0 else "")


def _assign(
    choice: Sequence[Alternative],
    candidates: Sequence[list[Device]],
    constraints: Sequence[Constraint],
    counter_sets: Mapping[tuple[str, str], Counters] | None = None,
) -> str | None:
    """None when distinct devices meet every count, constraint and counter set, else why not."""
    for alternative, found in zip(choice, candidates, strict=True):
        needed = alternative.count if alternative.mode != "All" else max(len(found), 1)
        if len(found) < needed:
            return (
                f"request {alternative.qualified_name!r} needs {needed} device(s) of class "
                f"{alternative.device_class!r} matching its selectors, {len(found)} match"
            )
    relevant = [[constraint for constraint in constraints if constraint.covers(alternative)] for alternative in choice]
    counted = counter_sets if any(device.consumes for found in candidates for device in found) else None
    if _Search(choice, candidates, relevant, counted).run():
        return None
    if counted is not None and _Search(choice, candidates, relevant).run():
        return _why_counters_fail(choice, candidates)
    return _why_constraints_fail(choice, candidates, relevant)


class _Search:
    """Depth-first choice of devices, one slot per device a request needs."""

    def __init__(
        self,
        choice: Sequence[Alternative],
        candidates: Sequence[list[Device]],
        relevant: Sequence[Sequence[Constraint]],
        counter_sets: Mapping[tuple[str, str], Counters] | None = None,
    ) -> None:
        self.slots = [
            (index, found)
            for index, (alternative, found) in enumerate(zip(choice, candidates, strict=True))
            for _ in range(alternative.count if alternative.mode != "All" else len(found))
        ]
        self.relevant = relevant
        self.steps = 0
        self.used: set[int] = set()
        #: Per constraint (by identity): the value a matchAttribute fixed, the values a
        #: distinctAttribute has seen.
        self.fixed: dict[int, Any] = {}
        self.seen: dict[int, set[Any]] = {}
        #: The pools' counter sets (None: no candidate consumes counters), and what the devices
        #: chosen so far draw from each: (pool, set) -> counter -> amount.
        self.counter_sets = counter_sets
        self.consumed: dict[tuple[str, str], dict[str, Fraction]] = {}

    def run(self) -> bool:
        return self._place(0, 0)

    def _place(self, slot: int, start: int) -> bool:
        if slot == len(self.slots):
            return True
        request_index, found = self.slots[slot]
        # Devices of one request are interchangeable: choose them in increasing order.
        first = start if slot > 0 and self.slots[slot - 1][0] == request_index else 0
        for position in range(first, len(found)):
            self.steps += 1
            if self.steps > MAX_SEARCH_STEPS:
                raise _Undecided("the search for a fitting set of devices is too large to finish")
            device = found[position]
            if id(device) in self.used:
                continue
            undo: list[tuple[dict[int, Any] | dict[int, set[Any]], int, Any]] = []
            if self._admit(device, self.relevant[request_index], undo) and self._draw(device):
                self.used.add(id(device))
                if self._place(slot + 1, position + 1):
                    return True
                self.used.discard(id(device))
                self._return(device)
            for table, key, value in undo:
                if table is self.fixed:
                    del self.fixed[key]
                else:
                    self.seen[key].discard(value)
        return False

    def _draw(self, device: Device) -> bool:
        """Take the device's counters if every counter set still covers them (as
        checkAvailableCounters decides); False, with nothing taken, if one does not."""
        if self.counter_sets is None or not device.consumes:
            return True
        self._add(device, 1)
        for set_name, counters in device.consumes:
            available = self.counter_sets.get((device.pool, set_name), {})
            consumed = self.consumed[device.pool, set_name]
            for name, _ in counters:
                limit = available.get(name)
                if limit is not None and consumed[name] > limit:
                    self._add(device, -1)
                    return False
        return True

    def _return(self, device: Device) -> None:
        if self.counter_sets is not None and device.consumes:
            self._add(device, -1)

    def _add(self, device: Device, sign: int) -> None:
        for set_name, counters in device.consumes:
            consumed = self.consumed.setdefault((device.pool, set_name), {})
            for name, amount in counters:
                # An amount that is no quantity draws nothing: never a false "does not fit".
                consumed[name] = consumed.get(name, Fraction(0)) + sign * (amount or 0)

    def _admit(
        self,
        device: Device,
        constraints: Sequence[Constraint],
        undo: list[tuple[dict[int, Any] | dict[int, set[Any]], int, Any]],
    ) -> bool:
        for constraint in constraints:
            key = id(constraint)
            if constraint.attribute not in device.attributes:
                return False  # "a device which does not have that attribute will not be chosen"
            value = device.attributes[constraint.attribute]
            if constraint.distinct:
                values = self.seen.setdefault(key, set())
                if value in values:
                    return False
                values.add(value)
                undo.append((self.seen, key, value))
            elif key in self.fixed:
                if self.fixed[key] != value:
                    return False
            else:
                self.fixed[key] = value
                undo.append((self.fixed, key, value))
        return True


def _why_counters_fail(choice: Sequence[Alternative], candidates: Sequence[list[Device]]) -> str:
    """Why devices that meet every count and constraint still do not fit: their counter sets."""
    sets = sorted(
        {(device.pool, set_name) for found in candidates for device in found for set_name, _ in device.consumes}
    )
    shown = ", ".join(f"{name} (pool {pool})" for pool, name in sets[:3]) + (
        f" and {len(sets) - 3} more" if len(sets) > 3 else ""
    )
    wanted = " + ".join(
        f"{alternative.count if alternative.mode != 'All' else len(found)} for {alternative.qualified_name!r}"
        for alternative, found in zip(choice, candidates, strict=True)
    )
    return (
        f"the devices it needs ({wanted}) draw together more than the shared counters they consume from hold "
        f"({shown}): devices of a partitionable GPU that overlap (the same memory slices, or a partition and the "
        "whole GPU) are never allocated together"
    )


def _why_constraints_fail(
    choice: Sequence[Alternative], candidates: Sequence[list[Device]], relevant: Sequence[Sequence[Constraint]]
) -> str:
    """The most specific reason the search found, for the message."""
    for alternative, found, constraints in zip(choice, candidates, relevant, strict=True):
        needed = alternative.count if alternative.mode != "All" else len(found)
        for constraint in constraints:
            carrying = [device for device in found if constraint.attribute in device.attributes]
            kind = "distinctAttribute" if constraint.distinct else "matchAttribute"
            if len(carrying) < needed:
                return (
                    f"request {alternative.qualified_name!r} needs {needed} device(s) with {constraint.attribute} "
                    f"({kind}); {len(carrying)} of its {len(found)} candidate(s) publish it"
                )
            values = [device.attributes[constraint.attribute] for device in carrying]
            largest = len(set(values)) if constraint.distinct else max(values.count(value) for value in set(values))
            if largest < needed:
                relation = "different" if constraint.distinct else "one"
                return (
                    f"request {alternative.qualified_name!r} needs {needed} device(s) with {relation} "
                    f"{constraint.attribute} ({kind}); at most {largest} of its candidates do"
                )
    names = ", ".join(repr(alternative.qualified_name) for alternative in choice)
    return f"no set of distinct devices for {names} meets every constraint together"
