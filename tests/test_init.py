"""`dra-guard init`: each target written only when asked, nothing overwritten, and a cdk8s
app wired by `init cdk8s` is really validated by the real cdk8s-cli."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dra_guard.cli.init import HOOK_ENTRY, cdk8s_plugin_dir
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.e2e  # every test here starts a process (tests/conftest.py)

VENV_BIN = Path(sys.executable).parent
CDK8S = REPO_ROOT / "node_modules" / ".bin" / "cdk8s"

LEGACY_POD_APP = """
from cdk8s import App, ApiObject, ApiObjectMetadata, Chart, JsonPatch

app = App()
chart = Chart(app, "legacy", namespace="tenant-a")
pod = ApiObject(chart, "gpu-pod", api_version="v1", kind="Pod", metadata=ApiObjectMetadata(name="gpu-pod"))
container = {"name": "c", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": 1}}}
pod.add_json_patch(JsonPatch.add("/spec", {"containers": [container]}))
app.synth()
"""

COMPLIANT_APP = """
from cdk8s import App, Chart
from constructs_dra import AcceleratorSlice, IsolatedAcceleratorWorkload

app = App()
chart = Chart(app, "tenant-a", namespace="tenant-a")
IsolatedAcceleratorWorkload(chart, "inference", image="i", slice=AcceleratorSlice.nvidia_mig("1g.10gb"))
app.synth()
"""

EMPTY_APP = """
from cdk8s import App

App().synth()
"""

CDK8S_YAML = """\
# my app, written by hand (this comment must survive `dra-guard init cdk8s`)
language: python
app: {python} main.py
output: dist
"""


def dra_guard(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VENV_BIN / "dra-guard"), *arguments], cwd=cwd, capture_output=True, text=True, check=False
    )


def cdk8s_app(directory: Path, source: str) -> Path:
    """A fresh cdk8s app, as `cdk8s init python-app` would lay it out (no network)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "main.py").write_text(source)
    (directory / "cdk8s.yaml").write_text(CDK8S_YAML.format(python=VENV_BIN / "python"))
    return directory


def synth(directory: Path) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "CDK8S_CHECK_UPGRADE": "false",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        # The plugin must find dra-guard through the app's virtualenv, not through PATH.
        "PATH": f"{Path(str(shutil.which('node'))).parent}:/usr/bin:/bin",
    }
    environment.pop("DRA_GUARD", None)
    environment.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        [str(CDK8S), "synth"], cwd=directory, env=environment, capture_output=True, text=True, timeout=300, check=False
    )


def test_init_cdk8s_adds_the_installed_plugin_and_keeps_comments(tmp_path: Path) -> None:
    app = cdk8s_app(tmp_path / "app", LEGACY_POD_APP)
    result = dra_guard("init", "cdk8s", cwd=app)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("updated ./cdk8s.yaml (added the dra-guard validation plugin from ")
    text = (app / "cdk8s.yaml").read_text()
    assert text.startswith("# my app, written by hand")
    (entry,) = yaml.safe_load(text)["validations"]
    assert entry["package"] == cdk8s_plugin_dir() and Path(entry["package"], "index.js").is_file()
    assert entry["class"] == "DraGuardValidation" and entry["properties"] == {"failOn": "medium"}
    again = dra_guard("init", "cdk8s", cwd=app)
    assert again.returncode == 0 and "unchanged" in again.stdout
    assert (app / "cdk8s.yaml").read_text() == text


def test_init_cdk8s_then_synth_fails_a_legacy_pod_and_passes_a_compliant_app(tmp_path: Path) -> None:
    legacy = cdk8s_app(tmp_path / "legacy", LEGACY_POD_APP)
    compliant = cdk8s_app(tmp_path / "compliant", COMPLIANT_APP)
    for app in (legacy, compliant):
        assert dra_guard("init", "cdk8s", cwd=app).returncode == 0
    failed = synth(legacy)
    assert failed.returncode != 0
    assert "DRA001" in failed.stdout and "legacy/gpu-pod" in failed.stdout and "nvidia.com/gpu" in failed.stdout
    passed = synth(compliant)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "success" in passed.stdout


def test_plugin_passes_with_a_note_when_the_app_synthesizes_nothing(tmp_path: Path) -> None:
    app = cdk8s_app(tmp_path / "empty", EMPTY_APP)
    assert dra_guard("init", "cdk8s", cwd=app).returncode == 0
    # A manifest elsewhere in the project must not be checked instead.
    (app / "stray.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "  - {name: c, image: i, resources: {limits: {nvidia.com/gpu: 1}}}\n"
    )
    result = synth(app)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "synthesized no manifests" in result.stdout and "DRA001" not in result.stdout


