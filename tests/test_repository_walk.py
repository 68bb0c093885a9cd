"""`dra-guard check` at the root of an ordinary repository: only real findings fail a run.

The fixture tree `tests/fixtures/repo/` (see its README.md) is copied into a fresh git
repository for each test, so that `.gitignore` and the repository root mean what they
mean for users.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from testkit.paths import REPO_ROOT

pytestmark = pytest.mark.e2e  # every test here starts a process (tests/conftest.py)

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "repo"
BIN = Path(sys.executable).parent
BAD = "k8s/legacy-gpu.yaml"
#: What DRA001 says of `nvidia.com/gpu: 1` in a container's limits.
NVIDIA_GPU = (
    "requests legacy accelerator resource 'nvidia.com/gpu' in limits (served by a device plugin, or by "
    "DeviceClass 'gpu.nvidia.com' where its driver's chart maps it, by default since v25.12.0 wherever it "
    "renders resource.k8s.io/v1): no claim template, so no exclusivity guard, sanitization declaration or "
    "isolation tag, and no profile pin"
)
BAD_FINDING = f"k8s/legacy-gpu.yaml:14: DRA001 [critical] Pod/tenant-b/cuda-test: {NVIDIA_GPU}"
#: What a walk of the fixture finds that is not a Kubernetes manifest.  (k8s/kustomization.yaml
#: is rendered with `kubectl kustomize`, and the finetune.yaml it reads checked as rendered.)
NOT_MANIFESTS = [
    ".dra-guard.yaml",
    ".gitlab-ci.yml",
    ".pre-commit-config.yaml",
    "dist/construct-metadata.json",
    "docker-compose.yaml",
    "package.json",
    "tsconfig.json",
]


def chart_not_checked(chart: str = "charts/inference") -> str:
    return f"{chart}: not checked: helm is not on PATH; render it with `helm template {chart} | dra-guard check -`"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "infra"
    shutil.copytree(FIXTURE, root)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def environment(path_dirs: list[Path] | None = None) -> dict[str, str]:
    """PATH with this interpreter's scripts (dra-guard) and the system's, never a helm."""
    dirs = [*(path_dirs or []), BIN, Path("/usr/bin"), Path("/bin")]
    env = {**os.environ, "PATH": os.pathsep.join(str(d) for d in dirs)}
    return env


def check(*arguments: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "dra-guard"), "check", *arguments],
        cwd=cwd,
        env=env or environment(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def findings(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if re.search(r": DRA\d{3} \[", line)]


def test_helm_is_not_installed_here() -> None:
    # The no-helm path below is the real one: nothing on the tests' PATH is called helm.
    assert shutil.which("helm", path=environment()["PATH"]) is None


def test_check_dot_reports_exactly_the_bad_manifest(repo: Path) -> None:
    result = check(".", cwd=repo)
    assert result.returncode == 1, result.stdout + result.stderr
    assert findings(result.stdout) == [f"./{BAD_FINDING}"]
    lines = result.stdout.splitlines()
    assert chart_not_checked("./charts/inference") in lines
    assert lines[-1] == (
        # k8s/kustomization.yaml and the finetune.yaml it reads: one object, as kustomize renders it.
        "1 finding (1 critical) in 6 objects from 4 files; 1 finding waived; "
        f"skipped {len(NOT_MANIFESTS)} files that are not Kubernetes manifests; 1 chart not checked"
    )
    report = json.loads(check("--format", "json", ".", cwd=repo).stdout)
    assert sorted(os.path.normpath(path) for path in report["skipped"]) == NOT_MANIFESTS
    assert report["unchecked"] == [
        {
            "path": "./charts/inference",
            "reason": "helm is not on PATH; render it with `helm template ./charts/inference | dra-guard check -`",
        }
    ]
    (waived,) = report["waived"]
    assert (waived["rule"], waived["file"], waived["waiver"]) == (
        "DRA001",
        "./k8s/burn-in.yaml",
        "burn-in before the DRA driver is installed, see OPS-142",
    )
    assert report["summary"]["skipped"] == len(NOT_MANIFESTS) and report["errors"] == []


def test_without_the_bad_manifest_the_run_passes(repo: Path) -> None:
    (repo / BAD).unlink()
    result = check(".", cwd=repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert findings(result.stdout) == []
    # A chart that could not be rendered is listed, and fails the run only when asked.
    assert check("--fail-on-unchecked", ".", cwd=repo).returncode == 2


def _pre_commit_files(repo: Path) -> list[str]:
    """The files pre-commit passes to a hook with `types_or: [yaml, json]`: tracked ones."""
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    listed = subprocess.run(["git", "ls-files"], cwd=repo, check=True, capture_output=True, text=True).stdout
    return [name for name in listed.splitlines() if name.endswith((".yaml", ".yml", ".json"))]


def _run_hook(repo: Path, files: list[str]) -> subprocess.CompletedProcess[str]:
    """The hook's `entry` from .pre-commit-hooks.yaml, run as pre-commit runs it."""
    (hook,) = yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["types_or"] == ["yaml", "json"] and hook.get("pass_filenames") is not False
    return subprocess.run(
        [*shlex.split(hook["entry"]), *files],
        cwd=repo,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_pre_commit_hook_reports_exactly_the_bad_manifest(repo: Path) -> None:
    files = _pre_commit_files(repo)
    assert ".github/workflows/ci.yml" in files and "charts/inference/templates/deployment.yaml" in files
    result = _run_hook(repo, files)
    assert result.returncode == 1, result.stdout + result.stderr
    assert findings(result.stdout) == [BAD_FINDING]
    assert chart_not_checked() in result.stdout.splitlines()
    # The workflow (in a hidden folder a walk never enters) is skipped like the others.
    assert result.stdout.splitlines()[-1].endswith(
        f"skipped {len(NOT_MANIFESTS) + 1} files that are not Kubernetes manifests; 1 chart not checked"
    )
    (repo / BAD).unlink()
    assert _run_hook(repo, [name for name in files if name != BAD]).returncode == 0


def test_gitignore_is_honoured_and_no_ignore_turns_it_off(repo: Path) -> None:
    (repo / ".gitignore").write_text("rendered/\n")
    (repo / "rendered").mkdir()
    shutil.copy(repo / BAD, repo / "rendered" / "old.yaml")
    assert findings(check(".", cwd=repo).stdout) == [f"./{BAD_FINDING}"]
    unignored = findings(check("--no-ignore", ".", cwd=repo).stdout)
    assert sorted(line.split(":")[0] for line in unignored) == ["./k8s/legacy-gpu.yaml", "./rendered/old.yaml"]
    # Named explicitly, an ignored folder is walked (`dra-guard check dist/` after cdk8s synth).
    assert findings(check("rendered", cwd=repo).stdout) == [
        BAD_FINDING.replace("k8s/legacy-gpu.yaml", "rendered/old.yaml")
    ]
    # A .gitignore outside a git repository means nothing, as in git.
    shutil.rmtree(repo / ".git")
    assert len(findings(check(".", cwd=repo).stdout)) == 2


def test_excludes_from_the_command_line_and_the_configuration(repo: Path) -> None:
    assert check("--exclude", BAD, ".", cwd=repo).returncode == 0
    assert check("--exclude", "legacy-*.yaml", ".", cwd=repo).returncode == 0
    assert check("--exclude", "k8s/", ".", cwd=repo).returncode == 0
    # vendor/ is excluded by .dra-guard.yaml; without that configuration it is checked.
    assert "vendor/legacy" in check("--config", "/dev/null", ".", cwd=repo).stdout
    # A file named on the command line is checked even when excluded.
    assert check("--exclude", BAD, BAD, cwd=repo).returncode == 1


def test_config_is_found_from_a_subdirectory_up_to_the_repository_root(repo: Path) -> None:
    (repo / ".dra-guard.yaml").write_text("disable: [DRA001]\n")
    assert check(".", cwd=repo / "k8s").returncode == 0
    assert check("k8s", cwd=repo).returncode == 0
    assert check("--config", "/dev/null", ".", cwd=repo / "k8s").returncode == 1  # --config overrides
    # Discovery stops at the repository root: a broken configuration above it is not read.
    (repo.parent / ".dra-guard.yaml").write_text("disabel: [DRA001]\n")
    (repo / ".dra-guard.yaml").unlink()
    result = check(".", cwd=repo / "k8s")
    assert result.returncode == 1 and result.stderr == ""


def test_the_report_file_is_never_scanned_and_never_overwrites_an_input(repo: Path) -> None:
    before = (repo / BAD).read_bytes()
    for output in (BAD, "k8s/finetune.yaml"):
        result = check("-o", output, ".", cwd=repo)
        assert result.returncode == 2
        assert result.stderr == f"dra-guard: refusing to write the report to {output}: it is one of the inputs\n"
    result = check("-o", BAD, BAD, cwd=repo)
    assert result.returncode == 2 and (repo / BAD).read_bytes() == before
    # A report from an earlier run in the walked tree is not read as input.
    for _ in range(2):
        result = check("--format", "json", "-o", "report.json", ".", cwd=repo)
        assert result.returncode == 1
        report = json.loads((repo / "report.json").read_text())
        assert "./report.json" not in report["skipped"] and report["summary"]["files"] == 4
    assert check("-o", "/dev/null", ".", cwd=repo).returncode == 1


def test_a_walk_that_finds_nothing_says_so(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text('{"name": "web"}\n')
    (tmp_path / "node_modules" / "x").mkdir(parents=True)
    (tmp_path / "node_modules" / "x" / "pod.yaml").write_text((FIXTURE / BAD).read_text())
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "pod.yaml").write_text((FIXTURE / BAD).read_text())
    result = check(".", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout == "no Kubernetes manifest checked; skipped 1 file that is not a Kubernetes manifest\n"
    result = check("--fail-on-empty", ".", cwd=tmp_path)
    assert result.returncode == 2 and "no Kubernetes manifest was checked" in result.stderr
    report = json.loads(check("--format", "json", ".", cwd=tmp_path).stdout)
    assert report["skipped"] == ["./package.json"] and report["summary"]["files"] == 0


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("kind-only.yaml", "kind: Pod\nmetadata: {name: a}\n", "/apiVersion is missing"),
        ("lower-case.yaml", "apiversion: v1\nkind: Pod\nmetadata: {name: a}\n", "/apiVersion is missing"),
        ("nameless.yaml", "apiVersion: v1\nkind: ConfigMap\ndata: {}\n", "has no metadata.name"),
        ("lower-kind.json", '{"apiVersion": "v1", "KIND": "Pod", "metadata": {"name": "a"}}', "kind"),
    ],
)
def test_half_a_manifest_stays_an_input_error_in_a_walk(tmp_path: Path, name: str, text: str, message: str) -> None:
    (tmp_path / name).write_text(text)
    result = check(".", cwd=tmp_path)
    assert result.returncode == 2, result.stdout
    assert message in result.stdout and "skipped" not in result.stdout


