"""DRA017 `tpu-host-split`: cases beyond its EXAMPLES -- the builders' TPU claims take whole
hosts, in every resource.k8s.io version; part of a host is reported whatever the selector's spelling."""

from __future__ import annotations

from typing import Any

import pytest

from dra_guard import AcceleratorSlice
from testkit.rulecases import CLAIM_MAKERS, request_body, retag, rule_ids, template

VERSIONS = pytest.mark.parametrize(
    "api_version",
    ["resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1", "resource.k8s.io/v1alpha3"],
)


@VERSIONS
@pytest.mark.parametrize("count", [1, 4, 8])
def test_the_builders_tpu_claim_takes_the_whole_host(api_version: str, count: int) -> None:
    obj = template(api_version, AcceleratorSlice.google_tpu("v6e", count=count))
    (selector,) = request_body(obj)["selectors"]
    assert f"device.attributes['tpu.google.com'].chipCount == {count}" in selector["cel"]["expression"]
    assert "DRA017" not in rule_ids(obj)


def _with_expression(make: Any, expression: str, **body: Any) -> dict[str, Any]:
    obj = make("resource.k8s.io/v1", AcceleratorSlice.google_tpu("v6e", count=4))
    request_body(obj)["selectors"] = [{"cel": {"expression": expression}}]
    request_body(obj).update(body)
    return retag(obj)


PIN = "device.attributes['tpu.google.com'].tpuGen == 'v6e'"


@CLAIM_MAKERS
@pytest.mark.parametrize(
    ("expression", "body", "split"),
    [
        (PIN, {}, True),
        (f"{PIN} && device.attributes['tpu.google.com'].chipCount == 4", {}, False),
        (f'4 == device.attributes["tpu.google.com"]["chipCount"] && {PIN}', {}, False),
        (f"{PIN} && (device.attributes['tpu.google.com'].chipCount == 4)", {}, False),
        (f"{PIN} && device.attributes['tpu.google.com'].chipCount == 40", {}, True),
        (f"{PIN} && device.attributes['tpu.google.com'].chipCount >= 4", {}, True),
        (f"{PIN} || device.attributes['tpu.google.com'].chipCount == 4", {}, True),
        (f"{PIN} && device.attributes['tpu.google.com'].chipCount == 4", {"count": 2}, True),
        (PIN, {"allocationMode": "All", "count": None}, False),
    ],
)
def test_part_of_a_host_is_reported(make: Any, expression: str, body: dict[str, Any], split: bool) -> None:
    obj = _with_expression(make, expression, **{k: v for k, v in body.items() if v is not None})
    if body.get("count", 0) is None:
        request_body(obj).pop("count", None)
        retag(obj)
    assert ("DRA017" in rule_ids(obj)) is split


def test_other_classes_may_split_a_host() -> None:
    assert "DRA017" not in rule_ids(template())
