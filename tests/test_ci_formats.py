"""The CI report formats beyond SARIF (issue 24, point 3): GitHub workflow annotations,
JUnit XML and wgpolicyk8s.io policy reports; the docs anchor of text and SARIF; and the
annotation workflow of `dra-guard init ci --annotations`.

Everything runs in-process (`main(argv, stdout, stderr)`) on the corpus or a small tree
with findings of every level, a waiver, a cluster-scoped object and an input error, under
a folder whose name holds `,` `:` and `%`.
"""

from __future__ import annotations

import io
import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from dra_guard.cli.init import ANNOTATIONS_WORKFLOW, WORKFLOW
from dra_guard.cli.main import main
from dra_guard.contract.findings import Finding, InputError, ObjectRef, Report, Severity
from dra_guard.present.report import FORMATS, links, renderer
from dra_guard.present.report.github import escape_data, escape_property
from dra_guard.rules import RULES
from testkit.paths import REPO_ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CORPUS = REPO_ROOT / "tests" / "corpus"
NEW_FORMATS = ("github", "junit", "policyreport")
ODD_FOLDER = "odd, name: 100%"
REASON = "burn-in, see: OPS-142 (100%)"
LEGACY_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
{namespace}  annotations: {annotations}
spec:
  containers:
    - name: c
      image: busybox
      resources:
        limits:
          nvidia.com/gpu: 1
"""
DEVICE_CLASS = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.nvidia.com
spec:
  selectors:
  - cel:
      expression: "device.driver == 'gpu.nvidia.com'"
  extendedResourceName: nvidia.com/gpu
"""


