"""Manifest files read the way `kubectl apply -f` reads them.

kubectl does not parse a file as one YAML stream.  It cuts the file into documents line
by line (framing.py), converts each document to JSON with sigs.k8s.io/yaml on go-yaml v2
-- YAML 1.1 booleans, merge keys applied in order, !!binary decoded, keys made strings
(parser.py parses, resolve.py and construct.py apply go-yaml's rules, gojson.py Go's
JSON encoding) -- or reads a JSON stream when the file starts with `{`
(json_stream.py), and then sends the objects of each document, the items of any object
with an `items` list (objects.py).  lines.py finds the line of a path in an object.

`read` yields exactly those objects, or an `InputError` (file, line, why) where kubectl
refuses the input or where dra-guard cannot be sure what kubectl would send.  When
kubectl stops reading a file (every YAML-level error), so does `read`; documents before
that point are still yielded.

Each module names the upstream files and commits its rules come from: kubectl v1.32
builds on kubernetes/apimachinery v0.32.4, kubernetes/cli-runtime v0.32.4 and
kubernetes-sigs/yaml v1.4.0 (whose goyaml.v2 is go-yaml/yaml v2.4.0).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from typing import Any

from dra_guard.contract.findings import InputError
from dra_guard.kubectl_yaml.construct import ExcessiveAliasing, decode
from dra_guard.kubectl_yaml.errors import Refusal
from dra_guard.kubectl_yaml.fast import DECLINED, EMPTY, FastLines, Parsed, decode_plain, parse_plain_when_worth_it
from dra_guard.kubectl_yaml.framing import BadSeparator, Chunk, is_json_stream, kubectl_lines, yaml_chunks
from dra_guard.kubectl_yaml.lines import FileLines, node_line
from dra_guard.kubectl_yaml.objects import Path, Rejected, document_problem, objects
from dra_guard.kubectl_yaml.parser import PLAIN, parse

__all__ = ["FastLines", "Parsed", "SentObject", "document_root", "read", "read_pieces", "source_line"]

_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = {b"\xff\xfe": "utf-16-le", b"\xfe\xff": "utf-16-be"}
_NULLS = frozenset(("", "~", "null", "Null", "NULL"))
#: Documents parsed by rapidyaml in one go (one swap of descriptor 2 for them).
_TREES_AT_ONCE = 32


class SentObject:
    """One object kubectl would send, and where its source is."""

    __slots__ = (
        "first_line",
        "index",
        "line",
        "obj",
        "parsed",
        "root",
        "source_spells_strings",
        "span",
        "text",
        "within",
    )

    def __init__(
        self,
        obj: dict[str, Any],
        index: int,
        line: int,
        *,
        text: str,
        span: tuple[int, int],
        first_line: int,
        within: Path,
        root: Any,
        source_spells_strings: bool = True,
        parsed: Parsed | None = None,
    ) -> None:
        self.obj = obj
        #: rapidyaml's tree, when the fast reader read it: `FastLines` gives its lines.
        self.parsed = parsed
        #: 1-based number of its document in the file.
        self.index = index
        #: 1-based line of the object.
        self.line = line
        #: The text the document was parsed from, and the document's [start, end) in it.
        self.text = text
        self.span = span
        #: 1-based line of text[span[0]].
        self.first_line = first_line
        #: Where the object sits in its document: () or ("items", n).
        self.within = within
        #: The document's node tree (None for JSON).
        self.root = root
        #: False when the object holds strings its source text does not spell (decoded
        #: !!binary), so text searches over the source prove nothing.
        self.source_spells_strings = source_spells_strings


def document_root(text: str, span: tuple[int, int]) -> Any:
    """The node tree of the document text[span] (JSON read as YAML), or None."""
    parsed = parse(text[span[0] : span[1]])
    return parsed.documents[0] if parsed.documents else None


def source_line(text: str, span: tuple[int, int], first_line: int, path: Path, root: Any = None) -> int | None:
    """1-based line of the deepest node on `path` in the document text[span], or None."""
    if root is None:
        root = document_root(text, span)
        if root is None:
            return None
    return FileLines(text[span[0] : span[1]], first_line).of(node_line(root, path))


def _without_bom(data: bytes) -> tuple[bytes, int, str | None]:
    """kubectl's `unicode.BOMOverride` (cli-runtime `visitor.go` FileVisitor): a UTF-8
    byte order mark is dropped, UTF-16 (by its mark) becomes UTF-8; (bytes, bytes
    dropped from the front, why the text is refused)."""
    if data.startswith(_UTF8_BOM):
        return data[3:], 3, None
    encoding = _UTF16_BOMS.get(data[:2])
    if encoding is None:
        return data, 0, None
    try:
        return data[2:].decode(encoding).encode("utf-8"), 0, None
    except UnicodeDecodeError:
        return b"", 0, f"not valid {encoding.upper()} text"


def read(data: bytes, name: str, *, adjust: Callable[[Any], Any] | None = None) -> Iterator[SentObject | InputError]:
    """The objects `kubectl apply -f` would send for a file's bytes, or why not.

    `adjust` rewrites each decoded document before it is judged: a kustomization file is
    read by kustomize, not kubectl, and is a Kustomization without apiVersion and kind.
    """
    data, dropped, problem = _without_bom(data)
    if problem is not None:
        yield InputError(name, 1, problem)
        return
    if b"\x00" in data[:8192]:
        yield InputError(name, None, "binary file, not a YAML or JSON manifest")
        return
    json_stream = is_json_stream(data)
    stop = None  # in a JSON stream, where the bad byte stands in the text (as U+FFFD)
    try:
        text = data.decode("utf-8")
        bad_offset = None
    except UnicodeDecodeError as error:
        # kubectl reads the documents before the one with the bad byte; so do we (up
        # to the last whole line: a bad byte on a `---` line makes it a bad separator;
        # in a JSON stream, up to the last value that ends before it).
        bad_offset = error.start
        text = data[: error.start].decode("utf-8")
        if json_stream:
            stop = len(text)
            text = data.decode("utf-8", errors="replace")
        else:
            text = text[: text.rfind("\n") + 1]
    if json_stream:
        yield from _read_json(text, name, adjust, stop=stop)
    else:
        yield from _read_yaml(text, name, complete=bad_offset is None, adjust=adjust)
    if bad_offset is not None:
        # kubectl would send U+FFFD in place of the byte; a manifest like that is refused.
        line = data[:bad_offset].count(b"\n") + 1
        offset = bad_offset + dropped
        yield InputError(name, line, f"not UTF-8 text (byte 0x{data[bad_offset]:02x} at offset {offset})")


#: What `read_pieces` reads before it decides how: the first 8 KiB, where `read` looks for
#: a NUL and a JSON stream's `{`.
_HEAD_BYTES = 8192
#: About how much text `read_pieces` parses at once: the documents of one piece at most stay
#: in memory, with one more document (the one that runs on into the next block).
PIECE_CHARS = 1 << 20


def read_pieces(
    blocks: Iterable[bytes], name: str, *, adjust: Callable[[Any], Any] | None = None
) -> Iterator[SentObject | InputError]:
    """`read` of the concatenated `blocks`, the same objects and errors, holding no more of
    the file than a piece of about PIECE_CHARS at a time (plus the longest document).

    A YAML file is cut where `yaml_chunks` cuts it: kubectl frames documents line by line,
    so a piece that starts where a document starts is framed the same on its own, and its
    documents keep their numbers and lines.  What needs the whole file is read whole, as
    `read` reads it: a UTF-16 file, a JSON stream (whose values may span any lines), and a
    single document (a `List` from `kubectl get -o yaml` is one)."""
    iterator = iter(blocks)
    head = b""
    for block in iterator:
        head += block
        if len(head) >= _HEAD_BYTES:
            break
    if head[:2] in _UTF16_BOMS or is_json_stream(_without_bom(head[:_HEAD_BYTES])[0]):
        yield from read(head + b"".join(iterator), name, adjust=adjust)
        return
    data, dropped, _ = _without_bom(head)
    if b"\x00" in data[:_HEAD_BYTES]:
        yield from read(data, name, adjust=adjust)
        return
    yield from _yaml_pieces(_chain(data, iterator), name, dropped, adjust)


def _chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


def _yaml_pieces(
    blocks: Iterator[bytes], name: str, dropped: int, adjust: Callable[[Any], Any] | None
) -> Iterator[SentObject | InputError]:
    carry = ""  # decoded text from the start of a document on
    carry_line = 1  # the line it starts on
    index = 0  # documents before it
    pending = b""  # bytes after the last line feed read
    consumed = 0  # bytes before `pending`
    lines_consumed = 0  # line feeds in them
    for block in blocks:
        pending += block
        cut = pending.rfind(b"\n") + 1
        if not cut:
            continue
        whole_lines, pending = pending[:cut], pending[cut:]
        try:
            text = whole_lines.decode("utf-8")
        except UnicodeDecodeError as error:
            yield from _bad_byte(carry + _lines_before(whole_lines, error.start), carry_line, index, name, adjust)
            yield _bad_byte_error(
                name, whole_lines, error.start, consumed=consumed, lines=lines_consumed, dropped=dropped
            )
            return
        consumed += cut
        lines_consumed += whole_lines.count(b"\n")
        carry += text.replace("\r\n", "\n") if "\r\n" in text else text
        if len(carry) < PIECE_CHARS:
            continue
        chunks = list(yaml_chunks(carry, carry_line))
        if any(isinstance(chunk, BadSeparator) for chunk in chunks):
            yield from _read_chunks(carry, chunks, name, adjust, index)
            return
        if len(chunks) < 2:
            continue  # one document so far: it stays whole
        last = chunks[-1]
        assert isinstance(last, Chunk)
        if (yield from _read_chunks(carry[: last.start], chunks[:-1], name, adjust, index)):
            return
        index += len(chunks) - 1
        carry, carry_line = carry[last.start :], last.first_line
    try:
        text = pending.decode("utf-8")
    except UnicodeDecodeError as error:
        yield from _bad_byte(carry + _lines_before(pending, error.start), carry_line, index, name, adjust)
        yield _bad_byte_error(name, pending, error.start, consumed=consumed, lines=lines_consumed, dropped=dropped)
        return
    # `carry` already has its CR LFs as LFs, and the last line, with no line feed, holds
    # none: only the final LF is added (replacing again would take a second CR from a
    # line ending in CR CR LF, which kubectl keeps one of).
    carry += text
    if not carry.endswith("\n"):
        carry += "\n"
    yield from _read_chunks(carry, list(yaml_chunks(carry, carry_line)), name, adjust, index)


def _lines_before(data: bytes, bad: int) -> str:
    """The whole lines of `data` before its byte `bad` (the first that is not UTF-8)."""
    text = data[:bad].decode("utf-8")
    text = text[: text.rfind("\n") + 1]
    return text.replace("\r\n", "\n") if "\r\n" in text else text


def _bad_byte(
    text: str, first_line: int, index: int, name: str, adjust: Callable[[Any], Any] | None
) -> Generator[SentObject | InputError, None, bool]:
    """The documents before a byte that is not UTF-8, as `read` reads them (the one it runs
    into is dropped)."""
    chunks = list(yaml_chunks(text, first_line))
    if chunks and isinstance(chunks[-1], Chunk) and chunks[-1].end == len(text):
        chunks.pop()
    return (yield from _read_chunks(text, chunks, name, adjust, index))


def _bad_byte_error(name: str, data: bytes, bad: int, *, consumed: int, lines: int, dropped: int) -> InputError:
    line = lines + data[:bad].count(b"\n") + 1
    offset = consumed + bad + dropped
    return InputError(name, line, f"not UTF-8 text (byte 0x{data[bad]:02x} at offset {offset})")


def _read_yaml(
    text: str, name: str, complete: bool, adjust: Callable[[Any], Any] | None = None
) -> Iterator[SentObject | InputError]:
    text = kubectl_lines(text)
    chunks = list(yaml_chunks(text))
    if not complete and chunks and isinstance(chunks[-1], Chunk) and chunks[-1].end == len(text):
        chunks.pop()  # it runs on into the line with the bad byte, which the caller reports
    yield from _read_chunks(text, chunks, name, adjust)


def _read_chunks(
    text: str,
    chunks: Sequence[Chunk | BadSeparator],
    name: str,
    adjust: Callable[[Any], Any] | None,
    first_index: int = 0,
) -> Generator[SentObject | InputError, None, bool]:
    """The objects of the documents `chunks` cuts `text` into, the first of them document
    `first_index + 1` of its file; returns whether kubectl stops reading the file there."""
    # rapidyaml's trees of the next documents, parsed together (see parse_plain)
    trees: list[Parsed | None] = []
    trees_from = 0
    for position, chunk in enumerate(chunks, 1):
        index = first_index + position
        if isinstance(chunk, BadSeparator):
            yield InputError(
                name,
                chunk.line,
                f"a line starting with '---' followed by {chunk.rest!r}: kubectl rejects this document separator "
                "and stops reading the file here",
            )
            return True
        if position > trees_from + len(trees):
            trees_from = position - 1
            batch = chunks[trees_from : trees_from + _TREES_AT_ONCE]
            texts = [text[c.start : c.end] if isinstance(c, Chunk) else None for c in batch]
            trees = parse_plain_when_worth_it(texts, first_index + trees_from)
        document = trees[position - 1 - trees_from]
        body = text[chunk.start : chunk.end] if document is None else document.text
        value = decode_plain(body, document)
        if value is EMPTY:
            continue
        if document is not None and value is not DECLINED:
            sent = _plain_objects(value, index, chunk, text, name=name, parsed=document, adjust=adjust)
            if sent is not None:
                yield from sent
                continue
        parsed = parse(body)
        if not parsed.documents:
            if parsed.error is not None:
                line = None if parsed.error.line is None else chunk.first_line + parsed.error.line
                yield InputError(name, line, f"invalid YAML: {parsed.error.message}")
                return True
            continue
        root = parsed.documents[0]
        lines = FileLines(body, chunk.first_line)
        root_line = lines.of(root.start_mark.line)
        try:
            value, binary = decode(root)
        except ExcessiveAliasing:
            yield InputError(
                name,
                root_line,
                f"document {index} expands to more than kubectl allows through YAML aliases "
                "(go-yaml: excessive aliasing; an alias bomb?); not checked",
            )
            return True
        except Refusal as refusal:
            line = root_line if refusal.line is None else chunk.first_line + refusal.line
            yield InputError(name, line, f"document {index}: {refusal.message}")
            if refusal.kubectl_stops:
                return True
            continue
        if parsed.error is not None or any(not _is_null(document) for document in parsed.documents[1:]):
            # go-yaml decodes only the first document of the text it is given (and has
            # just been seen not to fail on it): kubectl would silently drop the rest.
            yield InputError(
                name,
                root_line,
                f"document {index} holds more than one YAML document (a '...' line, or a bare CR before '---'); "
                "kubectl would send only the first, so none is checked",
            )
            continue
        if value is None:
            continue
        if adjust is not None:
            value = adjust(value)
        problem = document_problem(value, index)
        if problem is not None:
            path, message = problem
            yield InputError(name, lines.of(node_line(root, path)), message)
            continue
        for item in objects(value, index):
            path = item.path if isinstance(item, Rejected) else item.within
            line = lines.of(node_line(root, path))
            if isinstance(item, Rejected):
                yield InputError(name, line, item.message)
            else:
                yield SentObject(
                    item.obj,
                    index,
                    line,
                    text=text,
                    span=(chunk.start, chunk.end),
                    first_line=chunk.first_line,
                    within=item.within,
                    root=root,
                    source_spells_strings=not binary,
                )
    return False


def _plain_objects(
    value: Any, index: int, chunk: Chunk, text: str, *, name: str, parsed: Parsed, adjust: Callable[[Any], Any] | None
) -> list[SentObject | InputError] | None:
    """What a document the fast reader decoded sends, or None to read it with libyaml: a
    refused document, or a List item whose line rapidyaml's tree cannot place."""
    if adjust is not None:
        value = adjust(value)
    if value.__class__ is not dict or document_problem(value, index) is not None:
        return None
    root_line = _first_node_line(text, chunk.start, chunk.end)
    lines: FastLines | None = None
    sent: list[SentObject | InputError] = []
    for item in objects(value, index):
        path = item.path if isinstance(item, Rejected) else item.within
        line = root_line
        if path:
            lines = lines or FastLines(parsed, root_line)
            placed = lines.line(path)
            if placed is None:
                return None
            line = placed
        if isinstance(item, Rejected):
            sent.append(InputError(name, chunk.first_line + line, item.message))
        else:
            sent.append(
                SentObject(
                    item.obj,
                    index,
                    chunk.first_line + line,
                    text=text,
                    span=(chunk.start, chunk.end),
                    first_line=chunk.first_line,
                    within=item.within,
                    root=None,
                    parsed=parsed,
                )
            )
    return sent


