"""Which objects kubectl sends for one decoded document, and which it refuses.

From kubernetes/apimachinery v0.32.4 (commit 59e9003f02d6f0c8fff53719a7a0604ec82ee9a9)
and kubernetes/cli-runtime v0.32.4 (commit 9cb150043944f22439bd6250817b8aef5a114524):

* `null` documents are skipped (cli-runtime `pkg/resource/visitor.go` StreamVisitor);
  any other non-object is an error for that document (kubectl goes on).
* A document with an `items` key -- of any kind -- is a list
  (`pkg/apis/meta/v1/unstructured/helpers.go` `decode`: `items: null` too, which sends
  nothing).  `items` must then be a list of objects or nulls; an item with neither a
  string kind nor a string apiVersion gets the list's kind without its `List` suffix
  and the list's apiVersion (`decodeToList`), a null item becomes exactly that.
* The document (the list itself, for a list) needs a non-empty string kind and an
  apiVersion that parses as group/version (at most one `/`, `Decode`), and its
  apiVersion, kind and metadata must decode into TypeMeta and ObjectMeta
  (cli-runtime `pkg/resource/metadata_decoder.go`; field types from apimachinery
  `pkg/apis/meta/v1/types.go`, timestamps RFC 3339 by `time.go`).
* Lists are flattened (cli-runtime `visitor.go` FlattenListVisitor): a list among the
  items fails the whole list ("is not a list: no Items field"); every item needs a kind
  and a version (the unstructured typer), else that item alone is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from dra_guard.kubectl_yaml.resolve import INT64_MAX

Path = tuple[str | int, ...]


class Sent:
    __slots__ = ("obj", "within")

    def __init__(self, obj: dict[str, Any], within: Path = ()) -> None:
        self.obj = obj
        #: Where the object sits in its document: () or ("items", n).
        self.within = within


class Rejected:
    __slots__ = ("message", "path")

    def __init__(self, message: str, path: Path = ()) -> None:
        self.message = message
        #: The path the message is about, for its line.
        self.path = path


def _string(obj: dict[str, Any], key: str) -> str:
    """unstructured's getNestedString: the value if it is a string, else ""."""
    value = obj.get(key)
    return value if type(value) is str else ""


def _group_version_ok(api_version: str) -> tuple[bool, str]:
    """schema.ParseGroupVersion: (parses, version)."""
    if api_version in ("", "/"):
        return True, ""
    slashes = api_version.count("/")
    if slashes == 0:
        return True, api_version
    if slashes == 1:
        return True, api_version.split("/", 1)[1]
    return False, ""


def _kind_problem(obj: dict[str, Any], what: str) -> str | None:
    parses, _ = _group_version_ok(_string(obj, "apiVersion"))
    if not parses:
        return f"{what}: apiVersion {obj['apiVersion']!r} is not <group>/<version>, so kubectl finds no kind"
    kind = obj.get("kind")
    if "kind" not in obj and "apiVersion" not in obj and not _spells_type_keys(obj):
        return f"{what} is not a Kubernetes object (it has no apiVersion and no kind)"
    if type(kind) is not str or not kind:
        shown = "missing" if "kind" not in obj else f"{kind!r}, not a name"
        return f"{what}: kind is {shown} (kubectl: Object 'Kind' is missing)"
    return None


#: The refusals of a document that parsed and is no object at all (`_document_problem`): a
#: mapping with neither apiVersion nor kind, or a scalar or list.
_NO_OBJECT = re.compile(r"document [0-9]+ is (?:not|an? [a-z]+, not) a Kubernetes object")


def says_no_object(message: str) -> bool:
    """Whether an input error's `message` is a refusal of a document that parsed and is no
    Kubernetes object (no apiVersion and no kind, or not a mapping): a file of nothing else is
    no manifest, which a walk skips."""
    return _NO_OBJECT.match(message) is not None


def _spells_type_keys(obj: dict[str, Any]) -> bool:
    """Whether a key is `kind` or `apiVersion` in another case (`Kind: Pod`): kubectl finds no
    kind there, but it is a manifest's mistake, which `says_no_object` must not pass over."""
    return any(isinstance(key, str) and key.lower() in ("kind", "apiversion") for key in obj)


