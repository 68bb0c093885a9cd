"""DRA010 `invalid-dra-schema`: cases beyond its EXAMPLES, across resource.k8s.io versions."""

from __future__ import annotations

from typing import Any

import pytest

from dra_guard import AcceleratorSlice
from testkit.rulecases import (
    ALL_VERSIONS,
    CLAIM_MAKERS,
    MIG_PAIR,
    devices,
    findings,
    request_body,
    retag,
    rule_ids,
    template,
)


@ALL_VERSIONS
@CLAIM_MAKERS
def test_dra010_allow_multiple_allocations_in_a_request(api_version: str, make: Any) -> None:
    obj = make(api_version)
    request_body(obj)["allowMultipleAllocations"] = False
    (finding,) = findings(retag(obj))
    assert finding.rule == "DRA010" and finding.path.endswith("/allowMultipleAllocations")


@pytest.mark.parametrize("api_version", ["resource.k8s.io/v1", "resource.k8s.io/v1beta2"])
def test_dra010_flat_fields_under_wrapped_versions(api_version: str) -> None:
    obj = template(api_version)
    request = devices(obj)["requests"][0]
    request.update(request.pop("exactly"))
    assert "DRA010" in rule_ids(retag(obj))


@pytest.mark.parametrize("api_version", ["resource.k8s.io/v1beta1", "resource.k8s.io/v1alpha3"])
def test_dra010_exactly_under_flat_versions(api_version: str) -> None:
    obj = template(api_version)
    request = devices(obj)["requests"][0]
    devices(obj)["requests"][0] = {"name": request.pop("name"), "exactly": request}
    assert "DRA010" in rule_ids(retag(obj))


def test_dra010_unserved_version() -> None:
    obj = template()
    obj["apiVersion"] = "resource.k8s.io/v1alpha2"
    assert "DRA010" in rule_ids(obj)


GPU = AcceleratorSlice.nvidia_gpu("NVIDIA H100 80GB HBM3")


def _nvidia_config(parameters: dict[str, Any], requests: list[str] | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {"opaque": {"driver": "gpu.nvidia.com", "parameters": parameters}}
    if requests is not None:
        config["requests"] = requests
    return config


def _paths(obj: dict[str, Any], config: Any = None) -> list[str]:
    return sorted(finding.path for finding in findings(retag(obj), config=config) if finding.rule == "DRA010")


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"allocationMode": "Exact"}, "/allocationMode"),
        # count 0 is not refused: it is the int64 zero value, which the API server defaults
        # to 1 (pkg/apis/resource/v1/defaults.go); tests/test_api_defaults.py has that case.
        ({"count": 1.5}, "/count"),
        ({"count": -1}, "/count"),
        ({"allocationMode": "All", "count": 2}, "/count"),
        ({"tolerations": [{"operator": "In"}]}, "/tolerations/0/operator"),
        ({"tolerations": [{"operator": "Exists", "effect": "NoRun"}]}, "/tolerations/0/effect"),
        ({"tolerations": [{"operator": "Exists", "keys": ["a"]}]}, "/tolerations/0/keys"),
        ({"capacity": {"request": {"memory": "1Gi"}}}, "/capacity/request"),
    ],
)
def test_dra010_values_the_api_server_refuses(body: dict[str, Any], where: str) -> None:
    obj = template()
    request_body(obj).update(body)
    assert _paths(obj) == [f"/spec/spec/devices/requests/0/exactly{where}"]


def test_dra010_float_counts_from_pulumi_are_integers() -> None:
    obj = template()
    request_body(obj)["count"] = 1.0
    assert _paths(obj) == []


def test_dra010_constraints_and_configs_must_name_requests_of_the_claim() -> None:
    obj = template(accelerator=MIG_PAIR)
    devices(obj)["constraints"][0]["requests"] = ["slice", "slise"]
    devices(obj)["config"] = [
        _nvidia_config({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "MigDeviceConfig"}, ["nope"])
    ]
    assert _paths(obj) == ["/spec/spec/devices/config/0/requests/0", "/spec/spec/devices/constraints/0/requests/1"]
    devices(obj)["constraints"][0]["requests"] = ["slice"]
    devices(obj)["config"][0]["requests"] = ["slice"]
    assert _paths(obj) == []


