"""DRA013 `extended-resource-class`: the drivers' own DeviceClasses (tests/fixtures/deviceclasses,
rendered from their charts with the values each file's header names)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_guard.contract.findings import Severity
from testkit.rulecases import config, findings

DEVICE_CLASSES = Path(__file__).parent.parent / "fixtures" / "deviceclasses"
#: Fixture -> what DRA013 says about it: None for nothing, else a phrase of the message.
EXPECTED: dict[str, str | None] = {
    "gpu.nvidia.com.yaml": "'nvidia.com/gpu'",  # the chart's default on resource.k8s.io/v1
    "mig-1g-12gb.gpu.nvidia.com.yaml": "only this class's own pin (gpu.nvidia.com/profile == '1g.12gb')",
    "gpu.intel.com-extended-resources.yaml": "'intel.com/gpu'",
    "gaudi.intel.com-extended-resources.yaml": "'intel.com/gaudi'",
    "gpu.example.com-extended-resource.yaml": "'example.com/gpu'",
}


def _class(path: Path) -> dict[str, Any]:
    (obj,) = [obj for obj in yaml.safe_load_all(path.read_text(encoding="utf-8")) if obj]
    return obj


@pytest.mark.parametrize("fixture", sorted(path.name for path in DEVICE_CLASSES.glob("*.yaml")))
def test_dra013_on_the_drivers_device_classes(fixture: str) -> None:
    found = [f for f in findings(_class(DEVICE_CLASSES / fixture)) if f.rule == "DRA013"]
    phrase = EXPECTED.get(fixture)
    if phrase is None:
        assert found == []
        return
    (finding,) = found
    assert finding.path == "/spec/extendedResourceName" and finding.severity == Severity.HIGH
    assert phrase in finding.message and "no claim template" in finding.message


def test_dra013_whole_gpus_have_no_pin_of_their_own() -> None:
    (finding,) = findings(_class(DEVICE_CLASSES / "gpu.nvidia.com.yaml"))
    assert finding.message.endswith("and no profile pin")


def test_dra013_non_accelerator_classes_and_other_groups_are_left_alone() -> None:
    nic = _class(DEVICE_CLASSES / "dranet-multinic.yaml")
    nic["spec"]["extendedResourceName"] = "example.com/nic"
    assert findings(nic) == []  # multinic is a NIC class the catalog knows
    gpu = _class(DEVICE_CLASSES / "gpu.nvidia.com.yaml")
    assert findings(gpu, config=config({"non-accelerator-classes": ["gpu.nvidia.com"]})) == []
    gpu["apiVersion"] = "example.com/v1"  # a CRD of that kind is no DRA DeviceClass
    assert findings(gpu) == []


@pytest.mark.parametrize("api_version", ["resource.k8s.io/v1beta1", "resource.k8s.io/v1beta2"])
def test_dra013_every_served_version(api_version: str) -> None:
    gpu = _class(DEVICE_CLASSES / "gpu.example.com-extended-resource.yaml")
    gpu["apiVersion"] = api_version
    assert [f.rule for f in findings(gpu)] == ["DRA013"]
    gpu["spec"]["extendedResourceName"] = ""
    assert findings(gpu) == []
