"""`file:line: DRA0NN [severity] Kind/namespace/name: message`, then one summary line."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from dra_guard.findings import Report, Severity

if TYPE_CHECKING:
    from dra_guard.report import Output


def _location(file: str | None, line: int | None) -> str:
    return f"{file or '<object>'}:{line or 0}"


def write_text(report: Report, out: Output) -> None:
    for error in report.errors:
        out.write(
            f"{error.file}:{error.line}: error: {error.message}\n"
            if error.line
            else f"{error.file}: error: {error.message}\n"
        )
    for finding in report.findings:
        out.write(
            f"{_location(finding.file, finding.line)}: {finding.rule} [{finding.severity.label}] "
            f"{finding.object}: {finding.message}\n"
        )
    counts = Counter(finding.severity for finding in report.findings)
    by_severity = ", ".join(f"{counts[s]} {s.label}" for s in sorted(Severity, reverse=True) if counts[s])
    summary = f"{len(report.findings)} finding{'s' * (len(report.findings) != 1)}"
    if by_severity:
        summary += f" ({by_severity})"
    summary += (
        f" in {report.objects} object{'s' * (report.objects != 1)} from {report.files} file{'s' * (report.files != 1)}"
    )
    if report.errors:
        summary += f"; {len(report.errors)} input error{'s' * (len(report.errors) != 1)}"
    out.write(summary + "\n")
