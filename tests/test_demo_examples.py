"""What `make demo` shows on examples/manifests/ holds: the legacy workload is a finding,
and `dra-guard migrate` turns it into objects that pass."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from testkit.paths import REPO_ROOT

pytestmark = pytest.mark.e2e  # every test here starts a process (tests/conftest.py)

DRA_GUARD = str(Path(sys.executable).parent / "dra-guard")
EXAMPLES = REPO_ROOT / "examples" / "manifests"


def run(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([DRA_GUARD, *arguments], capture_output=True, text=True, check=False, cwd=REPO_ROOT)


def test_the_legacy_example_is_a_finding_and_its_migration_passes(tmp_path: Path) -> None:
    checked = run("check", str(EXAMPLES))
    assert checked.returncode == 1 and "DRA001 [critical]" in checked.stdout, checked.stdout + checked.stderr
    migrated = tmp_path / "migrated.yaml"
    result = run("migrate", "-o", str(migrated), str(EXAMPLES / "legacy-mig-inference.yaml"))
    assert result.returncode == 0, result.stdout + result.stderr
    again = run("check", str(migrated))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "0 findings in 2 objects" in again.stdout
