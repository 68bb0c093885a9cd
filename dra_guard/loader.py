"""Files, directories, globs and stdin -> documents that know the line of every path.

Documents are composed by libyaml (when PyYAML has it) and constructed by PyYAML as
`yaml.load_all` would; the composed node tree is kept so a finding's JSON pointer can be
turned into a line only when a finding needs it.  Bad input becomes an `InputError`
with file and line; documents before a broken one, and every other file, still load.
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from dra_guard.findings import InputError

try:  # libyaml's parser when PyYAML was built with it, the pure-Python one otherwise
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"
STDIN_NAME = "<stdin>"
#: Most nodes one document may expand to through aliases (a "billion laughs" bound).
MAX_EXPANDED_NODES = 250_000
# An anchor (`&name`) outside a CEL `&&`; without one a document cannot hold aliases.
_ANCHOR = re.compile(rb"(?:^|[\s\[{,:\-?])&[^\s&]")


@dataclass
class Document:
    file: str
    #: 1-based position of the document in its file.
    index: int
    obj: Any
    line: int
    node: yaml.Node | None = field(default=None, repr=False)

    def line_of(self, path: Sequence[str | int]) -> int:
        """The line of the deepest node on `path` (the key's line for mapping entries)."""
        node = self.node
        line = self.line
        for part in path:
            if isinstance(node, yaml.MappingNode):
                for key, value in node.value:
                    if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                        line = key.start_mark.line + 1
                        node = value
                        break
                else:
                    return line
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
                node = node.value[part]
                line = node.start_mark.line + 1
            else:
                return line
        return line


@dataclass
class LoadResult:
    documents: list[Document] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    files: int = 0


def expand_paths(paths: Iterable[str]) -> tuple[list[str], list[InputError]]:
    """Concrete files in a stable order: directories recursively, globs expanded, `-` kept."""
    files: list[str] = []
    errors: list[InputError] = []
    for raw in paths:
        if raw == STDIN:
            files.append(STDIN)
        elif os.path.isdir(raw):
            found = sorted(
                str(path)
                for path in Path(raw).rglob("*")
                if path.suffix.lower() in MANIFEST_SUFFIXES and path.is_file()
            )
            files.extend(found)
        elif os.path.exists(raw):
            files.append(raw)
        elif glob.has_magic(raw):
            matches = sorted(match for match in glob.glob(raw, recursive=True) if os.path.isfile(match))
            if not matches:
                errors.append(InputError(raw, None, "no file matches this pattern"))
            files.extend(matches)
        else:
            errors.append(InputError(raw, None, "no such file or directory"))
    seen: set[str] = set()
    unique = [path for path in files if path == STDIN or not (path in seen or seen.add(path))]  # type: ignore[func-returns-value]
    return unique, errors


def load_paths(paths: Iterable[str], stdin: BinaryIO | None = None) -> LoadResult:
    files, errors = expand_paths(paths)
    result = LoadResult(errors=errors)
    for path in files:
        result.files += 1
        try:
            if path == STDIN:
                data = (stdin or sys.stdin.buffer).read()
                name = STDIN_NAME
            else:
                with open(path, "rb") as handle:
                    data = handle.read()
                name = path
        except OSError as error:
            result.errors.append(InputError(path, None, f"cannot read: {error.strerror or error}"))
            continue
        documents, file_errors = load_bytes(data, name)
        result.documents.extend(documents)
        result.errors.extend(file_errors)
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


def load_bytes(data: bytes, name: str) -> tuple[list[Document], list[InputError]]:
    text, error = _decode(data, name)
    if text is None:
        return [], [error] if error else []
    check_aliases = bool(_ANCHOR.search(data))
    documents, errors = _load_yaml(text, name, check_aliases)
    if errors and name.lower().endswith(".json") and not documents:
        # JSON that PyYAML (YAML 1.1) rejects, e.g. tab indentation: let json judge it.
        try:
            return [Document(name, 1, json.loads(text), 1)], []
        except json.JSONDecodeError as json_error:
            return [], [InputError(name, json_error.lineno, f"invalid JSON: {json_error.msg}")]
        except RecursionError:
            return [], [InputError(name, 1, "document nested too deeply")]
    return documents, errors


def _load_yaml(text: str, name: str, check_aliases: bool) -> tuple[list[Document], list[InputError]]:
    documents: list[Document] = []
    errors: list[InputError] = []
    loader = _Loader(text)
    index = 0
    try:
        while loader.check_node():
            node = loader.get_node()
            index += 1
            if node is None:
                continue
            line = node.start_mark.line + 1
            if check_aliases:
                expanded = _expanded_size(node)
                if expanded > MAX_EXPANDED_NODES:
                    errors.append(
                        InputError(
                            name,
                            line,
                            f"document {index} expands to more than {MAX_EXPANDED_NODES} nodes through "
                            "YAML aliases (an alias bomb?); not checked",
                        )
                    )
                    continue
            obj = loader.construct_document(node)
            documents.append(Document(name, index, obj, line, node))
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark else None
        problem = " ".join(part for part in (error.context, error.problem) if part) or "invalid YAML"
        errors.append(InputError(name, line, f"invalid YAML: {problem}"))
    except yaml.YAMLError as error:
        errors.append(InputError(name, None, f"invalid YAML: {error}"))
    except RecursionError:
        errors.append(InputError(name, None, f"document {index + 1} is nested too deeply"))
    finally:
        loader.dispose()
    return documents, errors


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
