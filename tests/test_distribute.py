"""One check spread over processes (`check --jobs`) and machines (`check --shard`, `merge`)
gives the report one process gives, byte for byte (issue 25, points 1 and 2).

What makes it so is one premise: a file checked as a *part* (`Checker(part=True)`: nothing
settled early, its facts logged) and merged in its place (`Checker.add_part`) gives the
findings checking it in place would.  The premise is held here on every input the tests
have (the corpus, the fixtures, every rule's examples one document per part, the builders'
output, drawn objects split into files at random), then the machinery on top of it: worker
processes (in any order, any number, one dying, a part that does not pickle), facts files
(every shard count, refused when they are not one check, a pickle that names anything else).
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import hashlib
import io
import json
import multiprocessing
import os
import pickle
import random
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dra_guard.cli.main import build_parser, main
from dra_guard.contract.findings import Finding, InputError, Report
from dra_guard.distribute import codec, pool
from dra_guard.distribute.shards import FactsError, Shard, assign, merge
from dra_guard.engine.run import Checker, check_stream
from dra_guard.present.report import writer
from dra_guard.read.inputs import Unit, read_file
from dra_guard.ruleapi.config import Config, parse_config
from dra_guard.rules import RULES
from testkit.front_ends import builder_sources, example_sources
from testkit.paths import REPO_ROOT
from tests.admission_strategies import admitted_objects

CORPUS = REPO_ROOT / "tests" / "corpus"
FIXTURES = REPO_ROOT / "tests" / "fixtures"
File = tuple[str, bytes]


def _files_under(*folders: Path) -> list[File]:
    return [
        (str(path.relative_to(REPO_ROOT)), path.read_bytes())
        for folder in folders
        for path in sorted(folder.rglob("*"))
        if path.suffix in (".yaml", ".yml", ".json") and path.is_file()
    ]


def _one_process(files: Sequence[File], config: Config) -> Report:
    return check_stream((item for name, data in files for item in read_file(data, name)), config)


def _in_parts(files: Sequence[File], config: Config, workers: int = 2, seed: int = 0) -> Report:
    """Each file a part, checked by one of `workers` part checkers (as worker processes keep
    theirs from file to file) in a shuffled order, carried as bytes, merged in input order."""
    checkers = [Checker(config, part=True) for _ in range(workers)]
    order = list(range(len(files)))
    random.Random(seed).shuffle(order)
    carried: dict[int, bytes] = {}
    for turn, position in enumerate(order):
        checker = checkers[turn % workers]
        checker.begin_part(position)
        name, data = files[position]
        for item in read_file(data, name):
            checker.feed(item)
        carried[position] = codec.dump_part(checker.take_part(), checker.context)
    merging = Checker(config)
    for position in range(len(files)):
        merging.add_part(codec.load_part(carried[position], merging.context))
    return merging.finish()


def _rendered(report: Report) -> str:
    out = io.StringIO()
    writer("json")(report, out)
    return out.getvalue()


def _assert_same(files: Sequence[File], config: Config | None = None, seed: int = 0) -> Report:
    config = config or Config()
    alone = _one_process(files, config)
    parted = _in_parts(files, config, seed=seed)
    assert parted.findings == alone.findings
    assert parted.waived == alone.waived
    assert parted.errors == alone.errors
    assert parted.objects == alone.objects
    assert _rendered(parted) == _rendered(alone)
    return alone


def _documents(name: str, text: str) -> list[File]:
    """One file per document: every cross-object reference crosses parts."""
    return [(f"{name}#{index}", ("---\n" + part).encode()) for index, part in enumerate(text.split("\n---"))]


# --- the premise ---------------------------------------------------------------------------


@pytest.mark.parametrize("folder", ["corpus", "crds", "deviceclasses", "slices", "upstream", "repo", "migrate"])
def test_a_folder_checked_file_by_file_in_parts_gives_the_same_report(folder: str) -> None:
    root = CORPUS if folder == "corpus" else FIXTURES / folder
    report = _assert_same(_files_under(root))
    assert report.objects > 0


def test_every_rules_examples_one_document_per_part_give_the_same_report() -> None:
    compared = 0
    for source in example_sources():
        config = parse_config(source.config, RULES) if source.config else Config()
        files = _documents(source.name, source.manifests())
        _assert_same(files, config)
        _assert_same(list(reversed(files)), config, seed=1)  # the other order: pending both ways
        compared += 1
    assert compared > 50


def test_the_builders_output_one_object_per_part_gives_the_same_report() -> None:
    for source in builder_sources():
        files = [(f"{source.name}#{index}", yaml.safe_dump(obj).encode()) for index, obj in enumerate(source.objects)]
        _assert_same(files)


TEMPLATE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: shared, namespace: team-a}}
spec:
  spec:
    devices:
      requests:
      - name: {request}
        exactly: {{deviceClassName: mig.nvidia.com, allocationMode: ExactCount, count: 1}}
"""
POD = """\
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: team-a}
spec:
  resourceClaims: [{name: gpu, resourceClaimTemplateName: shared}]
  containers:
  - name: c
    image: i
    resources: {claims: [{name: gpu, request: second}]}
"""


def test_a_name_defined_twice_resolves_to_the_first_in_input_order_whatever_process_read_it() -> None:
    """The template a pod names is the first of that name in the whole input: a worker that
    never saw the first one must not settle on the second (why parts settle nothing)."""
    files = [
        ("a.yaml", TEMPLATE.format(request="first").encode()),
        ("b.yaml", TEMPLATE.format(request="second").encode()),
        ("c.yaml", POD.encode()),
    ]
    alone = _assert_same(files)
    assert any(finding.rule == "DRA009" and "'second'" in finding.message for finding in alone.findings)
    # The second template and the pod in one part, the first in another: still the first.
    joined = [files[0], ("bc.yaml", files[1][1] + b"---\n" + files[2][1])]
    assert _rendered(_in_parts(joined, Config())) == _rendered(_one_process(joined, Config()))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(admitted_objects(), min_size=1, max_size=10), st.randoms(use_true_random=False))
