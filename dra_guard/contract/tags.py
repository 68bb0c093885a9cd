"""The isolation tag: a digest over what makes a claim isolated (README, "Isolation tag").

The tag covers kind, namespace, name, the device section, the sanitization policy and the
tenant, so editing any of them without re-tagging is detected.  With a key it is an
HMAC, so only holders of the key can re-tag.

A ResourceClaimTemplate carries two tags: its own, on its metadata, and the *claim tag* in
`spec.metadata`, which kube-controller-manager copies (with the rest of `spec.metadata`)
onto every ResourceClaim it creates from the template.  The controller picks those claims'
names (`generateName`), so the claim tag is the tag of the claim with no name: it binds the
namespace, the devices, the sanitization policy and the tenant the claim carries
(docs/admission.md, "What the cluster creates").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dra_guard.contract.catalog import ISOLATION_TAG_ANNOTATION, SANITIZATION_ANNOTATION, TENANT_ANNOTATION

SHA256_PREFIX = "sha256:"
HMAC_PREFIX = "hmac-sha256:"


def normalise_numbers(value: Any) -> Any:
    """Plain dicts/lists with every integral float turned into an int.

    Pulumi delivers every number as a float (``count: 2.0``); the tag must not depend on
    which front end produced the object.  Read-only mapping/sequence proxies become plain.
    """
    # Built and loaded objects hold plain dicts, lists and strings: the exact-type tests
    # skip the slower ABC checks below for them.
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict:
        return {str(key): normalise_numbers(item) for key, item in value.items()}
    if kind is list:
        return [normalise_numbers(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(key): normalise_numbers(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [normalise_numbers(item) for item in value]
    return value


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _devices(obj: Mapping[str, Any]) -> Any:
    kind = obj.get("kind")
    spec = _mapping(obj.get("spec"))
    if kind == "ResourceClaimTemplate":
        return _mapping(spec.get("spec")).get("devices", {})
    if kind == "ResourceClaim":
        return spec.get("devices", {})
    raise ValueError(f"isolation tags apply to ResourceClaim and ResourceClaimTemplate, not {kind!r}")


def canonical_bytes(obj: Mapping[str, Any], *, named: bool = True) -> bytes:
    """The exact bytes the tag is computed over; with `named=False`, those of the claim
    tag, which leaves the name out (it is written as null)."""
    return _canonical(obj, named, _devices_text(obj))


def _devices_text(obj: Mapping[str, Any]) -> str:
    """The devices as the canonical document writes them (the bulk of it)."""
    text: str = _canonical_encoder().encode(normalise_numbers(_devices(obj)))
    return text


def _canonical(obj: Mapping[str, Any], named: bool, devices_text: str) -> bytes:
    """The canonical document, the devices already written: its keys in sorted order, each
    value as the encoder writes it, which is what the encoder writes for the whole document
    (`{"devices": ..., "kind": ..., ...}` with sorted keys and these separators)."""
    metadata = _mapping(obj.get("metadata"))
    annotations = _mapping(metadata.get("annotations"))
    encode = _canonical_encoder().encode
    text: str = (
        '{"devices":'
        + devices_text
        + ',"kind":'
        + encode(obj.get("kind"))
        + ',"name":'
        + encode(metadata.get("name") if named else None)
        + ',"namespace":'
        + encode(metadata.get("namespace") or "")
        + ',"sanitization":'
        + encode(annotations.get(SANITIZATION_ANNOTATION) or "")
        + ',"tenant":'
        + encode(annotations.get(TENANT_ANNOTATION) or "")
        + "}"
    )
    return text.encode("utf-8")


_ENCODERS: list[Any] = []


def _canonical_encoder() -> Any:
    """One JSON encoder for every tag: `json.dumps` with options builds a new encoder on
    each call, which took half the time of encoding a claim's devices."""
    if not _ENCODERS:
        import json  # loaded on first use: most objects never need a tag

        _ENCODERS.append(json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    return _ENCODERS[0]


def _key_bytes(key: str | bytes) -> bytes:
    return key.encode("utf-8") if isinstance(key, str) else key


_HASHING: list[Any] = []


def _hashing() -> list[Any]:
    """hashlib and hmac, imported at the first tag: hashlib initialises OpenSSL (~10 ms),
    which most checks never need."""
    if not _HASHING:
        import hashlib
        import hmac

        _HASHING.extend((hashlib, hmac))
    return _HASHING


def _digest(data: bytes, key: str | bytes | None) -> str:
    """``sha256:<hex>`` of the canonical bytes, or ``hmac-sha256:<hex>`` with a key."""
    hashlib, hmac = _hashing()
    if key is None:
        digest: str = hashlib.sha256(data).hexdigest()
        return SHA256_PREFIX + digest
    digest = hmac.new(_key_bytes(key), data, hashlib.sha256).hexdigest()
    return HMAC_PREFIX + digest


def isolation_tag(obj: Mapping[str, Any], key: str | bytes | None = None, *, named: bool = True) -> str:
    """``sha256:<hex>``, or ``hmac-sha256:<hex>`` when a key is given."""
    return _digest(canonical_bytes(obj, named=named), key)


def claim_of_template(template: Mapping[str, Any]) -> dict[str, Any]:
    """What the tag sees of the claims a template makes: kube-controller-manager gives each
    the template's namespace, `spec.metadata` and `spec.spec`, and a name of its own."""
    metadata = _mapping(template.get("metadata"))
    spec = _mapping(template.get("spec"))
    claim_metadata = dict(_mapping(spec.get("metadata")))
    claim_metadata.pop("name", None)  # the API server ignores it; the controller names the claim
    if metadata.get("namespace"):
        claim_metadata["namespace"] = metadata["namespace"]
    return {"kind": "ResourceClaim", "metadata": claim_metadata, "spec": dict(_mapping(spec.get("spec")))}


def claim_isolation_tag(template: Mapping[str, Any], key: str | bytes | None = None) -> str:
    """The claim tag a template carries in `spec.metadata`: the tag of its claims, unnamed."""
    return isolation_tag(claim_of_template(template), key, named=False)


def _matches(claimed: object, expected: str) -> bool:
    if not isinstance(claimed, str):
        return False
    return bool(_hashing()[1].compare_digest(claimed.encode("utf-8"), expected.encode("utf-8")))


class IsolationTags:
    """Verifies an object's tag and, for a template, its claim tag: both cover the same
    devices, which are normalised and written once (the larger part of computing a tag)."""

    def __init__(self, obj: Mapping[str, Any], key: str | bytes | None = None) -> None:
        self.obj = obj
        self.key = key
        self._devices: str | None = None

    def _devices_text(self) -> str:
        if self._devices is None:
            self._devices = _devices_text(self.obj)
        return self._devices

    def own_matches(self) -> bool:
        """Whether the object's tag annotation matches its content.

        A ResourceClaim's tag may also be the claim tag (its content with no name): the
        claims kube-controller-manager creates from a template carry that one, under a name
        the controller generated.  With a key configured only an HMAC tag is accepted: a
        plain digest can be recomputed by anyone who edits the object, so it proves nothing
        once a key is in force.
        """
        obj = self.obj
        claimed = _mapping(_mapping(obj.get("metadata")).get("annotations")).get(ISOLATION_TAG_ANNOTATION)
        if not isinstance(claimed, str):
            return False
        try:
            if _matches(claimed, _digest(_canonical(obj, True, self._devices_text()), self.key)):
                return True
            return obj.get("kind") == "ResourceClaim" and _matches(
                claimed, _digest(_canonical(obj, False, self._devices_text()), self.key)
            )
        except (ValueError, TypeError):
            return False

    def claim_matches(self) -> bool:
        """Whether a template's claim tag (`spec.metadata`) matches the claims it makes."""
        template = self.obj
        claimed = _mapping(_mapping(_mapping(template.get("spec")).get("metadata")).get("annotations")).get(
            ISOLATION_TAG_ANNOTATION
        )
        try:
            # The claims' devices are the template's (`claim_of_template`).
            claim = claim_of_template(template)
            devices = self._devices_text() if template.get("kind") == "ResourceClaimTemplate" else _devices_text(claim)
            return _matches(claimed, _digest(_canonical(claim, False, devices), self.key))
        except (ValueError, TypeError):
            return False


def verify_isolation_tag(obj: Mapping[str, Any], key: str | bytes | None = None) -> bool:
    """Whether the object's tag annotation matches its content (`IsolationTags.own_matches`)."""
    return IsolationTags(obj, key).own_matches()


def verify_claim_isolation_tag(template: Mapping[str, Any], key: str | bytes | None = None) -> bool:
    """Whether a template's claim tag (`spec.metadata`) matches the claims it makes."""
    return IsolationTags(template, key).claim_matches()
