"""A parsed YAML document -> the JSON value kubectl sends, by go-yaml v2's and sigs.k8s.io/yaml's rules.

From kubernetes-sigs/yaml v1.4.0 (commit c3772b51db126345efe2dfe4ff8dac83b8141684):

`goyaml.v2/decode.go` (go-yaml v2.4.0 decoding into interface{}):
* Mappings decode into one map, entry by entry in source order; a later entry with an
  equal key replaces the earlier one (duplicate keys: last wins).
* A merge key (`<<`, plain or tagged !!merge, not quoted) merges its value into the map
  *where it is written*: a merged key overrides an explicit key written before the
  merge, and an explicit key after it overrides the merged one.  The value must be a
  mapping, an alias of one, or a sequence of those; a sequence is merged last to first,
  so its first mapping wins.
* An alias decodes its anchor's node again; an alias met again while it is being
  expanded fails ("anchor 'x' value contains itself").
* Excessive aliasing fails: every decode step counts, steps under an alias count as
  aliased, and once there are more than 100 aliased of more than 1,000 steps, the
  aliased share may not exceed 99% (up to 400,000 steps, falling to 10% at 4,000,000).
* A mapping or sequence used as a key fails ("invalid map key").
* Only the first document of the text is decoded (`yaml.go` `unmarshal`).

`yaml.go` (YAML to JSON):
* Keys become strings: int -> decimal, bool -> "true"/"false", float -> 32-bit `%g`
  (".inf", ".nan"); null and uint64 keys fail ("unsupported map key").
* The result goes through Go's json.Marshal: NaN and infinities fail, invalid UTF-8
  (from !!binary) becomes U+FFFD byte by byte, floats are written shortest-first, as
  integers when integral and below 1e21.

kubectl then reads that JSON back and sends it on; gojson.py says what numbers and
strings become on the way.

dra-guard refuses (kubectl would not) keys that collide once made strings
(Go's map order decides which survives), non-UTF-8 !!binary keys, and documents nested
deeper than Python's recursion allows; it stops reading the file where it cannot tell
whether kubectl would (too deep, or a NaN under a colliding key).
"""

from __future__ import annotations

import math
from typing import Any

from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from dra_guard.kubectl_yaml.errors import Refusal
from dra_guard.kubectl_yaml.gojson import go_float32_key, go_json_number, go_string
from dra_guard.kubectl_yaml.parser import NON_SPECIFIC, PLAIN, QUOTED, AliasRef
from dra_guard.kubectl_yaml.resolve import MERGE, Uint64, resolve_plain, resolve_tagged

_ALIAS_RANGE_LOW = 400_000
_ALIAS_RANGE_HIGH = 4_000_000


def _allowed_alias_ratio(decodes: int) -> float:
    if decodes <= _ALIAS_RANGE_LOW:
        return 0.99
    if decodes >= _ALIAS_RANGE_HIGH:
        return 0.10
    return 0.99 - 0.89 * ((decodes - _ALIAS_RANGE_LOW) / float(_ALIAS_RANGE_HIGH - _ALIAS_RANGE_LOW))


class _NonFinite(float):
    """A NaN or infinite value: json.Marshal fails on it -- if it is still there at the end
    (a later duplicate key or merge may replace it)."""


class ExcessiveAliasing(Refusal):
    def __init__(self) -> None:
        super().__init__("document contains excessive aliasing")


def is_merge_key(node: Any) -> bool:
    """decode.go `isMerge`: `<<` written plain (or with `!`), or tagged !!merge."""
    return (
        node.__class__ is ScalarNode
        and node.value == "<<"
        and (node.tag is PLAIN or node.tag is NON_SPECIFIC or node.tag == MERGE)
    )


