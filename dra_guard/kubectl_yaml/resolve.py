"""Scalars as go-yaml v2 resolves them when kubectl decodes a manifest into `interface{}`.

Rules, from kubernetes-sigs/yaml v1.4.0 (commit c3772b51db126345efe2dfe4ff8dac83b8141684),
`goyaml.v2/resolve.go` and `goyaml.v2/decode.go` (a fork of go-yaml/yaml v2.4.0, commit
7649d4548cb53a614db133b2a8ac1f31859dda8c), and Go's `strconv` (`ParseInt`, `ParseUint`,
`ParseFloat`, base 0):

* Only an untagged plain scalar is resolved; a quoted one, or one with the non-specific
  tag `!`, is a string.  Tags other than !!str, !!bool, !!int, !!float, !!null and
  !!timestamp (local tags such as `!foo`, `!!map`, `!!merge` on a value) leave the
  text as a string; !!binary decodes base64 into the string it encodes.
* The first byte picks the candidates: `+ - 0-9` (numbers), `y Y n N t T f F o O ~`
  (the table only), `.` (table, then a float); anything else is a string.  The table
  holds YAML 1.1 booleans (y Y yes Yes YES true True TRUE on On ON, and n N no No NO
  false False FALSE off Off OFF), nulls ("" ~ null Null NULL), .nan/.inf spellings.
* Numbers: a scalar starting with four digits and `-` is a timestamp and stays the
  text.  Otherwise underscores are dropped, then Go's ParseInt (base 0: `0x`, `0o`, `0b`
  prefixes and a leading `0` for octal; 64 bits) and ParseUint are tried, then a float
  matching `^[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?$` (so `1e3` is a
  float and `1:30` a string: no sexagesimal), then `0b` binary again; a float that
  overflows (`1e400`) stays a string.
* With an explicit tag the resolved kind must match the tag (an !!int may be read as
  !!float), or decoding fails ("cannot decode !!str `x` as a !!int").
"""

from __future__ import annotations

import math
import re
from typing import Any

from dra_guard.kubectl_yaml.errors import Refusal

_TAG = "tag:yaml.org,2002:"
STR = _TAG + "str"
BOOL = _TAG + "bool"
INT = _TAG + "int"
FLOAT = _TAG + "float"
NULL = _TAG + "null"
TIMESTAMP = _TAG + "timestamp"
BINARY = _TAG + "binary"
MERGE = _TAG + "merge"
#: go-yaml `resolvableTag`: the tags whose scalars are resolved at all.
_RESOLVABLE = frozenset({STR, BOOL, INT, FLOAT, NULL, TIMESTAMP})

INT64_MAX = (1 << 63) - 1
UINT64_MAX = (1 << 64) - 1


class Uint64(int):
    """An integer go-yaml types as uint64 (above int64): JSON and map keys treat it apart."""


#: resolve.go `resolveTable`: which first characters may start a non-string.
_HINTS = {
    **dict.fromkeys("+-", "S"),
    **dict.fromkeys("0123456789", "D"),
    **dict.fromkeys("yYnNtTfFoO~", "M"),
    ".": ".",
}
#: resolve.go `resolveMapList`: (resolved tag, value).
_TABLE: dict[str, tuple[str, Any]] = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), (BOOL, True)),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), (BOOL, False)),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), (NULL, None)),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), (FLOAT, math.nan)),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), (FLOAT, math.inf)),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), (FLOAT, -math.inf)),
}
_YAML_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
#: What strconv.ParseFloat accepts as a decimal float once underscores are checked and gone.
_GO_DECIMAL_FLOAT = re.compile(r"[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")
_TIMESTAMP_START = re.compile(r"[0-9]{4}-")
_DIGITS = {
    2: re.compile(r"[01]*"),
    8: re.compile(r"[0-7]*"),
    10: re.compile(r"[0-9]+"),
    16: re.compile(r"[0-9A-Fa-f]*"),
}
_PREFIX_BASES = {"b": 2, "B": 2, "o": 8, "O": 8, "x": 16, "X": 16}
#: Whole base64 quanta, padding only at the end (Go's base64.StdEncoding, which skips CR and LF).
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def _parse_uint(text: str, base: int = 0) -> int | None:
    """strconv.ParseUint(text, base, 64), or None on a syntax or range error."""
    if not text:
        return None
    digits = text
    if base == 0:
        base = 10
        if text[0] == "0":
            if len(text) >= 3 and text[1] in _PREFIX_BASES:
                base, digits = _PREFIX_BASES[text[1]], text[2:]
            else:
                base, digits = 8, text[1:]
    if not _DIGITS[base].fullmatch(digits) or (base == 10 and len(digits) > 20):
        return None
    value = int(digits, base) if digits else 0
    return value if value <= UINT64_MAX else None


