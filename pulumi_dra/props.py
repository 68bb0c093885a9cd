"""Pulumi props to plain Kubernetes objects, and which of their parts are known.

Props arrive as the policy SDK's read-only proxies (`Mapping`/`Sequence`, numbers as
floats: protobuf's Struct has no integers).  A float with an integral value is read as an
int, since that is what the API server receives: the Kubernetes provider encodes the
number in JSON, where Go writes the float64 50 as `50` (a rule must not see `count: 1.0`
where the cluster gets `count: 1`).  During `preview` a value may be unknown (the SDK's sentinel strings).  Such a
value is left out of the object the rules see (a mapping entry is dropped, a list item
becomes `{}`), and its path is kept, so that the pack can tell the findings that hold
whatever the value turns out to be from those that may not (`PropsObject.definite`).

A `*Patch` resource (`kubernetes:apps/v1:DeploymentPatch`) is a server-side-apply patch:
only what it sets is known, everything else comes from the live object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pulumi_policy import proxy
from pulumi_policy.proxy import UnknownValueError

from dra_guard.engine import waiver_places

PATCH_SUFFIX = "Patch"
#: The Helm release resource, whose objects Pulumi never sees before apply.
HELM_RELEASE_TYPES = frozenset({"kubernetes:helm.sh/v3:Release"})
Path = tuple[str, ...]


def kubernetes_api_version(resource_type: str) -> str | None:
    """`kubernetes:apps/v1:Deployment` -> `apps/v1`; `kubernetes:core/v1:Pod` -> `v1`.

    None for anything that is not a Kubernetes object type (providers, components such as
    `kubernetes:yaml/v2:ConfigGroup` or `kubernetes:helm.sh/v4:Chart`, whose children are
    validated one by one).
    """
    parts = resource_type.split(":")
    if len(parts) != 3 or parts[0] != "kubernetes" or "/" not in parts[1]:
        return None
    group, _, version = parts[1].partition("/")
    if group in ("yaml", "helm.sh", "kustomize"):
        return None
    return version if group == "core" else f"{group}/{version}"


class CannotVerifyUntilApply(UnknownValueError):
    """An unknown value: the SDK reports this as an advisory diagnostic, not a failure."""

    def __init__(self, unknown: UnknownValueError, more: int = 0) -> None:
        super().__init__(unknown.unknown_type_sentinel, unknown.props)
        also = f" (and {more} more unknown value{'s' * (more != 1)})" if more else ""
        self.message = f"cannot verify until apply: {super().__getattribute__('message')}{also}"

    def __str__(self) -> str:
        return self.message


_UNKNOWN_SENTINELS = frozenset(
    getattr(proxy, name)
    for name in dir(proxy)
    if name.startswith("UNKNOWN_") and name.endswith("_VALUE") and isinstance(getattr(proxy, name), str)
)
# The SDK's proxy classes expose their target under "__target"; if they are ever renamed,
# the generic Mapping/Sequence paths below (the SDK's checked reads) give the same result.
_PROXY_CLASSES: tuple[type, ...] = tuple(
    cls for cls in (getattr(proxy, "_DictProxy", None), getattr(proxy, "_ListProxy", None)) if isinstance(cls, type)
)


class _UnknownSeen(Exception):
    """Raised by the fast walk; the slow walk then finds every unknown value and its path."""


def _fast_plain(value: Any) -> Any:
    """`value` as plain data, its integral floats as ints; a dict or list with nothing to
    change is the very same object (the rules never change what they read), so a walk of
    deserialized props copies only the parts that hold a number."""
    kind = type(value)
    if kind in _PROXY_CLASSES:
        value = value["__target"]
        kind = type(value)
    if kind is dict:
        changed: Any = None
        for key, item in value.items():
            plain = _fast_plain(item)
            if plain is not item:
                if changed is None:
                    changed = dict(value)
                changed[key] = plain
        return value if changed is None else changed
    if kind is list:
        changed = None
        for index, item in enumerate(value):
            plain = _fast_plain(item)
            if plain is not item:
                if changed is None:
                    changed = list(value)
                changed[index] = plain
        return value if changed is None else changed
    if kind is str:
        if value in _UNKNOWN_SENTINELS:
            raise _UnknownSeen
        return value
    if kind is float:
        return _number(value)
    if isinstance(value, Mapping):
        return {key: _fast_plain(value[key]) for key in value}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [_fast_plain(item) for item in value]
    return value


def _number(value: float) -> float | int:
    """The number as the API server receives it from the provider's JSON (module docstring)."""
    return int(value) if value.is_integer() else value


