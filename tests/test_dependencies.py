"""What the project depends on, as pyproject.toml declares it: the wheel's extras, the
development environment as PEP 735 dependency groups that the Makefile installs, and the
dependency floors that `make floors` installs and tests (constraints/floors.txt)."""

from __future__ import annotations

import importlib.metadata
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from testkit.paths import REPO_ROOT, load_tool

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

PYPROJECT: dict[str, Any] = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
MAKEFILE = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
WHEEL_EXTRAS = {"cdk8s", "fast", "scrub", "webhook", "pulumi"}


def _make_variable(name: str) -> str:
    match = re.search(rf"^{name} := (.*)$", MAKEFILE, re.MULTILINE)
    assert match, f"the Makefile sets {name}"
    return match.group(1).strip()


def _group(name: str) -> list[str]:
    """A dependency group's requirements, its included groups' first (PEP 735)."""
    texts: list[str] = []
    for entry in PYPROJECT["dependency-groups"][name]:
        texts += _group(entry["include-group"]) if isinstance(entry, dict) else [entry]
    return texts


def test_the_wheels_extras_are_its_users_and_dev_is_a_dependency_group() -> None:
    assert set(PYPROJECT["project"]["optional-dependencies"]) == WHEEL_EXTRAS
    names = {Requirement(text).name for text in _group("dev")}
    assert {"pytest", "hypothesis", "ruff", "mypy", "import-linter", "cdk8s-plus-34"} <= names
    assert {Requirement(text).name for text in _group("test")} <= names
    # The project itself is not in a group: pip would look "dra-guard" up on the index.
    assert not any(Requirement(text).name == PYPROJECT["project"]["name"] for text in _group("dev"))


def test_the_makefile_installs_the_extras_and_the_dev_group_with_a_pip_that_knows_groups() -> None:
    extras = _make_variable("EXTRAS").split(",")
    assert set(extras) <= WHEEL_EXTRAS and "scrub" not in extras
    assert "install --quiet --disable-pip-version-check -e '.[$(EXTRAS)]' --group dev" in MAKEFILE
    # pip reads dependency groups from 25.1 on; the virtualenv's own pip may be older.
    assert "--upgrade 'pip>=25.1'" in MAKEFILE
    assert ".[dev]" not in MAKEFILE
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert "pip install -e '.[cdk8s,fast,pulumi,webhook]' --group dev" in readme and ".[dev]" not in readme
    assert _make_variable("EXTRAS") == "cdk8s,fast,pulumi,webhook"


# --- dependency floors: pyproject.toml's lower bounds are the oldest versions tested ----------

FLOORS = REPO_ROOT / "constraints" / "floors.txt"
#: Set by `make floors` to the extras it installed at the floors (empty elsewhere).
FLOORS_EXTRAS = os.environ.get("DRA_GUARD_FLOORS_EXTRAS", "")


def _floors_tool() -> Any:
    return load_tool("floors")


def test_the_floors_file_is_what_pyproject_declares() -> None:
    assert FLOORS.read_text(encoding="utf-8") == _floors_tool().floors_text(), (
        "stale: python tools/floors.py > constraints/floors.txt"
    )


@pytest.mark.parametrize(
    "declared",
    ['"shtab"', '"shtab<2"', '"shtab>=1.9,>=1.10"'],
    ids=["no bound", "an upper bound only", "two lower bounds"],
)
def test_a_dependency_without_one_floor_is_refused(declared: str, tmp_path: Path) -> None:
    tool = _floors_tool()
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(f"[project]\nname = 'x'\ndependencies = [{declared}]\n", encoding="utf-8")
    with pytest.raises(tool.NoFloor, match="declare one lower bound"):
        tool.floors_text(pyproject)


def test_the_floors_keep_their_markers(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        "[project]\nname = 'x'\ndependencies = ['tomli>=2.0; python_version < \"3.11\"']\n"
        "[project.optional-dependencies]\nweb = ['Uvicorn[standard]>=0.30,<1']\n",
        encoding="utf-8",
    )
    lines = _floors_tool().floors_text(pyproject).splitlines()
    assert [line for line in lines if not line.startswith("#")] == [
        'tomli==2.0; python_version < "3.11"',
        "uvicorn==0.30",
    ]


def test_make_test_runs_the_floors() -> None:
    test_target = re.search(r"^test: (.*)$", MAKEFILE, re.MULTILINE)
    assert test_target is not None and "floors" in test_target.group(1).split()
    assert "-c constraints/floors.txt" in MAKEFILE and "-e '.[$(EXTRAS)]' --group test" in MAKEFILE
    assert "DRA_GUARD_FLOORS_EXTRAS=$(EXTRAS)" in MAKEFILE


@pytest.mark.skipif(not FLOORS_EXTRAS, reason="make floors runs this, in the virtualenv of the floors")
def test_what_is_installed_is_the_floors() -> None:
    """pip installed each requirement of the core and of the extras `make floors` names at its
    floor, not a newer one (a constraint pip could not apply would fail the install instead)."""
    project = PYPROJECT["project"]
    texts = [*project["dependencies"]]
    for extra in FLOORS_EXTRAS.split(","):
        texts += project["optional-dependencies"][extra]
    tool = _floors_tool()
    checked = []
    for requirement in map(Requirement, texts):
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        installed = importlib.metadata.version(requirement.name)
        assert Version(installed) == Version(tool.floor(requirement)), f"{requirement.name} {installed}"
        checked.append(requirement.name)
    assert {"cdk8s", "constructs", "pulumi", "pulumi-kubernetes", "pulumi-policy", "cel-python"} <= set(checked)
