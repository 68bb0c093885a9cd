"""DRA008 `nondeterministic-allocation`: cases beyond its EXAMPLES, across resource.k8s.io versions."""

from __future__ import annotations

from typing import Any

from dra_guard.contract.findings import Severity
from testkit.rulecases import (
    ALL_VERSIONS,
    CLAIM_MAKERS,
    findings,
    request_body,
    retag,
)


@ALL_VERSIONS
@CLAIM_MAKERS
def test_dra008_allocation(api_version: str, make: Any) -> None:
    obj = make(api_version)
    request_body(obj)["allocationMode"] = "All"
    del request_body(obj)["count"]
    (finding,) = [f for f in findings(retag(obj)) if f.rule == "DRA008"]
    assert finding.severity == Severity.HIGH
    obj = make(api_version)
    del request_body(obj)["count"]
    (finding,) = findings(retag(obj))
    assert (finding.rule, finding.severity) == ("DRA008", Severity.MEDIUM)
    assert "count" in finding.message
