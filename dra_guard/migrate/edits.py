"""A migration's changes to one YAML document, as data: delete a key, add a key, append.

The same list of edits is applied three ways: to the plain objects (`apply_edits`, what
the migration means), to the file's text (`dra_guard.migrate.yaml_text`, what is written),
and to the objects `dra-guard check` reads from the original file (to prove the written
text reads back as intended).  Paths run from the document's root.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

Path = tuple[str | int, ...]


class EditError(ValueError):
    """An edit does not fit the document it is applied to."""


@dataclass(frozen=True)
class Edit:
    #: delete: remove the mapping key at `path`; add: set the new key at `path` to `value`;
    #: append: add `value` at the end of the list at `path`; prepend: before its first item
    #: (the scrubber, which must be the first init container).
    action: Literal["delete", "add", "append", "prepend"]
    path: Path
    value: Any = None

    @property
    def target(self) -> Path:
        """The path of the mapping or list this edit changes."""
        return self.path if self.action in _LIST_ACTIONS else self.path[:-1]


_LIST_ACTIONS = ("append", "prepend")


def _walk(root: Any, path: Path) -> Any:
    node = root
    for part in path:
        in_mapping = isinstance(node, dict) and isinstance(part, str) and part in node
        if in_mapping or (isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)):
            node = node[part]
        else:
            raise EditError(f"no {part!r} at {'/'.join(map(str, path))}")
    return node


def apply_edit(root: Any, edit: Edit) -> None:
    """Apply one edit in place."""
    target = _walk(root, edit.target)
    if edit.action in _LIST_ACTIONS:
        if not isinstance(target, list):
            raise EditError(f"{edit.path} is not a list")
        target.insert(len(target) if edit.action == "append" else 0, copy.deepcopy(edit.value))
        return
    key = edit.path[-1]
    if not isinstance(target, dict):
        raise EditError(f"{edit.target} is not a mapping")
    if edit.action == "delete":
        if key not in target:
            raise EditError(f"no key {key!r} to delete at {edit.target}")
        del target[key]
    else:
        if key in target:
            raise EditError(f"key {key!r} already exists at {edit.target}")
        target[key] = copy.deepcopy(edit.value)


def apply_edits(root: Any, edits: Iterable[Edit]) -> Any:
    """A copy of `root` with `edits` applied in order, prepends last: the other edits' paths
    count list items as the document has them, before anything is put in front of them."""
    result = copy.deepcopy(root)
    ordered = sorted(edits, key=lambda edit: edit.action == "prepend")  # stable: in order otherwise
    for edit in ordered:
        apply_edit(result, edit)
    return result


def within(edits: Iterable[Edit], prefix: Path) -> list[Edit]:
    """The edits under `prefix`, with their paths relative to it."""
    size = len(prefix)
    return [Edit(edit.action, edit.path[size:], edit.value) for edit in edits if edit.path[:size] == prefix]
