"""The allocation model: what the DRA allocator can and cannot give a claim, on real drivers' slices.

Fixtures in tests/fixtures/slices and tests/fixtures/deviceclasses are written from the
drivers' source (each file cites repository, file and commit).
"""

from __future__ import annotations

import time
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_guard import AcceleratorSlice, claim_template
from dra_guard.model.allocation import (
    MAX_DECIMAL_EXPONENT,
    Allocator,
    EvaluationOverdue,
    Inventory,
    Verdict,
    constraints_of,
    evaluations_until,
    quantity,
    requests_of,
)
from dra_guard.model.manifest import claim_devices, device_requests

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


# --- Issue 20, point 5: counters of partitionable devices (KEP-4815, NVIDIA DynamicMIG) ---

DMIG = "nvidia-h100-dynamic-mig"
PARENT = [{"matchAttribute": "gpu.nvidia.com/parentUUID"}]
#: What one H100 80GB holds of each profile (NVIDIA mig-parted all-<profile>).
H100_PER_GPU = {
    "1g.10gb": 7,
    "1g.10gb+me": 1,
    "1g.20gb": 4,
    "2g.20gb": 3,
    "3g.40gb": 2,
    "4g.40gb": 1,
    "7g.80gb": 1,
}


def mig(name: str, profile: str, **fields: Any) -> dict[str, Any]:
    return exactly(name, "mig.nvidia.com", f"device.attributes['gpu.nvidia.com'].profile == '{profile}'", **fields)


def test_point5_dynamic_mig_fixture_publishes_every_placement_with_its_counters() -> None:
    found = inventory(DMIG)
    assert not found.invalid_pools and len(found.counter_sets) == 2
    (pool,) = {device.pool for device in found.devices}
    counters = found.counter_sets[pool, "gpu-0-counter-set"]
    assert all(counters[f"memory-slice-{index}"] == 1 for index in range(8))
    assert counters["multiprocessors"] == 132 and counters["ofa-engines"] == 1
    by_name = {device.name: device for device in found.devices}
    assert dict(by_name["gpu-0-mig-3g40gb-9-4"].consumes[0][1])["memory-slice-7"] == 1
    assert len([device for device in found.devices if device.attributes["gpu.nvidia.com/type"] == "mig"]) == 50


@pytest.mark.parametrize(("profile", "per_gpu"), H100_PER_GPU.items())
def test_point5_dynamic_mig_gives_one_gpu_what_its_counters_allow(profile: str, per_gpu: int) -> None:
    """Aligned on the parent GPU: as many as one H100 holds, not one more, although the GPU
    publishes 7 placements of 1g.10gb+me: each draws on its one OFA engine."""
    fits = raw_claim(mig("m", profile, count=per_gpu), constraints=PARENT)
    assert decide(fits, DMIG).status == "satisfiable"
    over = raw_claim(mig("m", profile, count=per_gpu + 1), constraints=PARENT)
    verdict = decide(over, DMIG)
    assert verdict.status == "unsatisfiable", verdict.reason
    # The builders refuse the same count before any slice is seen.
    with pytest.raises(ValueError, match=rf"one GPU holds at most {per_gpu} MIG device"):
        AcceleratorSlice.nvidia_mig(profile, per_gpu + 1)
    # Unaligned, the node's two GPUs give twice as many, and no more.
    assert decide(raw_claim(mig("m", profile, count=2 * per_gpu)), DMIG).status == "satisfiable"
    assert decide(raw_claim(mig("m", profile, count=2 * per_gpu + 1)), DMIG).status == "unsatisfiable"


def test_point5_media_extensions_are_counted_not_just_placements() -> None:
    verdict = decide(raw_claim(mig("m", "1g.10gb+me", count=2), constraints=PARENT), DMIG)
    assert verdict.status == "unsatisfiable"
    # 7 placements match on each GPU; the counters are why they do not go together.
    assert "draw together more than the shared counters they consume from hold" in verdict.reason, verdict.reason
    assert "gpu-0-counter-set" in verdict.reason
    # One +me and six plain 1g.10gb share a GPU: 7 memory slices, one OFA engine.
    mixed = raw_claim(
        mig("me", "1g.10gb+me"), mig("plain", "1g.10gb", count=6), constraints=[{**PARENT[0], "requests": []}]
    )
    assert decide(mixed, DMIG).status == "satisfiable"


def test_point5_placements_over_the_same_memory_slices_never_go_together() -> None:
    same_gpu = [{"requests": [], "matchAttribute": "gpu.nvidia.com/parentUUID"}]
    # 4g.40gb (slices 0-3) and 3g.40gb (4-7) fill an H100; a 1g.10gb more finds no slice.
    full = raw_claim(mig("a", "4g.40gb"), mig("b", "3g.40gb"), constraints=same_gpu)
    assert decide(full, DMIG).status == "satisfiable"
    over = raw_claim(mig("a", "4g.40gb"), mig("b", "3g.40gb"), mig("c", "1g.10gb"), constraints=same_gpu)
    verdict = decide(over, DMIG)
    assert verdict.status == "unsatisfiable" and "shared counters" in verdict.reason, verdict.reason
    # 7g.80gb takes every memory slice: nothing else on that GPU, but the other GPU is free.
    assert decide(raw_claim(mig("a", "7g.80gb"), mig("b", "1g.10gb"), constraints=same_gpu), DMIG).status == (
        "unsatisfiable"
    )
    assert decide(raw_claim(mig("a", "7g.80gb"), mig("b", "1g.10gb")), DMIG).status == "satisfiable"