TOOL_CONFIGURATIONS = {
    "scheduler.yaml": "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
    "- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: MostAllocated, resources: "
    "[{name: nvidia.com/gpu, weight: 3}]}}\n",
    "kubelet.yaml": "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 110\n",
    "audit-policy.yaml": "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
    "kind-cluster.yaml": "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: control-plane\n",
    "kubeadm.yaml": "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n",
    "kubeconfig.yaml": "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n",
    "skaffold.yaml": "apiVersion: skaffold/v4beta11\nkind: Config\nbuild: {artifacts: [{image: app}]}\n",
    # Operators' own configuration files, and operator-sdk's and istioctl's inputs.
    "controller_manager_config.yaml": "apiVersion: controller-runtime.sigs.k8s.io/v1alpha1\n"
    "kind: ControllerManagerConfig\nhealth: {healthProbeBindAddress: ':8081'}\n",
    "trainer-config.yaml": "apiVersion: config.trainer.kubeflow.org/v1alpha1\nkind: Configuration\n",
    "katib-config.yaml": "apiVersion: config.kubeflow.org/v1beta1\nkind: KatibConfig\n",
    "scorecard.yaml": "kind: Configuration\napiversion: scorecard.operatorframework.io/v1alpha3\nstages: []\n",
    "istio-profile.yaml": "apiVersion: install.istio.io/v1alpha1\nkind: IstioOperator\nspec: {profile: default}\n",
    # JobSet's and Kueue's manager configuration, outside the kustomization that makes it a
    # ConfigMap (kubernetes-sigs/jobset test/e2e/config/default/controller_manager_config.yaml
    # @ 08dfbdfd, shortened; Kueue's the same shape).
    "jobset-config.yaml": "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\n"
    "leaderElection: {leaderElect: true}\n",
    "kueue-config.yaml": "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
    "metrics: {enableClusterQueueResources: true}\n",
    # Gateway API's conformance report, which its suite writes (kubernetes-sigs/
    # gateway-api-inference-extension conformance/reports/v1.5.0/gateway/istio/
    # 1.30.1-default-gateway-report.yaml @ 84436a96, shortened): a kind no API server serves.
    "gateway-report.yaml": "GatewayAPIInferenceExtensionVersion: v1.5.0\napiVersion: gateway.networking.k8s.io/v1\n"
    'date: "2026-05-27T16:16:59Z"\ngatewayAPIChannel: standard\nimplementation: {project: istio, version: 1.30.1}\n'
    "kind: ConformanceReport\nmode: default\n",
    # A Helm chart repository's index: apiVersion and no kind (aws/karpenter-provider-aws
    # charts/index.yaml @ 1d927085, one entry of it).
    "index.yaml": "apiVersion: v1\nentries:\n  karpenter:\n  - apiVersion: v2\n    appVersion: 0.16.3\n"
    "    name: karpenter\n    urls: [karpenter-0.16.3.tgz]\n    version: 0.16.3\n"
    'generated: "2022-09-27T14:35:08.090486-07:00"\n',
}


