"""rapidyaml (PyPI `rapidyaml`) as a fast reader for the plain documents most manifests are.

libyaml through PyYAML (parser.py) stays the reference: it reads every document this
module declines, gives every refusal and error its message and line, and gives lines
for findings (a document with a finding is parsed again there, once; see
`dra_guard.loader`).  This module takes only documents that leave nothing to chance:

* The text is printable ASCII with LF line ends (no tabs, CR, NEL, LS, PS or control
  characters, where YAML parsers have differed), holds no `%` directive, no `\\/`
  escape, no `?` next to a flow collection, no alias, anchor or tag candidate (the
  triggers that send parser.py to its event composer as well), and no `...` line.
* No anchor, tag or alias stands at a node start (parser.node_property), no `<<`, no
  backslash; rapidyaml parses it without error into one document.
* Its JSON emitter's output, read with json.loads, is then held to construct.py's
  reading of libyaml's tree: numbers made what kubectl sends, a string go-yaml would
  resolve when plain kept only when it cannot have been plain, keys kept only when
  go-yaml makes the same string of them; duplicates (counted against the tree's nodes),
  NaN, infinity, uint64 and the nan/inf spellings rapidyaml rewrites are declined.

`decode_plain(text)` returns the document's value, `EMPTY` for a document with no
node, or `DECLINED`.  Whether a declined document would be refused is not this
module's business: the caller reads it with libyaml.  `tests/test_fast_reader.py`
holds both readers to the same objects, lines and errors on the differential corpus,
and `tests/test_kubectl_differential.py` runs against kubectl with each.

`DRA_GUARD_YAML_PARSER=pyyaml` turns this reader off; `=rapidyaml` requires it (an
error at start-up if the wheel is missing); unset, it is used when `ryml` imports.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
from typing import Any

from dra_guard.kubectl_yaml.construct import key_string
from dra_guard.kubectl_yaml.gojson import go_json_number
from dra_guard.kubectl_yaml.parser import at_node_start, node_property
from dra_guard.kubectl_yaml.resolve import resolve_plain

PARSER_VARIABLE = "DRA_GUARD_YAML_PARSER"
PARSERS = ("pyyaml", "rapidyaml")

DECLINED: Any = object()
EMPTY: Any = object()

# Characters outside printable ASCII and LF (tabs, CR, control characters): YAML
# parsers have differed on them, so libyaml reads such text.
_NOT_PRINTABLE_ASCII = re.compile(r"[^\n\x20-\x7e]")


class _Decline(Exception):
    pass


class UnavailableParser(RuntimeError):
    """`DRA_GUARD_YAML_PARSER=rapidyaml` where the rapidyaml wheel does not import."""


def _load() -> Any:
    """The ryml module, or None when the fast reader is off or unavailable."""
    choice = os.environ.get(PARSER_VARIABLE, "").strip().lower()
    if choice and choice not in PARSERS:
        raise UnavailableParser(f"{PARSER_VARIABLE}={choice!r}: expected one of {', '.join(PARSERS)}")
    if choice == "pyyaml":
        return None
    try:
        import ryml
    except ImportError as error:
        if choice == "rapidyaml":
            raise UnavailableParser(
                f"{PARSER_VARIABLE}=rapidyaml, but the rapidyaml package does not import ({error})"
            ) from None
        return None
    return ryml


_ryml: Any = _load()


def active_parser() -> str:
    """The parser that reads plain documents: "rapidyaml" or "pyyaml"."""
    return "rapidyaml" if _ryml is not None else "pyyaml"


#: Plain scalars that may resolve to something other than their text (resolve.py's hints).
_HINTS = frozenset("+-0123456789yYnNtTfFoO~.")
#: What rapidyaml's JSON emitter writes for the plain scalars nan, inf, .Inf, ... (it
#: rewrites their spelling), so a string spelled so is never taken as written.
_REWRITTEN = frozenset((".nan", ".inf", "-.inf", "+.inf"))
_INT64 = (-(1 << 63), 1 << 63)
#: Strings and keys seen before: manifests repeat them (kinds, names, quantities).
_STAYS_TEXT: dict[str, bool] = {}
_SAME_KEYS: dict[str, bool] = {}
_CACHE_MAX = 65536
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
        self.nodes += 1
        cls = value.__class__
        if cls is str:
            if value[:1] in _HINTS and not self._string_as_written(value):
                raise _Decline
            return value
        if cls is dict:
            if depth > _MAX_DEPTH:
                raise _Decline
            for key, item in value.items():
                if key[:1] in _HINTS and not _same_key(key):
                    raise _Decline
                if key == "<<":
                    raise _Decline  # a merge key (or a quoted "<<": libyaml's path tells them apart)
                checked = self.value(item, depth + 1)
                if checked is not item:
                    value[key] = checked
            return value
        if cls is list:
            if depth > _MAX_DEPTH:
                raise _Decline
            for position, item in enumerate(value):
                checked = self.value(item, depth + 1)
                if checked is not item:
                    value[position] = checked
            return value
        if cls is float:
            if math.isinf(value):  # 1e400: go-yaml keeps such a scalar as text
                raise _Decline
            return go_json_number(value)
        if cls is int and not _INT64[0] <= value < _INT64[1]:
            raise _Decline  # uint64 and beyond: construct.py's
        return value  # bool, None, int

    def _string_as_written(self, value: str) -> bool:
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
            emitted = json.loads(_ryml.emit_json(_parse_quietly(b"a: " + value.encode("ascii"))))
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
    if key in _REWRITTEN:
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


class _QuietStderr:
    """rapidyaml's C++ error handler writes its own text to file descriptor 2 before
    raising; dra-guard reports that document through libyaml instead, with file, line
    and why.  So descriptor 2 points at /dev/null while rapidyaml parses (a lock keeps
    threads from interleaving the swap; a write from another thread in that window is
    lost, which only a parse error makes possible output anyway)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._null: int | None = None
        self._saved: int | None = None

    def parse(self, data: bytes) -> Any:
        with self._lock:
            try:
                if self._null is None:
                    self._null = os.open(os.devnull, os.O_WRONLY)
                saved = os.dup(2)
            except OSError:  # no descriptor 2, or none left: parse as is
                return _ryml.parse_in_arena(data)
            try:
                os.dup2(self._null, 2)
                return _ryml.parse_in_arena(data)
            finally:
                os.dup2(saved, 2)
                os.close(saved)