def test_point5_a_whole_gpu_and_its_partitions_consume_the_same_counters() -> None:
    whole = exactly("gpu", "gpu.nvidia.com", count=2)
    assert decide(raw_claim(whole), DMIG).status == "satisfiable"
    # Both GPUs whole leave no counter for any MIG device; one whole GPU leaves the other's.
    verdict = decide(raw_claim(whole, mig("m", "1g.10gb")), DMIG)
    assert verdict.status == "unsatisfiable" and "shared counters" in verdict.reason, verdict.reason
    one_whole = exactly("gpu", "gpu.nvidia.com")
    assert decide(raw_claim(one_whole, mig("m", "1g.10gb", count=7)), DMIG).status == "satisfiable"
    assert decide(raw_claim(one_whole, mig("m", "1g.10gb", count=8)), DMIG).status == "unsatisfiable"


def test_point5_all_mode_takes_every_candidate_and_their_counters_must_fit() -> None:
    # Every 1g.10gb+me placement of the node at once: 14 devices, 2 OFA engines.
    verdict = decide(raw_claim(mig("m", "1g.10gb+me", allocationMode="All")), DMIG)
    assert verdict.status == "unsatisfiable" and "14 for 'm'" in verdict.reason, verdict.reason
    # Placements that do not overlap fit all at once: every 3g.40gb of both GPUs.
    assert decide(raw_claim(mig("m", "3g.40gb", allocationMode="All")), DMIG).status == "satisfiable"


def _partitionable_pool(sets: list[dict[str, Any]], consumes: list[dict[str, Any]], *, beta: bool = False) -> Inventory:
    device: dict[str, Any] = {
        "name": "part-0",
        "attributes": {"type": {"string": "mig"}, "profile": {"string": "1g.10gb"}},
        "consumesCounters": consumes,
    }
    counters_slice = {"sharedCounters": sets}
    devices_slice = {"devices": [{"name": "part-0", "basic": device} if beta else device]}
    api = "resource.k8s.io/v1beta1" if beta else "resource.k8s.io/v1"
    return Inventory.from_objects(
        [
            {
                "apiVersion": api,
                "kind": "ResourceSlice",
                "metadata": {"name": name},
                "spec": {"driver": "gpu.nvidia.com", "nodeName": "n", "pool": {"name": "n", "generation": 1}, **spec},
            }
            for name, spec in (("n-counters", counters_slice), ("n-devices", devices_slice))
        ]
    )


def test_point5_a_device_naming_a_counter_set_the_pool_lacks_makes_the_pool_invalid() -> None:
    claim = raw_claim(mig("m", "1g.10gb"))
    sets = [{"name": "gpu-0-counter-set", "counters": {"memory-slice-0": {"value": "1"}}}]
    good = [{"counterSet": "gpu-0-counter-set", "counters": {"memory-slice-0": {"value": "1"}}}]
    assert decide(claim, _partitionable_pool(sets, good)).status == "satisfiable"
    assert decide(claim, _partitionable_pool(sets, good, beta=True)).status == "satisfiable"  # v1beta1: under basic
    for consumes, why in (
        ([{"counterSet": "gpu-9-counter-set", "counters": good[0]["counters"]}], "counter set gpu-9-counter-set not"),
        ([{"counterSet": "gpu-0-counter-set", "counters": {"memory-slice-8": {"value": "1"}}}], "counter memory-sl"),
    ):
        found = _partitionable_pool(sets, consumes)
        assert not found.devices and why in found.invalid_pools["gpu.nvidia.com/n"]
        verdict = decide(claim, found)
        assert verdict.status == "unsatisfiable" and "invalid pools: gpu.nvidia.com/n" in verdict.reason
    # A device that draws more than the set holds never fits, even alone.
    greedy = [{"counterSet": "gpu-0-counter-set", "counters": {"memory-slice-0": {"value": "2"}}}]
    assert decide(claim, _partitionable_pool(sets, greedy)).status == "unsatisfiable"


@pytest.mark.parametrize(
    ("text", "value"),
    [("1", 1), ("9984Mi", 9984 * 2**20), ("500m", Fraction(1, 2)), ("1.5Gi", 3 * 2**29), ("2k", 2000), ("1e3", 1000)],
)
def test_point5_counter_values_are_quantities(text: str, value: Fraction) -> None:
    assert quantity(text) == value
    assert quantity("lots") is None and quantity(True) is None


def test_a_crafted_exponent_costs_nothing_and_is_no_limit() -> None:
    """`0e999999999` is zero and `1e999999999` no number dra-guard compares: each answered at
    once (computing 10 ** exponent took seconds, and a billion digits for the second)."""
    assert quantity(f"1e{MAX_DECIMAL_EXPONENT + 1}") is None and quantity("3E-5000") is None
    assert quantity(f"2e{MAX_DECIMAL_EXPONENT}") == 2 * 10**MAX_DECIMAL_EXPONENT
    assert quantity("1e999999999") is None
    assert quantity("0e999999999") == 0 and quantity("-0E-999999999") == 0


def test_evaluating_past_the_deadline_raises_instead_of_deciding() -> None:
    """Within `evaluations_until`, a selector evaluated on a device after the deadline raises
    EvaluationOverdue (the webhook's review thread keeps its slot until it ends); outside it
    nothing changes."""
    hopper = "device.attributes['gpu.nvidia.com'].architecture == 'Hopper'"
    claim = raw_claim(exactly("gpu", "gpu.nvidia.com", hopper, count=8))
    with evaluations_until(time.monotonic() - 1), pytest.raises(EvaluationOverdue, match="deadline passed"):
        decide(claim, "nvidia-8gpu-pcieroot")
    with evaluations_until(time.monotonic() + 60):
        assert decide(claim, "nvidia-8gpu-pcieroot").status == "satisfiable"
    assert decide(claim, "nvidia-8gpu-pcieroot").status == "satisfiable"
