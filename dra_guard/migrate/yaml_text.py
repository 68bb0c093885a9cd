"""Edits applied to YAML text so that only the changed lines differ.

ruamel.yaml composes the file into nodes that know where they start and end; each `Edit`
becomes a splice of the original text: a deleted entry loses its lines, an added key or
list item is written after the last line of its mapping or list, in the file's own
indentation, and new documents go after the document they belong to.  Everything else —
comments, key order, quoting, blank lines, odd indentation, document markers — stays byte
for byte.  Flow collections (`{...}`, `[...]`, JSON) are edited inside their brackets.

Anything this cannot do faithfully (an anchor or merge key on the way, a key sharing its
line with a `- `) raises `Unrealizable`; the caller leaves that document alone.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dra_guard.migrate.edits import Edit, Path

MERGE_TAG = "tag:yaml.org,2002:merge"
#: Strings written unquoted in flow YAML: names and paths, nothing YAML would read otherwise.
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")


class Unrealizable(ValueError):
    """The edit cannot be written without touching text it does not change."""


@dataclass(frozen=True)
class Style:
    """How a document indents: a nested mapping, a list's dash, a list item's content."""

    mapping_indent: int = 2
    #: Columns from a key to the `-` of its list (0: `key:\n- a`, 2: `key:\n  - a`).
    dash_offset: int = 2
    #: Columns from a `-` to its item's content.
    item_offset: int = 2
    #: Write flow collections as JSON (the document is JSON) rather than as flow YAML.
    json: bool = False


@dataclass(frozen=True)
class TextEdit:
    """Replace text[start:end] with `text`; insertions at one point go in ascending `order`."""

    start: int
    end: int
    text: str
    order: int = 0


def compose_documents(text: str) -> list[Any]:
    """The node tree of every document (ruamel.yaml, pure Python: marks are str offsets)."""
    from ruamel.yaml import YAML

    return list(YAML(typ="safe", pure=True).compose_all(text))


def load_documents(text: str) -> list[Any]:
    """The plain objects of every document.

    Parsed separately from `compose_documents`: constructing a document flattens merge
    keys into its nodes, which would give merged entries the anchor's positions.
    """
    from ruamel.yaml import YAML

    return list(YAML(typ="safe", pure=True).load_all(text))


def _is_mapping(node: Any) -> bool:
    return type(node).__name__ == "MappingNode"


def _is_sequence(node: Any) -> bool:
    return type(node).__name__ == "SequenceNode"


def _is_block(node: Any) -> bool:
    return not getattr(node, "flow_style", False)


def _entry(node: Any, key: str) -> tuple[Any, Any, int]:
    if any(key_node.tag == MERGE_TAG for key_node, _ in node.value):
        raise Unrealizable("the mapping uses a YAML merge key (<<)")
    for index, (key_node, value_node) in enumerate(node.value):
        if type(key_node).__name__ == "ScalarNode" and key_node.value == key:
            return key_node, value_node, index
    raise Unrealizable(f"no key {key!r} in the text")


def node_at(root: Any, path: Path) -> Any:
    node = root
    for part in path:
        if _is_mapping(node) and isinstance(part, str):
            node = _entry(node, part)[1]
        elif _is_sequence(node) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
        else:
            raise Unrealizable(f"nothing at {part!r} in the text")
    return node


def line_of(root: Any, path: Path) -> int:
    """1-based line of the deepest node on `path` (a mapping entry's key line)."""
    node, line = root, root.start_mark.line + 1
    for part in path:
        try:
            if _is_mapping(node) and isinstance(part, str):
                key_node, node, _ = _entry(node, part)
                line = key_node.start_mark.line + 1
            elif _is_sequence(node) and isinstance(part, int) and 0 <= part < len(node.value):
                node = node.value[part]
                line = node.start_mark.line + 1
            else:
                break
        except Unrealizable:
            break
    return int(line)


def content_end(node: Any) -> int:
    """Offset just after the last character that belongs to `node` (trailing comments excluded)."""
    if _is_block(node) and _is_mapping(node) and node.value:
        return content_end(node.value[-1][1])
    if _is_block(node) and _is_sequence(node) and node.value:
        return content_end(node.value[-1])
    return int(node.end_mark.index)


def after_line(text: str, offset: int) -> int:
    """The start of the line after the one `offset` is on (len(text) at the end)."""
    if offset == 0 or text[offset - 1] == "\n":
        return offset
    newline = text.find("\n", offset)
    return len(text) if newline == -1 else newline + 1


def document_end(text: str, root: Any) -> int:
    """Where a new document goes after `root`'s: before the next `---`, after a `...`."""
    position = after_line(text, content_end(root))
    while position < len(text):
        newline = text.find("\n", position)
        line_end = len(text) if newline == -1 else newline + 1
        if text.startswith("---", position):
            return position
        if text.startswith("...", position):
            return line_end
        position = line_end
    return len(text)


def detect_style(root: Any) -> Style:
    """The document's own indentation, read from its first block mapping and block list.

    A document written as one flow mapping (JSON, most likely) gets its new entries as JSON.
    """
    mapping_indent = dash_offset = item_offset = None
    stack = [root]
    while stack and (mapping_indent is None or dash_offset is None):
        node = stack.pop(0)
        if _is_mapping(node) and _is_block(node):
            for key_node, value in node.value:
                if _is_block(value) and value.value:
                    if mapping_indent is None and _is_mapping(value):
                        mapping_indent = value.value[0][0].start_mark.column - key_node.start_mark.column
                    if dash_offset is None and _is_sequence(value):
                        dash_offset = value.start_mark.column - key_node.start_mark.column
                        item_offset = value.value[0].start_mark.column - value.start_mark.column
                stack.append(value)
        elif _is_sequence(node):
            stack.extend(node.value)
    default = Style()
    return Style(
        mapping_indent if mapping_indent and mapping_indent > 0 else default.mapping_indent,
        dash_offset if dash_offset is not None and dash_offset >= 0 else default.dash_offset,
        item_offset if item_offset and item_offset >= 2 else default.item_offset,
        json=_is_mapping(root) and not _is_block(root),
    )


def _dumper(style: Style) -> Any:
    from ruamel.yaml import YAML

    dumper = YAML(typ="rt")
    dumper.indent(
        mapping=style.mapping_indent, sequence=style.dash_offset + style.item_offset, offset=style.dash_offset
    )
    dumper.width = 4096  # never fold a long CEL selector
    return dumper


def render_block(value: Any, style: Style, column: int = 0) -> str:
    """`value` as block YAML, every line indented by `column`."""
    buffer = io.StringIO()
    _dumper(style).dump(value, buffer)
    return "".join(" " * column + line if line.strip() else line for line in buffer.getvalue().splitlines(True))


def render_document(obj: Any, style: Style) -> str:
    """A new document, in the file's indentation."""
    return "---\n" + render_block(obj, style)


def render_json_document(obj: Any, text: str) -> str:
    """A new JSON object for a file that is a stream of them, indented like its first object."""
    lines = text.lstrip().splitlines()
    if len(lines) < 2:
        return json.dumps(obj, ensure_ascii=False) + "\n"
    indent = len(lines[1]) - len(lines[1].lstrip(" "))
    return json.dumps(obj, ensure_ascii=False, indent=indent or 2) + "\n"


def _render_flow(value: Any, style: Style) -> str:
    """`value` (a mapping or list) on one line, as JSON in a JSON document, else as flow YAML."""
    if style.json:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    if isinstance(value, dict):
        return "{" + ", ".join(_flow_entry(key, item, style) for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_render_flow(item, style) for item in value) + "]"
    if isinstance(value, str) and _PLAIN.fullmatch(value) and _reads_as_string(value):
        return value
    return json.dumps(value, ensure_ascii=False)


def _reads_as_string(value: str) -> bool:
    # YAML 1.1 (what kubectl and PyYAML read) turns `yes`, `1e3`, `null` into other types.
    import yaml

    return bool(yaml.safe_load(value) == value)


def _flow_entry(key: str | int, value: Any, style: Style) -> str:
    return f"{_render_flow(key, style)}: {_render_flow(value, style)}"


def _line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def _block_mapping_edits(text: str, node: Any, edits: Sequence[Edit], style: Style) -> list[TextEdit]:
    result: list[TextEdit] = []
    deleted = set()
    for edit in edits:
        if edit.action != "delete":
            continue
        key_node, value_node, index = _entry(node, str(edit.path[-1]))
        start = _line_start(text, key_node.start_mark.index)
        if text[start : key_node.start_mark.index].strip():
            raise Unrealizable(f"{key_node.value!r} shares its line with other content")
        result.append(TextEdit(start, after_line(text, content_end(value_node)), ""))
        deleted.add(index)
    added = [edit for edit in edits if edit.action == "add"]
    if len(deleted) == len(node.value) and not added:
        raise Unrealizable("every key of the mapping would go")
    if added:
        column = node.value[0][0].start_mark.column
        for edit in added:
            _refuse_existing(node, str(edit.path[-1]))
        rendered = "".join(render_block({edit.path[-1]: edit.value}, style, column) for edit in added)
        point = after_line(text, content_end(node.value[-1][1]))
        result.append(TextEdit(point, point, rendered))
    return result


def _refuse_existing(node: Any, key: str) -> None:
    if any(type(key_node).__name__ == "ScalarNode" and key_node.value == key for key_node, _ in node.value):
        raise Unrealizable(f"key {key!r} is already there")


def _flow_separator(node: Any, last_item: Any) -> str:
    """`, ` on one line; `,\\n` plus the last item's indentation in a multi-line collection."""
    if last_item.start_mark.line > node.start_mark.line:
        return ",\n" + " " * int(last_item.start_mark.column)
    return ", "


def _flow_mapping_edits(text: str, node: Any, edits: Sequence[Edit], style: Style) -> list[TextEdit]:
    entries = node.value
    deleted = sorted(_entry(node, str(edit.path[-1]))[2] for edit in edits if edit.action == "delete")
    added = [edit for edit in edits if edit.action == "add"]
    for edit in added:
        _refuse_existing(node, str(edit.path[-1]))
    if not entries:
        inner = ", ".join(_flow_entry(edit.path[-1], edit.value, style) for edit in added)
        return [TextEdit(node.start_mark.index, node.end_mark.index, "{" + inner + "}")] if added else []
    kept = len(entries) - len(deleted)
    if kept == 0 and not added:
        raise Unrealizable("every key of the mapping would go")
    result = []
    for first, last in _runs(deleted):
        if last < len(entries) - 1:
            result.append(TextEdit(entries[first][0].start_mark.index, entries[last + 1][0].start_mark.index, ""))
        elif first > 0:
            result.append(TextEdit(entries[first - 1][1].end_mark.index, entries[last][1].end_mark.index, ""))
        else:
            result.append(TextEdit(entries[0][0].start_mark.index, entries[-1][1].end_mark.index, ""))
    if added:
        separator = _flow_separator(node, entries[-1][0])
        parts = [_flow_entry(edit.path[-1], edit.value, style) for edit in added]
        text = (separator if kept else "") + separator.join(parts)
        end = entries[-1][1].end_mark.index
        result.append(TextEdit(end, end, text))
    return result


def _runs(indexes: Sequence[int]) -> Iterable[tuple[int, int]]:
    """Consecutive runs of sorted, distinct indexes, as (first, last)."""
    run: list[int] = []
    for index in indexes:
        if run and index != run[-1] + 1:
            yield run[0], run[-1]
            run = []
        run.append(index)
    if run:
        yield run[0], run[-1]


def _sequence_edits(text: str, node: Any, edits: Sequence[Edit], style: Style) -> list[TextEdit]:
    appended = [edit for edit in edits if edit.action == "append"]
    prepended = [edit.value for edit in edits if edit.action == "prepend"]
    result = _appended(text, node, appended, style) if appended else []
    if prepended:
        result.append(_prepended(text, node, prepended, style))
    return result


def _prepended(text: str, node: Any, values: Sequence[Any], style: Style) -> TextEdit:
    """The items put before the first item of a non-empty list (an empty one is appended to)."""
    if not node.value:
        return _appended(text, node, [Edit("append", (), value) for value in values], style)[0]
    first = node.value[0]
    if not _is_block(node):
        rendered = "".join(_render_flow(value, style) + _flow_separator(node, first) for value in values)
        return TextEdit(first.start_mark.index, first.start_mark.index, rendered)
    dash = node.start_mark.column
    items = Style(style.mapping_indent, 0, style.item_offset)
    point = _line_start(text, node.start_mark.index)
    return TextEdit(point, point, render_block(list(values), items, dash))


def _appended(text: str, node: Any, edits: Sequence[Edit], style: Style) -> list[TextEdit]:
    values = [edit.value for edit in edits]
    if not _is_block(node):
        if not node.value:
            inner = ", ".join(_render_flow(value, style) for value in values)
            return [TextEdit(node.start_mark.index, node.end_mark.index, "[" + inner + "]")]
        separator = _flow_separator(node, node.value[-1])
        end = node.value[-1].end_mark.index
        return [TextEdit(end, end, separator + separator.join(_render_flow(value, style) for value in values))]
    dash = node.start_mark.column
    items = Style(style.mapping_indent, 0, style.item_offset)
    rendered = render_block(values, items, dash)
    point = after_line(text, content_end(node))
    return [TextEdit(point, point, rendered)]


def text_edits(text: str, root: Any, edits: Sequence[Edit], style: Style) -> list[TextEdit]:
    """The splices that make `edits` in one document, or `Unrealizable`."""
    groups: dict[Path, list[Edit]] = {}
    for edit in edits:
        groups.setdefault(edit.target, []).append(edit)
    result: list[TextEdit] = []
    for target, group in groups.items():
        node = node_at(root, target)
        actions = {edit.action for edit in group}
        if _is_sequence(node) and actions <= {"append", "prepend"}:
            splices = _sequence_edits(text, node, group, style)
        elif _is_mapping(node) and "append" not in actions:
            splices = (_block_mapping_edits if _is_block(node) else _flow_mapping_edits)(text, node, group, style)
        else:
            raise Unrealizable(f"{'/'.join(map(str, target))} is not the mapping or list the edit expects")
        # Where a container's last line is also its pod spec's, what goes into the
        # container (the deeper target) must come first.
        result.extend(dataclasses.replace(splice, order=-len(target)) for splice in splices)
    _refuse_overlaps(result)
    return result


def _refuse_overlaps(edits: Sequence[TextEdit]) -> None:
    ordered = sorted(edits, key=lambda edit: (edit.start, edit.end))
    for before, after in itertools.pairwise(ordered):
        if before.end > after.start or (before.start == after.start and before.end == after.end > after.start):
            raise Unrealizable("two edits touch the same text (a YAML alias?)")


def apply_text_edits(text: str, edits: Iterable[TextEdit], newline: str = "\n") -> str:
    """`text` with every splice made; insertions at one point appear in `order`."""
    pending = list(edits)
    end = len(text)
    if text and not text.endswith("\n") and any(edit.start == end and edit.text for edit in pending):
        # What goes at the end must start on a line of its own: add the missing newline,
        # which deletions reaching the old end take with them.
        text += newline
        grown = len(text)
        pending = [
            TextEdit(edit.start if edit.start < end else grown, grown, edit.text, edit.order)
            if edit.end == end
            else edit
            for edit in pending
        ]
    # From the end, so earlier offsets stay valid; at one offset the deletion first, then
    # the insertions in reverse order, each pushing the later ones right.
    for edit in sorted(pending, key=lambda edit: (edit.start, edit.end, edit.order), reverse=True):
        text = text[: edit.start] + edit.text + text[edit.end :]
    return text
