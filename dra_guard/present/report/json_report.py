"""The JSON report: {"findings", "waived", "errors", "skipped", "unchecked", "summary"}.

With a baseline (`check --baseline`), "findings" holds the new findings only, and
"baselined" (findings the baseline records, after "waived") and "gone" (its entries no
finding matches any more) are added, with their counts in "summary".

A waived finding has its waiver's `waiver` (the reason), `waiverOwner` and `waiverExpires`
(YYYY-MM-DD; null when the waiver gives none) and `waiverSource` ("annotation", or the
configuration entry: "waivers[0] in .dra-guard.yaml").
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from dra_guard.contract.findings import ANNOTATION_WAIVER, Finding, Report

if TYPE_CHECKING:
    from dra_guard.present.report import Output


def _gone(report: Report) -> dict[str, Any]:
    """With a baseline: the baseline's entries that no finding matches any more."""
    if report.baseline is None:
        return {}
    return {
        "gone": [
            {"fingerprint": entry.fingerprint, "rule": entry.rule, "object": entry.object, "message": entry.message}
            for entry in report.gone
        ]
    }


def _tail(report: Report) -> dict[str, Any]:
    """Everything after the findings: small, whatever the size of the input."""
    baseline = {} if report.baseline is None else {"baselined": len(report.baselined), "gone": len(report.gone)}
    return {
        **_gone(report),
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
            **baseline,
        },
    }


def _dumps(value: Any, indent: int) -> str:
    """`value` exactly as `json.dumps(..., indent=2, ensure_ascii=False)` writes it nested
    `indent` spaces deep.

    Built here rather than by json.dumps with an indent: that runs the pure-Python encoder,
    whose nested closures are reference cycles, and one call per finding leaves thousands of
    cycles for the (rarely run, in the CLI) collector -- megabytes for a large report.
    Scalars go through json.dumps without an indent: the C encoder, no cycles.
    """
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = "\n" + " " * (indent + 2)
        entries = (f"{_string(str(key))}: {_dumps(item, indent + 2)}" for key, item in value.items())
        return "{" + inner + ("," + inner).join(entries) + "\n" + " " * indent + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        inner = "\n" + " " * (indent + 2)
        return "[" + inner + ("," + inner).join(_dumps(item, indent + 2) for item in value) + "\n" + " " * indent + "]"
    return _scalar(value)


#: What `json.dumps(text, ensure_ascii=False)` returns for a str, without the encoder
#: json.dumps makes for every call with an argument (most of a report's writing).
_string = json.encoder.encode_basestring
_CONSTANTS = {None: "null", True: "true", False: "false"}


def _scalar(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False)`, faster for the common exact types."""
    cls = value.__class__
    if cls is str:
        return _string(value)
    if cls is int:
        return int.__repr__(value)
    if cls is bool or value is None:
        return _CONSTANTS[value]
    return json.dumps(value, ensure_ascii=False)  # floats (nan, inf), subclasses: as json writes them


def write_items(out: Output, items: Iterable[Any], indent: int, dumps: Callable[[Any, int], str] = _dumps) -> None:
    """A JSON array, one item at a time, exactly as `_dumps(list(items), indent)` writes it
    (`dumps`: how an item is written, as `_dumps` writes it)."""
    written = False
    for item in items:
        out.write(("," if written else "[") + "\n" + " " * (indent + 2) + dumps(item, indent + 2))
        written = True
    out.write("\n" + " " * indent + "]" if written else "[]")


def _finding_json(finding: Finding, indent: int) -> str:
    """The finding's entry (rule, facet, severity, message, file, line, object, path,
    remediation, then a waiver's four keys) as `_dumps` writes it `indent` spaces deep,
    written straight from its fields, without a dict and the walk of it: most of a large
    report's writing, which one process does after every other has finished
    (tests/test_report_streaming.py holds it to `_dumps` of the entry's dict).

    `facet` says which of the rule's checks (docs/rules.md lists each rule's facets), null
    for a rule of one check; a waived finding has its reason, as it always had, and who
    answers for it, until when and where it is written beside it."""
    entry = "\n" + " " * (indent + 2)
    field = "\n" + " " * (indent + 4)
    ref = finding.object
    scalar = _scalar
    names = (
        f'"apiVersion": {scalar(ref.api_version)},{field}"kind": {scalar(ref.kind)},{field}'
        f'"namespace": {scalar(ref.namespace)},{field}"name": {scalar(ref.name)}'
    )
    if ref.generate_name:
        names += f',{field}"generateName": {scalar(ref.generate_name)}'
    text = (
        f'{{{entry}"rule": {scalar(finding.rule)},{entry}"facet": {scalar(finding.facet or None)},'
        f'{entry}"severity": {scalar(finding.severity.label)},{entry}"message": {scalar(finding.message)},'
        f'{entry}"file": {scalar(finding.file)},{entry}"line": {scalar(finding.line)},'
        f'{entry}"object": {{{field}{names}{entry}}},{entry}"path": {scalar(finding.path)},'
        f'{entry}"remediation": {scalar(finding.remediation)}'
    )
    if finding.waiver is not None:
        terms = finding.waiver_terms or ANNOTATION_WAIVER
        expires = terms.expires.isoformat() if terms.expires is not None else None
        text += (
            f',{entry}"waiver": {scalar(finding.waiver)},{entry}"waiverOwner": {scalar(terms.owner)},'
            f'{entry}"waiverExpires": {scalar(expires)},{entry}"waiverSource": {scalar(terms.source)}'
        )
    return text + "\n" + " " * indent + "}"


def write_json(report: Report, out: Output) -> None:
    """The report as one `json.dumps(..., indent=2)` of its dict would write it, one finding at
    a time: a report of many findings is never one string, nor one list of dicts."""
    out.write('{\n  "findings": ')
    write_items(out, report.findings, 2, _finding_json)
    out.write(',\n  "waived": ')
    write_items(out, report.waived, 2, _finding_json)
    if report.baseline is not None:
        out.write(',\n  "baselined": ')
        write_items(out, report.baselined, 2, _finding_json)
    for key, value in _tail(report).items():
        out.write(f',\n  "{key}": ' + _dumps(value, 2))
    out.write("\n}\n")


def render_json(report: Report) -> str:
    buffer = io.StringIO()
    write_json(report, buffer)
    return buffer.getvalue()
