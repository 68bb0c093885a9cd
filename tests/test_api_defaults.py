"""Rules judge DRA requests as the API server stores them (README, "Checking manifests").

The API server defaults an absent or null `allocationMode` to ExactCount and an absent,
null or 0 `count` of an ExactCount request to 1 (kubernetes `pkg/apis/resource/<version>/
defaults.go`); an empty or null `firstAvailable` and a null `exactly` are unset.  Each such
form must give exactly the findings of its explicit form, and a value the API server
refuses must be a finding of its own, never a way around the other rules.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import pytest

from dra_guard.contract.catalog import (
    ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION,
    EXCLUSIVITY_GUARD,
    FLAT_REQUEST_API_VERSIONS,
)
from dra_guard.contract.findings import Finding, Severity
from testkit.rulecases import ALL_VERSIONS, CLAIM_MAKERS, claim, devices, findings, request_body, retag

WRAPPED_VERSIONS = pytest.mark.parametrize("api_version", ["resource.k8s.io/v1", "resource.k8s.io/v1beta2"])
FLAT_VERSIONS = pytest.mark.parametrize("api_version", sorted(FLAT_REQUEST_API_VERSIONS))


def judged(obj: dict[str, Any]) -> list[tuple[str, str, Severity, str]]:
    return [(f.rule, f.path, f.severity, f.message) for f in findings(retag(obj))]


def unguarded(make: Any, api_version: str) -> dict[str, Any]:
    """A claim whose exclusivity is neither declared nor guarded in its selector, so that
    DRA003 depends on the mode (it asks ExactCount requests for the guard)."""
    obj = make(api_version)
    del obj["metadata"]["annotations"][ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION]
    for selector in request_body(obj)["selectors"]:
        expression = selector["cel"]["expression"]
        selector["cel"]["expression"] = expression.replace(f" && {EXCLUSIVITY_GUARD}", "")
    return obj


def with_request(obj: dict[str, Any], **fields: Any) -> dict[str, Any]:
    body = request_body(obj)
    for key, value in fields.items():
        if value is _ABSENT:
            body.pop(key, None)
        else:
            body[key] = value
    return obj


_ABSENT = object()


@ALL_VERSIONS
@CLAIM_MAKERS
@pytest.mark.parametrize("written", [_ABSENT, None, ""], ids=["absent", "null", "empty"])
def test_an_unset_allocation_mode_is_exact_count(api_version: str, make: Any, written: object) -> None:
    explicit = judged(with_request(unguarded(make, api_version), allocationMode="ExactCount"))
    unset = judged(with_request(unguarded(make, api_version), allocationMode=written))
    assert [f for f in unset if f[0] != "DRA008"] == explicit
    assert {f[0] for f in explicit} == {"DRA003"}
    # Explicitness is about what was written: the unset mode is reported, at medium.
    (implicit,) = [f for f in unset if f[0] == "DRA008"]
    assert implicit[2] == Severity.MEDIUM and "allocationMode" in implicit[3]


@ALL_VERSIONS
@CLAIM_MAKERS
@pytest.mark.parametrize("written", [_ABSENT, None, 0], ids=["absent", "null", "zero"])
def test_an_unset_count_is_one(api_version: str, make: Any, written: object) -> None:
    absent = judged(with_request(make(api_version), count=_ABSENT))
    assert judged(with_request(make(api_version), count=written)) == [
        (rule, path, severity, message + (" (count: 0 is stored as the default, 1)" if written == 0 else ""))
        for rule, path, severity, message in absent
    ]
    assert [f[0] for f in absent] == ["DRA008"]
    assert judged(with_request(make(api_version), count=1)) == []


@ALL_VERSIONS
@CLAIM_MAKERS
def test_two_devices_written_as_a_float_are_two_devices(api_version: str, make: Any) -> None:
    """Pulumi delivers numbers as floats; kubectl writes `2.0` as the JSON integer 2."""
    as_int = judged(with_request(make(api_version), count=2))
    assert as_int == judged(with_request(make(api_version), count=2.0))
    assert {f[0] for f in as_int} == {"DRA011"}


@FLAT_VERSIONS
@CLAIM_MAKERS
@pytest.mark.parametrize("written", [[], None], ids=["empty", "null"])
def test_an_empty_first_available_keeps_the_flat_request(api_version: str, make: Any, written: object) -> None:
    def admin(obj: dict[str, Any]) -> dict[str, Any]:
        return with_request(obj, adminAccess=True)

    without = judged(admin(make(api_version)))
    assert [f[0] for f in without] == ["DRA006"]
    assert judged(admin(with_request(make(api_version), firstAvailable=written))) == without


@WRAPPED_VERSIONS
@CLAIM_MAKERS
def test_a_null_exactly_next_to_first_available_is_unset(api_version: str, make: Any) -> None:
    def alternatives(obj: dict[str, Any], exactly: object) -> dict[str, Any]:
        request = devices(obj)["requests"][0]
        body = request.pop("exactly")
        request["firstAvailable"] = [{"name": "big", **body, "count": 2}, {"name": "small", **body}]
        if exactly is not _ABSENT:
            request["exactly"] = exactly
        return obj

    without = judged(alternatives(make(api_version), _ABSENT))
    # The subrequests are analysed (up to two devices, unaligned), not a phantom request
    # (which would name no device class).
    assert [(f[0], f[1].rsplit("/", 1)[-1]) for f in without] == [("DRA011", "devices")]
    assert judged(alternatives(make(api_version), None)) == without


REFUSED_COUNTS = [
    pytest.param(float("nan"), id="nan"),
    pytest.param(float("inf"), id="inf"),
    pytest.param(-float("inf"), id="minus-inf"),
    pytest.param(1.5, id="fraction"),
    pytest.param("2", id="string"),
    pytest.param(True, id="boolean"),
    pytest.param(10**5000, id="5000-digits"),
    pytest.param(2**63, id="beyond-int64"),
    pytest.param(-1, id="negative"),
]


@ALL_VERSIONS
@CLAIM_MAKERS
@pytest.mark.parametrize("count", REFUSED_COUNTS)
def test_a_count_the_api_server_refuses(api_version: str, make: Any, count: object) -> None:
    obj = with_request(unguarded(make, api_version), count=count)
    with contextlib.suppress(ValueError):  # no JSON for 5,000 digits, so no tag: DRA012 says so
        retag(obj)
    result = findings(obj)
    by_rule = {f.rule: f for f in result}
    # DRA011 too: a count nobody can read may be several devices.
    assert set(by_rule) - {"DRA011", "DRA012"} == {"DRA010", "DRA003", "DRA008"}, result
    assert by_rule["DRA010"].path.endswith("/count") and by_rule["DRA008"].path.endswith("/count")
    assert all(len(f.message) < 300 for f in result)


@ALL_VERSIONS
@CLAIM_MAKERS
@pytest.mark.parametrize("mode", ["Exact", "exactcount", "ALL", 3, ["All"]])
def test_an_allocation_mode_the_api_server_refuses(api_version: str, make: Any, mode: object) -> None:
    obj = with_request(unguarded(make, api_version), allocationMode=mode)
    by_rule = {f.rule: f for f in findings(retag(obj))}
    assert set(by_rule) - {"DRA011"} == {"DRA010", "DRA003", "DRA008"}
    assert by_rule["DRA010"].path.endswith("/allocationMode") and by_rule["DRA008"].path.endswith("/allocationMode")


@ALL_VERSIONS
@CLAIM_MAKERS
def test_a_count_with_allocation_mode_all(api_version: str, make: Any) -> None:
    obj = with_request(make(api_version), allocationMode="All", count=2)
    assert {(f.rule, f.path.rsplit("/", 1)[-1]) for f in findings(retag(obj))} == {
        ("DRA010", "count"),
        ("DRA008", "allocationMode"),
        ("DRA011", "devices"),
    }
    # count 0 is the unset int64: allowed with All.
    obj = with_request(make(api_version), allocationMode="All", count=0)
    assert {f.rule for f in findings(retag(obj))} == {"DRA008", "DRA011"}


@ALL_VERSIONS
def test_admin_access_must_be_a_boolean(api_version: str) -> None:
    obj = with_request(claim(api_version), adminAccess="true")
    (finding,) = findings(retag(obj))
    assert finding.rule == "DRA010" and finding.path.endswith("/adminAccess")


@WRAPPED_VERSIONS
def test_exactly_and_first_available_together(api_version: str) -> None:
    obj = claim(api_version)
    request = devices(obj)["requests"][0]
    request["firstAvailable"] = [{"name": "alt", **copy.deepcopy(request["exactly"])}]
    result: list[Finding] = findings(retag(obj))
    assert [(f.rule, f.path) for f in result] == [("DRA010", "/spec/devices/requests/0")]
