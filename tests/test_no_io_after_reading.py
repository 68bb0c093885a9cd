"""A check does no file I/O: everything a document references is read with it.

The reading layer (`dra_guard.read`) is the only part of the checking side that touches the
file system (docs/architecture.md, "No file I/O after reading"): a kustomization's patch
files arrive attached to its document, and the ResourceSlice files an option names are read
while the configuration is parsed.  Here the documents and the configuration are read first;
then every way of opening, listing or stat-ing a file, and of starting a process, raises, and
the engine must give the same report as with the file system open.
"""

from __future__ import annotations

import builtins
import io
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dra_guard.engine.run import check_stream
from dra_guard.read.config_file import parse_config
from dra_guard.read.loader import load_paths
from dra_guard.rules import RULES
from testkit.paths import REPO_ROOT

SLICES = REPO_ROOT / "tests" / "fixtures" / "slices"

KUSTOMIZATION = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [deployment.yaml]
patches:
- path: gpu-patch.yaml
  target: {kind: Deployment, name: trainer}
patchesStrategicMerge:
- missing-patch.yaml
"""
PATCH = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: trainer}
spec:
  template:
    spec:
      containers:
      - name: main
        resources: {limits: {nvidia.com/gpu: 1}}
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: trainer}
spec:
  selector: {matchLabels: {app: trainer}}
  template:
    metadata: {labels: {app: trainer}}
    spec:
      containers: [{name: main, image: trainer:1}]
"""


def _blocked(what: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"a check did file I/O after reading: {what}{args[:1]!r}")

    return refuse


def _block(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(builtins, "open", _blocked("open"))
    monkeypatch.setattr(io, "open", _blocked("io.open"))
    for name in ("open", "stat", "lstat", "scandir", "listdir", "access", "readlink"):
        monkeypatch.setattr(os, name, _blocked(f"os.{name}"))
    monkeypatch.setattr(subprocess.Popen, "__init__", _blocked("subprocess"))


def _inputs(tmp_path: Path) -> list[str]:
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(KUSTOMIZATION, encoding="utf-8")
    (overlay / "gpu-patch.yaml").write_text(PATCH, encoding="utf-8")
    (overlay / "deployment.yaml").write_text(DEPLOYMENT, encoding="utf-8")
    return [str(overlay / "kustomization.yaml"), str(overlay / "deployment.yaml"), str(REPO_ROOT / "tests" / "corpus")]


def test_the_engine_does_no_file_io_on_documents_read_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = load_paths(_inputs(tmp_path))
    assert not loaded.errors
    config = parse_config({"resource-slices": [str(SLICES / "nvidia-8gpu-pcieroot.yaml")]}, RULES)
    expected = check_stream(loaded.documents, config)  # also imports what the rules load lazily
    # What the kustomization's patches ask for was read with it: the patch file's GPU, and
    # the missing file, both found.
    messages = [finding.message for finding in expected.findings if (finding.file or "").endswith("kustomization.yaml")]
    assert any("nvidia.com/gpu" in message for message in messages), messages
    assert any("it is not there" in message for message in messages), messages

    _block(monkeypatch)
    with pytest.raises(AssertionError, match="file I/O after reading"):
        open(os.devnull)  # noqa: SIM115 - the block itself holds
    blocked = check_stream(loaded.documents, config)
    monkeypatch.undo()

    assert blocked == expected


def test_a_kustomization_document_carries_its_patch_files(tmp_path: Path) -> None:
    loaded = load_paths(_inputs(tmp_path)[:1])
    (document,) = loaded.documents
    assert document.patch_files is not None
    assert set(document.patch_files) == {"gpu-patch.yaml", "missing-patch.yaml"}
    assert document.patch_files["gpu-patch.yaml"].text == PATCH


def test_resource_slices_are_read_when_the_configuration_is_parsed_never_by_the_rule() -> None:
    from dra_guard.ruleapi.config import parse_config as parse_values
    from dra_guard.ruleapi.options import ConfigError

    files = {"resource-slices": [str(SLICES / "nvidia-8gpu-pcieroot.yaml")]}
    with pytest.raises(ConfigError, match="names files, and this configuration is parsed where none is read"):
        parse_values(files, RULES)
    assert parse_config(files, RULES).get(RULES.option_on_command_line("--slices")).slices
