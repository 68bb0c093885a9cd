"""The canonical document is written piece by piece, the devices once for both of a
template's tags: the same bytes and verdicts as encoding the whole document (issue 25, point 5)."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dra_guard.contract.catalog import ISOLATION_TAG_ANNOTATION, SANITIZATION_ANNOTATION, TENANT_ANNOTATION
from dra_guard.contract.tags import (
    TagCheck,
    canonical_bytes,
    claim_of_template,
    normalise_numbers,
    verify_claim_isolation_tag,
    verify_isolation_tag,
)

_SCALARS = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=6)
_VALUES = st.recursive(
    _SCALARS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=15,
)


def _whole_document(obj: dict[str, Any], named: bool) -> bytes:
    """The canonical bytes as the whole document encoded at once (how they were computed)."""
    metadata = obj.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    spec = obj.get("spec") or {}
    devices = (
        (spec.get("spec") or {}).get("devices", {})
        if obj["kind"] == "ResourceClaimTemplate"
        else spec.get("devices", {})
    )
    doc = {
        "kind": obj.get("kind"),
        "namespace": metadata.get("namespace") or "",
        "name": metadata.get("name") if named else None,
        "devices": normalise_numbers(devices),
        "sanitization": annotations.get(SANITIZATION_ANNOTATION) or "",
        "tenant": annotations.get(TENANT_ANNOTATION) or "",
    }
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


@st.composite
def _objects(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["ResourceClaimTemplate", "ResourceClaim"]))
    annotations = {SANITIZATION_ANNOTATION: draw(_SCALARS), TENANT_ANNOTATION: draw(st.text(max_size=4) | st.none())}
    metadata = {"name": draw(_SCALARS), "namespace": draw(st.text(max_size=5)), "annotations": annotations}
    devices = draw(st.dictionaries(st.text(max_size=5), _VALUES, max_size=3))
    spec: dict[str, Any] = {"devices": devices}
    if kind == "ResourceClaimTemplate":
        claim_annotations = {SANITIZATION_ANNOTATION: draw(st.text(max_size=4)), TENANT_ANNOTATION: "t"}
        spec = {"metadata": {"annotations": claim_annotations}, "spec": spec}
    return {"apiVersion": "resource.k8s.io/v1", "kind": kind, "metadata": metadata, "spec": spec}


@settings(max_examples=300, deadline=None)
@given(_objects(), st.booleans())
def test_the_document_written_piece_by_piece_is_the_whole_document(obj: dict[str, Any], named: bool) -> None:
    assert canonical_bytes(obj, named=named) == _whole_document(obj, named)


@settings(max_examples=200, deadline=None)
@given(_objects(), st.sampled_from([None, "key"]))
def test_both_tags_verify_as_each_alone(obj: dict[str, Any], key: str | None) -> None:
    """Tagged as the whole documents say, each tag verifies; edited, neither does."""
    import hmac

    def tag(data: bytes) -> str:
        if key is None:
            return "sha256:" + hashlib.sha256(data).hexdigest()
        return "hmac-sha256:" + hmac.new(key.encode(), data, hashlib.sha256).hexdigest()

    obj["metadata"]["annotations"][ISOLATION_TAG_ANNOTATION] = tag(_whole_document(obj, True))
    if obj["kind"] == "ResourceClaimTemplate":
        claim_tag = tag(_whole_document(claim_of_template(obj), False))
        obj["spec"]["metadata"]["annotations"][ISOLATION_TAG_ANNOTATION] = claim_tag
    for candidate in (obj, _edited(obj)):
        tags = TagCheck(candidate, key)
        assert tags.own() == verify_isolation_tag(candidate, key) == (candidate is obj)
        if obj["kind"] == "ResourceClaimTemplate":
            assert tags.claim() == verify_claim_isolation_tag(candidate, key) == (candidate is obj)


def _edited(obj: dict[str, Any]) -> dict[str, Any]:
    edited = copy.deepcopy(obj)
    spec = edited["spec"]["spec"] if edited["kind"] == "ResourceClaimTemplate" else edited["spec"]
    spec["devices"] = {"edited by the test": True}  # no generated key is that long
    return edited
