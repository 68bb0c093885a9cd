"""The report file is told apart from the inputs by identity (st_dev, st_ino), not by a
`realpath` per candidate: a symlink or a hard link to an input is still refused as the
report file, and a report file that does not exist yet is no candidate."""

from __future__ import annotations

import io
import os
from pathlib import Path

from dra_guard.cli.main import main
from dra_guard.read.walk import select

POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n"


def _check(*arguments: str) -> tuple[int, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    return main(["check", "--config", "/dev/null", *arguments], stdout, stderr), stderr.getvalue()


def test_a_link_to_an_input_is_refused_as_the_report_file(tmp_path: Path) -> None:
    tree = tmp_path / "k8s"
    tree.mkdir()
    manifest = tree / "pod.yaml"
    manifest.write_text(POD)
    (tmp_path / "symlink.json").symlink_to(manifest)
    os.link(manifest, tmp_path / "hardlink.json")
    for output in ("symlink.json", "hardlink.json"):
        code, stderr = _check("-o", str(tmp_path / output), str(tree))
        assert code == 2 and "it is one of the inputs" in stderr, output
    assert manifest.read_text() == POD


def test_a_report_file_not_made_yet_is_no_candidate(tmp_path: Path) -> None:
    named = select([str(tmp_path / "report.json")], output=str(tmp_path / "report.json"))
    assert not named.files and [error.message for error in named.errors] == ["no such file or directory"]
    other = select([str(tmp_path)], output=str(tmp_path / "report.json"))
    assert not other.output_named and not other.output_found
