"""SARIF 2.1.0 for GitHub code scanning: one rule entry per catalog rule, physical locations."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dra_guard import __version__
from dra_guard.findings import Finding, Report, Severity
from dra_guard.report.json_report import write_items
from dra_guard.rules import RULES

if TYPE_CHECKING:
    from dra_guard.report import Output

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVELS = {Severity.CRITICAL: "error", Severity.HIGH: "error", Severity.MEDIUM: "warning", Severity.LOW: "note"}
# GitHub orders alerts by this 0-10 number ("security-severity").
_SECURITY_SEVERITY = {Severity.CRITICAL: "9.5", Severity.HIGH: "8.0", Severity.MEDIUM: "5.0", Severity.LOW: "2.0"}


def _rules() -> list[dict[str, Any]]:
    return [
        {
            "id": rule.id,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": rule.rationale},
            "help": {
                "text": rule.remediation,
                "markdown": f"**{rule.id} {rule.name}**\n\n{rule.rationale}\n\n**Fix:** {rule.remediation}",
            },
            "defaultConfiguration": {"level": _LEVELS[rule.severity]},
            "properties": {
                "tags": ["security", "kubernetes", "dra"],
                "security-severity": _SECURITY_SEVERITY[rule.severity],
            },
        }
        for rule in RULES.values()
    ]


def _uri(file: str | None) -> str:
    if not file or file == "<stdin>":
        return "stdin"
    return file.replace("\\", "/").removeprefix("./")


def _result(finding: Finding, rule_index: Mapping[str, int]) -> dict[str, Any]:
    return {
        "ruleId": finding.rule,
        "ruleIndex": rule_index[finding.rule],
        "level": _LEVELS[finding.severity],
        "message": {"text": f"{finding.object}: {finding.message}. Fix: {finding.remediation}"},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(finding.file)},
                    "region": {"startLine": finding.line or 1},
                },
                "logicalLocations": [
                    {"name": str(finding.object), "fullyQualifiedName": f"{finding.object}{finding.path}"}
                ],
            }
        ],
        "partialFingerprints": {"draGuard/v1": f"{finding.rule}:{finding.object}:{finding.path}"},
        "properties": {"severity": finding.severity.label, "path": finding.path},
    }


def write_sarif(report: Report, out: Output) -> None:
    rule_index = {rule_id: index for index, rule_id in enumerate(RULES)}
    notifications = [
        {
            "level": "error",
            "message": {"text": error.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(error.file)},
                        "region": {"startLine": error.line or 1},
                    }
                }
            ],
        }
        for error in report.errors
    ]
    document = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "dra-guard",
                        "version": __version__,
                        "rules": _rules(),
                    }
                },
                "invocations": [
                    {"executionSuccessful": not report.errors, "toolExecutionNotifications": notifications}
                ],
                "results": [],
            }
        ],
    }
    # Everything but the results at once; the results one by one where the empty list is.
    head, _, tail = json.dumps(document, indent=2, ensure_ascii=False).rpartition('"results": []')
    out.write(head + '"results": ')
    write_items(out, (_result(finding, rule_index) for finding in report.findings), 6)
    out.write(tail + "\n")
