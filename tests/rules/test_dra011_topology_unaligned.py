"""DRA011 `topology-unaligned`: cases beyond its EXAMPLES, across resource.k8s.io versions."""

from __future__ import annotations

from typing import Any

from dra_guard import AcceleratorSlice
from testkit.rulecases import (
    ALL_VERSIONS,
    CLAIM_MAKERS,
    MIG_PAIR,
    devices,
    retag,
    rule_ids,
    template,
)


@ALL_VERSIONS
@CLAIM_MAKERS
def test_dra011_topology(api_version: str, make: Any) -> None:
    obj = make(api_version, MIG_PAIR)
    assert rule_ids(obj) == set()
    constraints = devices(obj).pop("constraints")
    assert rule_ids(retag(obj)) == {"DRA011"}
    devices(obj)["constraints"] = [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    assert rule_ids(retag(obj)) == set()
    devices(obj)["constraints"] = [{"requests": ["other"], "matchAttribute": constraints[0]["matchAttribute"]}]
    assert rule_ids(retag(obj)) == {"DRA011"}


def test_dra011_parent_uuid_does_not_align_other_classes() -> None:
    obj = template(accelerator=AcceleratorSlice.google_tpu("v6e", 2))
    devices(obj)["constraints"][0]["matchAttribute"] = "gpu.nvidia.com/parentUUID"
    assert rule_ids(retag(obj)) == {"DRA011"}


def test_dra011_all_mode_says_the_count_is_unknown() -> None:
    from dra_guard.engine import check_objects

    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "every-gpu", "namespace": "team-a"},
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}}]
            }
        },
    }
    (finding,) = [f for f in check_objects([claim]).findings if f.rule == "DRA011"]
    assert finding.message.startswith("an unknown number of accelerator devices (allocationMode: All")
    assert "2 devices" not in finding.message and "2 accelerator" not in finding.message