class Decoder:
    """One document's decode, counting steps the way go-yaml does."""

    __slots__ = ("aliased", "binary", "decodes", "depth", "doubt", "expanding", "losers", "nonfinite")

    def __init__(self) -> None:
        self.decodes = 1  # the document node itself
        self.aliased = 0
        self.depth = 0
        self.expanding: set[int] = set()
        #: True once a !!binary scalar was decoded: the object then holds text that its
        #: source does not spell.
        self.binary = False
        #: True once a NaN or infinity was decoded (see _NonFinite).
        self.nonfinite = False
        #: Why kubectl's result is not certain, though it goes on past this document.
        self.doubt: str | None = None
        #: Values dropped for a colliding key (Go might have kept them instead).
        self.losers: list[Any] = []

    def _step(self) -> None:
        """decode.go `unmarshal`'s bookkeeping, checked at every step as go-yaml does."""
        self.decodes += 1
        if self.depth:
            self.aliased += 1
        if (
            self.aliased > 100
            and self.decodes > 1000
            and self.aliased / self.decodes > _allowed_alias_ratio(self.decodes)
        ):
            raise ExcessiveAliasing

    def _enter(self, alias: AliasRef) -> None:
        key = id(alias)
        if key in self.expanding:
            raise Refusal("anchor value contains itself", line=alias.start_mark.line)
        self.expanding.add(key)
        self.depth += 1

    def _leave(self, alias: AliasRef) -> None:
        self.depth -= 1
        self.expanding.discard(id(alias))

    def value(self, node: Any) -> Any:
        """decode.go `unmarshal` into interface{}, then the JSON value it becomes."""
        self._step()
        cls = node.__class__
        if cls is ScalarNode:
            return self._scalar(node)
        if cls is MappingNode:
            target: dict[Any, Any] = {}
            if self._fill(node, target):
                return self._string_keys(target)
            return target
        if cls is SequenceNode:
            return [self.value(child) for child in node.value]
        self._enter(node)
        try:
            return self.value(node.target)
        finally:
            self._leave(node)

    def _string_keys(self, target: dict[Any, Any]) -> dict[str, Any]:
        """sigs.k8s.io/yaml's string keys; two keys that become one string are a doubt."""
        result: dict[str, Any] = {}
        for key, value in target.items():
            text = key_string(key)
            if text in result:
                self.doubt = self.doubt or (
                    f"the mapping has two keys that both become {text!r} in JSON (Go's map order decides which is sent)"
                )
                self.losers.append(result[text])
            result[text] = value
        return result

    def _scalar(self, node: Any) -> Any:
        tag = node.tag
        if tag is PLAIN:
            resolved = resolve_plain(node.value)
        elif tag is QUOTED or tag is NON_SPECIFIC:
            return node.value
        else:
            resolved = resolve_tagged(tag, node.value)
        cls = resolved.__class__
        if cls is str or cls is int or cls is bool or resolved is None:
            return resolved
        if cls is float:
            if math.isnan(resolved) or math.isinf(resolved):
                self.nonfinite = True
                return _NonFinite(resolved)
            return go_json_number(resolved)
        if cls is Uint64:
            return go_json_number(float(resolved))
        self.binary = True
        return go_string(resolved)

    def _fill(self, node: Any, target: dict[Any, Any]) -> bool:
        """Decode a mapping's entries into `target`; True if some key is not a string yet."""
        typed = False
        for key_node, value_node in node.value:
            if is_merge_key(key_node):
                typed = self._merge(value_node, target) or typed
                continue
            key = self._key(key_node)
            target[key] = self.value(value_node)
            typed = typed or key.__class__ is not str
        return typed

    def _merge(self, node: Any, target: dict[Any, Any]) -> bool:
        cls = node.__class__
        if cls is SequenceNode:
            typed = False
            for child in reversed(node.value):
                _require_mapping(child)
                typed = self._merge_one(child, target) or typed
            return typed
        _require_mapping(node)
        return self._merge_one(node, target)

    def _merge_one(self, node: Any, target: dict[Any, Any]) -> bool:
        self._step()
        if node.__class__ is AliasRef:
            self._enter(node)
            try:
                return self._merge_one(node.target, target)
            finally:
                self._leave(node)
        return self._fill(node, target)

    def _key(self, node: Any) -> Any:
        """A mapping key as go-yaml holds it: str, or (type, value) for other scalars."""
        self._step()
        cls = node.__class__
        if cls is ScalarNode:
            tag = node.tag
            if tag is PLAIN:
                resolved = resolve_plain(node.value)
            elif tag is QUOTED or tag is NON_SPECIFIC:
                return node.value
            else:
                resolved = resolve_tagged(tag, node.value)
            kind = resolved.__class__
            if kind is str:
                return resolved
            if kind is bool or kind is int:
                return (kind, resolved)
            if kind is float:
                # NaN is never equal to NaN: two .nan keys are two map entries in Go.
                return (kind, resolved, object()) if math.isnan(resolved) else (kind, resolved)
            if resolved is None:
                raise Refusal("unsupported map key of type: <nil> (a null key)")
            if kind is Uint64:
                raise Refusal(f"unsupported map key of type: uint64 ({resolved})")
            self.binary = True
            try:
                return resolved.decode("utf-8")
            except UnicodeDecodeError:
                # Go keeps the raw bytes as the map key (distinct from any text key) and
                # json.Marshal then writes U+FFFD: which of two such keys wins is Go's.
                self.doubt = self.doubt or "a !!binary mapping key that is not UTF-8 text"
                return ("binary", go_string(resolved))
        if cls is AliasRef:
            self._enter(node)
            try:
                return self._key(node.target)
            finally:
                self._leave(node)
        raise Refusal("invalid map key: a mapping or sequence used as a key")


def _require_mapping(node: Any) -> None:
    target = node.target if node.__class__ is AliasRef else node
    if target.__class__ is not MappingNode:
        raise Refusal("map merge requires map or sequence of maps as the value")


def key_string(key: Any) -> str:
    if key.__class__ is str:
        return key
    kind, value = key[0], key[1]
    if kind == "binary":
        return str(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is float:
        return go_float32_key(value)
    return str(value)


def decode(root: Any) -> tuple[Any, bool]:
    """(the document's JSON value, whether it decoded !!binary) or Refusal.

    A refusal that kubectl would not make (`kubectl_stops=False`) comes only once the
    whole document is decoded and kubectl is known to go on past it.
    """
    decoder = Decoder()
    try:
        value = decoder.value(root)
        if decoder.nonfinite:
            _refuse_nonfinite(value)
            if any(_has_nonfinite(loser) for loser in decoder.losers):
                raise Refusal(
                    "a NaN or infinity under one of two keys that become the same string: whether kubectl "
                    "stops here is left to Go's map order"
                )
    except RecursionError:
        raise Refusal("document nested too deeply to check; not checked beyond this point") from None
    if decoder.doubt is not None:
        raise Refusal(decoder.doubt, kubectl_stops=False)
    return value, decoder.binary


def _has_nonfinite(value: Any) -> bool:
    try:
        _refuse_nonfinite(value)
    except Refusal:
        return True
    return False


def _refuse_nonfinite(value: Any) -> None:
    cls = value.__class__
    if cls is _NonFinite:
        raise Refusal(f"json: unsupported value: {value!r} (JSON has no NaN or infinity)")
    if cls is dict:
        for item in value.values():
            _refuse_nonfinite(item)
    elif cls is list:
        for item in value:
            _refuse_nonfinite(item)


def mapping_key(node: Any) -> Any:
    """A key node as go-yaml holds it (str, or (type, value)), or Refusal."""
    return Decoder()._key(node)
