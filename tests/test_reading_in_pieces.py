"""A large input is read a piece at a time and gives what reading it whole gives
(issue 25, point 3): the same objects, numbers, lines and errors, whatever the block size
or where the pieces are cut, from files and from standard input.

`read_pieces` is held to `read` with pieces of a few dozen characters (so that nearly every
document boundary is a cut) and blocks down to one byte, on every file the tests have and on
drawn files with the hazards of framing: CR LF, byte order marks, bad separators, bytes that
are not UTF-8, no final line feed, JSON streams.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dra_guard import kubectl_yaml
from dra_guard.engine.run import check_stream
from dra_guard.kubectl_yaml import read, read_pieces
from dra_guard.read import files as input_files
from dra_guard.read.inputs import Inputs
from dra_guard.read.walk import Ignores, select
from dra_guard.ruleapi.config import MAX_FILE_BYTES
from testkit.paths import REPO_ROOT
from tests.manifest_strategies import manifest_file

TEST_FILES = sorted(
    path for path in (REPO_ROOT / "tests").rglob("*") if path.suffix in (".yaml", ".yml", ".json") and path.is_file()
)


def _seen(items: Iterator[Any]) -> list[tuple[Any, ...]]:
    seen: list[tuple[Any, ...]] = []
    for item in items:
        if hasattr(item, "obj"):
            document = item.text[item.span[0] : item.span[1]]
            seen.append(("object", item.obj, item.index, item.line, item.within, document, item.first_line))
        else:
            seen.append(("error", item.file, item.line, item.message))
    return seen


def _blocks(data: bytes, size: int) -> list[bytes]:
    return [data[start : start + size] for start in range(0, len(data), size)] or [b""]


@pytest.fixture
def tiny_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kubectl_yaml, "PIECE_CHARS", 40)


def test_every_test_file_read_in_pieces_reads_as_a_whole(tiny_pieces: None) -> None:
    for path in TEST_FILES:
        data = path.read_bytes()
        whole = _seen(read(data, path.name))
        for size in (1, 13, 4096):
            assert _seen(read_pieces(_blocks(data, size), path.name)) == whole, (path, size)


HAZARDS = (
    lambda data: data,
    lambda data: data.replace(b"\n", b"\r\n"),
    lambda data: b"\xef\xbb\xbf" + data,
    lambda data: data.rstrip(b"\n"),
    lambda data: data + b"---\nkind: ConfigMap\n--- x\nafter: bad separator\n",
    lambda data: data + b"---\n---\n# only a comment\n---\n",
    lambda data: data[: len(data) // 2] + b"\xff\xfe" + data[len(data) // 2 :],
    lambda data: data[: len(data) // 3] + b"\xc3" + data[len(data) // 3 :],
    lambda data: b"\n\n  " + data,
)


@settings(max_examples=300, deadline=None)
@given(manifest_file(), st.sampled_from(HAZARDS), st.integers(1, 64), st.integers(0, 200))
def test_drawn_files_read_in_pieces_read_as_a_whole(data: bytes, hazard: Any, block: int, piece: int) -> None:
    data = hazard(data)
    original = kubectl_yaml.PIECE_CHARS
    kubectl_yaml.PIECE_CHARS = piece
    try:
        assert _seen(read_pieces(_blocks(data, block), "drawn.yaml")) == _seen(read(data, "drawn.yaml"))
    finally:
        kubectl_yaml.PIECE_CHARS = original


@pytest.mark.parametrize("piece", [0, 40, 1 << 20])
def test_a_line_ending_in_two_carriage_returns_keeps_one_read_in_pieces(piece: int) -> None:
    """kubectl turns CR LF into LF once per line: CR CR LF keeps a CR, read whole or in
    pieces (each piece's lines were made LF-ended once, and not again at the file's end)."""
    data = b"apiVersion: v1\r\r\nkind: ConfigMap\r\r\nmetadata:\r\r\n  name: one\r\r\n# a comment\r\r\n---\r\r\n"
    original = kubectl_yaml.PIECE_CHARS
    kubectl_yaml.PIECE_CHARS = piece
    try:
        for size in (1, 7, len(data)):
            pieces = _seen(read_pieces(_blocks(data, size), "crcr.yaml"))
            assert pieces == _seen(read(data, "crcr.yaml")), size
            assert "\r\n" in pieces[0][5], size
    finally:
        kubectl_yaml.PIECE_CHARS = original


def test_a_piece_holds_a_few_documents_not_the_file(tiny_pieces: None) -> None:
    document = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n"
    data = ("---\n" + document) * 2000
    items = list(read_pieces(_blocks(data.encode(), 50), "big.yaml"))
    assert len(items) == 2000
    texts = {id(item.text): len(item.text) for item in items}  # the items hold them: no id is reused
    assert len(texts) > 500  # a text of its own for every few documents
    first, *rest = texts.values()
    assert first <= 8192 + len(document) + 4  # the first 8 KiB are read before reading starts
    assert max(rest) <= 40 + 50 + len(document) + 4  # then a piece, a block and a document at most


# --- the reading layer ---------------------------------------------------------------------------------


def _report(paths: list[str], stdin: bytes | None = None) -> str:
    from dra_guard.present.report import writer

    inputs = Inputs(
        select(paths, ignores=Ignores(gitignore=False)),
        stdin=io.BytesIO(stdin) if stdin is not None else None,
        kustomize=(),
        max_bytes=MAX_FILE_BYTES.default,
    )
    report = check_stream(inputs, None)
    report.files, report.skipped, report.unchecked = inputs.files, inputs.skipped, inputs.unchecked
    out = io.StringIO()
    writer("json")(report, out)
    return out.getvalue()


FOLDERS = [
    str(REPO_ROOT / "tests" / name) for name in ("corpus", "fixtures/crds", "fixtures/repo", "fixtures/upstream")
]


def test_files_read_in_pieces_are_checked_as_files_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files named and found by a walk (manifests, non-manifests skipped, errors with the
    Helm hint): the same report when every file is read in pieces."""
    whole = _report(FOLDERS)
    monkeypatch.setattr(input_files, "STREAM_ABOVE", 0)
    monkeypatch.setattr(input_files, "BLOCK_BYTES", 97)
    monkeypatch.setattr(kubectl_yaml, "PIECE_CHARS", 64)
    assert _report(FOLDERS) == whole


