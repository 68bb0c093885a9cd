"""Which files a walk leaves out for .gitignore, against git itself.

Each case is a repository (its .gitignore files, .git/info/exclude and files); the files
`select` finds must be those `git ls-files --others --exclude-standard` lists (untracked and
not ignored: in a repository without commits, every file is untracked).
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

from dra_guard.read.walk import Ignores, Patterns, select

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
    # A negated folder pattern puts back that folder, not what a pattern ignores below it.
    "negated-folder-keeps-what-is-ignored-below": (
        {".gitignore": "**/gen\n!d/\n"},
        ["d/gen/x.yaml", "d/y.yaml", "gen/z.yaml"],
    ),
    # `!a` names a folder or file called a: not the files inside a folder of that name.
    "negated-name-is-not-its-contents": (
        {".gitignore": "*.yaml\n!a\n"},
        ["a/x.yaml", "a.yaml", "b/a/y.yaml"],
    ),
    # The allow-list idiom: ignore everything, then put back folders and manifests.
    "allow-list": (
        {".gitignore": "*\n!*/\n!*.yaml\n"},
        ["x.yaml", "deploy/x.yaml", "deploy/prod/claim.yaml", "deploy/notes.txt"],
    ),
    # `a/**/` is every folder inside a (not a), and a trailing space is no part of a pattern.
    "folders-inside-and-trailing-space": (
        {".gitignore": "a/**/\nb/** \n!b/keep.yaml\n"},
        ["a/keep.yaml", "a/c/drop.yaml", "b/keep.yaml", "b/drop.yaml"],
    ),
    # git matches bytes: `?/` is a one-byte folder name, never `é` (two bytes in UTF-8); and
    # a line that ends in a lone backslash is no pattern, not the end of the walk.
    "bytes-and-a-lone-backslash": (
        {".gitignore": "?/\nbroken\\\n"},
        ["é/x.yaml", "a/y.yaml", "broken\\/z.yaml", "w.yaml"],
    ),
    # A bare `*` matches everything, a `!` after it puts back what it names.
    "star-then-negation": (
        {"sub/.gitignore": "!*.yaml\n*\n", ".gitignore": "!keep/\n"},
        ["sub/a.yaml", "sub/c/y.yaml", "keep/k.yaml"],
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
        ["git", "ls-files", "--others", "--exclude-standard", "-z"], check=True, capture_output=True, text=True
    ).stdout.split("\0")  # -z: names as they are (git quotes what is not ASCII otherwise)
    expected = sorted(name for name in listed if name.endswith(".yaml"))
    walked = sorted(os.path.relpath(candidate.path) for candidate in select(["."]).files)
    assert walked == expected


#: Patterns drawn for random repositories (the shapes git's rules treat apart).
PATTERNS = (
    "a", "b/", "/a", "*.yaml", "!x.yaml", "!a", "!b/", "a/**", "**/b", "**/c/x.yaml",
    "c/*", "!c/d", "a/b", "/b/", "x.yaml", "!*.yaml", "d", "*", "!d/", "**/a/",
    "*/", "**/", "!*/", "a/**/", "a/** ", "?/", "[!a]", "é", "!é/", "\\!x.yaml", "x.yaml ",
)  # fmt: skip


def _drawn(root: Path, draw: random.Random, depth: int = 0) -> None:
    for name in draw.sample(["a", "b", "c", "d", "é"], draw.randint(0, 3)):
        if depth < 3:
            (root / name).mkdir()
            _drawn(root / name, draw, depth + 1)
    for name in draw.sample(["x.yaml", "y.yaml", "a.yaml"], draw.randint(1, 2)):
        (root / name).write_text("kind: ConfigMap\n")
    if draw.random() < 0.5:
        (root / ".gitignore").write_text("\n".join(draw.sample(PATTERNS, draw.randint(1, 3))) + "\n")


@pytest.mark.parametrize("seed", range(80))
def test_a_walk_of_a_drawn_repository_leaves_out_what_git_ignores(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    draw = random.Random(seed)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    _drawn(tmp_path, draw)
    if draw.random() < 0.3:
        (tmp_path / ".git" / "info" / "exclude").write_text("\n".join(draw.sample(PATTERNS, 2)) + "\n")
    monkeypatch.chdir(tmp_path)
    listed = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard", "-z"], check=True, capture_output=True, text=True
    ).stdout.split("\0")  # -z: names as they are (git quotes what is not ASCII otherwise)
    walked = sorted(os.path.relpath(candidate.path) for candidate in select(["."]).files)
    assert walked == sorted(name for name in listed if name.endswith(".yaml"))


def test_exclude_patterns_match_names_that_are_not_ascii(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--exclude` patterns are matched as they are written (ab0b81c turned them into bytes
    for git's matching, but not the paths they are matched to: `é/` excluded nothing)."""
    (tmp_path / "é").mkdir()
    (tmp_path / "é" / "x.yaml").write_text("kind: ConfigMap\n")
    (tmp_path / "y.yaml").write_text("kind: ConfigMap\n")
    monkeypatch.chdir(tmp_path)
    ignores = Ignores([Patterns(str(tmp_path), ("é/",))])
    assert [os.path.relpath(candidate.path) for candidate in select(["."], ignores=ignores).files] == ["y.yaml"]
