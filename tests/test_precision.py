"""Finding-level precision and recall on real repositories (issue 20, "precision table").

tests/precision holds manifests copied verbatim from public projects (SOURCES.md: repository,
path, commit, licence), and judgement.yaml what a correct tool must report on each, judged by hand
from docs/rules.md at (file, object, rule) granularity. Each file is checked on its own, as
`dra-guard check FILE` does; what the engine reports is reduced to the same granularity and
compared: reported and judged is a true positive, reported and not judged a false positive,
judged and not reported a false negative. `tolerated` entries (allowed, not required) count as
neither. `pytest -s` prints the table; a failure message carries it too.
"""

from __future__ import annotations

from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from dra_guard.engine.run import check_stream
from dra_guard.read.loader import load_paths

#: The precision the engine must reach on this set (0.620 when the set was judged, 1.000 now);
#: the issue asks for at least 0.97 with the default configuration.
PRECISION_FLOOR = 0.97

#: Judged findings the current engine misses (11 when the set was judged, recall 0.910: the Spark
#: operator's executor.gpu, HAMi's Ascend and Moore Threads names, Volcano's sharing names and KAI
#: Scheduler's sharing annotations; none since issue 20, points 2 and 7). Recall must be 1.0 on
#: every other judged finding, and each entry here must still be missed: a fix removes its entry.
KNOWN_MISSES: frozenset[tuple[str, str, str]] = frozenset()

#: Pinned non-findings (judgement.yaml `non_findings`) the current engine still reports, each one
#: also a false positive (1 before Karpenter's NodePool limits were read as a cap, point 7).
PINNED_REPORTED = 0

PRECISION = Path(__file__).parent / "precision"
JUDGEMENT = PRECISION / "judgement.yaml"
RULE_IDS = {f"DRA{number:03d}" for number in range(1, 18)}


class Key(NamedTuple):
    file: str
    object: str
    rule: str

    def __str__(self) -> str:
        return f"{self.file}  {self.object}  {self.rule}"


def manifests() -> list[str]:
    return sorted(str(path.relative_to(PRECISION)) for path in PRECISION.rglob("*.yaml") if path != JUDGEMENT)


@cache
def judgement() -> dict[str, Any]:
    return yaml.safe_load(JUDGEMENT.read_text(encoding="utf-8"))


def judged(section: str) -> dict[Key, str]:
    entries = judgement().get(section) or []
    keys = {Key(entry["file"], entry["object"], entry["rule"]): entry["why"] for entry in entries}
    assert len(keys) == len(entries), f"{section}: an entry is listed twice"
    return keys


@cache
def reported(name: str) -> frozenset[Key]:
    """What the engine reports on one file, as the CLI checks it, without waived findings."""
    loaded = load_paths([str(PRECISION / name)])
    report = check_stream(loaded.documents)
    assert loaded.errors == [] and report.errors == [], (name, loaded.errors, report.errors)
    return frozenset(
        Key(name, f"{finding.object.kind}/{finding.object.name or finding.object.generate_name}", finding.rule)
        for finding in report.findings
        if finding.waiver is None
    )


class Score(NamedTuple):
    tp: int
    fp: int
    fn: int
    tolerated: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


class Outcome(NamedTuple):
    by_project: dict[str, Score]
    total: Score
    false_positives: list[Key]
    false_negatives: list[Key]
    table: str


def project(name: str) -> str:
    return name.split("/", 1)[0]


