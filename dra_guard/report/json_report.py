"""The JSON report: {"findings": [...], "errors": [...], "summary": {...}}.

Written finding by finding, with exactly the text `json.dumps(..., indent=2)` would give
for the whole report.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from dra_guard.findings import Finding, Report

if TYPE_CHECKING:
    from dra_guard.report import Output


def finding_dict(finding: Finding) -> dict[str, Any]:
    return {
        "rule": finding.rule,
        "severity": finding.severity.label,
        "message": finding.message,
        "file": finding.file,
        "line": finding.line,
        "object": {
            "apiVersion": finding.object.api_version,
            "kind": finding.object.kind,
            "namespace": finding.object.namespace,
            "name": finding.object.name,
        },
        "path": finding.path,
        "remediation": finding.remediation,
    }


def _dumps(value: Any, indent: int) -> str:
    """`value` as it appears nested `indent` spaces deep in an indent=2 document."""
    return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + " " * indent)


def write_items(out: Output, items: Any, indent: int) -> None:
    """A JSON array, one item at a time, as `_dumps(list(items), indent)` would write it."""
    written = False
    for item in items:
        out.write(("," if written else "[") + "\n" + " " * (indent + 2) + _dumps(item, indent + 2))
        written = True
    out.write("\n" + " " * indent + "]" if written else "[]")


def write_json(report: Report, out: Output) -> None:
    out.write('{\n  "findings": ')
    write_items(out, (finding_dict(finding) for finding in report.findings), 2)
    errors = [{"file": error.file, "line": error.line, "message": error.message} for error in report.errors]
    out.write(',\n  "errors": ' + _dumps(errors, 2))
    summary = {
        "files": report.files,
        "objects": report.objects,
        "findings": len(report.findings),
        "errors": len(report.errors),
    }
    out.write(',\n  "summary": ' + _dumps(summary, 2) + "\n}\n")
