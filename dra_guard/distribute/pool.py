"""`dra-guard check --jobs N`: the input's files read and checked in N worker processes.

Files are dealt to the workers largest first, in batches, so that the big files start
early and the small ones fill the gaps; each worker returns one part per file
(`dra_guard.engine.run.Checker.take_part`, as bytes: `codec`).  This process takes the
parts in input order, checks what only it can read (standard input, what kustomizations
rendered, Helm charts) in its place, and resolves the pending findings: the report is the
one `--jobs 1` writes, byte for byte, whatever N or the order the workers finish in.

A part whose pending findings do not pickle (a closure from an extra rule module) is
checked again here, in its place; a worker that dies (a signal) leaves an input error for
each file of its batch. Nothing is skipped silently.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dra_guard.contract.findings import InputError, Report
from dra_guard.engine.run import Checker, check_stream
from dra_guard.kubectl_yaml.fast import expect_many_documents, holding_stderr
from dra_guard.read.inputs import FILE, Inputs, Unit, file_items
from dra_guard.read.loader import display_name
from dra_guard.read.walk import STDIN
from dra_guard.ruleapi.config import Config

if TYPE_CHECKING:
    from concurrent.futures import Future

# multiprocessing, concurrent.futures and pickle are imported only by a check that starts
# workers: a small check pays nothing for them (tests/test_cold_start.py).

#: Below this many bytes of files, a check stays in one process: starting the workers
#: costs more than they save (tests/test_cold_start.py holds one small file's check).
PARALLEL_MIN_BYTES = 2 << 20
#: A batch holds about 1/(workers x this) of the bytes not yet dealt, between the bounds
#: below: batches shrink as the input runs out (guided scheduling), so that few bytes are
#: left to one worker while the others have finished, and the first batches cost little.
BATCHES_PER_WORKER = 4
BATCH_MIN_BYTES = 256 << 10
BATCH_MAX_BYTES = 8 << 20
BATCH_MAX_FILES = 512


@dataclass(frozen=True)
class Job:
    """A file for a worker: its place in the input, its path, whether a walk found it."""

    position: int
    path: str
    found: bool


@dataclass
class Done:
    """What a worker made of one file: its part as bytes (None when it did not pickle: the
    file is checked again in the parent), and what reading it counted."""

    position: int
    part: bytes | None
    files: int
    skipped: list[str] = field(default_factory=list)


class _Tally:
    def __init__(self) -> None:
        self.files = 0
        self.skipped: list[str] = []


# --- the worker side ------------------------------------------------------------------


class _Worker:
    checker: Checker | None = None
    max_bytes = 0


def _start_worker(config: Config, max_bytes: int) -> None:
    import gc

    gc.set_threshold(100_000, 50, 100)  # as the CLI sets it for a check (dra_guard.cli.main)
    # A worker exists because the input is large: the first files' documents too are worth
    # the fast reader's import (5 ms), which the parent never needed.
    expect_many_documents()
    _Worker.checker = Checker(config, part=True)
    _Worker.max_bytes = max_bytes


def check_files(jobs: Sequence[Job]) -> list[Done]:
    """A worker's batch: each file read and checked as one part."""
    checker = _Worker.checker
    assert checker is not None, "the worker was not started with _start_worker"
    done: list[Done] = []
    with holding_stderr():
        for job in jobs:
            done.append(_check_file(checker, job))
    return done


def _check_file(checker: Checker, job: Job) -> Done:
    tally = _Tally()
    checker.begin_part(job.position)
    for item in file_items(job.path, job.found, _Worker.max_bytes, tally):
        checker.feed(item)
    part = checker.take_part()
    try:
        data: bytes | None = _dump(part, checker)
    except Exception:  # pickle.PicklingError, TypeError, AttributeError: checked again in order
        data = None
    return Done(job.position, data, tally.files, tally.skipped)


# --- the parent side ------------------------------------------------------------------


