"""The isolation tag (README, "Isolation tag"): known vectors, HMAC, float counts and tamper detection."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dra_guard import AcceleratorSlice, claim_template, isolation_tag, verify_isolation_tag
from dra_guard.contract.tags import canonical_bytes, normalise_numbers

TAG = "dra-guard.io/isolation-tag"

# A claim template written out by hand, so the vector does not depend on our builders.
KNOWN_TEMPLATE: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {
        "name": "mig-slice",
        "namespace": "tenant-a",
        "annotations": {
            "dra-guard.io/sanitization": "WipeOnDeallocate",
            "dra-guard.io/tenant": "tenant-a",
            "dra-guard.io/allow-multiple-allocations": "false",
        },
    },
    "spec": {
        "spec": {"devices": {"requests": [{"name": "s", "exactly": {"deviceClassName": "mig.nvidia.com", "count": 1}}]}}
    },
}
KNOWN_CANONICAL = (
    '{"devices":{"requests":[{"exactly":{"count":1,"deviceClassName":"mig.nvidia.com"},"name":"s"}]},'
    '"kind":"ResourceClaimTemplate","name":"mig-slice","namespace":"tenant-a",'
    '"sanitization":"WipeOnDeallocate","tenant":"tenant-a"}'
)
KNOWN_SHA256 = "sha256:c19e4eebc487e0e5555fd7e7730eb72dab739ee936822911b2a80223c5e7d8f5"


def test_canonical_form_is_the_documented_json() -> None:
    assert canonical_bytes(KNOWN_TEMPLATE) == KNOWN_CANONICAL.encode()


def test_known_sha256_vector() -> None:
    expected = "sha256:" + hashlib.sha256(KNOWN_CANONICAL.encode()).hexdigest()
    assert isolation_tag(KNOWN_TEMPLATE) == expected == KNOWN_SHA256


def test_known_hmac_vector() -> None:
    expected = "hmac-sha256:" + hmac.new(b"s3cret", KNOWN_CANONICAL.encode(), hashlib.sha256).hexdigest()
    assert isolation_tag(KNOWN_TEMPLATE, key="s3cret") == expected
    assert isolation_tag(KNOWN_TEMPLATE, key=b"s3cret") == expected


def test_claim_uses_spec_devices() -> None:
    claim = {
        "kind": "ResourceClaim",
        "metadata": {
            "name": "mig-slice",
            "namespace": "tenant-a",
            "annotations": KNOWN_TEMPLATE["metadata"]["annotations"],
        },
        "spec": KNOWN_TEMPLATE["spec"]["spec"],
    }
    assert canonical_bytes(claim) == KNOWN_CANONICAL.replace("ResourceClaimTemplate", "ResourceClaim").encode()


def test_other_kinds_are_refused() -> None:
    with pytest.raises(ValueError, match="Deployment"):
        isolation_tag({"kind": "Deployment"})


@pytest.fixture
def tagged() -> dict[str, Any]:
    return claim_template(
        name="t", slice=AcceleratorSlice.nvidia_mig("1g.10gb", 2), namespace="tenant-a", tenant="tenant-a"
    )


def test_builder_tags_verify(tagged: dict[str, Any]) -> None:
    assert tagged["metadata"]["annotations"][TAG].startswith("sha256:")
    assert verify_isolation_tag(tagged)


def test_float_counts_as_pulumi_delivers_them_still_verify(tagged: dict[str, Any]) -> None:
    floated = copy.deepcopy(tagged)
    floated["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2.0
    assert verify_isolation_tag(floated)
    assert isolation_tag(floated) == isolation_tag(tagged)
    floated["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2.5
    assert not verify_isolation_tag(floated)


def _edit_profile(obj: dict[str, Any]) -> None:
    selector = obj["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"]
    selector["expression"] = selector["expression"].replace("1g.10gb", "7g.80gb")


def _edit_count(obj: dict[str, Any]) -> None:
    obj["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 1


def _edit_namespace(obj: dict[str, Any]) -> None:
    obj["metadata"]["namespace"] = "tenant-b"


def _edit_sanitization(obj: dict[str, Any]) -> None:
    obj["metadata"]["annotations"]["dra-guard.io/sanitization"] = "ZeroFillMemoryOnRelease"


def _edit_tenant(obj: dict[str, Any]) -> None:
    obj["metadata"]["annotations"]["dra-guard.io/tenant"] = "tenant-b"


def _drop_constraint(obj: dict[str, Any]) -> None:
    del obj["spec"]["spec"]["devices"]["constraints"]


@pytest.mark.parametrize(
    "edit", [_edit_profile, _edit_count, _edit_namespace, _edit_sanitization, _edit_tenant, _drop_constraint]
)
def test_edits_without_retagging_are_detected(tagged: dict[str, Any], edit: Any) -> None:
    edited = copy.deepcopy(tagged)
    edit(edited)
    assert not verify_isolation_tag(edited)


def test_hmac_tag_requires_the_key() -> None:
    accelerator = AcceleratorSlice.nvidia_mig("1g.10gb")
    signed = claim_template(name="t", slice=accelerator, namespace="n", hmac_key="k1")
    assert signed["metadata"]["annotations"][TAG].startswith("hmac-sha256:")
    assert verify_isolation_tag(signed, key="k1")
    assert not verify_isolation_tag(signed, key="k2")
    assert not verify_isolation_tag(signed)
    # With a key in force, a plain digest (which anyone can recompute) is not accepted.
    unsigned = claim_template(name="t", slice=accelerator, namespace="n")
    assert not verify_isolation_tag(unsigned, key="k1")


@pytest.mark.parametrize("bad", [None, 42, "sha256:", "md5:abc", ""])
def test_missing_or_malformed_tags_do_not_verify(tagged: dict[str, Any], bad: Any) -> None:
    broken = json.loads(json.dumps(tagged))
    if bad is None:
        del broken["metadata"]["annotations"][TAG]
    else:
        broken["metadata"]["annotations"][TAG] = bad
    assert not verify_isolation_tag(broken)


@pytest.mark.parametrize("junk", [{}, {"kind": "ResourceClaim", "metadata": "x", "spec": 3}, {"kind": "Pod"}])
def test_verify_never_raises_on_junk(junk: dict[str, Any]) -> None:
    assert not verify_isolation_tag(junk)


_JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text()
)
_JSON_VALUES = st.recursive(
    _JSON_SCALARS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=8,
)


_OBJECTS = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["ResourceClaim", "ResourceClaimTemplate"]),
        "name": _JSON_VALUES,
        "namespace": _JSON_VALUES,
        "sanitization": _JSON_VALUES,
        "tenant": _JSON_VALUES,
        "devices": _JSON_VALUES,
    }
)


@settings(max_examples=200, deadline=None)
@given(parts=_OBJECTS, named=st.booleans())
def test_the_canonical_form_is_what_one_encoder_writes(parts: dict[str, Any], named: bool) -> None:
    """The canonical form is written from its parts (the devices encoded once for both of an
    object's tags); it must be byte for byte what one encoder writes for the whole mapping,
    whatever the values (strings with quotes, escapes and non-ASCII, numbers, null, nesting)."""
    annotations = {"dra-guard.io/sanitization": parts["sanitization"], "dra-guard.io/tenant": parts["tenant"]}
    spec = {"devices": parts["devices"]}
    obj = {
        "kind": parts["kind"],
        "metadata": {"name": parts["name"], "namespace": parts["namespace"], "annotations": annotations},
        "spec": {"spec": spec} if parts["kind"] == "ResourceClaimTemplate" else spec,
    }
    whole = {
        "kind": parts["kind"],
        "namespace": parts["namespace"] or "",
        "name": parts["name"] if named else None,
        "devices": normalise_numbers(parts["devices"]),
        "sanitization": parts["sanitization"] or "",
        "tenant": parts["tenant"] or "",
    }
    expected = json.dumps(whole, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert canonical_bytes(obj, named=named) == expected
