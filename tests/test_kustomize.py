"""Kustomizations: read as kustomize reads them, their patches checked (issue 14 item 5).

The fixtures (tests/fixtures/crds/kustomize*, test_crd_fixtures.py) cover each kind of
patch; these cover the edges: a kustomization named on the command line, from stdin,
a patch file that is not there, inline text in patchesStrategicMerge.
"""

from __future__ import annotations

import io
from pathlib import Path

from dra_guard.contract.findings import Severity
from dra_guard.engine.run import check_stream
from dra_guard.read.loader import Source

LEGACY_PATCH = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: trainer}
spec:
  template:
    spec:
      containers:
      - name: trainer
        resources: {limits: {nvidia.com/gpu: 1}}
"""


def _check(tmp_path: Path, kustomization: str, **files: str) -> list[tuple[str, Severity, str]]:
    (tmp_path / "kustomization.yaml").write_text(kustomization)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    report = check_stream(Source([str(tmp_path / "kustomization.yaml")]))
    assert report.errors == []
    return [(finding.path, finding.severity, finding.message) for finding in report.findings]


def test_a_kustomization_without_kind_is_a_kustomization(tmp_path: Path) -> None:
    found = _check(
        tmp_path, "resources: [deployment.yaml]\npatchesStrategicMerge: [gpu.yaml]\n", **{"gpu.yaml": LEGACY_PATCH}
    )
    ((path, severity, message),) = found
    assert path == "/patchesStrategicMerge/0" and severity == Severity.CRITICAL
    assert str(tmp_path / "gpu.yaml") in message and "/spec/template/spec/containers/0/resources/limits" in message


def test_inline_strategic_merge_text(tmp_path: Path) -> None:
    inline = "patchesStrategicMerge:\n- |-\n" + "".join(f"  {line}\n" for line in LEGACY_PATCH.splitlines())
    ((path, _, message),) = _check(tmp_path, inline)
    assert path == "/patchesStrategicMerge/0" and "the inline patch" in message


def test_a_patch_file_that_is_not_there_cannot_be_verified(tmp_path: Path) -> None:
    ((path, severity, message),) = _check(tmp_path, "patches:\n- path: missing.yaml\n")
    assert path == "/patches/0/path" and severity == Severity.MEDIUM and "cannot verify" in message


def test_a_patch_file_outside_the_kustomization_folder_is_not_read(tmp_path: Path) -> None:
    """kustomize loads no file outside the kustomization's folder (its load restrictor),
    symlinks resolved; a cloned repository's kustomization must not make dra-guard read
    one either (a file of the machine's that it would quote or judge): "cannot verify"."""
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (outside / "gpu.yaml").write_text(LEGACY_PATCH)
    (project / "linked.yaml").symlink_to(outside / "gpu.yaml")
    found = _check(project, "patches:\n- path: ../outside/gpu.yaml\n- path: linked.yaml\n")
    assert [(path, severity) for path, severity, _ in found] == [
        ("/patches/0/path", Severity.MEDIUM),
        ("/patches/1/path", Severity.MEDIUM),
    ]
    assert all("not in or below the kustomization's folder" in message for _, _, message in found), found


def test_from_stdin_a_patch_file_cannot_be_verified() -> None:
    """Read from stdin, a kustomization has no folder its patch files could be found in."""
    text = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\npatches:\n- path: gpu.yaml\n"
    report = check_stream(Source(["-"], stdin=io.BytesIO(text.encode())))
    assert report.errors == []
    ((path, severity),) = [(finding.path, finding.severity) for finding in report.findings]
    assert path == "/patches/0/path" and severity == Severity.MEDIUM


def _json6902(operation: str) -> str:
    return (
        "resources: [deployment.yaml]\npatches:\n- target: {kind: Deployment, name: trainer}\n  patch: |-\n"
        + "".join(f"    {line}\n" for line in operation.splitlines())
    )


GPU_PATH = "/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu"


def test_json6902_remove_and_test_write_nothing_and_a_zero_asks_for_nothing(tmp_path: Path) -> None:
    """Patching a GPU out of a vendor's base is no request; nor is writing a zero."""
    for operation in (
        f"- op: remove\n  path: {GPU_PATH}",
        f"- op: test\n  path: {GPU_PATH}\n  value: 1",
        f"- op: replace\n  path: {GPU_PATH}\n  value: 0",
        f'- op: add\n  path: {GPU_PATH.rsplit("/", 1)[0]}\n  value: {{nvidia.com/gpu: "0"}}',
    ):
        assert _check(tmp_path, _json6902(operation)) == [], operation


def test_json6902_add_replace_copy_and_move_ask(tmp_path: Path) -> None:
    for operation in (
        f"- op: add\n  path: {GPU_PATH}\n  value: 1",
        f'- op: replace\n  path: {GPU_PATH}\n  value: "2"',
        f"- op: add\n  path: {GPU_PATH}",  # no value: kustomize refuses it, we do not pass it
        f"- op: copy\n  from: /spec/template/spec/containers/0/resources/limits/cpu\n  path: {GPU_PATH}",
        f"- op: move\n  from: /spec/template/spec/containers/0/resources/limits/cpu\n  path: {GPU_PATH}",
        f"- op: add\n  path: {GPU_PATH.rsplit('/', 1)[0]}\n  value: {{nvidia.com/gpu: 1}}",
    ):
        ((path, severity, _),) = _check(tmp_path, _json6902(operation))
        assert (path, severity) == ("/patches/0/patch", Severity.CRITICAL), operation


def test_a_strategic_merge_null_deletes_and_asks_for_nothing(tmp_path: Path) -> None:
    deleting = LEGACY_PATCH.replace("nvidia.com/gpu: 1", "nvidia.com/gpu: null")
    assert (
        _check(tmp_path, "resources: [deployment.yaml]\npatchesStrategicMerge: [gpu.yaml]\n", **{"gpu.yaml": deleting})
        == []
    )
