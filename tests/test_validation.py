"""Bad inputs raise ValueError naming the argument at fault, before anything is built."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi
import pytest
from cdk8s import Chart
from cdk8s import Testing as Cdk8sTesting  # not `Testing`: pytest would collect it

import constructs_dra
import pulumi_dra
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
        (lambda: AcceleratorSlice.google_tpu("v9"), "tpu_gen"),
        (lambda: AcceleratorSlice.amd_gpu("CPX_NPS4"), "partition_profile"),
        (lambda: AcceleratorSlice("tpu.google.com", "tpu.google.com/tpuGen", "v5e"), "pin_value"),
        # An attribute domain longer than the 63 characters the DRA API allows.
        (lambda: AcceleratorSlice("fpga.example.org", f"{'a' * 64}.org/model", "x"), "pin_attribute"),
        (lambda: AcceleratorSlice.nvidia_mig("1g.10gb", 8), "count"),
        (lambda: AcceleratorSlice.nvidia_gpu("NVIDIA H100 80GB HBM3", 2, topology="pcieRoot"), "topology"),
        (
            lambda: AcceleratorSlice.nvidia_gpu("NVIDIA H100 80GB HBM3", 2, topology="gpu.nvidia.com/parentUUID"),
            "topology",
        ),
        (lambda: AcceleratorSlice.google_tpu("v6e", 4, topology="resource.kubernetes.io/pcieRoot"), "topology"),
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
        ({"kubernetes_version": "1.30"}, "kubernetes_version"),
        ({"kubernetes_version": 1.36}, "kubernetes_version"),
        ({"api_version": "resource.k8s.io/v1alpha3"}, "api_version"),  # not served by 1.36
        ({"api_version": "resource.k8s.io/v1", "kubernetes_version": "1.33"}, "api_version"),
        (
            {
                "consumable_capacity": True,
                "kubernetes_version": "1.33",
                "api_version": "resource.k8s.io/v1beta2",
                "runtime_config": ["resource.k8s.io/v1beta2=true"],
            },
            "consumable_capacity",
        ),
        ({"consumable_capacity": "yes"}, "consumable_capacity"),
        ({"service_name": "svc"}, "service_name"),  # a Deployment has no governing Service
    ],
)
def test_workload_errors_name_the_field(overrides: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=rf"^{field}"):
        _workload(**overrides)


class _RegisteredResources(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.types: list[str] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.types.append(args.typ)
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        return {}


def _builders_leave_nothing(arguments: dict[str, Any]) -> Callable[[], list[object]]:
    with pytest.raises(ValueError, match=r"^replicas"):
        isolated_workload("app", namespace="tenant-a", **arguments)
    return lambda: []


def _cdk8s_leaves_nothing(arguments: dict[str, Any]) -> Callable[[], list[object]]:
    chart = Chart(Cdk8sTesting.app(), "chart", namespace="tenant-a")
    with pytest.raises(ValueError, match=r"^replicas"):
        constructs_dra.IsolatedAcceleratorWorkload(chart, "app", **arguments)
    # The id stays free: a corrected retry must not collide with a leftover construct.
    constructs_dra.IsolatedAcceleratorWorkload(chart, "app", **dict(arguments, replicas=2))
    return lambda: [child.node.id for child in chart.node.children if child.node.id != "app"]


def _pulumi_leaves_nothing(arguments: dict[str, Any]) -> Callable[[], list[object]]:
    mocks = _RegisteredResources()
    pulumi.runtime.set_mocks(mocks, preview=False)

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def program() -> pulumi.Output[Any]:
        # Inside a test program, so every registration has run when it returns.
        with pytest.raises(ValueError, match=r"^replicas"):
            pulumi_dra.IsolatedAcceleratorWorkload("app", namespace="tenant-a", **arguments)
        return pulumi.Output.from_input(None)

    program()
    return lambda: list(mocks.types)


@pytest.mark.parametrize("leaves_nothing", [_builders_leave_nothing, _cdk8s_leaves_nothing, _pulumi_leaves_nothing])
def test_nothing_is_built_from_a_partly_valid_call(leaves_nothing: Callable[..., Callable[[], list[object]]]) -> None:
    """No half state: every argument is valid but one, and nothing at all is left behind.

    No builder output, no child construct in the chart (its id stays free), no Pulumi
    resource registered (not even the component), and the caller's arguments untouched.
    """
    labels = {"team": "ml"}
    env = {"MODE": "prod"}
    arguments = {"image": "i", "slice": GOOD_SLICE, "tenant": "t", "labels": labels, "env": env, "replicas": 0}
    leftovers = leaves_nothing(arguments)
    assert leftovers() == []
    assert labels == {"team": "ml"} and env == {"MODE": "prod"}


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


def test_tpu_v5e_is_refused_naming_what_the_driver_publishes() -> None:
    """`google_tpu("v5e")` gave a selector that matches no device: the driver publishes v5lite / v5litepod."""
    with pytest.raises(ValueError, match=r"^tpu_gen: the tpu.google.com driver never publishes 'v5e'") as refused:
        AcceleratorSlice.google_tpu("v5e")
    assert "v5lite (a v5e device label) or v5litepod (a v5e podslice)" in str(refused.value)
    assert AcceleratorSlice.google_tpu("v5lite").pin_value == "v5lite"
    assert AcceleratorSlice.google_tpu("tpu7x").pin_value == "tpu7x"


def test_mig_counts_beyond_one_gpu_are_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match=r"^count: 8 devices of mig.nvidia.com aligned on gpu.nvidia.com/parentUUID "):
        AcceleratorSlice.nvidia_mig("1g.10gb", 8)
    assert AcceleratorSlice.nvidia_mig("1g.10gb", 7).alignment == "gpu.nvidia.com/parentUUID"
    assert AcceleratorSlice.nvidia_mig("1g.10gb", 8, topology=None).alignment is None


def test_topology_defaults_come_from_the_catalog() -> None:
    assert AcceleratorSlice.google_tpu("v6e", 4).alignment is None
    assert AcceleratorSlice.nvidia_gpu("NVIDIA H100 80GB HBM3", 4).alignment is None
    opted_in = AcceleratorSlice.nvidia_gpu("NVIDIA H100 80GB HBM3", 4, topology="resource.kubernetes.io/pcieRoot")
    assert opted_in.alignment == "resource.kubernetes.io/pcieRoot"
    # A class the catalog does not know: any well-formed attribute, the user's word for it.
    fpga = AcceleratorSlice("fpga.example.org", "fpga.example.org/model", "x", 2, "fpga.example.org/board")
    assert fpga.alignment == "fpga.example.org/board"
