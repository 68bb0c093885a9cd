"""Synth-time enforcement: enforce(), the constructs' own validation, and the cdk8s-cli plugin."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import cdk8s_plus_34 as kplus
import pytest
from cdk8s import ApiObject, ApiObjectMetadata, Chart, JsonPatch
from cdk8s import Testing as Cdk8sTesting  # not `Testing`: pytest would collect it

from constructs_dra import AcceleratorSlice, IsolatedAcceleratorWorkload, enforce
from dra_guard.read.config_file import parse_config
from dra_guard.ruleapi.config import ConfigError
from dra_guard.rules import RULES
from testkit.paths import REPO_ROOT

CDK8S = REPO_ROOT / "node_modules" / ".bin" / "cdk8s"
# The environment running the tests (make test's .venv, or any other): its dra-guard and
# python.  The repository's own cdk8s.yaml names .venv/bin/python, as `make demo` sets up.
VENV_BIN = Path(sys.executable).parent


def _raw(chart: Chart, construct_id: str, kind: str, spec: dict[str, Any], api_version: str = "apps/v1") -> ApiObject:
    obj = ApiObject(
        chart, construct_id, api_version=api_version, kind=kind, metadata=ApiObjectMetadata(name=construct_id)
    )
    obj.add_json_patch(JsonPatch.add("/spec", spec))
    return obj


def _legacy_deployment(chart: Chart) -> ApiObject:
    container = {"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}
    return _raw(chart, "legacy", "Deployment", {"selector": {}, "template": {"spec": {"containers": [container]}}})


def test_enforce_fails_synth_with_rule_and_construct_path() -> None:
    chart = Chart(Cdk8sTesting.app(), "tenant-a", namespace="tenant-a")
    _legacy_deployment(chart)
    enforce(chart)
    with pytest.raises(RuntimeError, match="Validation failed") as failure:
        Cdk8sTesting.synth(chart)
    message = str(failure.value)
    assert "DRA001 [critical] Deployment/tenant-a/legacy (construct tenant-a/legacy" in message
    assert "nvidia.com/gpu" in message and "Fix: " in message


def test_compliant_chart_with_raw_plus_and_our_objects_synthesizes() -> None:
    chart = Chart(Cdk8sTesting.app(), "tenant-a", namespace="tenant-a")
    IsolatedAcceleratorWorkload(chart, "inference", image="i", slice=AcceleratorSlice.nvidia_mig("1g.10gb"))
    kplus.Deployment(chart, "web", containers=[kplus.ContainerProps(image="nginx", port_number=80)])
    _raw(chart, "settings", "ConfigMap", {}, api_version="v1")
    enforce(chart)
    kinds = sorted(obj["kind"] for obj in Cdk8sTesting.synth(chart))
    assert kinds == ["ConfigMap", "Deployment", "Deployment", "ResourceClaimTemplate"]


def test_enforce_sees_objects_together_and_respects_fail_on() -> None:
    chart = Chart(Cdk8sTesting.app(), "c", namespace="ns")
    claim = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}
    _raw(chart, "shared", "ResourceClaim", claim, api_version="resource.k8s.io/v1")
    for name in ("a", "b"):
        spec = {
            "containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "shared"}],
        }
        _raw(chart, name, "Pod", spec, api_version="v1")
    messages = enforce(chart, fail_on="high").validate()
    assert any(message.startswith("DRA005") and "Pod/b" in message for message in messages)
    assert not any("[medium]" in message for message in messages)


def test_enforce_with_hmac_key_from_config() -> None:
    chart = Chart(Cdk8sTesting.app(), "c", namespace="ns")
    IsolatedAcceleratorWorkload(chart, "signed", image="i", slice=AcceleratorSlice.nvidia_mig("1g.10gb"), hmac_key="k")
    keyed = parse_config({"hmac-key-env": "KEY"}, RULES, "test", environ={"KEY": "k"})
    assert enforce(chart, keyed).validate() == []


def test_enforce_takes_options_as_the_config_file_writes_them() -> None:
    chart = Chart(Cdk8sTesting.app(), "c", namespace="ns")
    _legacy_deployment(chart).add_json_patch(
        JsonPatch.replace("/spec/template/spec/containers/0/resources/limits", {"example.com/gpu": 1})
    )
    assert enforce(chart).validate() == []
    (message,) = enforce(chart, {"extra-legacy-resources": ["example.com/gpu"]}).validate()
    assert message.startswith("DRA001 [critical] Deployment/ns/legacy")
    # The CLI's message for the same mistake, naming where the configuration was given.
    with pytest.raises(
        ConfigError, match=r"^dra-guard config of c: extra-legacy-resources: must be a list of strings$"
    ):
        enforce(chart, {"extra-legacy-resources": "example.com/gpu"})


def test_our_constructs_validate_themselves_after_edits() -> None:
    chart = Chart(Cdk8sTesting.app(), "c", namespace="ns")
    workload = IsolatedAcceleratorWorkload(chart, "w", image="i", slice=AcceleratorSlice.nvidia_mig("1g.10gb"))
    workload.claim_template.add_json_patch(JsonPatch.remove("/metadata/annotations/dra-guard.io~1sanitization"))
    with pytest.raises(RuntimeError, match="DRA004"):
        Cdk8sTesting.synth(chart)


def test_enforce_does_not_repeat_what_a_construct_reports() -> None:
    chart = Chart(Cdk8sTesting.app(), "c", namespace="ns")
    workload = IsolatedAcceleratorWorkload(chart, "w", image="i", slice=AcceleratorSlice.nvidia_mig("1g.10gb"))
    workload.claim_template.add_json_patch(JsonPatch.remove("/metadata/annotations/dra-guard.io~1sanitization"))
    enforce(chart)
    with pytest.raises(RuntimeError) as failure:
        Cdk8sTesting.synth(chart)
    assert str(failure.value).count("DRA004") == 1


# --- the real cdk8s-cli, from package-lock.json --------------------------------------


def _cdk8s_synth(
    cwd: Path, *arguments: str, env: dict[str, str] | None = None, command: tuple[str, ...] = (str(CDK8S),)
) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "CDK8S_CHECK_UPGRADE": "false",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        **(env or {}),
    }
    return subprocess.run(
        [*command, "synth", *arguments],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.e2e
def test_cdk8s_cli_synth_of_the_repository_validates_and_passes(tmp_path: Path) -> None:
    output = tmp_path / "out"
    # Exactly as a user runs it; --no-install makes npx fail rather than download.
    result = _cdk8s_synth(REPO_ROOT, "--output", str(output), command=("npx", "--no-install", "cdk8s"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Validation Report" in result.stdout and "success" in result.stdout
    manifests = sorted(str(path) for path in output.glob("*.k8s.yaml"))
    assert len(manifests) == 3
    check = subprocess.run(
        [str(VENV_BIN / "dra-guard"), "check", *manifests], capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stdout


LEGACY_APP = """
from cdk8s import App, ApiObject, ApiObjectMetadata, Chart, JsonPatch

