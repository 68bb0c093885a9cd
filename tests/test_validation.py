"""Bad inputs raise ValueError naming the argument at fault, before anything is built."""

from __future__ import annotations

from typing import Any

import pytest

from dra_guard import AcceleratorSlice, claim_template, isolated_workload, with_claim_template

GOOD_SLICE = AcceleratorSlice.nvidia_mig("1g.10gb")


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: AcceleratorSlice.nvidia_mig("1g10gb"), "profile"),
        (lambda: AcceleratorSlice.nvidia_mig("0g.10gb"), "profile"),
        (lambda: AcceleratorSlice.nvidia_mig("1g.10gb+xx"), "profile"),
        (lambda: AcceleratorSlice.nvidia_mig(""), "profile"),
        (lambda: AcceleratorSlice.nvidia_mig("1g.10gb", count=0), "count"),
        (lambda: AcceleratorSlice.nvidia_mig("1g.10gb", count=-2), "count"),
        (lambda: AcceleratorSlice.nvidia_mig("1g.10gb", count=1.0), "count"),  # type: ignore[arg-type]
        (lambda: AcceleratorSlice.nvidia_mig("1g.10gb", count=True), "count"),
        (lambda: AcceleratorSlice.nvidia_gpu(""), "product_name"),
        (lambda: AcceleratorSlice.nvidia_gpu("A100\nB"), "product_name"),
        (lambda: AcceleratorSlice.google_tpu("  "), "tpu_gen"),
        (lambda: AcceleratorSlice.amd_gpu(None), "partition_profile"),  # type: ignore[arg-type]
        (lambda: AcceleratorSlice("Mig.NVIDIA.com", "gpu.nvidia.com/profile", "1g.10gb"), "device_class"),
        (lambda: AcceleratorSlice("mig.nvidia.com", "profile", "1g.10gb"), "pin_attribute"),
        (lambda: AcceleratorSlice("mig.nvidia.com", "gpu.nvidia.com/bad-name", "1g.10gb"), "pin_attribute"),
        # A MIG profile on the full-GPU class can never match (the standard's own example).
        (lambda: AcceleratorSlice("gpu.nvidia.com", "gpu.nvidia.com/profile", "1g.10gb"), "pin_attribute"),
        (lambda: AcceleratorSlice("mig.nvidia.com", "gpu.nvidia.com/profile", "big"), "pin_value"),
    ],
)
def test_slice_errors_name_the_field(build: Any, field: str) -> None:
    with pytest.raises(ValueError, match=rf"^{field}\b"):
        build()


def _workload(**overrides: Any) -> Any:
    arguments: dict[str, Any] = {"image": "registry.example/app:1", "slice": GOOD_SLICE, "namespace": "tenant-a"}
    arguments.update(overrides)
    name = arguments.pop("name", "app")
    return isolated_workload(name, **arguments)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"name": "App"}, "name"),
        ({"name": "a" * 64}, "name"),
        ({"name": "-app"}, "name"),
        ({"namespace": "Tenant_A"}, "namespace"),
        ({"tenant": "tenant a"}, "tenant"),
        ({"replicas": 0}, "replicas"),
        ({"replicas": "2"}, "replicas"),
        ({"workload_kind": "DaemonSet"}, "workload_kind"),
        ({"api_version": "resource.k8s.io/v1alpha2"}, "api_version"),
        ({"api_version": "v1"}, "api_version"),
        ({"sanitization": "Wipe"}, "sanitization"),
        ({"sanitization": "wipeondeallocate"}, "sanitization"),
        ({"hmac_key": ""}, "hmac_key"),
        ({"hmac_key": 42}, "hmac_key"),
        ({"image": ""}, "image"),
        ({"image": "python 3"}, "image"),
        ({"container_name": "Main"}, "container_name"),
        ({"command": "python serve.py"}, "command"),
        ({"args": ["--port", 80]}, r"args\[1\]"),
        ({"env": {"A": 1}}, "env"),
        ({"env": [{"value": "x"}]}, r"env\[0\]"),
        ({"ports": [0]}, r"ports\[0\]"),
        ({"ports": [{"containerPort": 70000}]}, r"ports\[0\]"),
        ({"labels": {"bad key!": "x"}}, "labels"),
        ({"labels": {"team": "a b"}}, "labels"),
        ({"resources": {"limits": {"nvidia.com/gpu": 1}}}, "resources.limits.nvidia.com/gpu"),
        ({"resources": {"requests": {"nvidia.com/mig-1g.10gb": 1}}}, "resources.requests"),
        ({"resources": {"claims": []}}, "resources"),
        ({"resources": {"limits": {"cpu": 1.5}}}, "resources.limits.cpu"),
        ({"slice": "1g.10gb"}, "slice"),
    ],
)
def test_workload_errors_name_the_field(overrides: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=rf"^{field}"):
        _workload(**overrides)


def test_nothing_is_built_from_a_partly_valid_call() -> None:
    # A pure function either returns both objects or raises; there is no half state.
    with pytest.raises(ValueError):
        _workload(replicas=0)


def test_good_inputs_are_not_mutated_or_shared() -> None:
    env = [{"name": "A", "value": "1"}]
    labels = {"team": "ml"}
    first = _workload(env=env, labels=labels)
    first.workload["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = "changed"
    assert env == [{"name": "A", "value": "1"}]
    assert labels == {"team": "ml"}
    assert _workload(env=env, labels=labels) != first


def test_with_claim_template_names_unknown_containers() -> None:
    pod = {"containers": [{"name": "a", "image": "i"}]}
    with pytest.raises(ValueError, match=r"^containers: no container named b"):
        with_claim_template(pod, "tmpl", containers=["b"])
    with pytest.raises(ValueError, match=r"^claim_name"):
        with_claim_template({"containers": [{"name": "a"}], "resourceClaims": [{"name": "accelerator"}]}, "tmpl")


def test_claim_template_rejects_bad_name() -> None:
    with pytest.raises(ValueError, match=r"^name"):
        claim_template(name="Not_Valid", slice=GOOD_SLICE)


@pytest.mark.parametrize(
    "profile", ["1g.10gb", "3g.40gb+me", "1g.24gb+me.all", "1g.24gb-me", "4g.96gb+gfx", "7g.141gb"]
)
def test_real_mig_profiles_are_accepted(profile: str) -> None:
    assert AcceleratorSlice.nvidia_mig(profile).pin_value == profile
