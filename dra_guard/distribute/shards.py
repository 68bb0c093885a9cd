"""`dra-guard check --shard I/N --facts-out F` and `dra-guard merge F...`: one check spread
over the jobs of a CI matrix.

Every shard selects the same input (the same checkout, the same command line) and renders
its kustomizations, then checks its share of the parts (`assign`: the largest first, each
to the shard with the fewest bytes so far, ties by position; the same on every machine)
without resolving anything, and writes them to a facts file. `merge` reads every shard's
file, checks that they are the N shards of one input, one configuration, one dra-guard and
one day, takes the parts in input order and resolves them: its report is the one a single
`check` of everything writes, byte for byte.

A facts file is one line of JSON (what it is, for people and for `merge`, with the SHA-256
of the rest) followed by the parts, pickled; `merge` refuses a file whose checksum or header
does not hold and reads the parts with `dra_guard.distribute.codec`'s restricted reader.
The checksum finds damage, not forgery: facts are as trustworthy as the artifact store
that carries them between CI jobs (README, "Large inputs").
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import heapq
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from dra_guard import __version__
from dra_guard.contract.findings import InputError, Report, Unchecked
from dra_guard.distribute.codec import dump_part, dump_value, load_part, load_value
from dra_guard.distribute.facts_file import FORMAT, FORMAT_VERSION, HEADER_KEYS
from dra_guard.distribute.fingerprint import config_fingerprint, input_digest
from dra_guard.distribute.pool import Done, Job, check_in_place, dispatchable, in_order, plan
from dra_guard.engine.run import Checker
from dra_guard.read.inputs import Inputs, Unit
from dra_guard.ruleapi.config import Config

#: The most shards of one check: more than any CI matrix runs (GitHub Actions: 256 jobs).
MAX_SHARDS = 10_000
_SHARD = re.compile(r"([0-9]+)/([0-9]+)", re.ASCII)
#: The Python that writes and reads facts: pickles of one release are read by the same.
_PYTHON = ".".join(map(str, sys.version_info[:2]))


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
        matched = _SHARD.fullmatch(text)
        if matched is None:
            raise ValueError(f"--shard: {text!r} is not I/N (for example 1/4)")
        shard = cls(int(matched[1]), int(matched[2]))
        if not 1 <= shard.index <= shard.count:
            raise ValueError(f"--shard: {text!r}: I must be between 1 and N")
        if shard.count > MAX_SHARDS:
            raise ValueError(f"--shard: {text!r}: N may be at most {MAX_SHARDS:,}")
        return shard

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def assign(units: Sequence[Unit], sizes: Mapping[int, int], count: int) -> dict[int, int]:
    """The shard (0-based) of each unit, by position: largest first to the lightest shard
    (ties: the lowest), kept in a heap of (load, shard)."""
    lightest_first = [(0, shard) for shard in range(count)]
    owner: dict[int, int] = {}
    for unit in sorted(units, key=lambda unit: (-sizes.get(unit.position, 0), unit.position)):
        load, lightest = lightest_first[0]
        owner[unit.position] = lightest
        heapq.heapreplace(lightest_first, (load + max(1, sizes.get(unit.position, 0)), lightest))
    return owner


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
        "python": _PYTHON,
        "shard": shard.index,
        "shards": shard.count,
        "input": input_digest(units, inputs.max_bytes),
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
    payload = dump_value(body)
    header["sha256"] = hashlib.sha256(payload).hexdigest()
    assert header.keys() == HEADER_KEYS  # what a walk tells a facts file by (facts_file.py)
    return json.dumps(header, sort_keys=True).encode("utf-8") + b"\n" + payload


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
    jobs = [Job(unit.position, unit.path, unit.found, unit.in_chart) for unit in units]
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
    except (ValueError, RecursionError):
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise FactsError(f"{name}: not a dra-guard facts file (written by `dra-guard check --shard I/N --facts-out`)")
    if header.get("version") != FORMAT_VERSION or header.get("dra-guard") != __version__:
        raise FactsError(
            f"{name}: written by dra-guard {header.get('dra-guard')} (facts version {header.get('version')}); "
            f"this is dra-guard {__version__}: run every shard and the merge with the same dra-guard"
        )
    _check_header(name, header)
    if header["python"] != _PYTHON:
        raise FactsError(
            f"{name}: written under Python {header['python']}; this merge runs under Python {_PYTHON}: "
            "run every shard and the merge with the same Python"
        )
    if hashlib.sha256(payload).hexdigest() != header["sha256"]:
        raise FactsError(
            f"{name}: damaged: what it holds does not match the checksum its shard wrote "
            "(an artifact cut short or changed after it was written)"
        )
    return _Facts(name, header, payload)


def _check_header(name: str, header: dict[str, Any]) -> None:
    """FactsError unless each field of the header has its type and range (a hand-edited
    header must not reach the code that counts shards and parts)."""

    def number(key: str) -> int:
        value = header.get(key)
        if value.__class__ is not int:
            raise FactsError(f"{name}: its header is damaged ({key}: {value!r})")
        return int(value)

    for key in ("python", "input", "configuration", "today", "sha256"):
        if not isinstance(header.get(key), str):
            raise FactsError(f"{name}: its header is damaged ({key}: {header.get(key)!r})")
    index, count, parts = number("shard"), number("shards"), number("parts")
    if not 1 <= index <= count <= MAX_SHARDS or parts < 0:
        raise FactsError(f"{name}: its header is damaged (shard {index} of {count}, {parts} parts)")
    try:
        date.fromisoformat(header["today"])
    except ValueError:
        raise FactsError(f"{name}: its header is damaged (today: {header['today']!r})") from None


#: What every shard of one check has in common.
_SAME = ("shards", "input", "parts", "configuration", "today", "python")


def _one_check(read: Sequence[_Facts], config: Config) -> int:
    """The number of parts, once `read` is known to be every shard of one check."""
    if not read:
        raise FactsError("merge needs the facts files of every shard")
    first = read[0]
    for facts in read[1:]:
        for key in _SAME:
            if facts.header[key] != first.header[key]:
                what = _DIFFERING.get(key, key)
                raise FactsError(
                    f"{facts.name} and {first.name} are not shards of one check: their {what} differ "
                    f"({facts.header[key]!r}, {first.header[key]!r}); run every shard on the same checkout, "
                    "command line, configuration and day"
                )
    count = first.header["shards"]
    shards = sorted(facts.header["shard"] for facts in read)
    if shards != list(range(1, count + 1)):
        raise FactsError(f"merge needs each of the {count} shards once; got shards {', '.join(map(str, shards))}")
    if config_fingerprint(config) != first.header["configuration"]:
        raise FactsError(
            "the configuration differs from the one the shards checked with: run merge with the same "
            "configuration file, --config and --slices"
        )
    return int(first.header["parts"])


#: How a difference between two shards' headers is named.
_DIFFERING = {"input": "inputs (the files, their order or their contents)"}


def _shards_day(read: Sequence[_Facts], config: Config) -> Config:
    """`config` on the day the shards checked: waivers expire by it.  DRA_GUARD_TODAY, when
    set for the merge, must be that day."""
    day = date.fromisoformat(read[0].header["today"])
    if config.today is not None and config.today != day:
        raise FactsError(
            f"DRA_GUARD_TODAY is {config.today.isoformat()} here, and the shards checked on {day.isoformat()}: "
            "merge with the shards' day (unset DRA_GUARD_TODAY, or set it as the shards had it)"
        )
    return dataclasses.replace(config, today=day)


@dataclass
class Merged:
    """The resolved report, and what reading the input counted."""

    report: Report
    files: int
    skipped: list[str]
    unchecked: list[Unchecked]


def merge(files: Sequence[tuple[str, bytes]], config: Config) -> Merged:
    """The report of the input the shards in `files` (name, bytes) checked, as one `check`
    of all of it writes; FactsError when they are not every shard of one check, or one of
    them cannot be read."""
    read = [_read(name, data) for name, data in files]
    parts = _one_check(read, config)
    checker = Checker(_shards_day(read, config))
    by_position: dict[int, tuple[str, UnitFacts]] = {}
    first: dict[str, Any] = {}
    for facts in read:
        try:
            body = _body(load_value(facts.payload, checker.context), parts)
        except Exception as problem:
            raise FactsError(f"{facts.name}: cannot be read ({type(problem).__name__}: {problem})") from None
        for unit in body["units"]:
            if unit.position in by_position:
                raise FactsError(
                    f"{facts.name} and {by_position[unit.position][0]} both hold part {unit.position + 1} of the input"
                )
            by_position[unit.position] = (facts.name, unit)
        if facts.header["shard"] == 1:
            first = body
    if len(by_position) != parts:  # each position is in range(parts) (`_body`), and held once
        raise FactsError(f"the shards hold {len(by_position)} of the input's {parts} parts")
    for input_error in first["errors"]:
        checker.add_error(input_error)
    merged = Merged(checker.report, first["files"], [], list(first["unchecked"]))
    for position in range(parts):
        name, unit = by_position.pop(position)
        try:
            checker.add_part(load_part(unit.part, checker.context))
        except Exception as problem:
            raise FactsError(
                f"{name}: part {position + 1} of the input cannot be read ({type(problem).__name__}: {problem})"
            ) from None
        merged.files += unit.files
        merged.skipped.extend(unit.skipped)
        merged.unchecked.extend(unit.unchecked)
    merged.report = checker.finish()
    return merged


def _body(body: Any, parts: int) -> dict[str, Any]:
    """A shard's facts, once each field is known to have its type (TypeError: it has not)."""
    if not isinstance(body, dict):
        raise TypeError("not a shard's facts")
    errors, files, unchecked, units = body.get("errors"), body.get("files"), body.get("unchecked"), body.get("units")
    if not (isinstance(errors, list) and all(isinstance(error, InputError) for error in errors)):
        raise TypeError("its input errors are not a list of them")
    if files.__class__ is not int or not (isinstance(unchecked, list) and _all(unchecked, Unchecked)):
        raise TypeError("what it counted is not a count and a list")
    if not (isinstance(units, list) and _all(units, UnitFacts)):
        raise TypeError("not every part is one")
    for unit in units:
        if not (
            unit.position.__class__ is int
            and 0 <= unit.position < parts
            and isinstance(unit.part, bytes)
            and unit.files.__class__ is int
            and isinstance(unit.skipped, list)
            and _all(unit.skipped, str)
            and isinstance(unit.unchecked, list)
            and _all(unit.unchecked, Unchecked)
        ):
            raise TypeError(f"a part's fields are not what a shard writes ({unit.position!r})")
    return body


def _all(values: list[Any], kind: type) -> bool:
    return all(isinstance(value, kind) for value in values)