def document_problem(value: Any, index: int) -> tuple[Path, str] | None:
    """Why kubectl refuses this whole document, or None (it sends something, or nothing)."""
    if _plainly_sent(value):
        return None
    return _document_problem(value, index)


def _document_problem(value: Any, index: int) -> tuple[Path, str] | None:
    what = f"document {index}"
    if not isinstance(value, dict):
        return (), f"{what} is a {type(value).__name__}, not a Kubernetes object"
    if "items" in value:
        items = value["items"]
        if items is not None and type(items) is not list:
            return ("items",), f"{what}: items must be a list, not {type(items).__name__}"
        for position, item in enumerate(items or ()):
            if item is not None and not isinstance(item, dict):
                return ("items", position), f"{what}: list item {position} is a {type(item).__name__}, not an object"
    problem = _kind_problem(value, what)
    if problem:
        return (), problem
    found = _metadata_problem(value)
    if found is not None:
        path, message = found
        return path, f"{what}: {'.'.join(str(part) for part in path)} {message} (kubectl refuses the object)"
    return None


def objects(value: dict[str, Any], index: int) -> Iterator[Sent | Rejected]:
    """The objects sent for a document `document_problem` accepted, and refused items."""
    if "items" not in value:
        yield Sent(value)
        return
    item_kind = _string(value, "kind")
    item_kind = item_kind[: -len("List")] if item_kind.endswith("List") else item_kind
    api_version = _string(value, "apiVersion")
    items = [{} if item is None else item for item in value["items"] or ()]
    for item in items:
        if not _string(item, "kind") and not _string(item, "apiVersion"):
            item["kind"] = item_kind
            item["apiVersion"] = api_version
    for position, item in enumerate(items):
        if type(item.get("items")) is list:
            yield Rejected(
                f"document {index}: list item {position} is itself a list; kubectl refuses the whole list",
                ("items", position),
            )
            return
    for position, item in enumerate(items):
        parses, version = _group_version_ok(_string(item, "apiVersion"))
        if not parses or not _string(item, "kind"):
            yield Rejected(
                f"document {index}: list item {position} has no kind (kubectl refuses it)", ("items", position)
            )
        elif not version:
            yield Rejected(
                f"document {index}: list item {position} has no apiVersion (kubectl refuses it)", ("items", position)
            )
        else:
            yield Sent(item, ("items", position))


# --- metadata as kubectl's metadataOnlyObject decodes it --------------------------------

_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{1,2}):([0-9]{2}):([0-9]{2})(?:[.,][0-9]+)?(?:Z|[+-]([0-9]{2}):([0-9]{2}))"
)
_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _is_rfc3339(text: str) -> bool:
    """A subset of what Go's time.Parse(time.RFC3339, ...) accepts."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        return False
    year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
    if not 1 <= month <= 12 or hour > 23 or minute > 59 or second > 59:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= day <= _DAYS[month - 1] + (1 if month == 2 and leap else 0):
        return False
    zone_hour, zone_minute = match.group(7), match.group(8)
    return zone_hour is None or (int(zone_hour) <= 23 and int(zone_minute) <= 59)


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if type(value) is list:
        return "a list"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check(value: Any, kind: str) -> str | None:
    """Why Go's json cannot decode `value` into a field of this kind (null always can)."""
    if value is None:
        return None
    if kind == "string":
        return None if type(value) is str else f"must be a string, not {_shown(value)}"
    if kind == "bool":
        return None if type(value) is bool else f"must be true or false, not {_shown(value)}"
    if kind == "int64":
        if type(value) is int and -INT64_MAX - 1 <= value <= INT64_MAX:
            return None
        return f"must be a 64-bit integer, not {_shown(value)}"
    if kind == "time":
        if type(value) is str and _is_rfc3339(value):
            return None
        return f"must be an RFC 3339 time, not {_shown(value)}"
    return None  # "any": FieldsV1 takes every JSON value