app = App()
chart = Chart(app, "legacy", namespace="tenant-a")
pod = ApiObject(chart, "mig-pod", api_version="v1", kind="Pod", metadata=ApiObjectMetadata(name="mig-pod"))
container = {"name": "c", "image": "cuda", "resources": {"limits": {"nvidia.com/mig-1g.10gb": 1}}}
pod.add_json_patch(JsonPatch.add("/spec", {"containers": [container]}))
app.synth()
"""


def _legacy_project(directory: Path) -> None:
    """The repository's cdk8s.yaml, pointed at LEGACY_APP and at the plugin by absolute path."""
    (directory / "app.py").write_text(LEGACY_APP)
    config = (REPO_ROOT / "cdk8s.yaml").read_text()
    config = config.replace("app: .venv/bin/python examples/cdk8s_app.py", f"app: {VENV_BIN / 'python'} app.py")
    plugin = REPO_ROOT / "dra_guard" / "cdk8s_plugin"
    config = config.replace("package: ./dra_guard/cdk8s_plugin", f"package: {plugin}")
    (directory / "cdk8s.yaml").write_text(config)


@pytest.mark.e2e
def test_cdk8s_cli_fails_an_app_that_never_imports_dra_guard(tmp_path: Path) -> None:
    _legacy_project(tmp_path)
    # No .venv here: the plugin must be told where the project's dra-guard is.
    result = _cdk8s_synth(tmp_path, "--output", str(tmp_path / "dist"), env={"DRA_GUARD": str(VENV_BIN / "dra-guard")})
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "DRA001" in output and "legacy/mig-pod" in output and "nvidia.com/mig-1g.10gb" in output


@pytest.mark.e2e
def test_plugin_reports_a_missing_executable_instead_of_passing(tmp_path: Path) -> None:
    _legacy_project(tmp_path)
    # Started through /bin/sh, the app's interpreter directory holds no dra-guard either.
    (tmp_path / "run-app.sh").write_text(f'exec "{VENV_BIN / "python"}" app.py\n')
    config = (tmp_path / "cdk8s.yaml").read_text()
    (tmp_path / "cdk8s.yaml").write_text(
        config.replace(f"app: {VENV_BIN / 'python'} app.py", "app: /bin/sh run-app.sh")
    )
    result = _cdk8s_synth(
        tmp_path,
        "--output",
        str(tmp_path / "dist"),
        env={"PATH": f"{Path(str(shutil.which('node'))).parent}:/usr/bin:/bin"},
    )
    assert result.returncode != 0
    assert "dra-guard executable not found" in result.stdout + result.stderr


# --- one configuration for every object, ours included ---------------------------------

_TAG_POINTER = "/metadata/annotations/dra-guard.io~1isolation-tag"


