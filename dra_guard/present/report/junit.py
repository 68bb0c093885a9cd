"""JUnit XML for CI test-report views (GitLab's `artifacts:reports:junit`, Jenkins' `junit`).

    <testsuites name="dra-guard" tests="4" failures="2" errors="1" skipped="1">
      <testsuite name="dra-guard" tests="2" failures="0" errors="1" skipped="0" time="0">
        <testcase classname="dra-guard" name="check" time="0"/>                    the run itself
        <testcase classname="dra-guard.input" name="k8s/bad.yaml:3" file="k8s/bad.yaml" time="0">
          <error type="input error" message="...">k8s/bad.yaml:3: ...</error>
        </testcase>
      </testsuite>
      <testsuite name="DRA0NN rule-name" tests="2" failures="1" ...>
        <testcase classname="dra-guard.DRA0NN" name="Pod/ns/p /spec/... [facet] (k8s/pod.yaml:13)"
                  file="k8s/pod.yaml" line="13" time="0">
          <failure type="critical" message="...">k8s/pod.yaml:13: Pod/ns/p: ...&#10;Fix: ...</failure>
        </testcase>
        <testcase ...><skipped message="waived: the waiver's reason"/></testcase>
      </testsuite>
    </testsuites>

One test suite per rule that found something (in the catalog's order), one test case per
finding: a failure, or skipped for a waived finding.  Per rule rather than per file,
because what CI views group and count is the suite: a rule's suite lists every object it
failed, as a test suite lists its failing tests, and Jenkins' history of a suite follows
one rule from run to run.  A first suite, `dra-guard`, always holds a passing `check` test
case (so a clean run is one passing test, never an empty report, which Jenkins fails) and
one `<error>` test case per input error, and a skipped one per chart or kustomization not
checked (in full).  Test cases are sorted (file, line, object, path), files are relative
to the directory dra-guard ran in, every value is XML-escaped (attributes with newlines
and tabs as character references) and characters XML 1.0 cannot hold (control
characters, lone surrogates) are written as `\\xNN` / `\\uNNNN`.  No timestamps or host
names: the same input gives the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape, quoteattr

from dra_guard.contract.findings import Finding, Report
from dra_guard.present.report.github import workspace_path
from dra_guard.present.report.links import rule_docs_link, rule_title
from dra_guard.present.report.text import summary_line
from dra_guard.rules import RULES

if TYPE_CHECKING:
    from dra_guard.present.report import Output

# What XML 1.0 cannot hold (its `Char` production): C0 controls but tab, LF and CR;
# surrogates; U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_ATTRIBUTE_ENTITIES = {"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _xml_chars(text: str) -> str:
    return _NOT_XML.sub(_escaped, text)


def text(value: str) -> str:
    """Element content."""
    return escape(_xml_chars(value), {"\r": "&#13;"})


def attribute(value: str) -> str:
    """A quoted attribute value: line breaks and tabs survive attribute normalization."""
    return quoteattr(_xml_chars(value), _ATTRIBUTE_ENTITIES)


def _attributes(pairs: Iterable[tuple[str, str | int | None]]) -> str:
    return "".join(f" {name}={attribute(str(value))}" for name, value in pairs if value is not None)


def _file(file: str | None) -> str | None:
    """As GitLab links it: relative to the directory dra-guard ran in (the repository root)."""
    return workspace_path(file) if file and file != "<stdin>" else file


def _where(file: str | None, line: int | None) -> str:
    place = _file(file) or "<object>"
    return f"{place}:{line}" if line else place


def _order(finding: Finding) -> tuple[str, int, str, str, str, str]:
    return (
        finding.file or "",
        finding.line or 0,
        str(finding.object),
        finding.path,
        finding.message,
        finding.waiver or "",
    )


def _testcase(finding: Finding) -> str:
    where = _where(finding.file, finding.line)
    head = "    <testcase" + _attributes(
        [
            ("classname", f"dra-guard.{finding.rule}"),
            (
                "name",
                f"{finding.object} {finding.path or '/'}{f' [{finding.facet}]' if finding.facet else ''} ({where})",
            ),
            ("file", _file(finding.file)),
            ("line", finding.line),
            ("time", "0"),
        ]
    )
    if finding.waiver is not None:
        return f"{head}>\n      <skipped{_attributes([('message', f'waived: {finding.waiver}')])}/>\n    </testcase>\n"
    body = (
        f"{where}: {finding.object}: {finding.message}\n"
        f"Path: {finding.path or '/'}\nFix: {finding.remediation}\nSee: {rule_docs_link(finding.rule)}"
    )
    failure = _attributes([("type", finding.severity.label), ("message", finding.message)])
    return f"{head}>\n      <failure{failure}>{text(body)}</failure>\n    </testcase>\n"


def _suite_head(name: str, tests: int, failures: int, errors: int, skipped: int) -> str:
    counts: list[tuple[str, str | int | None]] = [("tests", tests), ("failures", failures), ("errors", errors)]
    counts += [("skipped", skipped), ("time", "0")]
    return "  <testsuite" + _attributes([("name", name), *counts]) + ">\n"


def write_junit(report: Report, out: Output) -> None:
    by_rule: dict[str, list[Finding]] = {}
    for finding in [*report.findings, *report.waived]:
        by_rule.setdefault(finding.rule, []).append(finding)
    catalog = {rule_id: index for index, rule_id in enumerate(RULES)}
    rules = sorted(by_rule, key=lambda rule_id: (catalog.get(rule_id, len(catalog)), rule_id))
    failures, errors = len(report.findings), len(report.errors)
    skipped = len(report.waived) + len(report.unchecked)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(
        "<testsuites"
        + _attributes(
            [
                ("name", "dra-guard"),
                ("tests", 1 + errors + failures + skipped),
                ("failures", failures),
                ("errors", errors),
                ("skipped", skipped),
                ("time", "0"),
            ]
        )
        + ">\n"
    )
    unchecked = len(report.unchecked)
    out.write(_suite_head("dra-guard", 1 + errors + unchecked, 0, errors, unchecked))
    out.write(
        "    <testcase"
        + _attributes([("classname", "dra-guard"), ("name", "check"), ("time", "0")])
        + ">\n      <system-out>"
        + text(summary_line(report))
        + "</system-out>\n    </testcase>\n"
    )
    for error in sorted(report.errors, key=lambda e: (e.file, e.line or 0, e.message)):
        where = _where(error.file, error.line)
        out.write(
            "    <testcase"
            + _attributes(
                [
                    ("classname", "dra-guard.input"),
                    ("name", where),
                    ("file", _file(error.file)),
                    ("line", error.line),
                    ("time", "0"),
                ]
            )
            + ">\n      <error"
            + _attributes([("type", "input error"), ("message", error.message)])
            + f">{text(f'{where}: {error.message}')}</error>\n    </testcase>\n"
        )
    for item in report.unchecked:
        out.write(
            "    <testcase"
            + _attributes(
                [
                    ("classname", f"dra-guard.{item.what}"),
                    ("name", _where(item.path, None)),
                    ("file", _file(item.path)),
                    ("time", "0"),
                ]
            )
            + ">\n      <skipped"
            + _attributes([("message", f"{item.status}: {item.reason}")])
            + "/>\n    </testcase>\n"
        )
    out.write("  </testsuite>\n")
    for rule_id in rules:
        findings = sorted(by_rule[rule_id], key=_order)
        waived = sum(finding.waiver is not None for finding in findings)
        out.write(_suite_head(rule_title(rule_id), len(findings), len(findings) - waived, 0, waived))
        for finding in findings:
            out.write(_testcase(finding))
        out.write("  </testsuite>\n")
    out.write("</testsuites>\n")
