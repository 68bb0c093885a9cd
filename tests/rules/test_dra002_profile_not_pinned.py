"""DRA002 `profile-not-pinned`: cases beyond its EXAMPLES, across resource.k8s.io versions."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dra_guard.catalog import EXCLUSIVITY_GUARD
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
