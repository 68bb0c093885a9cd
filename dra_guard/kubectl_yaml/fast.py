"""rapidyaml (PyPI `rapidyaml`) as a fast reader for the plain documents most manifests are.

libyaml through PyYAML (parser.py) stays the reference: it reads every document this
module declines, gives every refusal and error its message and line, and gives the
lines this module cannot place (a document with such a finding is parsed again there,
once; see `dra_guard.read.loader`).  This module takes only documents that leave nothing to
chance:

* The text is printable ASCII with LF line ends (no tabs, CR, NEL, LS, PS or control
  characters, where YAML parsers have differed), holds no `%` directive, no `\\/`
  escape, no `?` next to a flow collection, no alias, anchor or tag candidate (the
  triggers that send parser.py to its event composer as well), and no `...` line.
* No anchor, tag or alias stands at a node start (parser.node_property), no `<<`, no
  backslash; rapidyaml parses it without error into one document.
* No implicit key may span lines or run past 1,024 characters (libyaml refuses both,
  rapidyaml reads them), no block scalar header is followed by text, no explicit key `?`
  stands at a node start, and rapidyaml's JSON emitter takes the tree (it refuses more
  than 64 levels of nesting, which libyaml reads).
* Its JSON emitter's output, read with json.loads, is then held to construct.py's
  reading of libyaml's tree: numbers made what kubectl sends, a string go-yaml would
  resolve when plain kept only when it cannot have been plain, keys kept only when
  go-yaml makes the same string of them; duplicates (counted against the tree's nodes),
  NaN, infinity, uint64, the nan/inf spellings rapidyaml rewrites, keys that start with a
  blank, and scalars that start with a character no plain scalar starts with (`@`, ...)
  where the text has one at a node start are declined.

`parse_plain(texts)` parses the documents it may read, several at a time;
`decode_plain(text, parsed)` returns the document's value, `EMPTY` for a document with
no node, or `DECLINED`.  `FastLines(parsed)` gives the lines of paths into a document it
accepted (a List's items too), from where rapidyaml's tree holds each key and scalar in
the text, as libyaml would mark them -- or None where that could differ (an item in flow
style, a block scalar item), and the caller asks libyaml.  Whether a declined document
would be refused is not this module's business: the caller reads it with libyaml.  `tests/test_fast_reader.py`
holds both readers to the same objects, lines and errors on the differential corpus,
and `tests/test_kubectl_differential.py` runs against kubectl with each.

`DRA_GUARD_YAML_PARSER=pyyaml` turns this reader off; `=rapidyaml` requires it (an
error at start-up if the wheel is missing); unset, it is used when `ryml` imports and
the input, or the stream, is long enough for its import to pay (AUTO_AFTER_DOCUMENTS).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from dra_guard.kubectl_yaml.choice import chosen, load_rapidyaml
from dra_guard.kubectl_yaml.construct import key_string
from dra_guard.kubectl_yaml.gojson import go_json_number
from dra_guard.kubectl_yaml.parser import any_at_node_start, at_node_start, node_property, node_starts
from dra_guard.kubectl_yaml.resolve import resolve_plain

DECLINED: Any = object()
EMPTY: Any = object()


class _Unparsed:
    """`decode_plain` was given no `parse_plain` result: it parses the text itself."""


UNPARSED = _Unparsed()

# Characters outside printable ASCII and LF (tabs, CR, control characters): YAML
# parsers have differed on them, so libyaml reads such text.
_NOT_PRINTABLE_ASCII = re.compile(r"[^\n\x20-\x7e]")
_PRINTABLE_ASCII = bytes(range(0x20, 0x7F)) + b"\n"


class _Decline(Exception):
    pass


# Importing rapidyaml (with the `deprecation` and `packaging` modules it imports) takes
# about 5 ms, and it saves about 25 us per document: a check of a few files is faster
# without it (README "Performance", the cold start).  Unforced, the reader therefore reads
# a stream's first documents with libyaml alone (`parse_plain_when_worth_it`), unless the
# whole input is large (`read_fast_when_large`); forced either way, the choice holds from
# the first document.  Which reader reads a document depends on the document and the
# input alone, never on what the process read before: a worker, a shard and `--jobs 1`
# give each document the same reader, so their reports stay the same byte for byte even
# where the two readers might differ.
AUTO_AFTER_DOCUMENTS = 200
#: Inputs whose files hold at least this many bytes (about 200 documents of a manifest's
#: size) are read with rapidyaml from every stream's first document.
FAST_FROM_START_BYTES = 256 << 10


class _Holding:
    #: Open `holding_stderr()` blocks.
    depth = 0


class _Rapidyaml:
    """This process's rapidyaml (None: off or missing), imported when first needed; with
    it, what talks to its C++ and to CPython's buffers (ryml_native: ctypes, threads)."""

    module: Any = None
    native: Any = None
    loaded = False
    #: Whether it reads from every stream's first document (`read_fast_from_start`).
    from_start = False

    @classmethod
    def load(cls) -> Any:
        """The ryml module (imported at the first call), or None."""
        if not cls.loaded:
            cls.module = load_rapidyaml()
            if cls.module is not None:
                from dra_guard.kubectl_yaml.ryml_native import Native

                cls.native = Native(cls.module)
                cls.native.hold(_Holding.depth > 0)
            cls.loaded = True
        return cls.module


