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
    if type(value) is dict:  # what loaded objects hold: the ABC check below is slower
        return value
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
    return _canonical(obj, _devices_text(_devices(obj)), named)


def _devices_text(devices: Any) -> str:
    return str(_canonical_encoder().encode(normalise_numbers(devices)))


def _canonical(obj: Mapping[str, Any], devices_text: str, named: bool) -> bytes:
    """What one encoder writes for `{devices, kind, name, namespace, sanitization, tenant}`
    (keys sorted, no spaces), written from its parts: the devices already encoded (once for
    both of an object's tags, `TagCheck`), the rest value by value.  An encoder call costs a
    few microseconds before it writes anything, more than the rest costs written here."""
    metadata = _mapping(obj.get("metadata"))
    annotations = _mapping(metadata.get("annotations"))
    value = _json_value
    return (
        f'{{"devices":{devices_text},"kind":{value(obj.get("kind"))},'
        f'"name":{value(metadata.get("name") if named else None)},'
        f'"namespace":{value(metadata.get("namespace") or "")},'
        f'"sanitization":{value(annotations.get(SANITIZATION_ANNOTATION) or "")},'
        f'"tenant":{value(annotations.get(TENANT_ANNOTATION) or "")}}}'
    ).encode()


def _json_value(value: Any) -> str:
    """`value` as the canonical encoder writes it: a string as its string encoder does
    (`ensure_ascii=False`), anything else through the encoder."""
    if type(value) is str:
        return str(_canonical_encoder().string(value))
    if value is None:
        return "null"
    return str(_canonical_encoder().encode(value))


class _Encoder:
    """The canonical JSON encoder, and the string encoder it writes strings with."""

    def __init__(self) -> None:
        import json  # loaded on first use: most objects never need a tag
        from json.encoder import encode_basestring

        self.encode = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
        self.string = encode_basestring


_ENCODERS: list[_Encoder] = []


def _canonical_encoder() -> _Encoder:
    """One JSON encoder for every tag: `json.dumps` with options builds a new encoder on
    each call, which took half the time of encoding a claim's devices."""
    if not _ENCODERS:
        _ENCODERS.append(_Encoder())
    return _ENCODERS[0]


def _key_bytes(key: str | bytes) -> bytes:
    return key.encode("utf-8") if isinstance(key, str) else key


def _tag(data: bytes, key: str | bytes | None) -> str:
    # hashlib initialises OpenSSL (~10 ms): only pay for it when a tag is computed.
    import hashlib
    import hmac

    if key is None:
        return SHA256_PREFIX + hashlib.sha256(data).hexdigest()
    return HMAC_PREFIX + hmac.digest(_key_bytes(key), data, "sha256").hex()


def isolation_tag(obj: Mapping[str, Any], key: str | bytes | None = None, *, named: bool = True) -> str:
    """``sha256:<hex>``, or ``hmac-sha256:<hex>`` when a key is given."""
    return _tag(canonical_bytes(obj, named=named), key)


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
    import hmac

    return isinstance(claimed, str) and hmac.compare_digest(claimed.encode("utf-8"), expected.encode("utf-8"))


class TagCheck:
    """Whether an object's tags match its content, its devices encoded once for all of them
    (a template's own tag and its claim tag cover the same devices; a claim's named and
    unnamed tags too): encoding them is most of what a tag costs."""

    def __init__(self, obj: Mapping[str, Any], key: str | bytes | None = None) -> None:
        self.obj, self.key = obj, key
        self._devices: str | None = None

    def _devices_text(self) -> str:
        if self._devices is None:
            self._devices = _devices_text(_devices(self.obj))
        return self._devices

    def own(self) -> bool:
        """Whether the object's tag annotation matches its content.

        A ResourceClaim's tag may also be the claim tag (its content with no name): the claims
        kube-controller-manager creates from a template carry that one, under a name the
        controller generated.  With a key configured only an HMAC tag is accepted: a plain
        digest can be recomputed by anyone who edits the object, so it proves nothing once a
        key is in force.
        """
        obj, key = self.obj, self.key
        claimed = _mapping(_mapping(obj.get("metadata")).get("annotations")).get(ISOLATION_TAG_ANNOTATION)
        if not isinstance(claimed, str):
            return False
        try:
            if _matches(claimed, _tag(_canonical(obj, self._devices_text(), True), key)):
                return True
            return obj.get("kind") == "ResourceClaim" and _matches(
                claimed, _tag(_canonical(obj, self._devices_text(), False), key)
            )
        except (ValueError, TypeError):
            return False

    def claim(self) -> bool:
        """Whether a template's claim tag (`spec.metadata`) matches the claims it makes."""
        template = self.obj
        claimed = _mapping(_mapping(_mapping(template.get("spec")).get("metadata")).get("annotations")).get(
            ISOLATION_TAG_ANNOTATION
        )
        try:
            claim = claim_of_template(template)
            # A template's claims hold its own devices; anything else is read as a claim would be.
            if template.get("kind") == "ResourceClaimTemplate":
                devices = self._devices_text()
            else:
                devices = _devices_text(_devices(claim))
            return _matches(claimed, _tag(_canonical(claim, devices, False), self.key))
        except (ValueError, TypeError):
            return False


def verify_isolation_tag(obj: Mapping[str, Any], key: str | bytes | None = None) -> bool:
    """Whether the object's tag annotation matches its content (`TagCheck.own`)."""
    return TagCheck(obj, key).own()


def verify_claim_isolation_tag(template: Mapping[str, Any], key: str | bytes | None = None) -> bool:
    """Whether a template's claim tag (`spec.metadata`) matches the claims it makes (`TagCheck.claim`)."""
    return TagCheck(template, key).claim()