def _read(container: Any, key: Any) -> tuple[Any, str | None]:
    """(item, None), or (None, sentinel) for an unknown item.  Reading a proxy the SDK
    does not let us unwrap raises its own UnknownValueError, which says the same."""
    try:
        item = container[key]
    except UnknownValueError as unknown:
        return None, unknown.unknown_type_sentinel
    if type(item) in _PROXY_CLASSES:
        item = item["__target"]
    if isinstance(item, str) and item in _UNKNOWN_SENTINELS:
        return None, item
    return item, None


def _strip_unknowns(value: Any, path: Path, unknown: list[tuple[Path, str]]) -> Any:
    """`value` as plain data without its unknown values, whose (path, sentinel) it collects."""
    if type(value) in _PROXY_CLASSES:
        value = value["__target"]
    if isinstance(value, Mapping):
        kept = {}
        for key in value:
            item, sentinel = _read(value, key)
            if sentinel is not None:
                unknown.append(((*path, str(key)), sentinel))
            else:
                kept[key] = _strip_unknowns(item, (*path, str(key)), unknown)
        return kept
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        items: list[Any] = []
        for index in range(len(value)):
            item, sentinel = _read(value, index)
            if sentinel is not None:
                unknown.append(((*path, str(index)), sentinel))
                items.append({})  # keeps the indexes of the items after it
            else:
                items.append(_strip_unknowns(item, (*path, str(index)), unknown))
        return items
    return _number(value) if type(value) is float else value


def _touches(path: Path, other: Path) -> bool:
    """One path lies on the other (is it, is under it, or holds it)."""
    common = min(len(path), len(other))
    return path[:common] == other[:common]


def parse_pointer(pointer: str) -> Path:
    """A JSON pointer (RFC 6901) as a path of strings."""
    if not pointer:
        return ()
    return tuple(part.replace("~1", "/").replace("~0", "~") for part in pointer[1:].split("/"))


