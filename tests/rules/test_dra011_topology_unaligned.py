"""DRA011 `topology-unaligned`: cases beyond its EXAMPLES, across resource.k8s.io versions."""

from __future__ import annotations

from typing import Any

import pytest

from dra_guard import AcceleratorSlice
from dra_guard.contract.catalog import PCIE_ROOT
from testkit.rulecases import (
    ALL_VERSIONS,
    CLAIM_MAKERS,
    MIG_PAIR,
    config,
    devices,
    findings,
    retag,
    rule_ids,
    template,
)


@ALL_VERSIONS
@CLAIM_MAKERS
def test_dra011_mig_slices_align_on_their_parent_gpu(api_version: str, make: Any) -> None:
    obj = make(api_version, MIG_PAIR)
    assert rule_ids(obj) == set()
    devices(obj).pop("constraints")
    (finding,) = findings(retag(obj))
    assert finding.rule == "DRA011" and "gpu.nvidia.com/parentUUID (or resource.kubernetes.io/pcieRoot)" in (
        finding.message
    )
    devices(obj)["constraints"] = [{"matchAttribute": PCIE_ROOT}]  # accepted, though NVIDIA publishes it conditionally
    assert rule_ids(retag(obj)) == set()
    # A constraint on some other request does not align these two.
    devices(obj)["requests"].append({**devices(obj)["requests"][0], "name": "other"})
    devices(obj)["constraints"] = [{"requests": ["other"], "matchAttribute": "gpu.nvidia.com/parentUUID"}]
    assert "DRA011" in rule_ids(retag(obj))


@pytest.mark.parametrize(
    "accelerator",
    [
        AcceleratorSlice.google_tpu("v6e", 4),
        AcceleratorSlice.nvidia_gpu("NVIDIA H100 80GB HBM3", 8),
        AcceleratorSlice.amd_gpu("cpx_nps4", 8),
        AcceleratorSlice("gpu.example.com", "gpu.example.com/model", "LATEST-GPU-MODEL", 2),
        AcceleratorSlice("gpu.intel.com", "gpu.intel.com/model", "Flex 170", 8),
    ],
    ids=["tpu", "nvidia-gpu", "amd", "example", "intel"],
)
def test_dra011_asks_nothing_where_no_attribute_is_on_every_device(accelerator: AcceleratorSlice) -> None:
    """pcieRoot is conditional (NVIDIA, AMD), empty where underivable (Intel) or never published
    (TPU, example driver): requiring it could only make the claim unallocatable."""
    obj = template(accelerator=accelerator)
    assert "constraints" not in devices(obj)
    assert rule_ids(obj) == set()


def test_dra011_extra_classes_topology_attribute_is_honoured() -> None:
    obj = template(
        accelerator=AcceleratorSlice("fpga.example.org", "fpga.example.org/bitstream", "v2", 2),
    )
    assert rule_ids(obj) == set()  # no topology-attribute configured: nothing to ask for
    declared = config(
        {
            "extra-classes": {
                "fpga.example.org": {
                    "pin-attribute": "fpga.example.org/bitstream",
                    "topology-attribute": "fpga.example.org/board",
                }
            }
        }
    )
    (finding,) = findings(obj, config=declared)
    assert finding.rule == "DRA011" and "fpga.example.org/board" in finding.message
    devices(obj)["constraints"] = [{"matchAttribute": "fpga.example.org/board"}]
    assert rule_ids(retag(obj), config=declared) == set()


def test_dra011_all_mode_says_the_count_is_unknown() -> None:
    from dra_guard.engine.run import check_objects

    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "every-gpu", "namespace": "team-a"},
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "mig.nvidia.com", "allocationMode": "All"}}]
            }
        },
    }
    (finding,) = [f for f in check_objects([claim]).findings if f.rule == "DRA011"]
    assert finding.message.startswith("an unknown number of mig.nvidia.com devices (allocationMode: All")
    assert "2 mig.nvidia.com devices" not in finding.message
