"""DRA002 `profile-not-pinned`: cases beyond its EXAMPLES, across resource.k8s.io versions."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_guard.contract.catalog import EXCLUSIVITY_GUARD
from dra_guard.contract.findings import Finding
from dra_guard.engine.run import check_objects
from testkit.rulecases import (
    ALL_VERSIONS,
    CLAIM_MAKERS,
    LEGACY_TARGET,
    config,
    devices,
    findings,
    request_body,
    retag,
    rule_ids,
    target_for,
    template,
)


def _set_selector(obj: dict[str, Any], expression: str) -> dict[str, Any]:
    # The builders' exclusivity guard stays, in a selector of its own, so only DRA002 is judged.
    guard = [{"cel": {"expression": EXCLUSIVITY_GUARD}}] if "allowMultipleAllocations" in str(request_body(obj)) else []
    request_body(obj)["selectors"] = [{"cel": {"expression": expression}}, *guard]
    return retag(obj)


@ALL_VERSIONS
@CLAIM_MAKERS
@pytest.mark.parametrize(
    "expression",
    [
        "device.attributes['gpu.nvidia.com'].profile == '1g.10gb' || true",
        "device.attributes['gpu.nvidia.com'].profile in ['1g.10gb', '7g.80gb']",
        "device.attributes['gpu.nvidia.com'].profile != '7g.80gb'",
        "!(device.attributes['gpu.nvidia.com'].profile == '1g.10gb')",
        "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100'",
        "device.attributes['example.com'].profile == '1g.10gb'",
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('10Gi')) >= 0",
        "true ? device.attributes['gpu.nvidia.com'].profile == '1g.10gb' : true",
    ],
)
def test_dra002_selectors_that_do_not_pin(api_version: str, make: Any, expression: str) -> None:
    assert rule_ids(_set_selector(make(api_version), expression)) == {"DRA002"}


@ALL_VERSIONS
@pytest.mark.parametrize(
    "expression",
    [
        "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'",
        "'1g.10gb' == device.attributes['gpu.nvidia.com']['profile']",
        "device.driver == 'gpu.nvidia.com' && (device.attributes['gpu.nvidia.com'].profile == '1g.10gb' && true)",
    ],
)
def test_dra002_pinning_selectors(api_version: str, expression: str) -> None:
    assert rule_ids(_set_selector(template(api_version), expression)) == set()


@ALL_VERSIONS
def test_dra002_broken_missing_and_wrong_class(api_version: str) -> None:
    broken = _set_selector(template(api_version), "device.attributes['gpu.nvidia.com'].profile == ")
    (finding,) = findings(broken)
    assert finding.rule == "DRA002" and "not valid CEL" in finding.message
    missing = template(api_version)
    del request_body(missing)["selectors"]
    # Without selectors the request has no exclusivity guard either (DRA003, where it compiles).
    unguarded = set() if target_for(api_version) == LEGACY_TARGET else {"DRA003"}
    assert rule_ids(retag(missing)) == {"DRA002"} | unguarded
    # The standard's own example: a MIG profile selector on the full-GPU class never matches.
    wrong_class = template(api_version)
    request_body(wrong_class)["deviceClassName"] = "gpu.nvidia.com"
    (finding,) = findings(retag(wrong_class))
    assert finding.rule == "DRA002" and "mig.nvidia.com" in finding.message


def test_dra002_unknown_class_accepts_any_pin_and_config_classes_are_strict() -> None:
    obj = template()
    request_body(obj)["deviceClassName"] = "fpga.example.org"
    _set_selector(obj, "device.attributes['fpga.example.org'].bitstream == 'v2'")
    assert rule_ids(obj) == set()
    strict = config({"extra-classes": {"fpga.example.org": {"pin-attribute": "fpga.example.org/model"}}})
    assert rule_ids(obj, config=strict) == {"DRA002"}


def test_dra002_first_available_entries_are_each_checked() -> None:
    obj = template()
    body = request_body(obj)
    devices(obj)["requests"][0] = {
        "name": "slice",
        "firstAvailable": [
            {"name": "small", **copy.deepcopy(body)},
            {
                "name": "any",
                "deviceClassName": "mig.nvidia.com",
                "selectors": [{"cel": {"expression": EXCLUSIVITY_GUARD}}],
                "allocationMode": "ExactCount",
                "count": 1,
            },
        ],
    }
    (finding,) = findings(retag(obj))
    assert finding.rule == "DRA002" and "slice/any" in finding.message


def test_dra002_ignores_non_accelerator_classes() -> None:
    obj = template()
    del request_body(obj)["selectors"]
    retag(obj)
    assert rule_ids(obj, config=config({"non-accelerator-classes": ["mig.nvidia.com"]})) == set()


# --- pins in the class's own selectors --------------------------------------------------

_DEVICE_CLASSES = Path(__file__).parent.parent / "fixtures" / "deviceclasses"
PER_PROFILE = "mig-1g-12gb.gpu.nvidia.com"


def _per_profile_class() -> dict[str, Any]:
    """NVIDIA's demo class (demo/specs/extended-resources/mig-1g-12gb.yaml), without its mapping."""
    obj = yaml.safe_load((_DEVICE_CLASSES / f"{PER_PROFILE}.yaml").read_text(encoding="utf-8"))
    del obj["spec"]["extendedResourceName"]
    return dict(obj)


