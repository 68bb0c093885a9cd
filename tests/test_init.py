"""`dra-guard init`: each target written only when asked, nothing overwritten, and a cdk8s
app wired by `init cdk8s` is really validated by the real cdk8s-cli."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dra_guard import __version__
from dra_guard.cli.init import (
    HOOK_ENTRY,
    SHIM_PACKAGE,
    cdk8s_plugin_dir,
    cdk8s_plugin_version,
    cdk8s_shim_dir,
    pack_virtualenv,
)
from dra_guard.cli.main import main
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


def synth(directory: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "CDK8S_CHECK_UPGRADE": "false",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        # The plugin must find dra-guard through the app's virtualenv, not through PATH.
        "PATH": f"{Path(str(shutil.which('node'))).parent}:/usr/bin:/bin",
    }
    for name in ("DRA_GUARD", "VIRTUAL_ENV", "DRA_GUARD_PYTHON"):
        environment.pop(name, None)
    environment.update(variables)
    return subprocess.run(
        [str(CDK8S), "synth"], cwd=directory, env=environment, capture_output=True, text=True, timeout=300, check=False
    )


def test_init_cdk8s_adds_the_shim_by_a_relative_path_and_keeps_comments(tmp_path: Path) -> None:
    app = cdk8s_app(tmp_path / "app", LEGACY_POD_APP)
    result = dra_guard("init", "cdk8s", cwd=app)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "created ./.dra-guard/cdk8s-plugin/package.json",
        "created ./.dra-guard/cdk8s-plugin/index.js",
        "updated ./cdk8s.yaml (added the dra-guard validation plugin through ./.dra-guard/cdk8s-plugin; "
        "commit that folder with the app)",
    ]
    text = (app / "cdk8s.yaml").read_text()
    assert text.startswith("# my app, written by hand")
    (entry,) = yaml.safe_load(text)["validations"]
    assert entry == {
        "package": SHIM_PACKAGE,
        "version": cdk8s_plugin_version(),
        "class": "DraGuardValidation",
        "properties": {"failOn": "medium"},
    }
    assert f"  - package: {SHIM_PACKAGE}\n" in text  # on one line, never folded
    shim = app / ".dra-guard" / "cdk8s-plugin"
    assert (shim / "index.js").read_text() == (Path(cdk8s_shim_dir()) / "index.js").read_text()
    # Nothing of this machine is written: not the plugin's folder, not the checkout's.
    for written in (app / "cdk8s.yaml", shim / "index.js", shim / "package.json"):
        # (The test app's own `app:` line names this machine's interpreter, which may lie in the checkout.)
        content = "".join(line for line in written.read_text().splitlines(True) if not line.startswith("app:"))
        assert cdk8s_plugin_dir() not in content and str(REPO_ROOT) not in content
    again = dra_guard("init", "cdk8s", cwd=app)
    assert again.returncode == 0 and again.stdout.count("unchanged") == 3 and "created" not in again.stdout
    assert (app / "cdk8s.yaml").read_text() == text


def test_init_cdk8s_replaces_an_installed_path_written_before_and_folds_no_line(tmp_path: Path) -> None:
    """What an older init wrote (the site-packages path, folded by ruamel over two lines)."""
    app = tmp_path / "app"
    app.mkdir()
    long_app = "app: " + " ".join(["python"] + [f"--option-{index}=some-long-value" for index in range(8)])
    (app / "cdk8s.yaml").write_text(
        f"language: python\n{long_app}\nvalidations:\n  - package:\n      {cdk8s_plugin_dir()}\n"
        "    version: 0.0.9\n    class: DraGuardValidation\n    properties: {failOn: high}  # ours\n"
    )
    result = dra_guard("init", "cdk8s", cwd=app)
    assert result.returncode == 0, result.stderr
    assert "updated ./cdk8s.yaml (plugin package is now ./.dra-guard/cdk8s-plugin)" in result.stdout
    text = (app / "cdk8s.yaml").read_text()
    assert long_app + "\n" in text and f"  - package: {SHIM_PACKAGE}\n" in text and "# ours" in text
    (entry,) = yaml.safe_load(text)["validations"]
    assert entry["version"] == cdk8s_plugin_version() and entry["properties"] == {"failOn": "high"}


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


def test_an_app_wired_by_init_still_validates_after_it_moves(tmp_path: Path) -> None:
    """The committed app, checked out elsewhere (another machine, CI) with its own virtualenv:
    the shim finds the plugin through the app's interpreter at synth time."""
    for name, source in (("legacy", LEGACY_POD_APP), ("compliant", COMPLIANT_APP)):
        here = cdk8s_app(tmp_path / "here" / name, source)
        (here / "cdk8s.yaml").write_text(CDK8S_YAML.format(python=".venv/bin/python"))
        (here / ".venv").symlink_to(sys.prefix, target_is_directory=True)
        assert dra_guard("init", "cdk8s", cwd=here).returncode == 0
        there = tmp_path / "elsewhere" / "checkout" / name
        shutil.copytree(here, there, ignore=shutil.ignore_patterns(".venv"))
        (there / ".venv").symlink_to(sys.prefix, target_is_directory=True)  # its own virtualenv
    shutil.rmtree(tmp_path / "here")  # nothing may point back at where init ran
    failed = synth(tmp_path / "elsewhere" / "checkout" / "legacy")
    assert failed.returncode != 0, failed.stdout + failed.stderr
    assert "DRA001" in failed.stdout and "legacy/gpu-pod" in failed.stdout
    passed = synth(tmp_path / "elsewhere" / "checkout" / "compliant")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "success" in passed.stdout


