"""Shared test setup: cdk8s must run offline and quietly, as the Makefile runs it."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import settings

from testkit.paths import REPO_ROOT

__all__ = ["REPO_ROOT"]

os.environ.setdefault("CDK8S_CHECK_UPGRADE", "false")
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

# The processes the tests start keep their temporary files in one folder of the session's,
# removed when it ends: cdk8s' `Testing.app()` makes a `cdk8s.outdir.*` folder in node's
# TMPDIR for every app and never removes it (thousands piled up in /tmp).  This
# process's own (pytest's tmp_path among them) stay where they were.
tempfile.tempdir = tempfile.gettempdir()
_PROCESS_TMP = tempfile.mkdtemp(prefix="dra-guard-tests-")
os.environ["TMPDIR"] = _PROCESS_TMP

# In CI (`CI` set, as .ci/run and every hosted runner set it) every Hypothesis test is
# derandomized and keeps no example database: the same commit draws the same examples, so a
# red run is reproducible and a green one is not luck.  Locally each run draws new examples.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


# --- e2e: tests that start processes ------------------------------------------------------
#
# A test that starts a process (kubectl, node for cdk8s, the Pulumi pack, the webhook, pip),
# itself or through a fixture it is the first to need, is marked `e2e`, so that
# `pytest -m "not e2e"` is a fast inner loop.  One that is not marked and starts one anyway
# fails, so the loop cannot slow down unseen.  DRA_GUARD_RECORD_PROCESSES=<file> lists such
# tests instead of failing them (how the marks were first found).

_RECORD_PROCESSES = os.environ.get("DRA_GUARD_RECORD_PROCESSES")
_RUNNING: list[pytest.Item] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    _RUNNING.append(item)
    try:
        yield
    finally:
        _RUNNING.pop()


def pytest_configure(config: pytest.Config) -> None:
    start = subprocess.Popen.__init__

    def guarded(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
        item = _RUNNING[-1] if _RUNNING else None
        if item is not None and item.get_closest_marker("e2e") is None:
            if not _RECORD_PROCESSES:
                command = args[0] if args else kwargs.get("args")
                raise AssertionError(f"{item.nodeid} starts a process ({command!r}): mark it e2e")
            with open(_RECORD_PROCESSES, "a", encoding="utf-8") as log:
                log.write(item.nodeid + "\n")
        start(self, *args, **kwargs)

    subprocess.Popen.__init__ = guarded  # type: ignore[method-assign]


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_PROCESS_TMP, ignore_errors=True)