_quiet = _QuietStderr()
_parse_quietly = _quiet.parse


def _unsafe(text: str) -> bool:
    """Text holding what this reader leaves to libyaml (see the module docstring)."""
    return (
        not text.isascii()
        or _NOT_PRINTABLE_ASCII.search(text) is not None
        or text.startswith(("%", "..."))
        or "\n%" in text
        or "\n..." in text
        or "\\" in text  # escapes: libyaml and go-yaml know fewer than rapidyaml
        or "<<" in text
        or ("?" in text and ("[" in text or "{" in text))
    )


def decode_plain(text: str) -> Any:
    """The JSON value of the one document in `text`, `EMPTY`, or `DECLINED` (see above)."""
    if _ryml is None or _unsafe(text) or node_property(text):
        return DECLINED
    try:
        tree = _parse_quietly(text.encode("ascii"))
    except Exception:  # rapidyaml's parse errors: libyaml says what is wrong, and where
        return DECLINED
    root = tree.root_id()
    nodes = tree.size()
    if tree.is_stream(root):  # a `---` line opens the text
        if tree.num_children(root) != 1:
            return DECLINED
        root = tree.first_child(root)
        nodes -= 1
    if not tree.is_map(root) and not tree.is_seq(root) and not tree.has_val(root):
        return EMPTY  # blank, or comments only
    try:
        value = json.loads(_ryml.emit_json(tree, root), parse_constant=_no_constant)
        checker = _Checker(text)
        value = checker.value(value, 0)
    except (_Decline, ValueError, RecursionError):
        return DECLINED
    if checker.nodes != nodes:
        return DECLINED  # a duplicate key (JSON kept the last): libyaml's path says how kubectl reads it
    if value is None:
        return EMPTY
    return value
