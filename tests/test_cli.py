"""The `dra-guard` console script is installed and answers."""

from __future__ import annotations

import subprocess
import sys

from dra_guard import __version__


def test_console_script_reports_version() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "dra_guard.cli", "--version"], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == f"dra-guard {__version__}"