def _retagged_with_sha256(workload: IsolatedAcceleratorWorkload) -> None:
    """Edit the claim (a bigger MIG profile) and re-tag it, template tag and claim tag, with
    plain, recomputed sha256: tags."""
    from dra_guard import claim_isolation_tag, isolation_tag

    pointer = "/spec/spec/devices/requests/0/exactly/selectors/0/cel/expression"
    edited = copy.deepcopy(workload.manifests.claim_template)
    selector = edited["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"]
    selector["expression"] = selector["expression"].replace("1g.10gb", "7g.80gb")
    workload.claim_template.add_json_patch(
        JsonPatch.replace(pointer, selector["expression"]),
        JsonPatch.replace(_TAG_POINTER, isolation_tag(edited)),
        JsonPatch.replace("/spec/metadata/annotations/dra-guard.io~1isolation-tag", claim_isolation_tag(edited)),
    )


@pytest.mark.parametrize("own_key", [None, "k"])
def test_enforce_with_an_hmac_key_refuses_a_retagged_sha256_claim_in_our_construct(own_key: str | None) -> None:
    chart = Chart(Cdk8sTesting.app(), "c", namespace="ns")
    workload = IsolatedAcceleratorWorkload(
        chart, "w", image="i", slice=AcceleratorSlice.nvidia_mig("1g.10gb"), hmac_key=own_key
    )
    _retagged_with_sha256(workload)
    keyed = parse_config({"hmac-key-env": "KEY"}, RULES, "test", environ={"KEY": "k"})
    enforce(chart, keyed)
    with pytest.raises(RuntimeError, match="DRA012") as failure:
        Cdk8sTesting.synth(chart)
    assert "an HMAC key is configured, so the isolation tag must be hmac-sha256:" in str(failure.value)
    assert "construct c/w/ClaimTemplate" in str(failure.value)


def test_without_a_configured_key_the_retagged_claim_passes_as_before() -> None:
    # A plain sha256 tag can be recomputed by whoever edits the object: only a key catches it.
    chart = Chart(Cdk8sTesting.app(), "c", namespace="ns")
    _retagged_with_sha256(
        IsolatedAcceleratorWorkload(chart, "w", image="i", slice=AcceleratorSlice.nvidia_mig("1g.10gb"))
    )
    enforce(chart)
    assert len(Cdk8sTesting.synth(chart)) == 2


def test_extra_legacy_resources_apply_to_our_constructs_too() -> None:
    def build() -> Chart:
        chart = Chart(Cdk8sTesting.app(), "c", namespace="ns")
        workload = IsolatedAcceleratorWorkload(chart, "w", image="i", slice=AcceleratorSlice.nvidia_mig("1g.10gb"))
        workload.workload.add_json_patch(
            JsonPatch.add("/spec/template/spec/containers/0/resources/limits", {"example.com/gpu": 1})
        )
        return chart

    chart = build()
    enforce(chart)
    assert len(Cdk8sTesting.synth(chart)) == 2  # example.com/gpu means nothing by default
    chart = build()
    enforce(chart, {"extra-legacy-resources": ["example.com/gpu"]})
    with pytest.raises(RuntimeError, match=r"DRA001 \[critical\] Deployment/ns/w \(construct c/w/Workload"):
        Cdk8sTesting.synth(chart)


def test_disabled_rules_apply_to_our_constructs_too() -> None:
    def build() -> Chart:
        chart = Chart(Cdk8sTesting.app(), "c", namespace="ns")
        workload = IsolatedAcceleratorWorkload(chart, "w", image="i", slice=AcceleratorSlice.nvidia_mig("1g.10gb"))
        workload.claim_template.add_json_patch(JsonPatch.replace(_TAG_POINTER, "sha256:" + "0" * 64))
        return chart

    with pytest.raises(RuntimeError, match="DRA012"):
        Cdk8sTesting.synth(build())
    chart = build()
    enforce(chart, {"disable": ["DRA012"]})
    assert len(Cdk8sTesting.synth(chart)) == 2
    # enforce() on the app applies to constructs in every chart, whenever it is called.
    chart = build()
    enforce(chart.node.root, {"disable": ["DRA012"]})  # type: ignore[arg-type]  # an App made in JavaScript
    assert len(Cdk8sTesting.synth(chart)) == 2


def test_fail_on_of_enforce_applies_to_our_constructs() -> None:
    chart = Chart(Cdk8sTesting.app(), "c", namespace="ns")
    workload = IsolatedAcceleratorWorkload(chart, "w", image="i", slice=AcceleratorSlice.nvidia_mig("1g.10gb"))
    workload.claim_template.add_json_patch(JsonPatch.replace(_TAG_POINTER, "sha256:" + "0" * 64))  # high
    enforce(chart, fail_on="critical")
    assert len(Cdk8sTesting.synth(chart)) == 2
