"""The allocation model: what the DRA allocator can and cannot give a claim, on real drivers' slices.

Fixtures in tests/fixtures/slices and tests/fixtures/deviceclasses are written from the
drivers' source (each file cites repository, file and commit).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_guard import AcceleratorSlice, claim_template
from dra_guard.allocation import Allocator, Inventory, Verdict, constraints_of, requests_of
from dra_guard.manifest import claim_devices, device_requests

FIXTURES = Path(__file__).parent / "fixtures"


@cache
def device_classes() -> dict[str, tuple[str, ...]]:
    classes = {}
    for path in sorted((FIXTURES / "deviceclasses").glob("*.yaml")):
        for obj in yaml.safe_load_all(path.read_text()):
            if obj and obj.get("kind") == "DeviceClass":
                selectors = obj["spec"].get("selectors", [])
                classes[obj["metadata"]["name"]] = tuple(selector["cel"]["expression"] for selector in selectors)
    return classes


@cache
def inventory(name: str) -> Inventory:
    return Inventory.from_objects(yaml.safe_load((FIXTURES / "slices" / f"{name}.yaml").read_text())["items"])


def decide(claim: dict[str, Any], slices: str | Inventory) -> Verdict:
    found = inventory(slices) if isinstance(slices, str) else slices
    _, devices = claim_devices(claim) or ((), {})
    return Allocator(found, device_classes()).decide(requests_of(device_requests(claim)), constraints_of(devices))


def raw_claim(*requests: dict[str, Any], constraints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "spec": {"devices": devices},
    }


def exactly(name: str, device_class: str, *selectors: str, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": device_class, **fields}
    if selectors:
        body["selectors"] = [{"cel": {"expression": expression}} for expression in selectors]
    return {"name": name, "exactly": body}


def test_every_fixture_reads_into_devices_on_one_node() -> None:
    for path in sorted((FIXTURES / "slices").glob("*.yaml")):
        found = inventory(path.stem)
        assert found.devices and not found.problems, path.name
        assert len(found.nodes) == 1, path.name
        assert all("/" in name for device in found.devices for name in device.attributes)


def test_mig_slices_of_one_profile_fit_up_to_what_the_node_has() -> None:
    assert decide(
        claim_template(name="t", slice=AcceleratorSlice.nvidia_mig("1g.5gb", 7), namespace="ns"), "nvidia-a100-mig"
    ).status == ("satisfiable")
    # Eight aligned on one parent GPU are refused when the slice is made (a GPU holds 7); unaligned,
    # the node has only 7 of that profile.
    eight = decide(
        claim_template(name="t", slice=AcceleratorSlice.nvidia_mig("1g.5gb", 8, topology=None), namespace="ns"),
        "nvidia-a100-mig",
    )
    assert eight.status == "unsatisfiable"
    assert "needs 8 device(s) of class 'mig.nvidia.com' matching its selectors, 7 match" in eight.reason


def test_match_attribute_on_an_attribute_no_device_publishes_never_allocates() -> None:
    claim = raw_claim(
        exactly("tpu", "tpu.google.com", count=4),
        constraints=[{"requests": ["tpu"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}],
    )
    verdict = decide(claim, "tpu-v6e-2x4")
    assert verdict.status == "unsatisfiable"
    assert "needs 4 device(s) with resource.kubernetes.io/pcieRoot (matchAttribute); 0 of its 8" in verdict.reason
    claim["spec"]["devices"].pop("constraints")
    assert decide(claim, "tpu-v6e-2x4").status == "satisfiable"


def test_match_attribute_limits_devices_to_one_root_complex() -> None:
    constraint = [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    four = raw_claim(exactly("gpu", "gpu.nvidia.com", count=4), constraints=constraint)
    five = raw_claim(exactly("gpu", "gpu.nvidia.com", count=5), constraints=constraint)
    assert decide(four, "nvidia-8gpu-pcieroot").status == "satisfiable"
    verdict = decide(five, "nvidia-8gpu-pcieroot")
    assert verdict.status == "unsatisfiable" and "at most 4 of its candidates do" in verdict.reason


def test_distinct_attribute_needs_different_values() -> None:
    claim = raw_claim(
        exactly("gpu", "gpu.nvidia.com", count=2),
        constraints=[{"distinctAttribute": "resource.kubernetes.io/pcieRoot"}],
    )
    assert decide(claim, "nvidia-8gpu-pcieroot").status == "satisfiable"
    claim["spec"]["devices"]["requests"][0]["exactly"]["count"] = 3
    assert decide(claim, "nvidia-8gpu-pcieroot").status == "unsatisfiable"


def test_the_standards_example_never_allocates_on_nvidia_nodes() -> None:
    """A MIG profile selector on class gpu.nvidia.com (the standard's own example)."""
    request = {
        "name": "dedicated-slice",
        "deviceClassName": "gpu.nvidia.com",
        "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}],
        "allocationMode": "ExactCount",
        "count": 1,
    }
    claim = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceClaim",
        "spec": {"devices": {"requests": [request]}},
    }
    on_mig = decide(claim, "nvidia-a100-mig")  # MIG mode on: no device of type gpu at all
    assert on_mig.status == "unsatisfiable" and "0 match" in on_mig.reason
    on_gpus = decide(claim, "nvidia-8gpu-pcieroot")  # whole GPUs publish no `profile`: CEL error
    assert on_gpus.status == "unsatisfiable" and on_gpus.reason.startswith("allocation aborts: selector")
    assert "no such member" in on_gpus.reason


