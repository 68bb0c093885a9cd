"""DRA005 `shared-claim`: cases beyond its EXAMPLES, across resource.k8s.io versions."""

from __future__ import annotations

from typing import Any

import pytest

from testkit.rulecases import (
    claim,
    config,
    findings,
    pod,
    rule_ids,
    workload,
)


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "Job"])
def test_dra005_controllers_must_not_name_a_claim(kind: str) -> None:
    objects = workload(kind)
    template_obj, workload_obj = objects.claim_template, objects.workload
    claims = workload_obj["spec"]["template"]["spec"]["resourceClaims"]
    claims[0] = {"name": "accelerator", "resourceClaimName": "shared"}
    assert rule_ids(template_obj, workload_obj, claim()) >= {"DRA005"}


def test_dra005_claim_used_by_two_pods_and_by_one() -> None:
    def user(name: str) -> dict[str, Any]:
        obj = pod(
            containers=[{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}],
            resourceClaims=[{"name": "gpu", "resourceClaimName": "slice"}],
        )
        obj["metadata"]["name"] = name
        return obj

    shared = findings(claim(), user("a"), user("b"))
    assert [(f.rule, f.object.name) for f in shared] == [("DRA005", "a"), ("DRA005", "b")]
    assert findings(claim(), user("a")) == []


def test_dra005_pod_group_claims_are_shared() -> None:
    group = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ns"},
        "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "slice"}]},
    }
    assert rule_ids(group) == {"DRA005"}
    group["spec"]["resourceClaims"] = []
    assert rule_ids(group) == set()


def test_dra005_claims_for_non_accelerators_may_be_shared() -> None:
    """non-accelerator-classes, and the catalog's own (NICs, CPU profiles), count here too."""

    def user(name: str) -> dict[str, Any]:
        obj = pod(
            containers=[{"name": "c", "image": "i", "resources": {"claims": [{"name": "nic"}]}}],
            resourceClaims=[{"name": "nic", "resourceClaimName": "slice"}],
        )
        obj["metadata"]["name"] = name
        return obj

    nic_claim = claim()
    nic_claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "net.example.com"
    assert findings(nic_claim, user("a"), user("b")) == []
    fpga_claim = claim()
    fpga_claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "fpga.example.org"
    assert {f.rule for f in findings(fpga_claim, user("a"), user("b"))} >= {"DRA005"}
    configured = config({"non-accelerator-classes": ["fpga.example.org"]})
    assert [f for f in findings(fpga_claim, user("a"), user("b"), config=configured) if f.rule == "DRA005"] == []
