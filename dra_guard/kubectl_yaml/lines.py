"""Where a path into an object is written: the line of its deepest node.

A path is followed the way the object was built (construct.py): through aliases to
their anchors, and through merge keys in go-yaml's order, so the line is that of the
key that decided the value -- inside a merged mapping if the merge won.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from typing import Any

from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from dra_guard.kubectl_yaml.construct import is_merge_key, key_string, mapping_key
from dra_guard.kubectl_yaml.errors import Refusal
from dra_guard.kubectl_yaml.parser import AliasRef

#: Line breaks libyaml counts besides LF; with them, lines are counted by LF only.
_OTHER_BREAKS = ("\r", "\x85", "\u2028", "\u2029")
_LIBYAML_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")
_LINE_FEED = re.compile("\n")


def _deref(node: Any) -> Any:
    seen = 0
    while node.__class__ is AliasRef and seen < 64:
        node, seen = node.target, seen + 1
    return node


def _plainkey_string(node: Any) -> str | None:
    """The JSON key a key node becomes, or None when it is not a simple scalar key."""
    node = _deref(node)
    if node.__class__ is not ScalarNode:
        return None
    try:
        key = mapping_key(node)
    except Refusal:
        return None
    return key_string(key)


def _entry(node: Any, part: str, depth: int = 0) -> tuple[Any, Any] | None:
    """The (key node, value node) that decides `part` of a mapping, merges included."""
    found: tuple[Any, Any] | None = None
    for key_node, value_node in node.value:
        if is_merge_key(key_node):
            if depth > 32:
                continue
            sources = value_node.value[::-1] if value_node.__class__ is SequenceNode else [value_node]
            for written in sources:
                source = _deref(written)
                if source.__class__ is MappingNode:
                    merged = _entry(source, part, depth + 1)
                    if merged is not None:
                        found = merged
        elif _plainkey_string(key_node) == part:
            found = (key_node, value_node)
    return found


def node_line(root: Any, path: Sequence[str | int]) -> int:
    """0-based line of the deepest node on `path` (the key's line for mapping entries)."""
    node = _deref(root)
    line: int = node.start_mark.line
    for part in path:
        if node.__class__ is MappingNode:
            entry = _entry(node, str(part))
            if entry is None:
                break
            line = entry[0].start_mark.line
            node = _deref(entry[1])
        elif node.__class__ is SequenceNode and isinstance(part, int) and 0 <= part < len(node.value):
            child = node.value[part]
            line = child.start_mark.line
            node = _deref(child)
        else:
            break
    return line


class FileLines:
    """File lines of the lines libyaml counts in one document's text."""

    def __init__(self, body: str, first_line: int) -> None:
        self._first_line = first_line
        # libyaml also breaks lines at CR, NEL, LS and PS; with any of them, lines are
        # counted by LF, as editors and kubectl's line reader count them.
        self._break_ends: list[int] | None = None
        if any(char in body for char in _OTHER_BREAKS):
            self._break_ends = [match.end() for match in _LIBYAML_BREAK.finditer(body)]
            self._line_feeds = [match.start() for match in _LINE_FEED.finditer(body)]

    def of(self, libyaml_line: int) -> int:
        if self._break_ends is None:
            return self._first_line + libyaml_line
        if libyaml_line <= 0 or not self._break_ends:
            return self._first_line
        position = self._break_ends[min(libyaml_line, len(self._break_ends)) - 1]
        return self._first_line + bisect.bisect_left(self._line_feeds, position)
