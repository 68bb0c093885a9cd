"""Reports are written piece by piece, with exactly the text one json.dumps of the whole
report gives, and leave no cyclic garbage behind (issue 9 item 5: bounded memory)."""

from __future__ import annotations

import gc
import io
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dra_guard.contract.findings import ANNOTATION_WAIVER, Finding, ObjectRef, Report, Severity, WaiverTerms
from dra_guard.engine.run import check_stream
from dra_guard.present.report import FORMATS, renderer, writer
from dra_guard.present.report.json_report import _dumps, _finding_json
from dra_guard.read.loader import Source
from testkit.paths import REPO_ROOT

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=12,
)


@given(JSON_VALUES, st.sampled_from([0, 2, 6]))
def test_dumps_writes_what_json_dumps_with_an_indent_writes(value: Any, indent: int) -> None:
    assert _dumps(value, indent) == json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + " " * indent)


FINDINGS = st.builds(
    Finding,
    rule=st.text(max_size=6),
    severity=st.sampled_from(Severity),
    message=st.text(),
    object=st.builds(
        ObjectRef,
        st.text(max_size=5),
        st.text(max_size=5),
        st.text(max_size=5),
        st.text(max_size=5),
        st.text(max_size=3),
    ),
    path=st.text(max_size=8),
    remediation=st.text(max_size=8),
    file=st.none() | st.text(max_size=8),
    line=st.none() | st.integers(min_value=0),
    waiver=st.none() | st.text(max_size=5),
    facet=st.text(max_size=4),
    waiver_terms=st.none()
    | st.builds(WaiverTerms, st.none() | st.text(max_size=4), st.none() | st.dates(), st.text(max_size=6)),
)


def _entry(finding: Finding) -> dict[str, Any]:
    """A finding's entry in the JSON report, as a dict: what `_finding_json` writes."""
    ref = finding.object
    obj = {"apiVersion": ref.api_version, "kind": ref.kind, "namespace": ref.namespace, "name": ref.name}
    if ref.generate_name:
        obj["generateName"] = ref.generate_name
    entry: dict[str, Any] = {
        "rule": finding.rule,
        "facet": finding.facet or None,
        "severity": finding.severity.label,
        "message": finding.message,
        "file": finding.file,
        "line": finding.line,
        "object": obj,
        "path": finding.path,
        "remediation": finding.remediation,
    }
    if finding.waiver is not None:
        terms = finding.waiver_terms or ANNOTATION_WAIVER
        entry["waiver"] = finding.waiver
        entry["waiverOwner"] = terms.owner
        entry["waiverExpires"] = terms.expires.isoformat() if terms.expires is not None else None
        entry["waiverSource"] = terms.source
    return entry


@given(FINDINGS, st.sampled_from([0, 2, 6]))
def test_a_finding_is_written_as_its_dict_would_be(finding: Finding, indent: int) -> None:
    assert _finding_json(finding, indent) == _dumps(_entry(finding), indent)


@pytest.fixture(scope="module")
def report() -> Report:
    return check_stream(Source([str(REPO_ROOT / "tests" / "corpus"), str(REPO_ROOT / "tests" / "fixtures" / "crds")]))


@pytest.mark.parametrize("output_format", ["json", "sarif"])
def test_streamed_json_is_one_dump_of_the_whole(report: Report, output_format: str) -> None:
    text = renderer(output_format)(report)
    assert report.findings and report.errors
    assert text == json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n"


def _findings(count: int) -> list[Finding]:
    return [
        Finding(
            "DRA001", Severity.CRITICAL, "requests x", ObjectRef("v1", "Pod", "ns", f"p{i}"), "/spec", "fix", "f", i
        )
        for i in range(count)
    ]


@pytest.mark.parametrize("output_format", FORMATS)
def test_writing_a_report_leaves_no_cycles_for_the_collector(output_format: str) -> None:
    """The CLI runs the collector rarely: garbage only it can free would pile up."""
    report = Report(findings=_findings(2000))
    write = writer(output_format)
    gc.collect()
    gc.disable()
    try:
        write(report, io.StringIO())
        assert gc.collect() < 200  # a few from one-off work; one-per-finding would be thousands
    finally:
        gc.enable()