def read_fast_from_start() -> None:
    """This process reads with rapidyaml from every stream's first document, instead of
    after AUTO_AFTER_DOCUMENTS of them, where it is installed and not turned off."""
    _Rapidyaml.from_start = True
    _Rapidyaml.load()


def reads_fast_from_start() -> bool:
    """Whether `read_fast_from_start` holds (or a reader was forced): what a worker is told."""
    return _Rapidyaml.from_start


def read_fast_when_large(sizes: Iterable[int]) -> None:
    """`read_fast_from_start` when the input's files (their `sizes`, read until they reach
    FAST_FROM_START_BYTES) are large enough for rapidyaml's import to pay.  Called with the
    sizes of the whole input, before any of it is read, by every process that checks a part
    of it: the decision is the same in each."""
    total = 0
    for size in sizes:
        total += size
        if total >= FAST_FROM_START_BYTES:
            read_fast_from_start()
            return


if chosen():  # forced either way: from the first document (and a missing wheel fails now)
    read_fast_from_start()


@contextlib.contextmanager
def holding_stderr() -> Iterator[None]:
    """A batch of reading (a worker's files, a whole check): descriptor 2 is swapped for
    rapidyaml's parses once, at the first, and given back when the batch ends, instead of
    around every file's parse (ryml_native.QuietStderr).  Nothing else writes to it while
    a check reads: errors are reported after, and an exception leaves the block first."""
    _Holding.depth += 1
    if _Rapidyaml.native is not None:
        _Rapidyaml.native.hold(True)
    try:
        yield
    finally:
        _Holding.depth -= 1
        if _Rapidyaml.native is not None and not _Holding.depth:
            _Rapidyaml.native.hold(False)


def active_parser() -> str:
    """The parser that reads plain documents once the reader uses it: "rapidyaml" or "pyyaml"."""
    return "rapidyaml" if _Rapidyaml.load() is not None else "pyyaml"


#: Plain scalars that may resolve to something other than their text (resolve.py's hints).
_HINTS = frozenset("+-0123456789yYnNtTfFoO~.")
#: Characters no plain scalar starts with, which rapidyaml takes as one's first: a string
#: starting so is kept only where the text has none of them at a node's start.
_RESERVED_STARTS = frozenset("@`%]}")
_VALUE_HINTS = _HINTS | _RESERVED_STARTS
#: Keys are looked at more closely when they start so, or with a blank (`_same_key`).
_KEY_HINTS = _VALUE_HINTS | {" "}
#: What rapidyaml's JSON emitter writes for the plain scalars nan, inf, .Inf, ... (it
#: rewrites their spelling), so a string spelled so is never taken as written.
_REWRITTEN = frozenset((".nan", ".inf", "-.inf", "+.inf"))
_INT64 = (-(1 << 63), 1 << 63)
#: rapidyaml's id for "no node".
_NONE = (1 << 64) - 1
#: Strings and keys seen before: manifests repeat them (kinds, quantities).  The first
#: few thousand only: beyond, they are mostly each object's own (names, `--replica-id=N`),
#: and a cache of those would grow with the input.
_STAYS_TEXT: dict[str, bool] = {}
_SAME_KEYS: dict[str, bool] = {}
_CACHE_MAX = 4096
#: Nesting this reader leaves to libyaml (which refuses more than 1,000 levels).
_MAX_DEPTH = 200


