"""Files, directories, globs and stdin -> documents that know the line of every path.

Documents are composed by libyaml (when PyYAML has it) and constructed by PyYAML as
`yaml.load_all` would.  Node trees are not kept (they cost ~40x the text in memory and
make the garbage collector rescan them all): a document keeps its span of the file text,
and only a document with a finding is composed again, once, to turn JSON pointers into
lines.  Bad input becomes an `InputError` with file and line; documents before a broken
one, and every other file, still load.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import yaml

from dra_guard.findings import InputError
from dra_guard.walk import STDIN, Ignores, select

try:  # libyaml's parser when PyYAML was built with it, the pure-Python one otherwise
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader

STDIN_NAME = "<stdin>"
#: Most nodes one document may expand to through aliases (a "billion laughs" bound).
MAX_EXPANDED_NODES = 250_000
# An alias (`*name`); a document without one cannot expand.  Found as `*` followed by a
# name character, then confirmed by what precedes it (a CEL `a * b` or a cron `* * *` is not).
_ALIAS_CANDIDATE = re.compile(rb"\*[^\s*,\]}]")
_ALIAS_PRECEDERS = frozenset(b" \t\r\n[{,:-?")


def _may_have_aliases(data: bytes) -> bool:
    return any(
        match.start() == 0 or data[match.start() - 1] in _ALIAS_PRECEDERS for match in _ALIAS_CANDIDATE.finditer(data)
    )


@dataclass
class Document:
    file: str
    #: 1-based position of the document in its file.
    index: int
    obj: Any
    #: 1-based line where the document's root node starts.
    line: int
    #: The whole file's text and the document's [start, end) span in it, for line lookups.
    text: str | None = field(default=None, repr=False)
    span: tuple[int, int] = field(default=(0, 0), repr=False)
    #: The live node tree while the document is being checked (set by the stream), or the
    #: tree composed again later for a late finding.
    node: yaml.Node | None = field(default=None, repr=False)
    _recomposed: bool = field(default=False, init=False, repr=False)

    def _root(self) -> yaml.Node | None:
        if self.node is None and not self._recomposed and self.text is not None:
            self._recomposed = True
            # From the start of the root's line, so an indented root keeps its column.
            line_start = self.text.rfind("\n", 0, self.span[0]) + 1
            try:
                self.node = yaml.compose(self.text[line_start : self.span[1]], Loader=_Loader)
            except yaml.YAMLError:  # pragma: no cover - it parsed a moment ago
                self.node = None
        return self.node

    def line_of(self, path: Sequence[str | int]) -> int:
        """The line of the deepest node on `path` (the key's line for mapping entries)."""
        node = self._root() if path else None
        if node is None:
            return self.line
        base = self.line - 1 - node.start_mark.line
        line = self.line
        for part in path:
            if isinstance(node, yaml.MappingNode):
                for key, value in node.value:
                    if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                        line = key.start_mark.line + 1 + base
                        node = value
                        break
                else:
                    return line
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
                node = node.value[part]
                line = node.start_mark.line + 1 + base
            else:
                return line
        return line


@dataclass
class LoadResult:
    documents: list[Document] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    files: int = 0


class Source:
    """Input paths as a stream of documents and errors, in a stable order.

    Each document carries its live node tree only while the consumer handles it; the
    tree is dropped when the stream moves on, so memory stays proportional to the
    constructed objects, not to libyaml's nodes.
    """

    def __init__(self, paths: Iterable[str], stdin: BinaryIO | None = None) -> None:
        self._paths = list(paths)
        self._stdin = stdin
        #: Files opened so far (all of them once the stream is exhausted).
        self.files = 0

    def __iter__(self) -> Iterator[Document | InputError]:
        files, errors = expand_paths(self._paths)
        yield from errors
        for path in files:
            self.files += 1
            try:
                if path == STDIN:
                    data = (self._stdin or sys.stdin.buffer).read()
                    name = STDIN_NAME
                else:
                    with open(path, "rb") as handle:
                        data = handle.read()
                    name = path
            except OSError as error:
                yield InputError(path, None, f"cannot read: {error.strerror or error}")
                continue
            yield from iter_bytes(data, name)


def expand_paths(paths: Iterable[str]) -> tuple[list[str], list[InputError]]:
    """Concrete files in a stable order: directories walked, globs expanded, `-` kept.

    Discovery is `dra_guard.walk`'s (excludes, `.gitignore`, Helm charts); this raw
    reader takes every file it selects and leaves Helm charts out, since their templates
    are not manifests (`dra_guard.inputs` renders them and skips non-manifests).
    """
    selection = select(paths, ignores=Ignores(gitignore=False))
    return [candidate.path for candidate in selection.files], selection.errors


def load_paths(paths: Iterable[str], stdin: BinaryIO | None = None) -> LoadResult:
    """Everything at once (documents keep only their text span for line lookups)."""
    source = Source(paths, stdin)
    result = LoadResult()
    for item in source:
        if isinstance(item, InputError):
            result.errors.append(item)
        else:
            result.documents.append(item)
    result.files = source.files
    return result


def _decode(data: bytes, name: str) -> tuple[str | None, InputError | None]:
    if b"\x00" in data[:8192] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None, InputError(name, None, "binary file, not a YAML or JSON manifest")
    try:
        if data.startswith((b"\xff\xfe", b"\xfe\xff")):
            return data.decode("utf-16"), None
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        byte = data[error.start]
        return None, InputError(name, line, f"not UTF-8 text (byte 0x{byte:02x} at offset {error.start})")


def iter_bytes(data: bytes, name: str) -> Iterator[Document | InputError]:
    text, error = _decode(data, name)
    if text is None:
        if error is not None:
            yield error
        return
    check_aliases = _may_have_aliases(data)
    produced = False
    for item in _iter_yaml(text, name, check_aliases):
        if isinstance(item, InputError) and not produced and name.lower().endswith(".json"):
            # JSON that PyYAML (YAML 1.1) rejects, e.g. tab indentation: let json judge it.
            yield _json_document(text, name)
            return
        produced = produced or isinstance(item, Document)
        yield item


def _json_document(text: str, name: str) -> Document | InputError:
    try:
        return Document(name, 1, json.loads(text), 1)
    except json.JSONDecodeError as json_error:
        return InputError(name, json_error.lineno, f"invalid JSON: {json_error.msg}")
    except RecursionError:
        return InputError(name, 1, "document nested too deeply")


def _iter_yaml(text: str, name: str, check_aliases: bool) -> Iterator[Document | InputError]:
    loader = _Loader(text)
    index = 0
    try:
        while loader.check_node():
            node = loader.get_node()
            index += 1
            if node is None:
                continue
            line = node.start_mark.line + 1
            if check_aliases and _expanded_size(node) > MAX_EXPANDED_NODES:
                yield InputError(
                    name,
                    line,
                    f"document {index} expands to more than {MAX_EXPANDED_NODES} nodes through "
                    "YAML aliases (an alias bomb?); not checked",
                )
                continue
            obj = loader.construct_document(node)
            document = Document(name, index, obj, line, text, (node.start_mark.index, node.end_mark.index), node)
            yield document
            document.node = None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark else None
        problem = " ".join(part for part in (error.context, error.problem) if part) or "invalid YAML"
        yield InputError(name, line, f"invalid YAML: {problem}")
    except yaml.YAMLError as error:
        yield InputError(name, None, f"invalid YAML: {error}")
    except RecursionError:
        yield InputError(name, None, f"document {index + 1} is nested too deeply")
    finally:
        loader.dispose()


def _expanded_size(root: yaml.Node) -> int:
    """How many nodes the document has once every alias is expanded (memoised per node)."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        children = _children(node)
        if children_done:
            total = 1 + sum(sizes[id(child)] for child in children)
            sizes[id(node)] = min(total, MAX_EXPANDED_NODES + 1)
        else:
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
    return sizes[id(root)]


def _children(node: yaml.Node) -> Iterator[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield key
            yield value
    elif isinstance(node, yaml.SequenceNode):
        yield from node.value
