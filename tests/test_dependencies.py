"""What the project depends on, as pyproject.toml declares it: the wheel's extras, and the
development environment as PEP 735 dependency groups that the Makefile installs."""

from __future__ import annotations

import re
import sys
from typing import Any

from packaging.requirements import Requirement

from testkit.paths import REPO_ROOT

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