class _Checker:
    """Holds a document's JSON value (from rapidyaml's emitter) to go-yaml's reading.

    rapidyaml writes quoted scalars as JSON strings and plain ones as JSON numbers,
    true, false or null when they look so to it, else as strings.  Numbers are made what
    kubectl sends (gojson.py); a string that go-yaml would resolve to something else
    when written plain is kept only if the text never spells it plain; keys are kept only
    when go-yaml makes the same string of them either way."""

    __slots__ = ("nodes", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.nodes = 0

    def value(self, value: Any, depth: int) -> Any:
        """The value as kubectl sends it (numbers replaced in place), counting its nodes."""
        cls = value.__class__
        if cls is dict:
            return self._mapping(value, depth)
        if cls is list:
            return self._sequence(value, depth)
        self.nodes += 1
        return self._scalar(value, cls)

    # Leaves are checked in their container's loop, not by a call each: a document is
    # mostly strings, and this walk is a large part of reading one (bench/run.py).

    def _mapping(self, mapping: dict[str, Any], depth: int) -> dict[str, Any]:
        if depth > _MAX_DEPTH:
            raise _Decline
        nodes = 1
        for key, item in mapping.items():
            if key[:1] in _KEY_HINTS and not _same_key(key):
                raise _Decline
            if key == "<<":
                raise _Decline  # a merge key (or a quoted "<<": libyaml's path tells them apart)
            cls = item.__class__
            if cls is str:
                nodes += 1
                if item[:1] in _VALUE_HINTS and not self._string_as_written(item):
                    raise _Decline
            elif cls is dict:
                self._mapping(item, depth + 1)
            elif cls is list:
                self._sequence(item, depth + 1)
            else:
                nodes += 1
                checked = self._scalar(item, cls)
                if checked is not item:
                    mapping[key] = checked
        self.nodes += nodes
        return mapping

    def _sequence(self, sequence: list[Any], depth: int) -> list[Any]:
        if depth > _MAX_DEPTH:
            raise _Decline
        nodes = 1
        for position, item in enumerate(sequence):
            cls = item.__class__
            if cls is str:
                nodes += 1
                if item[:1] in _VALUE_HINTS and not self._string_as_written(item):
                    raise _Decline
            elif cls is dict:
                self._mapping(item, depth + 1)
            elif cls is list:
                self._sequence(item, depth + 1)
            else:
                nodes += 1
                checked = self._scalar(item, cls)
                if checked is not item:
                    sequence[position] = checked
        self.nodes += nodes
        return sequence

    def _scalar(self, value: Any, cls: type) -> Any:
        if cls is str:
            if value[:1] in _VALUE_HINTS and not self._string_as_written(value):
                raise _Decline
            return value
        if cls is float:
            if math.isinf(value):  # 1e400: go-yaml keeps such a scalar as text
                raise _Decline
            return go_json_number(value)
        if cls is int and not _INT64[0] <= value < _INT64[1]:
            raise _Decline  # uint64 and beyond: construct.py's
        return value  # bool, None, int

    def _string_as_written(self, value: str) -> bool:
        first = value[:1]
        if first in _RESERVED_STARTS:
            # Quoted, it is text; plain, libyaml refuses it ("cannot start any token", or
            # no node content before `]` or `}`), which rapidyaml does not.
            return not any_at_node_start(self.text, first)
        stays_text = _STAYS_TEXT.get(value)
        if stays_text is None:
            stays_text = value not in _REWRITTEN and resolve_plain(value).__class__ is str
            if len(_STAYS_TEXT) < _CACHE_MAX:
                _STAYS_TEXT[value] = stays_text
        if stays_text:
            return True
        if value in _REWRITTEN:
            return False
        if _emitted_as_json_scalar(value):
            return True  # rapidyaml writes it plain as a number or true/false/null: this was quoted
        # Quoted in the text, unless the text also holds it bare somewhere -- then only
        # libyaml's tree can say which is which.
        return not _spelled_bare(self.text, value)


_EMITTED_AS_SCALAR: dict[str, bool] = {}


def _emitted_as_json_scalar(value: str) -> bool:
    """Whether rapidyaml's JSON emitter writes the plain scalar `value` as a JSON number,
    true, false or null (`9090`, `true`), as it does whatever the context: then a JSON
    string `value` can only come from a quoted (or block) scalar.  Asked of rapidyaml
    once per spelling."""
    known = _EMITTED_AS_SCALAR.get(value)
    if known is None:
        try:
            tree = _Rapidyaml.native.quiet.parse(b"a: " + value.encode("ascii"))
            emitted = json.loads(_Rapidyaml.native.emit_json(tree, _Rapidyaml.native.tree.root_id(tree)))
            known = emitted.__class__ is dict and emitted.get("a").__class__ is not str and len(emitted) == 1
        except Exception:  # not a scalar rapidyaml reads alone: no conclusion
            known = False
        if len(_EMITTED_AS_SCALAR) < _CACHE_MAX:
            _EMITTED_AS_SCALAR[value] = known
    return known


def _same_key(key: str) -> bool:
    """Whether go-yaml makes `key` the same string whether it was written plain or quoted."""
    same = _SAME_KEYS.get(key)
    if same is None:
        same = _same_key_uncached(key)
        if len(_SAME_KEYS) < _CACHE_MAX:
            _SAME_KEYS[key] = same
    return same


def _same_key_uncached(key: str) -> bool:
    if key in _REWRITTEN or key[:1] == " " or key[:1] in _RESERVED_STARTS:
        # A blank first: rapidyaml's key for a mis-indented line; a reserved character
        # first: a key libyaml may refuse (see `_RESERVED_STARTS`).  Both left to libyaml.
        return False
    resolved = resolve_plain(key)
    cls = resolved.__class__
    if cls is str:
        return True
    return (cls is bool or cls is int) and key_string((cls, resolved)) == key


_AFTER_BARE = frozenset(" \n,]}:#")


def _spelled_bare(text: str, value: str) -> bool:
    """Whether `text` may hold `value` as a plain scalar: where it stands at a node start
    and is followed by a blank, a line end, a flow indicator or `:`."""
    position = text.find(value)
    size = len(value)
    while position >= 0:
        after = text[position + size : position + size + 1] or "\n"
        if after in _AFTER_BARE and at_node_start(text, position):
            return True
        position = text.find(value, position + 1)
    return False


def _no_constant(name: str) -> Any:
    raise _Decline  # NaN, Infinity: never from rapidyaml for a plain scalar, but never accepted


#: One decoder for every document (json.loads with an argument makes one per call).
_JSON = json.JSONDecoder(parse_constant=_no_constant)


def _unsafe(text: str) -> bool:
    """Text holding what this reader leaves to libyaml (see the module docstring)."""
    return (
        not text.isascii()
        # Deleting the printable characters and LF leaves nothing: _NOT_PRINTABLE_ASCII
        # finds nothing, at a fraction of its cost (a table lookup per byte, in C).
        or bool(text.encode("ascii").translate(None, _PRINTABLE_ASCII))
        or text.startswith("%")
        or "\n%" in text
        or ("..." in text and _DOCUMENT_END.search(text) is not None)
        or "\\" in text  # escapes: libyaml and go-yaml know fewer than rapidyaml
        or "<<" in text
        or ("?" in text and ("[" in text or "{" in text))
        or _misread_colon(text)
        or (("#" in text) and _comment_may_be_in_flow(text))
        or ((" \n" in text or text.endswith(" ")) and _blank_line_in_scalar(text))
        # A block scalar ending the text without a line break: libyaml keeps no final
        # break, rapidyaml adds one (the reader's documents always end with one).
        or (not text.endswith("\n") and _SCALAR_OVER_LINES.search(text) is not None)
        or _key_libyaml_refuses(text)
        or _flow_read_otherwise(text)
        or _more_after_a_closed_item(text)
        or _node_start_libyaml_refuses(text)
    )


# What rapidyaml reads at a node's start otherwise than libyaml (adversarial runs found each):
# a block scalar header followed by anything but blanks and a comment, which libyaml refuses;
# a header without a chomping indicator whose comment holds `-` or `+`, which rapidyaml
# takes for one (`k: |  # a - b` loses its final line break); and an explicit key `?`, which
# rapidyaml reads with nothing after it as the key "" (libyaml: a null key, which kubectl
# refuses) and whose lines it places elsewhere than libyaml.  A scalar starting with a character that cannot start a
# plain one is the value walk's (`_RESERVED_STARTS`).
#: A block scalar's header as both read it alike: an indentation digit (1-9) and a chomping
#: indicator, each at most once and in either order, then blanks, a comment (without `-` or
#: `+` where no chomping indicator came before it) or the line's end.
_BLOCK_HEADER = re.compile(
    r"[|>](?:(?:[1-9][-+]|[-+][1-9]?)(?: +#| *+\n| *+$)|[1-9]?(?: +#[^-+\n]*+(?:\n|$)| *+\n| *+$))"
)


def _node_start_libyaml_refuses(text: str) -> bool:
    """Whether `text` may start a node with a block scalar header or an explicit key that
    libyaml refuses, or reads or places otherwise than rapidyaml."""
    for where in node_starts(text, "?"):
        if text[where + 1 : where + 2] in ("", " ", "\n"):
            return True
    return any(_BLOCK_HEADER.match(text, where) is None for char in "|>" for where in node_starts(text, char))


# libyaml, and go-yaml after it, refuse an implicit key that spans lines or whose `:` comes
# more than 1,024 characters after the key starts (yaml_parser_stale_simple_keys: a key so
# long or over lines is stale, and its `:` is then "not allowed in this context"); rapidyaml
# takes both.  Screened loosely, as the rest: text that only may hold such a key is declined.
#: A quoted scalar over lines followed by `:` (no backslash gets this far, so a double quote
#: always ends a double-quoted scalar; `''` is a single-quoted scalar's quote).
#: Two searches, each starting with its quote (found as fast as a substring; see `_misread_colon`).
_DOUBLE_QUOTED_KEY_OVER_LINES = re.compile(r"\"[^\"\n]*+\n[^\"]*+\" *:")
_SINGLE_QUOTED_KEY_OVER_LINES = re.compile(r"'[^'\n]*+(?:''[^'\n]*+)*+\n[^']*+(?:''[^']*+)*+' *:")
#: Past this many characters of a line, a `:` may end a key libyaml finds too long.
_KEY_LENGTH_LIMIT = 1024
_LONG_LINE = re.compile(rf"\n[^\n]{{{_KEY_LENGTH_LIMIT}}}")


def _key_libyaml_refuses(text: str) -> bool:
    """Whether `text` may hold an implicit key libyaml refuses: over lines, or too long
    (in a flow collection over lines: `_flow_read_otherwise`)."""
    if '"' in text and _DOUBLE_QUOTED_KEY_OVER_LINES.search(text) is not None:
        return True
    if "'" in text and _SINGLE_QUOTED_KEY_OVER_LINES.search(text) is not None:
        return True
    return len(text) > _KEY_LENGTH_LIMIT and _long_key(text)


# A flow collection over lines, where rapidyaml reads otherwise than libyaml:
# * a plain scalar that goes on over lines to a `:`: an implicit key over lines, which
#   libyaml refuses (a quote inside the scalar, `{n'` then `me: x}`, is still plain);
# * a blank line (empty or spaces only) inside it: rapidyaml keeps a line break of it at
#   the end of the scalar before it (`{a: b` + blank line + `}` reads `"b\n"`, and a
#   quantity `1` becomes the string `"1\n"`) and joins a key's two halves around it.
#: A line that ends in a plain scalar (not after `,`, `[`, `{` or `:`, nor in a closing
#: bracket), maybe then blanks, and a next line holding a `:`.
_PLAIN_OVER_LINES_TO_COLON = re.compile(r"[^\s,\[\]{}:] *+\n[^\n]*:")
_BLANK_LINE_AHEAD = re.compile(r"\n *\n")


def _flow_read_otherwise(text: str) -> bool:
    """Whether `text` may hold a flow collection over lines that rapidyaml reads otherwise
    than libyaml (screened loosely: from the first line where one may open)."""
    if "[" not in text and "{" not in text:
        return False
    flow = _flow_over_lines(text)
    return flow >= 0 and (
        _PLAIN_OVER_LINES_TO_COLON.search(text, flow) is not None or _BLANK_LINE_AHEAD.search(text, flow) is not None
    )


# A block sequence item that is a quoted scalar or a flow collection (on the item's line or
# starting the next), and more on its line after it: another `- ` item or a plain `key:`.
# libyaml refuses it ("block sequence entries are not allowed in this context", "did not
# find expected key"); rapidyaml reads `- 'q' - x` as two items and `- [a] a: b` as a key
# of the mapping above.
#: Where such a line may be: a closing quote or bracket, blanks, then more than a comment
#: (or than a `:` after a key, or a flow collection's `,` or closing bracket).
_CLOSER_THEN_MORE = re.compile(r"[\]}'\"] ++[^ #\n\]},:]")
#: The line, from its start.
_MORE_AFTER_A_CLOSED_ITEM = re.compile(
    r" *(?:- +)*(?:'(?:[^'\n]|'')*'|\"[^\"\n]*\"|\[[^\n]*\]|\{[^\n]*\}) +[^ #\n\]},:]"
)


def _more_after_a_closed_item(text: str) -> bool:
    flow = None  # `_flow_over_lines(text)`, worked out at the first closing bracket
    for match in _CLOSER_THEN_MORE.finditer(text):
        closer = match.start()
        line = text.rfind("\n", 0, closer) + 1
        if _MORE_AFTER_A_CLOSED_ITEM.match(text, line) is not None:
            return True
        # Or the item opened on an earlier line: a quoted scalar over lines, closed here at
        # its quote (an apostrophe in a plain scalar, `tenants' isolated`, closes nothing
        # that opened at a node start), or a flow collection over lines (its brackets are
        # not matched: a quoted `]` inside would mislead a count).
        if text[closer] in "]}":
            if flow is None:
                flow = _flow_over_lines(text)
            if flow >= 0:
                return True
            continue
        opener = _quote_opening(text, closer)
        if 0 <= opener < line and at_node_start(text, opener):
            return True
    return False


def _quote_opening(text: str, closer: int) -> int:
    """Where the quoted scalar that the quote `text[closer]` may close opens: the quote
    before it, past a single-quoted scalar's `''`; -1 where there is none."""
    char = text[closer]
    opener = text.rfind(char, 0, closer)
    while char == "'" and opener > 0 and text[opener - 1] == "'":
        opener = text.rfind("'", 0, opener - 1)
    return opener


def _long_key(text: str) -> bool:
    """A `:` past the first _KEY_LENGTH_LIMIT characters of a line (a key starts on its line)."""
    lines = "\n" + text  # so the first line is found as the others are, after a break
    for match in _LONG_LINE.finditer(lines):
        start = match.start() + 1
        end = lines.find("\n", start)
        if lines.find(":", start + _KEY_LENGTH_LIMIT, end if end >= 0 else len(lines)) >= 0:
            return True
    return False


def _flow_over_lines(text: str) -> int:
    """Where the first line starts on which a flow collection may open and go on past the
    line (see `_flow_closes_on_line`); -1 where none may."""
    for start, end in _lines_opening_flow(text):
        if end == len(text):
            return -1  # the last line: nothing follows it
        line = text[start:end]
        closes = _FLOW_CLOSES.get(line)
        if closes is None:
            closes = _flow_closes_on_line(line)
            if len(_FLOW_CLOSES) < _CACHE_MAX:
                _FLOW_CLOSES[line] = closes
        if not closes:
            return start
    return -1


#: Lines with a flow collection seen before, and whether it closes on them: manifests
#: repeat them (`resources: {}`, `- {name: http, containerPort: 8080}`).
_FLOW_CLOSES: dict[str, bool] = {}
_FLOW_OR_QUOTE = re.compile(r"[\[\]{}#\"']")


def _flow_closes_on_line(line: str) -> bool:
    """Whether every flow collection on `line` closes on it: brackets counted as
    `_closed_line` counts them, and a quoted scalar skipped whole where one may start (at
    the line's start, or after a blank, `[`, `{` or `,`) if it ends on the line.  A quote
    anywhere else, or one left open, answers no."""
    depth = 0
    position = 0
    while (token := _FLOW_OR_QUOTE.search(line, position)) is not None:
        char, where = token.group(), token.start()
        position = where + 1
        if char in "\"'":
            if where and line[where - 1] not in " [{,":
                return False
            end = where
            while True:  # a single-quoted scalar's quote is written twice
                end = line.find(char, end + 1)
                if end < 0:
                    return False
                if char == '"' or line[end + 1 : end + 2] != "'":
                    break
                end += 1
            position = end + 1
        elif char == "#":
            if depth:
                return False
            if where == 0 or line[where - 1] == " ":
                return True  # a comment in block context: the rest of the line is text
        elif char in "[{":
            depth += 1
        elif depth:
            depth -= 1
    return depth == 0


#: `...` first on a line: rapidyaml ends the document there even where the line is indented
#: (libyaml reads an indented one as a plain scalar, and refuses it where no key is allowed).
_DOCUMENT_END = re.compile(r"(?:^|\n) *+\.\.\.")


# rapidyaml reads a `:` where a node starts, with no key before it, as an empty key:
# `{: b}`, `[a, : b]`, a line `: b` or `:` under a block mapping -- and `[:x]` as the
# scalar ":x", `{a:}` and `[a:, b]` as a key with no value.  libyaml, and so kubectl,
# refuse all of them.  A node starts at the start of the text or of a line (after
# indentation), after `[`, `{` or `,`, and after `- `, `? ` or `: `; any `:` there is
# declined (a line `: b` after `? key`, `- :x` and `a: :x` are valid, and left to
# libyaml too), and so is any `:` directly before `,`, `]`, `}` or `:` (`{"a"::b}`).  Text where this
# matches inside a scalar (`a: "x, :y"`) is declined as well: libyaml reads it.
_MISREAD_COLON = re.compile(r"(?:^|[\n\[{,]|[-?:] ) *:|:[,\]}:]")
# The same, as searches that each start at a character the text seldom holds where it
# matches (tests/test_fast_reader.py holds them to the pattern above): one pattern with
# `^` in an alternation is tried at every position, and cost more than parsing the text.
# First, what every match past the text's start holds: a `:` before `,`, `]`, `}` or
# `:`, or after a line end, a blank, `[`, `{` or `,`.  Starting with the literal `:`, it
# is searched for as fast as a substring; a manifest's colons follow their keys, so the
# four searches below seldom run (together they cost about 15 us per document).
_COLON_MAY_BE_MISREAD = re.compile(r":(?:(?=[,\]}:])|(?<=[\n\[{, ]:))")
_COLON_BEFORE = re.compile(r":[,\]}:]")
_COLON_STARTS_LINE = re.compile(r"\n *+:")
_COLON_IN_FLOW = re.compile(r"[\[{,] *+:")
_COLON_AFTER_INDICATOR = re.compile(r"[-?:] +:")


def _misread_colon(text: str) -> bool:
    """`_MISREAD_COLON.search(text) is not None`, faster."""
    return ":" in text and (
        text.lstrip(" ").startswith(":")
        or (
            _COLON_MAY_BE_MISREAD.search(text) is not None
            and (
                _COLON_BEFORE.search(text) is not None
                or _COLON_STARTS_LINE.search(text) is not None
                or _COLON_IN_FLOW.search(text) is not None
                or _COLON_AFTER_INDICATOR.search(text) is not None
            )
        )
    )


def _comment_may_be_in_flow(text: str) -> bool:
    """Whether a `#` may stand inside a flow collection (`{adminAccess: true #x}`):
    rapidyaml reads such a comment into the scalar before it, libyaml ends the scalar
    there (and then refuses the unclosed collection).  Conservative, line by line:

    A flow collection can only open at `[` or `{`.  Before the first of them, and on
    each later line that holds none, nothing has changed if every line with one so far
    was *closed*: it holds no quote character, its brackets counted from 0 (a closer at
    0 stays at 0: text such as `a: x]`) are back to 0 at its end, and no `#` stands
    where the count is above 0.  On such a line the count is never below the real
    depth (without quotes, every bracket inside a flow collection is an indicator, and
    the text before the collection opened adds at least 0), so no comment was inside a
    flow collection and none stays open after it.  A `#` after the first line that is
    not closed (a quoted scalar, a collection spanning lines) makes the text unsafe."""
    for start, end in _lines_opening_flow(text):
        if not _closed_line(text, start, end):
            return text.find("#", start) >= 0
    return False


def _lines_opening_flow(text: str) -> Iterator[tuple[int, int]]:
    """Where each line holding a `[` or `{` starts and ends (its line break, or the text's
    end), in order."""
    # The first `[` and the first `{` past the lines looked at, each found as a substring
    # (a search for the class [\[{] tests every character, and cost three times as much):
    # once a line is given, an opener on it is searched for again from its end.
    bracket, brace = text.find("["), text.find("{")
    while bracket >= 0 or brace >= 0:
        opener = bracket if brace < 0 or 0 <= bracket < brace else brace
        start = text.rfind("\n", 0, opener) + 1
        end = text.find("\n", opener)
        if end < 0:
            end = len(text)
        yield start, end
        if 0 <= bracket < end:
            bracket = text.find("[", end)
        if 0 <= brace < end:
            brace = text.find("{", end)


def _closed_line(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] is a line whose flow collections all close on it, with no
    comment inside one and no quote at all (see `_comment_may_be_in_flow`)."""
    line = text[start:end]
    return "'" not in line and '"' not in line and _flow_closes_on_line(line)


_BLANK_LINE = re.compile(r"(?:^|\n) +(?:\n|$)")
# The same after a line break: starting with a literal, it is searched for fast (`^` in
# an alternation is tried at every position); `_blank_line` adds the text's first line.
_BLANK_LINE_AFTER_BREAK = re.compile(r"\n +(?:\n|$)")
# A block scalar's header (`|`, `>-`, `|2+`, ...), and a quote, which may open a scalar
# spanning lines; matched loosely: text that only looks so is declined too.
_SCALAR_OVER_LINES = re.compile(r"[|>][-+0-9]* *(?:#[^\n]*)?(?:\n|$)|[\"']")


def _blank_line_in_scalar(text: str) -> bool:
    """Whether a line of spaces only may stand inside a scalar that spans lines: rapidyaml
    drops the spaces of such lines in block scalars (`>+1`, indented `|`), which libyaml keeps
    where they are content."""
    return _blank_line(text) and _SCALAR_OVER_LINES.search(text) is not None


def _blank_line(text: str) -> bool:
    """`_BLANK_LINE.search(text) is not None`, faster."""
    return _BLANK_LINE_AFTER_BREAK.search(text) is not None or (
        text.startswith(" ") and text.lstrip(" ")[:1] in ("", "\n")
    )


class Parsed:
    """A document's text and rapidyaml's tree of it, parsed in place: each key and scalar
    of the tree is a view into `buffer`, a copy of the text (see `FastLines`)."""

    __slots__ = ("buffer", "text", "tree")

    def __init__(self, text: str, buffer: bytearray, tree: Any) -> None:
        self.text, self.buffer, self.tree = text, buffer, tree


def parse_plain(texts: Sequence[str | None]) -> list[Parsed | None]:
    """rapidyaml's tree of each text it may read (see above), or None: parsed together,
    so that descriptor 2 is swapped once for them all, not once per document."""
    if _Rapidyaml.load() is None:
        return [None] * len(texts)
    buffers = [
        None if text is None or _unsafe(text) or node_property(text) else bytearray(text, "ascii") for text in texts
    ]
    trees = _Rapidyaml.native.quiet.parse_in_place(buffers)
    return [
        None if tree is None or text is None or buffer is None else Parsed(text, buffer, tree)
        for text, buffer, tree in zip(texts, buffers, trees, strict=True)
    ]


def parse_plain_when_worth_it(texts: Sequence[str | None], before: int) -> list[Parsed | None]:
    """`parse_plain` of the texts of a stream's documents `before + 1`, `before + 2`, ...:
    of every one after `read_fast_from_start`, else of those past its AUTO_AFTER_DOCUMENTS-th
    document (a stream that long pays for rapidyaml's import); None for the others (libyaml
    reads them)."""
    if _Rapidyaml.from_start:
        return parse_plain(texts)
    early = max(0, min(len(texts), AUTO_AFTER_DOCUMENTS - before))
    if early == 0:
        return parse_plain(texts)
    if early == len(texts):
        return [None] * early
    return [None] * early + parse_plain(texts[early:])


def decode_plain(text: str, parsed: Parsed | _Unparsed | None = UNPARSED) -> Any:
    """The JSON value of the one document in `text`, `EMPTY`, or `DECLINED` (see above);
    `parsed` is `parse_plain`'s result for it (None: declined there), if it has one."""
    if isinstance(parsed, _Unparsed):
        parsed = parse_plain([text])[0]
    if parsed is None:
        return DECLINED
    tree, calls = parsed.tree, _Rapidyaml.native.tree
    root = calls.root_id(tree)
    nodes = calls.size(tree)
    if calls.is_stream(tree, root):  # a `---` line opens the text
        if calls.num_children(tree, root) != 1:
            return DECLINED
        root = calls.first_child(tree, root)
        nodes -= 1
    if not calls.is_map(tree, root) and not calls.is_seq(tree, root) and not calls.has_val(tree, root):
        return EMPTY  # blank, or comments only
    try:
        emitted = _Rapidyaml.native.emit_json(tree, root)
    except Exception:  # rapidyaml's own error (ExceptionVisit past 64 levels of nesting): libyaml reads it
        return DECLINED
    try:
        value = _JSON.decode(emitted.decode("utf-8", "surrogatepass"))
        checker = _Checker(text)
        value = checker.value(value, 0)
    except (_Decline, ValueError, RecursionError):
        return DECLINED
    if checker.nodes != nodes:
        return DECLINED  # a duplicate key (JSON kept the last): libyaml's path says how kubectl reads it
    if value is None:
        return EMPTY
    return value


class FastLines:
    """Lines of paths into a document `decode_plain` accepted, from rapidyaml's tree.

    The document is parsed again in place, so that each key and scalar of the tree is a
    view into a buffer whose address is known: its offset there is its offset in the
    text (filtering rewrites a scalar where it starts).  libyaml marks a mapping entry at
    its key and a sequence item where the item starts; `line` gives the 0-based line of
    the deepest node on a path so, or None where rapidyaml's tree cannot tell the same
    (an item in flow style or a block scalar, a nested sequence, an empty node).
    """

    def __init__(self, parsed: Parsed | None, root_line: int) -> None:
        self._root_line = root_line
        self._tree: Any = None
        self._base: int | None = None
        if parsed is None or not _Rapidyaml.native.knows_addresses:
            return
        self._text, self._buffer, self._tree = parsed.text, parsed.buffer, parsed.tree
        self._base = _Rapidyaml.native.base_address(self._buffer)
        if self._base is None:  # an empty buffer: nothing to place
            self._tree = None

    def _line_at(self, view: Any) -> int | None:
        if view is None or len(view) == 0 or self._base is None:
            return None
        address = _Rapidyaml.native.address(view)
        if address is None:
            return None
        offset = address - self._base
        if not 0 <= offset < len(self._buffer):
            return None
        return self._text.count("\n", 0, offset)

    def _item_line(self, node: int) -> int | None:
        tree, calls = self._tree, _Rapidyaml.native.tree
        if calls.is_map(tree, node):
            if not calls.is_block(tree, node) or calls.num_children(tree, node) == 0:
                return None
            return self._line_at(calls.key(tree, calls.first_child(tree, node)))
        if calls.is_seq(tree, node) or not calls.has_val(tree, node) or calls.val_is_null(tree, node):
            return None
        if calls.is_val_literal(tree, node) or calls.is_val_folded(tree, node):
            return None  # libyaml marks the indicator, the tree holds the text after it
        return self._line_at(calls.val(tree, node))

    def line(self, path: tuple[str | int, ...]) -> int | None:
        tree, calls = self._tree, _Rapidyaml.native.tree
        if tree is None:
            return None
        node = calls.root_id(tree)
        if calls.is_stream(tree, node):
            node = calls.first_child(tree, node)
        # The deepest node found, and whether it is a mapping entry (marked at its key)
        # or a sequence item (marked where it starts); its line is worked out once.
        deepest, entry = None, False
        for part in path:
            if calls.is_map(tree, node):
                child = calls.find_child(tree, node, str(part).encode("ascii", "replace"))
                if child == _NONE:
                    break
                deepest, entry = child, True
            elif calls.is_seq(tree, node) and isinstance(part, int) and 0 <= part < calls.num_children(tree, node):
                child = calls.child(tree, node, part)
                deepest, entry = child, False
            else:
                break
            node = child
        if deepest is None:
            return self._root_line
        return self._line_at(calls.key(tree, deepest)) if entry else self._item_line(deepest)
