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

Not modelled: devices already allocated to other claims, consumable capacity, counters of
partitionable devices, taints, node selectors of network-attached pools (treated as
reachable everywhere).  Each of those can only make a claim that fits here fail in a real
cluster, never the reverse, so "unsatisfiable" is never a false alarm about the slices
given; where cel-python cannot evaluate an expression the verdict is "undecided".
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from dra_guard.manifest import DeviceRequestView, get_path, items, mapping, text

#: Search steps one claim may take before the verdict is "undecided" (a bound, not a limit
#: real claims reach: a claim for 8 of 64 candidate devices needs a few hundred).
MAX_SEARCH_STEPS = 200_000
_DOMAIN_REFERENCE = re.compile(r"""device\.attributes\[\s*(?:'([^'\\]*)'|"([^"\\]*)")\s*\]""")
_MISSING = ("no such member", "no such key")

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


@dataclass
class Inventory:
    """The devices of a set of ResourceSlices, by node."""

    devices: list[Device] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    #: Slices that could not be read, as "<slice>: why".
    problems: list[str] = field(default_factory=list)

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
        #: pool -> generation -> slice name -> (its devices, its node or None).
        self._pools: dict[str, dict[int, dict[str, tuple[list[Device], str | None]]]] = {}
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
        held[name] = (part.devices, next(iter(nodes), None))
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
        for generations in self._pools.values():
            for devices, node in generations[max(generations)].values():
                inventory.devices.extend(devices)
                if node is not None:
                    nodes.add(node)
        inventory.nodes = sorted(nodes)
        return inventory


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


@lru_cache(maxsize=1024)
def _program(expression: str) -> Any:
    import celpy

    environment = celpy.Environment()
    try:
        return environment.program(environment.compile(expression))
    except Exception:  # a parse failure is DRA002's to report; here it only means "unknown"
        return None


@lru_cache(maxsize=4096)
def _referenced_domains(expression: str) -> tuple[str, ...]:
    return tuple(sorted({a or b for a, b in _DOMAIN_REFERENCE.findall(expression)}))


class _Evaluator:
    """Evaluates selectors on devices, memoised per (expression, device)."""

    def __init__(self) -> None:
        self._results: dict[tuple[str, int], tuple[_Outcome, str]] = {}

    def evaluate(self, expression: str, device: Device) -> tuple[_Outcome, str]:
        key = (expression, id(device))
        cached = self._results.get(key)
        if cached is None:
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
        selectors = tuple(
            expression
            for selector in items(body.get("selectors"))
            if isinstance(expression := get_path(selector, ("cel", "expression")), str)
        )
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
        return Verdict("unsatisfiable", "; ".join(f"{_some(nodes)}: {reason}" for reason, nodes in reasons.items()))

    def _fits(
        self, requests: Sequence[Request], constraints: Sequence[Constraint], devices: Sequence[Device]
    ) -> str | None:
        """None when the claim fits on these devices, else why not (for the first alternative set)."""
        first_reason: str | None = None
        for choice in itertools.product(*(request.alternatives for request in requests)):
            candidates = [self.candidates(alternative, devices) for alternative in choice]
            reason = _assign(choice, candidates, constraints)
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
    choice: Sequence[Alternative], candidates: Sequence[list[Device]], constraints: Sequence[Constraint]
) -> str | None:
    """None when distinct devices meet every count and constraint, else why not."""
    for alternative, found in zip(choice, candidates, strict=True):
        needed = alternative.count if alternative.mode != "All" else max(len(found), 1)
        if len(found) < needed:
            return (
                f"request {alternative.qualified_name!r} needs {needed} device(s) of class "
                f"{alternative.device_class!r} matching its selectors, {len(found)} match"
            )
    relevant = [[constraint for constraint in constraints if constraint.covers(alternative)] for alternative in choice]
    if _Search(choice, candidates, relevant).run():
        return None
    return _why_constraints_fail(choice, candidates, relevant)


class _Search:
    """Depth-first choice of devices, one slot per device a request needs."""

    def __init__(
        self,
        choice: Sequence[Alternative],
        candidates: Sequence[list[Device]],
        relevant: Sequence[Sequence[Constraint]],
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
            if self._admit(device, self.relevant[request_index], undo):
                self.used.add(id(device))
                if self._place(slot + 1, position + 1):
                    return True
                self.used.discard(id(device))
            for table, key, value in undo:
                if table is self.fixed:
                    del self.fixed[key]
                else:
                    self.seen[key].discard(value)
        return False

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