def test_drawn_objects_split_into_files_at_random_give_the_same_report(objects: list[Any], chance: Any) -> None:
    files: list[File] = []
    for index, obj in enumerate(objects):
        text = yaml.safe_dump(obj, sort_keys=False)
        if files and chance.random() < 0.4:
            name, data = files[-1]
            files[-1] = (name, data + b"---\n" + text.encode())
        else:
            files.append((f"drawn-{index}.yaml", text.encode()))
    _assert_same(files, seed=chance.randrange(1000))


# --- the codec -------------------------------------------------------------------------------


class _Harmful:
    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.system, ("true",))


def _global(module: str, name: str) -> bytes:
    """A pickle (protocol 4) of nothing but the global `module`.`name`."""
    encoded = [part.encode() for part in (module, name)]
    return b"\x80\x04" + b"".join(b"\x8c" + bytes([len(part)]) + part for part in encoded) + b"\x93."


def test_a_part_that_names_anything_but_checking_facts_is_refused() -> None:
    checker = Checker()
    for harmful in (
        pickle.dumps(_Harmful()),
        pickle.dumps(os.getcwd),
        # What one of its modules imports, or reaches through a dotted name.
        _global("dra_guard.contract.catalog", "re"),
        _global("dra_guard.contract.catalog", "re.compile"),
        _global("dra_guard.model.manifest", "mapping.__globals__"),
    ):
        with pytest.raises(pickle.UnpicklingError):
            codec.load_part(harmful, checker.context)
    with pytest.raises(pickle.UnpicklingError, match="not a checked part"):
        codec.load_part(pickle.dumps([1, 2]), checker.context)


def test_a_part_carries_its_context_and_rules_by_reference() -> None:
    worker = Checker(part=True)
    for item in read_file(POD.encode(), "pod.yaml"):
        worker.feed(item)
    data = codec.dump_part(worker.take_part(), worker.context)
    assert b"ClaimFacts" not in data or len(data) < 20_000  # facts are small: no object, no context copy
    merging = Checker()
    part = codec.load_part(data, merging.context)
    assert part.deferred, "the pod's template reference waits for the end"
    assert all(deferred.kind.rule is RULES[deferred.kind.rule.id] for deferred in part.deferred)
    args = [argument for deferred in part.deferred for argument in deferred.args]
    assert merging.context in args and worker.context not in args


def test_severities_travel_by_value_whatever_enum_pickling_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """CPython 3.11.2's Enum pickles a member as `getattr(Severity, "HIGH")`, a name the
    reader refuses: a part written by it could not be read back (a worker's, a shard's).
    The writer gives enum members as their class and value, whatever Enum does."""
    from dra_guard.contract.findings import Severity

    monkeypatch.setattr(Severity, "__reduce_ex__", lambda member, protocol: (getattr, (Severity, member.name)))
    assert b"getattr" in pickle.dumps(Severity.HIGH)  # the reduction 3.11.2 makes
    worker, merging = Checker(part=True), Checker()
    for item in read_file(POD.encode(), "pod.yaml"):
        worker.feed(item)
    part = worker.take_part()
    assert any(isinstance(deferred.kind.severity, Severity) for deferred in part.deferred)
    data = codec.dump_part(part, worker.context)
    assert b"getattr" not in data
    again = codec.load_part(data, merging.context)
    assert [deferred.kind.severity for deferred in again.deferred] == [d.kind.severity for d in part.deferred]


@dataclasses.dataclass(frozen=True, slots=True)
class _Checked:
    a: int
    b: str = "x"


_MADE: list[int] = []


@dataclasses.dataclass(frozen=True, slots=True)
class _Validated:
    a: int

    def __post_init__(self) -> None:
        _MADE.append(self.a)


def test_slotted_dataclasses_travel_as_their_fields_unless_init_would_differ() -> None:
    assert codec._init_fields(_Checked) == ("a", "b")
    for cls in (_Validated, Finding, InputError, Report):
        expected = None if cls in (_Validated, Report) else tuple(f.name for f in dataclasses.fields(cls))
        assert codec._init_fields(cls) == expected
    worker, merging = Checker(part=True), Checker()
    for item in read_file(POD.encode(), "pod.yaml"):
        worker.feed(item)
    part = worker.take_part()
    again = codec.load_part(codec.dump_part(part, worker.context), merging.context)
    assert again.findings == part.findings and again.errors == part.errors and again.objects == part.objects
    # (A part may not name this test module's classes: plain pickle reads these two back.)
    assert pickle.loads(codec.dump_value(_Checked(1, "y"))) == _Checked(1, "y")
    data = codec.dump_value(_Validated(2))
    assert pickle.loads(data) == _Validated(2) and _MADE == [2, 2]  # read back without __post_init__


class _Forged:
    def __init__(self, kind: str, name: str) -> None:
        self.kind, self.name = kind, name

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return (codec._reference, (self.kind, self.name))


def test_a_reference_is_resolved_only_by_the_reader_and_only_to_what_it_knows() -> None:
    merging = Checker()
    assert codec.load_value(pickle.dumps(_Forged("rule", "DRA001")), merging.context) is RULES["DRA001"]
    assert codec.load_value(pickle.dumps(_Forged("context", "")), merging.context) is merging.context
    for kind, name in (("rule", "DRA999"), ("module", "os"), ("context ", "")):
        with pytest.raises(pickle.UnpicklingError, match="unknown reference"):
            codec.load_value(pickle.dumps(_Forged(kind, name)), merging.context)
    with pytest.raises(pickle.UnpicklingError, match="outside a checked part"):
        pickle.loads(pickle.dumps(_Forged("context", "")))  # an unrestricted reader gets nothing


# --- worker processes ---------------------------------------------------------------------------


