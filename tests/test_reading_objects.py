"""objects.py's shortcut for the usual object: `_plainly_sent` may only ever say what the
full search (`_document_problem`) says, never hide a refusal."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dra_guard.kubectl_yaml.json_stream import Pairs
from dra_guard.kubectl_yaml.objects import _OBJECT_META, _document_problem, _plainly_sent, document_problem

_STRINGS = st.sampled_from(["", "v1", "apps/v1", "a/b/c", "/", "Pod", "2024-01-02T03:04:05Z", "not a time"])
_NULL_OR_STRING = st.one_of(st.none(), _STRINGS)
_ANY = st.recursive(
    st.one_of(
        _NULL_OR_STRING,
        st.booleans(),
        st.integers(min_value=-(1 << 65), max_value=1 << 65),
        st.floats(allow_nan=False),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b"]), inner)),
    max_leaves=4,
)


def _with_duplicates(mapping: dict[str, Any]) -> dict[str, Any]:
    """The mapping as json_stream reads an object with each key twice: first with a value
    no field takes (a mapping), then the one that wins."""
    duplicated = Pairs(mapping)
    duplicated.pairs = [*((key, {"a": 1}) for key in mapping), *mapping.items()]
    return duplicated


@st.composite
def _objects(draw: st.DrawFn) -> Any:
    """A manifest's object of strings (any ObjectMeta field, labels and annotations among
    them, given one), then a few of its fields given any value, or its mappings read
    with a duplicate key."""
    metadata: dict[str, Any] = {
        key: draw(_NULL_OR_STRING) for key in draw(st.sets(st.sampled_from(list(_OBJECT_META))))
    }
    for key in draw(st.sets(st.sampled_from(["labels", "annotations"]))):
        metadata[key] = draw(st.dictionaries(st.sampled_from(["a", "b"]), _NULL_OR_STRING, max_size=2))
    obj: dict[str, Any] = {"apiVersion": draw(_STRINGS), "kind": draw(_STRINGS), "metadata": metadata}
    for _ in range(draw(st.integers(0, 2))):
        place = draw(st.sampled_from([obj, metadata, *(value for value in metadata.values() if type(value) is dict)]))
        key = draw(st.sampled_from(["apiVersion", "kind", "metadata", "items", *_OBJECT_META, "a"]))
        if draw(st.booleans()):
            place[key] = draw(_ANY)
        else:
            place.pop(key, None)
    if draw(st.booleans()) and type(obj.get("metadata")) is dict:
        obj["metadata"] = _with_duplicates(obj["metadata"])
    return _with_duplicates(obj) if draw(st.booleans()) else obj


@settings(max_examples=3000, deadline=None)
@given(_objects())
def test_the_shortcut_never_passes_what_the_search_refuses(value: Any) -> None:
    if _plainly_sent(value):
        assert _document_problem(value, 1) is None
    assert document_problem(value, 1) == _document_problem(value, 1)


def test_the_usual_object_takes_the_shortcut() -> None:
    usual = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "a", "namespace": "b", "labels": {"app": "a"}, "annotations": {"x": None}},
        "spec": {"replicas": 1},
    }
    assert _plainly_sent(usual)
    assert _plainly_sent({"kind": "ConfigMap", "metadata": None})
    # What it leaves to the search: a List, a field of another type, a duplicate key.
    assert not _plainly_sent({**usual, "items": []})
    assert not _plainly_sent({**usual, "metadata": {"generation": 1}})
    assert not _plainly_sent({**usual, "metadata": _with_duplicates({"name": "a"})})
    assert not _plainly_sent(_with_duplicates(usual))
