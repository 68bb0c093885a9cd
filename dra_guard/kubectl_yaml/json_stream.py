"""A JSON stream, as kubectl reads a file whose first non-blank character is `{`.

From kubernetes/apimachinery v0.32.4 (commit 59e9003f02d6f0c8fff53719a7a0604ec82ee9a9):
`pkg/util/yaml/decoder.go` hands such a file to Go's `json.Decoder`, which reads one
value after another, blanks (space, tab, CR, LF) between them; a syntax error stops the
file.  `pkg/apis/meta/v1/unstructured/helpers.go` decodes each value with
`pkg/util/json` (sigs.k8s.io/json): an integer literal that fits int64 stays an
integer, every other number is a float64 (one that overflows is an error for that
object only), duplicate keys keep the last value, and `\\ud800`-style lone surrogates
become U+FFFD.  `null` values are skipped (cli-runtime `pkg/resource/visitor.go`).

Duplicate keys matter twice: the object keeps the last value, while the typed check of
apiVersion, kind and metadata (objects.py) sees every one; objects with duplicates keep
their pairs for it (`Pairs`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from dra_guard.kubectl_yaml.errors import Refusal
from dra_guard.kubectl_yaml.gojson import go_json_number
from dra_guard.kubectl_yaml.resolve import INT64_MAX

_BLANKS = re.compile(r"[ \t\r\n]*")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_MAX_INT_DIGITS = 4000


class Pairs(dict[str, Any]):
    """A JSON object with a duplicate key: the last value wins, `pairs` keeps them all."""

    pairs: list[tuple[str, Any]]


class JSONFloat(float):
    """A number written with a fraction or exponent, or too large for int64 (a float64 in Go)."""


@dataclass
class JSONValue:
    value: Any
    start: int
    end: int
    #: 1-based line where the value starts.
    line: int
    #: Why kubectl or dra-guard refuses this value (kubectl goes on with the next).
    refusal: str | None = None
    #: Whether the value holds JSONFloat numbers or Pairs (see `normalize`).
    special: bool = False


class _NotJSON(Exception):
    """NaN, Infinity and -Infinity: Python's json reads them, Go's does not."""


class _State:
    def __init__(self) -> None:
        self.floats = False
        self.bad_number: str | None = None
        self.duplicates = False


def _decoder(state: _State) -> json.JSONDecoder:
    def parse_float(text: str) -> float:
        value = JSONFloat(text)
        if math.isinf(value):
            state.bad_number = text[:40]
        state.floats = True
        return value

    def parse_int(text: str) -> int | float:
        if len(text) > _MAX_INT_DIGITS:
            state.bad_number = text[:40] + "..."
            return 0
        value = int(text)
        if -INT64_MAX - 1 <= value <= INT64_MAX:
            return value
        state.floats = True
        try:
            return JSONFloat(value)
        except OverflowError:
            state.bad_number = text[:40] + "..."
            return 0

    def reject_constant(name: str) -> Any:
        raise _NotJSON(name)

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(items)
        if len(result) != len(items):
            state.duplicates = True
            result = Pairs(result)
            result.pairs = items
        return result

    return json.JSONDecoder(
        parse_float=parse_float, parse_int=parse_int, parse_constant=reject_constant, object_pairs_hook=pairs
    )


def json_values(text: str, stop: int | None = None) -> Iterator[JSONValue]:
    """Each value of the stream; raises Refusal (kubectl stops) on a syntax error.

    `stop`: where the file's first byte that is not UTF-8 stands in `text` (as U+FFFD).
    Only the values that end before it are given, and a syntax error at or after it ends
    the stream quietly: the caller reports the byte, which is what stops kubectl there.
    """
    position = _BLANKS.match(text, 0).end()  # type: ignore[union-attr]
    line = 1 + text.count("\n", 0, position)
    while position < len(text) and (stop is None or position < stop):
        state = _State()
        try:
            value, end = _decoder(state).raw_decode(text, position)
        except json.JSONDecodeError as error:
            if stop is not None and error.pos >= stop:
                return
            raise Refusal(f"invalid JSON: {error.msg}", line=error.lineno - 1) from None
        except _NotJSON as error:
            raise Refusal(f"invalid JSON: {error} is not a JSON value", line=line - 1) from None
        except RecursionError:
            raise Refusal("JSON nested too deeply to check", kubectl_stops=False, line=line - 1) from None
        if stop is not None and end > stop:
            return  # the byte is inside this value: kubectl would send U+FFFD, which we refuse
        item = JSONValue(value, position, end, line, special=state.floats or state.duplicates)
        if state.bad_number is not None:
            item.refusal = f"the number {state.bad_number} does not fit a 64-bit float"
        elif _SURROGATE_ESCAPE.search(text, position, end):
            try:
                item.value = _replace_surrogates(value)
            except Refusal as refusal:
                item.refusal = refusal.message
            except RecursionError:
                item.refusal = "JSON nested too deeply to check"
        yield item
        position = _BLANKS.match(text, end).end()  # type: ignore[union-attr]
        line += text.count("\n", item.start, position)


def normalize(value: Any) -> Any:
    """Numbers as kubectl sends them (see gojson.go_json_number), plain dicts."""
    cls = value.__class__
    if cls is JSONFloat:
        return go_json_number(value)
    if cls is dict or cls is Pairs:
        return {key: normalize(item) for key, item in value.items()}
    if cls is list:
        return [normalize(item) for item in value]
    return value


def _replace_surrogates(value: Any) -> Any:
    cls = value.__class__
    if cls is str:
        return _SURROGATE.sub("\ufffd", value)
    if cls is dict or cls is Pairs:
        result: dict[str, Any] = {}
        for written, item in value.items():
            key = _SURROGATE.sub("\ufffd", written)
            if key in result:
                raise Refusal("two keys differ only in invalid surrogates", kubectl_stops=False)
            result[key] = _replace_surrogates(item)
        return result
    if cls is list:
        return [_replace_surrogates(item) for item in value]
    return value