def _cli(arguments: Sequence[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(list(arguments))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def small_inputs_in_parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers for any input, however small (the CLI keeps small ones in one process)."""
    monkeypatch.setattr(pool, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(pool, "BATCH_MIN_BYTES", 1)


INPUTS = [str(CORPUS), str(FIXTURES / "crds"), str(FIXTURES / "deviceclasses"), str(FIXTURES / "repo")]


def _this_process_waits(monkeypatch: pytest.MonkeyPatch, until: Any) -> list[bool]:
    """This process takes no file from the front until `until(claims)` holds (a minute at
    most): which process checks which file is then no race of the test's.  The list it
    returns says, for each file this process asked for, whether `until` held by then."""
    real = pool.Claims.take_front
    held: list[bool] = []

    def waiting(claims: pool.Claims, index: int) -> bool:
        deadline = time.monotonic() + 60
        while not until(claims) and time.monotonic() < deadline:
            time.sleep(0.01)
        held.append(until(claims))
        return real(claims, index)

    monkeypatch.setattr(pool.Claims, "take_front", waiting)
    return held


@pytest.mark.e2e
@pytest.mark.parametrize("output_format", ["text", "json", "sarif"])
def test_check_jobs_n_writes_the_report_of_jobs_1(
    output_format: str, small_inputs_in_parallel: None, capsys: pytest.CaptureFixture[str]
) -> None:
    one = _cli(["check", "-j", "1", "--format", output_format, *INPUTS], capsys)
    for jobs in ("2", "3"):
        assert _cli(["check", "-j", jobs, "--format", output_format, *INPUTS], capsys) == one
    assert one[0] == 2  # the fixtures hold input errors: they come through the workers too


@pytest.mark.e2e
def test_files_the_workers_take_or_this_process_takes_give_the_report_of_jobs_1(
    small_inputs_in_parallel: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    one = _cli(["check", "-j", "1", "--format", "json", *INPUTS], capsys)
    # The workers take every file (this process waits until the ends meet at the front) ...
    held = _this_process_waits(monkeypatch, lambda claims: claims.taken_from_back() == 0)
    assert _cli(["check", "-j", "3", "--format", "json", *INPUTS], capsys) == one
    assert held == [True]  # asked once, for the first file: the workers had taken them all
    # ... or none (the forked workers inherit the patch), and this process takes them all.
    monkeypatch.undo()
    monkeypatch.setattr(pool, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(pool.Claims, "take_back", lambda claims: [])
    assert _cli(["check", "-j", "2", "--format", "json", *INPUTS], capsys) == one


@pytest.mark.e2e
def test_a_file_whose_part_cannot_be_read_back_is_checked_in_its_place(
    small_inputs_in_parallel: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A worker's part this process cannot unpickle (another Python's pickling, as 3.11.2's
    enums were): the file is checked here, in its place -- never a traceback."""
    one = _cli(["check", "-j", "1", "--format", "json", str(CORPUS)], capsys)
    real_load = codec.load_part
    refused: list[int] = []

    def refuse_some(data: bytes, context: Any) -> Any:
        part = real_load(data, context)
        if part.deferred:
            refused.append(1)
            raise pickle.UnpicklingError("a checked part may not name builtins.getattr")
        return part

    monkeypatch.setattr(codec, "load_part", refuse_some)  # this process reads the workers' parts
    held = _this_process_waits(monkeypatch, lambda claims: claims.taken_from_back() == 0)  # workers take all
    assert _cli(["check", "-j", "2", "--format", "json", str(CORPUS)], capsys) == one
    assert held == [True] and refused


@pytest.mark.e2e
def test_a_file_whose_part_does_not_pickle_is_checked_in_its_place(
    small_inputs_in_parallel: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real_dump = pool._dump
    refused = multiprocessing.get_context("fork").Value("i", 0)

    def refuse_some(part: Any, checker: Checker) -> bytes:
        if part.deferred:  # as a closure in a pending finding would
            with refused.get_lock():
                refused.value += 1
            raise pickle.PicklingError("a closure")
        return real_dump(part, checker)

    one = _cli(["check", "-j", "1", "--format", "json", str(CORPUS)], capsys)
    monkeypatch.setattr(pool, "_dump", refuse_some)  # the forked workers inherit it
    held = _this_process_waits(monkeypatch, lambda claims: claims.taken_from_back() == 0)  # workers take all
    assert _cli(["check", "-j", "2", "--format", "json", str(CORPUS)], capsys) == one
    assert held == [True] and refused.value > 0


@pytest.mark.e2e
@pytest.mark.parametrize("jobs", ["2", "3"])
@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")  # the pool's own thread failing
def test_a_worker_that_dies_leaves_an_input_error_for_each_file_taken_and_the_rest_are_checked(
    jobs: str,
    small_inputs_in_parallel: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    for index in range(6):
        (tmp_path / f"cm-{index}.yaml").write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{index}}}\n")
    (tmp_path / "poison.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: poison}\n")
    real = pool.file_items

    def dying(path: str, *arguments: Any, **keywords: Any) -> Any:
        if path.endswith("poison.yaml"):  # in the worker, which looks this up as it reads (fork inherits the patch)
            # It dies once every file is taken and this process waits for the workers' results.
            claims, deadline = pool._Worker.claims, time.monotonic() + 60
            while claims is not None and claims.left() and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.3)
            os._exit(9)
        return real(path, *arguments, **keywords)

    monkeypatch.setattr(pool, "file_items", dying)
    monkeypatch.setattr(pool, "BATCH_MAX_FILES", 1)
    # A worker takes the last file first, the poison; this process the others, once it has.
    held = _this_process_waits(monkeypatch, lambda claims: claims.taken_from_back() < len(claims.jobs))
    code, out, err = _cli(["check", "-j", jobs, "--format", "json", str(tmp_path)], capsys)
    assert code == 2 and all(held)
    assert "poison.yaml: the worker process checking this file stopped" in err
    report = json.loads(out)
    # Every file checked or an error: the dead worker's, and those its siblings had taken
    # when the pool stopped them; this process checked the rest.
    assert report["summary"]["objects"] + len(report["errors"]) == 7 and report["summary"]["objects"] >= 1
    assert multiprocessing.active_children() == []  # the pool stopped every worker it started


@pytest.mark.e2e
@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_files_lost_by_workers_that_failed_differently_name_every_way_they_failed(
    small_inputs_in_parallel: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """Which worker took which file is lost with the worker: a lost file's error names how
    each worker that returned nothing ended, not only the last one asked."""
    for index in range(8):
        (tmp_path / f"cm-{index}.yaml").write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{index}}}\n")
    taken = multiprocessing.get_context("fork").Value("i", 0)

    def failing(jobs: Sequence[pool.Job]) -> list[pool.Done]:
        # In each worker, given its first batch (one file): its own failure, by the order it got there.
        with taken.get_lock():
            taken.value += 1
            order = taken.value
        deadline = time.monotonic() + 60
        while taken.value < 2 and time.monotonic() < deadline:  # both have taken theirs
            time.sleep(0.01)
        raise (ValueError if order == 1 else RuntimeError)(f"worker {order} after {len(jobs)} file")

    monkeypatch.setattr(pool, "check_files", failing)  # what a worker's task calls (fork inherits it)
    monkeypatch.setattr(pool, "BATCH_MAX_FILES", 1)
    held = _this_process_waits(monkeypatch, lambda claims: claims.taken_from_back() <= len(claims.jobs) - 2)
    code, out, _ = _cli(["check", "-j", "3", "--format", "json", str(tmp_path)], capsys)
    assert code == 2 and all(held)
    report = json.loads(out)
    assert len(report["errors"]) == 2 and report["summary"]["objects"] == 6  # this process checked the rest
    for error in report["errors"]:
        # In the order of the tasks, which is not the order the workers took their files in.
        assert "did not return it; of the workers that returned nothing, one failed (" in error["message"]
        assert "one failed (ValueError: worker 1 after 1 file)" in error["message"]
        assert "one failed (RuntimeError: worker 2 after 1 file)" in error["message"]
    assert multiprocessing.active_children() == []


