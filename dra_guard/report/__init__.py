"""Report formats for `dra-guard check`: text (people), json (scripts), sarif (code scanning)."""

from __future__ import annotations

from collections.abc import Callable

from dra_guard.engine import Report
from dra_guard.report.json_report import render_json
from dra_guard.report.sarif import render_sarif
from dra_guard.report.text import render_text

FORMATS: dict[str, Callable[[Report], str]] = {"text": render_text, "json": render_json, "sarif": render_sarif}

__all__ = ["FORMATS", "render_json", "render_sarif", "render_text"]
