"""The composite action (action.yml) as GitHub runs it: each `run` step's script, with its
`env` filled from the inputs as the runner fills `${{ inputs.* }}`, in bash, with the
installed dra-guard on PATH.  The install step's command is checked, not run (it installs
this checkout, as tests/test_install.py does); the `uses` steps are GitHub's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from testkit.paths import REPO_ROOT

pytestmark = pytest.mark.e2e

ACTION = yaml.safe_load((REPO_ROOT / "action.yml").read_text(encoding="utf-8"))
_EXPRESSION = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")


def _step(name: str) -> dict[str, Any]:
    step: dict[str, Any] = next(step for step in ACTION["runs"]["steps"] if step.get("name") == name)
    return step


def _filled(value: str, inputs: dict[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        expression = match.group(1)
        if expression.startswith("inputs."):
            return inputs[expression.removeprefix("inputs.")]
        if expression == "github.action_path":
            return str(REPO_ROOT)
        raise AssertionError(f"the test does not know {expression}")

    return _EXPRESSION.sub(one, value)


def _run_step(name: str, workdir: Path, **given: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    inputs = {key: str(spec.get("default", "")) for key, spec in ACTION["inputs"].items()} | given
    step = _step(name)
    assert step["shell"] == "bash"
    output_file = workdir / "github-output"
    output_file.write_text("")
    environment = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_OUTPUT": str(output_file),
        **{key: _filled(str(value), inputs) for key, value in step.get("env", {}).items()},
    }
    result = subprocess.run(
        ["bash", "-e", "-c", step["run"]], cwd=workdir, env=environment, capture_output=True, text=True, check=False
    )
    outputs = dict(line.split("=", 1) for line in output_file.read_text().splitlines() if "=" in line)
    return result, outputs


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    (tmp_path / "k8s").mkdir()
    legacy = REPO_ROOT / "tests" / "corpus" / "legacy-device-plugin" / "gpu-pod.yaml"
    (tmp_path / "k8s" / "gpu-pod.yaml").write_bytes(legacy.read_bytes())
    (tmp_path / "k8s" / "config.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    return tmp_path


def test_the_install_step_installs_this_checkout_with_the_extras() -> None:
    step = _step("Install dra-guard")
    assert "${ACTION_PATH}" in step["run"] and step["env"]["ACTION_PATH"] == "${{ github.action_path }}"
    command = subprocess.run(
        ["bash", "-c", 'echo "${ACTION_PATH}${EXTRAS:+[$EXTRAS]}"'],
        env={"ACTION_PATH": "/a", "EXTRAS": "fast"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert command.stdout.strip() == "/a[fast]"


def test_sarif_is_written_where_the_upload_step_reads_it_and_findings_fail_the_step(repository: Path) -> None:
    result, outputs = _run_step("Check", repository)
    assert result.returncode == 1, result.stdout + result.stderr
    assert outputs == {"report": "dra-guard.sarif"}
    sarif = json.loads((repository / "dra-guard.sarif").read_text())
    assert [r["ruleId"] for run in sarif["runs"] for r in run["results"]] == ["DRA001"]
    upload = next(step for step in ACTION["runs"]["steps"] if step.get("uses", "").startswith("github/codeql-action"))
    assert upload["with"]["sarif_file"] == "${{ steps.check.outputs.report }}" and "always()" in upload["if"]


def test_paths_and_the_threshold_come_from_the_inputs(repository: Path) -> None:
    result, _ = _run_step("Check", repository, paths="k8s/config.yaml", format="text")
    assert result.returncode == 0, result.stdout + result.stderr
    result, outputs = _run_step("Check", repository, format="json", **{"fail-on": "critical"})
    assert result.returncode == 1 and outputs == {"report": "dra-guard.json"}
    assert json.loads((repository / "dra-guard.json").read_text())["findings"][0]["rule"] == "DRA001"
