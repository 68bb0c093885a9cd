"""A kustomization's patches, read as written where it is not rendered (rendering itself, and
reading the patch files a kustomization names, are the reading layer's:
`dra_guard.read.kustomize`).  Nothing here opens a file: a kustomization's document arrives
with its patch files already read (`PatchFile`), so a check does no I/O.

kustomize (`api/types/kustomization.go`, `patch.go`) takes patches from three fields:

* `patches[*]`: `{patch: <inline text> | path: <file>, target, options}`;
* `patchesStrategicMerge[*]` (deprecated): each entry a file path or inline patch text
  (`FixKustomizationPreMarshalling` tries it as a file first, then as text);
* `patchesJson6902[*]` (deprecated): `{target, path: <file> | patch: <inline text>}`.

A patch is a strategic-merge patch (a partial object) or a JSON 6902 list of operations,
in YAML or JSON.  Files are named relative to the kustomization's folder.  Each patch is
returned with where it is written (the field of the kustomization) and what it holds:
its documents, or why they cannot be read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from dra_guard.model.embedded import Unreadable, read_embedded_documents
from dra_guard.model.manifest import Path, items, mapping

KUSTOMIZE_GROUP = "kustomize.config.k8s.io"
KUSTOMIZE_KINDS = ("Kustomization", "Component")
#: Kustomize refuses larger files too (kyaml reads whole files); this keeps a check cheap.
MAX_PATCH_FILE_BYTES = 4 * 1024 * 1024


class Patch(NamedTuple):
    #: The field of the kustomization that holds the patch (its text or its file's name).
    path: Path
    #: The file the patch was read from; None for inline text.
    file: str | None
    #: Its documents, or why they cannot be read.
    documents: list[Any] | Unreadable


def is_kustomization(obj: Mapping[str, Any]) -> bool:
    version = obj.get("apiVersion")
    return isinstance(version, str) and version.startswith(KUSTOMIZE_GROUP + "/") and obj.get("kind") in KUSTOMIZE_KINDS


class PatchFile(NamedTuple):
    """A patch file a kustomization names, as the reading layer found it."""

    #: Where it was looked for: the name joined to the kustomization's folder.
    located: str
    #: Its text, or why it cannot be read.
    text: str | Unreadable


#: The patch files of one kustomization, by the name it writes; None where the kustomization
#: has no folder (read from stdin, or given as an object).
PatchFiles = Mapping[str, PatchFile]


def patch_file_names(obj: Mapping[str, Any]) -> Iterator[str]:
    """The names of the files the kustomization's patches are in, as written."""
    for field_name in ("patches", "patchesJson6902"):
        for entry in items(obj.get(field_name)):
            name = mapping(entry).get("path")
            if isinstance(name, str):
                yield name
    for entry in items(obj.get("patchesStrategicMerge")):
        if isinstance(entry, str) and not _is_inline(entry):
            yield entry


def _is_inline(entry: str) -> bool:
    """A patchesStrategicMerge entry written as text (a one-line file name has no colon)."""
    return "\n" in entry or ":" in entry


def patches(obj: Mapping[str, Any], files: PatchFiles | None) -> Iterator[Patch]:
    """Every patch of the kustomization, its files taken from `files` (`patch_file_names`)."""
    for index, entry in enumerate(items(obj.get("patches"))):
        yield from _entry(mapping(entry), ("patches", index), files)
    for index, entry in enumerate(items(obj.get("patchesStrategicMerge"))):
        if not isinstance(entry, str):
            continue
        path: Path = ("patchesStrategicMerge", index)
        if _is_inline(entry):
            yield Patch(path, None, _documents(entry))
        else:
            yield _named(path, files, entry)
    for index, entry in enumerate(items(obj.get("patchesJson6902"))):
        yield from _entry(mapping(entry), ("patchesJson6902", index), files)


def _entry(entry: Mapping[str, Any], path: Path, files: PatchFiles | None) -> Iterator[Patch]:
    text = entry.get("patch")
    if isinstance(text, str):
        yield Patch((*path, "patch"), None, _documents(text))
    name = entry.get("path")
    if isinstance(name, str):
        yield _named((*path, "path"), files, name)


def _named(path: Path, files: PatchFiles | None, name: str) -> Patch:
    """The patch in the file `name`, relative to the kustomization's folder."""
    if files is None:
        return Patch(path, name, Unreadable("it is named relative to a kustomization read from stdin"))
    found = files.get(name)
    if found is None:  # the reading layer reads every name patch_file_names gives
        return Patch(path, name, Unreadable("it was not read with the kustomization"))
    if isinstance(found.text, Unreadable):
        return Patch(path, found.located, found.text)
    return Patch(path, found.located, _documents(found.text))


def _documents(text: str) -> list[Any] | Unreadable:
    try:
        return read_embedded_documents(text)
    except Unreadable as unreadable:
        return unreadable