def _parse_int(text: str, base: int = 0) -> int | None:
    """strconv.ParseInt(text, base, 64), or None on a syntax or range error."""
    negative = text[:1] == "-"
    magnitude = _parse_uint(text[1:] if text[:1] in "+-" and text else text, base)
    if magnitude is None:
        return None
    if negative:
        return -magnitude if magnitude <= INT64_MAX + 1 else None
    return magnitude if magnitude <= INT64_MAX else None


def _underscores_ok(text: str) -> bool:
    """strconv's underscoreOK: underscores only between digits (or after a base prefix)."""
    saw = "^"
    body = text[1:] if text[:1] in "+-" else text
    index = 0
    hexadecimal = False
    if len(body) >= 2 and body[0] == "0" and body[1] in "bBoOxX":
        index, saw, hexadecimal = 2, "0", body[1] in "xX"
    for char in body[index:]:
        if "0" <= char <= "9" or (hexadecimal and char in "abcdefABCDEF"):
            saw = "0"
        elif char == "_":
            if saw != "0":
                return False
            saw = "_"
        elif saw == "_":
            return False
        else:
            saw = "!"
    return saw != "_"


def _parse_float(text: str) -> float | None:
    """strconv.ParseFloat(text, 64) for the decimal spellings resolve.go can reach."""
    if "_" in text:
        if not _underscores_ok(text):
            return None
        text = text.replace("_", "")
    if not _GO_DECIMAL_FLOAT.fullmatch(text):
        return None
    value = float(text)
    return None if math.isinf(value) else value  # ErrRange


def _resolve(text: str, tag: str) -> tuple[str, Any]:
    """resolve.go `resolve` for a resolvable tag other than !!str: (resolved tag, value)."""
    hint = _HINTS.get(text[0]) if text else "N"
    if hint is None:
        return STR, text
    item = _TABLE.get(text)
    if item is not None:
        return item
    if hint == ".":
        floating = _parse_float(text)
        if floating is not None:
            return FLOAT, floating
    elif hint != "M":
        if tag in ("", TIMESTAMP) and _TIMESTAMP_START.match(text):
            # Resolved or not as a timestamp, such a scalar decodes into interface{} as its
            # text (decode.go keeps timestamps as strings "for backward compatibility").
            return (TIMESTAMP if tag == TIMESTAMP else STR), text
        plain = text.replace("_", "") if "_" in text else text
        integer = _parse_int(plain)
        if integer is not None:
            return INT, integer
        unsigned = _parse_uint(plain)
        if unsigned is not None:
            return INT, Uint64(unsigned)
        if _YAML_STYLE_FLOAT.fullmatch(plain):
            floating = _parse_float(plain)
            if floating is not None:
                return FLOAT, floating
        if plain.startswith("0b"):
            integer = _parse_int(plain[2:], 2)
            if integer is not None:
                return INT, integer
            unsigned = _parse_uint(plain[2:], 2)
            if unsigned is not None:
                return INT, Uint64(unsigned)
        elif plain.startswith("-0b"):
            integer = _parse_int("-" + plain[3:], 2)
            if integer is not None:
                return INT, integer
    return STR, text


def resolve_plain(text: str) -> Any:
    """An untagged plain scalar: None, bool, int, Uint64, float (maybe nan/inf) or str."""
    if text and text[0] not in _HINTS:
        return text
    return _resolve(text, "")[1]


def resolve_tagged(tag: str, text: str) -> Any:
    """A scalar with an explicit tag (the non-specific `!` included): its value, or Refusal.

    !!binary gives `bytes` (the caller turns them into the Go string they are).
    """
    if tag == BINARY:
        return decode_base64(text)
    if tag not in _RESOLVABLE or tag == STR:
        return text
    if tag == TIMESTAMP:
        # Valid only if Go's time.Parse accepts one of four layouts (else kubectl stops
        # reading the file); rare enough in manifests not to mirror time.Parse, so the
        # reader stops here too.  kubectl would send the text.
        raise Refusal(f"explicit !!timestamp tag on {text!r}; not checked beyond this point")
    resolved_tag, value = _resolve(text, tag)
    if resolved_tag == tag:
        return value
    if tag == FLOAT and resolved_tag == INT and type(value) is int:
        return float(value)
    raise Refusal(f"cannot decode {_short(resolved_tag)} `{text}` as a {_short(tag)}")


def decode_base64(text: str) -> bytes:
    """!!binary content as Go's base64.StdEncoding decodes it (CR and LF skipped)."""
    import base64

    compact = text.replace("\n", "").replace("\r", "")
    if not _BASE64.fullmatch(compact):
        raise Refusal("!!binary value contains invalid base64 data")
    return base64.b64decode(compact)


def _short(tag: str) -> str:
    return "!!" + tag[len(_TAG) :] if tag.startswith(_TAG) else tag
