"""DRA007 `temporal-sharing`: cases beyond its EXAMPLES, across resource.k8s.io versions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_guard.contract.findings import Finding, Severity
from testkit.rulecases import (
    ALL_VERSIONS,
    CLAIM_MAKERS,
    claim,
    devices,
    findings,
    retag,
    rule_ids,
    template,
)


@ALL_VERSIONS
@CLAIM_MAKERS
@pytest.mark.parametrize("strategy", ["TimeSlicing", "MPS", "mps"])
def test_dra007_temporal_sharing(api_version: str, make: Any, strategy: str) -> None:
    obj = make(api_version)
    config = {
        "requests": ["slice"],
        "opaque": {
            "driver": "gpu.nvidia.com",
            "parameters": {
                "apiVersion": "resource.nvidia.com/v1beta1",
                "kind": "MigDeviceConfig",
                "sharing": {"strategy": strategy},
            },
        },
    }
    devices(obj)["config"] = [config]
    # The driver decodes strategies exactly (DRA010 reports `mps`); DRA007 reads them in any case.
    refused = set() if strategy in ("TimeSlicing", "MPS") else {"DRA010"}
    assert rule_ids(retag(obj)) == {"DRA007"} | refused
    config["opaque"]["parameters"]["sharing"] = {"strategy": "None"}  # type: ignore[index]
    assert rule_ids(retag(obj)) == {"DRA010"}  # not a strategy the driver knows, and no sharing


# --- severity follows the claim's blast radius -------------------------------------------

_CORPUS = Path(__file__).parent.parent / "corpus"


def _sharing(obj: dict[str, Any], strategy: str = "TimeSlicing") -> dict[str, Any]:
    devices(obj)["config"] = [
        {
            "requests": ["slice"],
            "opaque": {
                "driver": "gpu.nvidia.com",
                "parameters": {
                    "apiVersion": "resource.nvidia.com/v1beta1",
                    "kind": "MigDeviceConfig",
                    "sharing": {"strategy": strategy},
                },
            },
        }
    ]
    return retag(obj)


def _pod_group(template_name: str, namespace: str = "ns") -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "workers", "namespace": namespace},
        "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template_name}]},
    }


def dra007(*objects: dict[str, Any]) -> list[Finding]:
    return [finding for finding in findings(*objects) if finding.rule == "DRA007"]


def test_dra007_a_templates_claim_is_one_pods_own() -> None:
    (finding,) = dra007(_sharing(template()))
    assert finding.severity == Severity.MEDIUM and not finding.cross_object
    assert "among the containers of each pod" in finding.message


@pytest.mark.parametrize("order", ["group-first", "template-first"])
def test_dra007_a_template_a_pod_group_shares_is_critical(order: str) -> None:
    shared = _sharing(template())
    objects = [_pod_group("slice"), shared] if order == "group-first" else [shared, _pod_group("slice")]
    (finding,) = dra007(*objects)
    assert finding.severity == Severity.CRITICAL and "PodGroup/workers" in finding.message
    # The template alone is still a finding (what a per-object front end reports).
    assert not finding.cross_object
    # A group of another namespace, or naming another template, shares nothing of this one.
    assert dra007(shared, _pod_group("slice", namespace="other"))[0].severity == Severity.MEDIUM
    assert dra007(shared, _pod_group("other-template"))[0].severity == Severity.MEDIUM


@pytest.mark.parametrize("kind", ["Workload", "Job"])
def test_dra007_a_template_a_workload_or_job_shares_is_critical(kind: str) -> None:
    """A Workload's pod group templates and a Job's scheduling claims make one claim per group
    too (dra_guard.model.pod_groups): not one pod's own."""
    claims = [{"name": "gpu", "resourceClaimTemplateName": "slice"}]
    group: dict[str, Any] = (
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "Workload",
            "metadata": {"name": "workers", "namespace": "ns"},
            "spec": {"podGroupTemplates": [{"name": "g", "resourceClaims": claims}]},
        }
        if kind == "Workload"
        else {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "workers", "namespace": "ns"},
            "spec": {"scheduling": {"resourceClaims": claims}, "template": {"spec": {"containers": []}}},
        }
    )
    (finding,) = dra007(_sharing(template()), group)
    assert finding.severity == Severity.CRITICAL and f"{kind}/workers" in finding.message


def test_dra007_a_resource_claim_and_a_device_class_are_critical() -> None:
    (finding,) = dra007(_sharing(claim()))
    assert finding.severity == Severity.CRITICAL and "every pod that names this ResourceClaim" in finding.message
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "shared-gpu"},
        "spec": {"config": devices(_sharing(claim()))["config"]},
    }
    del device_class["spec"]["config"][0]["requests"]
    (finding,) = dra007(device_class)
    assert finding.severity == Severity.CRITICAL and "every claim of this class" in finding.message


@pytest.mark.parametrize(
    "name",
    [
        "nvidia-dra-driver/gpu-mps.yaml",
        "nvidia-dra-driver/gpu-simple-mig-ts.yaml",
        "nvidia-dra-driver/gpu-test-mps.yaml",
        "nvidia-dra-driver/gpu-test5.yaml",
        "nvidia-dra-driver/gpu-test6.yaml",  # a Deployment: each replica its own claim from the template
        "nvidia-dra-driver/gpu-timeslicing.yaml",
    ],
)
def test_dra007_nvidias_own_examples_share_within_one_pod(name: str) -> None:
    objects = [obj for obj in yaml.safe_load_all((_CORPUS / name).read_text(encoding="utf-8")) if obj]
    found = dra007(*objects)
    assert found and {finding.severity for finding in found} == {Severity.MEDIUM}