def test_the_shim_fails_the_synth_when_no_python_has_dra_guard(tmp_path: Path) -> None:
    app = cdk8s_app(tmp_path / "app", COMPLIANT_APP)
    assert dra_guard("init", "cdk8s", cwd=app).returncode == 0
    result = synth(app, DRA_GUARD_PYTHON="/bin/false")
    assert result.returncode != 0
    assert "no Python with dra-guard installed was found" in result.stdout and "/bin/false (exit 1" in result.stdout


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


@pytest.mark.parametrize(
    ("target", "text", "said"),
    [
        ("pre-commit", "repos:\n- repo: local\n  hooks: 5\n", "a repo's `hooks` is not a list"),
        ("pre-commit", "repos: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
        ("cdk8s", "app: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
    ],
)
def test_init_refuses_a_file_it_cannot_edit_with_a_clear_error(
    tmp_path: Path, target: str, text: str, said: str
) -> None:
    path = tmp_path / (".pre-commit-config.yaml" if target == "pre-commit" else "cdk8s.yaml")
    path.write_text(text)
    result = dra_guard("init", target, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert said in result.stderr and "left unchanged" in result.stderr
    assert path.read_text() == text


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


def init_in_process(*arguments: str | Path) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main([str(argument) for argument in arguments], stdout, stderr)
    return code, stdout.getvalue(), stderr.getvalue()


def test_init_pulumi_writes_a_pack_that_names_no_path_of_this_machine(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    code, stdout, stderr = init_in_process("init", "pulumi", "--dir", project)
    assert code == 0, stderr
    pack = project / "policy-pack"
    assert sorted(path.name for path in pack.iterdir()) == ["PulumiPolicy.yaml", "__main__.py", "requirements.txt"]
    assert "create the virtualenv .venv in the project" in stdout  # there is none yet
    settings = yaml.safe_load((pack / "PulumiPolicy.yaml").read_text())
    assert settings["runtime"] == {"name": "python", "options": {"virtualenv": "../.venv"}}
    assert settings["version"] == __version__ and "dra-guard rules" in settings["description"]
    requirements = [line for line in (pack / "requirements.txt").read_text().splitlines() if not line.startswith("#")]
    assert requirements == [f"dra-guard[pulumi]=={__version__}"]
    entry = (pack / "__main__.py").read_text()
    compile(entry, "__main__.py", "exec")
    assert "from pulumi_dra.policy import serve\n\nserve()\n" in entry
    for written in pack.iterdir():
        text = written.read_text()
        assert str(tmp_path) not in text and sys.prefix not in text and str(REPO_ROOT) not in text
    code, stdout, _ = init_in_process("init", "pulumi", "--dir", project)
    assert code == 0 and stdout.count("unchanged") == 3


def test_init_pulumi_names_the_virtualenv_relative_to_the_pack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    (project / "envs" / "py").mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", str(project / "envs" / "running"))  # a virtualenv inside the project
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    assert pack_virtualenv(str(project))[0] == "../envs/running"
    relative, note = pack_virtualenv(str(project), str(project / "envs" / "py"))
    assert (relative, note) == ("../envs/py", "runs with the virtualenv ../envs/py")
    monkeypatch.chdir(project)
    assert pack_virtualenv(".", "envs/py")[0] == "../envs/py"  # --virtualenv is relative to the current folder
    outside, note = pack_virtualenv(str(project), str(tmp_path / "shared-venv"))
    assert outside == str(tmp_path / "shared-venv") and "outside the project" in note
    monkeypatch.setattr(sys, "prefix", "/usr")  # no virtualenv running: the project's .venv
    assert pack_virtualenv(str(project))[0] == "../.venv"


def test_init_pulumi_install_names_where_pip_gets_dra_guard(tmp_path: Path) -> None:
    wheel = "https://wheels.example/dra_guard-0.1.0-py3-none-any.whl"
    code, _, stderr = init_in_process("init", "pulumi", "ci", "--install", f"dra-guard @ {wheel}", "--dir", tmp_path)
    assert code == 0, stderr
    requirements = (tmp_path / "policy-pack" / "requirements.txt").read_text().splitlines()
    assert requirements[-1] == f"dra-guard[pulumi] @ {wheel}"  # the extra the pack needs, added
    workflow = (tmp_path / ".github" / "workflows" / "dra-guard.yml").read_text()
    assert f'DRA_GUARD_INSTALL: "dra-guard @ {wheel}"' in workflow


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