def test_a_walk_skips_the_configuration_of_components_and_tools(tmp_path: Path) -> None:
    """They hold apiVersion and kind but are never sent to an API server: a repository holding
    a kind cluster or a scheduler configuration must not fail its check for them."""
    for name, text in TOOL_CONFIGURATIONS.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "legacy.yaml").write_text((FIXTURE / BAD).read_text())
    report = json.loads(check("--format", "json", ".", cwd=tmp_path).stdout)
    assert report["errors"] == [] and report["skipped"] == sorted(f"./{name}" for name in TOOL_CONFIGURATIONS)
    assert [finding["rule"] for finding in report["findings"]] == ["DRA001"]
    # Named, a file is read whatever it holds: kubectl refuses it, and so is it reported.
    result = check("scheduler.yaml", cwd=tmp_path)
    assert result.returncode == 2 and "has no metadata.name" in result.stdout


def test_a_conformance_report_is_skipped_and_a_gateway_of_its_group_is_not(tmp_path: Path) -> None:
    """gateway-api-inference-extension's 18 conformance reports made its check exit 2 (no
    metadata.name); a Gateway of the same group is an object, its mistakes reported."""
    (tmp_path / "report.yaml").write_text(TOOL_CONFIGURATIONS["gateway-report.yaml"])
    (tmp_path / "gateway.yaml").write_text("apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nspec: {}\n")
    result = check("--format", "json", ".", cwd=tmp_path)
    report = json.loads(result.stdout)
    assert report["skipped"] == ["./report.yaml"] and [error["file"] for error in report["errors"]] == [
        "./gateway.yaml"
    ]