@dataclass(frozen=True)
class PropsObject:
    """The Kubernetes object a resource's props describe, and what of it is not known."""

    obj: dict[str, Any]
    #: Paths (and SDK sentinels) of the values unknown during preview, left out of `obj`.
    unknown: tuple[tuple[Path, str], ...] = ()
    #: A `*Patch` resource: what it does not set comes from the live object.
    patch: bool = False

    @property
    def complete(self) -> bool:
        """Nothing about the object is unknown: every finding is definite."""
        return not self.unknown and not self.patch

    def known(self, path: Path) -> bool:
        """Whether the value at `path` is what the object will have once applied.

        Of a whole object: unless an unknown value lies on the path.  Of a patch: only a
        value the patch itself sets (a scalar it holds; a mapping or list it holds is
        merged with the live object's).
        """
        if any(_touches(path, unknown) for unknown, _ in self.unknown):
            return False
        if not self.patch:
            return True
        value: Any = self.obj
        for part in path:
            if isinstance(value, dict) and part in value:
                value = value[part]
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                return False
        return not isinstance(value, dict | list)

    @cached_property
    def _waiver_places(self) -> tuple[Path, ...]:
        """The `annotations` maps a waiver of the object may be in, as the engine reads them
        (`dra_guard.engine.waiver_places`: the object's own, and those its pods get, such as
        an Argo workflow's `spec.podMetadata` or a KServe ServingRuntime's `spec.annotations`)."""
        return tuple(tuple(str(step) for step in place) for place in waiver_places(self.obj))

    def _waiver_unknown(self, waiver_key: str) -> bool:
        """Whether an unknown value may be (or hold) a waiver annotation for the rule: one
        that is, or holds, a map of `_waiver_places`, or that is the rule's key in one."""
        for unknown, _ in self.unknown:
            for place in self._waiver_places:
                if place[: len(unknown)] == unknown or unknown[: len(place) + 1] == (*place, waiver_key):
                    return True
        return False

    def _identity_unknown(self) -> bool:
        """Whether an unknown value may be (or hold) what a configuration `waivers` entry
        matches the object by: its name, generateName, namespace, or the controllers that
        made it (`ownerReferences`: dra_guard.engine's `made_by`)."""
        for unknown, _ in self.unknown:
            for place in _IDENTITY_PLACES:
                if place[: len(unknown)] == unknown or unknown[: len(place)] == place:
                    return True
        return False

    def definite(
        self, pointer: str, evidence: Iterable[str] | None, waiver_key: str, *, configured: bool = False
    ) -> bool:
        """Whether a finding at `pointer` holds however the unknown parts turn out.

        It must declare what else it rests on (`evidence`; None means anything in the
        object), all of that must be known, and no unknown value may be a waiver for it: an
        annotation, or, where the configuration has `waivers` entries for the rule
        (`configured`), what an entry matches the object by.  For a patch, waivers are those
        the patch itself writes.
        """
        if self.complete:
            return True
        if evidence is None or self._waiver_unknown(waiver_key) or (configured and self._identity_unknown()):
            return False
        return all(self.known(parse_pointer(part)) for part in (pointer, *evidence))

    def cannot_verify(self) -> CannotVerifyUntilApply | None:
        """The advisory for the unknown values, if there are any."""
        if not self.unknown:
            return None
        (path, sentinel), *more = self.unknown
        return CannotVerifyUntilApply(UnknownValueError(sentinel, list(path)), len(more))


#: Where an object's identity, which configuration `waivers` entries match, is written.
_IDENTITY_PLACES: tuple[Path, ...] = (
    ("metadata", "name"),
    ("metadata", "generateName"),
    ("metadata", "namespace"),
    ("metadata", "ownerReferences"),
)


def is_patch_type(resource_type: str) -> bool:
    """A `*Patch` Kubernetes resource type (`kubernetes:apps/v1:DeploymentPatch`)."""
    if kubernetes_api_version(resource_type) is None:
        return False
    kind = resource_type.rsplit(":", 1)[1]
    return kind.endswith(PATCH_SUFFIX) and len(kind) > len(PATCH_SUFFIX)


def read_props(resource_type: str, props: Mapping[str, Any], plain: Any = None) -> PropsObject | None:
    """The object of a Kubernetes resource's props (None for other types).

    apiVersion and kind come from the type when the props leave them out; a `*Patch`
    type names the kind it patches.  `plain`, the deserialized props behind the proxy
    (`pulumi_dra.analyze_once.plain_props`), is read instead of the proxy when it holds no
    unknown value.
    """
    api_version = kubernetes_api_version(resource_type)
    if api_version is None:
        return None
    kind = resource_type.rsplit(":", 1)[1]
    patch = is_patch_type(resource_type)
    if patch:
        kind = kind[: -len(PATCH_SUFFIX)]
    unknown: list[tuple[Path, str]] = []
    source = plain if type(plain) is dict else props
    try:
        # One walk of the plain values when they are at hand (no proxy to go through).
        obj: Any = _fast_plain(source)
    except (_UnknownSeen, UnknownValueError):
        obj = _strip_unknowns(props, (), unknown)
    if obj is source or (type(props) in _PROXY_CLASSES and obj is props["__target"]):
        obj = dict(obj)  # written to below: not the SDK's own dict
    if not isinstance(obj, dict):  # pragma: no cover - props are always a mapping
        return None
    if "apiVersion" not in obj or any(path == ("apiVersion",) for path, _ in unknown):
        obj["apiVersion"] = api_version
    if "kind" not in obj or any(path == ("kind",) for path, _ in unknown):
        obj["kind"] = kind
    if patch and obj.get("kind") == resource_type.rsplit(":", 1)[1]:
        obj["kind"] = kind
    return PropsObject(dict(obj), tuple(unknown), patch)
