"""The patches of a kustomization, inline and in the files it names, read as kustomize reads them.

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

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from dra_guard.embedded import Unreadable, read_embedded_documents
from dra_guard.manifest import Path, items, mapping

KUSTOMIZE_GROUP = "kustomize.config.k8s.io"
KUSTOMIZE_KINDS = ("Kustomization", "Component")
#: Kustomize refuses larger files too (kyaml reads whole files); this keeps a check cheap.
MAX_PATCH_FILE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Patch:
    #: The field of the kustomization that holds the patch (its text or its file's name).
    path: Path
    #: The file the patch was read from; None for inline text.
    file: str | None
    #: Its documents, or why they cannot be read.
    documents: list[Any] | Unreadable


def is_kustomization(obj: Mapping[str, Any]) -> bool:
    version = obj.get("apiVersion")
    return isinstance(version, str) and version.startswith(KUSTOMIZE_GROUP + "/") and obj.get("kind") in KUSTOMIZE_KINDS


def patches(obj: Mapping[str, Any], source: str | None) -> Iterator[Patch]:
    """Every patch of the kustomization in the file `source` (None: inline patches only)."""
    folder = os.path.dirname(source) if source else None
    for index, entry in enumerate(items(obj.get("patches"))):
        yield from _entry(mapping(entry), ("patches", index), folder)
    for index, entry in enumerate(items(obj.get("patchesStrategicMerge"))):
        if not isinstance(entry, str):
            continue
        path: Path = ("patchesStrategicMerge", index)
        if "\n" in entry or ":" in entry:  # inline text (a one-line file name has no colon)
            yield Patch(path, None, _documents(entry))
        else:
            yield _named(path, folder, entry)
    for index, entry in enumerate(items(obj.get("patchesJson6902"))):
        yield from _entry(mapping(entry), ("patchesJson6902", index), folder)


def _entry(entry: Mapping[str, Any], path: Path, folder: str | None) -> Iterator[Patch]:
    text = entry.get("patch")
    if isinstance(text, str):
        yield Patch((*path, "patch"), None, _documents(text))
    name = entry.get("path")
    if isinstance(name, str):
        yield _named((*path, "path"), folder, name)


def _named(path: Path, folder: str | None, name: str) -> Patch:
    """The patch in the file `name`, relative to the kustomization's folder."""
    if folder is None:
        return Patch(path, name, Unreadable("it is named relative to a kustomization read from stdin"))
    located = os.path.join(folder, name)
    if not os.path.isfile(located):
        return Patch(path, located, Unreadable("it is not there"))
    return _read_file(path, located)


def _read_file(path: Path, file: str) -> Patch:
    try:
        with open(file, "rb") as handle:
            data = handle.read(MAX_PATCH_FILE_BYTES + 1)
    except OSError as error:
        return Patch(path, file, Unreadable(f"cannot read {file}: {error.strerror or error}"))
    if len(data) > MAX_PATCH_FILE_BYTES:
        return Patch(path, file, Unreadable(f"{file} is larger than {MAX_PATCH_FILE_BYTES} bytes"))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return Patch(path, file, Unreadable(f"{file} is not UTF-8 text"))
    return Patch(path, file, _documents(text))


def _documents(text: str) -> list[Any] | Unreadable:
    try:
        return read_embedded_documents(text)
    except Unreadable as unreadable:
        return unreadable
