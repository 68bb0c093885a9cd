"""SARIF 2.1.0 for GitHub code scanning: one rule entry per catalog rule, physical locations.

File locations are URI references relative to `%SRCROOT%`, the directory dra-guard ran
in (`originalUriBaseIds`), percent-encoded per RFC 3986 so that spaces, `#`, `%` and
non-ASCII names survive; files outside it get absolute `file:` URIs.  Waived findings
are results with a suppression carrying the waiver's reason (`inSource` for an annotation,
`external` for the configuration's `waivers`, with its owner and expiry when it gives
them), so code-scanning dashboards show them as suppressed rather than not at all.  Checked
against a baseline, each other result has a `baselineState`: "new", or "unchanged" for one
the baseline records (at its usual level); baselined findings that are gone are a note among
the invocation's notifications, not "absent" results (which code scanning would show as alerts).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from dra_guard import __version__
from dra_guard.contract.findings import ANNOTATION_WAIVER, Finding, Report, Severity
from dra_guard.present.fingerprint import FINGERPRINT_KEY, fingerprint
from dra_guard.present.report.json_report import write_items
from dra_guard.present.report.links import rule_docs_link, rule_docs_uri
from dra_guard.present.report.text import gone_line
from dra_guard.rules import RULES

if TYPE_CHECKING:
    from dra_guard.present.report import Output

SOURCE_ROOT = "%SRCROOT%"
# RFC 3986 `pchar` minus ":" (unreserved and percent-encoded are handled by quote; ":" is
# encoded too, so that a first segment can never read as a URI scheme).
_SEGMENT_SAFE = "!$&'()*+,;=@"

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVELS = {Severity.CRITICAL: "error", Severity.HIGH: "error", Severity.MEDIUM: "warning", Severity.LOW: "note"}
# GitHub orders alerts by this 0-10 number ("security-severity").
_SECURITY_SEVERITY = {Severity.CRITICAL: "9.5", Severity.HIGH: "8.0", Severity.MEDIUM: "5.0", Severity.LOW: "2.0"}


def _help_uri(rule_id: str) -> dict[str, str]:
    """`helpUri`, which SARIF requires to be absolute: only when the repository's address is
    known (links.REPOSITORY_URL); `help` always names the docs/rules.md section."""
    uri = rule_docs_uri(rule_id)
    return {"helpUri": uri} if uri is not None else {}


def _rules() -> list[dict[str, Any]]:
    return [
        {
            "id": rule.id,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": rule.rationale},
            **_help_uri(rule.id),
            "help": {
                "text": f"{rule.remediation} See {rule_docs_link(rule.id)} in dra-guard's repository.",
                "markdown": f"**{rule.id} {rule.name}**\n\n{rule.rationale}\n\n**Fix:** {rule.remediation}\n\n"
                f"See `{rule_docs_link(rule.id)}` in dra-guard's repository.",
            },
            "defaultConfiguration": {"level": _LEVELS[rule.severity]},
            "properties": {
                "tags": ["security", "kubernetes", "dra"],
                "security-severity": _SECURITY_SEVERITY[rule.severity],
                **({"facets": dict(rule.facets)} if rule.facets else {}),
            },
        }
        for rule in RULES.values()
    ]


def _directory_uri(directory: str) -> str:
    """A folder as a `file:` URI ending in `/`, as SARIF requires of a base URI."""
    return Path(directory).as_uri().rstrip("/") + "/"


def artifact_location(file: str | None) -> dict[str, str]:
    """An artifactLocation: relative to %SRCROOT% when the file lies under it."""
    if not file or file == "<stdin>":
        return {"uri": "stdin"}
    absolute = os.path.abspath(file)
    relative = os.path.relpath(absolute)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep) or os.path.isabs(relative):
        return {"uri": Path(absolute).as_uri()}
    segments = relative.replace(os.sep, "/").split("/")
    return {"uri": "/".join(quote(segment, safe=_SEGMENT_SAFE) for segment in segments), "uriBaseId": SOURCE_ROOT}


def _physical_location(file: str | None, line: int | None) -> dict[str, Any]:
    location: dict[str, Any] = {"artifactLocation": artifact_location(file)}
    if line is not None or file is None or file == "<stdin>":
        location["region"] = {"startLine": line or 1}
    return location


def _result(finding: Finding, rule_index: int, baseline_state: str | None) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": finding.rule,
        "ruleIndex": rule_index,
        "level": _LEVELS[finding.severity],
        "message": {"text": f"{finding.object}: {finding.message}. Fix: {finding.remediation}"},
        "locations": [
            {
                "physicalLocation": _physical_location(finding.file, finding.line),
                "logicalLocations": [
                    {"name": str(finding.object), "fullyQualifiedName": f"{finding.object}{finding.path}"}
                ],
            }
        ],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint(finding)},
        "properties": {"severity": finding.severity.label, "path": finding.path},
    }
    if finding.facet:
        result["properties"]["facet"] = finding.facet
    if finding.waiver is not None:
        result["suppressions"] = [_suppression(finding.waiver, finding)]
    if baseline_state is not None:
        result["baselineState"] = baseline_state
    return result


def _suppression(reason: str, finding: Finding) -> dict[str, Any]:
    """An annotation's waiver is `inSource`, a configuration's `external`; the owner and the
    expiry, when the waiver gives them, are in the justification and the properties."""
    terms = finding.waiver_terms or ANNOTATION_WAIVER
    suppression: dict[str, Any] = {
        "kind": "external" if terms.external else "inSource",
        "status": "accepted",
        "justification": reason,
    }
    properties: dict[str, str] = {}
    said = []
    if terms.owner is not None:
        properties["owner"] = terms.owner
        said.append(f"owner {terms.owner}")
    if terms.expires is not None:
        properties["expires"] = terms.expires.isoformat()
        said.append(f"expires {properties['expires']}")
    if terms.external:
        properties["source"] = terms.source
    if said:
        suppression["justification"] = f"{reason} ({', '.join(said)})"
    if properties:
        suppression["properties"] = properties
    return suppression


def write_sarif(report: Report, out: Output) -> None:
    rule_index = {rule_id: index for index, rule_id in enumerate(RULES)}
    # With a baseline, each finding is "new" or "unchanged" (SARIF 2.1.0, 3.27.24); waived
    # ones are not compared with it and carry no baselineState.
    compared = report.baseline is not None
    states: list[tuple[Finding, str | None]] = [
        *((finding, "new" if compared else None) for finding in report.findings),
        *((finding, "unchanged") for finding in report.baselined),
        *((finding, None) for finding in report.waived),
    ]
    ordered = sorted(
        states,
        key=lambda item: (
            item[0].file or "",
            item[0].line or 0,
            item[0].rule,
            str(item[0].object),
            item[0].path,
            item[0].message,
            item[0].waiver or "",
            item[1] or "",
        ),
    )
    notifications: list[dict[str, Any]] = [
        {
            "level": "error",
            "message": {"text": error.message},
            "locations": [{"physicalLocation": _physical_location(error.file, error.line or 1)}],
        }
        for error in report.errors
    ]
    notifications += [
        {
            "level": "warning",
            "message": {"text": f"{unchecked.status}: {unchecked.reason}"},
            "locations": [{"physicalLocation": {"artifactLocation": artifact_location(unchecked.path)}}],
        }
        for unchecked in report.unchecked
    ]
    if report.gone:
        notifications.append({"level": "note", "message": {"text": gone_line(report)}})
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
                "originalUriBaseIds": {SOURCE_ROOT: {"uri": _directory_uri(os.path.abspath(os.curdir))}},
                "invocations": [
                    {"executionSuccessful": not report.errors, "toolExecutionNotifications": notifications}
                ],
                "results": [],
            }
        ],
    }
    # Everything but the results at once; the results one by one where the empty list is
    # (the last key of the document), as one json.dumps of the whole document writes them.
    head, _, tail = json.dumps(document, indent=2, ensure_ascii=False).rpartition('"results": []')
    out.write(head + '"results": ')
    write_items(out, (_result(finding, rule_index[finding.rule], state) for finding, state in ordered), 6)
    out.write(tail + "\n")
