"""What synth needs to know about our constructs, kept on the Python side.

Every read of the construct tree through jsii is a round trip into Node (tens of
microseconds each); the self-check used to make about five per object.  Here each of our
constructs records, when it is built, its path, its chart and the objects it made; each
object knows what it synthesizes to until it is edited; `enforce()` records its scope's
path.  Synth then reads back through jsii only objects that were edited
(`BuiltApiObject`), and finds the `enforce()` that applies to a construct by its path.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsii
from cdk8s import (
    ApiObject,
    App,
    Chart,
    ImplicitTokenResolver,
    JsonPatch,
    LazyResolver,
    NumberStringUnionResolver,
)
from constructs import IConstruct

#: The two members through which an ApiObject's synthesized form can change after it is
#: made: patches, and the metadata object (labels, annotations, finalizers, owners).
_EDITING = frozenset({"add_json_patch", "metadata"})
_EDITED = "_dra_guard_edited"


def jsii_key(construct: IConstruct) -> str:
    """The jsii reference of a construct: stable, unlike the Python proxy of an object made
    on the JavaScript side (cdk8s' `Testing.app()`), which may be a new one each lookup."""
    return str(construct.__jsii_ref__.ref)  # type: ignore[attr-defined]


def join_path(parent: str, construct_id: str) -> str:
    """A child's `node.path` from its parent's: ids joined by "/", the root's path is ""."""
    return f"{parent}/{construct_id}" if parent else construct_id


def _sanitized(value: Any, drop_empty: bool) -> Any:
    """cdk8s' `sanitizeValue`: keys sorted, nulls dropped, and with `drop_empty` empty
    objects and arrays too (what `ApiObjectMetadataDefinition.toJson` does)."""
    if isinstance(value, Mapping):
        result = {}
        for key in sorted(value):
            item = _sanitized(value[key], drop_empty)
            if item is not None:
                result[key] = item
        return None if drop_empty and not result else result
    if isinstance(value, (list, tuple)):
        return None if drop_empty and not value else [_sanitized(item, drop_empty) for item in value]
    return value


def synthesized(
    manifest: Mapping[str, Any], chart_namespace: str | None, chart_labels: Mapping[str, str]
) -> dict[str, Any]:
    """What `ApiObject.toJson()` gives for an unedited `BuiltApiObject` made from `manifest`.

    cdk8s merges the chart's labels and namespace into the metadata and sanitizes it; the
    spec goes in as a JSON patch after that, verbatim.  `tests/test_cdk8s_registry.py`
    compares this with `to_json()` for every construct shape we build.
    """
    metadata = manifest["metadata"]
    namespace = metadata.get("namespace")
    rendered: dict[str, Any] = {
        "name": metadata["name"],
        "namespace": chart_namespace if namespace is None else namespace,
        "labels": {**chart_labels, **(metadata.get("labels") or {})},
        "annotations": metadata.get("annotations"),
    }
    result: dict[str, Any] = {
        "apiVersion": manifest["apiVersion"],
        "kind": manifest["kind"],
        "metadata": _sanitized(rendered, drop_empty=True) or {},
    }
    result["spec"] = manifest["spec"]
    return result


def _props(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """`ApiObjectProps` as jsii sends them (its names, absent values left out): the
    kernel takes a plain map for a struct."""
    metadata = manifest["metadata"]
    fields = {key: metadata.get(key) for key in ("name", "namespace", "labels", "annotations")}
    return {
        "apiVersion": manifest["apiVersion"],
        "kind": manifest["kind"],
        "metadata": {key: value for key, value in fields.items() if value is not None},
    }


class BuiltApiObject(ApiObject):
    """A plain ApiObject made from a builder's dict, which gives Node that dict at synth.

    Until it is edited, it synthesizes to `synthesized()` of its dict, kept as JSON text
    (so a later change to the builder's dict changes nothing): `to_json` is overridden,
    cdk8s calls it once per synth, and nothing else of the object crosses into Node — no
    JSON patch, no read back for the self-check.  The first use of `add_json_patch` or
    `metadata` (the two ways to change what an ApiObject synthesizes to) puts the spec into
    the Node object as the patch a plain ApiObject would have had, ahead of the edit, and
    from then on `to_json` is cdk8s' own.  The two members are watched in
    `__getattribute__` rather than overridden, which would make Node call back into
    Python each time cdk8s reads `metadata`.
    """

    def __init__(
        self,
        owner: IConstruct,
        construct_id: str,
        manifest: Mapping[str, Any],
        entry: ChartEntry,
        owner_path: str,
    ) -> None:
        # What `ApiObject.__init__` sends to Node, without its runtime type checks
        # (typeguard, about a third of the Python time of making an object): the values
        # are the builder's, typed, and Node's jsii kernel checks the props again.
        jsii.create(self.__class__, self, [owner, construct_id, _props(manifest)])
        self._dra_guard_json = json.dumps(synthesized(manifest, entry.namespace, entry.labels))
        #: The construct that made the object (one of ours), and the object, by `node.path`.
        self.owner_path = owner_path
        self.path = join_path(owner_path, construct_id)
        object.__setattr__(self, _EDITED, False)
        if not entry.plain_rendering:
            self._hand_over()

    def __getattribute__(self, name: str) -> Any:
        if name in _EDITING and not object.__getattribute__(self, _EDITED):
            object.__getattribute__(self, "_hand_over")()
        return super().__getattribute__(name)

    def _hand_over(self) -> None:
        """From now on the Node object renders itself: give it the spec as its first patch."""
        object.__setattr__(self, _EDITED, True)
        spec = json.loads(self._dra_guard_json)["spec"]
        ApiObject.add_json_patch(self, JsonPatch.add("/spec", spec))

    @property
    def edited(self) -> bool:
        """Whether the object may synthesize to something other than what it was built as."""
        return bool(object.__getattribute__(self, _EDITED))

    def to_json(self) -> Any:
        """What the object synthesizes to: its dict, or cdk8s' rendering once edited."""
        if self.edited:
            return ApiObject.to_json(self)  # jsii runs the Node prototype's, not this override
        return json.loads(self._dra_guard_json)

    def current(self) -> Any:
        """`to_json()` for the checks, which do not change what they are given: the
        unedited object's dict is parsed once, not at each validation."""
        if self.edited:
            return ApiObject.to_json(self)
        parsed = self.__dict__.get("_dra_guard_parsed")
        if parsed is None:
            parsed = self._dra_guard_parsed = json.loads(self._dra_guard_json)
        return parsed


@dataclass(eq=False)
class Member:
    """One of our self-checking constructs: where it is and what it made."""

    construct: IConstruct
    path: str
    objects: list[BuiltApiObject]
    values: Mapping[str, Any]
    """The construct's own configuration (its key, Kubernetes release, capacity)."""
    environ: Mapping[str, str | bytes]
    values_key: str
    """`values` and `environ` as one string: members with the same one share a configuration."""


@dataclass(eq=False)
class ChartEntry:
    """A chart holding our constructs: its facts, read once, and its members."""

    chart: Chart
    app: str
    path: str
    namespace: str | None
    labels: Mapping[str, str]
    plain_rendering: bool
    """Whether cdk8s would render an unedited object exactly as `synthesized()` does: not
    when the app has resolvers of its own or `CDK8S_DISABLE_SORT` is set."""
    members: list[Member] = field(default_factory=list)


_CHARTS: dict[str, ChartEntry] = {}
#: `enforce()` validations by app and scope path; the latest call on a scope applies.
_ENFORCED: dict[str, dict[str, Any]] = {}
#: What `use_claim_template` finishes at synth (the scrubber, the claims of containers added
#: later), by the jsii key of the object it wires: cdk8s validates a parent before its
#: children, so an `enforce()` (or a chart's self-check) above the object would read it
#: before these ran; they run these first (`finish_wiring`).
_WIRINGS: dict[str, list[Any]] = {}


def chart_of(scope: IConstruct, on_first: Callable[[ChartEntry], None]) -> tuple[ChartEntry, str]:
    """The chart `scope` is in, and `scope`'s path; `on_first` runs when the chart is new."""
    chart = scope if isinstance(scope, Chart) else Chart.of(scope)
    key = jsii_key(chart)
    entry = _CHARTS.get(key)
    if entry is None:
        node = chart.node
        root = node.root
        plain = not os.environ.get("CDK8S_DISABLE_SORT") and _default_resolvers(root)
        entry = ChartEntry(chart, jsii_key(root), node.path, chart.namespace, dict(chart.labels or {}), plain)
        _CHARTS[key] = entry
        on_first(entry)
    path = entry.path if scope is chart or jsii_key(scope) == key else scope.node.path
    return entry, path


def _default_resolvers(root: IConstruct) -> bool:
    """Whether the app resolves values with cdk8s' built-in resolvers only (which leave
    plain values as they are), not ones the user gave `App(resolvers=...)`."""
    resolvers = root.resolvers if isinstance(root, App) else None
    return resolvers is not None and all(
        isinstance(resolver, (LazyResolver, ImplicitTokenResolver, NumberStringUnionResolver)) for resolver in resolvers
    )


def record_enforce(scope: IConstruct, validation: Any) -> str:
    """Remember `validation` as the `enforce()` of `scope`; returns the scope's path."""
    node = scope.node
    path = node.path
    _ENFORCED.setdefault(jsii_key(node.root), {})[path] = validation
    return path


def record_wiring(api_object: IConstruct, wiring: Any) -> None:
    """Remember `wiring` (a cdk8s validation that edits `api_object` at synth, and adds
    nothing when run again) so that the checks of the object run it first."""
    _WIRINGS.setdefault(jsii_key(api_object), []).append(wiring)


def finish_wiring(keys: Iterable[str]) -> None:
    """Run the wirings of the objects with these jsii keys, before they are read for a check.

    What they would report (a scrubber image that clashes) is not reported here: cdk8s asks
    each wiring itself, which reports it."""
    if not _WIRINGS:
        return
    for key in keys:
        for wiring in _WIRINGS.get(key, ()):
            wiring.validate()


def enforcing(app: str, path: str) -> Any:
    """The latest `enforce()` validation of the nearest scope at or above `path`, if any."""
    scopes = _ENFORCED.get(app)
    if not scopes:
        return None
    while True:
        if path in scopes:
            return scopes[path]
        if not path:
            return None
        path = path.rpartition("/")[0]


__all__ = [
    "BuiltApiObject",
    "ChartEntry",
    "Member",
    "chart_of",
    "enforcing",
    "finish_wiring",
    "join_path",
    "jsii_key",
    "record_enforce",
    "record_wiring",
    "synthesized",
]
