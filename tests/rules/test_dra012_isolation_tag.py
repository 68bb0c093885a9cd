"""DRA012 `isolation-tag`: cases beyond its EXAMPLES, across resource.k8s.io versions."""

from __future__ import annotations

from typing import Any

from testkit.rulecases import (
    ALL_VERSIONS,
    CLAIM_MAKERS,
    config,
    findings,
    request_body,
    rule_ids,
    template,
)


@ALL_VERSIONS
@CLAIM_MAKERS
def test_dra012_tags(api_version: str, make: Any) -> None:
    obj = make(api_version)
    request_body(obj)["count"] = 1.0  # as Pulumi delivers numbers
    assert rule_ids(obj) == set()
    obj["metadata"]["namespace"] = "elsewhere"
    # A template's claim tag binds the namespace too: both tags break.
    moved = findings(obj)
    assert len(moved) == (2 if obj["kind"] == "ResourceClaimTemplate" else 1)
    assert all(finding.rule == "DRA012" and "edited" in finding.message for finding in moved)
    obj["metadata"]["annotations"]["dra-guard.io/isolation-tag"] = "sha256:xyz"
    assert "malformed" in findings(obj)[0].message
    del obj["metadata"]["annotations"]["dra-guard.io/isolation-tag"]
    assert rule_ids(obj) == {"DRA012"}


def test_dra012_with_a_key_requires_hmac() -> None:
    keyed = config({"hmac-key-env": "KEY"}, environ={"KEY": "k"})
    assert rule_ids(template(), config=keyed) == {"DRA012"}
    assert rule_ids(template(hmac_key="k"), config=keyed) == set()
    assert rule_ids(template(hmac_key="other"), config=keyed) == {"DRA012"}
