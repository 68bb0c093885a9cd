"""The emitted CEL selectors really pin: evaluated with cel-python against devices."""

from __future__ import annotations

from typing import Any

import celpy
import pytest

from dra_guard import AcceleratorSlice, claim_template, selector_expression
from dra_guard.contract.catalog import DEVICE_CLASSES, RESOURCE_API_VERSIONS
from testkit.targets import runtime_config_for, target_for
from tests.slices import VENDOR_SLICES

_ENV = celpy.Environment()


def _matches(expression: str, device: dict[str, Any]) -> bool:
    program = _ENV.program(_ENV.compile(expression))
    return bool(program.evaluate({"device": celpy.json_to_cel(device)}))


def _device(
    accelerator: AcceleratorSlice, value: str, driver: str | None = None, *, shareable: bool = False
) -> dict[str, Any]:
    domain = accelerator.domain
    attributes: dict[str, Any] = {accelerator.attribute: value, "type": "x"}
    known = DEVICE_CLASSES.get(accelerator.device_class)
    if known is not None and known.whole_host_attribute is not None:
        attributes[known.whole_host_attribute] = accelerator.count  # a host of exactly that many (DRA017)
    return {
        "driver": driver or domain,
        "allowMultipleAllocations": shareable,
        "attributes": {domain: attributes},
    }


def _expressions(template: dict[str, Any]) -> list[str]:
    request = template["spec"]["spec"]["devices"]["requests"][0]
    body = request.get("exactly", request)
    return [selector["cel"]["expression"] for selector in body["selectors"]]


@pytest.mark.parametrize("api_version", RESOURCE_API_VERSIONS)
@pytest.mark.parametrize(("slice_id", "accelerator", "pinned", "other"), VENDOR_SLICES)
def test_emitted_selector_matches_only_the_pinned_profile(
    api_version: str, slice_id: str, accelerator: AcceleratorSlice, pinned: str, other: str
) -> None:
    # On the release each version is served by; the guard (1.36+) is judged below.
    template = claim_template(
        name="t",
        slice=accelerator,
        namespace="ns",
        api_version=api_version,
        kubernetes_version=target_for(api_version),
        runtime_config=runtime_config_for(api_version),
    )
    (expression,) = _expressions(template)
    assert _matches(expression, _device(accelerator, pinned))
    assert not _matches(expression, _device(accelerator, other))
    # Same attribute value published by some other driver must not match either.
    assert not _matches(expression, _device(accelerator, pinned, driver="gpu.example.com"))


@pytest.mark.parametrize(("slice_id", "accelerator", "pinned", "other"), VENDOR_SLICES)
def test_the_exclusivity_guard_refuses_shareable_devices(
    slice_id: str, accelerator: AcceleratorSlice, pinned: str, other: str
) -> None:
    (expression,) = _expressions(claim_template(name="t", slice=accelerator, namespace="ns", kubernetes_version="1.36"))
    assert expression.endswith(" && device.allowMultipleAllocations == false")
    assert _matches(expression, _device(accelerator, pinned))
    assert not _matches(expression, _device(accelerator, pinned, shareable=True))


@pytest.mark.parametrize("awkward", ["it's", "back\\slash", "quote' || true || '", "naïve GPU"])
def test_pin_values_with_quotes_cannot_escape_the_literal(awkward: str) -> None:
    # A class the catalog does not know, so no value grammar stands between the value and CEL.
    accelerator = AcceleratorSlice("fpga.example.org", "fpga.example.org/model", awkward)
    expression = selector_expression(accelerator)
    assert _matches(expression, _device(accelerator, awkward))
    assert not _matches(expression, _device(accelerator, "anything-else"))


def test_a_selector_longer_than_the_api_server_accepts_is_not_parsed() -> None:
    """k8s.io/api's CELSelectorExpressionMaxLength (10 KiB): past it the API server refuses
    the object, and cel-python would take seconds and hundreds of MiB (a webhook review of
    100 KB of `[0]` took the process past its memory limit)."""
    import time

    from dra_guard.model.selectors import CEL_SELECTOR_MAX_LENGTH, analyse

    chain = "device.attributes['x'].a" + "[0]" * 34_000
    started = time.perf_counter()
    analysis = analyse(chain)
    assert time.perf_counter() - started < 0.05
    assert analysis.error == "102,024 bytes, longer than the API server accepts (10,240)" and analysis.pins == ()
    at_the_limit = "device.attributes['x'].a == '" + "é" * ((CEL_SELECTOR_MAX_LENGTH - 30) // 2) + "'"
    assert len(at_the_limit.encode()) <= CEL_SELECTOR_MAX_LENGTH and analyse(at_the_limit).error is None
    assert "bytes, longer than" in (analyse(at_the_limit + " && true" * 4).error or "")  # bytes, not characters
