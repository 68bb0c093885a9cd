"""Kustomizations rendered as `kubectl kustomize` renders them (issue 20, point 4).

A folder with a kustomization is checked as kustomize builds it (bases, components,
patches, namePrefix, namespace), with findings on the file each object came from; a base
an overlay builds on is not reported twice; without kubectl or kustomize on PATH the
kustomization is read as written and listed as "rendered partially"; a remote base is
never fetched.  kubectl is on the machine image: its absence fails these tests.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e  # every test here starts a process (tests/conftest.py)

BIN = Path(sys.executable).parent
KUBECTL = shutil.which("kubectl")

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: trainer}
spec:
  selector: {matchLabels: {app: t}}
  template:
    metadata: {labels: {app: t}}
    spec:
      containers:
      - name: main
        image: pytorch
"""
GPU_PATCH = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: trainer}
spec:
  template:
    spec:
      containers:
      - name: main
        resources:
          limits: {nvidia.com/gpu: 1}
"""
JSON6902_PATCH = """\
- op: add
  path: /spec/template/spec/containers/0/resources
  value: {limits: {nvidia.com/mig-1g.10gb: 1}}
"""


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _check(cwd: Path, *arguments: str, with_kubectl: bool = True) -> subprocess.CompletedProcess[str]:
    assert KUBECTL, "kubectl is on the machine image; these tests need it"
    # kubectl lives in /usr/bin on the image: without it, PATH holds this interpreter's scripts only.
    dirs = [str(BIN), str(Path(KUBECTL).parent), "/usr/bin", "/bin"] if with_kubectl else [str(BIN)]
    return subprocess.run(
        [str(BIN / "dra-guard"), "check", *arguments],
        cwd=cwd,
        env={**os.environ, "PATH": os.pathsep.join(dirs)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _findings(stdout: str) -> list[str]:
    return [line.split(": requests")[0] for line in stdout.splitlines() if re.search(r": DRA\d{3} \[", line)]


def _overlay(tmp_path: Path) -> Path:
    return _tree(
        tmp_path,
        {
            "base/kustomization.yaml": "resources: [deployment.yaml]\n",
            "base/deployment.yaml": DEPLOYMENT,
            "overlays/prod/kustomization.yaml": (
                "namespace: team-a\nnamePrefix: prod-\nresources: [../../base]\npatches:\n- path: gpu.yaml\n"
            ),
            "overlays/prod/gpu.yaml": GPU_PATCH,
        },
    )


def test_point4_an_overlay_is_checked_as_kustomize_renders_it(tmp_path: Path) -> None:
    rendered = subprocess.run(
        [str(KUBECTL), "kustomize", str(_overlay(tmp_path) / "overlays/prod")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "name: prod-trainer" in rendered.stdout and "nvidia.com/gpu: 1" in rendered.stdout
    result = _check(tmp_path, "overlays/prod")
    assert result.returncode == 1, result.stderr
    # namespace and namePrefix applied, the base file named: what kubectl apply -k creates.
    assert _findings(result.stdout) == ["base/deployment.yaml:10: DRA001 [critical] Deployment/team-a/prod-trainer"]
    assert "rendered partially" not in result.stdout


def test_point4_a_base_an_overlay_builds_on_is_reported_once(tmp_path: Path) -> None:
    result = _check(_overlay(tmp_path), ".")
    assert len(_findings(result.stdout)) == 1, result.stdout
    assert "Deployment/team-a/prod-trainer" in result.stdout


def test_point4_components_and_json6902_patches_are_rendered(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "base/kustomization.yaml": "resources: [deployment.yaml]\n",
            "base/deployment.yaml": DEPLOYMENT,
            "components/mig/kustomization.yaml": (
                "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n"
                "- path: mig.yaml\n  target: {kind: Deployment, name: trainer}\n"
            ),
            "components/mig/mig.yaml": JSON6902_PATCH,
            "overlays/mig/kustomization.yaml": (
                "namespace: team-b\nresources: [../../base]\ncomponents: [../../components/mig]\n"
            ),
        },
    )
    result = _check(tmp_path, "overlays/mig")
    assert result.returncode == 1, result.stderr
    found = _findings(result.stdout)
    assert len(found) == 1 and "DRA001 [critical] Deployment/team-b/trainer" in found[0], result.stdout
    assert "nvidia.com/mig-1g.10gb" in result.stdout


def test_point4_without_kubectl_the_patches_are_read_and_the_render_is_partial(tmp_path: Path) -> None:
    result = _check(_overlay(tmp_path), "overlays/prod", with_kubectl=False)
    assert result.returncode == 1, result.stderr
    assert "overlays/prod: rendered partially: neither kubectl nor kustomize is on PATH" in result.stdout
    assert any(line.startswith("overlays/prod/gpu.yaml:10: DRA001") for line in _findings(result.stdout))


def test_point4_a_remote_base_is_never_fetched(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "overlay/kustomization.yaml": (
                "resources:\n- https://github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v5.0.0\n"
                "- deployment.yaml\n"
            ),
            "overlay/deployment.yaml": DEPLOYMENT + "        resources: {limits: {nvidia.com/gpu: 1}}\n",
        },
    )
    result = _check(tmp_path, "overlay")
    assert "rendered partially" in result.stdout, result.stdout + result.stderr
    assert any("DRA001" in line for line in _findings(result.stdout)), result.stdout


def test_point4_a_kustomization_kustomize_refuses_is_an_input_error(tmp_path: Path) -> None:
    _tree(tmp_path, {"bad/kustomization.yaml": "resources: [missing.yaml]\n"})
    result = _check(tmp_path, "bad")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "missing.yaml" in result.stdout + result.stderr


def test_a_render_error_kubectl_writes_over_several_lines_is_quoted_whole(tmp_path: Path) -> None:
    """kubectl's klog writes an error holding line breaks as `err=<`, its lines, then ` >`: the
    message was `>` (kserve config/overlays/development, a patch file that is generated)."""
    _tree(
        tmp_path,
        {
            "overlay/kustomization.yaml": "resources: [deployment.yaml]\npatches:\n- path: generated_patch.yaml\n",
            "overlay/deployment.yaml": DEPLOYMENT,
        },
    )
    result = _check(tmp_path, "overlay")
    assert "failed to get the patch file from path(generated_patch.yaml)" in result.stdout, result.stdout
    assert not any(line.rstrip().endswith(": >") for line in result.stdout.splitlines())
