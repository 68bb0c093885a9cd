"""Tracked files are walked whatever `.gitignore` says, as git treats them; the index is read
without git (`dra_guard.read.git_index`), and held here to what git itself lists."""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
from pathlib import Path

import pytest

from dra_guard.cli.main import EXIT_FINDINGS, main
from dra_guard.read.git_index import EMPTY, parse_index, tracked
from dra_guard.read.walk import Ignores, select
from testkit.manifests import LEGACY_POD

pytestmark = pytest.mark.e2e  # git runs (tests/conftest.py)


def git(root: Path, *arguments: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", *arguments],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def listed(root: Path, *arguments: str) -> list[str]:
    return sorted(name for name in git(root, "ls-files", "-z", *arguments).split("\0") if name)


def walked(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.chdir(root)
    return sorted(os.path.relpath(candidate.path) for candidate in select(["."]).files)


def test_a_tracked_file_gitignore_names_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """git ls-files lists it and `kubectl apply -R` applies it: a check that left it out passed."""
    git(tmp_path, "init", "-q", ".")
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "pod.yaml").write_text(LEGACY_POD)
    git(tmp_path, "add", "k8s/pod.yaml")
    git(tmp_path, "commit", "-qm", "x")
    (tmp_path / ".gitignore").write_text("k8s/pod.yaml\n")
    (tmp_path / "k8s" / "untracked.yaml").write_text(LEGACY_POD)
    (tmp_path / ".gitignore").write_text("k8s/pod.yaml\nk8s/untracked.yaml\n")
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    assert main(["check", "."], out, err) == EXIT_FINDINGS
    assert "./k8s/pod.yaml:6: DRA001" in out.getvalue()
    assert "untracked.yaml" not in out.getvalue()  # untracked and ignored: left out, as before
    assert main(["check", "--no-ignore", "."], io.StringIO(), io.StringIO()) == EXIT_FINDINGS


def test_an_ignored_folder_is_walked_for_the_files_git_tracks_in_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git(tmp_path, "init", "-q", ".")
    (tmp_path / ".gitignore").write_text("out/\n*.gen.yaml\n")
    for name in ("out/forced.yaml", "out/deep/forced.yaml", "out/left.yaml", "a.gen.yaml", "b.gen.yaml", "c.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("kind: ConfigMap\n")
    git(tmp_path, "add", "-f", "out/forced.yaml", "out/deep/forced.yaml", "a.gen.yaml")
    expected = ["a.gen.yaml", "c.yaml", "out/deep/forced.yaml", "out/forced.yaml"]
    assert walked(tmp_path, monkeypatch) == expected
    assert expected == sorted(
        name for name in listed(tmp_path) + listed(tmp_path, "--others", "--exclude-standard") if name.endswith(".yaml")
    )


#: Patterns drawn for random repositories (as in test_gitignore_git.py).
PATTERNS = ("a", "b/", "/a", "*.yaml", "!x.yaml", "!a", "a/**", "**/b", "c/*", "x.yaml", "*", "!*/", "d", "*/")


def _drawn(root: Path, draw: random.Random, depth: int = 0) -> list[str]:
    files = []
    for name in draw.sample(["a", "b", "c", "d"], draw.randint(0, 3)):
        if depth < 3:
            (root / name).mkdir()
            files += [f"{name}/{file}" for file in _drawn(root / name, draw, depth + 1)]
    for name in draw.sample(["x.yaml", "y.yaml", "a.yaml"], draw.randint(1, 2)):
        (root / name).write_text("kind: ConfigMap\n")
        files.append(name)
    if draw.random() < 0.5:
        (root / ".gitignore").write_text("\n".join(draw.sample(PATTERNS, draw.randint(1, 3))) + "\n")
    return files


@pytest.mark.parametrize("seed", range(40))
def test_a_walk_finds_what_git_tracks_or_does_not_ignore(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    draw = random.Random(seed)
    git(tmp_path, "init", "-q", ".")
    files = _drawn(tmp_path, draw)
    git(tmp_path, "add", "-f", "--", *draw.sample(files, draw.randint(0, len(files))))
    if draw.random() < 0.5:
        git(tmp_path, "update-index", "--index-version", str(draw.choice([2, 3, 4])))
    expected = listed(tmp_path) + listed(tmp_path, "--others", "--exclude-standard")
    assert walked(tmp_path, monkeypatch) == sorted(name for name in expected if name.endswith(".yaml"))


def _index_with(root: Path, names: list[str], *init: str) -> bytes:
    git(root, "init", "-q", *init, ".")
    empty = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=root, input="", capture_output=True, text=True, check=True
    ).stdout.strip()
    for name in names:
        git(root, "update-index", "--add", "--cacheinfo", f"100644,{empty},{name}")
    return (root / ".git" / "index").read_bytes()


#: Names of every length the index spells apart: a name of 0xFFF bytes or more has its
#: length in no entry's flags, and in version 4 each name is cut from the previous one.
NAMES = ["a.yaml", "a/b.yaml", "a/bc/d.yaml", "ab.yaml", "é/x.yaml", "x" * 4094, "y" * 4095, "z" * 5000]


@pytest.mark.parametrize("version", [2, 3, 4])
@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_the_index_is_read_as_git_lists_it(tmp_path: Path, version: int, object_format: str) -> None:
    _index_with(tmp_path, NAMES, f"--object-format={object_format}")
    git(tmp_path, "update-index", "--index-version", str(version))
    if version == 3:  # intent-to-add: an entry with extended flags, which only version 3 has
        (tmp_path / "new.yaml").write_text("kind: ConfigMap\n")
        git(tmp_path, "add", "-N", "new.yaml")
    data = (tmp_path / ".git" / "index").read_bytes()
    names = [os.fsdecode(name) for name in parse_index(data)]
    assert sorted(names) == listed(tmp_path)
    index = tracked(str(tmp_path))
    assert index is not None
    assert index.holds("a/bc/d.yaml", False) and index.holds("a/bc", True) and index.holds("a", True)
    assert not index.holds("a/bc", False) and not index.holds("a/b", True) and not index.holds("b.yaml", False)


def test_an_index_whose_checksum_is_zeros_is_read(tmp_path: Path) -> None:
    """`index.skipHash` writes no checksum: the name size is found by reading."""
    data = _index_with(tmp_path, NAMES)
    assert sorted(os.fsdecode(name) for name in parse_index(data[:-20] + bytes(20))) == sorted(NAMES)


def test_a_sparse_index_tracks_everything_below_its_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git(tmp_path, "init", "-q", ".")
    for name in ("in/a.yaml", "out/b.yaml", "out/deep/c.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("kind: ConfigMap\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "x")
    git(tmp_path, "sparse-checkout", "set", "--cone", "--sparse-index", "in")
    assert "out/" in listed(tmp_path, "--sparse")  # the folder is one entry
    index = tracked(str(tmp_path))
    assert index is not None and index.trees == {"out"}
    assert index.holds("out/deep/c.yaml", False) and index.holds("out/deep", True) and index.holds("in/a.yaml", False)
    assert not index.holds("elsewhere.yaml", False)


def test_without_an_index_nothing_is_tracked(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", ".")
    assert tracked(str(tmp_path)) == EMPTY


@pytest.mark.parametrize(
    "spoil",
    [
        lambda data: data[:-1] + bytes([data[-1] ^ 1]),  # the checksum
        lambda data: data[:4] + (5).to_bytes(4, "big") + data[8:],  # an unknown version
        lambda data: b"XXXX" + data[4:],
        lambda data: data[:40],
        lambda data: data[:-20][:8] + (99).to_bytes(4, "big") + data[12:-20] + bytes(20),  # more entries than held
    ],
)
def test_an_index_that_cannot_be_read_leaves_the_patterns_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spoil: object
) -> None:
    data = _index_with(tmp_path, ["k8s/pod.yaml"])
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "pod.yaml").write_text("kind: ConfigMap\n")
    (tmp_path / ".gitignore").write_text("k8s/\n")
    (tmp_path / ".git" / "index").write_bytes(spoil(data))  # type: ignore[operator]
    assert tracked(str(tmp_path)) is None
    assert walked(tmp_path, monkeypatch) == []  # as before the index was read: no traceback
    # ... but not in silence: the report names the index as not read, and why.
    out, err = io.StringIO(), io.StringIO()
    assert main(["check", "--format", "json", "."], out, err) == 0
    (unread,) = json.loads(out.getvalue())["unchecked"]
    assert unread["path"] == os.path.join(".git", "index") and "cannot be read (" in unread["reason"]
    assert "dra-guard: .git/index: not read: cannot be read (" in err.getvalue()
    out, err = io.StringIO(), io.StringIO()
    assert main(["check", "--fail-on-unchecked", "."], out, io.StringIO()) == 2
    assert "1 git index not read" in out.getvalue()
    assert main(["migrate", "--dry-run", "."], io.StringIO(), err) == 0
    assert ".git/index: a git index that cannot be read (" in err.getvalue()


def test_an_index_read_without_need_is_not_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No pattern matched, so the index was not read: nothing to say of it."""
    _index_with(tmp_path, ["pod.yaml"])
    (tmp_path / "pod.yaml").write_text("kind: ConfigMap\napiVersion: v1\nmetadata: {name: a}\n")
    (tmp_path / ".git" / "index").write_bytes(b"damaged")
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    assert main(["check", "--format", "json", "."], out, io.StringIO()) == 0
    assert json.loads(out.getvalue())["unchecked"] == []


@pytest.mark.parametrize("version", [2, 4])
@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_a_split_index_is_read_with_its_shared_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int, object_format: str
) -> None:
    """Most entries are in the shared index the `link` extension names; the split one holds
    what changed since, a replaced entry without its path.  A file removed after the split
    still counts as tracked (the deletion bitmap is not decoded): more checked, never less."""
    _index_with(tmp_path, NAMES, f"--object-format={object_format}")
    git(tmp_path, "update-index", "--index-version", str(version))
    git(tmp_path, "update-index", "--split-index")
    empty = git(tmp_path, "hash-object", "-w", "--stdin").strip()
    git(tmp_path, "update-index", "--add", "--cacheinfo", f"100644,{empty},k8s/new.yaml")  # added
    git(tmp_path, "update-index", "--cacheinfo", f"100755,{empty},a/b.yaml")  # replaced
    git(tmp_path, "update-index", "--force-remove", "ab.yaml")  # deleted
    assert list((tmp_path / ".git").glob("sharedindex.*"))
    with pytest.raises(ValueError, match="split index"):
        parse_index((tmp_path / ".git" / "index").read_bytes())
    index = tracked(str(tmp_path))
    assert index is not None
    assert sorted(index.files) == sorted({*listed(tmp_path), "ab.yaml"})
    # What the walk makes of it: the tracked file a .gitignore names is checked.
    (tmp_path / "k8s" / "new.yaml").parent.mkdir()
    (tmp_path / "k8s" / "new.yaml").write_text(LEGACY_POD)
    (tmp_path / ".gitignore").write_text("k8s/\n")
    assert walked(tmp_path, monkeypatch) == ["k8s/new.yaml"]


def test_a_split_index_without_its_shared_index_leaves_the_patterns_alone(tmp_path: Path) -> None:
    _index_with(tmp_path, ["a.yaml"])
    git(tmp_path, "update-index", "--split-index")
    for shared in (tmp_path / ".git").glob("sharedindex.*"):
        shared.unlink()
    assert tracked(str(tmp_path)) is None


def test_a_worktree_reads_its_own_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    main_tree = tmp_path / "main"
    main_tree.mkdir()
    git(main_tree, "init", "-q", ".")
    (main_tree / "pod.yaml").write_text(LEGACY_POD)
    git(main_tree, "add", "pod.yaml")
    git(main_tree, "commit", "-qm", "x")
    git(main_tree, "worktree", "add", "-q", str(tmp_path / "wt"))
    (tmp_path / "wt" / ".gitignore").write_text("pod.yaml\n")
    assert walked(tmp_path / "wt", monkeypatch) == ["pod.yaml"]
    assert Ignores().excluded("pod.yaml") is False
    (tmp_path / "wt" / "other.yaml").write_text(LEGACY_POD)
    (tmp_path / "wt" / ".gitignore").write_text("*.yaml\n")
    assert Ignores().excluded("other.yaml") is True  # untracked: ignored


def test_a_worktree_and_a_submodule_use_their_repository_info_exclude(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worktree's `info/exclude` is its repository's (the common git folder), a
    submodule's is in its own git folder under the superproject's: as `git status` has it."""
    main_tree = tmp_path / "main"
    main_tree.mkdir()
    git(main_tree, "init", "-q", ".")
    (main_tree / "kept.yaml").write_text(LEGACY_POD)
    git(main_tree, "add", "kept.yaml")
    git(main_tree, "commit", "-qm", "x")
    (main_tree / ".git" / "info").mkdir(exist_ok=True)
    (main_tree / ".git" / "info" / "exclude").write_text("scratch/\n")
    git(main_tree, "worktree", "add", "-q", str(tmp_path / "wt"))
    git(tmp_path, "init", "-q", "super")
    git(tmp_path / "super", "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(main_tree), "sub")
    sub_git = tmp_path / "super" / ".git" / "modules" / "sub"
    (sub_git / "info").mkdir(exist_ok=True)
    (sub_git / "info" / "exclude").write_text("scratch/\n")
    for tree in (tmp_path / "wt", tmp_path / "super" / "sub"):
        (tree / "scratch").mkdir()
        (tree / "scratch" / "pod.yaml").write_text(LEGACY_POD)
        assert listed(tree, "--others", "--exclude-standard") == []  # git leaves it out
        assert walked(tree, monkeypatch) == ["kept.yaml"]


def _ever_longer_names(count: int) -> bytes:
    """A version 4 index whose every name is the previous one and one byte more."""
    import hashlib
    import struct

    body = bytearray(b"DIRC" + struct.pack(">II", 4, count))
    for index in range(count):
        body += b"\0" * 40 + b"\1" * 20 + struct.pack(">H", min(index + 1, 0xFFF)) + b"\x00a\0"
    return bytes(body + hashlib.sha1(body).digest())


def test_a_crafted_index_is_refused_not_obeyed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by the final review: a NUL in the path a `.git` file gives raised a traceback, a
    FIFO named index (or .gitignore) blocked the walk for good, and a version 4 index of ever
    longer names (3 MB) took 1.6 GB.  Each now leaves the patterns alone, or ignores nothing."""
    (tmp_path / "ign").mkdir()
    (tmp_path / "ign" / "x.yaml").write_text(LEGACY_POD)
    (tmp_path / ".gitignore").write_text("ign/\n")
    (tmp_path / ".git").write_bytes(b"gitdir: a\0b\n")
    assert tracked(str(tmp_path)) is None and walked(tmp_path, monkeypatch) == []
    (tmp_path / ".git").unlink()
    (tmp_path / ".git").mkdir()
    os.mkfifo(tmp_path / ".git" / "index")
    assert tracked(str(tmp_path)) is None and walked(tmp_path, monkeypatch) == []
    (tmp_path / ".git" / "index").unlink()
    (tmp_path / ".git" / "index").write_bytes(_ever_longer_names(40_000))
    assert tracked(str(tmp_path)) is None and walked(tmp_path, monkeypatch) == []
    (tmp_path / ".gitignore").unlink()
    os.mkfifo(tmp_path / ".gitignore")  # no regular file: it ignores nothing
    assert walked(tmp_path, monkeypatch) == ["ign/x.yaml"]
