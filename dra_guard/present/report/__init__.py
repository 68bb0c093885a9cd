"""Report formats for `dra-guard check`: text (people), json (scripts), sarif (code scanning),
github (workflow annotations), junit (CI test reports), policyreport (wgpolicyk8s.io reports).

Each format writes its report piece by piece to an output (`writer`), so that a report of
many findings is never built as one string; `renderer` gives the same text as a string.
"""

from __future__ import annotations

import importlib
import io
from collections.abc import Callable
from typing import Protocol

from dra_guard.contract.findings import Report  # light: the CLI reads FORMATS to build its parser


class Output(Protocol):
    """Where a report is written: a text stream, or anything with its `write`."""

    def write(self, text: str, /) -> object: ...


# format -> (module, function); a format's module is imported only when it is used.
_WRITERS = {
    "text": ("dra_guard.present.report.text", "write_text"),
    "json": ("dra_guard.present.report.json_report", "write_json"),
    "sarif": ("dra_guard.present.report.sarif", "write_sarif"),
    "github": ("dra_guard.present.report.github", "write_github"),
    "junit": ("dra_guard.present.report.junit", "write_junit"),
    "policyreport": ("dra_guard.present.report.policyreport", "write_policyreport"),
}
FORMATS = tuple(_WRITERS)


def writer(output_format: str) -> Callable[[Report, Output], None]:
    module, function = _WRITERS[output_format]
    write: Callable[[Report, Output], None] = getattr(importlib.import_module(module), function)
    return write


def renderer(output_format: str) -> Callable[[Report], str]:
    write = writer(output_format)

    def render(report: Report) -> str:
        buffer = io.StringIO()
        write(report, buffer)
        return buffer.getvalue()

    return render