def _claim_on(device_class: str) -> dict[str, Any]:
    obj = template()
    request_body(obj)["deviceClassName"] = device_class
    # Only the builders' guard stays: the request itself pins nothing.
    request_body(obj)["selectors"] = [{"cel": {"expression": EXCLUSIVITY_GUARD}}]
    return retag(obj)


def dra002(*objects: dict[str, Any], **kwargs: Any) -> list[Finding]:
    return [finding for finding in findings(*objects, **kwargs) if finding.rule == "DRA002"]


def test_dra002_a_device_class_in_the_input_that_pins_the_profile_pins_its_requests() -> None:
    claim = _claim_on(PER_PROFILE)
    (alone,) = dra002(claim)
    assert not alone.cross_object  # without the class, the claim alone decides (as a policy would)
    assert dra002(claim, _per_profile_class()) == []
    assert dra002(_per_profile_class(), claim) == []  # before or after the claim


def test_dra002_a_device_class_that_selects_all_migs_pins_nothing() -> None:
    all_migs = _per_profile_class()
    all_migs["spec"]["selectors"][0]["cel"]["expression"] = (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"
    )
    (finding,) = dra002(_claim_on(PER_PROFILE), all_migs)
    # For a class dra-guard does not know, the driver's pin attributes count (profile, productName), not `type`.
    assert f"DeviceClass {PER_PROFILE} among the checked objects pins nothing either" in finding.message


def test_dra002_the_configuration_can_declare_the_class_and_its_selector() -> None:
    declared = config(
        {
            "extra-classes": {
                PER_PROFILE: {
                    "pin-attribute": "gpu.nvidia.com/profile",
                    "selector": "device.driver == 'gpu.nvidia.com' && "
                    "device.attributes['gpu.nvidia.com'].profile == '1g.12gb'",
                }
            }
        }
    )
    assert dra002(_claim_on(PER_PROFILE), config=declared) == []
    # A class object among the inputs never replaces what is configured (the admission
    # policies know the configured one too): the claim passes, the redefinition is reported.
    all_migs = _per_profile_class()
    all_migs["spec"]["selectors"][0]["cel"]["expression"] = "device.driver == 'gpu.nvidia.com'"
    (finding,) = dra002(_claim_on(PER_PROFILE), all_migs, config=declared)
    assert (finding.object.kind, finding.path) == ("DeviceClass", "/spec/selectors")
    assert "pins nothing, while the class the configuration knows by this name pins" in finding.message


@pytest.mark.parametrize("order", ["class first", "claim first"])
def test_dra002_a_redefined_catalog_class_pins_nothing_and_is_reported(order: str) -> None:
    """A tenant's gpu.nvidia.com with a pinning selector: RBAC refuses the class at apply,
    the template is created unpinned, so the template is reported (as the policy denies it)
    and so is the redefinition."""
    redefined = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {
            "selectors": [
                {
                    "cel": {
                        "expression": "device.driver == 'gpu.nvidia.com' && "
                        "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100'"
                    }
                }
            ]
        },
    }
    claim = _claim_on("gpu.nvidia.com")
    objects = [redefined, claim] if order == "class first" else [claim, redefined]
    found = {(finding.object.kind, finding.cross_object): finding for finding in dra002(*objects)}
    assert set(found) == {("DeviceClass", False), ("ResourceClaimTemplate", False)}
    assert "redefines a class dra-guard knows from the catalog" in found["DeviceClass", False].message
    assert "productName == 'NVIDIA A100'" in found["DeviceClass", False].message
    # The driver's own class, as its chart installs it, is no redefinition.
    driver_class = yaml.safe_load((_DEVICE_CLASSES / "gpu.nvidia.com.yaml").read_text(encoding="utf-8"))
    assert dra002(driver_class) == []


def test_dra002_a_front_end_that_sees_one_object_cannot_see_the_class() -> None:
    report = check_objects([_claim_on(PER_PROFILE), _per_profile_class()], complete=False)
    assert [finding.rule for finding in report.findings if finding.rule == "DRA002"] == ["DRA002"]


def test_dra002_catalog_classes_pin_nothing_of_their_own() -> None:
    assert [f.rule for f in dra002(_claim_on("mig.nvidia.com"))] == ["DRA002"]


def test_dra002_a_profile_on_whole_gpus_aborts_allocation() -> None:
    obj = template()
    request_body(obj)["deviceClassName"] = "gpu.nvidia.com"
    _set_selector(obj, "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'")
    (finding,) = dra002(obj)
    assert "evaluation error and allocation aborts" in finding.message
