"""Which files a walk leaves out for .gitignore, against git itself.

Each case is a repository (its .gitignore files, .git/info/exclude and files); the files
`select` finds must be those `git ls-files --others --exclude-standard` lists (untracked and
not ignored: in a repository without commits, every file is untracked).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from dra_guard.read.walk import select

pytestmark = pytest.mark.e2e  # git runs (tests/conftest.py)

CASES: dict[str, tuple[dict[str, str], list[str]]] = {
    # `a/**` matches what is inside a, not a itself: git walks a, and `!` re-includes.
    "trailing-double-star-with-negation": (
        {".gitignore": "a/**\n!a/keep.yaml\n"},
        ["a/keep.yaml", "a/drop.yaml", "a/b/deep.yaml", "top.yaml"],
    ),
    # A .gitignore pattern wins over .git/info/exclude's.
    "gitignore-over-info-exclude": (
        {".gitignore": "!keep.yaml\n", ".git/info/exclude": "*.yaml\n"},
        ["keep.yaml", "drop.yaml"],
    ),
    "directory-only-and-anchored": (
        {".gitignore": "build/\n/top-only.yaml\n"},
        ["build/x.yaml", "src/build/y.yaml", "top-only.yaml", "src/top-only.yaml", "keep.yaml"],
    ),
    "nested-gitignore-negation": (
        {".gitignore": "*.gen.yaml\n", "sub/.gitignore": "!keep.gen.yaml\n"},
        ["a.gen.yaml", "sub/keep.gen.yaml", "sub/drop.gen.yaml", "sub/plain.yaml"],
    ),
    "ignored-folder-cannot-be-reentered": (
        {".gitignore": "out/\n!out/keep.yaml\n"},
        ["out/keep.yaml", "out/drop.yaml", "in.yaml"],
    ),
    "double-star-inside": (
        {".gitignore": "**/gen/**\n"},
        ["gen/a.yaml", "x/gen/b.yaml", "x/gen.yaml", "x/y/z.yaml"],
    ),
}


def _repository(root: Path, ignores: dict[str, str], files: list[str]) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for name, text in {**{name: "kind: ConfigMap\n" for name in files}, **ignores}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_walk_leaves_out_what_git_ignores(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ignores, files = CASES[case]
    _repository(tmp_path, ignores, files)
    monkeypatch.chdir(tmp_path)
    listed = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard"], check=True, capture_output=True, text=True
    ).stdout.split()
    expected = sorted(name for name in listed if name.endswith(".yaml"))
    walked = sorted(os.path.relpath(candidate.path) for candidate in select(["."]).files)
    assert walked == expected
