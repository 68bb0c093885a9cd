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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cdk8s import ApiObject, ApiObjectMetadata, Chart, JsonPatch
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


class BuiltApiObject(ApiObject):
    """A plain ApiObject made from a builder's dict, which knows whether it was edited since.

    Until `add_json_patch` or `metadata` is used it synthesizes to `synthesized()` of its
    dict (kept as JSON text, so a later change to the builder's dict does not change it);
    after that the self-check reads it back with `to_json()`.  The two members are watched
    in `__getattribute__` rather than overridden: jsii registers an overridden member with
    Node, which would then call back into Python each time cdk8s reads `metadata`.
    """

    def __init__(
        self,
        owner: IConstruct,
        construct_id: str,
        manifest: Mapping[str, Any],
        entry: ChartEntry,
        owner_path: str,
    ) -> None:
        metadata = manifest["metadata"]
        super().__init__(
            owner,  # type: ignore[arg-type]
            construct_id,
            api_version=manifest["apiVersion"],
            kind=manifest["kind"],
            metadata=ApiObjectMetadata(
                name=metadata["name"],
                namespace=metadata.get("namespace"),
                labels=metadata.get("labels"),
                annotations=metadata.get("annotations"),
            ),
        )
        # ApiObject takes no body in Python; the spec goes in as one patch, verbatim.
        ApiObject.add_json_patch(self, JsonPatch.add("/spec", manifest["spec"]))
        self._dra_guard_json = json.dumps(synthesized(manifest, entry.namespace, entry.labels))
        #: The construct that made the object (one of ours), and the object, by `node.path`.
        self.owner_path = owner_path
        self.path = join_path(owner_path, construct_id)
        object.__setattr__(self, _EDITED, False)

    def __getattribute__(self, name: str) -> Any:
        if name in _EDITING:
            object.__setattr__(self, _EDITED, True)
        return super().__getattribute__(name)

    @property
    def edited(self) -> bool:
        """Whether the object may synthesize to something other than what it was built as."""
        return bool(getattr(self, _EDITED, True))

    def current(self) -> Any:
        """What the object synthesizes to now, read through jsii only if it was edited."""
        return self.to_json() if self.edited else json.loads(self._dra_guard_json)


@dataclass(eq=False)
class Member:
    """One of our self-checking constructs: where it is and what it made."""

    construct: IConstruct
    path: str
    objects: list[BuiltApiObject]
    values: Mapping[str, Any]
    """The construct's own configuration (its key, Kubernetes release, capacity)."""
    environ: Mapping[str, str | bytes]


@dataclass(eq=False)
class ChartEntry:
    """A chart holding our constructs: its facts, read once, and its members."""

    chart: Chart
    app: str
    path: str
    namespace: str | None
    labels: Mapping[str, str]
    members: list[Member] = field(default_factory=list)


_CHARTS: dict[str, ChartEntry] = {}
#: `enforce()` validations by app and scope path; the latest call on a scope applies.
_ENFORCED: dict[str, dict[str, Any]] = {}


def chart_of(scope: IConstruct, on_first: Callable[[ChartEntry], None]) -> tuple[ChartEntry, str]:
    """The chart `scope` is in, and `scope`'s path; `on_first` runs when the chart is new."""
    chart = scope if isinstance(scope, Chart) else Chart.of(scope)
    key = jsii_key(chart)
    entry = _CHARTS.get(key)
    if entry is None:
        node = chart.node
        entry = ChartEntry(chart, jsii_key(node.root), node.path, chart.namespace, dict(chart.labels or {}))
        _CHARTS[key] = entry
        on_first(entry)
    path = entry.path if scope is chart or jsii_key(scope) == key else scope.node.path
    return entry, path


def record_enforce(scope: IConstruct, validation: Any) -> str:
    """Remember `validation` as the `enforce()` of `scope`; returns the scope's path."""
    node = scope.node
    path = node.path
    _ENFORCED.setdefault(jsii_key(node.root), {})[path] = validation
    return path


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
    "join_path",
    "jsii_key",
    "record_enforce",
    "synthesized",
]
