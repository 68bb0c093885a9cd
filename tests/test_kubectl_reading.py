"""The reader yields what kubectl sends (tests/kubectl_cases.py), with lines, and never raises."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dra_guard.contract.findings import InputError
from dra_guard.read.loader import Document, iter_bytes
from tests.kubectl_cases import CASES, CM, Case, cm
from tests.kubectl_oracle import same_objects
from tests.manifest_strategies import manifest_file


def read(data: bytes | str, name: str = "m.yaml") -> tuple[list[Document], list[InputError]]:
    items = list(iter_bytes(data.encode() if isinstance(data, str) else data, name))
    documents = [item for item in items if isinstance(item, Document)]
    return documents, [item for item in items if isinstance(item, InputError)]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_reader_yields_what_kubectl_sends(case: Case) -> None:
    documents, errors = read(case.data, case.name)
    assert same_objects([document.obj for document in documents], case.sent), [d.obj for d in documents]
    if case.refused:
        assert any(case.refused in error.message for error in errors), errors
        assert all(error.file == case.name for error in errors)
    else:
        assert errors == []


def test_every_yaml11_boolean_spelling_is_a_boolean_and_quoting_keeps_strings() -> None:
    for word, value in [("y", True), ("Y", True), ("yes", True), ("ON", True), ("n", False), ("Off", False)]:
        (document,), _ = read(CM + f"data: {{plain: {word}, quoted: '{word}'}}\n")
        assert document.obj["data"] == {"plain": value, "quoted": word}


def test_list_items_are_documents_with_their_own_lines() -> None:
    text = (
        "apiVersion: v1\nkind: PodList\nitems:\n"  # lines 1-3
        "- metadata:\n    name: first\n"  # lines 4-5
        "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: second\n"  # lines 6-9
    )
    (first, second), errors = read(text)
    assert errors == []
    assert (first.index, first.line, first.within) == (1, 4, ("items", 0))
    assert (second.line, second.within) == (6, ("items", 1))
    assert first.line_of(("metadata", "name")) == 5
    assert second.line_of(("metadata", "name")) == 9
    assert second.line_of(("spec", "containers")) == 6  # missing paths stop at the deepest node found


def test_lines_inside_merged_and_aliased_content_point_at_the_written_key() -> None:
    text = (
        CM  # lines 1-3
        + "base: &base\n"  # 4
        + "  mode: merged\n"  # 5
        + "data:\n"  # 6
        + "  mode: explicit\n"  # 7
        + "  <<: *base\n"  # 8
        + "copy: *base\n"  # 9
    )
    (document,), _ = read(text)
    assert document.obj["data"] == {"mode": "merged"}
    assert document.line_of(("data", "mode")) == 5
    assert document.line_of(("copy", "mode")) == 5
    assert document.line_of(("copy",)) == 9


def test_lines_after_kubectl_only_separators_and_with_crlf() -> None:
    text = CM + "---#: |\n" + "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n"
    _, second = read(text)[0]
    assert (second.index, second.line, second.line_of(("metadata", "name"))) == (2, 5, 8)
    crlf = read((CM + "---\n" + CM).replace("\n", "\r\n"))[0]
    assert [document.line for document in crlf] == [1, 5]
    assert crlf[1].line_of(("metadata", "name")) == 7


def test_lines_count_line_feeds_even_where_libyaml_sees_more_breaks() -> None:
    """A bare CR, NEL, LS or PS breaks a line for libyaml, not for editors or kubectl."""
    text = 'apiVersion: v1\rkind: List\nmetadata: {name: "a\u2028b"}\r\nitems:\n- apiVersion: v1\n  kind: Pod\n'
    (item,), errors = read(text + "  metadata:\r\n    name: x\n")
    assert errors == [] and (item.line, item.line_of(("metadata", "name"))) == (4, 7)


def test_json_documents_have_lines_too() -> None:
    text = '{"apiVersion": "v1", "kind": "Pod",\n "metadata": {\n  "name": "p"}}\n{"apiVersion": "v1",\n "kind": "Pod"}'
    first, second = read(text, "m.json")[0]
    assert (first.line, second.line) == (1, 4)
    assert first.line_of(("metadata", "name")) == 3
    assert second.line_of(("kind",)) == 5


def test_decoded_binary_hides_the_source_text_but_not_the_lines() -> None:
    """Text searches over the source prove nothing once !!binary put strings there."""
    text = CM + "data:\n  ? !!binary bnZpZGlhLmNvbS9ncHU=\n  : 1\n"
    (document,), _ = read(text)
    assert document.obj["data"] == {"nvidia.com/gpu": 1}
    assert document.text is None
    assert document.line_of(("data", "nvidia.com/gpu")) == 5
    (plain,), _ = read(CM)
    assert plain.text is not None and "ConfigMap" in plain.text[plain.span[0] : plain.span[1]]


def test_documents_before_a_broken_one_load_and_kubectl_stops_after_it() -> None:
    text = CM + "---\nkind: Pod\n  bad: : [\n---\n" + CM
    documents, (error,) = read(text)
    assert same_objects([document.obj for document in documents], [cm()])
    assert error.line == 6 and error.message.startswith("invalid YAML")


def test_empty_file_and_blank_documents_yield_nothing() -> None:
    for text in ("", "\n", "---\n", "# just a comment\n", "---\n---\n", "null\n", "~\n", "--- # note\n"):
        assert read(text) == ([], []), text


@pytest.mark.parametrize("size", [9, 50])
def test_alias_bombs_are_refused_quickly(size: int) -> None:
    letters = "abcdefghij"
    text = f"a: &a [{', '.join(['x'] * size)}]\n" + "".join(
        f"{letters[i + 1]}: &{letters[i + 1]} [{', '.join(['*' + letters[i]] * size)}]\n" for i in range(8)
    )
    started = time.perf_counter()
    documents, (error,) = read(text)
    assert documents == [] and "expands to more than kubectl allows" in error.message
    assert time.perf_counter() - started < 2


def test_a_billion_laughs_in_a_merge_is_refused() -> None:
    text = "a: &a {x: 1, y: 2}\n" + "".join(
        f"l{i}: &l{i} {{<<: [{', '.join(['*a' if i == 0 else f'*l{i - 1}'] * 4)}], k{i}: [{', '.join(['*a'] * 9)}]}}\n"
        for i in range(12)
    )
    started = time.perf_counter()
    read(text)
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize("depth", [300, 600, 990, 5000])
@pytest.mark.parametrize("leaf", ["1", "1.0", '"\\ud800"', "1e400"])
def test_deep_nesting_is_refused_not_raised(depth: int, leaf: str) -> None:
    for text, name in [
        ('{"kind": "Pod", "a": ' + "[" * depth + leaf + "]" * depth + "}", "deep.json"),
        ("kind: Pod\na: " + "[" * depth + leaf + "]" * depth + "\n", "deep.yaml"),
        (
            "kind: Pod\na:\n" + "".join(" " * level + "- x:\n" for level in range(0, min(depth, 990) * 2, 2)),
            "deep.yaml",
        ),
    ]:
        _only_documents_and_errors(list(iter_bytes(text.encode(), name)))


def _only_documents_and_errors(items: list[Any]) -> None:
    for item in items:
        assert isinstance(item, (Document, InputError)), item
        if isinstance(item, Document):
            assert isinstance(item.obj, dict) and isinstance(item.line, int)
            item.line_of(("metadata", "name"))
        else:
            assert item.message


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    _only_documents_and_errors(list(iter_bytes(data, "fuzz.yaml")))


_YAML_PIECES = [*"ab01 -:{}[],&*!?|>'\"#%@`~.\\\n\t\r\x85\u2028\ufeff\ud800", "---", "...", "<<", "!!binary ", "\n- "]
YAMLISH = st.lists(st.sampled_from(_YAML_PIECES), max_size=60).map("".join)


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(YAMLISH)
def test_yamlish_text_never_raises(text: str) -> None:
    _only_documents_and_errors(list(iter_bytes(text.encode(errors="surrogatepass"), "fuzz.yaml")))


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(manifest_file(), st.integers(0, 400), st.binary(max_size=3))
def test_damaged_manifests_never_raise(data: bytes, position: int, insert: bytes) -> None:
    _only_documents_and_errors(list(iter_bytes(data, "m.yaml")))
    position %= len(data) + 1
    _only_documents_and_errors(list(iter_bytes(data[:position] + insert + data[position + 1 :], "m.yaml")))


POD_WITH_GPU_KEY = (
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: t}\nspec:\n  containers:\n  - name: c\n"
    "    image: i\n    resources:\n      limits:\n"
)
ADMIN_CLAIM = (
    "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: gpu, namespace: t}\nspec:\n"
    "  devices:\n    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: gpu.nvidia.com\n"
)


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        (POD_WITH_GPU_KEY + "        ? !!binary bnZpZGlhLmNvbS9ncHU=\n        : 1\n", "DRA001"),
        (ADMIN_CLAIM + "        adminAccess: y\n", "DRA006"),
        (ADMIN_CLAIM + "        adminAccess: false\n        <<: {adminAccess: true}\n", "DRA006"),
        (CM + "---#: |\n" + POD_WITH_GPU_KEY + "        nvidia.com/gpu: 1\n", "DRA001"),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: wrapper}\nitems:\n- "
            + POD_WITH_GPU_KEY.replace("\n", "\n  ")
            + "        nvidia.com/gpu: 1\n",
            "DRA001",
        ),
    ],
    ids=["binary-key", "admin-access-y", "merge-after-explicit-key", "dash-dash-dash-hash", "items-of-a-configmap"],
)
def test_what_kubectl_would_apply_is_what_the_rules_see(text: str, rule: str) -> None:
    """The rules see what kubectl applies (with PyYAML's reading the first three went unreported)."""
    from dra_guard.engine.run import check_stream

    report = check_stream(iter_bytes(text.encode(), "attack.yaml"))
    assert report.errors == []
    assert rule in {finding.rule for finding in report.findings}
