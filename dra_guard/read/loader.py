"""Files, directories, globs and stdin -> the objects `kubectl apply -f` would send.

Reading follows kubectl exactly (see `dra_guard.kubectl_yaml`): a file yields one
`Document` per object kubectl would send (each item of a List), or an `InputError` with
file and line where kubectl refuses the input or dra-guard cannot be sure what it would
send.  libyaml's node trees are not kept (they cost ~40x the text in memory and make the
garbage collector rescan them all): a document keeps its span of the file text, and,
when the fast reader read it, rapidyaml's compact tree, which turns the JSON pointers of
its findings into lines; a document read by libyaml, or a pointer rapidyaml's tree cannot
place, is parsed again by libyaml, once, for its lines.
Documents before a broken one, and every other file, still load.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from dra_guard.contract.findings import InputError
from dra_guard.kubectl_yaml import FastLines, Parsed, SentObject, document_root, read, read_pieces, source_line
from dra_guard.model.kustomize import PatchFiles, is_kustomization
from dra_guard.read.files import read_input, standard_input
from dra_guard.read.walk import KUSTOMIZATION_FILE_NAMES, STDIN, Ignores, select
from dra_guard.ruleapi.config import MAX_FILE_BYTES

STDIN_NAME = "<stdin>"
KUSTOMIZATION_API_VERSION = "kustomize.config.k8s.io/v1beta1"


@dataclass
class Document:
    """One object kubectl would send, with what it takes to find its lines."""

    file: str
    #: 1-based position of the object's document in its file.
    index: int
    obj: Any
    #: 1-based line where the object starts (its document's root, or its List item).
    line: int
    #: The text holding the object's source, and the document's [start, end) span in it;
    #: None when the object holds strings that text does not spell (decoded !!binary),
    #: so that searching it proves nothing.
    text: str | None = field(default=None, repr=False)
    span: tuple[int, int] = field(default=(0, 0), repr=False)
    #: The live node tree while the document is being checked (set by the stream), or the
    #: tree parsed again later for a late finding.
    node: Any = field(default=None, repr=False)
    #: Where the object sits in its document: () or ("items", n) for a List item.
    within: tuple[str | int, ...] = ()
    _source: str | None = field(default=None, repr=False)
    _first_line: int = field(default=1, repr=False)
    #: rapidyaml's tree when the fast reader read it: lines come from it where it can tell.
    _parsed: Parsed | None = field(default=None, repr=False)
    _reparsed: bool = field(default=False, init=False, repr=False)
    _fast_lines: FastLines | None = field(default=None, init=False, repr=False)
    #: Found by a walk or a glob (a folder's files, a rendered chart or kustomization), not
    #: named on the command line nor read from stdin: a ResourceSlice in it is checked as an
    #: object but does not describe the cluster (`dra_guard.ruleapi.context`).
    walked: bool = field(default=False, init=False, repr=False)
    #: A kustomization's patch files, read with it (`dra_guard.read.kustomize`), so that
    #: checking it opens no file; None for any other object, and for one read from stdin.
    patch_files: PatchFiles | None = field(default=None, init=False, repr=False)

    @classmethod
    def sent(cls, file: str, sent: SentObject) -> Document:
        return cls(
            file,
            sent.index,
            sent.obj,
            sent.line,
            sent.text if sent.source_spells_strings else None,
            sent.span,
            sent.root,
            sent.within,
            sent.text,
            sent.first_line,
            sent.parsed,
        )

    def line_of(self, path: Sequence[str | int]) -> int:
        """The line of the deepest node on `path` (the key's line for mapping entries)."""
        if not path or self._source is None:
            return self.line
        if self.node is None:
            if self._parsed is not None:
                if self._fast_lines is None:
                    self._fast_lines = FastLines(self._parsed, self.line - self._first_line)
                line = self._fast_lines.line((*self.within, *path))
                if line is not None:
                    return self._first_line + line
            if self._reparsed:
                return self.line
            self._reparsed = True
            self.node = document_root(self._source, self.span)
            if self.node is None:
                return self.line
        line = source_line(self._source, self.span, self._first_line, (*self.within, *path), self.node)
        return self.line if line is None else line


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

    def __init__(self, paths: Iterable[str], stdin: BinaryIO | None = None, max_bytes: int | None = None) -> None:
        self._paths = list(paths)
        self._stdin = stdin
        #: The most bytes read from one input (`max-file-bytes`).
        self._max_bytes = MAX_FILE_BYTES.default if max_bytes is None else max_bytes
        #: Files opened so far (all of them once the stream is exhausted).
        self.files = 0

    def __iter__(self) -> Iterator[Document | InputError]:
        files, errors = expand_paths(self._paths)
        yield from errors
        for path in files:
            self.files += 1
            name = STDIN_NAME if path == STDIN else display_name(path)
            data = read_input(path, self._max_bytes, (self._stdin or standard_input()) if path == STDIN else None)
            if isinstance(data, str):
                yield InputError(name, None, data)
                continue
            yield from iter_bytes(data, name)


def display_name(path: str) -> str:
    """A path as reports show it: bytes that are not UTF-8 (a file name from another
    locale) as \\xNN escapes, so that every report can be written."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(path).decode("utf-8", "backslashreplace")
    return path


def is_kustomization_file(name: str) -> bool:
    return os.path.basename(name) in KUSTOMIZATION_FILE_NAMES


def as_kustomization(value: Any) -> Any:
    """A kustomization file's document as kustomize reads it: without apiVersion and kind,
    it is a Kustomization all the same (kustomize `FixKustomization` fills them in), and
    it is checked as one (its patches can ask for accelerators), not refused as no object."""
    if isinstance(value, dict) and "apiVersion" not in value and "kind" not in value:
        return {"apiVersion": KUSTOMIZATION_API_VERSION, "kind": "Kustomization", **value}
    return value


def expand_paths(paths: Iterable[str]) -> tuple[list[str], list[InputError]]:
    """Concrete files in a stable order: directories walked, globs expanded, `-` kept.

    Discovery is `dra_guard.read.walk`'s (excludes, `.gitignore`, Helm charts); this raw
    reader takes every file it selects and leaves Helm charts out, since their templates
    are not manifests (`dra_guard.read.inputs` renders them and skips non-manifests).
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


def iter_bytes(data: bytes, name: str) -> Iterator[Document | InputError]:
    """The objects of one file's bytes; an error, never an exception, for what cannot be
    read (what comes before it is still yielded, and the caller goes on with other files)."""
    name = display_name(name)
    adjust = as_kustomization if is_kustomization_file(name) else None
    return _documents(lambda: read(data, name, adjust=adjust), name)


def iter_blocks(blocks: Iterable[bytes], name: str) -> Iterator[Document | InputError]:
    """`iter_bytes` of the concatenated `blocks`, read a piece at a time (`read_pieces`)."""
    name = display_name(name)
    adjust = as_kustomization if is_kustomization_file(name) else None
    return _documents(lambda: read_pieces(blocks, name, adjust=adjust), name)


def _documents(sent: Callable[[], Iterator[SentObject | InputError]], name: str) -> Iterator[Document | InputError]:
    try:
        for item in sent():
            if isinstance(item, InputError):
                yield item
                continue
            document = Document.sent(name, item)
            if name != STDIN_NAME and isinstance(item.obj, Mapping) and is_kustomization(item.obj):
                # Imported here: most checks meet no kustomization, and start faster without it.
                from dra_guard.read.kustomize import read_patch_files

                document.patch_files = read_patch_files(item.obj, name)
            yield document
            document.node = None
    except Exception as error:  # a reading nobody foresaw
        problem = type(error).__name__
        yield InputError(name, None, f"dra-guard could not read this file ({problem}); not checked")