def pod(name: str, namespace: str | None = None, reason: str | None = None) -> str:
    annotations = {} if reason is None else {"dra-guard.io/ignore-DRA001": reason}
    return LEGACY_POD.format(
        name=name,
        namespace=f"  namespace: {namespace}\n" if namespace else "",
        annotations=json.dumps(annotations),
    )


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Findings (critical to medium), a waiver, a cluster-scoped object, no input error."""
    folder = tmp_path / ODD_FOLDER
    folder.mkdir()
    (folder / "pods.yaml").write_text(
        pod("legacy", "team-a") + "---\n" + pod("waived", "team-a", REASON) + "---\n" + pod("anywhere")
    )
    (folder / "classes.yaml").write_text(DEVICE_CLASS)
    (folder / "mig.yaml").write_bytes((CORPUS / "nvidia-dra-driver" / "gpu-simple-mig.yaml").read_bytes())
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def broken_tree(tree: Path) -> Path:
    (tree / ODD_FOLDER / "broken.yaml").write_text("kind: Pod\n  bad: [\n")
    return tree


def check(*arguments: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(["check", *arguments], stdout, stderr)
    return code, stdout.getvalue(), stderr.getvalue()


def report_of(*arguments: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(check("--format", "json", *arguments)[1])
    return document


# --- every format ------------------------------------------------------------------------


def test_the_new_formats_are_offered() -> None:
    assert set(NEW_FORMATS) <= set(FORMATS)


def test_the_architecture_names_every_format() -> None:
    """docs/architecture.md's diagram and its `present/` entry name each `--format`."""
    architecture = (REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    diagram = architecture.split("```")[1]
    (entry,) = re.findall(r"`present/`: the report formats \(([^)]*)\)", architecture)
    spelled = {"json": "JSON", "sarif": "SARIF", "github": "GitHub", "junit": "JUnit", "policyreport": "PolicyReport"}
    for output_format in FORMATS:
        assert output_format in diagram, output_format
        assert spelled.get(output_format, output_format) in entry, (output_format, entry)


@pytest.mark.parametrize("output_format", NEW_FORMATS)
def test_same_bytes_from_two_runs_and_the_exit_status_of_text(output_format: str, broken_tree: Path) -> None:
    for fixture_state in ("with an input error", "findings only", "clean"):
        if fixture_state == "findings only":
            (broken_tree / ODD_FOLDER / "broken.yaml").unlink()
        if fixture_state == "clean":
            for path in (broken_tree / ODD_FOLDER).iterdir():
                path.unlink()
            (broken_tree / ODD_FOLDER / "settings.yaml").write_text(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\n"
            )
        first, second, text = check("--format", output_format, "."), check("--format", output_format, "."), check(".")
        assert first == second, fixture_state
        assert first[0] == text[0] == {"with an input error": 2, "findings only": 1, "clean": 0}[fixture_state]


@pytest.mark.parametrize("output_format", NEW_FORMATS)
def test_each_format_renders_the_corpus(output_format: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO_ROOT)
    code, out, _ = check("--format", output_format, "tests/corpus")
    findings = report_of("tests/corpus")["findings"]
    assert code == 1 and findings
    if output_format == "github":
        assert len(github_commands(out)) == len(findings)
    elif output_format == "junit":
        root = well_formed_junit(out)
        assert int(root.get("failures", "")) == len(findings)
        names = [(case.get("classname"), case.get("name")) for case in root.iter("testcase")]
        assert len(names) == len(set(names))  # every test case its own: CI views key on these
    else:
        reports = valid_policy_reports(out)
        assert sum(len(item["results"]) for item in reports) == len(findings)


# --- github ------------------------------------------------------------------------------

COMMAND = re.compile(r"::(?P<level>error|warning|notice)(?: (?P<properties>[^:]*))?::(?P<message>.*)")


def unescape_data(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(text: str) -> str:
    return unescape_data(text.replace("%3A", ":").replace("%2C", ","))


def github_commands(out: str) -> list[dict[str, str]]:
    """Every line but the last is one workflow command; the properties and message unescaped."""
    lines = out.splitlines()
    assert out.endswith("\n") and not COMMAND.fullmatch(lines[-1])
    commands = []
    for line in lines[:-1]:
        match = COMMAND.fullmatch(line)
        assert match, line
        command = {"level": match["level"], "message": unescape_data(match["message"])}
        for pair in (match["properties"] or "").split(","):
            key, _, value = pair.partition("=")
            command[key] = unescape_property(value)
        commands.append(command)
    return commands


def test_github_annotates_each_open_finding_at_its_level(broken_tree: Path) -> None:
    _, out, _ = check("--format", "github", ".")
    _, text, _ = check(".")
    report = report_of(".")
    commands = github_commands(out)
    assert out.splitlines()[-1] == text.splitlines()[-1]  # the text summary, waiver and error counted
    errors = [command for command in commands if command.get("title") == "input error"]
    assert [(c["level"], c["file"], c["line"]) for c in errors] == [("error", f"{ODD_FOLDER}/broken.yaml", "2")]
    annotated = [command for command in commands if command.get("title") != "input error"]
    level = {"critical": "error", "high": "error", "medium": "warning", "low": "notice"}
    expected = sorted(
        (level[f["severity"]], f["file"].removeprefix("./"), str(f["line"]), f["rule"]) for f in report["findings"]
    )
    assert sorted((c["level"], c["file"], c["line"], c["title"].split()[0]) for c in annotated) == expected
    assert {"error", "warning"} <= {c["level"] for c in annotated}
    assert not any("waived" in c["message"] for c in annotated) and report["waived"]  # waived: not annotated
    title = next(c["title"] for c in annotated if c["title"].startswith("DRA013"))
    assert title == "DRA013 extended-resource-class"
    assert all(c["message"].endswith(f"({links.rule_docs_link(c['title'].split()[0])})") for c in annotated)
    # The folder's `,` `:` `%` are escaped in the property, where they would end it.
    assert f"file={escape_property(ODD_FOLDER)}/pods.yaml,line=" in out and "odd%2C name%3A 100%25" in out


def test_github_escapes_what_would_end_a_command() -> None:
    message = "a, b: 100%\r\nnext line\n::error::injected"
    finding = Finding(
        "DRA001", Severity.LOW, message, ObjectRef("v1", "Pod", "ns", "p"), "/spec", "fix", "dir,a:b%/f.yaml", 3
    )
    error = InputError("x:y,z%.yaml", 4, "bad\nvalue: 50%")
    out = renderer("github")(Report(findings=[finding], errors=[error], files=1, objects=1))
    lines = out.splitlines()
    assert lines[0] == "::error file=x%3Ay%2Cz%25.yaml,line=4,title=input error::bad%0Avalue: 50%25"
    assert lines[1] == (
        "::notice file=dir%2Ca%3Ab%25/f.yaml,line=3,title=DRA001 legacy-extended-resource::"
        "Pod/ns/p: a, b: 100%25%0D%0Anext line%0A::error::injected (docs/rules.md#dra001-legacy-extended-resource)"
    )
    assert len(lines) == 3  # and the summary: no value made a line of its own
    assert github_commands(out)[1]["message"].startswith(f"Pod/ns/p: {message} (")
    assert escape_data("%\r\n:,") == "%25%0D%0A:," and escape_property("%\r\n:,") == "%25%0D%0A%3A%2C"


def test_github_leaves_out_a_location_it_does_not_have() -> None:
    findings = [
        Finding("DRA001", Severity.HIGH, "m", ObjectRef("v1", "Pod", "", "p"), "/spec", "fix", "<stdin>", 2),
        Finding("DRA001", Severity.HIGH, "m", ObjectRef("v1", "Pod", "", "q"), "/spec", "fix", "chart/t.yaml", None),
    ]
    lines = renderer("github")(Report(findings=findings, files=1, objects=2)).splitlines()
    assert lines[0].startswith("::error title=DRA001 legacy-extended-resource::Pod/-/p: m")  # stdin: no file
    assert lines[1].startswith("::error file=chart/t.yaml,title=DRA001")  # rendered by helm: no line


# --- junit -------------------------------------------------------------------------------

# What a test case and its suites may carry: the attributes of the JUnit schema CI servers
# read (Jenkins' junit-10.xsd, GitLab's parser: `file` and `line` on test cases).  Not an
# XSD validation: no XSD validator (lxml, xmlschema) installs offline here.
JUNIT_ATTRIBUTES = {
    "testsuites": {"name", "tests", "failures", "errors", "skipped", "disabled", "time"},
    "testsuite": {"name", "tests", "failures", "errors", "skipped", "disabled", "time", "timestamp", "hostname", "id"},
    "testcase": {"name", "classname", "time", "file", "line", "assertions", "status"},
    "failure": {"message", "type"},
    "error": {"message", "type"},
    "skipped": {"message"},
    "system-out": set(),
}
JUNIT_CHILDREN = {
    "testsuites": {"testsuite"},
    "testsuite": {"testcase", "properties", "system-out", "system-err"},
    "testcase": {"failure", "error", "skipped", "system-out", "system-err"},
}


def well_formed_junit(out: str) -> ET.Element:
    assert out.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites ')
    root = ET.fromstring(out.encode("utf-8"))
    for element in root.iter():
        assert element.tag in JUNIT_ATTRIBUTES, element.tag
        assert set(element.attrib) <= JUNIT_ATTRIBUTES[element.tag], element.tag
        assert {child.tag for child in element} <= JUNIT_CHILDREN.get(element.tag, set()), element.tag
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        counts = {
            "tests": len(cases),
            "failures": sum(case.find("failure") is not None for case in cases),
            "errors": sum(case.find("error") is not None for case in cases),
            "skipped": sum(case.find("skipped") is not None for case in cases),
        }
        assert {key: int(suite.get(key, "")) for key in counts} == counts, suite.get("name")
        for case in cases:
            assert case.get("name") and case.get("classname")
            assert sum(case.find(tag) is not None for tag in ("failure", "error", "skipped")) <= 1
            float(case.get("time", "0"))
        for key, value in counts.items():
            totals[key] += value
    assert {key: int(root.get(key, "")) for key in totals} == totals
    return root


def test_junit_one_suite_per_rule_one_case_per_finding(broken_tree: Path) -> None:
    _, out, _ = check("--format", "junit", ".")
    report = report_of(".")
    root = well_formed_junit(out)
    suites = root.findall("testsuite")
    assert suites[0].get("name") == "dra-guard"
    (check_case, error_case) = suites[0].findall("testcase")
    assert check_case.get("name") == "check" and next(iter(check_case)).tag == "system-out"
    error = error_case.find("error")
    assert error is not None and error_case.get("file") == f"{ODD_FOLDER}/broken.yaml"
    rules = sorted({f["rule"] for f in report["findings"] + report["waived"]}, key=list(RULES).index)
    assert [suite.get("name") for suite in suites[1:]] == [links.rule_title(rule) for rule in rules]
    dra001 = next(suite for suite in suites if suite.get("name", "").startswith("DRA001"))
    skipped = [case.find("skipped") for case in dra001.findall("testcase") if case.find("skipped") is not None]
    assert [element.get("message") for element in skipped if element is not None] == [f"waived: {REASON}"]
    failures = [case for suite in suites[1:] for case in suite.findall("testcase") if case.find("failure") is not None]
    assert len(failures) == len(report["findings"])
    for case in failures:
        failure = case.find("failure")
        assert failure is not None and failure.text
        assert failure.get("type") in {"critical", "high", "medium", "low"}
        assert f"See: {links.RULES_DOC}#" in failure.text and case.get("classname", "").startswith("dra-guard.DRA")


def test_junit_escapes_markup_and_what_xml_cannot_hold() -> None:
    message = "a <b href=\"x\">&amp;</b> 'q', 100%: \x01\x1b\ud800\n\tline two"
    finding = Finding(
        "DRA001", Severity.MEDIUM, message, ObjectRef("v1", "Pod", "n<s>", 'p"q'), "/a&b", "fix", "f.yaml", 1
    )
    out = renderer("junit")(Report(findings=[finding], files=1, objects=1))
    out.encode("utf-8")  # no lone surrogate left to fail the write
    root = well_formed_junit(out)
    (case,) = [c for c in root.iter("testcase") if c.get("classname") != "dra-guard"]
    failure = case.find("failure")
    assert failure is not None
    written = "a <b href=\"x\">&amp;</b> 'q', 100%: \\x01\\x1b\\ud800\n\tline two"
    assert failure.get("message") == written  # newline and tab kept through attribute normalization
    assert failure.text is not None and written in failure.text
    assert case.get("name") == 'Pod/n<s>/p"q /a&b (f.yaml:1)'


# --- policyreport ------------------------------------------------------------------------

# The wgpolicyk8s.io/v1alpha2 schema as Kyverno's CRD (kyverno/kyverno,
# config/crds/policyreport/wgpolicyk8s.io_policyreports.yaml and ..._clusterpolicyreports.yaml)
# declares it, written here as JSON Schema: the CRD's fields and enums, with unknown fields
# refused (the API server would prune them silently).  The CRD itself is not vendored.
# Its severity enum is Kyverno's (critical, high, low, medium, info); the older CRD of
# kubernetes-sigs/wg-policy-prototypes (policy-report/crd/v1alpha2) allows high, low, medium.
_STRING = {"type": "string"}
_OBJECT_REFERENCE = {
    "type": "object",
    "additionalProperties": False,
    "properties": dict.fromkeys(
        ("apiVersion", "fieldPath", "kind", "name", "namespace", "resourceVersion", "uid"), _STRING
    ),
}
_SELECTOR = {
    "type": "object",
    "properties": {
        "matchLabels": {"type": "object", "additionalProperties": _STRING},
        "matchExpressions": {"type": "array", "items": {"type": "object", "required": ["key", "operator"]}},
    },
}
POLICY_REPORT_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["apiVersion", "kind", "metadata"],
    "properties": {
        "apiVersion": {"const": "wgpolicyk8s.io/v1alpha2"},
        "kind": {"enum": ["PolicyReport", "ClusterPolicyReport"]},
        "metadata": {
            "type": "object",
            "required": ["name"],
            "properties": {"name": _STRING, "namespace": _STRING, "labels": {"additionalProperties": _STRING}},
        },
        "scope": _OBJECT_REFERENCE,
        "scopeSelector": _SELECTOR,
        "summary": {
            "type": "object",
            "additionalProperties": False,
            "properties": {key: {"type": "integer"} for key in ("error", "fail", "pass", "skip", "warn")},
        },
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["policy"],
                "properties": {
                    "category": _STRING,
                    "message": _STRING,
                    "policy": _STRING,
                    "properties": {"type": "object", "additionalProperties": _STRING},
                    "resourceSelector": _SELECTOR,
                    "resources": {"type": "array", "items": _OBJECT_REFERENCE},
                    "result": {"enum": ["pass", "fail", "warn", "error", "skip"]},
                    "rule": _STRING,
                    "scored": {"type": "boolean"},
                    "severity": {"enum": ["critical", "high", "low", "medium", "info"]},
                    "source": _STRING,
                    "timestamp": {
                        "type": "object",
                        "required": ["nanos", "seconds"],
                        "properties": {"nanos": {"type": "integer"}, "seconds": {"type": "integer"}},
                    },
                },
            },
        },
    },
}


