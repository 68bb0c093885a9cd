"""What the builders emit, the DRA allocator can give: every vendor constructor's class, counts
1 to 8, every target release and every resource.k8s.io version it serves, proven satisfiable
with dra_guard.model.allocation against its driver's fixture (tests/fixtures/slices).

This is the test that catches the TPU bug: a `matchAttribute` on an attribute the driver does
not publish (pcieRoot on TPU chips) made every multi-chip TPU claim pend forever.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from dra_guard import AcceleratorSlice, claim_template
from dra_guard.contract.catalog import KUBERNETES_RELEASES, PCIE_ROOT
from testkit.targets import runtime_config_for
from tests.test_allocation import decide

#: Vendor constructors: (class, make a slice of `count`, the fixture of a node that holds 8).
VENDORS: dict[str, tuple[Callable[[int], AcceleratorSlice], str]] = {
    "mig.nvidia.com": (lambda count: AcceleratorSlice.nvidia_mig("1g.5gb", count), "nvidia-a100-mig"),
    "gpu.nvidia.com": (
        lambda count: AcceleratorSlice.nvidia_gpu("NVIDIA H100 80GB HBM3", count),
        "nvidia-8gpu-pcieroot",
    ),
    "tpu.google.com": (lambda count: AcceleratorSlice.google_tpu("v6e", count), "tpu-v6e-2x4"),
    "gpu.amd.com": (lambda count: AcceleratorSlice.amd_gpu("cpx_nps4", count), "amd-mi300x-partitioned"),
}
#: The chips of the TPU host each TPU fixture publishes (every chip's chipCount).
TPU_HOST_CHIPS = {"tpu-v6e-2x4": 8, "tpu-v6e-2x2": 4}
#: Counts a vendor's slices cannot reach on one node with the catalog's alignment, and why.
REFUSED = {("mig.nvidia.com", 8): "one GPU holds at most 7"}
TARGETS = [(version, api) for version, release in KUBERNETES_RELEASES.items() for api in release.claim_api_versions]
CASES = [
    (device_class, count, version, api)
    for device_class, count, (version, api) in itertools.product(VENDORS, range(1, 9), TARGETS)
]


def _template(accelerator: AcceleratorSlice, version: str, api_version: str) -> dict[str, Any]:
    return claim_template(
        name="t",
        slice=accelerator,
        namespace="ns",
        api_version=api_version,
        kubernetes_version=version,
        runtime_config=runtime_config_for(api_version),
    )


@pytest.mark.parametrize(
    ("device_class", "count", "version", "api_version"),
    CASES,
    ids=[f"{c}-x{n}-{v}-{a.rpartition('/')[2]}" for c, n, v, a in CASES],
)
def test_every_builder_output_is_satisfiable_on_its_drivers_node(
    device_class: str, count: int, version: str, api_version: str
) -> None:
    make, fixture = VENDORS[device_class]
    if (device_class, count) in REFUSED:
        with pytest.raises(ValueError, match=rf"^count: .*{REFUSED[device_class, count]}"):
            make(count)
        return
    verdict = decide(_template(make(count), version, api_version), fixture)
    if device_class == "tpu.google.com" and count != TPU_HOST_CHIPS[fixture]:
        # A whole host or nothing (chipCount == count, DRA017): the fixture's host has 8 chips.
        assert verdict.status == "unsatisfiable" and "0 match" in verdict.reason, verdict.reason
        return
    assert verdict.status == "satisfiable", verdict.reason


def test_the_old_tpu_claim_with_pcie_root_never_allocates() -> None:
    """What the builders emitted before: matchAttribute pcieRoot on TPU x4."""
    template = _template(AcceleratorSlice.google_tpu("v6e", 4), "1.36", "resource.k8s.io/v1")
    assert "constraints" not in template["spec"]["spec"]["devices"]
    template["spec"]["spec"]["devices"]["constraints"] = [{"requests": ["slice"], "matchAttribute": PCIE_ROOT}]
    verdict = decide(template, "tpu-v6e-2x2")  # four chips: the host the claim takes whole
    assert verdict.status == "unsatisfiable" and "0 of its" in verdict.reason, verdict.reason
    assert decide(template, "tpu-v6e-2x4").status == "unsatisfiable"  # eight: not this claim's host at all
    # And the builders refuse to emit it, naming why.
    with pytest.raises(ValueError, match=r"^topology: the tpu.google.com driver publishes no attribute to align"):
        AcceleratorSlice.google_tpu("v6e", 4, topology=PCIE_ROOT)


def test_pcie_root_is_an_opt_in_that_allocates_only_where_published_and_within_one_root() -> None:
    four = _template(
        AcceleratorSlice.nvidia_gpu("NVIDIA H100 80GB HBM3", 4, topology=PCIE_ROOT), "1.36", "resource.k8s.io/v1"
    )
    assert four["spec"]["spec"]["devices"]["constraints"] == [{"requests": ["slice"], "matchAttribute": PCIE_ROOT}]
    assert decide(four, "nvidia-8gpu-pcieroot").status == "satisfiable"
    five = _template(
        AcceleratorSlice.nvidia_gpu("NVIDIA H100 80GB HBM3", 5, topology=PCIE_ROOT), "1.36", "resource.k8s.io/v1"
    )
    assert decide(five, "nvidia-8gpu-pcieroot").status == "unsatisfiable"  # 4 GPUs per root complex
    pair = _template(
        AcceleratorSlice.nvidia_gpu("NVIDIA A100 80GB PCIe", 2, topology=PCIE_ROOT), "1.36", "resource.k8s.io/v1"
    )
    assert decide(pair, "nvidia-4gpu-no-pcieroot").status == "unsatisfiable"  # a node that cannot derive it
    # Without the opt-in, the same pair fits there.
    plain = _template(AcceleratorSlice.nvidia_gpu("NVIDIA A100 80GB PCIe", 2), "1.36", "resource.k8s.io/v1")
    assert decide(plain, "nvidia-4gpu-no-pcieroot").status == "satisfiable"


def test_amd_partitions_of_one_gpu_are_an_opt_in() -> None:
    same_gpu = AcceleratorSlice.amd_gpu("cpx_nps4", 8, topology="gpu.amd.com/parentDeviceID")
    assert decide(_template(same_gpu, "1.36", "resource.k8s.io/v1"), "amd-mi300x-partitioned").status == "satisfiable"
    # Whole GPUs (spx) publish deviceID, not parentDeviceID: the same opt-in finds no device.
    whole = _template(AcceleratorSlice.amd_gpu("spx_nps1", 1), "1.36", "resource.k8s.io/v1")
    whole["spec"]["spec"]["devices"]["constraints"] = [{"matchAttribute": "gpu.amd.com/parentDeviceID"}]
    verdict = decide(whole, "amd-mi300x-partitioned")
    assert verdict.status == "unsatisfiable" and "0 of its 1 candidate" in verdict.reason, verdict.reason


def test_mig_alignment_can_be_dropped() -> None:
    unaligned = AcceleratorSlice.nvidia_mig("2g.10gb", 3, topology=None)
    template = _template(unaligned, "1.36", "resource.k8s.io/v1")
    assert "constraints" not in template["spec"]["spec"]["devices"]
    # Only two 2g.10gb slices exist on the node: 3 do not fit, aligned or not.
    assert decide(template, "nvidia-a100-mig").status == "unsatisfiable"
    aligned = _template(AcceleratorSlice.nvidia_mig("2g.10gb", 2), "1.36", "resource.k8s.io/v1")
    assert decide(aligned, "nvidia-a100-mig").status == "satisfiable"


@pytest.mark.parametrize(("version", "fits_shareable_devices"), [("1.35", True), ("1.36", False)])
def test_the_exclusivity_guard_keeps_shareable_devices_out(version: str, fits_shareable_devices: bool) -> None:
    """The example driver's consumable-capacity profile publishes allowMultipleAllocations: true."""
    example = AcceleratorSlice("gpu.example.com", "gpu.example.com/model", "LATEST-GPU-MODEL")
    template = _template(example, version, "resource.k8s.io/v1")
    verdict = decide(template, "example-consumable-capacity")
    assert (verdict.status == "satisfiable") is fits_shareable_devices, verdict.reason
    assert decide(template, "example-driver").status == "satisfiable"  # exclusive devices fit either way