#: Files a walk meets that parse and hold no object, with what once made a PyYAML parse fail,
#: so that they counted as manifests with errors (exit 2): a GitLab CI file's `!reference`
#: tag beside a backslash (NVIDIA/gpu-operator .nvidia-ci.yml), and an OCI runtime
#: configuration indented with tabs and escaping a quote (intel-device-plugins fpga_crihook
#: testdata).
NO_OBJECTS = {
    ".nvidia-ci.yml": "include:\n  - local: ci.yml\nbuild:\n  script:\n    - !reference [.setup, script]\n"
    '    - echo "kind: \\"x\\""\n',
    "config.json": '{\n\t"ociVersion": "1.0.0",\n\t"process": {"args": ["sh", "-c", "echo \\"kind\\""]}\n}\n',
}


#: krew-release-bot's template of a krew plugin manifest, which no YAML parser reads until the
#: bot fills in its `{{ ... }}` (ray-project/kuberay .krew.yaml @ feeaf72f, shortened).
KREW_TEMPLATE = (
    "apiVersion: krew.googlecontainertools.github.com/v1alpha2\nkind: Plugin\nmetadata:\n  name: ray\n"
    "spec:\n  version: {{ .TagName }}\n  platforms:\n    - selector:\n        matchLabels:\n          os: darwin\n"
    '      {{addURIAndSha "https://github.com/ray-project/kuberay/releases/download/{{ .TagName }}/'
    'kubectl-ray_{{ .TagName }}_darwin_amd64.tar.gz" .TagName | indent 6 }}\n      bin: kubectl-ray\n'
)