def batches(jobs: Sequence[Job], sizes: Sequence[int], workers: int) -> list[list[Job]]:
    """`jobs` in batches, largest files first, each batch a share of what is left (see
    BATCHES_PER_WORKER): the last batches are the smallest."""
    left = sum(sizes)
    order = sorted(range(len(jobs)), key=lambda index: (-sizes[index], jobs[index].position))
    result: list[list[Job]] = []
    batch: list[Job] = []
    held = target = 0
    for index in order:
        if not batch:
            target = min(BATCH_MAX_BYTES, max(BATCH_MIN_BYTES, left // (workers * BATCHES_PER_WORKER)))
        batch.append(jobs[index])
        held += sizes[index]
        if held >= target or len(batch) >= BATCH_MAX_FILES:
            result.append(batch)
            left -= held
            batch, held = [], 0
    if batch:
        result.append(batch)
    return result


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0  # read (and reported) by the worker like any file


def dispatchable(unit: Unit) -> bool:
    """Whether a worker may read the unit: a file, not standard input."""
    return unit.kind == FILE and unit.path != STDIN


def plan(units: Sequence[Unit]) -> tuple[list[Job], list[int]]:
    """The files of `units` a worker may read, and their sizes."""
    jobs = [Job(unit.position, unit.path, unit.found) for unit in units if dispatchable(unit)]
    return jobs, [_size(job.path) for job in jobs]


def worth_it(sizes: Sequence[int], workers: int) -> bool:
    """Whether spreading these files over `workers` processes can pay."""
    return workers > 1 and len(sizes) > 1 and sum(sizes) >= PARALLEL_MIN_BYTES


def _dump(part: Any, checker: Checker) -> bytes:
    from dra_guard.distribute.codec import dump_part

    return dump_part(part, checker.context)


def _context() -> Any:
    import multiprocessing

    # fork: the workers start with the rules imported and nothing to unpickle but the
    # configuration. Elsewhere (macOS, Windows) spawn, which imports them again.
    method = "fork" if sys.platform == "linux" else "spawn"
    return multiprocessing.get_context(method)


class Workers:
    """A pool of worker processes checking batches of files."""

    def __init__(self, config: Config, max_bytes: int, workers: int) -> None:
        from concurrent.futures import ProcessPoolExecutor

        self._pool = ProcessPoolExecutor(
            max_workers=workers, mp_context=_context(), initializer=_start_worker, initargs=(config, max_bytes)
        )

    def submit(self, batched: Sequence[Sequence[Job]]) -> list[tuple[Sequence[Job], Future[list[Done]]]]:
        """Every batch submitted, in this order (the largest files first)."""
        return [(batch, self._pool.submit(check_files, batch)) for batch in batched]

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _collect(batch: Sequence[Job], future: Future[list[Done]]) -> dict[int, Done]:
    from concurrent.futures.process import BrokenProcessPool

    try:
        return {done.position: done for done in future.result()}
    except BrokenProcessPool as error:
        return {job.position: _died(job, f"the worker process checking this file stopped ({error})") for job in batch}
    except Exception as error:  # a worker's own failure, not a file's (those are input errors)
        reason = f"the worker process checking this file failed ({type(error).__name__}: {error})"
        return {job.position: _died(job, reason) for job in batch}


def _died(job: Job, reason: str) -> Done:
    """A file whose worker died or failed: an input error in its place, never a silent gap."""
    problem = InputError(display_name(job.path), None, f"{reason}; not checked")
    checker = Checker(part=True)
    checker.add_error(problem)
    return Done(job.position, _dump(checker.take_part(), checker), 1)


def check_units(
    inputs: Inputs, units: Sequence[Unit], workers: int, checker: Checker, planned: tuple[list[Job], list[int]]
) -> Checker:
    """Every unit checked into `checker` in input order, its files (`planned`) by `workers`
    processes (`inputs` counts what was read); the checker is returned unfinished."""
    jobs, sizes = planned
    done: dict[int, Done] = {}
    pool = Workers(checker.config, inputs.max_bytes, workers) if jobs and workers > 1 else None
    try:
        waiting = iter(pool.submit(batches(jobs, sizes, workers)) if pool is not None else ())
        for unit in units:
            if pool is None or not dispatchable(unit):
                checker.begin_part(unit.position)
                for item in inputs.items(unit):
                    checker.feed(item)
                continue
            while unit.position not in done:
                done.update(_collect(*next(waiting)))
            _take(checker, inputs, unit, done.pop(unit.position))
    finally:
        if pool is not None:
            pool.close()
    return checker


def _take(checker: Checker, inputs: Inputs, unit: Unit, result: Done) -> None:
    if result.part is None:  # it did not pickle: checked here, in its place, as one process would
        checker.begin_part(unit.position)
        for item in inputs.items(unit):
            checker.feed(item)
        return
    from dra_guard.distribute.codec import load_part

    checker.add_part(load_part(result.part, checker.context))
    inputs.files += result.files
    inputs.skipped.extend(result.skipped)


def check_inputs(inputs: Inputs, config: Config, workers: int) -> Report:
    """The report of `inputs`, with up to `workers` processes reading and checking files:
    `check_stream`'s, byte for byte.  One process when `workers` is 1 or the files are too
    few or small to pay for more (`worth_it`)."""
    if workers <= 1:
        return check_stream(inputs, config)
    checker = Checker(config)
    for error in inputs.errors:
        checker.add_error(error)
    units = inputs.units()
    planned = plan(units)
    return check_units(inputs, units, workers if worth_it(planned[1], workers) else 1, checker, planned).finish()