_OWNER_REFERENCE = {
    "apiVersion": "string",
    "kind": "string",
    "name": "string",
    "uid": "string",
    "controller": "bool",
    "blockOwnerDeletion": "bool",
}
_MANAGED_FIELDS_ENTRY = {
    "manager": "string",
    "operation": "string",
    "apiVersion": "string",
    "time": "time",
    "fieldsType": "string",
    "subresource": "string",
    "fieldsV1": "any",
}
_OBJECT_META: dict[str, Any] = {
    "name": "string",
    "generateName": "string",
    "namespace": "string",
    "selfLink": "string",
    "uid": "string",
    "resourceVersion": "string",
    "generation": "int64",
    "creationTimestamp": "time",
    "deletionTimestamp": "time",
    "deletionGracePeriodSeconds": "int64",
    "labels": ("map", "string"),
    "annotations": ("map", "string"),
    "finalizers": ("list", "string"),
    "ownerReferences": ("list", _OWNER_REFERENCE),
    "managedFields": ("list", _MANAGED_FIELDS_ENTRY),
}


def _entries(mapping: dict[str, Any]) -> list[tuple[str, Any]]:
    """Every key and value, duplicates too (a JSON object's `pairs`)."""
    pairs = getattr(mapping, "pairs", None)
    return pairs if pairs is not None else list(mapping.items())


def _first_problem(value: Any, kind: Any) -> tuple[list[str | int], str] | None:
    """The first field of `value` that Go's json cannot decode into `kind`: its path
    (reversed: built only for a problem, as the search unwinds) and why; None for none.
    Every object's metadata is searched: it is a plain recursion, not generators."""
    if value is None:
        return None
    if kind.__class__ is str:
        problem = _check(value, kind)
        return ([], problem) if problem else None
    if kind.__class__ is dict:
        if not isinstance(value, dict):
            return [], f"must be a mapping, not {_shown(value)}"
        for key, item in _entries(value):
            field = kind.get(key)
            if field is not None and (found := _first_problem(item, field)) is not None:
                found[0].append(key)
                return found
        return None
    if kind[0] == "map":
        if not isinstance(value, dict):
            return [], f"must be a mapping, not {_shown(value)}"
        for key, item in _entries(value):
            if (found := _first_problem(item, kind[1])) is not None:
                found[0].append(key)
                return found
        return None
    if type(value) is not list:
        return [], f"must be a list, not {_shown(value)}"
    for position, item in enumerate(value):
        if (found := _first_problem(item, kind[1])) is not None:
            found[0].append(position)
            return found
    return None


_TYPE_AND_OBJECT_META = {"apiVersion": "string", "kind": "string", "metadata": _OBJECT_META}


def _metadata_problem(obj: dict[str, Any]) -> tuple[Path, str] | None:
    """The first field of the object's type and object metadata kubectl cannot decode."""
    found = _first_problem(obj, _TYPE_AND_OBJECT_META)
    return None if found is None else (tuple(reversed(found[0])), found[1])


#: ObjectMeta's fields that take a string, and those that take a mapping of strings.
_STRING_FIELDS = frozenset(key for key, kind in _OBJECT_META.items() if kind == "string")
_STRING_MAPS = frozenset(key for key, kind in _OBJECT_META.items() if kind == ("map", "string"))
_STRING_OR_NULL = frozenset((str, type(None)))


def _plainly_sent(obj: Any) -> bool:
    """Whether `_document_problem` surely finds nothing, because the object is what nearly
    every manifest holds: no `items`, a kind, a group/version, strings in ObjectMeta's
    string fields, labels and annotations of strings (null allowed).  False for anything
    else, and `_document_problem` decides.  Its search of the metadata makes a Python call
    per field, a large part of judging a document; this is one pass over the fields of
    metadata, and one in C over labels and annotations (tests/test_reading_objects.py
    holds it to `_document_problem`)."""
    if obj.__class__ is not dict:  # a JSON object with a duplicate key too: its `pairs`
        return False
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if kind.__class__ is not str or not kind or "items" in obj:
        return False
    if api_version.__class__ is str:
        if api_version.count("/") > 1:
            return False
    elif api_version is not None:
        return False
    metadata = obj.get("metadata")
    if metadata is None:
        return True
    if metadata.__class__ is not dict:
        return False
    for key, value in metadata.items():
        if value is None or key not in _OBJECT_META:
            continue
        if value.__class__ is str:
            if key in _STRING_FIELDS:
                continue
            return False
        if key in _STRING_MAPS and value.__class__ is dict and _STRING_OR_NULL.issuperset(map(type, value.values())):
            continue
        return False
    return True
