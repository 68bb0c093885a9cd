"""The shape of the code: front ends name no rule, and the layers import one way.

Rule facts live in `dra_guard/rules/` only; everything else derives them from the
registry, so a rule added there needs no edit anywhere else (tests/test_synthetic_rule.py
shows it).  These checks read the source, so they cannot drift from it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.paths import REPO_ROOT

# A rule ID, or a rule module's name, in any case.
RULE_REFERENCE = re.compile(r"dra0\d\d", re.IGNORECASE)
#: Front ends and the plumbing between the registry and them.
RULE_FREE = [
    "constructs_dra",
    "pulumi_dra",
    "dra_guard/cdk8s_plugin/index.js",
    "dra_guard/cdk8s_plugin/package.json",
    "dra_guard/cli/init.py",
    "dra_guard/cli/main.py",
    "dra_guard/ruleapi/config.py",
    "dra_guard/present/rule_docs.py",
    "dra_guard/engine/run.py",
    "dra_guard/ruleapi/options.py",
    "dra_guard/present/report",
    "dra_guard/ruleapi/declarations.py",
]


def files(paths: list[str]) -> Iterator[Path]:
    for name in paths:
        path = REPO_ROOT / name
        if path.is_dir():
            yield from sorted(file for file in path.rglob("*") if file.is_file() and "__pycache__" not in file.parts)
        else:
            yield path


def imports(path: Path) -> set[str]:
    """Every module `path` imports, at any level (function-level imports count too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


@pytest.mark.parametrize("path", list(files(RULE_FREE)), ids=lambda path: str(path.relative_to(REPO_ROOT)))
def test_no_rule_is_named_outside_the_rules(path: Path) -> None:
    mentions = [
        f"{number}: {line.strip()}"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if RULE_REFERENCE.search(line)
    ]
    assert mentions == [], "rule facts belong in dra_guard/rules/; derive them from the registry"


def test_the_rule_reference_pattern_finds_what_it_must() -> None:
    for text in ("DRA012", "dra012_isolation_tag", "from dra_guard.rules import dra005_shared_claim", "'dra001-x'"):
        assert RULE_REFERENCE.search(text)
    assert not RULE_REFERENCE.search("metavar='RULE'")


# Import directions between the core's layers and the front ends are import-linter
# contracts ([tool.importlinter] in pyproject.toml, run by `make lint`).


@pytest.mark.parametrize("path", list(files(["bench", "testkit"])), ids=lambda path: str(path.relative_to(REPO_ROOT)))
def test_benchmarks_and_helpers_do_not_import_the_tests(path: Path) -> None:
    if path.suffix == ".py":
        assert not [name for name in imports(path) if name == "tests" or name.startswith("tests.")]


def test_code_and_docs_cite_only_the_repositorys_own_documents() -> None:
    """Citations such as "DESIGN §4" point outside the repository; cite README or docs/ instead."""
    outside = re.compile(r"DESIGN(\.md)? ?§|\.\./shared|/work/shared")
    sources = [path for pattern in ("*.md", "Makefile", "*.toml", "*.yaml") for path in REPO_ROOT.glob(pattern)]
    for folder in (
        "dra_guard",
        "constructs_dra",
        "pulumi_dra",
        "docs",
        "bench",
        "testkit",
        "tools",
        "examples",
        "tests",
    ):
        sources += [
            path
            for path in (REPO_ROOT / folder).rglob("*")
            if path.suffix in (".py", ".md", ".js", ".yaml")
            and "fixtures" not in path.parts
            and "corpus" not in path.parts
        ]
    offenders = [
        f"{path.relative_to(REPO_ROOT)}:{number}"
        for path in sources
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if outside.search(line) and path.name != "test_layers.py"
    ]
    assert offenders == []