def test_first_available_takes_the_first_alternative_that_fits() -> None:
    request = {
        "name": "gpu",
        "firstAvailable": [
            {
                "name": "big",
                "deviceClassName": "mig.nvidia.com",
                "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '7g.40gb'"}}],
            },
            {
                "name": "small",
                "deviceClassName": "mig.nvidia.com",
                "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"}}],
                "count": 2,
            },
        ],
    }
    assert decide(raw_claim(request), "nvidia-a100-mig").status == "satisfiable"
    request["firstAvailable"].pop()
    assert decide(raw_claim(request), "nvidia-a100-mig").status == "unsatisfiable"


def test_all_mode_needs_at_least_one_device() -> None:
    everything = raw_claim(exactly("all", "gpu.nvidia.com", allocationMode="All"))
    assert decide(everything, "nvidia-8gpu-pcieroot").status == "satisfiable"
    assert decide(everything, "nvidia-a100-mig").status == "unsatisfiable"


def test_requests_of_one_claim_get_distinct_devices() -> None:
    one = "device.attributes['gpu.nvidia.com'].profile == '3g.20gb'"  # the node has exactly one
    claim = raw_claim(exactly("a", "mig.nvidia.com", one), exactly("b", "mig.nvidia.com", one))
    assert decide(claim, "nvidia-a100-mig").status == "unsatisfiable"


def test_mig_slices_align_on_their_parent_gpu() -> None:
    profile = "device.attributes['gpu.nvidia.com'].profile == '2g.10gb'"
    same_parent = [{"matchAttribute": "gpu.nvidia.com/parentUUID"}]
    assert decide(
        raw_claim(exactly("m", "mig.nvidia.com", profile, count=2), constraints=same_parent), "nvidia-a100-mig"
    ).status == ("satisfiable")
    mixed = raw_claim(
        exactly("a", "mig.nvidia.com", profile, count=2),
        exactly("b", "mig.nvidia.com", "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"),
        constraints=same_parent,
    )
    assert decide(mixed, "nvidia-a100-mig").status == "unsatisfiable"  # 2g.10gb and 1g.5gb sit on different GPUs


def test_amd_upstream_same_parent_example_cannot_allocate() -> None:
    """ROCm's example matches partitions on gpu.amd.com/deviceID, which partitions do not publish."""
    claim = raw_claim(
        exactly("a", "gpu.amd.com", "device.attributes['gpu.amd.com'].partitionProfile == 'cpx_nps4'", count=2),
        constraints=[{"matchAttribute": "gpu.amd.com/deviceID"}],
    )
    assert decide(claim, "amd-mi300x-partitioned").status == "unsatisfiable"
    claim["spec"]["devices"]["constraints"] = [{"matchAttribute": "gpu.amd.com/parentDeviceID"}]
    assert decide(claim, "amd-mi300x-partitioned").status == "satisfiable"


@pytest.mark.parametrize(
    ("claim", "why"),
    [
        (raw_claim(exactly("x", "fpga.example.org")), "DeviceClass 'fpga.example.org' is unknown"),
        (
            raw_claim(
                exactly(
                    "x",
                    "gpu.nvidia.com",
                    "device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('1.0.0'))",
                )
            ),
            "cannot evaluate",
        ),
    ],
    ids=["unknown-class", "semver"],
)
def test_what_cannot_be_decided_is_undecided(claim: dict[str, Any], why: str) -> None:
    verdict = decide(claim, "nvidia-8gpu-pcieroot")
    assert verdict.status == "undecided" and why in verdict.reason


def _slice(generation: int, node: str | None, devices: list[str], count: int = 1) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "driver": "gpu.example.com",
        "pool": {"name": "pool", "generation": generation, "resourceSliceCount": count},
        "devices": [{"name": name, "attributes": {"model": {"string": "LATEST-GPU-MODEL"}}} for name in devices],
    }
    if node is None:
        spec["allNodes"] = True
    else:
        spec["nodeName"] = node
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"s{generation}"},
        "spec": spec,
    }


def test_only_the_newest_generation_of_a_pool_counts() -> None:
    found = Inventory.from_objects([_slice(1, "n", ["a", "b", "c"]), _slice(2, "n", ["a"])])
    assert [device.name for device in found.devices] == ["a"]
    assert decide(raw_claim(exactly("g", "gpu.example.com", count=2)), found).status == "unsatisfiable"


def test_pools_without_a_node_are_reachable_from_every_node() -> None:
    found = Inventory.from_objects([_slice(1, None, ["a", "b"])])
    assert decide(raw_claim(exactly("g", "gpu.example.com", count=2)), found).status == "satisfiable"


def test_v1beta1_devices_nest_their_fields_under_basic() -> None:
    obj = _slice(1, "n", [])
    obj["apiVersion"] = "resource.k8s.io/v1beta1"
    obj["spec"]["devices"] = [{"name": "d", "basic": {"attributes": {"model": {"string": "M"}}}}]
    (device,) = Inventory.from_objects([obj]).devices
    assert device.attributes == {"gpu.example.com/model": "M"}


def test_attribute_values_of_a_shape_the_api_server_refuses_are_left_out() -> None:
    """A ResourceSlice in the input may be anything; the model must not fail on it."""
    obj = _slice(1, "n", [])
    obj["spec"]["devices"] = [
        {"name": "d", "attributes": {"model": {"string": {"a": 1}}, "other": {"string": ["x"]}, "index": {"int": 2.0}}}
    ]
    (device,) = Inventory.from_objects([obj]).devices
    assert device.attributes == {"gpu.example.com/index": 2}  # Pulumi's float, as the int it was
    claim = raw_claim(exactly("g", "gpu.example.com"), constraints=[{"distinctAttribute": "gpu.example.com/model"}])
    assert decide(claim, Inventory.from_objects([obj])).status == "unsatisfiable"
