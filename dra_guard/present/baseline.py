"""Baselines: today's findings recorded (`check --write-baseline FILE`), so that a check
against them (`check --baseline FILE`) fails only on new ones.

The file is JSON, written deterministically (sorted keys, two-space indent, entries sorted,
UTF-8, a final newline), so that it diffs well and is byte-identical for the same findings:

    {
      "findings": [
        {
          "fingerprint": "DRA001:Pod/-/gpu:/spec/containers/0/resources/limits/nvidia.com~1gpu",
          "message": "requests legacy accelerator resource 'nvidia.com/gpu' in limits ...",
          "object": "Pod/-/gpu",
          "rule": "DRA001"
        }
      ],
      "format": "dra-guard-baseline",
      "version": 1
    }

One entry per finding (an object that repeats a finding, in two overlays, has two).  Findings
are matched by fingerprint (`dra_guard.present.fingerprint`: rule, object, JSON pointer, as
SARIF's `partialFingerprints`), never by file or line: moving or reformatting a file keeps its
findings baselined.  An entry whose message also matches is preferred, so that the entries left
over, the findings that are gone, are the right ones.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

from dra_guard.contract.findings import BaselineEntry, Finding, Report
from dra_guard.present.fingerprint import fingerprint

BASELINE_FORMAT = "dra-guard-baseline"
BASELINE_VERSION = 1
_ENTRY_KEYS = ("fingerprint", "rule", "object", "message")


class BaselineError(ValueError):
    """A baseline file that cannot be used; the message names the file."""


def baseline_entry(finding: Finding) -> BaselineEntry:
    return BaselineEntry(fingerprint(finding), finding.rule, str(finding.object), finding.message)


def render_baseline(findings: Iterable[Finding]) -> str:
    """The baseline file of `findings` (waived findings are not given: their waiver covers them)."""
    entries = sorted(baseline_entry(finding) for finding in findings)
    document = {
        "format": BASELINE_FORMAT,
        "version": BASELINE_VERSION,
        "findings": [{key: getattr(entry, key) for key in _ENTRY_KEYS} for entry in entries],
    }
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def parse_baseline(data: bytes, source: str) -> list[BaselineEntry]:
    """The entries of a baseline file's bytes; BaselineError saying what is wrong with it."""
    try:
        document: Any = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise BaselineError(f"baseline {source}: not UTF-8") from None
    except json.JSONDecodeError as error:
        raise BaselineError(f"baseline {source}:{error.lineno}: not JSON: {error.msg}") from None
    except RecursionError:
        raise BaselineError(f"baseline {source}: nested too deeply to be a baseline") from None
    if not isinstance(document, dict) or document.get("format") != BASELINE_FORMAT:
        raise BaselineError(
            f'baseline {source}: not a dra-guard baseline (no "format": "{BASELINE_FORMAT}"); '
            "write one with `dra-guard check --write-baseline FILE`"
        )
    version = document.get("version")
    if version != BASELINE_VERSION or isinstance(version, bool):
        raise BaselineError(
            f"baseline {source}: version {json.dumps(version)} is not one this dra-guard reads ({BASELINE_VERSION})"
        )
    findings = document.get("findings")
    if not isinstance(findings, list):
        raise BaselineError(f'baseline {source}: "findings" must be a list')
    entries = []
    for index, item in enumerate(findings):
        if not isinstance(item, dict) or not all(isinstance(item.get(key), str) for key in _ENTRY_KEYS):
            raise BaselineError(f"baseline {source}: findings[{index}] must hold the strings {', '.join(_ENTRY_KEYS)}")
        entries.append(BaselineEntry(*(item[key] for key in _ENTRY_KEYS)))
    return entries


def apply_baseline(report: Report, entries: Iterable[BaselineEntry], source: str) -> None:
    """Move the findings `entries` record from `report.findings` to `report.baselined`, and
    list the entries no finding matches in `report.gone`.  Each entry matches one finding:
    first one with the same fingerprint and message, then one with the same fingerprint."""
    left = Counter(entries)
    keys = [baseline_entry(finding) for finding in report.findings]
    matched: set[int] = set()
    for index, key in enumerate(keys):
        if left[key] > 0:
            left[key] -= 1
            matched.add(index)
    # What is left, by fingerprint, in entry order: taken by findings whose message changed.
    spare: dict[str, list[BaselineEntry]] = {}
    for entry in sorted(left.elements()):
        spare.setdefault(entry.fingerprint, []).append(entry)
    for index, key in enumerate(keys):
        if index not in matched and spare.get(key.fingerprint):
            spare[key.fingerprint].pop(0)
            matched.add(index)
    findings = report.findings
    report.baseline = source
    report.findings = [finding for index, finding in enumerate(findings) if index not in matched]
    report.baselined = [finding for index, finding in enumerate(findings) if index in matched]
    report.gone = sorted(entry for entries_left in spare.values() for entry in entries_left)
