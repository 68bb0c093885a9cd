"""Hypothesis strategies for manifest files that stress how kubectl reads YAML and JSON.

They write text, not objects: anchors and aliases, merge keys (mappings, aliases,
sequences of aliases, before and after explicit keys), YAML 1.1 booleans, every number
spelling go-yaml v2 and PyYAML disagree on, tags (!!str, !!int, !!binary, local and
non-specific), quoted and flow styles, comments, every kind of `---` line, `...`,
empty documents, Lists of any kind, CRLF line ends, and JSON streams.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

PLAIN_SPELLINGS = [
    # YAML 1.1 booleans and nulls, as go-yaml v2 knows them
    *[
        "y",
        "Y",
        "yes",
        "Yes",
        "YES",
        "n",
        "N",
        "no",
        "No",
        "NO",
        "on",
        "On",
        "ON",
        "off",
        "Off",
        "OFF",
        "true",
        "True",
        "TRUE",
        "false",
        "False",
        "FALSE",
    ],
    *["~", "null", "Null", "NULL"],
    # numbers PyYAML and go-yaml read differently
    *[
        "1e3",
        "1E3",
        "1.5e3",
        "-1e3",
        "1e21",
        "1e20",
        "1e400",
        "1e-400",
        "0o17",
        "0O17",
        "017",
        "08",
        "09",
        "0x1F",
        "0X1f",
        "0b101",
        "0b",
        "+0b11",
        "-0b11",
    ],
    *[
        "1_000",
        "1__0",
        "_1",
        "0x_1F",
        "1:30",
        "190:20:30",
        ".5",
        "._5",
        ".5_5",
        "5.",
        "+1",
        "-0",
        "+0.0",
        "-0.0",
        "0.1",
        "3.14159265358979",
    ],
    *["9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809"],
    *["18446744073709551615", "18446744073709551616", "99999999999999999999", "123456789012345678901234567890"],
    # timestamps (strings for kubectl)
    *["2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14T21:59:43Z", "2002-12-14", "2001-13-45"],
    # strings that look like something
    *["<<", "=", "-", "--", "---", "...", "a:b", "http://x/y?z=1", "gpu", "nvidia.com/gpu", "1g.10gb"],
]
#: Spellings kubectl refuses outright (JSON has no NaN or infinity): only in "hazardous" files.
FATAL_SPELLINGS = [".nan", ".NaN", ".inf", "-.inf", "+.inf", ".Inf", ".INF"]
WORDS = ["alpha", "beta", "gpu", "x", "name", "image", "count", "mode", "value", "nvidia.com/gpu"]
KEY_SPELLINGS = ["alpha", "beta", "x", "name", "image", "1", "2", "y", "on", "true", "no", "0x1F", "1e3", "1.5"]
LIST_KINDS = ["List", "PodList", "ConfigMapList", "Pod", "ConfigMap", "FooList"]


@dataclass
class _Anchors:
    names: list[str] = field(default_factory=list)
    mappings: list[str] = field(default_factory=list)
    counter: int = 0

    def new(self) -> str:
        """A fresh anchor name; `define` it once its node is written (no recursive aliases)."""
        self.counter += 1
        return f"a{self.counter}"

    def define(self, name: str, mapping: bool) -> None:
        self.names.append(name)
        if mapping:
            self.mappings.append(name)


def _binary(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@st.composite
def scalar(draw: st.DrawFn, hazardous: bool = False) -> str:
    """One scalar as written: plain, quoted, or tagged."""
    # Hypothesis leans towards the first entries: ordinary words come first.
    text = draw(st.sampled_from(WORDS + PLAIN_SPELLINGS + (FATAL_SPELLINGS if hazardous else [])))
    style = draw(st.sampled_from(["plain"] * 10 + ["double", "single", "tag", "binary", "local", "bang"]))
    if style == "double":
        return json.dumps(text)
    if style == "single":
        return "'" + text.replace("'", "''") + "'"
    if style == "tag":
        tag, text = draw(
            st.sampled_from(
                [
                    ("!!str", text),
                    ("!!int", "0x1F"),
                    ("!!int", '"3"'),
                    ("!!float", "1"),
                    ("!!float", "1.5"),
                    ("!!bool", "yes"),
                    ("!!bool", "off"),
                    ("!!null", ""),
                    ("!!null", "~"),
                    ("!!int", text),
                ]
            )
        )
        return f"{tag} {text}"
    if style == "binary":
        return "!!binary " + _binary(draw(st.sampled_from(WORDS)))
    if style == "local":
        return "!foo " + text
    if style == "bang":
        return "! " + text
    return text


@st.composite
def key(draw: st.DrawFn) -> str:
    style = draw(st.sampled_from(["plain"] * 5 + ["double", "binary"]))
    text = draw(st.sampled_from(KEY_SPELLINGS))
    if style == "double":
        return json.dumps(text)
    if style == "binary":
        return "? !!binary " + _binary(text) + "\n"
    return text


def _indent(lines: list[str], by: int) -> list[str]:
    return [" " * by + line for line in lines]


@st.composite
def _value(draw: st.DrawFn, anchors: _Anchors, depth: int, hazardous: bool) -> tuple[str, list[str]]:
    """(inline text, or "" and block lines) for a value."""
    choice = draw(st.sampled_from(["scalar"] * 4 + ["alias", "map", "seq", "flowmap", "flowseq"]))
    if choice == "alias" and anchors.names:
        return "*" + draw(st.sampled_from(anchors.names)), []
    if depth > 2 or choice in ("scalar", "alias"):
        value = draw(scalar(hazardous))
        if draw(st.integers(0, 9)) == 0:
            name = anchors.new()
            anchors.define(name, False)
            value = f"&{name} {value}"
        return value, []
    if choice in ("flowmap", "flowseq"):
        items = [draw(scalar(hazardous)) for _ in range(draw(st.integers(0, 3)))]
        if choice == "flowmap":
            keys = [draw(st.sampled_from(KEY_SPELLINGS)) for _ in items]
            return "{" + ", ".join(f"{k}: {v}" for k, v in zip(keys, items, strict=True)) + "}", []
        return "[" + ", ".join(items) + "]", []
    name = anchors.new() if draw(st.integers(0, 3)) == 0 else None
    if choice == "seq":
        lines: list[str] = []
        for _ in range(draw(st.integers(1, 3))):
            inline, block = draw(_value(anchors, depth + 1, hazardous))
            lines += [f"- {inline}"] if inline else ["-", *_indent(block, 2)]
    else:
        lines = draw(_mapping_lines(anchors, depth + 1, hazardous))
    if name is None:
        return "", lines
    anchors.define(name, choice == "map")
    return f"&{name}", lines


@st.composite
def _mapping_lines(draw: st.DrawFn, anchors: _Anchors, depth: int, hazardous: bool) -> list[str]:
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        if anchors.mappings and draw(st.integers(0, 4)) == 0:
            merge = draw(
                st.sampled_from(
                    [
                        "*" + draw(st.sampled_from(anchors.mappings)),
                        "[" + ", ".join("*" + name for name in anchors.mappings[-2:]) + "]",
                        "{" + draw(st.sampled_from(KEY_SPELLINGS)) + ": " + draw(scalar(hazardous)) + "}",
                    ]
                )
            )
            lines.append(f"<<: {merge}")
            continue
        written = draw(key())
        inline, block = draw(_value(anchors, depth, hazardous))
        if written.endswith("\n"):  # a complex key `? ...`
            lines += [written.rstrip("\n"), f": {inline}" if inline else ":", *_indent(block, 2)]
        elif inline and block:  # an anchored block collection
            lines += [f"{written}: {inline}", *_indent(block, 2)]
        else:
            lines += [f"{written}: {inline}"] if inline else [f"{written}:", *_indent(block, 2)]
        if draw(st.integers(0, 7)) == 0:
            lines.append("# a comment")
    return lines


@st.composite
def yaml_document(draw: st.DrawFn, hazardous: bool = False) -> str:
    anchors = _Anchors()
    kind = draw(st.sampled_from(["ConfigMap", "Pod", "ResourceClaim", *LIST_KINDS]))
    api_version = draw(st.sampled_from(["v1"] * 4 + ["resource.k8s.io/v1", "a/b/c"]))
    header = [f"apiVersion: {api_version}", f"kind: {kind}"]
    if draw(st.booleans()):
        header = header[::-1]
    name = draw(
        st.sampled_from(["one", "two", "three", "'quoted'", "yes", "1e3"][: draw(st.sampled_from([4, 4, 4, 6]))])
    )
    metadata = ["metadata:", f"  name: {name}"]
    if draw(st.integers(0, 5)) == 0:
        metadata.append(f"  labels: {{team: {draw(scalar(hazardous))}}}")
    body = draw(_mapping_lines(anchors, 0, hazardous))
    lines = [*header, *metadata]
    if kind.endswith("List") or draw(st.integers(0, 5)) == 0:
        lines.append("items:")
        for _ in range(draw(st.integers(0, 3))):
            item_kind = draw(st.sampled_from(["", "", "apiVersion: v1\n  kind: Pod", "kind: Pod", "kind: List"]))
            item = [item_kind] if item_kind else []
            item += [f"data: {{k: {draw(scalar(hazardous))}}}"]
            lines += ["- " + item[0], *_indent(item[1:], 2)]
    lines += ["data:", *_indent(body, 2)] if draw(st.booleans()) else body
    return "\n".join(lines) + "\n"


SEPARATORS = ["---", "--- # note", "---#note", "---\t", "---   ", "\n---"]
#: kubectl stops at these (or, for `...`, sends only the first of two documents).
HAZARDOUS_SEPARATORS = ["--- x", "----", "...\n---", "...\nkind: Pod\n---"]


@st.composite
def yaml_file(draw: st.DrawFn) -> bytes:
    parts: list[str] = []
    # A quarter of the files may hold what kubectl refuses outright; the rest mostly not.
    hazardous = draw(st.integers(0, 3)) == 0
    if draw(st.booleans()):
        parts.append(draw(st.sampled_from(["---\n", "# leading comment\n", "---\n---\n", "\n"])))
    count = draw(st.integers(1, 3))
    for number in range(count):
        kind = draw(st.sampled_from(["document"] * 6 + ["empty", "comment", "scalar"]))
        if kind == "document":
            parts.append(draw(yaml_document(hazardous)))
        elif kind == "comment":
            parts.append("# only a comment\n")
        elif kind == "scalar":
            parts.append(draw(scalar(hazardous)) + "\n")
        if number < count - 1:
            parts.append(draw(st.sampled_from(SEPARATORS + (HAZARDOUS_SEPARATORS if hazardous else []))) + "\n")
    if draw(st.integers(0, 4)) == 0:
        parts.append("---\n")
    text = "".join(parts)
    if draw(st.integers(0, 9)) == 0:
        text = text.replace("\n", "\r\n")
    return text.encode()


_JSON_NUMBERS = [
    "1",
    "1.0",
    "1e3",
    "1E+2",
    "-0",
    "0.5",
    "1e400",
    "123456789012345678901234567890",
    "9223372036854775808",
]
_JSON_STRINGS = ['"x"', '"\\ud800"', '"a\\/b"', '"nvidia.com/gpu"', '"\\u00e9"', "true", "null", "false"]


@st.composite
def json_file(draw: st.DrawFn) -> bytes:
    values: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(['"Pod"'] * 4 + ['"PodList"', "5", '""']))
        fields = ['"apiVersion": "v1"', f'"kind": {kind}']
        for number in range(draw(st.integers(0, 4))):
            literal = draw(st.sampled_from(_JSON_NUMBERS + _JSON_STRINGS + ["[]", "{}", '{"a": 1, "a": 2}']))
            fields.append(f'"f{number}": {literal}')
        if draw(st.integers(0, 3)) == 0:
            items = draw(st.sampled_from(["[]", "null", "[{}]", '[{"kind": "Pod"}]', "[1]"]))
            fields.append(f'"items": {items}')
        values.append("{" + ", ".join(fields) + "}")
    separator = draw(st.sampled_from(["\n", " ", "", "\n\n"]))
    lead = draw(st.sampled_from(["", " ", "\n", "\t"]))
    return (lead + separator.join(values) + "\n").encode()


_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_LEAVES = st.one_of(
    _TEXT,
    st.sampled_from(WORDS + PLAIN_SPELLINGS),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
)
_VALUES = st.recursive(
    _LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3), max_leaves=12
)


@st.composite
def emitted_yaml_file(draw: st.DrawFn) -> bytes:
    """Objects written by PyYAML's emitter in every style it has: block and flow, all
    scalar styles, canonical form (explicit tags, `? ` keys), narrow widths (folded
    lines), `...` document ends, escapes for unprintable characters."""
    import yaml

    documents = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": draw(st.sampled_from(WORDS))},
            "data": draw(_VALUES),
        }
        for _ in range(draw(st.integers(1, 2)))
    ]
    text = yaml.safe_dump_all(
        documents,
        default_flow_style=draw(st.sampled_from([False, True, None])),
        default_style=draw(st.sampled_from([None, None, '"', "'", "|", ">"])),
        canonical=draw(st.integers(0, 4)) == 0,
        width=draw(st.sampled_from([20, 80, 1000])),
        allow_unicode=draw(st.booleans()),
        explicit_start=draw(st.booleans()),
        explicit_end=draw(st.integers(0, 3)) == 0,
        indent=draw(st.sampled_from([2, 4])),
    )
    if text.startswith("{") and draw(st.integers(0, 3)):
        text = "# a flow mapping, not JSON\n" + text  # or kubectl reads a JSON stream
    return text.encode()


def manifest_file() -> st.SearchStrategy[bytes]:
    return st.one_of(yaml_file(), yaml_file(), yaml_file(), json_file(), emitted_yaml_file())


def example_texts() -> list[Any]:  # pragma: no cover - a debugging aid
    return [manifest_file().example() for _ in range(5)]