def test_a_walk_skips_an_unreadable_template_of_a_tool_configuration(tmp_path: Path) -> None:
    """kuberay's `.krew.yaml` failed a repository's check (exit 2) as a Helm template; kubectl
    cannot read it either, and filled in it is krew's input, not an object."""
    (tmp_path / ".krew.yaml").write_text(KREW_TEMPLATE)
    (tmp_path / "legacy.yaml").write_text((FIXTURE / BAD).read_text())
    report = json.loads(check("--format", "json", ".", cwd=tmp_path).stdout)
    assert report["errors"] == [] and report["skipped"] == ["./.krew.yaml"]
    # Beside an apiVersion of the API server's, or a placeholder, it stays an input error.
    for other in ("---\napiVersion: v1\nkind: Pod\n", "---\napiVersion: {{ .Values.api }}\nkind: Pod\n"):
        (tmp_path / ".krew.yaml").write_text(KREW_TEMPLATE + other)
        result = check("--format", "json", ".", cwd=tmp_path)
        (error,) = json.loads(result.stdout)["errors"]
        assert result.returncode == 2 and error["file"] == "./.krew.yaml", other


def test_a_second_apiversion_key_of_a_tool_does_not_hide_a_manifest(tmp_path: Path) -> None:
    """`apiversion: install.istio.io/...` beside `apiVersion: v1`: the API server drops the
    unknown key (unless strict) and makes the Pod; the walk skipped the file as istioctl's."""
    pod = (FIXTURE / BAD).read_text()
    (tmp_path / "dual.yaml").write_text("apiversion: install.istio.io/v1alpha1\n" + pod)
    report = json.loads(check("--format", "json", ".", cwd=tmp_path).stdout)
    assert report["skipped"] == [] and "DRA001" in [finding["rule"] for finding in report["findings"]]


def test_a_walk_skips_files_that_parse_and_hold_no_object(tmp_path: Path) -> None:
    for name, text in NO_OBJECTS.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "legacy.yaml").write_text((FIXTURE / BAD).read_text())
    report = json.loads(check("--format", "json", ".", cwd=tmp_path).stdout)
    assert report["errors"] == [] and report["skipped"] == sorted(f"./{name}" for name in NO_OBJECTS)
    # A manifest's key in the wrong case is the manifest's mistake: still reported.
    (tmp_path / "typo.yaml").write_text("Kind: Pod\nApiVersion: v1\nmetadata: {name: a}\n")
    result = check("--format", "json", ".", cwd=tmp_path)
    (error,) = json.loads(result.stdout)["errors"]
    assert result.returncode == 2 and error["file"] == "./typo.yaml" and "kind is missing" in error["message"]


