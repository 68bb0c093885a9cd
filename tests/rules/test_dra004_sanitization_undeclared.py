"""DRA004 `sanitization-undeclared`: cases beyond its EXAMPLES, across resource.k8s.io versions."""

from __future__ import annotations

from typing import Any

import pytest

from dra_guard import AcceleratorSlice
from testkit.rulecases import (
    ALL_VERSIONS,
    CLAIM_MAKERS,
    findings,
    retag,
    rule_ids,
    template,
)


@ALL_VERSIONS
@CLAIM_MAKERS
@pytest.mark.parametrize("value", [None, "", "Wipe", "wipeondeallocate"])
def test_dra004_sanitization(api_version: str, make: Any, value: str | None) -> None:
    obj = make(api_version)
    # A template declares it twice: for itself and, in spec.metadata, for its claims.
    places = [obj["metadata"]] + ([obj["spec"]["metadata"]] if obj["kind"] == "ResourceClaimTemplate" else [])
    for place in places:
        annotations = place["annotations"]
        if value is None:
            del annotations["dra-guard.io/sanitization"]
        else:
            annotations["dra-guard.io/sanitization"] = value
    # The tag covers the sanitization value, so DRA012 fires too unless re-tagged.
    assert rule_ids(retag(obj)) == {"DRA004"}
    assert len(findings(obj)) == len(places)
    assert rule_ids(make(api_version, AcceleratorSlice.nvidia_mig("2g.20gb"))) == set()


@ALL_VERSIONS
def test_dra004_a_template_whose_claims_carry_no_policy(api_version: str) -> None:
    """The claims kube-controller-manager makes carry only spec.metadata: a policy on the
    template alone reaches no claim."""
    obj = template(api_version)
    del obj["spec"]["metadata"]
    (finding,) = [finding for finding in findings(obj) if finding.rule == "DRA004"]
    assert finding.path == "/spec/metadata" and "all the claims made from it carry" in finding.message