def _first_node_line(text: str, start: int, stop: int) -> int:
    """0-based line in text[start:stop] where the document's root node starts (past blank
    and comment lines, and a `---` line opening it) -- the line libyaml gives the root."""
    position, line = start, 0
    while True:
        end = text.find("\n", position, stop)
        if end < 0:
            return line
        content = text[position:end].strip(" ")
        if content and content[0] != "#" and not (line == 0 and (content == "---" or content.startswith("--- "))):
            return line
        position, line = end + 1, line + 1


def _is_null(root: Any) -> bool:
    return root is None or (getattr(root, "tag", None) is PLAIN and root.value in _NULLS)


class _JSONLines:
    """Lines in a JSON value, which is read again as YAML once, and only if a line is wanted."""

    def __init__(self, text: str, span: tuple[int, int], first_line: int) -> None:
        self._text, self._span, self._first_line = text, span, first_line
        self._root: Any = None
        self._lines: FileLines | None = None

    def of(self, path: Path) -> int:
        if not path:
            return self._first_line
        if self._lines is None:
            self._lines = FileLines(self._text[self._span[0] : self._span[1]], self._first_line)
            self._root = document_root(self._text, self._span)
        if self._root is None:
            return self._first_line
        return self._lines.of(node_line(self._root, path))


