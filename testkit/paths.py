"""Where the repository is, for helpers that start processes in it, and its tools/ scripts."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parent.parent


def load_tool(name: str) -> ModuleType:
    """`tools/<name>.py` as a module: tools/ is a folder of scripts run by path, not a package."""
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