def test_a_template_outside_a_chart_gets_the_render_hint(tmp_path: Path) -> None:
    (tmp_path / "deploy.yaml").write_text((FIXTURE / "charts/inference/templates/deployment.yaml").read_text())
    result = check("deploy.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert "it looks like a Helm template: render it with `helm template … | dra-guard check -`" in result.stdout


# What `helm template charts/inference --include-crds` prints for the fixture chart with
# its own values (helm v3 puts `---` and a `# Source: <chart>/<template>` line before
# every document).
RENDERED = """\
---
# Source: inference/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: inference
spec:
  selector: {app: inference}
  ports: [{port: 8000}]
---
# Source: inference/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: inference
spec:
  replicas: 1
  selector:
    matchLabels: {app: inference}
  template:
    metadata:
      labels: {app: inference}
    spec:
      containers:
        - name: server
          image: nvcr.io/nvidia/tritonserver:25.10-py3
          resources:
            limits:
              nvidia.com/gpu: 1
"""


HELM_ERROR = "Error: execution error at (inference/templates/deployment.yaml): image is required\n"


def fake_helm(directory: Path, output: str, exit_status: int = 0) -> Path:
    """A stand-in for `helm` on PATH.

    helm is not installed on this machine and cannot be (nothing but the package
    registries is reachable), so the with-helm path is tested with this executable: it
    checks that it is asked for `template <chart> --include-crds` and prints `output` as
    `helm template` would (or fails like helm with a message on stderr).
    """
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "helm"
    script.write_text(
        textwrap.dedent(
            f"""\
            #!{sys.executable}
            import sys
            assert sys.argv[1:] == ["template", "./charts/inference", "--include-crds"], sys.argv
            sys.stdout.write({output!r})
            if {exit_status}:
                sys.stderr.write({HELM_ERROR!r})
            sys.exit({exit_status})
            """
        )
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return directory


def test_charts_are_rendered_with_helm_and_findings_point_at_the_template(repo: Path, tmp_path: Path) -> None:
    env = environment([fake_helm(tmp_path / "bin", RENDERED)])
    result = check(".", cwd=repo, env=env)
    assert result.returncode == 1
    assert findings(result.stdout) == [
        f"./charts/inference/templates/deployment.yaml: DRA001 [critical] Deployment/-/inference: {NVIDIA_GPU}",
        f"./{BAD_FINDING}",
    ]
    assert "not checked" not in result.stdout
    # The SARIF location is the template itself, without a line of the rendered output.
    sarif = json.loads(check("--format", "sarif", ".", cwd=repo, env=env).stdout)
    (chart_result,) = [
        r
        for r in sarif["runs"][0]["results"]
        if "charts/" in r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    ]
    location = chart_result["locations"][0]["physicalLocation"]
    assert location == {
        "artifactLocation": {"uri": "charts/inference/templates/deployment.yaml", "uriBaseId": "%SRCROOT%"}
    }


def test_a_chart_helm_cannot_render_is_listed_as_not_checked(repo: Path, tmp_path: Path) -> None:
    env = environment([fake_helm(tmp_path / "bin", "", exit_status=1)])
    (repo / BAD).unlink()
    result = check(".", cwd=repo, env=env)
    assert result.returncode == 0
    assert (
        "./charts/inference: not checked: helm template failed: Error: execution error at "
        "(inference/templates/deployment.yaml): image is required"
    ) in result.stdout.splitlines()
    assert check("--fail-on-unchecked", ".", cwd=repo, env=env).returncode == 2


def _readme_ci_commands() -> list[list[str]]:
    """The `dra-guard check` commands of the README's CI snippet, as written."""
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("### CI\n", 1)[1]
    snippet = section.split("```yaml", 1)[1].split("```", 1)[0]
    steps = yaml.safe_load(snippet)
    commands = [shlex.split(step["run"]) for step in steps if step.get("run", "").startswith("dra-guard check")]
    assert commands, "the README's CI snippet runs dra-guard check"
    return commands


def test_the_readme_ci_snippet_works_on_the_fixture_repository(repo: Path) -> None:
    for command in _readme_ci_commands():
        result = check(*command[2:], cwd=repo)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "not checked" in result.stderr  # the chart, said on stderr next to a machine format
        if "--output" in command or "-o" in command:
            flag = "--output" if "--output" in command else "-o"
            sarif = json.loads((repo / command[command.index(flag) + 1]).read_text())
            results = sarif["runs"][0]["results"]
            failing = [r for r in results if "suppressions" not in r]
            assert [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in failing] == [BAD]
            assert [r["suppressions"][0]["justification"] for r in results if "suppressions" in r] == [
                "burn-in before the DRA driver is installed, see OPS-142"
            ]
    (repo / BAD).unlink()
    for command in _readme_ci_commands():
        assert check(*command[2:], cwd=repo).returncode == 0


# --- issue 20, point 8: ResourceSlices belong to their cluster ----------------------------


def _slice_and_claim(root: Path) -> tuple[Path, Path]:
    """DRA014's own example, split: a captured TPU node in one example folder, and in another
    a claim that node cannot satisfy (a matchAttribute on an attribute the TPU driver never
    publishes)."""
    from dra_guard.rules import dra014_unsatisfiable

    node, claim = dra014_unsatisfiable.EXAMPLES[0].manifests.split("---\n")
    slices = root / "examples" / "tpu-node" / "slices.yaml"
    claims = root / "examples" / "train" / "claim.yaml"
    for path, text in ((slices, node), (claims, claim)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return slices, claims


def _dra014(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in findings(result.stdout) if " DRA014 " in line]


def test_point8_resource_slices_a_walk_finds_describe_no_cluster(tmp_path: Path) -> None:
    """A walk (a folder, a glob, the pre-commit hook's file list) meets an example's captured
    node: it is checked as an object, but the other examples' claims are not judged against it."""
    slices, claims = _slice_and_claim(tmp_path)
    walked = check("--format", "json", ".", cwd=tmp_path)
    report = json.loads(walked.stdout)
    assert [finding["rule"] for finding in report["findings"] if finding["rule"] == "DRA014"] == []
    assert report["summary"]["files"] == 2 and report["summary"]["objects"] == 2  # the slice is checked
    assert _dra014(check("examples/**/*.yaml", cwd=tmp_path)) == []
    assert _dra014(check("--skip-non-manifests", str(slices), str(claims), cwd=tmp_path)) == []


def test_point8_resource_slices_given_as_the_cluster_still_count(tmp_path: Path) -> None:
    """--slices (and resource-slices), the files named on the command line, and stdin say which
    slices are the cluster's: there the claim is unsatisfiable."""
    slices, claims = _slice_and_claim(tmp_path)
    expected = "examples/train/claim.yaml:"
    given = _dra014(check("--slices", str(slices.relative_to(tmp_path)), ".", cwd=tmp_path))
    assert len(given) == 1 and given[0].startswith("./" + expected) and "no node can allocate" in given[0]
    (tmp_path / ".dra-guard.yaml").write_text("resource-slices: [examples/tpu-node/slices.yaml]\n")
    assert len(_dra014(check(".", cwd=tmp_path))) == 1
    (tmp_path / ".dra-guard.yaml").unlink()
    named = _dra014(check("examples/tpu-node/slices.yaml", "examples/train/claim.yaml", cwd=tmp_path))
    assert len(named) == 1 and named[0].startswith(expected)
    piped = subprocess.run(
        [str(BIN / "dra-guard"), "check", "-"],
        input=slices.read_text() + "---\n" + claims.read_text(),
        cwd=tmp_path,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert len(_dra014(piped)) == 1
