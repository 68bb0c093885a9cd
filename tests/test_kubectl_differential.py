"""The reader against the real kubectl: the same objects, or a refusal -- never more.

For every file, either the reader refuses nothing and yields exactly the objects
kubectl would send (types included: `true` is not `"true"`, 1 is not 1.0), or it
refuses part of the file (an InputError) and yields only objects kubectl sends too, in
kubectl's order.  kubectl is the one on the machine (`kubectl_oracle.py` says how it
is asked); these tests fail, never skip, without it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dra_guard.contract.findings import InputError
from dra_guard.read.loader import Document, iter_bytes
from tests.kubectl_cases import CASES
from tests.kubectl_oracle import LABEL, KubectlRead, is_subsequence, kubectl_version, read_many, same_objects
from tests.manifest_strategies import manifest_file

pytestmark = pytest.mark.e2e  # every test here starts a process (tests/conftest.py)

#: Files per kubectl batch, and batches: about 25 s on two busy cores.
FILES_PER_EXAMPLE = 12
EXAMPLES = 40


def _verdict(data: bytes, name: str, kubectl: KubectlRead) -> str:
    """How the reader and kubectl compare on one file; "BAD: ..." when the reader is wrong."""
    items = list(iter_bytes(data, name))
    objects = [item.obj for item in items if isinstance(item, Document)]
    errors = [item for item in items if isinstance(item, InputError)]
    if not errors:
        if kubectl.failed:
            return f"BAD: kubectl refuses what the reader accepts: {kubectl.message}"
        if not same_objects(objects, kubectl.objects):
            return f"BAD: the reader yields {objects}, kubectl sends {kubectl.objects}"
        return "same"
    if not is_subsequence(objects, kubectl.objects):
        return f"BAD: the reader yields {objects}, more than kubectl sends {kubectl.objects} ({errors})"
    return "both refuse" if kubectl.failed else "only the reader refuses"


def test_kubectl_is_here_and_reads_offline(tmp_path: Path) -> None:
    assert kubectl_version().startswith("v1.")
    path = tmp_path / "pod.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n")
    (read,) = read_many([path], tmp_path / "scratch")
    assert read.objects == [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}] and not read.failed


def test_hand_written_cases_match_kubectl(tmp_path: Path) -> None:
    paths = []
    for case in CASES:
        path = tmp_path / case.name
        path.write_bytes(case.data)
        paths.append(path)
    reads = read_many(paths, tmp_path / "scratch")
    wrong = []
    for case, kubectl in zip(CASES, reads, strict=True):
        verdict = _verdict(case.data, case.name, kubectl)
        expected = {"same": "same", "fails": "both refuse", "sends": "only the reader refuses"}[case.kubectl]
        if case.kubectl == "same" and not same_objects(kubectl.objects, case.sent):
            wrong.append(f"{case.id}: kubectl sends {kubectl.objects}, the case says {case.sent}")
        if verdict != expected:
            wrong.append(f"{case.id}: {verdict} (expected {expected}; kubectl: {kubectl.message or 'no error'})")
    assert wrong == [], "\n".join(wrong)


def _without_labels(obj: Any) -> Any:
    """The object without its labels (`kubectl label` adds one, maybe to new maps)."""
    copy = dict(obj)
    if isinstance(copy.get("metadata"), dict):
        copy["metadata"] = {key: value for key, value in copy["metadata"].items() if key != "labels"}
        if not copy["metadata"]:
            del copy["metadata"]
    return copy


def test_the_oracle_changes_nothing_kubectl_label_would_not(tmp_path: Path) -> None:
    """`patch --local` with `{}` prints what `label --local` does, but for the label."""
    cases = [case for case in CASES if case.kubectl == "same" and case.sent]
    paths = []
    for case in cases:
        path = tmp_path / case.name
        path.write_bytes(case.data)
        paths.append(path)
    labelled = read_many(paths, tmp_path / "label", LABEL)
    for case, read in zip(cases, labelled, strict=True):
        assert not read.failed, (case.id, read.message)
        assert all(obj["metadata"]["labels"]["dra-guard-probe"] == "x" for obj in read.objects), case.id
        expected = [_without_labels(obj) for obj in case.sent]
        assert same_objects([_without_labels(obj) for obj in read.objects], expected), case.id


def test_generated_manifests_match_kubectl(tmp_path: Path) -> None:
    verdicts: Counter[str] = Counter()
    batches = iter(range(10**6))

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.lists(manifest_file(), min_size=FILES_PER_EXAMPLE, max_size=FILES_PER_EXAMPLE))
    def compare(files: list[bytes]) -> None:
        directory = tmp_path / f"batch-{next(batches)}"
        directory.mkdir()
        paths = []
        for number, data in enumerate(files):
            path = directory / f"m{number}.{'json' if data.lstrip().startswith(b'{') else 'yaml'}"
            path.write_bytes(data)
            paths.append(path)
        for path, data, kubectl in zip(paths, files, read_many(paths, directory / "scratch"), strict=True):
            verdict = _verdict(data, path.name, kubectl)
            assert not verdict.startswith("BAD"), f"{verdict}\n--- {path.name} ---\n{data.decode(errors='replace')}"
            verdicts[verdict] += 1

    compare()
    accepted_by_kubectl = verdicts["same"] + verdicts["only the reader refuses"]
    # The corpus must exercise both sides, and the reader must not get by on refusing:
    # it refuses only what kubectl itself leaves to chance (keys that collide in Go's map).
    assert verdicts["same"] >= EXAMPLES * FILES_PER_EXAMPLE // 4, verdicts
    assert verdicts["both refuse"] >= EXAMPLES * FILES_PER_EXAMPLE // 4, verdicts
    assert verdicts["only the reader refuses"] <= accepted_by_kubectl // 20, verdicts


def test_point1_regressions_match_kubectl_with_either_reader(tmp_path: Path) -> None:
    """Issue 20, point 1: the inputs the fast reader read differently from kubectl (a
    comment inside a flow collection, empty keys, lines of spaces in block scalars):
    kubectl sends what the cases say, and both readers now read them as kubectl does."""
    from dra_guard.kubectl_yaml import fast
    from tests.test_fast_reader import POINT1_REGRESSIONS

    paths = []
    for name, text, _ in POINT1_REGRESSIONS:
        path = tmp_path / f"{name}.yaml"
        path.write_text(text)
        paths.append(path)
    reads = read_many(paths, tmp_path / "scratch")
    wrong = []
    for (name, text, expected), path, kubectl in zip(POINT1_REGRESSIONS, paths, reads, strict=True):
        if isinstance(expected, list):
            assert not kubectl.failed and same_objects(kubectl.objects, expected), (name, kubectl)
        else:
            assert kubectl.failed and not kubectl.objects, (name, kubectl)
        for module in (fast._Rapidyaml.load(), None):
            saved = fast._Rapidyaml.module
            fast._Rapidyaml.module = module
            try:
                verdict = _verdict(text.encode(), path.name, kubectl)
            finally:
                fast._Rapidyaml.module = saved
            if verdict != ("same" if isinstance(expected, list) else "both refuse"):
                wrong.append(f"{name} ({'rapidyaml' if module else 'pyyaml'}): {verdict}")
    assert wrong == []