def test_the_ends_meet_once_every_file_is_taken_by_one_process_or_another() -> None:
    jobs = [pool.Job(position, f"f{position}", True) for position in range(20)]
    sizes = [1 << 20] * 10 + [1_000] * 10
    claims = pool.Claims(multiprocessing.get_context("fork"), jobs, sizes, 2)
    # A worker's batch: an eighth of the bytes left between the ends (2 processes, 4 batches
    # each), from the back: the ten small files and the last three large ones.
    assert [job.position for job in claims.take_back()] == list(range(8, 20))
    assert claims.take_front(0) and claims.take_front(1) and not claims.take_front(3)  # only the next
    batches = []
    while batch := claims.take_back():
        batches.append([job.position for job in batch])
    assert batches == [[7], [6], [5], [4], [3], [2]]  # an eighth of 6 MiB or less: one file each
    assert not claims.take_front(2) and claims.taken_from_back() == 2 and claims.left() == 0


def test_a_lock_held_by_a_killed_worker_stops_no_one(monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = [pool.Job(position, f"f{position}", True) for position in range(3)]
    claims = pool.Claims(multiprocessing.get_context("fork"), jobs, [1, 1, 1], 2)
    monkeypatch.setattr(pool, "LOCK_WAIT_SECONDS", 0.05)
    claims._ends.get_lock().acquire()  # as a worker killed in the middle of take_back leaves it
    assert claims.take_front(0) and claims.take_front(1) and claims.left() == 1


@pytest.mark.e2e
def test_without_semaphores_a_check_stays_in_one_process(
    small_inputs_in_parallel: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    one = _cli(["check", "-j", "1", "--format", "json", *INPUTS], capsys)

    class NoSemaphores:
        def Array(self, *arguments: Any) -> Any:  # as multiprocessing names it
            raise OSError(38, "Function not implemented")  # sem_open where /dev/shm is missing

    monkeypatch.setattr(pool, "_context", NoSemaphores)
    assert _cli(["check", "-j", "2", "--format", "json", *INPUTS], capsys) == one


@pytest.mark.e2e
@pytest.mark.parametrize("fails_at", [1, 2])
@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_worker_that_cannot_start_leaves_the_check_in_one_process(
    fails_at: int, small_inputs_in_parallel: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """fork() failing (EAGAIN: a container's pids limit, ENOMEM) as the pool starts its
    workers, at the first or after one has started: the check goes on in this process,
    with the same report, and no worker is left behind (one would hang the exit)."""
    one = _cli(["check", "-j", "1", "--format", "json", *INPUTS], capsys)
    fork = multiprocessing.get_context("fork")
    started = fork.Value("i", 0)

    class Failing(fork.Process):  # type: ignore[name-defined,misc]
        def start(self) -> None:
            started.value += 1
            if started.value >= fails_at:
                raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
            super().start()

    class FailingContext(type(fork)):  # type: ignore[misc]
        Process = Failing

    monkeypatch.setattr(pool, "_context", FailingContext)
    assert _cli(["check", "-j", "3", "--format", "json", *INPUTS], capsys) == one
    assert started.value == fails_at
    assert multiprocessing.active_children() == []


def test_small_inputs_stay_in_one_process() -> None:
    assert not pool.worth_it([1_000, 2_000], 2) and not pool.worth_it([10 << 20], 2) and pool.worth_it([2 << 20] * 2, 2)


# --- shards ----------------------------------------------------------------------------------


def _shards(arguments: Sequence[str], count: int, directory: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    facts = []
    for index in range(1, count + 1):
        facts.append(str(directory / f"facts-{count}-{index}"))
        code, out, _ = _cli(["check", *arguments, "--shard", f"{index}/{count}", "--facts-out", facts[-1]], capsys)
        assert (code, out) == (0, "")
    return facts


@pytest.mark.e2e
@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_shards_merged_write_the_report_of_one_check(
    count: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = _cli(["check", "--format", "sarif", *INPUTS], capsys)
    facts = _shards(["-j", "1", *INPUTS], count, tmp_path, capsys)
    assert _cli(["merge", "--format", "sarif", *facts], capsys) == one
    assert _cli(["merge", "--format", "sarif", *reversed(facts)], capsys) == one


def test_every_part_goes_to_exactly_one_shard_the_same_everywhere() -> None:
    units = [Unit(position, "file", f"f{position}") for position in range(40)]
    sizes = {position: (position * 7919) % 1000 for position in range(40)}
    for count in (1, 2, 3, 7, 50):
        owner = assign(units, sizes, count)
        assert sorted(owner) == list(range(40))
        assert owner == assign(list(reversed(units)), sizes, count)
        loads = [sum(max(1, sizes[p]) for p, shard in owner.items() if shard == s) for s in range(count)]
        assert max(loads) - min(loads) <= max(sizes.values()) + 1 or count > len(units)


@pytest.mark.e2e
def test_merge_refuses_what_is_not_every_shard_of_one_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    facts = _shards(["-j", "1", str(CORPUS)], 3, tmp_path, capsys)
    (tmp_path / "other").mkdir()
    other = _shards(["-j", "1", str(FIXTURES / "crds")], 3, tmp_path / "other", capsys)
    cases = {
        "each of the 3 shards once": [facts[0], facts[1]],
        "not shards of one check": [facts[0], facts[1], other[2]],
        "each of the 3 shards once; got shards 1, 1, 2": [facts[0], facts[0], facts[1]],
    }
    for message, given_facts in cases.items():
        code, out, err = _cli(["merge", *given_facts], capsys)
        assert (code, out) == (2, "") and message in err, err
    config = tmp_path / ".dra-guard.yaml"
    config.write_text("disable: [DRA001]\n")
    code, _, err = _cli(["merge", "--config", str(config), *facts], capsys)
    assert code == 2 and "the configuration differs" in err
    (tmp_path / "garbage").write_bytes(b"not facts\n")
    code, _, err = _cli(["merge", str(tmp_path / "garbage")], capsys)
    assert code == 2 and "not a dra-guard facts file" in err
    _rewrite(Path(facts[0]), payload=pickle.dumps({"units": [_Harmful()]}))
    code, _, err = _cli(["merge", *facts], capsys)
    assert code == 2 and "cannot be read (UnpicklingError" in err


def _rewrite(path: Path, payload: bytes | None = None, **header: Any) -> None:
    """The facts file at `path` with its header's fields and its payload replaced, and the
    checksum made to fit: what only someone who means to can write."""
    line, _, old = path.read_bytes().partition(b"\n")
    payload = old if payload is None else payload
    fields = {**json.loads(line), **header, "sha256": hashlib.sha256(payload).hexdigest()}
    path.write_bytes(json.dumps(fields).encode() + b"\n" + payload)


@pytest.mark.e2e
def test_damaged_or_hand_edited_facts_are_input_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 25: a facts file cut short or changed after its shard wrote it, or a header edited
    by hand, is refused with its name and exit 2 -- never a traceback, a wrong report or a
    merge that counts to a number the header made up."""
    facts = _shards(["-j", "1", str(CORPUS)], 2, tmp_path, capsys)
    original = Path(facts[0]).read_bytes()
    header_end = original.index(b"\n") + 1
    damaged = tmp_path / "damaged"
    for where in range(header_end, len(original), max(1, (len(original) - header_end) // 40)):
        flipped = bytearray(original)
        flipped[where] ^= 0x10
        damaged.write_bytes(bytes(flipped))
        code, out, err = _cli(["merge", str(damaged), facts[1]], capsys)
        assert (code, out) == (2, "") and "damaged: what it holds does not match the checksum" in err, (where, err)
    damaged.write_bytes(original[: (header_end + len(original)) // 2])
    assert "damaged" in _cli(["merge", str(damaged), facts[1]], capsys)[2]
    # A part spoiled inside, under a checksum that fits: the part is named, still exit 2.
    payload = original[header_end:]
    spoiled = payload.replace(b"Part", b"Qart", 1)
    assert spoiled != payload
    damaged.write_bytes(original)
    _rewrite(damaged, payload=spoiled)
    code, _, err = _cli(["merge", str(damaged), facts[1]], capsys)
    assert code == 2 and "of the input cannot be read (UnpicklingError" in err, err
    for fields, message in (
        ({"shard": "1"}, "its header is damaged (shard: '1')"),
        ({"shards": 99_999_999_999}, "its header is damaged (shard 1 of 99999999999"),
        ({"parts": True}, "its header is damaged (parts: True)"),
        ({"today": "someday"}, "its header is damaged (today: 'someday')"),
        ({"python": "3.99"}, "written under Python 3.99; this merge runs under Python"),
    ):
        damaged.write_bytes(original)
        _rewrite(damaged, **fields)
        code, out, err = _cli(["merge", str(damaged), facts[1]], capsys)
        assert (code, out) == (2, "") and message in err, (fields, err)
    # Both files claim shard 1's parts (the second passed off as shard 2).
    damaged.write_bytes(original)
    _rewrite(damaged, shard=2)
    code, _, err = _cli(["merge", facts[0], str(damaged)], capsys)
    assert code == 2 and "both hold part" in err, err
    # More parts than the shards hold: counted, not built.
    damaged.write_bytes(original)
    _rewrite(damaged, parts=10**12)
    other = tmp_path / "other"
    other.write_bytes(Path(facts[1]).read_bytes())
    _rewrite(other, parts=10**12)
    code, _, err = _cli(["merge", str(damaged), str(other)], capsys)
    assert code == 2 and "of the input's 1000000000000 parts" in err, err


@pytest.mark.e2e
def test_shards_of_two_checkouts_do_not_merge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same files, in the same order and of the same sizes, but other contents (a matrix
    job run again after the branch moved): the inputs differ, and merge says so."""
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p%d}\nspec: {containers: [{name: c, image: x}]}\n"
    for checkout, number in (("a", 1), ("b", 2)):
        for index in range(3):
            (tmp_path / checkout).mkdir(exist_ok=True)
            (tmp_path / checkout / f"pod-{index}.yaml").write_text(pod % (number * 10 + index))
    mixed = []
    for checkout, index in (("a", 1), ("b", 2)):
        mixed.append(str(tmp_path / f"facts-{checkout}"))
        monkeypatch.chdir(tmp_path / checkout)
        code, _, _ = _cli(["check", "-j", "1", "--shard", f"{index}/2", "--facts-out", mixed[-1], "."], capsys)
        assert code == 0
    code, out, err = _cli(["merge", *mixed], capsys)
    assert (code, out) == (2, "") and "their inputs (the files, their order or their contents) differ" in err, err


@pytest.mark.e2e
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_in_the_tree_never_hangs_a_shard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each shard hashes the whole input's contents: a FIFO a walk meets is opened as the
    check opens an input (non-blocking, regular files only), not read until a writer comes.
    The merge reports it as `check` does."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "pod.yaml").write_text(POD)
    os.mkfifo(tree / "pipe.yaml")
    one = _cli(["check", "--format", "json", str(tree)], capsys)
    assert one[0] == 2 and "not a regular file" in one[2]
    facts = _shards(["-j", "1", str(tree)], 2, tmp_path, capsys)  # before: the first shard never returned
    assert _cli(["merge", "--format", "json", *facts], capsys) == one


@pytest.mark.e2e
def test_facts_files_written_into_the_tree_are_not_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Shards run one after another in one checkout, each writing its facts into the tree
    the next walks: a facts file a walk or glob finds is dra-guard's own output, left out as
    the report file is, so the shards select the same files (merge refused them as shards of
    different inputs) and a later check reports what it would have without them.  Named on
    the command line, it is read as any file named."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "pod.yaml").write_text(POD)
    (tree / "notes.json").write_text('{"format": "not facts"}\n')  # an ordinary JSON file: skipped, counted
    one = _cli(["check", "--format", "json", str(tree)], capsys)
    facts = []
    for index in (1, 2):
        facts.append(str(tree / f"shard-{index}.json"))
        code, out, _ = _cli(["check", "-j", "1", str(tree), "--shard", f"{index}/2", "--facts-out", facts[-1]], capsys)
        assert (code, out) == (0, "")
    assert _cli(["merge", "--format", "json", *facts], capsys) == one
    assert _cli(["check", "--format", "json", str(tree)], capsys) == one
    assert (
        _cli(["check", "--format", "json", str(tree / "*.json"), str(tree / "pod.yaml")], capsys)[1]
        == _cli(["check", "--format", "json", str(tree / "notes*.json"), str(tree / "pod.yaml")], capsys)[1]
    )
    code, out, _ = _cli(["check", facts[0]], capsys)
    assert code == 2 and f"{facts[0]}: error: " in out
    # A file that only begins like facts hides nothing: kubectl reads a JSON file as a
    # stream of objects, and would create the Pod behind the header line.
    header = Path(facts[0]).read_bytes().partition(b"\n")[0]
    gpu_pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "hidden"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
    }
    (tree / "look-alike.json").write_bytes(header + b"\n" + json.dumps(gpu_pod).encode())
    code, out, _ = _cli(["check", "--format", "json", str(tree)], capsys)
    assert code == 2 and '"rule": "DRA001"' in out and "look-alike.json" in out
    # Nor one whose header line is itself a Kubernetes object, the pickle behind it: kubectl
    # decodes the line (a List's items are created) before it fails on the pickle.  The
    # check reads it and refuses it whole (binary): an input error, never a silent pass.
    (tree / "look-alike.json").unlink()
    fields = json.loads(header)
    fields.update({"kind": "List", "apiVersion": "v1", "items": [gpu_pod]})
    payload = Path(facts[0]).read_bytes().partition(b"\n")[2]
    (tree / "header-object.json").write_bytes(json.dumps(fields).encode() + b"\n" + payload)
    code, out, _ = _cli(["check", "--format", "json", str(tree)], capsys)
    errors = [(error["file"], error["message"]) for error in json.loads(out)["errors"]]
    assert code == 2 and errors == [(str(tree / "header-object.json"), "binary file, not a YAML or JSON manifest")]


@pytest.mark.e2e
def test_merge_keeps_its_facts_and_the_shards_day(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    facts = _shards(["-j", "1", str(CORPUS)], 2, tmp_path, capsys)
    kept = Path(facts[0]).read_bytes()
    code, out, err = _cli(["merge", "-o", facts[0], *facts], capsys)
    assert (code, out) == (2, "") and "it is one of the facts files" in err
    assert Path(facts[0]).read_bytes() == kept
    monkeypatch.setenv("DRA_GUARD_TODAY", "2031-01-01")
    code, _, err = _cli(["merge", *facts], capsys)
    assert code == 2 and "DRA_GUARD_TODAY is 2031-01-01 here, and the shards checked on" in err, err


@pytest.mark.e2e
def test_exit_status_options_go_to_merge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--fail-on-empty and --fail-on-unchecked gate the merge as they gate a check, and a
    shard refuses them (and --fail-on, --exit-zero) rather than dropping them."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "values.yaml").write_text("replicas: 1\n")
    assert _cli(["check", "--fail-on-empty", str(tmp_path / "in")], capsys)[0] == 2
    facts = _shards([str(tmp_path / "in")], 1, tmp_path, capsys)
    assert _cli(["merge", *facts], capsys)[0] == 0
    code, _, err = _cli(["merge", "--fail-on-empty", *facts], capsys)
    assert code == 2 and "(--fail-on-empty)" in err
    for option in (["--fail-on-empty"], ["--fail-on-unchecked"], ["--fail-on", "low"], ["--exit-zero"]):
        shard = ["check", *option, "--shard", "1/1", "--facts-out", str(tmp_path / "f"), str(tmp_path / "in")]
        code, _, err = _cli(shard, capsys)
        assert code == 2 and "a shard writes facts, not a report or an exit status" in err, (option, err)


@pytest.mark.e2e
def test_fail_on_empty_counts_objects_in_workers_and_shards(
    small_inputs_in_parallel: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Files read that hold no object fail --fail-on-empty whether workers read them
    (--jobs) or shards did (merge): what counts is the objects, summed from every part."""
    empty, comments = tmp_path / "empty.yaml", tmp_path / "comments.yaml"
    empty.write_text("")
    comments.write_text("# nothing rendered\n---\n")
    inputs = [str(empty), str(comments)]  # named: a walk would skip them as no manifests
    for jobs in ("1", "2"):
        code, out, err = _cli(["check", "--fail-on-empty", "-j", jobs, *inputs], capsys)
        assert out == "0 findings in 0 objects from 2 files\n"
        assert code == 2 and "no Kubernetes manifest was checked (--fail-on-empty)" in err, (jobs, err)
    facts = _shards(["-j", "2", *inputs], 2, tmp_path, capsys)
    code, _, err = _cli(["merge", "--fail-on-empty", *facts], capsys)
    assert code == 2 and "(--fail-on-empty)" in err
    comments.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    assert _cli(["check", "--fail-on-empty", "-j", "2", *inputs], capsys)[0] == 0
    facts = _shards(["-j", "2", *inputs], 2, tmp_path, capsys)
    assert _cli(["merge", "--fail-on-empty", *facts], capsys)[0] == 0


#: Options of `merge` that decide what is found, not how it is reported: a shard takes them too.
SHARD_TAKES = frozenset({"--config", "--slices"})


def _report_only_options() -> list[argparse.Action]:
    """The options `merge` reads that a shard must refuse: all but the facts and SHARD_TAKES."""
    parser = build_parser("merge")
    commands = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    return [
        action
        for action in commands.choices["merge"]._actions
        if action.option_strings and action.dest != "help" and not SHARD_TAKES & set(action.option_strings)
    ]


def test_a_shard_refuses_every_option_that_only_shapes_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A shard writes no report and no exit status of findings: an option that shapes only
    those is a usage error, never dropped in silence, even given as its default (`--format
    text`).  Derived from merge's options, so that a new report option is refused too."""
    (tmp_path / "pod.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    facts = tmp_path / "facts"
    refused = _report_only_options()
    assert {"--format", "--color", "--output"} <= {action.option_strings[0] for action in refused}
    for action in refused:
        value = [] if action.nargs == 0 else [str(next(iter(action.choices))) if action.choices else "x"]
        option = [action.option_strings[0], *value]
        code, out, err = _cli(["check", *option, "--shard", "1/1", "--facts-out", str(facts), str(tmp_path)], capsys)
        assert (code, out) == (2, ""), (option, err)
        assert f"dra-guard: {option[0]}: a shard writes facts, not a report or an exit status" in err, (option, err)
        assert not facts.exists()


def test_the_readme_lists_the_options_a_shard_refuses() -> None:
    readme = " ".join((REPO_ROOT / "README.md").read_text().split())
    listed = re.search(r"A shard refuses those that only shape the report or the exit status \(([^)]*)\)", readme)
    assert listed is not None
    named = set(re.findall(r"`([^`]+)`", listed.group(1)))
    refused = _report_only_options()
    assert all(named & set(action.option_strings) for action in refused), (named, refused)
    assert named <= {flag for action in refused for flag in action.option_strings}


def test_shard_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for arguments, message in (
        (["--shard", "1/2"], "--shard and --facts-out go together"),
        (["--facts-out", "f"], "--shard and --facts-out go together"),
        (["--shard", "3/2", "--facts-out", "f"], "I must be between 1 and N"),
        (["--shard", "x", "--facts-out", "f"], "is not I/N"),
        (["--shard", "\uff11/\uff12", "--facts-out", "f"], "is not I/N"),  # digits, but not ASCII ones
        (["--shard", "\u00b2/3", "--facts-out", "f"], "is not I/N"),
        (["--shard", "1/99999999999999999999", "--facts-out", "f"], "N may be at most 10,000"),
        (["--shard", "1/2", "--facts-out", "f", "-o", "r"], "a shard writes facts, not a report"),
    ):
        code, out, err = _cli(["check", str(tmp_path), *arguments], capsys)
        assert (code, out) == (2, "") and message in err, err
    with pytest.raises(SystemExit):
        main(["check", "-j", "0"])
    assert Shard.parse("2/4") == Shard(2, 4)


def test_jobs_takes_ascii_numbers_up_to_its_limit(capsys: pytest.CaptureFixture[str]) -> None:
    for jobs in ("0", "-1", "two", "", "+2", " 2", "1_0", "\u0662", "1025", "99999999999999999999"):
        with pytest.raises(SystemExit) as stopped:
            main(["check", "-j", jobs, "."])
        assert stopped.value.code == 2
        assert "must be a whole number of processes from 1 to 1,024" in capsys.readouterr().err, jobs


def test_no_more_workers_than_files(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []
    monkeypatch.setattr(pool, "_start", lambda jobs, sizes, workers, *rest: asked.append(workers))
    units = [Unit(position, "file", str(CORPUS / name)) for position, name in enumerate(("a.yaml", "b.yaml"))]
    list(pool.in_order(units, pool.plan(units), 1000, Config(), 1 << 20))
    assert asked == [2]


def test_ctrl_c_is_a_message_and_exit_130(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    cli = sys.modules["dra_guard.cli.main"]  # the package's `main` attribute is the function

    def interrupted(*arguments: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "run_check", interrupted)
    assert main(["check", "."]) == 130
    assert capsys.readouterr().err == "dra-guard: interrupted\n"


def test_merge_of_nothing_readable_is_an_error() -> None:
    with pytest.raises(FactsError, match="every shard"):
        merge([], Config())


# --- whole processes, any hash seed --------------------------------------------------------------


def _realistic(directory: Path, documents: int) -> None:
    from bench.corpus import write_corpus, write_realistic

    write_realistic(directory / "realistic", documents)
    write_corpus(directory / "heavy", documents // 2, "dra-heavy")


@pytest.mark.e2e
def test_processes_with_any_hash_seed_agree_byte_for_byte(tmp_path: Path) -> None:
    """Large enough for the CLI's own choice to start workers; -j 1, -j 2, -j 3 and shards."""
    _realistic(tmp_path / "in", 3000)
    command = [sys.executable, "-m", "dra_guard.cli"]
    outputs = set()
    for seed, jobs in (("0", "1"), ("1", "2"), ("2", "3"), ("3", None)):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        extra = ["-j", jobs] if jobs else []
        done = subprocess.run(
            [*command, "check", "--format", "json", *extra, str(tmp_path / "in")],
            capture_output=True,
            env=env,
            check=False,
        )
        assert done.returncode == 1, done.stderr
        outputs.add(done.stdout)
    facts = []
    for index in (1, 2):
        facts.append(str(tmp_path / f"f{index}"))
        shard = ["check", "--shard", f"{index}/2", "--facts-out", facts[-1], str(tmp_path / "in")]
        subprocess.run(
            [*command, *shard], check=True, capture_output=True, env={**os.environ, "PYTHONHASHSEED": str(index)}
        )
    merged = subprocess.run([*command, "merge", "--format", "json", *facts], capture_output=True, check=False)
    outputs.add(merged.stdout)
    assert len(outputs) == 1
    assert json.loads(outputs.pop())["summary"]["objects"] > 4000


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found.update(int(child) for child in (task / "children").read_text().split())
    return found


@pytest.mark.e2e
@pytest.mark.skipif(sys.platform != "linux", reason="workers die with the check through Linux's prctl")
@pytest.mark.skipif(
    not Path(f"/proc/self/task/{os.getpid()}/children").exists(), reason="the kernel lists no children in /proc"
)
@pytest.mark.parametrize("signal_number", [15, 1])  # SIGTERM, SIGHUP
def test_workers_die_with_a_killed_check(signal_number: int, tmp_path: Path) -> None:
    """A check killed while its workers read (a CI job cancelled, a terminal closed) takes
    them with it: none finishes its files and waits forever on the result pipe, holding the
    check's stdout open, so whoever reads the output is not left hanging."""
    _realistic(tmp_path / "in", 12000)
    check = subprocess.Popen(
        [sys.executable, "-m", "dra_guard.cli", "check", "-j", "3", str(tmp_path / "in")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    workers: set[int] = set()
    while len(workers) < 2 and time.monotonic() < deadline and check.poll() is None:
        workers = _children(check.pid)
        time.sleep(0.01)
    assert len(workers) == 2, "the workers never started"
    os.kill(check.pid, signal_number)
    check.communicate(timeout=20)  # every holder of the pipes is gone
    time.sleep(0.2)
    assert not [worker for worker in workers if _running(worker)]


def _running(pid: int) -> bool:
    """Whether the process runs: not gone, and not a zombie (a container's init may not reap
    the workers it inherits)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


# --- the reader each document gets --------------------------------------------------------------

#: A key quoted over lines: libyaml refuses it (as kubectl does), and rapidyaml reads it.
_REFUSED_BY_LIBYAML_ONLY = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: over-lines}\ndata:\n  "a\n  b": v\n'
#: Turns off, in every process of a check, the fast reader's screen that leaves that key to
#: libyaml: the two readers then read the document differently, as they would where a
#: divergence had not been found yet.
_SCREEN_OFF = "import dra_guard.kubectl_yaml.fast as fast\nfast._key_libyaml_refuses = lambda text: False\n"


def _config_maps(count: int, padding: int) -> list[str]:
    return [
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{number}}}\ndata: {{pad: {'x' * padding}}}\n"
        for number in range(count)
    ]


def _reports_of_every_mode(folder: Path, scratch: Path, **env: str) -> dict[str, bytes]:
    """The JSON report of `check` with one process, two, and two shards merged, unforced."""
    environment = {key: value for key, value in os.environ.items() if key != "DRA_GUARD_YAML_PARSER"}
    environment.update(env)
    command = [sys.executable, "-m", "dra_guard.cli"]

    def run(*arguments: str) -> bytes:
        done = subprocess.run([*command, *arguments], capture_output=True, env=environment, check=False)
        assert done.returncode in (0, 1, 2), done.stderr
        return done.stdout

    reports = {jobs: run("check", "--format", "json", "-j", jobs, str(folder)) for jobs in ("1", "2")}
    facts = [str(scratch / f"facts-{index}") for index in (1, 2)]
    for index, path in enumerate(facts, 1):
        run("check", "-j", "1", "--shard", f"{index}/2", "--facts-out", path, str(folder))
    reports["shards"] = run("merge", "--format", "json", *facts)
    return reports


@pytest.mark.e2e
@pytest.mark.parametrize("size", ["large", "small"])
def test_each_document_gets_the_same_reader_in_every_process_and_shard(size: str, tmp_path: Path) -> None:
    """Which reader reads a document depends on the document and the whole input, never on
    what a process read before it: so `--jobs 1`, `--jobs 2` and shards give the same report
    even where the two readers would read a document differently (here made so on purpose).
    A large input (3 MB, workers start) is read with rapidyaml from every first document; in
    a small one, a stream's first 200 documents are libyaml's, whichever process reads it."""
    folder = tmp_path / "in"
    folder.mkdir()
    if size == "large":
        streams = [_config_maps(100, 900) for _ in range(30)]
        streams[0][2] = _REFUSED_BY_LIBYAML_ONLY
    else:  # one process reads 300 documents before the second file's, a shard only that file
        streams = [_config_maps(300, 10), _config_maps(10, 10)]
        streams[1][2] = _REFUSED_BY_LIBYAML_ONLY
    for number, documents in enumerate(streams):
        (folder / f"{number:02d}.yaml").write_text("---\n".join(documents))
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_SCREEN_OFF)
    reports = _reports_of_every_mode(folder, tmp_path, PYTHONPATH=os.pathsep.join([str(site), str(REPO_ROOT)]))
    assert reports["1"] == reports["2"] == reports["shards"], {mode: report[-300:] for mode, report in reports.items()}
    refused = json.loads(reports["1"])["summary"]["errors"] > 0
    assert refused == (size == "small")  # the small input's document is libyaml's in every mode
    # Not idle: the readers do read that document differently here.
    reference = _reports_of_every_mode(folder, tmp_path, DRA_GUARD_YAML_PARSER="pyyaml")
    assert json.loads(reference["1"])["summary"]["errors"] > 0
