"""The install story: a wheel built with `python -m build` works in a fresh virtualenv.

Nothing here uses the development checkout at run time: `dra-guard`, `constructs_dra`
and the cdk8s plugin all come from the installed wheel (dependencies from the package
registry, as a user gets them).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
import yaml

from dra_guard.cli.init import SHIM_PACKAGE
from dra_guard.kubectl_yaml.choice import PARSER_VARIABLE
from tests.conftest import REPO_ROOT
from tests.test_dependencies import WHEEL_EXTRAS
from tests.test_doc_examples import extract
from tests.test_init import COMPLIANT_APP, LEGACY_POD_APP, cdk8s_app, synth

pytestmark = pytest.mark.e2e  # every test here starts a process (tests/conftest.py)

# What a source distribution needs; not the caches, virtualenvs (.venv, .floors-venv, ...) and node_modules.
_SKIP = shutil.ignore_patterns(
    ".git", ".*venv", "node_modules", "dist", "build", "*.egg-info", "__pycache__", ".*cache"
)


@pytest.fixture(autouse=True)
def _as_a_user_runs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain install (no `fast` extra) with the reader it picks: the suite's forced
    rapidyaml (Makefile) is not the user's, nor a PYTHONPATH naming the checkout."""
    monkeypatch.delenv(PARSER_VARIABLE, raising=False)
    monkeypatch.delenv("PYTHONPATH", raising=False)