def valid_policy_reports(out: str) -> list[dict[str, Any]]:
    document = json.loads(out)
    assert out == json.dumps(document, indent=2, ensure_ascii=False) + "\n"  # one dump of the whole, streamed
    assert (document["apiVersion"], document["kind"]) == ("v1", "List")
    reports: list[dict[str, Any]] = document["items"]
    for item in reports:
        jsonschema.Draft7Validator(POLICY_REPORT_SCHEMA).validate(item)
        assert ("namespace" in item["metadata"]) <= (item["kind"] == "PolicyReport")
        outcomes = [result["result"] for result in item["results"]]
        assert item["summary"] == {key: outcomes.count(key) for key in ("pass", "fail", "warn", "error", "skip")}
        assert item["results"] and all(result["source"] == "dra-guard" for result in item["results"])
    keys = [(item["kind"], item["metadata"].get("namespace")) for item in reports]
    assert len(keys) == len(set(keys))
    return reports


def test_policy_reports_per_namespace_and_for_the_cluster(broken_tree: Path) -> None:
    _, out, _ = check("--format", "policyreport", ".")
    reports = {(item["kind"], item["metadata"].get("namespace")): item for item in valid_policy_reports(out)}
    assert list(reports) == [("ClusterPolicyReport", None), ("PolicyReport", None), ("PolicyReport", "team-a")]
    cluster = reports["ClusterPolicyReport", None]["results"]
    assert {(r["policy"], r["resources"][0]["kind"]) for r in cluster if r["result"] == "fail"} == {
        ("dra013-extended-resource-class", "DeviceClass")
    }
    (error,) = [r for r in cluster if r["result"] == "error"]
    assert error["policy"] == "dra-guard-input" and error["properties"]["file"].endswith("broken.yaml")
    team = reports["PolicyReport", "team-a"]
    (skipped,) = [r for r in team["results"] if r["result"] == "skip"]
    assert skipped["properties"]["waiver"] == REASON and skipped["resources"][0]["name"] == "waived"
    (failed,) = [r for r in team["results"] if r["result"] == "fail"]
    assert failed["resources"] == [{"apiVersion": "v1", "kind": "Pod", "name": "legacy", "namespace": "team-a"}]
    assert (failed["policy"], failed["rule"], failed["severity"]) == (
        "dra001-legacy-extended-resource",
        "legacy-extended-resource",
        "critical",
    )
    assert failed["properties"]["docs"] == "docs/rules.md#dra001-legacy-extended-resource"
    unnamespaced = {r["resources"][0]["name"] for r in reports["PolicyReport", None]["results"]}
    assert {"anywhere", "rct-mig1g"} <= unnamespaced


