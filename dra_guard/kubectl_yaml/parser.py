"""The YAML parser under the kubectl resolver: libyaml, through PyYAML, today.

The resolver (construct.py) reads node trees and knows nothing of the parser.  The
contract a parser meets:

* `parse(text)` returns the documents of `text` in order, each a tree of PyYAML's
  `ScalarNode`, `SequenceNode` and `MappingNode` (mapping values are (key, value) pairs
  in source order), plus an error if parsing stopped early.  Marks give 0-based `line`
  and character `index` into `text`.
* An alias is an `AliasRef` at the place it is written, pointing at its anchor's node;
  anchors are per document and a later anchor of the same name wins (go-yaml's parser).
* A scalar's `tag` is its explicit tag, fully expanded (`tag:yaml.org,2002:binary`,
  `!foo`), or `NON_SPECIFIC` for `!`, or `PLAIN` / `QUOTED` when it has none, by
  style.  Collection tags are not used (go-yaml ignores them when decoding into
  interface{}).
* Text that go-yaml v2's parser reads differently from this parser must not yield
  trees: `parse` reports it as an error.

libyaml 0.2.5 (the one PyYAML bundles) and go-yaml v2.4.0 (kubernetes-sigs/yaml v1.4.0
`goyaml.v2/scannerc.go`, `parserc.go`, commit c3772b51db126345efe2dfe4ff8dac83b8141684)
are the same scanner, except where libyaml grew since the port.  Found so far, each
refused (go-yaml fails on all of them, so kubectl stops reading the file):

* a `%YAML` directive other than 1.1 ("found incompatible YAML document");
* a `\\/` escape in a double-quoted scalar ("found unknown escape character");
* `?` inside a plain scalar in a flow collection (go-yaml ends the scalar there);
* a tag directly followed by `,` `[` `]` `{` or `}` (go-yaml reads these into the tag
  and then wants whitespace).

libyaml's own limits are stricter than go-yaml's in one place: it refuses nesting deeper
than 1,000 levels (go-yaml allows 10,000); such documents are refused here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

try:  # libyaml when PyYAML was built with it, the pure-Python parser otherwise
    _Base: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Base = yaml.SafeLoader

PLAIN = "?plain"
QUOTED = "?quoted"
NON_SPECIFIC = "!"
COLLECTION = "?collection"

#: Anchor name characters (libyaml and go-yaml both take [0-9A-Za-z_-]).
_ANCHOR_CHARACTERS = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-")
#: Line breaks as libyaml counts them.
_LINE_BREAKS = frozenset("\n\r\x85\u2028\u2029")
# A tag starts with `!` at the start of a node.  `!=` followed by a blank or a quote is a
# comparison (CEL selectors are full of them), never a tag that matters here.
_TAG_CANDIDATE = re.compile(r"(?:^|(?<=[\s\[\]{},:]))!(?!=[\s'\"])", re.MULTILINE)
_DIRECTIVE = re.compile(r"^%", re.MULTILINE)
_ANCHOR_NAME = re.compile(r"&[0-9A-Za-z_-]+")
_TAG_TOKEN = re.compile(r"!<[^>]*>|![^\s,\[\]{}]*")
_BLANKS = re.compile(r"(?:[ \t\r\n]+|#[^\n]*)*")
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)


def at_node_start(text: str, position: int) -> bool:
    """Whether a node can start at text[position]: at the start of a line (after its
    indentation), after the indicators `- `, `? ` and `: ` (with a blank between), or
    after `[`, `{`, `,` or a flow `:` (blanks or not).  Anchors, tags and aliases can
    only stand there; inside a plain scalar (`0 */6 * * *`, a comment, `a != b`) they
    are text."""
    index = position - 1
    while index >= 0 and text[index] in " \t\ufeff":
        index -= 1
    if index < 0:
        return True
    char = text[index]
    if char in _LINE_BREAKS or char in "[{,:":
        return True
    return char in "-?" and index < position - 1


def may_hold_alias(text: str) -> bool:
    """Whether `text` may hold an alias (`*name` at a node start): such text is composed
    from events, where each alias stays an `AliasRef` and construct.py counts its
    expansion against go-yaml's limits.  A cron schedule's `*` never counts."""
    position = text.find("*")
    while position >= 0:
        if text[position + 1 : position + 2] in _ANCHOR_CHARACTERS and at_node_start(text, position):
            return True
        position = text.find("*", position + 1)
    return False


def node_property(text: str) -> bool:
    """Whether `text` may hold an anchor, a tag or an alias: `&`, `!` or `*` at a node start."""
    return any_at_node_start(text, "&!*")


def any_at_node_start(text: str, characters: str) -> bool:
    """Whether one of `characters` stands in `text` where a node may start (`at_node_start`)."""
    return any(next(node_starts(text, character), None) is not None for character in characters)


def node_starts(text: str, character: str) -> Iterator[int]:
    """Where `character` stands in `text` at a node start (`at_node_start`), in order."""
    position = text.find(character)
    while position >= 0:
        if at_node_start(text, position):
            yield position
        position = text.find(character, position + 1)


class AliasRef:
    """An alias where it is written (`*name`), and the node its anchor names."""

    __slots__ = ("end_mark", "start_mark", "target")

    def __init__(self, target: Node, start_mark: Any, end_mark: Any = None) -> None:
        self.target = target
        self.start_mark = start_mark
        self.end_mark = end_mark


class ParseError(Exception):
    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.message = message
        #: 0-based line within the parsed text.
        self.line = line


class Parsed:
    __slots__ = ("documents", "error")

    def __init__(self, documents: list[Any], error: ParseError | None = None) -> None:
        self.documents = documents
        #: Why parsing stopped before the end of the text, if it did.
        self.error = error


class _Loader(_Base):  # type: ignore[misc]
    """libyaml's composer with a resolver that only records what go-yaml needs."""

    def resolve(self, kind: Any, value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is ScalarNode:
            return PLAIN if implicit[0] else QUOTED
        return COLLECTION


def parse(text: str) -> Parsed:
    """The documents of `text` (see the module docstring for the contract)."""
    if text.startswith("\ufeff"):
        # A byte order mark opening the text is skipped by both parsers; dropping it here
        # keeps marks and `text` in step (lines do not move).
        text = text[1:]
    if (
        may_hold_alias(text)
        or ("!" in text and _TAG_CANDIDATE.search(text))
        or _DIRECTIVE.search(text)
        # Where libyaml reads on and go-yaml stops: `?` in a flow plain scalar, `\/`.
        or ("?" in text and ("[" in text or "{" in text))
        or "\\/" in text
    ):
        return _parse_events(text)
    documents: list[Any] = []
    loader = _Loader(text)
    try:
        while loader.check_node():
            documents.append(loader.get_node())
    except yaml.composer.ComposerError:
        # An anchor defined twice: legal for go-yaml (the later one wins), not for
        # PyYAML's composer.
        return _parse_events(text)
    except yaml.YAMLError as error:
        return Parsed(documents, _parse_error(error))
    finally:
        loader.dispose()
    return Parsed(documents)


def _parse_error(error: yaml.YAMLError) -> ParseError:
    if isinstance(error, yaml.MarkedYAMLError):
        mark = error.problem_mark or error.context_mark
        problem = " ".join(part for part in (error.context, error.problem) if part) or "invalid YAML"
        return ParseError(problem, mark.line if mark else None)
    return ParseError(str(error), None)  # pragma: no cover - libyaml errors carry marks


def _parse_events(text: str) -> Parsed:
    """Compose from libyaml's events, with explicit aliases and go-yaml's anchor rules."""
    documents: list[Any] = []
    loader = _Loader(text)
    try:
        _compose(loader, text, documents)
    except yaml.YAMLError as error:
        return Parsed(documents, _parse_error(error))
    except ParseError as error:
        return Parsed(documents, error)
    finally:
        loader.dispose()
    return Parsed(documents)


def _compose(loader: Any, text: str, documents: list[Any]) -> None:
    anchors: dict[str, Any] = {}
    # Open collections: [node, pending mapping key or None, flow style].
    stack: list[list[Any]] = []
    root: Any = None
    while loader.check_event():
        event = loader.get_event()
        kind = type(event)
        node: Any
        if kind is yaml.ScalarEvent:
            node = ScalarNode(_scalar_tag(event), event.value, event.start_mark, event.end_mark, event.style)
            _check_scalar(event, text, bool(stack) and stack[-1][2])
        elif kind is yaml.AliasEvent:
            target = anchors.get(event.anchor)
            if target is None:
                raise ParseError(f"unknown anchor '{event.anchor}' referenced", event.start_mark.line)
            node = AliasRef(target, event.start_mark, event.end_mark)
        elif kind is yaml.SequenceStartEvent or kind is yaml.MappingStartEvent:
            node_class = SequenceNode if kind is yaml.SequenceStartEvent else MappingNode
            node = node_class(COLLECTION, [], event.start_mark, event.end_mark, event.flow_style)
            _check_tag(event, text)
        elif kind is yaml.SequenceEndEvent or kind is yaml.MappingEndEvent:
            stack.pop()[0].end_mark = event.end_mark
            continue
        elif kind is yaml.DocumentStartEvent:
            if event.version is not None and tuple(event.version) != (1, 1):
                version = ".".join(str(part) for part in event.version)
                raise ParseError(f"found incompatible YAML document (%YAML {version})", event.start_mark.line)
            anchors, root = {}, None
            continue
        elif kind is yaml.DocumentEndEvent:
            documents.append(root)
            continue
        else:  # stream start and end
            continue
        anchor = getattr(event, "anchor", None) if kind is not yaml.AliasEvent else None
        if anchor is not None:
            anchors[anchor] = node
        if not stack:
            root = node
        else:
            parent = stack[-1]
            if parent[0].__class__ is SequenceNode:
                parent[0].value.append(node)
            elif parent[1] is None:
                parent[1] = node
            else:
                parent[0].value.append((parent[1], node))
                parent[1] = None
        if kind is yaml.SequenceStartEvent or kind is yaml.MappingStartEvent:
            # A flow collection, or any collection inside one.
            stack.append([node, None, bool(event.flow_style) or (bool(stack) and stack[-1][2])])


def _scalar_tag(event: Any) -> str:
    tag = event.tag
    if tag is None:
        return PLAIN if event.implicit[0] else QUOTED
    return NON_SPECIFIC if tag == "!" else str(tag)


def _check_scalar(event: Any, text: str, in_flow: bool) -> None:
    _check_tag(event, text)
    if event.style == '"' and "\\/" in text[event.start_mark.index : event.end_mark.index]:
        source = text[event.start_mark.index : event.end_mark.index]
        if any(match.group(1) == "/" for match in _ESCAPE.finditer(source)):
            raise ParseError("found unknown escape character '\\/' (go-yaml has no such escape)", event.start_mark.line)
    if in_flow and not event.style and "?" in event.value:
        raise ParseError(
            "'?' inside a plain scalar in a flow collection (go-yaml ends the scalar there)", event.start_mark.line
        )


def _check_tag(event: Any, text: str) -> None:
    """Refuse a tag that go-yaml would read on into `,` `[` `]` `{` `}`."""
    if event.tag is None:
        return
    position = event.start_mark.index
    for _ in range(2):  # an anchor and a tag, in either order
        position = _BLANKS.match(text, position).end()  # type: ignore[union-attr]
        anchor = _ANCHOR_NAME.match(text, position)
        if anchor:
            position = anchor.end()
            continue
        token = _TAG_TOKEN.match(text, position)
        if token is None:
            return
        if text[token.end() : token.end() + 1] in (",", "[", "]", "{", "}"):
            raise ParseError(
                "a tag directly followed by a flow indicator (go-yaml reads it as part of the tag)",
                event.start_mark.line,
            )
        position = token.end()
