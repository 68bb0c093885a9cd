"""How kubectl cuts a file into documents before any YAML is parsed.

From kubernetes/apimachinery v0.32.4 (commit 59e9003f02d6f0c8fff53719a7a0604ec82ee9a9),
`pkg/util/yaml/decoder.go`, as kubernetes/cli-runtime v0.32.4 (commit
9cb150043944f22439bd6250817b8aef5a114524) `pkg/resource/visitor.go` uses it:

* `GuessJSONStream(r, 4096)`: the file is a JSON stream when, within its first 4,096
  bytes, the first character that is not white space (Go's `unicode.IsSpace`) is `{`.
  Everything else is YAML (a UTF-8 byte order mark is not white space).
* `YAMLReader` / `LineReader`: the YAML is read line by line (a line ends at LF; a
  CR before it is dropped; the last line gets an LF).  A line that starts with `---`
  ends the document being collected when the rest of the line, trimmed of white space,
  is empty or starts with `#`; the line itself is dropped.  With nothing collected yet
  the line is kept, as the first line of the next document.  Any other rest
  (`--- {a: 1}`, `----`) is an error: the document being collected is dropped and
  kubectl stops reading the file.  `...` is not a separator.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

#: Go's unicode.IsSpace (Python's str.isspace() also takes U+001C..U+001F).
GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
#: The lines YAMLReader looks at (`_separator_lines` finds them).
_SEPARATOR_LINE = re.compile(r"^---([^\n]*)\n", re.MULTILINE)
# The same lines, searched for as the literal `---` and kept where a line starts: a
# pattern opening with `^` is tried at every position of the text (most of framing's
# cost), a literal is found as fast as a substring.  A `---` inside a line matches to the
# line's end, so it never swallows the separator of the next line (tests/test_framing.py
# holds the two to the same lines).
_DASHES_TO_LINE_END = re.compile(r"---([^\n]*)\n")


def is_json_stream(data: bytes) -> bool:
    # An invalid or cut UTF-8 sequence decodes to U+FFFD, which is not space, as in Go.
    return data[:4096].decode("utf-8", errors="replace").lstrip(GO_SPACE).startswith("{")


def kubectl_lines(text: str) -> str:
    """The text as YAMLReader hands it on: CR LF as LF, and a final LF."""
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return text if text.endswith("\n") else text + "\n"


# Plain classes, not dataclasses: these modules load on every `dra-guard check`, and
# building a dataclass costs more at import than all of their use.


class Chunk:
    """One document's text, `text[start:end]`, as YAMLReader returns it."""

    __slots__ = ("end", "first_line", "start")

    def __init__(self, start: int, end: int, first_line: int) -> None:
        self.start = start
        self.end = end
        #: 1-based line of `start` in the file.
        self.first_line = first_line


class BadSeparator:
    """A `---` line kubectl rejects; it stops reading the file there."""

    __slots__ = ("line", "rest")

    def __init__(self, line: int, rest: str) -> None:
        self.line = line
        self.rest = rest


def yaml_chunks(text: str, first_line: int = 1) -> Iterator[Chunk | BadSeparator]:
    """The documents of `text` (as returned by `kubectl_lines`), in order; `text` starts on
    line `first_line` of its file (a piece of a file read in pieces starts at a document)."""
    start, start_line = 0, first_line
    counted, counted_line = 0, first_line  # newlines counted up to `counted`

    def line_at(position: int) -> int:
        nonlocal counted, counted_line
        counted_line += text.count("\n", counted, position)
        counted = position
        return counted_line

    for separator in _separator_lines(text):
        rest = separator.group(1).strip(GO_SPACE)
        if rest and rest[0] != "#":
            yield BadSeparator(line_at(separator.start()), rest)
            return
        if separator.start() > start:
            yield Chunk(start, separator.start(), start_line)
            start, start_line = separator.end(), line_at(separator.end())
    if start < len(text):
        yield Chunk(start, len(text), start_line)


def _separator_lines(text: str) -> Iterator[re.Match[str]]:
    """`_SEPARATOR_LINE.finditer(text)`, faster."""
    for match in _DASHES_TO_LINE_END.finditer(text):
        start = match.start()
        if not start or text[start - 1] == "\n":
            yield match
