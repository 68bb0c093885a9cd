"""`dra-guard check --shard I/N --facts-out F` and `dra-guard merge F...`: one check spread
over the jobs of a CI matrix.

Every shard selects the same input (the same checkout, the same command line) and renders
its kustomizations, then checks its share of the parts (`assign`: the largest first, each
to the shard with the fewest bytes so far, ties by position; the same on every machine)
without resolving anything, and writes them to a facts file. `merge` reads every shard's
file, checks that they are the N shards of one input, one configuration, one dra-guard and
one day, takes the parts in input order and resolves them: its report is the one a single
`check` of everything writes, byte for byte.

A facts file is one line of JSON (what it is, for people and for `merge`) followed by the
parts, pickled; `merge` reads them with `dra_guard.distribute.codec`'s restricted reader.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from datetime import date
from enum import Enum
from typing import Any

from dra_guard import __version__
from dra_guard.contract.findings import Report, Unchecked
from dra_guard.distribute.codec import dump_part, dump_value, load_part, load_value
from dra_guard.distribute.pool import Done, Job, check_in_place, dispatchable, in_order, plan
from dra_guard.engine.run import Checker
from dra_guard.read.inputs import Inputs, Unit
from dra_guard.ruleapi.config import Config
from dra_guard.ruleapi.options import Secret

FORMAT = "dra-guard facts"
FORMAT_VERSION = 1


class FactsError(ValueError):
    """Facts files that cannot be merged; the message says which and why."""


@dataclass(frozen=True)
class Shard:
    """`--shard I/N`: the I-th (1-based) of N."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """`I/N` with 1 <= I <= N; ValueError saying what is wrong."""
        index, slash, count = text.partition("/")
        if not slash or not index.isdigit() or not count.isdigit():
            raise ValueError(f"--shard: {text!r} is not I/N (for example 1/4)")
        shard = cls(int(index), int(count))
        if not 1 <= shard.index <= shard.count:
            raise ValueError(f"--shard: {text!r}: I must be between 1 and N")
        return shard

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def assign(units: Sequence[Unit], sizes: Mapping[int, int], count: int) -> dict[int, int]:
    """The shard (0-based) of each unit, by position: largest first to the lightest shard."""
    load = [0] * count
    owner: dict[int, int] = {}
    for unit in sorted(units, key=lambda unit: (-sizes.get(unit.position, 0), unit.position)):
        lightest = min(range(count), key=lambda shard: (load[shard], shard))
        owner[unit.position] = lightest
        load[lightest] += max(1, sizes.get(unit.position, 0))
    return owner


def units_digest(units: Iterable[Unit]) -> str:
    """What identifies the input: every part, in order (the same checkout and command line
    give the same on every machine)."""
    digest = hashlib.sha256()
    for unit in units:
        digest.update(json.dumps([unit.position, unit.kind, unit.path, unit.found]).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def config_fingerprint(config: Config) -> str:
    """The configuration's values, canonically, hashed: secrets count only as set."""
    digest = hashlib.sha256(json.dumps(_canonical(dict(config.values)), sort_keys=True).encode("utf-8"))
    return digest.hexdigest()


def _canonical(value: Any) -> Any:
    if isinstance(value, Secret):
        return "<secret>"
    if isinstance(value, Mapping):
        return {str(key): _canonical(item) for key, item in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, set | frozenset):
        return sorted((_canonical(item) for item in value), key=repr)
    if isinstance(value, list | tuple):
        return [_canonical(item) for item in value]
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, date):
        return value.isoformat()
    if is_dataclass(value) and not isinstance(value, type):
        return [type(value).__name__, {item.name: _canonical(getattr(value, item.name)) for item in fields(value)}]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)


@dataclass
class UnitFacts:
    """One part of the input as a shard checked it."""

    position: int
    part: bytes
    files: int = 0
    skipped: list[str] = field(default_factory=list)
    unchecked: list[Unchecked] = field(default_factory=list)


def check_shard(inputs: Inputs, config: Config, shard: Shard, workers: int, today: date) -> bytes:
    """This shard's facts file: its share of the parts of `inputs`, checked, not resolved."""
    units = inputs.units()
    # What rendering the kustomizations counted, the same in every shard: merge takes shard 1's.
    prelude_files, prelude_unchecked = inputs.files, list(inputs.unchecked)
    jobs, file_sizes = plan(units)
    sizes = {job.position: size for job, size in zip(jobs, file_sizes, strict=True)}
    owner = assign(units, sizes, shard.count)
    mine = [unit for unit in units if owner[unit.position] == shard.index - 1]
    checked = {facts.position: facts for facts in _check(inputs, config, mine, sizes, workers)}
    header = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "dra-guard": __version__,
        "python": ".".join(map(str, sys.version_info[:2])),
        "shard": shard.index,
        "shards": shard.count,
        "input": units_digest(units),
        "parts": len(units),
        "configuration": config_fingerprint(config),
        "today": today.isoformat(),
    }
    body = {
        "errors": list(inputs.errors),
        "files": prelude_files,
        "unchecked": prelude_unchecked,
        "units": [checked[unit.position] for unit in mine],
    }
    return json.dumps(header, sort_keys=True).encode("utf-8") + b"\n" + dump_value(body)


