"""Symlinked folders in walks and globs: never followed, never silently left out.

A walk names a symlinked folder it does not follow as not checked (`--fail-on-unchecked`
fails on it); a folder named on the command line is walked, link or not.  A `**` glob
does not enter symlinked folders either, so it ends on a tree with link loops (Python's
glob follows them: one loop selected each file dozens of times, two never ended) and
selects what a walk of the same tree selects.
"""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from dra_guard.cli.main import main
from dra_guard.read.walk import Selection, select

GPU_POD = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: gpu}\n"
    "spec: {containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]}\n"
)
CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n"
NOT_FOLLOWED = "not checked: a symlinked folder, not followed by a walk: name it to check it"

T = TypeVar("T")


def check(*arguments: str) -> tuple[int, str, str]:
    """`dra-guard check`, in this process (`--jobs 1`: no pool)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(["check", "--jobs", "1", *arguments], stdout, stderr)
    return code, stdout.getvalue(), stderr.getvalue()


def not_checked(report: str) -> list[str]:
    return [line for line in report.splitlines() if NOT_FOLLOWED in line]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """repo/ holds a ConfigMap and `deploy`, a link to ../common, which holds a GPU pod and
    `more`, a link to ../other; links a walk skips as it skips real folders: hidden, in
    node_modules, excluded."""
    monkeypatch.chdir(tmp_path)
    for folder in ("repo/node_modules", "common", "other"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "repo" / "cm.yaml").write_text(CONFIG_MAP)
    (tmp_path / "common" / "pod.yaml").write_text(GPU_POD)
    (tmp_path / "other" / "pod.yaml").write_text(GPU_POD)
    os.symlink(os.path.join("..", "common"), "repo/deploy")
    os.symlink(os.path.join("..", "other"), "common/more")
    os.symlink(os.path.join("..", "common"), "repo/.hidden")
    os.symlink(os.path.join("..", "..", "common"), "repo/node_modules/common")
    os.symlink(os.path.join("..", "common"), "repo/legacy")
    return tmp_path


def test_a_walk_names_a_symlinked_folder_it_does_not_follow(project: Path) -> None:
    code, report, _ = check("--exclude", "repo/legacy", "repo")
    assert code == 0  # the GPU pod behind the link is not checked ...
    assert not_checked(report) == [f"repo/deploy: {NOT_FOLLOWED}"]  # ... and says so
    assert report.splitlines()[-1] == "0 findings in 1 object from 1 file; 1 symlinked folder not checked"
    code, _, stderr = check("--exclude", "repo/legacy", "--fail-on-unchecked", "repo")
    assert code == 2 and "(--fail-on-unchecked)" in stderr


def test_a_symlinked_folder_named_on_the_command_line_is_walked(project: Path) -> None:
    code, report, _ = check("repo/deploy")
    assert code == 1 and "repo/deploy/pod.yaml:" in report
    assert not_checked(report) == [f"repo/deploy/more: {NOT_FOLLOWED}"]  # links inside it are not followed
    # Named beside the walk that meets it, the link is checked through its name, not reported.
    code, report, _ = check("--exclude", "repo/legacy", "repo", "repo/deploy")
    assert code == 1 and "repo/deploy/pod.yaml:" in report
    assert not_checked(report) == [f"repo/deploy/more: {NOT_FOLLOWED}"]


def within(seconds: float, call: Callable[[], T]) -> T:
    """`call()`, which must end within `seconds` (the old glob never did: a daemon thread
    lets the test fail rather than hang)."""
    results: list[T] = []
    worker = threading.Thread(target=lambda: results.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert results, f"still running after {seconds} s"
    return results[0]


def test_a_double_star_glob_ends_on_link_loops_and_selects_each_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("two/a").mkdir(parents=True)
    Path("two/a/pod.yaml").write_text(GPU_POD)
    os.symlink("..", "two/a/x")
    os.symlink("..", "two/a/y")
    # The same file through a link and by its absolute path: still one candidate.
    paths = ["two/**/*.yaml", "two/a/x/a/pod.yaml", str(tmp_path / "two" / "a" / "pod.yaml")]
    selection = within(10, lambda: select(paths))
    assert [candidate.path for candidate in selection.files] == ["two/a/pod.yaml"]
    assert selection.links == []  # both loops lead back into the globbed folder: nothing left unchecked
    assert selection.errors == []


def files(selection: Selection, base: Path) -> list[str]:
    return sorted(os.path.relpath(candidate.path, base) for candidate in selection.files)


def links(selection: Selection, base: Path) -> list[str]:
    return sorted(os.path.relpath(link, base) for link in selection.links)


def test_a_double_star_glob_selects_what_a_walk_of_the_same_tree_selects(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    for folder in ("a/b", ".hidden", "node_modules/m"):
        (tree / folder).mkdir(parents=True)
    for file in ("top.yaml", "a/one.yaml", "a/b/two.yml", ".hidden/no.yaml", "node_modules/m/no.yaml"):
        (tree / file).write_text(CONFIG_MAP)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "far.yaml").write_text(CONFIG_MAP)
    os.symlink(tmp_path / "outside", tree / "a" / "out")
    os.symlink("..", tree / "a" / "b" / "up")
    walk = select([str(tree)])
    globbed = within(10, lambda: select([f"{tree}/**/*.y*ml"]))
    assert files(globbed, tree) == files(walk, tree) == ["a/b/two.yml", "a/one.yaml", "top.yaml"]
    assert links(globbed, tree) == links(walk, tree) == ["a/out"]  # `up` leads back into the tree


def test_a_link_into_the_walked_tree_is_not_reported(project: Path) -> None:
    """`overlays/x/common -> ../../common`, or a loop `up -> ..`: the files it leads to are
    checked where they are, so nothing is left unchecked and `--fail-on-unchecked` passes."""
    os.symlink(os.path.join("..", "common"), "repo/overlay")  # into the walked `.`
    os.symlink("..", "common/up")  # a loop
    code, report, _ = check("--exclude", "repo", "--fail-on-unchecked", ".")
    assert code == 1 and "common/pod.yaml:" in report  # checked where it is, once
    assert not_checked(report) == []
    assert report.count("DRA001") == 2  # common/pod.yaml and other/pod.yaml, nothing twice


def test_a_double_star_glob_matches_as_glob_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no link, hidden or skipped folder is in the way, `**` selects what glob.glob
    selects (a differential run of 84,000 patterns found these three apart)."""
    monkeypatch.chdir(tmp_path)
    for folder in ("m/sub", "a/b"):
        (tmp_path / folder).mkdir(parents=True)
    for file in ("m/one.yaml", "m/sub/two.yaml", "top.yaml", "a/x.yaml", "a/b/x.yaml", "a/node_modules"):
        (tmp_path / file).write_text(CONFIG_MAP)

    def selected(pattern: str) -> list[str]:
        return sorted(candidate.path for candidate in select([pattern]).files)

    # Before a final `**` stands a folder, never a file.
    assert selected("m/*/**") == ["m/sub/two.yaml"]
    assert selected("*/**") == ["a/b/x.yaml", "a/node_modules", "a/x.yaml", "m/one.yaml", "m/sub/two.yaml"]
    assert selected("**/*.yaml/**") == []
    # `.` after a wildcard is nothing, as in glob; `..` there is refused, not silently empty.
    assert selected("a/**/./x.yaml") == ["a/b/x.yaml", "a/x.yaml"]
    errors = select(["a/**/../x.yaml"]).errors
    assert next(error.message for error in errors).startswith("`..` after a wildcard")
    # A file named like a folder a walk skips is still a file the glob matches.
    assert "a/node_modules" in selected("a/**")


def test_a_link_the_glob_would_match_otherwise_where_it_leads_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a" / "y").mkdir(parents=True)
    (tmp_path / "a" / "y" / "f.yaml").write_text(CONFIG_MAP)
    os.symlink("y", "a/x")
    # Through the link `a/x/f.yaml` would match; where it leads, `a/y/f.yaml` does not.
    assert select(["a/**/x/*.yaml"]).links == ["a/x"]
    # A narrow glob of d2 is no walk of it: a walked folder's link there is still reported.
    for folder in ("d1", "d2/sub"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "d2" / "only.yaml").write_text(CONFIG_MAP)
    (tmp_path / "d2" / "sub" / "deep.yaml").write_text(CONFIG_MAP)
    os.symlink(os.path.join("..", "d2"), "d1/l")
    assert select(["d1", "d2/**/only.yaml"]).links == ["d1/l"]
