"""Every fixture of tests/fixtures/crds gives exactly the findings expected.yaml lists.

Each file is checked on its own, as `dra-guard check FILE` would; findings are compared as
(rule, document index, JSON pointer), plus the pointer inside a string or patch file
(`inner`, which the finding's message names) and that file (`file`).  Entries marked
`stretch` (beyond what the issues ask) are allowed but not required; a file whose entry
gives an `alternative` of an input error may give that error instead of its findings.

The fixtures' compliant claims were built before DRA003 asked for the exclusivity guard
selector where it compiles (Kubernetes 1.36 on): they are checked for Kubernetes 1.35,
where the annotation is what exclusivity rests on, so that only the pod templates speak.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_guard.contract.findings import Finding, Report
from dra_guard.engine.run import check_stream
from dra_guard.read.inputs import Inputs
from dra_guard.read.loader import Source
from dra_guard.read.walk import Ignores, select
from testkit.paths import REPO_ROOT
from testkit.rulecases import config

BEFORE_THE_GUARD = config({"kubernetes-version": "1.35"})

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "crds"
EXPECTED: dict[str, Any] = yaml.safe_load((FIXTURES / "expected.yaml").read_text(encoding="utf-8"))["fixtures"]
FILES = sorted(str(path.relative_to(FIXTURES)) for path in FIXTURES.rglob("*.yaml") if path.name != "expected.yaml")
#: What this checker answers where expected.yaml allows an input error instead of findings.
INPUT_ERROR_INSTEAD = {"list-nested.yaml"}


def _documents(path: Path) -> list[Any]:
    return [document for document in yaml.safe_load_all(path.read_text(encoding="utf-8")) if document is not None]


def _document_index(documents: list[Any], finding: Finding) -> int:
    matches = [
        index
        for index, document in enumerate(documents)
        if isinstance(document, dict)
        and document.get("kind", "Kustomization") == (finding.object.kind or "Kustomization")
        and (document.get("metadata") or {}).get("name", "") == finding.object.name
    ]
    assert len(matches) == 1, finding
    return matches[0]


def _key(entry: dict[str, Any]) -> tuple[str, int, str]:
    return entry["rule"], entry["doc"], entry["pointer"]


def test_every_fixture_is_listed_or_expects_nothing() -> None:
    assert set(EXPECTED) - set(FILES) == set(), "expected.yaml names files that do not exist"


#: Folders checked as a whole, as `dra-guard check FOLDER` walks them where no kustomize
#: renders them (the fallback; tests/test_kustomize.py checks them rendered): a
#: kustomization's patch files are read through it, and a JSON 6902 patch file (a YAML
#: list, no manifest) is skipped by the walk rather than refused.
FOLDERS = ("kustomize", "kustomize-overlay")


def _check(name: str) -> Report:
    folder = name.split("/", 1)[0]
    if folder not in FOLDERS:
        return check_stream(Source([str(FIXTURES / name)]), BEFORE_THE_GUARD)
    inputs = Inputs(select([str(FIXTURES / folder)], ignores=Ignores(gitignore=False)), kustomize=())
    report = check_stream(inputs, BEFORE_THE_GUARD)
    path = str(FIXTURES / name)
    report.findings = [finding for finding in report.findings if finding.file == path]
    report.errors = [error for error in report.errors if error.file == path]
    if name.endswith("gpu-json6902-patch.yaml"):
        assert path in inputs.skipped
    return report


@pytest.mark.parametrize("name", FILES)
def test_fixture_findings(name: str) -> None:
    entry = EXPECTED.get(name, {"expect": []})
    report = _check(name)
    if name in INPUT_ERROR_INSTEAD:
        assert "alternative" in entry and "input error" in entry["alternative"]
        assert report.errors and report.findings == []
        return
    assert report.errors == []
    documents = _documents(FIXTURES / name)
    found: dict[tuple[str, int, str], list[Finding]] = {}
    for finding in report.findings:
        found.setdefault((finding.rule, _document_index(documents, finding), finding.path), []).append(finding)
    expected = [item for item in entry["expect"] if not item.get("stretch")]
    stretch = [item for item in entry["expect"] if item.get("stretch")]
    assert {_key(item) for item in expected} <= set(found), f"missing findings in {name}"
    assert set(found) <= {_key(item) for item in expected + stretch}, f"unexpected findings in {name}"
    for item in expected + stretch:
        if "inner" not in item or _key(item) not in found:
            continue
        messages = [finding.message for finding in found[_key(item)]]
        assert any(item["inner"] in message for message in messages), messages
        if "file" in item:
            assert any(item["file"] in message for message in messages), messages


def test_the_stretch_cases_this_checker_covers() -> None:
    """Argo resource templates are read (their manifest is an object in a string);
    claims inside a podSpecPatch are not judged for sharing."""
    manifest = check_stream(Source([str(FIXTURES / "argo-workflow-resource-manifest.yaml")]), BEFORE_THE_GUARD)
    assert [finding.path for finding in manifest.findings] == ["/spec/templates/0/resource/manifest"]
    patch = check_stream(Source([str(FIXTURES / "argo-workflow-podspecpatch-shared-claim.yaml")]), BEFORE_THE_GUARD)
    assert patch.findings == [] and patch.errors == []