def test_a_large_standard_input_is_spooled_and_read_in_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"".join(path.read_bytes() + b"\n---\n" for path in sorted((REPO_ROOT / "tests" / "corpus").rglob("*.yaml")))
    whole = _report(["-"], data)
    monkeypatch.setattr(input_files, "STREAM_ABOVE", 1000)
    monkeypatch.setattr(input_files, "BLOCK_BYTES", 333)
    assert _report(["-"], data) == whole
    opened = input_files.open_input("-", 1500, io.BytesIO(data))
    assert isinstance(opened, str) and opened.startswith("more than 1500 bytes, larger than max-file-bytes")


def test_a_found_file_without_a_manifest_read_in_pieces_is_skipped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "values.yaml").write_text("replicas: 3\nimage: {tag: v1}\n---\nmore: values\n" * 50)
    (tmp_path / "broken.yaml").write_text("a: {{ .Values.x }}\n---\nkind: [\n")
    whole = _report([str(tmp_path)])
    monkeypatch.setattr(input_files, "STREAM_ABOVE", 0)
    assert _report([str(tmp_path)]) == whole
    assert '"skipped"' in whole and "values.yaml" in whole and "helm template" in whole


def test_a_file_that_grows_past_the_cap_while_it_is_read_in_pieces_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(input_files, "STREAM_ABOVE", 0)
    monkeypatch.setattr(input_files, "BLOCK_BYTES", 100)
    path = tmp_path / "growing.yaml"
    path.write_bytes(b"a: b\n" * 100)
    opened = input_files.open_input(str(path), 500)
    assert isinstance(opened, input_files.Opened) and opened.data is None
    with path.open("ab") as grown:
        grown.write(b"c: d\n" * 100)
    assert b"".join(opened.blocks()) == b"a: b\n" * 100
    assert opened.problem is not None and "larger than max-file-bytes (500 bytes)" in opened.problem
    opened.close()
