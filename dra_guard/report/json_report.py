"""The JSON report: {"findings": [...], "errors": [...], "summary": {...}}."""

from __future__ import annotations

import json
from typing import Any

from dra_guard.findings import Report


def report_dict(report: Report) -> dict[str, Any]:
    return {
        "findings": [
            {
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
            for finding in report.findings
        ],
        "errors": [{"file": error.file, "line": error.line, "message": error.message} for error in report.errors],
        "summary": {
            "files": report.files,
            "objects": report.objects,
            "findings": len(report.findings),
            "errors": len(report.errors),
        },
    }


def render_json(report: Report) -> str:
    return json.dumps(report_dict(report), indent=2, ensure_ascii=False) + "\n"