@cache
def outcome() -> Outcome:
    must, tolerated = judged("findings"), judged("tolerated")
    found = {key for name in manifests() for key in reported(name)}
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for name in manifests():
        counts[project(name)]  # every project gets a row, findings or not
    for key in found | set(must):
        row = counts[project(key.file)]
        if key in tolerated:
            row[3] += key in found
        elif key in found:
            row[0 if key in must else 1] += 1
        else:
            row[2] += 1
    by_project = {name: Score(*row) for name, row in sorted(counts.items())}
    total = Score(*(sum(score[i] for score in by_project.values()) for i in range(4)))
    false_positives = sorted(key for key in found if key not in must and key not in tolerated)
    false_negatives = sorted(key for key in must if key not in found)
    files = defaultdict(int)
    for name in manifests():
        files[project(name)] += 1
    lines = [
        f"{'project':<30} {'files':>5} {'TP':>4} {'FP':>4} {'FN':>4} {'tol':>4} {'precision':>9} {'recall':>7}",
    ]
    for name, score in [*by_project.items(), ("TOTAL", total)]:
        count = files[name] if name != "TOTAL" else len(manifests())
        lines.append(
            f"{name:<30} {count:>5} {score.tp:>4} {score.fp:>4} {score.fn:>4} {score.tolerated:>4} "
            f"{score.precision:>9.3f} {score.recall:>7.3f}"
        )
    lines += ["", f"false positives ({len(false_positives)}):", *(f"  {key}" for key in false_positives)]
    lines += [f"false negatives ({len(false_negatives)}):", *(f"  {key}" for key in false_negatives)]
    return Outcome(by_project, total, false_positives, false_negatives, "\n".join(lines))


def test_the_judgement_covers_exactly_the_files_of_the_set() -> None:
    described = set(judgement()["files"])
    assert described == set(manifests())
    for section in ("findings", "tolerated", "non_findings"):
        for key, why in judged(section).items():
            assert key.file in described, key
            assert key.rule in RULE_IDS and "/" in key.object and why.strip(), key
    must, tolerated, excluded = set(judged("findings")), set(judged("tolerated")), set(judged("non_findings"))
    assert not must & tolerated and not must & excluded and not tolerated & excluded


def test_every_file_has_a_source() -> None:
    sources = (PRECISION / "SOURCES.md").read_text(encoding="utf-8")
    for name in manifests():
        folder, file = name.split("/", 1)
        assert f"## {folder}/" in sources and f"| {file} |" in sources, name


@pytest.mark.parametrize("name", manifests())
def test_every_file_is_read_without_errors(name: str) -> None:
    reported(name)


def test_precision_and_recall() -> None:
    result = outcome()
    print("\n" + result.table)
    total = result.total
    missed = {tuple(key) for key in result.false_negatives}
    known = Score(total.tp, total.fp, total.fn - len(missed & KNOWN_MISSES), total.tolerated)
    message = (
        f"recall {total.recall:.3f}, {known.recall:.3f} without KNOWN_MISSES (must be 1.0); "
        f"precision {total.precision:.3f} (floor {PRECISION_FLOOR})\n"
        f"newly missed: {sorted(missed - KNOWN_MISSES)}\nno longer missed (remove from KNOWN_MISSES): "
        f"{sorted(KNOWN_MISSES - missed)}\n{result.table}"
    )
    assert missed == KNOWN_MISSES and known.recall == 1.0 and total.precision >= PRECISION_FLOOR, message


def test_the_readme_gives_todays_numbers() -> None:
    """The README's "Precision on real repositories" paragraph states this test's outcome."""
    readme = " ".join((Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8").split())
    result, projects = outcome(), len({project(name) for name in manifests()})
    total = result.total
    assert f"over {len(manifests())} real manifests from {projects} public projects" in readme
    today = f"Today: {total.tp} true findings, {total.fp} false, {total.fn} missed ({total.tolerated} tolerated:"
    assert today in readme, result.table


def test_pinned_non_findings_are_not_reported() -> None:
    """Reported anyway, they are already false positives; this names them with the judge's reason."""
    wrong = [f"{key}: {why}" for key, why in judged("non_findings").items() if key in reported(key.file)]
    print("\npinned non-findings reported:\n" + "\n".join(wrong))
    assert len(wrong) <= PINNED_REPORTED, "\n".join(wrong)
