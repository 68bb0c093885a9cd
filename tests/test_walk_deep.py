"""Walks without recursion: a deep tree is walked, not a traceback, and in os.walk's order.

Before Python 3.12 `os.walk` recurses once a folder level: a tree 1,200 folders deep (a path
of 2,400 characters, well within Linux's 4,096) made `check`, a `**` glob and a shard's
input digest raise RecursionError.  `walk_tree` is os.walk without the recursion.
"""

from __future__ import annotations

import io
import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from dra_guard.cli.main import main
from dra_guard.read.walk import walk_tree

GPU_POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: gpu}\n"
    "spec: {containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]}\n"
)
DEPTH = 1_200


def _deep_tree(root: Path) -> Path:
    """`root/d/d/.../d/pod.yaml`, DEPTH folders down (made a level at a time: os.makedirs
    recurses too); the deepest folder."""
    folder = root
    folder.mkdir()
    for _ in range(DEPTH):
        folder = folder / "d"
        os.mkdir(os.path.relpath(folder))  # relative: short enough for every system call
    (folder / "pod.yaml").write_text(GPU_POD)
    return folder


@pytest.fixture
def deep_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """`tmp_path` as the working directory, emptied afterwards without recursion: pytest
    removes old temporary folders with shutil.rmtree, which recurses a level at a time
    before Python 3.12 and would fail on this tree in a later session."""
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    folders, pending = [], [str(tmp_path)]
    while pending:
        folder = pending.pop()
        folders.append(folder)
        with os.scandir(folder) as listing:
            for entry in listing:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                else:
                    os.unlink(entry.path)
    for folder in reversed(folders[1:]):
        os.rmdir(folder)


def check(*arguments: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    # A shard writes no report, so it takes no --format (it refuses one).
    report = [] if "--shard" in arguments else ["--format", "json"]
    code = main(["check", "--jobs", "1", *report, *arguments], stdout, stderr)
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.mark.usefixtures("deep_tmp")
def test_a_tree_deeper_than_the_recursion_limit_is_walked() -> None:
    _deep_tree(Path("root"))
    for given in ("root", "root/**/*.yaml", "root/**"):
        code, out, err = check(given)
        assert (code, err) == (1, ""), given
        assert '"rule": "DRA001"' in out and "d/" * DEPTH + "pod.yaml" in out, given
    code, _, err = check("root", "--shard", "1/1", "--facts-out", "facts.json")
    assert code == 0 and "facts written to facts.json" in err


@pytest.mark.usefixtures("deep_tmp")
def test_gitignore_files_at_every_depth_of_a_deep_repository() -> None:
    """In a repository, each folder's .gitignore files are worked out once (they were read
    again for every path, a walk cubic in the depth: 2 s at 300 folders deep), with git's
    rules as before: the deepest matching pattern decides, `!` re-includes."""
    deepest = _deep_tree(Path("root"))
    Path("root/.git").mkdir()
    Path("root/.gitignore").write_text("*.skip.yaml\n")
    Path("root", *["d"] * (DEPTH // 2), ".gitignore").write_text("!keep.skip.yaml\n")
    for name in ("pod.skip.yaml", "keep.skip.yaml"):
        (deepest / name).write_text(GPU_POD.replace("name: gpu", f"name: {name.split('.')[0]}"))
    code, out, err = check("root")
    assert (code, err) == (1, "")
    assert '"files": 2' in out and "keep.skip.yaml" in out and "pod.skip.yaml" not in out


def test_walk_tree_goes_as_os_walk_goes(tmp_path: Path) -> None:
    """The same (root, folders, names) in the same order, links to folders listed and not
    entered, folders pruned and reordered in place as the caller leaves them."""
    draw = random.Random(7)
    folders = [tmp_path]
    for index in range(300):
        parent = draw.choice(folders)
        if draw.random() < 0.5:
            folders.append(parent / f"f{index}")
            folders[-1].mkdir()
        else:
            (parent / f"n{index}.yaml").write_text("")
    for index in range(20):
        link = draw.choice(folders) / f"link{index}"
        link.symlink_to(draw.choice(folders), target_is_directory=True)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")

    def walked(walk: object) -> list[tuple[str, list[str], list[str]]]:
        seen = []
        for root, below, names in walk:  # type: ignore[attr-defined]
            below[:] = sorted(name for name in below if not name.startswith("f1"))  # pruned, reordered
            seen.append((root, list(below), sorted(names)))
        return seen

    ours = walked(walk_tree(str(tmp_path)))
    assert ours == walked(os.walk(str(tmp_path)))
    assert len(ours) > 20
