"""The files a Helm chart's folder keeps outside what helm renders are checked as files.

helm renders a chart's `templates/` (and prints `crds/` as it is); everything else in its
folder is never an object of the render (helm/helm pkg/chart/v2/loader/load.go @ e9b85e4d),
so a plain manifest kept there (GoogleCloudPlatform/kubernetes-engine-samples keeps a
Deployment with `nvidia.com/gpu: "8"` in a sub-folder of a chart:
ai-ml/nemo-rl-on-gke/nemoRL/gemma3-27b-it/nim-gemma-deployment.yaml) is checked as the
file it is, with or without helm; a file there holding `{{` is one the chart reads with
`.Files.Get` or `tpl`, skipped and listed.  README: How dra-guard reads your files.
"""

from __future__ import annotations

import io
import json
import os
import stat
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from dra_guard.cli.main import main
from dra_guard.read.inputs import Inputs, RenderedDocument
from dra_guard.read.loader import Document
from dra_guard.read.walk import select
from testkit.paths import REPO_ROOT

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "repo"
#: A Pod asking for `nvidia.com/gpu` in its limits: a DRA001 finding.
GPU_POD = (FIXTURE / "k8s" / "legacy-gpu.yaml").read_text()
TEMPLATE = (FIXTURE / "charts" / "inference" / "templates" / "deployment.yaml").read_text()
CHART_YAML = "apiVersion: v2\nname: {name}\nversion: 0.1.0\n"
CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: foos.example.com
spec:
  group: example.com
  names: {kind: Foo, plural: foos}
  scope: Namespaced
  versions: []
"""
#: A runtime the chart reads with `.Files.Get` and `tpl` (kubeflow/trainer keeps its so:
#: charts/kubeflow-trainer/files/runtimes/torch-distributed.yaml @ 36155d2a).
READ_BY_THE_CHART = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: runtime
  labels:
    {{- include "chart.labels" . | nindent 4 }}
"""