def _run(*command: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    environment = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    return subprocess.run(
        [str(part) for part in command], cwd=cwd, env=environment, capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("install")
    source = root / "source"
    shutil.copytree(REPO_ROOT, source, ignore=_SKIP)
    built = _run(sys.executable, "-m", "build", "--wheel", "--outdir", root / "wheels", source)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (root / "wheels").glob("dra_guard-*-py3-none-any.whl")
    environment = root / "venv"
    venv.create(environment, with_pip=True)
    installed = _run(environment / "bin" / "python", "-m", "pip", "install", "--quiet", f"{wheel}[cdk8s]")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return environment


def test_wheel_installs_the_cli_and_it_checks(fresh_venv: Path, tmp_path: Path) -> None:
    legacy = REPO_ROOT / "tests" / "corpus" / "legacy-device-plugin" / "gpu-pod.yaml"
    result = _run(fresh_venv / "bin" / "dra-guard", "check", legacy, cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "DRA001 [critical]" in result.stdout


def test_wheel_is_independent_of_the_checkout(fresh_venv: Path, tmp_path: Path) -> None:
    probe = (
        "import constructs_dra, dra_guard, dra_guard.cli.init as s, dra_guard.present.rule_index as i; "
        "print(dra_guard.__file__); print(s.cdk8s_plugin_dir()); print(len(i.load({}).rules))"
    )
    result = _run(fresh_venv / "bin" / "python", "-c", probe, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    package_file, plugin_dir, indexed_rules = result.stdout.splitlines()
    assert int(indexed_rules) > 0  # the rules' index ships with the wheel
    assert Path(package_file).is_relative_to(fresh_venv) and not Path(package_file).is_relative_to(REPO_ROOT)
    assert (Path(plugin_dir) / "index.js").is_file() and (Path(plugin_dir) / "package.json").is_file()
    assert (Path(plugin_dir) / "shim" / "index.js").is_file() and (Path(plugin_dir) / "shim" / "package.json").is_file()


def test_wheel_carries_its_licence_and_project_metadata(fresh_venv: Path, tmp_path: Path) -> None:
    """What a team depending on it reads: the licence text in the wheel, the SPDX expression,
    where the project, its rules and its issues are, and its extras."""
    probe = (
        "import importlib.metadata as m; d = m.distribution('dra-guard'); "
        "print(d.metadata['License-Expression']); print(sorted(d.metadata.get_all('Project-URL'))); "
        "print(any(f.name == 'LICENSE' and 'licenses' in f.parts for f in d.files)); "
        "print(' '.join(sorted(d.metadata.get_all('Provides-Extra'))))"
    )
    result = _run(fresh_venv / "bin" / "python", "-c", probe, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    expression, urls, licence, extras = result.stdout.splitlines()
    assert expression == "Apache-2.0" and licence == "True"
    # The users' extras; the development environment is a dependency group, not one of them.
    assert extras.split() == sorted(WHEEL_EXTRAS)
    assert all(label in urls for label in ("Homepage", "Documentation", "Rules", "Issues"))
    assert "Apache License" in (REPO_ROOT / "LICENSE").read_text(encoding="utf-8")


def test_wheel_plugin_wired_by_init_validates_a_cdk8s_app(fresh_venv: Path, tmp_path: Path) -> None:
    """A user's own app and virtualenv: `dra-guard init cdk8s`, the app moved (as a clone
    elsewhere is), then `cdk8s synth`: the shim finds the wheel's plugin through the app's Python."""
    python = fresh_venv / "bin" / "python"
    for name, source in (("legacy", LEGACY_POD_APP), ("compliant", COMPLIANT_APP)):
        app = cdk8s_app(tmp_path / "wired" / name, source)
        config = (app / "cdk8s.yaml").read_text().replace(f"{Path(sys.executable).parent / 'python'}", str(python))
        (app / "cdk8s.yaml").write_text(config)
        wired = _run(fresh_venv / "bin" / "dra-guard", "init", "cdk8s", cwd=app)
        assert wired.returncode == 0, wired.stderr
        (entry,) = yaml.safe_load((app / "cdk8s.yaml").read_text())["validations"]
        shim = [path.read_text() for path in (app / ".dra-guard").rglob("*") if path.is_file()]
        assert entry["package"] == SHIM_PACKAGE and len(shim) == 2 and not any(str(fresh_venv) in text for text in shim)
        shutil.move(app, tmp_path / name)
    failed = synth(tmp_path / "legacy")
    assert failed.returncode != 0 and "DRA001" in failed.stdout, failed.stdout + failed.stderr
    passed = synth(tmp_path / "compliant")
    assert passed.returncode == 0, passed.stdout + passed.stderr


def test_wheel_init_pulumi_writes_a_pack_the_wheel_serves(fresh_venv: Path, tmp_path: Path) -> None:
    """The pack's entry point imports what the wheel installed (the pack itself is started
    over gRPC in tests/test_pulumi_pack_grpc.py; this virtualenv has no Pulumi SDK)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / ".venv").symlink_to(fresh_venv, target_is_directory=True)
    written = _run(fresh_venv / "bin" / "dra-guard", "init", "pulumi", cwd=project)
    assert written.returncode == 0, written.stderr
    pack = project / "policy-pack"
    runtime = yaml.safe_load((pack / "PulumiPolicy.yaml").read_text())["runtime"]
    assert runtime == {"name": "python", "options": {"virtualenv": "../.venv"}}
    probe = "import pulumi_dra.policy as p; print(p.__file__); print(callable(p.serve))"
    result = _run(pack / "../.venv/bin/python", "-c", probe, cwd=pack)
    assert result.returncode == 0, result.stderr
    module, serves = result.stdout.splitlines()
    assert Path(module).resolve().is_relative_to(fresh_venv.resolve()) and serves == "True"
    assert "from pulumi_dra.policy import serve" in (pack / "__main__.py").read_text()


def test_readme_install_commands_name_no_registry_package() -> None:
    """`pip install dra-guard` would fetch somebody else's package: the README never says it."""
    readme = (REPO_ROOT / "README.md").read_text()
    assert "pip install dra-guard\n" not in readme and "pip install dra-guard`" not in readme
    assert "pip install ." in readme and "python -m build" in readme


def _readme_section(title: str) -> str:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert f"\n### {title}\n" in readme, f"the README has a section {title!r}"
    section = readme.split(f"\n### {title}\n", 1)[1]
    return section.split("\n## ", 1)[0].split("\n### ", 1)[0]


def test_readme_adoption_steps_work_from_the_wheel(fresh_venv: Path, tmp_path: Path) -> None:
    """The README's "Adopting dra-guard on an existing repository", as its commands say, with
    the wheel's dra-guard on a repository with a finding: report only, record, gate, rewrite;
    then a new finding fails the gate and the baselined one still does not."""
    section = _readme_section("Adopting dra-guard on an existing repository")
    block = next(block for block in extract(section, "README.md") if block.language == "sh")
    legacy = (REPO_ROOT / "tests" / "corpus" / "legacy-device-plugin" / "gpu-pod.yaml").read_text()
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "gpu-pod.yaml").write_text(legacy)
    commands = [shlex.split(line, comments=True) for line in block.text.splitlines()]
    assert commands[0][:3] == ["python", "-m", "pip"] and commands[0][-1].endswith(".whl"), "installs the wheel"
    ran = []
    for command in commands[1:]:
        assert command[0] == "dra-guard", command
        result = _run(fresh_venv / "bin" / "dra-guard", *command[1:], cwd=tmp_path)
        assert result.returncode == 0, (command, result.stdout + result.stderr)
        ran.append(command[1:3])
    assert ["check", "--write-baseline"] in ran and ["check", "--baseline"] in ran
    (tmp_path / "k8s" / "new-pod.yaml").write_text(legacy.replace("gpu-operator-test", "a-new-pod"))
    gate = [command for command in commands if "--baseline" in command and "--write-baseline" not in command]
    result = _run(fresh_venv / "bin" / "dra-guard", *gate[0][1:], cwd=tmp_path)
    assert result.returncode == 1 and "a-new-pod" in result.stdout and "gpu-operator-test" not in result.stdout


def test_readme_ci_and_pack_sections_install_the_wheel_not_a_checkout() -> None:
    """What a user of the wheel reads: the sections install a wheel (or name one), and run the
    pack `dra-guard init pulumi` writes, not this repository's paths."""
    ci = _readme_section("CI")
    assert "DRA_GUARD_INSTALL" in ci and ".whl" in ci and "pip install ." not in ci
    pack = _readme_section("Pulumi policy pack")
    assert "pip install 'dra_guard-0.1.0-py3-none-any.whl[pulumi]'" in pack and "dra-guard init pulumi" in pack
    assert "--policy-pack policy-pack" in pack and "--policy-pack pulumi_dra/policy" not in pack
    assert "pip install ." not in pack
