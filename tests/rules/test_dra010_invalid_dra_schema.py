"""DRA010 `invalid-dra-schema`: cases beyond its EXAMPLES, across resource.k8s.io versions."""

from __future__ import annotations

from typing import Any

import pytest

from testkit.rulecases import (
    ALL_VERSIONS,
    CLAIM_MAKERS,
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