def _chart(folder: Path, name: str = "chart") -> Path:
    (folder / "templates").mkdir(parents=True)
    (folder / "Chart.yaml").write_text(CHART_YAML.format(name=name))
    (folder / "values.yaml").write_text("replicas: 1\n")
    (folder / "templates" / "deployment.yaml").write_text(TEMPLATE)
    return folder


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository holding a chart with a sub-chart, a plain manifest beside the templates
    (and beside the sub-chart's), a CRD and a file the chart reads; no helm on PATH."""
    (tmp_path / ".git").mkdir()
    chart = _chart(tmp_path / "chart")
    (chart / "nemo").mkdir()
    (chart / "nemo" / "gpu.yaml").write_text(GPU_POD)
    (chart / "crds").mkdir()
    (chart / "crds" / "foo.yaml").write_text(CRD)
    (chart / "files").mkdir()
    (chart / "files" / "runtime.yaml").write_text(READ_BY_THE_CHART)
    sub = _chart(chart / "charts" / "sub", "sub")
    (sub / "extra").mkdir()
    (sub / "extra" / "gpu.yaml").write_text(GPU_POD)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    return tmp_path


def check(*arguments: str) -> tuple[int, dict[str, Any]]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(["check", "--format", "json", "--config", os.devnull, *arguments], stdout, stderr)
    assert "Traceback" not in stdout.getvalue() + stderr.getvalue()
    return code, json.loads(stdout.getvalue())


def flagged(report: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((finding["rule"], os.path.normpath(finding["file"])) for finding in report["findings"])


def unchecked(report: dict[str, Any]) -> list[str]:
    return [os.path.normpath(entry["path"]) for entry in report["unchecked"]]


def test_a_walk_checks_what_a_chart_keeps_outside_its_templates_without_helm(tree: Path) -> None:
    for folder in (".", "chart"):
        code, report = check(folder)
        assert code == 1, report
        assert flagged(report) == [("DRA001", "chart/charts/sub/extra/gpu.yaml"), ("DRA001", "chart/nemo/gpu.yaml")]
        # The CRD is read (3 files: it and the two pods); the chart itself is still not checked.
        assert report["summary"]["files"] == 3 and report["errors"] == []
        assert unchecked(report) == ["chart"]
        # What the chart reads with `.Files.Get`/`tpl` is listed, never an input error;
        # its own files (Chart.yaml, values.yaml) are the chart's, not files it keeps.
        assert [os.path.normpath(path) for path in report["skipped"]] == ["chart/files/runtime.yaml"]


def test_naming_a_folder_of_a_chart_checks_what_is_there(tree: Path) -> None:
    code, report = check("chart/nemo")
    assert (code, flagged(report), unchecked(report)) == (1, [("DRA001", "chart/nemo/gpu.yaml")], [])
    # A sub-chart renders with its parent: its folder checks what it keeps, and its parent.
    code, report = check("chart/charts/sub")
    assert flagged(report) == [("DRA001", "chart/charts/sub/extra/gpu.yaml")] and unchecked(report) == ["chart"]
    # Templates are the chart's, as before: naming them is naming the chart.
    for templates in ("chart/templates", "chart/charts/sub/templates"):
        code, report = check(templates)
        assert (code, flagged(report), unchecked(report)) == (0, [], ["chart"]), templates


def test_files_named_as_pre_commit_names_them(tree: Path) -> None:
    """--skip-non-manifests (the pre-commit hook): a file the chart keeps is checked, one it
    reads is skipped, a template or the chart's own file stands for the chart."""
    code, report = check("--skip-non-manifests", "chart/nemo/gpu.yaml", "chart/files/runtime.yaml")
    assert (code, flagged(report), unchecked(report)) == (1, [("DRA001", "chart/nemo/gpu.yaml")], [])
    assert [os.path.normpath(path) for path in report["skipped"]] == ["chart/files/runtime.yaml"]
    for part in ("chart/values.yaml", "chart/templates/deployment.yaml", "chart/charts/sub/templates/deployment.yaml"):
        code, report = check("--skip-non-manifests", part)
        assert (code, flagged(report), unchecked(report)) == (0, [], ["chart"]), part
    # Named plainly, a file is checked whatever it holds (README): an input error here.
    code, report = check("chart/files/runtime.yaml")
    assert code == 2 and "it looks like a Helm template" in report["errors"][0]["message"]


def test_a_glob_checks_what_a_chart_keeps(tree: Path) -> None:
    code, report = check("chart/**/*.yaml")
    assert code == 1
    assert flagged(report) == [("DRA001", "chart/charts/sub/extra/gpu.yaml"), ("DRA001", "chart/nemo/gpu.yaml")]
    assert unchecked(report) == ["chart"]


def test_a_chart_nested_elsewhere_in_a_chart_is_a_chart_of_its_own(tree: Path) -> None:
    # helm renders only the sub-charts of `charts/` with a chart (load.go, as cited above).
    _chart(tree / "chart" / "examples" / "demo", "demo")
    code, report = check(".")
    assert code == 1 and unchecked(report) == ["chart", "chart/examples/demo"]


def _fake_helm(folder: Path, output: str) -> str:
    """A stand-in for helm (none is installed here: tests/test_repository_walk.py's fake_helm)."""
    folder.mkdir()
    script = folder / "helm"
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.stdout.write({output!r})\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


#: What `helm template chart --include-crds` prints for the tree: the CRD first, as it is.
RENDERED = (
    "---\n# Source: chart/crds/foo.yaml\n"
    + CRD
    + "\n---\n# Source: chart/templates/deployment.yaml\n"
    + textwrap.dedent(
        """\
        apiVersion: v1
        kind: Pod
        metadata: {name: rendered}
        spec:
          containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]
        """
    )
)


@pytest.mark.e2e  # it starts the stand-in helm
def test_with_helm_the_render_and_the_kept_files_are_each_read_once(tree: Path) -> None:
    helm = _fake_helm(tree / "bin", RENDERED)
    inputs = Inputs(select(["."]), helm=helm)
    read = sorted(
        (type(item).__name__, os.path.normpath(item.file))
        for item in inputs
        if isinstance(item, (Document, RenderedDocument))
    )
    # The CRD once, as its file (with its lines), not again from the render.
    assert read == [
        ("Document", "chart/charts/sub/extra/gpu.yaml"),
        ("Document", "chart/crds/foo.yaml"),
        ("Document", "chart/nemo/gpu.yaml"),
        ("RenderedDocument", "chart/templates/deployment.yaml"),
    ]
    assert inputs.unchecked == [] and [os.path.normpath(path) for path in inputs.skipped] == [
        "chart/files/runtime.yaml"
    ]


def test_migrate_leaves_what_a_chart_reads_alone(tree: Path) -> None:
    (tree / "chart" / "nemo" / "gpu.yaml").unlink()
    (tree / "chart" / "charts" / "sub" / "extra" / "gpu.yaml").unlink()
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(["migrate", "chart", "-o", str(tree / "out")], stdout, stderr)
    said = stdout.getvalue() + stderr.getvalue()
    assert code == 0 and "Traceback" not in said, said
    assert "1 file(s) found are no Kubernetes manifests, left alone" in said


@pytest.mark.e2e  # it starts worker processes
def test_worker_processes_skip_what_a_chart_reads_too(tree: Path) -> None:
    # Inputs of 2 MiB or more are read by `--jobs` processes (dra_guard.distribute.pool).
    padding = "x" * 1000
    (tree / "big.yaml").write_text(
        "".join(
            f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{n}}}\ndata: {{a: {padding}}}\n"
            for n in range(2200)
        )
    )
    code, report = check("--jobs", "2", ".")
    assert (
        code == 1
        and report["errors"] == []
        and flagged(report)
        == [
            ("DRA001", "chart/charts/sub/extra/gpu.yaml"),
            ("DRA001", "chart/nemo/gpu.yaml"),
        ]
    )
    assert [os.path.normpath(path) for path in report["skipped"]] == ["chart/files/runtime.yaml"]