def test_dra010_subrequests_are_named_request_slash_subrequest() -> None:
    obj = template()
    body = request_body(obj)
    devices(obj)["requests"][0] = {"name": "gpu", "firstAvailable": [{"name": "small", **body}]}
    devices(obj)["constraints"] = [{"requests": ["gpu/small"], "matchAttribute": "gpu.nvidia.com/parentUUID"}]
    assert _paths(obj) == []
    devices(obj)["constraints"] = [{"requests": ["gpu/big"], "matchAttribute": "gpu.nvidia.com/parentUUID"}]
    assert _paths(obj) == ["/spec/spec/devices/constraints/0/requests/0"]


@pytest.mark.parametrize(
    ("parameters", "where"),
    [
        (
            {"kind": "GpuConfig", "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"intervall": "Long"}}},
            ["/sharing/timeSlicingConfig", "/sharing/timeSlicingConfig/intervall"],
        ),
        ({"kind": "GpuConfig", "sharing": {"strategy": "timeslicing"}}, ["/sharing/strategy"]),
        ({"kind": "GpuConfig", "sharing": {}}, ["/sharing"]),
        (
            {"kind": "GpuConfig", "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Fast"}}},
            ["/sharing/timeSlicingConfig/interval"],
        ),
        (
            {"kind": "GpuConfig", "sharing": {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 150}}},
            ["/sharing/mpsConfig/defaultActiveThreadPercentage"],
        ),
        (
            {"kind": "GpuConfig", "sharing": {"strategy": "MPS", "timeSlicingConfig": {"interval": "Long"}}},
            ["/sharing/timeSlicingConfig"],
        ),
        ({"kind": "GpuConfig", "sharing": {"strategy": "TimeSlicing", "mpsConfig": {}}}, ["/sharing/mpsConfig"]),
        # MigDeviceSharing has no timeSlicingConfig at all.
        (
            {
                "kind": "MigDeviceConfig",
                "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}},
            },
            ["/sharing/timeSlicingConfig"],
        ),
        ({"kind": "MigDeviceConfig", "metadata": {"name": "x"}}, ["/metadata"]),
        ({"kind": "MigConfig"}, ["/kind"]),
        ({"kind": "MigDeviceConfig", "apiVersion": "resource.nvidia.com/v1"}, ["/apiVersion"]),
    ],
)
def test_dra010_nvidia_parameters_are_decoded_strictly(parameters: dict[str, Any], where: list[str]) -> None:
    # A GpuConfig for whole GPUs, anything else for MIG slices, so only the parameters are judged.
    obj = template(accelerator=GPU) if parameters["kind"] == "GpuConfig" else template()
    devices(obj)["config"] = [_nvidia_config({"apiVersion": "resource.nvidia.com/v1beta1", **parameters}, ["slice"])]
    assert _paths(obj) == sorted(f"/spec/spec/devices/config/0/opaque/parameters{path}" for path in where)


def test_dra010_nvidia_parameters_the_driver_accepts() -> None:
    obj = template()
    devices(obj)["config"] = [
        _nvidia_config(
            {
                "apiVersion": "resource.nvidia.com/v1beta1",
                "kind": "MigDeviceConfig",
                "sharing": {
                    "strategy": "MPS",
                    "mpsConfig": {
                        "defaultActiveThreadPercentage": 50,
                        "defaultPinnedDeviceMemoryLimit": "10Gi",
                        "defaultPerDevicePinnedMemoryLimit": {"0": "5Gi"},
                    },
                },
            }
        ),
        # Other drivers' parameters are theirs to decode.
        {"opaque": {"driver": "gpu.example.com", "parameters": {"anything": True}}},
    ]
    assert _paths(obj) == []


def test_dra010_an_nvidia_config_must_fit_the_devices_it_applies_to() -> None:
    obj = template()  # a MIG request
    devices(obj)["config"] = [_nvidia_config({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig"})]
    (finding,) = [f for f in findings(retag(obj)) if f.rule == "DRA010"]
    assert (
        finding.path.endswith("/parameters/kind") and "mig.nvidia.com, which take a MigDeviceConfig" in finding.message
    )