def _read_json(
    text: str, name: str, adjust: Callable[[Any], Any] | None = None, stop: int | None = None
) -> Iterator[SentObject | InputError]:
    from dra_guard.kubectl_yaml.json_stream import json_values, normalize

    index = 0
    try:
        for value in json_values(text, stop):
            index += 1
            if value.refusal is not None:
                yield InputError(name, value.line, f"document {index}: {value.refusal}; not checked")
                continue
            if value.value is None:
                continue
            if adjust is not None:
                value.value = adjust(value.value)
            lines = _JSONLines(text, (value.start, value.end), value.line)
            problem = document_problem(value.value, index)
            if problem is not None:
                path, message = problem
                yield InputError(name, lines.of(path), message)
                continue
            try:
                document = normalize(value.value) if value.special else value.value
            except Refusal as refusal:
                yield InputError(name, value.line, f"document {index}: {refusal.message}")
                continue
            except RecursionError:
                yield InputError(name, value.line, f"document {index}: JSON nested too deeply to check")
                continue
            for item in objects(document, index):
                path = item.path if isinstance(item, Rejected) else item.within
                line = lines.of(path)
                if isinstance(item, Rejected):
                    yield InputError(name, line, item.message)
                else:
                    yield SentObject(
                        item.obj,
                        index,
                        line,
                        text=text,
                        span=(value.start, value.end),
                        first_line=value.line,
                        within=item.within,
                        root=None,
                    )
    except Refusal as refusal:
        yield InputError(name, None if refusal.line is None else refusal.line + 1, refusal.message)
