"""DRA003 `exclusivity-undeclared`: cases beyond its EXAMPLES, across resource.k8s.io versions
and Kubernetes releases."""

from __future__ import annotations

from typing import Any

import pytest

from dra_guard.contract.catalog import EXCLUSIVITY_GUARD, KUBERNETES_VERSIONS
from testkit.rulecases import (
    ALL_VERSIONS,
    CLAIM_MAKERS,
    LEGACY_TARGET,
    config,
    findings,
    request_body,
    retag,
    rule_ids,
    target_for,
    template,
)

ANNOTATION = "dra-guard.io/allow-multiple-allocations"


def _drop_guard(obj: dict[str, Any]) -> dict[str, Any]:
    for selector in request_body(obj)["selectors"]:
        selector["cel"]["expression"] = selector["cel"]["expression"].replace(f" && {EXCLUSIVITY_GUARD}", "")
    return retag(obj)


@ALL_VERSIONS
@CLAIM_MAKERS
@pytest.mark.parametrize("value", ["true", "False"])
def test_dra003_an_annotation_that_allows_sharing(api_version: str, make: Any, value: str) -> None:
    obj = make(api_version)
    obj["metadata"]["annotations"][ANNOTATION] = value
    assert rule_ids(obj) == {"DRA003"}


@ALL_VERSIONS
@CLAIM_MAKERS
def test_dra003_the_guard_is_the_enforced_form_where_it_compiles(api_version: str, make: Any) -> None:
    obj = make(api_version)
    del obj["metadata"]["annotations"][ANNOTATION]
    if target_for(api_version) == LEGACY_TARGET:  # 1.33: only the annotation can say it
        (finding,) = findings(obj)
        assert finding.rule == "DRA003" and finding.path == "/metadata"
        return
    assert rule_ids(obj) == set()  # the guard alone keeps the device exclusive
    (finding,) = findings(_drop_guard(obj))
    assert finding.rule == "DRA003" and finding.path.endswith("/selectors")
    assert "nothing keeps it exclusive" in finding.message


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_dra003_annotation_alone_is_a_finding_only_where_the_guard_compiles(version: str) -> None:
    api_version = "resource.k8s.io/v1beta1"
    annotated_only = _drop_guard(template(api_version, kubernetes_version=version))
    found = findings(annotated_only, config=config({"kubernetes-version": version}))
    if version in ("1.36", "1.37"):
        (finding,) = found
        assert finding.rule == "DRA003" and "the annotation alone enforces nothing" in finding.message
        assert f"Kubernetes {version} with DRAConsumableCapacity on" in finding.message
    else:
        assert found == []


def test_dra003_a_cluster_that_turns_the_gate_on_needs_the_guard() -> None:
    on = config({"kubernetes-version": "1.35", "consumable-capacity": True})
    guarded = template(kubernetes_version="1.35", consumable_capacity=True)
    assert EXCLUSIVITY_GUARD in str(request_body(guarded)["selectors"])
    assert rule_ids(guarded, config=on) == set()
    assert rule_ids(_drop_guard(guarded), config=on) == {"DRA003"}
    off = config({"kubernetes-version": "1.37", "consumable-capacity": False})
    unguarded = template(kubernetes_version="1.37", consumable_capacity=False)
    assert EXCLUSIVITY_GUARD not in str(request_body(unguarded)["selectors"])
    assert rule_ids(unguarded, config=off) == set()


@ALL_VERSIONS
@CLAIM_MAKERS
def test_dra003_a_share_of_a_device_is_not_exclusive(api_version: str, make: Any) -> None:
    obj = make(api_version)
    request_body(obj)["capacity"] = {"requests": {"memory": "10Gi"}}
    found = findings(retag(obj))
    (sharing,) = [finding for finding in found if finding.rule == "DRA003"]
    assert sharing.path.endswith("/capacity/requests") and "other claims at the same time" in sharing.message
    # 1.33, where v1alpha3 is served, has no capacity field yet: DRA010 says so too.
    assert {finding.rule for finding in found} == {"DRA003"} | (
        {"DRA010"} if api_version.endswith("v1alpha3") else set()
    )
