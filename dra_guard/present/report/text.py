"""`file:line: DRA0NN [severity] Kind/namespace/name: message`, each followed by an indented
`see docs/rules.md#<rule slug>` line (the rule's section of the docs), what was not checked,
one summary line.

The finding's own line is unchanged by the `see` line under it: whatever reads the first
(an editor's problem matcher, a grep) reads it as before.

The summary says what was checked and what was not (files skipped as no manifests,
charts not rendered, findings waived or baselined), so that a run that checked nothing never reads
like a clean pass.

With `color` (the CLI decides: a terminal, not NO_COLOR; README, "Colour") severities are
coloured and rule IDs bold with ANSI SGR codes; without it the text is byte for byte the
same as the coloured text with those codes taken out.
"""

from __future__ import annotations

import io
from collections import Counter
from typing import TYPE_CHECKING

from dra_guard.contract.findings import Report, Severity
from dra_guard.present.report.links import rule_docs_link

if TYPE_CHECKING:
    from dra_guard.present.report import Output


#: ANSI SGR sequences: critical bold red, high red, medium yellow, low cyan; rule IDs bold.
_SEVERITY_COLORS = {
    Severity.CRITICAL: "\x1b[1;31m",
    Severity.HIGH: "\x1b[31m",
    Severity.MEDIUM: "\x1b[33m",
    Severity.LOW: "\x1b[36m",
}
_BOLD = "\x1b[1m"
_RED = "\x1b[31m"
_RESET = "\x1b[0m"


def _paint(text: str, sgr: str, color: bool) -> str:
    return f"{sgr}{text}{_RESET}" if color else text


#: Control characters a file name may hold (a newline), escaped where a line names it: one
#: finding stays one line for grep and for editors that jump to `file:line`.
_CONTROLS = {code: f"\\x{code:02x}" for code in (*range(32), 127)}


def _named(file: str) -> str:
    return file.translate(_CONTROLS)


def _location(file: str | None, line: int | None) -> str:
    if file is not None and line is None:
        return _named(file)  # an object rendered by helm: its template has no line to point at
    return f"{_named(file) if file else '<object>'}:{line or 0}"


def _plural(count: int, singular: str, plural: str) -> str:
    return f"{count} {singular if count == 1 else plural}"


def summary_line(report: Report) -> str:
    parts = []
    if report.files == 0 and not report.errors:
        parts.append("no Kubernetes manifest checked")
    else:
        counts = Counter(finding.severity for finding in report.findings)
        by_severity = ", ".join(f"{counts[s]} {s.label}" for s in sorted(Severity, reverse=True) if counts[s])
        new = "new " if report.baseline is not None else ""
        found = _plural(len(report.findings), f"{new}finding", f"{new}findings")
        found += f" ({by_severity})" if by_severity else ""
        parts.append(
            f"{found} in {_plural(report.objects, 'object', 'objects')} from {_plural(report.files, 'file', 'files')}"
        )
    if report.baselined:
        parts.append(_plural(len(report.baselined), "finding", "findings") + " baselined")
    if report.waived:
        parts.append(_plural(len(report.waived), "finding", "findings") + " waived")
    if report.skipped:
        skipped = len(report.skipped)
        what = "file that is not a Kubernetes manifest" if skipped == 1 else "files that are not Kubernetes manifests"
        parts.append(f"skipped {skipped} {what}")
    groups = Counter((unchecked.what, unchecked.status) for unchecked in report.unchecked)
    for (what, status), count in groups.items():
        parts.append(f"{_plural(count, what, what + ('es' if what.endswith('x') else 's'))} {status}")
    if report.errors:
        parts.append(_plural(len(report.errors), "input error", "input errors"))
    return "; ".join(parts)


def write_text(report: Report, out: Output, *, color: bool = False) -> None:
    """The report; `color`: ANSI colours for a terminal (the caller decides, never this)."""
    error_word = _paint("error", _RED, color)
    for error in report.errors:
        out.write(
            f"{_named(error.file)}:{error.line}: {error_word}: {error.message}\n"
            if error.line
            else f"{_named(error.file)}: {error_word}: {error.message}\n"
        )
    for finding in report.findings:
        rule = _paint(finding.rule, _BOLD, color)
        severity = _paint(finding.severity.label, _SEVERITY_COLORS[finding.severity], color)
        out.write(
            f"{_location(finding.file, finding.line)}: {rule} [{severity}] "
            f"{finding.object}: {finding.message}\n  see {rule_docs_link(finding.rule)}\n"
        )
    for unchecked in report.unchecked:
        out.write(f"{unchecked}\n")
    if report.gone:
        out.write(gone_line(report) + "\n")
    out.write(summary_line(report) + "\n")


def gone_line(report: Report) -> str:
    """What is said of baselined findings that no longer occur (they do not fail the check)."""
    gone = len(report.gone)
    are = "finding is" if gone == 1 else "findings are"
    return f"{report.baseline}: {gone} baselined {are} gone; rewrite the baseline (--write-baseline)"


def render_text(report: Report, *, color: bool = False) -> str:
    buffer = io.StringIO()
    write_text(report, buffer, color=color)
    return buffer.getvalue()