def test_init_cdk8s_without_cdk8s_yaml_is_a_clear_error(tmp_path: Path) -> None:
    result = dra_guard("init", "cdk8s", cwd=tmp_path)
    assert result.returncode == 2
    assert "cdk8s.yaml: no such file" in result.stderr and "Traceback" not in result.stderr


def test_init_writes_only_what_is_asked(tmp_path: Path) -> None:
    result = dra_guard("init", "config", cwd=tmp_path)
    assert result.returncode == 0
    assert sorted(path.name for path in tmp_path.iterdir()) == [".dra-guard.yaml"]
    assert yaml.safe_load((tmp_path / ".dra-guard.yaml").read_text()) is None  # every option commented out


@pytest.mark.parametrize("target", ["config", "pre-commit", "ci"])
def test_init_never_overwrites(tmp_path: Path, target: str) -> None:
    path = {
        "config": tmp_path / ".dra-guard.yaml",
        "pre-commit": tmp_path / ".pre-commit-config.yaml",
        "ci": tmp_path / ".github" / "workflows" / "dra-guard.yml",
    }[target]
    path.parent.mkdir(parents=True, exist_ok=True)
    original = "# mine\nrepos:\n  - repo: local\n    hooks: [{id: dra-guard, name: x, entry: x, language: system}]\n"
    path.write_text(original)
    result = dra_guard("init", target, cwd=tmp_path)
    assert result.returncode == 0 and "unchanged" in result.stdout
    assert path.read_text() == original


def test_init_pre_commit_adds_a_hook_to_an_existing_config(tmp_path: Path) -> None:
    config = tmp_path / ".pre-commit-config.yaml"
    config.write_text(
        "# team hooks\nrepos:\n  - repo: https://github.com/psf/black\n    rev: 24.1.0  # pinned\n"
        "    hooks: [{id: black}]\n"
    )
    result = dra_guard("init", "pre-commit", cwd=tmp_path)
    assert result.returncode == 0 and "updated" in result.stdout
    text = config.read_text()
    assert text.startswith("# team hooks") and "# pinned" in text
    repos = yaml.safe_load(text)["repos"]
    assert [repo["repo"] for repo in repos] == ["https://github.com/psf/black", "local"]
    assert repos[1]["hooks"][0]["entry"] == HOOK_ENTRY and repos[1]["hooks"][0]["language"] == "system"


def test_init_ci_workflow_uploads_sarif(tmp_path: Path) -> None:
    result = dra_guard(
        "init", "ci", "--install", "dra-guard @ https://wheels.example/dra_guard-0.1.0-py3-none-any.whl", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    workflow = yaml.safe_load((tmp_path / ".github" / "workflows" / "dra-guard.yml").read_text())
    steps = workflow["jobs"]["dra-guard"]["steps"]
    install = next(step for step in steps if step.get("name") == "Install dra-guard")
    assert install["env"]["DRA_GUARD_INSTALL"].endswith("dra_guard-0.1.0-py3-none-any.whl")
    assert any("--format sarif" in step.get("run", "") for step in steps)
    assert any(step.get("uses", "").startswith("github/codeql-action/upload-sarif") for step in steps)
    assert workflow["permissions"]["security-events"] == "write"


def test_init_ci_without_install_uses_a_repository_variable(tmp_path: Path) -> None:
    result = dra_guard("init", "ci", cwd=tmp_path)
    assert result.returncode == 0 and "DRA_GUARD_INSTALL" in result.stdout
    text = (tmp_path / ".github" / "workflows" / "dra-guard.yml").read_text()
    assert "${{ vars.DRA_GUARD_INSTALL }}" in text and "pip install dra-guard" not in text


def test_starter_config_lists_every_option_and_its_defaults_parse() -> None:
    from dra_guard.cli.init import starter_config
    from dra_guard.read.config_file import parse_config
    from dra_guard.rules import RULES

    text = starter_config()
    settings = [line[2:] for line in text.splitlines() if line.startswith("# ") and ": " in line]
    keys = {line.split(":", 1)[0] for line in settings}
    assert set(RULES.options) <= keys
    with_defaults = "\n".join(line for line in settings if line.split(":", 1)[0] in RULES.options and "..." not in line)
    config = parse_config(yaml.safe_load(with_defaults), RULES, "starter", environ={})
    assert set(config.values) == {key for key in RULES.options if RULES.options[key].default_doc is None}
