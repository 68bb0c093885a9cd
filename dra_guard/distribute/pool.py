"""`dra-guard check --jobs N`: the input's files read and checked by N processes, this one
and N - 1 workers.

This process takes the files in input order from the front, the workers take them from
the back, in batches (`Claims`): they meet wherever their speeds put the boundary, so no
process waits for another but for the last batch, and on N cores N processes, not N + 1,
share them.  What this process checks needs no pickling at all.  Each worker returns one
part per file (`dra_guard.engine.run.Checker.take_part`, as bytes: `codec`), which this
process takes in its place in input order, after its own files, as it does what only it
can read (standard input, what kustomizations rendered, Helm charts) and the pending
findings: the report is the one `--jobs 1` writes, byte for byte, whatever N or the order
the workers finish in.

A part whose pending findings do not pickle (a closure from an extra rule module) is
checked again here, in its place.  A worker that dies (a signal, the OOM killer) stops the
pool: each file the workers had taken and not returned gets an input error, and this
process checks the files no worker took.  Nothing is skipped silently.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dra_guard.contract.findings import InputError, Report
from dra_guard.engine.run import Checker, check_stream
from dra_guard.kubectl_yaml.fast import holding_stderr, read_fast_from_start, reads_fast_from_start
from dra_guard.read.inputs import FILE, Inputs, Unit, file_items
from dra_guard.read.loader import display_name
from dra_guard.read.walk import STDIN, file_size
from dra_guard.ruleapi.config import Config

if TYPE_CHECKING:
    from concurrent.futures import Future

# multiprocessing, concurrent.futures and pickle are imported only by a check that starts
# workers: a small check pays nothing for them (tests/test_cold_start.py).

#: Below this many bytes of files, a check stays in one process: starting the workers
#: costs more than they save (tests/test_cold_start.py holds one small file's check).
PARALLEL_MIN_BYTES = 2 << 20
#: A worker's batch holds about 1/(processes x this) of the bytes not yet taken, between
#: the bounds below: batches shrink as the input runs out (guided scheduling), so that a
#: process seldom waits long for the last one, and the first batches cost little.
BATCHES_PER_WORKER = 4
BATCH_MIN_BYTES = 256 << 10
BATCH_MAX_BYTES = 8 << 20
BATCH_MAX_FILES = 512
#: How long this process waits for the lock of the two ends before it takes it to be held
#: by a worker that was killed (a worker holds it for microseconds).
LOCK_WAIT_SECONDS = 30.0


@dataclass(frozen=True)
class Job:
    """A file for a worker: its place in the input, its path, whether a walk found it."""

    position: int
    path: str
    found: bool
    #: Found in a Helm chart's folder (`Unit.in_chart`).
    in_chart: bool = False


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


class Claims:
    """The files of a check still to take, from both ends: this process takes them one at
    a time from the front, in input order; the workers take batches from the back.  Both
    ends are in shared memory, under one lock (a fork inherits them; a spawned worker gets
    them as it starts)."""

    def __init__(self, context: Any, jobs: Sequence[Job], sizes: Sequence[int], processes: int) -> None:
        self.jobs = list(jobs)
        #: The bytes of jobs[:index], for the bytes left between the ends.
        self._before = list(itertools.accumulate(sizes, initial=0))
        #: The processes that take files: the workers and this one.
        self._processes = processes
        self._ends = context.Array("q", [0, len(self.jobs)])

    def take_front(self, index: int) -> bool:
        """Whether this process takes jobs[index], the next in input order; False once
        the ends have met (a worker took it, or will have checked it)."""
        with self._locked() as ends:
            if ends[0] == index < ends[1]:
                ends[0] = index + 1
                return True
        return False

    def stop(self) -> None:
        """No worker takes another file (a check stopped early)."""
        with self._locked() as ends:
            ends[1] = ends[0]

    @contextlib.contextmanager
    def _locked(self) -> Iterator[Any]:
        """The two ends, under their lock.  A worker holds it for microseconds; one killed
        while holding it (the pool stops the others when one dies, with SIGTERM) would
        hold it for ever: after LOCK_WAIT_SECONDS this process goes on without it (the
        workers are gone by then; a worker's one write, an end, is a single store)."""
        lock = self._ends.get_lock()
        held = lock.acquire(timeout=LOCK_WAIT_SECONDS)
        try:
            yield self._ends.get_obj()
        finally:
            if held:
                lock.release()

    def take_back(self) -> list[Job]:
        """A worker's next batch, from the back: about 1/(processes x BATCHES_PER_WORKER)
        of the bytes left between the ends, within the bounds (guided scheduling); none once
        the ends have met."""
        before = self._before
        with self._locked() as ends:
            front, back = ends[0], ends[1]
            left = before[back] - before[front]
            target = min(BATCH_MAX_BYTES, max(BATCH_MIN_BYTES, left // (self._processes * BATCHES_PER_WORKER)))
            start = back
            while start > front and back - start < BATCH_MAX_FILES and before[back] - before[start] < target:
                start -= 1
            ends[1] = start
        return self.jobs[start:back]

    def left(self) -> int:
        """How many files no process has taken yet."""
        with self._locked() as ends:
            return int(ends[1] - ends[0])

    def taken_from_back(self) -> int:
        """The index of the first job a worker took (len(jobs): none)."""
        with self._locked() as ends:
            return int(ends[1])


class _Worker:
    checker: Checker | None = None
    max_bytes = 0
    claims: Claims | None = None


def _start_worker(config: Config, max_bytes: int, claims: Claims, fast_from_start: bool, parent: int) -> None:
    import gc

    _die_with(parent)
    gc.set_threshold(100_000, 50, 100)  # as the CLI sets it for a check (dra_guard.cli.main)
    # Each document gets the reader the parent would give it (fast.read_fast_when_large).
    if fast_from_start:
        read_fast_from_start()
    _Worker.checker = Checker(config, part=True)
    _Worker.max_bytes = max_bytes
    _Worker.claims = claims


def _die_with(parent: int) -> None:
    """On Linux, this worker is killed when the check's process dies (SIGTERM, SIGHUP,
    SIGKILL: nothing of it runs to stop the pool).  Left alone, a worker would finish its
    files and then wait forever to hand them over, holding the check's stdout and stderr
    open: a caller that kills a check and reads its output would hang."""
    if sys.platform != "linux":
        return
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # no prctl: the parent's own clean-up is all there is
        return
    if os.getppid() != parent:  # it died before prctl took
        os._exit(1)


#: prctl(2)'s option: the signal this process gets when the thread that forked it ends.
_PR_SET_PDEATHSIG = 1


def check_taken() -> list[Done]:
    """A worker's task in a check (`in_order`): batches taken from the back and checked
    until the ends meet, returned together.  One task a worker, none left to cancel:
    Python 3.10 and 3.11 lose a pool whose worker dies while a cancelled task waits
    (its manager thread fails, CPython gh-107219, and leaves the others running)."""
    claims = _Worker.claims
    assert claims is not None, "the worker was not started with _start_worker"
    done: list[Done] = []
    while batch := claims.take_back():
        done += check_files(batch)
    return done


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
    for item in file_items(job.path, job.found, _Worker.max_bytes, tally, in_chart=job.in_chart):
        checker.feed(item)
    part = checker.take_part()
    try:
        data: bytes | None = _dump(part, checker)
    except Exception:  # pickle.PicklingError, TypeError, AttributeError: checked again in order
        data = None
    return Done(job.position, data, tally.files, tally.skipped)


# --- the parent side ------------------------------------------------------------------


def dispatchable(unit: Unit) -> bool:
    """Whether a worker may read the unit: a file, not standard input."""
    return unit.kind == FILE and unit.path != STDIN


def plan(units: Sequence[Unit]) -> tuple[list[Job], list[int]]:
    """The files of `units` a worker may read, and their sizes."""
    jobs = [Job(unit.position, unit.path, unit.found, unit.in_chart) for unit in units if dispatchable(unit)]
    return jobs, [file_size(job.path) for job in jobs]


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
    """A pool of worker processes checking batches of files taken from the back of a
    check's `Claims` (`submit_taken`)."""

    def __init__(self, config: Config, max_bytes: int, workers: int, claims: Claims) -> None:
        from concurrent.futures import ProcessPoolExecutor

        self._pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=_context(),
            initializer=_start_worker,
            initargs=(config, max_bytes, claims, reads_fast_from_start(), os.getpid()),
        )

    def submit_taken(self, workers: int) -> list[Future[list[Done]]]:
        """One task for each worker, taking batches from the back (`check_taken`)."""
        return [self._pool.submit(check_taken) for _ in range(workers)]

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _died(job: Job, reason: str) -> Done:
    """A file whose worker died or failed: an input error in its place, never a silent gap."""
    problem = InputError(display_name(job.path), None, f"{reason}; not checked")
    checker = Checker(part=True)
    checker.add_error(problem)
    return Done(job.position, _dump(checker.take_part(), checker), 1)


def _start(
    jobs: Sequence[Job], sizes: Sequence[int], workers: int, config: Config, max_bytes: int
) -> tuple[Claims, Workers, list[Future[list[Done]]]] | None:
    """The files' claims and `workers - 1` workers taking from the back, or None where this
    system cannot start them and the check is to run in one process: no `sem_open` or too
    few semaphores (OSError, ImportError, NotImplementedError), or fork failing as the
    pool starts its workers (EAGAIN under a container's pids limit, ENOMEM)."""
    import multiprocessing

    before = set(multiprocessing.active_children())
    claims = pool = None
    try:
        claims = Claims(_context(), jobs, sizes, workers)
        pool = Workers(config, max_bytes, workers - 1, claims)
        return claims, pool, pool.submit_taken(workers - 1)
    except (OSError, ImportError, NotImplementedError):
        if claims is not None:
            claims.stop()
        if pool is not None:
            # With fork the pool starts its manager thread only once every worker has
            # started, and without it shutting down stops none of them: those that did
            # start would wait for tasks forever, and multiprocessing joins them at exit.
            for process in set(multiprocessing.active_children()) - before:
                process.terminate()
                process.join()
            pool.close()
        return None


def in_order(
    units: Sequence[Unit], planned: tuple[list[Job], list[int]], workers: int, config: Config, max_bytes: int
) -> Generator[tuple[Unit, Done | None], None, None]:
    """Each unit in input order, with what a worker made of it, or None where this process
    is to check it now, in its place: the units that are not files, and the files
    (`planned`) it takes from the front while the `workers - 1` others take them from the
    back (`Claims`).  Close it (`contextlib.closing`) to stop the workers early."""
    jobs, sizes = planned
    workers = min(workers, len(jobs))  # no more processes than files (--jobs 1000, 30 files)
    started = _start(jobs, sizes, workers, config, max_bytes) if workers > 1 else None
    if started is None:
        for unit in units:
            yield unit, None
        return
    claims, pool, waiting = started
    index_of = {job.position: index for index, job in enumerate(jobs)}
    try:
        returned: dict[int, Done] | None = None  # the workers' files, once the ends have met
        for unit in units:
            index = index_of.get(unit.position)
            if index is None or (returned is None and claims.take_front(index)):
                yield unit, None
            else:
                if returned is None:  # the ends met here: every file from here on, a worker took
                    returned = _returned(waiting, jobs[index:])
                yield unit, returned.pop(unit.position)
    finally:
        claims.stop()  # stopped early (an error, ^C): the workers take no more
        pool.close()


def check_units(
    inputs: Inputs, units: Sequence[Unit], workers: int, checker: Checker, planned: tuple[list[Job], list[int]]
) -> Checker:
    """Every unit checked into `checker` in input order (`inputs` counts what was read), its
    files (`planned`) by `workers` processes (`in_order`); the checker is returned unfinished."""
    with contextlib.closing(in_order(units, planned, workers, checker.config, inputs.max_bytes)) as ordered:
        for unit, done in ordered:
            if done is None:
                check_in_place(checker, inputs, unit)
            else:
                _take(checker, inputs, unit, done)
    return checker


def check_in_place(checker: Checker, inputs: Inputs, unit: Unit) -> None:
    """The unit read and checked by this process, as the part at its place in the input."""
    checker.begin_part(unit.position)
    for item in inputs.items(unit):
        checker.feed(item)


def _returned(waiting: Sequence[Future[list[Done]]], taken: Sequence[Job]) -> dict[int, Done]:
    """What the workers made of the files they took (`taken`), once every task has returned: a
    file a worker took and did not return has an input error.  One worker that dies (a
    signal, the OOM killer) stops the pool, and every worker's files with it."""
    from concurrent.futures.process import BrokenProcessPool

    returned: dict[int, Done] = {}
    #: How each worker that returned nothing ended, each way once (a broken pool fails every
    #: task alike), in the order of the tasks.
    ends: list[str] = []
    for future in waiting:
        try:
            returned.update((done.position, done) for done in future.result())
            continue
        except BrokenProcessPool as error:
            end = f"stopped ({error})"
        except Exception as error:  # a worker's own failure, not a file's (those are input errors)
            end = f"failed ({type(error).__name__}: {error})"
        if end not in ends:
            ends.append(end)
    for job in taken:
        if job.position not in returned:
            returned[job.position] = _died(job, _lost(ends))
    return returned


def _lost(ends: Sequence[str]) -> str:
    """Why a file a worker took has no part.  Which worker took which file dies with the
    worker, so where workers ended in different ways, the file's error names each way."""
    if not ends:
        return "no worker process returned it"
    if len(ends) == 1:
        return f"the worker process checking this file {ends[0]}"
    each = ", ".join(f"one {end}" for end in ends)
    return f"a worker process took this file and did not return it; of the workers that returned nothing, {each}"


def _take(checker: Checker, inputs: Inputs, unit: Unit, result: Done) -> None:
    if result.part is None:  # it did not pickle: checked here, in its place, as one process would
        check_in_place(checker, inputs, unit)
        return
    from dra_guard.distribute.codec import load_part

    try:
        part = load_part(result.part, checker.context)
    except Exception:  # a part this process cannot read back: checked here instead, as one process would
        check_in_place(checker, inputs, unit)
        return
    checker.add_part(part)
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
