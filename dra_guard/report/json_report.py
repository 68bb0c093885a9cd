"""The JSON report: {"findings", "waived", "errors", "skipped", "unchecked", "summary"}."""

from __future__ import annotations

import json
from typing import Any

from dra_guard.findings import Finding, Report


def _finding_dict(finding: Finding) -> dict[str, Any]:
    obj = {
        "apiVersion": finding.object.api_version,
        "kind": finding.object.kind,
        "namespace": finding.object.namespace,
        "name": finding.object.name,
    }
    if finding.object.generate_name:
        obj["generateName"] = finding.object.generate_name
    entry: dict[str, Any] = {
        "rule": finding.rule,
        "severity": finding.severity.label,
        "message": finding.message,
        "file": finding.file,
        "line": finding.line,
        "object": obj,
        "path": finding.path,
        "remediation": finding.remediation,
    }
    if finding.waiver is not None:
        entry["waiver"] = finding.waiver
    return entry


def report_dict(report: Report) -> dict[str, Any]:
    return {
        "findings": [_finding_dict(finding) for finding in report.findings],
        "waived": [_finding_dict(finding) for finding in report.waived],
        "errors": [{"file": error.file, "line": error.line, "message": error.message} for error in report.errors],
        "skipped": list(report.skipped),
        "unchecked": [{"path": item.path, "reason": item.reason} for item in report.unchecked],
        "summary": {
            "files": report.files,
            "objects": report.objects,
            "findings": len(report.findings),
            "waived": len(report.waived),
            "errors": len(report.errors),
            "skipped": len(report.skipped),
            "unchecked": len(report.unchecked),
        },
    }


def render_json(report: Report) -> str:
    return json.dumps(report_dict(report), indent=2, ensure_ascii=False) + "\n"
