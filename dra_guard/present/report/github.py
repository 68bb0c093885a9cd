"""GitHub Actions workflow commands: one annotation per finding, for repositories without
code scanning (`dra-guard check --format github`, `dra-guard init ci --annotations`).

    ::error file=k8s/pod.yaml,line=13,title=DRA0NN rule-name::Pod/ns/p: ... (docs/rules.md#dra0nn-rule-name)

* The level follows the severity: critical and high are `error`, medium `warning`, low
  `notice`.  Input errors are `error`s titled `input error`, what was left unchecked (a
  chart without helm) a `warning`.
* Waived findings are not annotated: they were accepted, and GitHub shows only the first
  few annotations of each level per step, which they would take from the findings still
  open.  The summary line counts them.
* Values are escaped as GitHub's runner reads them back: in the message `%`, CR and LF as
  `%25`, `%0D`, `%0A`; in a property (file, title) `:` and `,` as `%3A` and `%2C` too.
  So no value of a manifest (a name, a message quoting one) can end the line and start a
  command of its own.
* Files are given relative to the directory dra-guard ran in (the repository root, in a
  workflow), as GitHub resolves them; a file outside it keeps its absolute path.
* Findings are in file, line, rule order; the last line is the text report's summary, a
  plain log line.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from dra_guard.contract.findings import Finding, Report, Severity
from dra_guard.present.report.links import rule_docs_link, rule_title
from dra_guard.present.report.text import summary_line

if TYPE_CHECKING:
    from dra_guard.present.report import Output

LEVELS = {Severity.CRITICAL: "error", Severity.HIGH: "error", Severity.MEDIUM: "warning", Severity.LOW: "notice"}


def escape_data(text: str) -> str:
    """A command's message, as the runner unescapes it (`escapeData` of @actions/core)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A command's property value (`escapeProperty` of @actions/core)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workspace_path(file: str) -> str:
    """`file` relative to the working directory, with `/`; absolute when it lies outside."""
    absolute = os.path.abspath(file)
    relative = os.path.relpath(absolute)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep) or os.path.isabs(relative):
        return absolute.replace(os.sep, "/")
    return relative.replace(os.sep, "/")


def command(level: str, message: str, *, file: str | None = None, line: int | None = None, title: str = "") -> str:
    """One workflow command line: `::level file=...,line=...,title=...::message`."""
    properties = []
    if file and file != "<stdin>":
        properties.append(f"file={escape_property(workspace_path(file))}")
        if line:
            properties.append(f"line={line}")
    if title:
        properties.append(f"title={escape_property(title)}")
    head = f"::{level} {','.join(properties)}" if properties else f"::{level}"
    return f"{head}::{escape_data(message)}\n"


def _order(finding: Finding) -> tuple[str, int, str, str, str, str]:
    return (finding.file or "", finding.line or 0, finding.rule, str(finding.object), finding.path, finding.message)


def write_github(report: Report, out: Output) -> None:
    for error in report.errors:
        out.write(command("error", error.message, file=error.file, line=error.line, title="input error"))
    for finding in sorted(report.findings, key=_order):
        out.write(
            command(
                LEVELS[finding.severity],
                f"{finding.object}: {finding.message} ({rule_docs_link(finding.rule)})",
                file=finding.file,
                line=finding.line,
                title=rule_title(finding.rule),
            )
        )
    for unchecked in report.unchecked:
        out.write(
            command("warning", unchecked.reason, file=unchecked.path, title=f"{unchecked.what} {unchecked.status}")
        )
    out.write(summary_line(report) + "\n")
