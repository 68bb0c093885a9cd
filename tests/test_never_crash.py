"""No input makes `dra-guard check` print a traceback or lose the report (issue 9 item 4).

Each crash class is run end to end through the real CLI in a fresh process, next to a
file with a known finding: the exit status is 2, the bad file (or rule, or object) is
named, the other file's finding is still reported, and an `-o` report is whole.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dra_guard.engine.run import check_objects
from dra_guard.rules import RULES
from testkit.manifests import LEGACY_POD
from testkit.paths import REPO_ROOT

pytestmark = pytest.mark.e2e  # every test here starts a process (tests/conftest.py)

# A rule that exists only here and raises on a shape nobody foresaw.
CRASHING_RULE = '''\
"""DRA098: raises on ConfigMaps that say so."""

from dra_guard.ruleapi.admission_form import NotAdmissible
from dra_guard.ruleapi.context import Pending, Violation
from dra_guard.contract.findings import Severity
from dra_guard.ruleapi.declarations import Example

ID = "DRA098"
NAME = "crashing-rule"
SEVERITY = Severity.LOW
SUMMARY = RATIONALE = REMEDIATION = "A rule that fails."
KINDS = frozenset({"ConfigMap"})
CROSS_OBJECT = True
WAIVABLE = True
OPTIONS = ()
EXAMPLES = (
    Example(title="fails", manifests="apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: a}\\ndata: {x: y}\\n",
            findings=("ConfigMap/a#/data",)),
    Example(title="passes", manifests="apiVersion: v1\\nkind: Secret\\nmetadata: {name: a}\\n"),
)
ADMISSION = NotAdmissible("a rule that exists only in a test has no policy")


def check(resource, context):
    data = resource.obj.get("data") or {}
    if data.get("crash") == "now":
        raise ZeroDivisionError("a shape nobody foresaw")
    if data.get("crash") == "later":
        def resolve():
            raise KeyError("resolving")
        yield Pending(("data",), resolve)
    else:
        yield Violation(("data",), "fails")
'''


def run(*arguments: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "dra_guard.cli", *arguments],
        capture_output=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})},
        timeout=120,
        check=False,
    )


def assert_reported(result: subprocess.CompletedProcess[bytes], report: Path, *named: str) -> dict[str, object]:
    output = (result.stdout + result.stderr).decode("utf-8", "replace")
    assert "Traceback" not in output, output
    assert result.returncode == 2, output
    document = json.loads(report.read_text(encoding="utf-8"))  # whole, valid JSON
    errors = " ".join(f"{error['file']} {error['message']}" for error in document["errors"])
    for name in named:
        assert name in errors, errors
    assert [(f["rule"], os.path.normpath(f["file"])) for f in document["findings"] if f["rule"] == "DRA001"] == [
        ("DRA001", "legacy.yaml")
    ], "the other file's finding must still be reported"
    assert [path.name for path in report.parent.iterdir() if path.name.startswith(".dra-guard-")] == []
    return document


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "legacy.yaml").write_text(LEGACY_POD)
    return tmp_path


def test_a_rule_that_raises_is_an_input_error_naming_rule_object_and_file(project: Path) -> None:
    rules = project / "rules"
    rules.mkdir()
    (rules / "dra098_crashing_rule.py").write_text(CRASHING_RULE)
    (project / "crash.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: boom, namespace: ns}\ndata: {crash: now}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: late, namespace: ns}\ndata: {crash: later}\n"
    )
    env = {"DRA_GUARD_EXTRA_RULES": "dra098_crashing_rule", "PYTHONPATH": f"{rules}{os.pathsep}{REPO_ROOT}"}
    result = run("check", "--format", "json", "-o", "report.json", "legacy.yaml", "crash.yaml", cwd=project, env=env)
    document = assert_reported(result, project / "report.json", "crash.yaml", "DRA098", "ConfigMap/ns/boom")
    messages = [error["message"] for error in document["errors"]]  # type: ignore[union-attr]
    assert any("ZeroDivisionError" in m and "ConfigMap/ns/boom" in m for m in messages)
    assert any("KeyError" in m and "ConfigMap/ns/late" in m for m in messages)


def test_a_file_name_that_is_not_utf8(project: Path) -> None:
    bad = os.fsencode(project) + b"/bad-\xff-name.yaml"
    with open(bad, "wb") as handle:
        handle.write(b"apiVersion: v1\nkind: Pod\nmetadata: {name: p\n")  # and broken YAML
    result = run("check", "--format", "json", "-o", "report.json", ".", cwd=project)
    assert_reported(result, project / "report.json", "bad-\\xff-name.yaml")
    text = run("check", ".", cwd=project)
    assert b"bad-\\xff-name.yaml" in text.stdout and b"Traceback" not in text.stderr


@pytest.mark.parametrize(
    "text",
    [
        # A lone surrogate, in a name that the report prints.
        '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x\\ud800"}, '
        '"spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"amd.com/gpu": 1}}}]}}',
        # An integer of 5,000 digits (Python refuses to convert it back to text).
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: ns}\n"
        f"spec: {{devices: {{requests: [{{name: r, exactly: {{deviceClassName: x, count: {'9' * 5000}}}}}]}}}}\n",
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: ns}\n"
        "spec: {devices: {requests: [{name: r, exactly: {deviceClassName: x, count: .nan}}]}}\n",
    ],
    ids=["lone-surrogate", "5000-digits", "nan"],
)
def test_strange_values_never_crash(project: Path, text: str) -> None:
    (project / "strange.json").write_text(text)
    for arguments in (["--format", "json", "-o", "report.json"], ["--format", "sarif"], []):
        result = run("check", *arguments, "legacy.yaml", "strange.json", cwd=project)
        output = (result.stdout + result.stderr).decode("utf-8", "replace")
        assert "Traceback" not in output and result.returncode in (1, 2), output
    report = json.loads((project / "report.json").read_text(encoding="utf-8"))
    assert [f["rule"] for f in report["findings"] if f["file"] == "legacy.yaml"] == ["DRA001"]


def test_the_output_file_is_replaced_whole(project: Path) -> None:
    report = project / "report.json"
    report.write_text("old report")
    report.chmod(0o640)
    result = run("check", "--format", "json", "-o", "report.json", "legacy.yaml", cwd=project)
    assert result.returncode == 1
    assert json.loads(report.read_text())["summary"]["findings"] == 1
    assert report.stat().st_mode & 0o777 == 0o640
    assert sorted(path.name for path in project.iterdir()) == ["legacy.yaml", "report.json"]
    devnull = run("check", "-o", os.devnull, "legacy.yaml", cwd=project)
    assert devnull.returncode == 1 and devnull.stderr == b""
    missing = run("check", "-o", "no/such/dir/report.json", "legacy.yaml", cwd=project)
    assert missing.returncode == 2 and b"cannot write" in missing.stderr and b"Traceback" not in missing.stderr


@pytest.mark.parametrize("arguments", [["rules"], ["rules", "--format", "markdown"], ["explain", "DRA001"]])
def test_a_reader_that_goes_away_is_no_error(arguments: list[str]) -> None:
    """`dra-guard rules | head`: the pipe closes before the output is written."""
    process = subprocess.Popen(
        [sys.executable, "-m", "dra_guard.cli", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    errors = process.stderr.read()
    assert process.wait(timeout=60) == 0 and errors == b""


def test_front_ends_get_a_rule_failure_as_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """check_objects (cdk8s enforce(), the Pulumi pack) gets the error, not the exception."""
    import dataclasses

    def broken(resource: object, context: object) -> None:
        raise RuntimeError("boom")

    rule = RULES["DRA007"]
    monkeypatch.setitem(RULES._rules, "DRA007", dataclasses.replace(rule, check=broken))  # type: ignore[attr-defined]
    device_class = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "d"}}
    report = check_objects([device_class])
    (error,) = report.errors
    assert error.rule == "DRA007" and "RuntimeError: boom" in error.message and "DeviceClass/-/d" in error.message