def _check(
    inputs: Inputs, config: Config, units: Sequence[Unit], sizes: Mapping[int, int], workers: int
) -> list[UnitFacts]:
    """Each of `units` checked as a part: files by `workers` processes when there are several
    (`pool.in_order`)."""
    results: list[UnitFacts] = []
    local = Checker(config, part=True)
    planned = _jobs([unit for unit in units if dispatchable(unit)], sizes)
    with contextlib.closing(in_order(units, planned, workers, config, inputs.max_bytes)) as ordered:
        for unit, done in ordered:
            if done is not None:
                results.append(_unit_facts(done, []))
                continue
            before_files, before_skipped, before_unchecked = inputs.files, len(inputs.skipped), len(inputs.unchecked)
            check_in_place(local, inputs, unit)
            try:
                part = dump_part(local.take_part(), local.context)
            except Exception:  # pickle.PicklingError, TypeError, AttributeError
                part = None
            here = Done(unit.position, part, inputs.files - before_files, inputs.skipped[before_skipped:])
            results.append(_unit_facts(here, inputs.unchecked[before_unchecked:]))
    return results


def _jobs(units: Sequence[Unit], sizes: Mapping[int, int]) -> tuple[list[Job], list[int]]:
    jobs = [Job(unit.position, unit.path, unit.found) for unit in units]
    return jobs, [sizes.get(job.position, 0) for job in jobs]


def _unit_facts(done: Done, unchecked: list[Unchecked]) -> UnitFacts:
    if done.part is None:
        raise FactsError(
            f"part {done.position + 1} of the input cannot be written as facts: a rule's pending finding holds "
            "something that does not pickle (a closure of an extra rule module?); check it without --shard"
        )
    return UnitFacts(done.position, done.part, done.files, done.skipped, unchecked)


# --- merge ------------------------------------------------------------------------------


@dataclass
class _Facts:
    name: str
    header: dict[str, Any]
    payload: bytes


def _read(name: str, data: bytes) -> _Facts:
    line, newline, payload = data.partition(b"\n")
    try:
        header = json.loads(line) if newline else None
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise FactsError(f"{name}: not a dra-guard facts file (written by `dra-guard check --shard I/N --facts-out`)")
    if header.get("version") != FORMAT_VERSION or header.get("dra-guard") != __version__:
        raise FactsError(
            f"{name}: written by dra-guard {header.get('dra-guard')} (facts version {header.get('version')}); "
            f"this is dra-guard {__version__}: run every shard and the merge with the same dra-guard"
        )
    return _Facts(name, header, payload)


#: What every shard of one check has in common.
_SAME = ("shards", "input", "parts", "configuration", "today", "python")


def _one_check(read: Sequence[_Facts], config: Config) -> int:
    """The number of parts, once `read` is known to be every shard of one check."""
    if not read:
        raise FactsError("merge needs the facts files of every shard")
    first = read[0]
    for facts in read[1:]:
        for key in _SAME:
            if facts.header.get(key) != first.header.get(key):
                raise FactsError(
                    f"{facts.name} and {first.name} are not shards of one check: their {key} differ "
                    f"({facts.header.get(key)!r}, {first.header.get(key)!r}); run every shard on the same checkout, "
                    "command line, configuration and day"
                )
    count = first.header.get("shards")
    shards = sorted(str(facts.header.get("shard")) for facts in read)
    if not isinstance(count, int) or shards != sorted(str(index) for index in range(1, count + 1)):
        raise FactsError(f"merge needs each of the {count} shards once; got shards {', '.join(shards)}")
    if config_fingerprint(config) != first.header.get("configuration"):
        raise FactsError(
            "the configuration differs from the one the shards checked with: run merge with the same "
            "configuration file, --config, --slices and DRA_GUARD_TODAY"
        )
    parts = first.header.get("parts")
    if not isinstance(parts, int):
        raise FactsError(f"{first.name}: says nothing of the input's parts")
    return parts


@dataclass
class Merged:
    """The resolved report, and what reading the input counted."""

    report: Report
    files: int
    skipped: list[str]
    unchecked: list[Unchecked]


def merge(files: Sequence[tuple[str, bytes]], config: Config) -> Merged:
    """The report of the input the shards in `files` (name, bytes) checked, as one `check`
    of all of it writes; FactsError when they are not every shard of one check."""
    read = [_read(name, data) for name, data in files]
    parts = _one_check(read, config)
    checker = Checker(config)
    by_position: dict[int, UnitFacts] = {}
    first: dict[str, Any] = {}
    for facts in read:
        try:
            body = load_value(facts.payload, checker.context)
            units = body["units"]
            if not all(isinstance(unit, UnitFacts) for unit in units):
                raise TypeError("not every part is one")
        except Exception as problem:
            raise FactsError(f"{facts.name}: cannot be read ({type(problem).__name__}: {problem})") from None
        if facts.header.get("shard") == 1:
            first = body
        by_position.update((unit.position, unit) for unit in units)
    if sorted(by_position) != list(range(parts)):
        raise FactsError(f"the shards hold {len(by_position)} of the input's {parts} parts")
    for input_error in first["errors"]:
        checker.add_error(input_error)
    merged = Merged(checker.report, int(first["files"]), [], list(first["unchecked"]))
    for position in range(parts):
        unit = by_position.pop(position)
        checker.add_part(load_part(unit.part, checker.context))
        merged.files += unit.files
        merged.skipped.extend(unit.skipped)
        merged.unchecked.extend(unit.unchecked)
    merged.report = checker.finish()
    return merged
