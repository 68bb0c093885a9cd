"""Report formats for `dra-guard check`: text (people), json (scripts), sarif (code scanning)."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from dra_guard.findings import Report  # light: the CLI reads FORMATS to build its parser

# format -> (module, function); a format's module is imported only when it is used.
_RENDERERS = {
    "text": ("dra_guard.report.text", "render_text"),
    "json": ("dra_guard.report.json_report", "render_json"),
    "sarif": ("dra_guard.report.sarif", "render_sarif"),
}
FORMATS = tuple(_RENDERERS)


def renderer(output_format: str) -> Callable[[Report], str]:
    module, function = _RENDERERS[output_format]
    render: Callable[[Report], str] = getattr(importlib.import_module(module), function)
    return render