def test_policy_report_of_a_clean_run_is_an_empty_list() -> None:
    out = renderer("policyreport")(Report(files=1, objects=1))
    assert json.loads(out) == {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": []}


# --- docs anchors: text and SARIF --------------------------------------------------------


def test_each_text_finding_is_followed_by_its_rules_docs_anchor(tree: Path) -> None:
    _, out, _ = check(".")
    headings = set(re.findall(r"^## (\S+)$", (REPO_ROOT / "docs" / "rules.md").read_text(), re.MULTILINE))
    lines = out.splitlines()
    finding_lines = [index for index, line in enumerate(lines) if re.search(r": DRA\d{3} \[", line)]
    assert finding_lines
    for index in finding_lines:
        rule = re.search(r": (DRA\d{3}) \[", lines[index])
        assert rule is not None
        see = lines[index + 1]
        assert see == f"  see docs/rules.md#{links.rule_slug(rule[1])}"
        assert see.rpartition("#")[2] in headings


def test_sarif_help_names_the_docs_and_help_uri_waits_for_a_repository_url(tree: Path) -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert project.get("urls", {}).get("Repository") == links.REPOSITORY_URL
    _, out, _ = check("--format", "sarif", ".")
    rules = json.loads(out)["runs"][0]["tool"]["driver"]["rules"]
    for rule in rules:
        assert links.rule_docs_link(rule["id"]) in rule["help"]["text"]
        assert ("helpUri" in rule) is (links.REPOSITORY_URL is not None)  # SARIF's helpUri must be absolute
    uri = links.rule_docs_uri("DRA016", "https://github.com/example/dra-guard/")
    assert uri == "https://github.com/example/dra-guard/blob/main/docs/rules.md#dra016-scrub-before-use"


# --- init ci --annotations ---------------------------------------------------------------


def test_init_ci_annotations_writes_a_workflow_without_code_scanning(tmp_path: Path) -> None:
    stdout, stderr = io.StringIO(), io.StringIO()
    assert main(["init", "ci", "--annotations", "--dir", str(tmp_path)], stdout, stderr) == 0
    workflow = tmp_path / ".github" / "workflows" / "dra-guard.yml"
    document = yaml.safe_load(workflow.read_text())
    assert document["permissions"] == {"contents": "read"}
    steps = document["jobs"]["dra-guard"]["steps"]
    assert steps[-1]["run"] == "dra-guard check --format github ."
    assert not any("upload-sarif" in str(step.get("uses")) for step in steps)
    assert workflow.read_text() == ANNOTATIONS_WORKFLOW.format(
        install="${{ vars.DRA_GUARD_INSTALL }}", install_note=" (set it as a repository variable)"
    )
    # Without the option: the code-scanning workflow, as before.
    assert "--format sarif" in WORKFLOW and "security-events: write" in WORKFLOW
    assert "--format github" not in WORKFLOW and "security-events" not in ANNOTATIONS_WORKFLOW
