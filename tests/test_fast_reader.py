"""The fast reader (rapidyaml) yields exactly what the libyaml reader yields, or declines.

For every file -- the kubectl cases, generated manifests with anchors, tags, merge keys,
number spellings and separators, and the benchmark's realistic corpus -- reading with
rapidyaml gives the same objects, the same lines (of the objects and of every path a
finding may point at) and the same errors as reading with PyYAML alone.  The alias
pre-filter (parser.py) is held to the same standard: a report with it is the report
without it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from bench.corpus import write_corpus, write_realistic
from dra_guard.contract.findings import InputError
from dra_guard.kubectl_yaml import choice as parser_choice
from dra_guard.kubectl_yaml import fast, parser
from dra_guard.kubectl_yaml.lines import node_line
from dra_guard.kubectl_yaml.ryml_native import TreeCalls
from dra_guard.read.loader import Document, iter_bytes
from tests.kubectl_cases import CASES
from tests.manifest_strategies import manifest_file
from tests.yaml_readers import both_readings, paths

pytestmark = pytest.mark.skipif(fast.active_parser() != "rapidyaml", reason="the fast reader is off here")


def _same_reading(data: bytes, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    (fast_reading,), (reference,) = both_readings([data], name, monkeypatch)
    assert fast_reading == reference, data.decode(errors="replace")


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_kubectl_cases_read_the_same(case: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _same_reading(case.data, case.name, monkeypatch)


def test_generated_manifests_read_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    @settings(
        max_examples=300,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(manifest_file())
    def compare(data: bytes) -> None:
        _same_reading(data, "m.json" if data.lstrip().startswith(b"{") else "m.yaml", monkeypatch)

    compare()


def test_the_benchmark_corpora_read_the_same_and_mostly_fast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_realistic(tmp_path / "realistic", 300)
    write_corpus(tmp_path / "dra-heavy", 240, "dra-heavy")
    declined = accepted = 0
    original = fast.decode_plain

    def counting(text: str, parsed: Any = fast.UNPARSED) -> Any:
        nonlocal declined, accepted
        value = original(text, parsed)
        if fast._Rapidyaml.module is None:  # the reference reading, with PyYAML alone
            return value
        declined += value is fast.DECLINED
        accepted += value is not fast.DECLINED
        return value

    monkeypatch.setattr("dra_guard.kubectl_yaml.decode_plain", counting)
    for path in sorted(tmp_path.glob("*/*.yaml")):
        _same_reading(path.read_bytes(), path.name, monkeypatch)
    # The fast reader must not get by on declining: real manifests are plain text.
    assert accepted >= 4 * declined, (accepted, declined)


_LINE_SHAPES = (
    "a: 1\nb:\n  c: [x, w]\n  d: |\n    text\n  'e': \"q\"\nlist:\n- {k: v}\n- name: z\n  v: 2\n",
    "items:\n-\n  name: on-the-next-line\n- - nested\n  - seq\n- |\n  literal\n- >-\n  folded\n"
    "- ''\n-\n- plain\n  continued\n",
    "# a comment first\nspec:\n  # between\n  containers:\n  - name: c  # after\n"
    '    args: ["--a",\n      "--b"]\n  - {name: d,\n     image: i}\n',
)


@pytest.mark.parametrize("text", _LINE_SHAPES)
def test_fast_lines_are_libyamls_or_left_to_it(text: str) -> None:
    value = fast.decode_plain(text)
    assert value is not fast.DECLINED
    root = parser.parse(text).documents[0]
    lines = fast.FastLines(fast.parse_plain([text])[0], root.start_mark.line)
    answered = 0
    for path in paths(value):
        found = lines.line(path)
        if found is not None:
            answered += 1
            assert found == node_line(root, path), path
        elif path and isinstance(path[-1], str) and lines.line(path[:-1]) is not None:
            raise AssertionError(f"a key under a node it placed is always placed: {path}")
    assert answered > 0


def test_lines_of_fast_documents_come_from_rapidyaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_realistic(tmp_path, 300)
    answers: list[int | None] = []
    original = fast.FastLines.line

    def counting(self: fast.FastLines, path: tuple[str | int, ...]) -> int | None:
        answers.append(original(self, path))
        return answers[-1]

    monkeypatch.setattr(fast.FastLines, "line", counting)
    for path in sorted(tmp_path.glob("*.yaml")):
        _same_reading(path.read_bytes(), path.name, monkeypatch)  # every path's line, against libyaml's
    assert answers and sum(answer is None for answer in answers) * 20 < len(answers)


def test_the_trees_calls_skip_swigs_proxy_and_answer_as_its_methods_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ryml = fast._Rapidyaml.load()
    native = fast._Rapidyaml.native
    # Every rapidyaml pyproject.toml admits (its floor too) has SWIG's functions: the
    # reader's ~15 calls a document go to them, not through the Python proxy.
    assert ryml is not None and native.tree.direct
    assert type(native.tree.parse_in_place(bytearray(b"a: 1\n"))) is not ryml.Tree
    proxied = TreeCalls(
        types.SimpleNamespace(
            Tree=ryml.Tree,
            parse_substr=ryml.parse_substr,
            parse_csubstr=ryml.parse_csubstr,
            emit_json_to_substr=ryml.emit_json_to_substr,
        )
    )
    assert not proxied.direct and type(proxied.parse_in_place(bytearray(b"a: 1\n"))) is ryml.Tree
    write_realistic(tmp_path, 150)
    texts = [*_LINE_SHAPES]
    for path in sorted(tmp_path.glob("*.yaml")):
        texts += [f"{document}\n" for document in path.read_text().split("\n---\n")]

    def reading() -> list[Any]:
        answers: list[Any] = []
        for text in texts:
            parsed = fast.parse_plain([text])[0]
            value = fast.decode_plain(text, parsed)
            answers.append(value)
            if value is not fast.DECLINED and value is not fast.EMPTY:
                lines = fast.FastLines(parsed, 0)
                answers.append([lines.line(path) for path in paths(value)])
        return answers

    direct = reading()
    monkeypatch.setattr(native, "tree", proxied)
    monkeypatch.setattr(native.quiet, "_calls", proxied)
    assert reading() == direct
    assert sum(isinstance(answer, list) and any(line is not None for line in answer) for answer in direct) > 100


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("a: 1\na: 2\n", "a duplicate key: the last wins"),
        ("a: 0x1F\nb: '0x1F'\n", "the same spelling plain and quoted"),
        ("a: nan\nb: .Inf\n", "spellings rapidyaml rewrites"),
        ("a: 1e400\n", "a float beyond float64 stays text"),
        ("a: &x {b: 1}\nc: *x\n", "an alias"),
        ("a: !!binary aGk=\n", "a tag"),
        ("<<: {a: 1}\nb: 2\n", "a merge key"),
        ("a: 'on'\nb: on\n", "a boolean spelled both ways"),
        ("a: on\n", "a YAML 1.1 boolean, which rapidyaml writes as text"),
        ("on: 1\n'on': 2\n", "keys that become the same string"),
        ('a: "\\/"\n', "an escape go-yaml lacks"),
        ("a: 12345678901234567890\n", "uint64"),
    ],
)
def test_what_the_fast_reader_leaves_to_libyaml(text: str, why: str) -> None:
    assert fast.decode_plain(text) is fast.DECLINED, why


def test_plain_documents_are_read_fast() -> None:
    assert fast.decode_plain('a: "9090"\nb: 9090\nc: true\nd: "true"\ne: 1.5\nf: [x, {g: null}]\n') == {
        "a": "9090",
        "b": 9090,
        "c": True,
        "d": "true",
        "e": 1.5,
        "f": ["x", {"g": None}],
    }
    assert fast.decode_plain("# a comment only\n") is fast.EMPTY


@pytest.mark.e2e
def test_invalid_yaml_gets_libyamls_message_and_no_cplusplus_text(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  a: b: c\n")
    result = subprocess.run(
        [sys.executable, "-m", "dra_guard.cli", "check", str(path)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, parser_choice.PARSER_VARIABLE: "rapidyaml"},
    )
    assert result.returncode == 2
    output = result.stdout + result.stderr
    assert f"{path}:5: error: invalid YAML: mapping values are not allowed" in output, output
    assert "ryml" not in output and ".hpp" not in output and "ERROR: [parse]" not in output, output


def test_the_parser_variable_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(parser_choice.PARSER_VARIABLE, "libfancy")
    with pytest.raises(parser_choice.UnavailableParser, match="expected one of pyyaml, rapidyaml"):
        parser_choice.load_rapidyaml()
    monkeypatch.setenv(parser_choice.PARSER_VARIABLE, "pyyaml")
    assert parser_choice.load_rapidyaml() is None
    monkeypatch.setitem(sys.modules, "ryml", None)  # as if the wheel were missing
    monkeypatch.setenv(parser_choice.PARSER_VARIABLE, "rapidyaml")
    with pytest.raises(parser_choice.UnavailableParser, match="does not import"):
        parser_choice.load_rapidyaml()
    monkeypatch.delenv(parser_choice.PARSER_VARIABLE)
    assert parser_choice.load_rapidyaml() is None  # unset: PyYAML, quietly


# --- The alias pre-filter: only `*name` where a node can start sends text to the event composer.


@pytest.mark.parametrize(
    "text",
    [
        "a: *x\n",
        "- *x\n",
        "a:\n  *x\n",
        "[a, *x]\n",
        "[a,*x]\n",
        "{a: *x}\n",
        '{"a":*x}\n',
        "? *x\n: b\n",
        "a:\t*x\n",
        "- - *x\n",
        "a: [\n  *x]\n",
        "a:\r*x\n",
    ],
)
def test_every_place_an_alias_can_stand_is_seen(text: str) -> None:
    assert parser.may_hold_alias(text)


@pytest.mark.parametrize(
    "text",
    [
        "schedule: 0 */6 * * *\n",
        "schedule: '*/15 * * * *'\n",
        "# *see* the docs\n",
        "a: b *c\n",
        "a: -*c\n",
        "args: [--glob=*.yaml]\n",
        "upstream: http://x/api/*\n",
        "data: |\n  tenants=*\n",
    ],
)
def test_asterisks_that_are_text_are_not_aliases(text: str) -> None:
    assert not parser.may_hold_alias(text)


@pytest.mark.e2e
def test_the_report_is_the_same_without_the_alias_pre_filter(tmp_path: Path) -> None:
    """Every document composed from events (as if each held an alias): the same report."""
    corpus = tmp_path / "corpus"
    write_realistic(corpus, 300)
    write_corpus(corpus / "mixed", 200)
    script = (
        "import sys\n"
        "from dra_guard.kubectl_yaml import parser\n"
        "if sys.argv[1] == 'off':\n"
        "    parser.may_hold_alias = lambda text: True\n"
        "from dra_guard.cli.main import main\n"
        "sys.exit(main(sys.argv[2:]))\n"
    )
    reports = []
    for mode in ("on", "off"):
        output = tmp_path / f"{mode}.json"
        result = subprocess.run(
            [sys.executable, "-c", script, mode, "check", "--format", "json", "-o", str(output), str(corpus)],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, parser_choice.PARSER_VARIABLE: "pyyaml"},
        )
        assert result.returncode == 1, result.stderr
        reports.append(output.read_text())
    assert json.loads(reports[0])["summary"]["findings"] > 0
    assert reports[0] == reports[1]


@pytest.mark.e2e
def test_unforced_the_reader_imports_rapidyaml_only_when_it_pays(tmp_path: Path) -> None:
    """A check of a few documents never imports rapidyaml (its import costs more than it
    saves there: the cold start); a stream past AUTO_AFTER_DOCUMENTS documents, or an input
    of FAST_FROM_START_BYTES (`read_fast_when_large`), is read with it.  Many short files are
    not: which reader reads a document never depends on what the process read before."""
    config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c%d}\ndata: {a: b}\n"
    small, long = tmp_path / "small.yaml", tmp_path / "long.yaml"
    small.write_text(config_map % 0)
    long.write_text("---\n".join(config_map % n for n in range(fast.AUTO_AFTER_DOCUMENTS + 40)))
    short = []
    for number in range(fast.AUTO_AFTER_DOCUMENTS + 40):
        short.append(tmp_path / f"short-{number}.yaml")
        short[-1].write_text(config_map % number)
    script = (
        "import sys; from dra_guard.read.loader import load_paths; from dra_guard.kubectl_yaml import fast; "
        "sys.argv[1] == 'large' and fast.read_fast_when_large([fast.FAST_FROM_START_BYTES]); "
        "documents = load_paths(sys.argv[2:]).documents; "
        "print(len(documents), 'ryml' in sys.modules)"
    )
    unforced = {key: value for key, value in os.environ.items() if key != parser_choice.PARSER_VARIABLE}

    def read(input_size: str, *paths: Path) -> list[str]:
        result = subprocess.run(
            [sys.executable, "-c", script, input_size, *map(str, paths)],
            capture_output=True,
            text=True,
            check=True,
            env=unforced,
        )
        return result.stdout.split()

    many = str(fast.AUTO_AFTER_DOCUMENTS + 40)
    assert read("small", small) == ["1", "False"]
    assert read("small", long) == [many, "True"]
    assert read("small", *short) == [many, "False"]
    assert read("large", small) == ["1", "True"]


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("choice", "message"),
    [("libfancy", "expected one of pyyaml, rapidyaml"), ("rapidyaml", "the rapidyaml package does not import")],
)
def test_a_wrong_parser_choice_is_a_clear_error(tmp_path: Path, choice: str, message: str) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    hide_the_wheel = "import sys; sys.modules['ryml'] = None; from dra_guard.cli.main import main; sys.exit(main())"
    result = subprocess.run(
        [sys.executable, "-c", hide_the_wheel, "check", str(path)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, parser_choice.PARSER_VARIABLE: choice},
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"dra-guard: {parser_choice.PARSER_VARIABLE}=") and message in result.stderr
    assert "Traceback" not in result.stderr


# --- Issue 20, point 1: what rapidyaml reads differently from libyaml is declined.

#: (id, file, what kubectl does: the objects it sends, or the line of the error it reports)
POINT1_REGRESSIONS: list[tuple[str, str, Any]] = [
    (
        "comment-in-flow-mapping",
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: gpu, namespace: tenant-a}\nspec:\n"
        "  devices:\n    requests:\n    - name: gpu\n"
        "      exactly: {deviceClassName: gpu.nvidia.com, adminAccess: true #x\n        }\n",
        [
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": "gpu", "namespace": "tenant-a"},
                "spec": {
                    "devices": {
                        "requests": [
                            {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "adminAccess": True}}
                        ]
                    }
                },
            }
        ],
    ),
    # libyaml finds the mapping unclosed at the end of the text (kubectl: "line 4")
    ("comment-closing-flow-mapping", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b #x}\n", 5),
    ("empty-key-in-flow-mapping", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {: b}\n", 4),
    ("empty-key-in-flow-sequence", "apiVersion: v1\nkind: List\nitems: [: b]\n", 3),
    (
        "bare-colon-line-under-a-mapping",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n: \n  containers:\n  - name: c\n    image: i\n"
        "    resources: {limits: {nvidia.com/gpu: 1}}\n",
        5,
    ),
    (
        "spaces-only-line-in-indented-block-scalar",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  a: |2\n     \n",
        [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": " \n"}}],
    ),
    (
        "spaces-only-lines-kept-by-keep-chomping",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  a: |+2\n    \n      \n",
        [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "\n  \n"}}],
    ),
]


@pytest.mark.parametrize(
    ("text", "kubectl"), [case[1:] for case in POINT1_REGRESSIONS], ids=[c[0] for c in POINT1_REGRESSIONS]
)
def test_point1_regressions_read_as_kubectl_does(text: str, kubectl: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each input the fast reader used to read differently from kubectl is declined (libyaml
    reads it): the objects kubectl sends, or kubectl's refusal with the file and line."""
    assert fast.decode_plain(text) is fast.DECLINED
    _same_reading(text.encode(), "m.yaml", monkeypatch)
    items = list(iter_bytes(text.encode(), "m.yaml"))
    if isinstance(kubectl, list):
        assert [item.obj for item in items if isinstance(item, Document)] == kubectl
        assert not any(isinstance(item, InputError) for item in items)
    else:
        (error,) = items
        assert isinstance(error, InputError) and (error.file, error.line) == ("m.yaml", kubectl), error
        assert error.message.startswith("invalid YAML: ") and "Traceback" not in error.message


def test_point1_comment_in_flow_collection_keeps_the_admin_access_finding() -> None:
    """`{adminAccess: true #x` then `}` on the next line: kubectl sends adminAccess true, and
    DRA006 (critical) must say so; read as the string "true #x" it went silent."""
    from dra_guard.engine.run import check_stream

    text = POINT1_REGRESSIONS[0][1]
    findings = check_stream(iter_bytes(text.encode(), "claim.yaml")).findings
    assert "DRA006" in {finding.rule for finding in findings}


@pytest.mark.e2e
def test_point1_bare_colon_line_never_hides_a_pods_spec(tmp_path: Path) -> None:
    """A line `: ` under `spec:` made rapidyaml read spec as null and move the containers
    (and their nvidia.com/gpu limit) under an empty key; kubectl refuses the file.  The
    check says so with file and line, exit 2, no traceback, with rapidyaml forced."""
    path = tmp_path / "pod.yaml"
    path.write_text(POINT1_REGRESSIONS[4][1])
    result = subprocess.run(
        [sys.executable, "-m", "dra_guard.cli", "check", str(path)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, parser_choice.PARSER_VARIABLE: "rapidyaml"},
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{path}:5: error: invalid YAML:" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("a: [x, #c\n  y]\n", "a comment on a flow collection's line"),
        ("a: [x,\n  y #c\n  ]\n", "a comment on a later line of a flow collection"),
        ('a: ["]",\n  y #c\n  ]\n', "a quote on a flow collection's line"),
        ("a: [x,#c\n  ]\n", "a comment right after a comma"),
        ("a: [:x]\n", "a plain scalar starting with ':' in a flow collection"),
        ("a: {b:}\n", "a ':' right before a flow indicator"),
        ('a: [{"b"::c}]\n', "a '::' after a JSON-like key"),
        ("a: b\n:\n", "a bare ':' line"),
        ("a: |\n  x\n   \n  y\n", "a line of spaces in a block scalar"),
        ("a: 'x\n   \n  y'\n", "a line of spaces in a quoted scalar over lines"),
        ("a: |\n  x", "a block scalar ending the text without a line break"),
    ],
)
def test_point1_what_the_fast_reader_declines(text: str, why: str) -> None:
    assert fast.decode_plain(text) is fast.DECLINED, why


@pytest.mark.parametrize(
    "text",
    [
        "a: [x, z]  # a comment after a closed flow collection\n",
        "# a comment first: [x\nb: {c: d}\n",
        "a: {b: c}\n# a comment\nd: e #f\n",
        "a: b[0] #c\n",
        "a: |\n  x\n\n  y\n",
        "a: x\n  \n",
        "spec:\n  containers: [{name: c, image: i}]\n  nodeSelector: {a: b}  # pinned\n",
    ],
)
def test_point1_common_shapes_stay_on_the_fast_path(text: str) -> None:
    assert fast.decode_plain(text) not in (fast.DECLINED, fast.EMPTY)


_CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
#: Keys libyaml, go-yaml and so kubectl refuse and rapidyaml takes (an implicit key over
#: lines, or whose `:` is more than 1,024 characters on), each with the line of the refusal.
#: kubectl refuses every one (`kubectl create --dry-run=client -o json -f`): "yaml: line N:
#: mapping values are not allowed in this context" with this line, or "did not find
#: expected ',' or '}'" with one less (go-yaml gives a parser error's 0-based line).
KEYS_LIBYAML_REFUSES = [
    ("double-quoted-key-over-lines", _CONFIGMAP + 'data:\n  "a\n  b": v\n', 6),
    ("single-quoted-key-over-lines", _CONFIGMAP + "data:\n  'a''s\n  b': v\n", 6),
    ("quoted-key-over-lines-in-a-sequence", _CONFIGMAP + 'x:\n- "a\n  b": v\n', 6),
    ("plain-key-over-lines-in-flow", _CONFIGMAP + "data: {a\n  b: v}\n", 5),
    ("quoted-key-over-lines-in-flow", _CONFIGMAP + 'data: {"a\n  b": v}\n', 5),
    ("key-of-1100-characters", _CONFIGMAP + "data:\n  " + "k" * 1100 + ": v\n", 5),
    ("quoted-key-of-1100-characters", _CONFIGMAP + 'data:\n  "' + "k" * 1100 + '": v\n', 5),
    ("key-of-1100-characters-in-flow", _CONFIGMAP + "data: {" + "k" * 1100 + ": v}\n", 4),
]


@pytest.mark.parametrize(
    ("text", "line"), [case[1:] for case in KEYS_LIBYAML_REFUSES], ids=[case[0] for case in KEYS_LIBYAML_REFUSES]
)
def test_keys_libyaml_refuses_are_refused_as_kubectl_refuses_them(
    text: str, line: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rapidyaml reads these keys; the fast reader declines them, so libyaml refuses them
    with kubectl's line, whichever reader a document gets (found by an adversarial run:
    `check --jobs 2` read them as objects where `--jobs 1` refused them)."""
    assert fast.decode_plain(text) is fast.DECLINED
    _same_reading(text.encode(), "m.yaml", monkeypatch)
    (error,) = list(iter_bytes(text.encode(), "m.yaml"))
    assert isinstance(error, InputError) and (error.file, error.line) == ("m.yaml", line), error
    assert error.message.startswith("invalid YAML: ")


@pytest.mark.parametrize(
    "text",
    [
        _CONFIGMAP + "data:\n  cert: " + "QUJD" * 400 + "\n",  # a long line with no `:` in it
        _CONFIGMAP + 'data:\n  a: "x\n    y"\n  b: |\n    server {\n      listen 80;\n    }\n  c: d\n',
        '{\n  "apiVersion": "v1",\n  "kind": "ConfigMap",\n  "metadata": {"name": "c"},\n  "data": {\n'
        '    "a": "b"\n  }\n}\n',
        _CONFIGMAP + 'x: ["a",\n  "b"]\n',
    ],
)
def test_keys_kubectl_reads_stay_on_the_fast_path(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert fast.decode_plain(text) not in (fast.DECLINED, fast.EMPTY)
    _same_reading(text.encode(), "m.yaml", monkeypatch)


def test_a_key_of_1024_characters_is_read_as_kubectl_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The longest key libyaml takes (the screen declines it, being loose: libyaml reads it)."""
    text = _CONFIGMAP + "data:\n  " + "k" * 1024 + ": v\n"
    _same_reading(text.encode(), "m.yaml", monkeypatch)
    (document,) = list(iter_bytes(text.encode(), "m.yaml"))
    assert isinstance(document, Document) and document.obj["data"] == {"k" * 1024: "v"}


def test_a_document_nested_past_rapidyamls_emitter_is_read_by_libyaml_and_the_file_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """rapidyaml parses 65 levels of nesting and its JSON emitter then raises (ExceptionVisit,
    a limit of 64): that document is declined, not the whole file refused, so the Pod after it
    is still checked (an adversarial run found the file dropped under `--jobs 2`)."""
    deep = _CONFIGMAP + "x: " + "[" * 65 + "]" * 65 + "\n"
    pod = (
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: a}\n"
        "spec: {containers: [{name: c, image: i, resources: {limits: {nvidia.com/gpu: 1}}}]}\n"
    )
    assert fast.decode_plain(deep) is fast.DECLINED
    _same_reading((deep + pod).encode(), "m.yaml", monkeypatch)
    items = list(iter_bytes((deep + pod).encode(), "m.yaml"))
    assert [item.obj["kind"] for item in items if isinstance(item, Document)] == ["ConfigMap", "Pod"]
    assert not any(isinstance(item, InputError) for item in items)


_DATA = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n"
#: What rapidyaml reads and libyaml (and kubectl: "found character that cannot start any
#: token", "did not find expected node content", a null key) refuses, each found by an
#: adversarial run of both readers over 71,107 generated documents.
NODES_LIBYAML_REFUSES = [
    ("at-sign-starting-a-value", _DATA + "  a: @b\n"),
    ("backquote-starting-a-value", _DATA + "  a: `b\n"),
    ("bracket-starting-a-value", _DATA + "  a: ]b\n"),
    ("brace-starting-a-value", _DATA + "  a: }b\n"),
    ("bracket-starting-a-key", _DATA + "  ]b: c\n"),
    ("at-sign-starting-an-item", _DATA + "  k:\n  - @b\n"),
    ("percent-starting-a-flow-item", _DATA + "  k: [%b]\n"),
    ("percent-starting-a-flow-value", _DATA + "  k: {b: %c}\n"),
    ("backquote-after-a-comma", _DATA + "  k: [a, `b]\n"),
    ("text-after-a-block-header", _DATA + "  k: |2 x\n    b\n"),
    ("letters-after-a-block-header", _DATA + "  k: |2yes\n    b\n"),
    ("two-indentation-digits-in-a-block-header", _DATA + "  k: |2-1\n    t\n"),
    ("two-chomping-indicators-in-a-block-header", _DATA + "  k: |2---\n"),
    ("an-indented-document-end-marker", _DATA + "  k:\n  - a\n  ...\n"),
    ("a-bare-question-mark", _DATA + "  a: b\n?\n"),
    ("a-bare-question-mark-and-a-comment", _DATA + "  a: b\n? # c\n"),
    ("a-bare-question-mark-in-an-item", _DATA + "  k:\n  - ? \n    b: c\n"),
    ("a-line-indented-under-a-block-scalar-item", _DATA + "  k:\n  - |\n    b\n   h: i\n"),
    ("an-item-indented-under-a-quoted-item", _DATA + "  k:\n  - 'q'\n   - c: d\n"),
]


@pytest.mark.parametrize(
    "text", [case[1] for case in NODES_LIBYAML_REFUSES], ids=[case[0] for case in NODES_LIBYAML_REFUSES]
)
def test_nodes_libyaml_refuses_are_refused_whichever_reader_reads(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert fast.decode_plain(text) is fast.DECLINED
    _same_reading(text.encode(), "m.yaml", monkeypatch)
    (error,) = list(iter_bytes(text.encode(), "m.yaml"))
    assert isinstance(error, InputError), error


_HEAD = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
#: What rapidyaml reads and libyaml does not, or reads otherwise, found by a mutation run:
#: each text, and what `kubectl patch --local -o json` makes of it (its `data`, or None where
#: it refuses the file: "block sequence entries are not allowed in this context", "did not
#: find expected key", "did not find expected ',' or '}'").
READ_OTHERWISE_BY_RAPIDYAML = [
    ("quote-then-an-item", _HEAD + "data:\n  - 'q' - x\n", None),
    ("flow-sequence-then-an-item", _HEAD + "data:\n  k:\n  - [a] - x\n", None),
    ("flow-sequence-then-a-key", _HEAD + "data:\n  k:\n  - [a] a: b\n", None),
    ("flow-mapping-on-the-next-line-then-an-item", _HEAD + "data:\n  k:\n  -\n    {a: b} - z\n", None),
    ("quote-over-lines-then-an-item", _HEAD + 'data:\n  k:\n  - "gpu\n    -1" - z\n', None),
    ("quote-over-lines-then-a-key", _HEAD + "data:\n  k:\n  - 'true\n    1' k: v\n", None),
    ("doubled-quote-over-lines-then-an-item", _HEAD + "data:\n  k:\n  - 'it''s\n    x' - y\n", None),
    ("flow-over-lines-then-an-item", _HEAD + "data:\n  k:\n  - [a,\n    b] - z\n", None),
    ("flow-over-lines-with-a-quoted-bracket", _HEAD + 'data:\n  k:\n  - {a: "x]", b: [c,\n    d]} -\n', None),
    ("blank-line-before-the-closing-brace", _HEAD + "data: {\n a: b\n\n }\n", {"a": "b"}),
    ("blank-line-after-a-key-alone", _HEAD + "data: {a\n\n }\n", {"a": None}),
    ("key-over-a-blank-line", _HEAD + "data: {n\n\n  me: x}\n", None),
    ("key-over-lines-with-a-quote-inside", _HEAD + "data:\n  k: {n'\n    me: x}\n", None),
    ("key-over-lines-after-a-blank", _HEAD + "data: {n \n  e: x}\n", None),
]


@pytest.mark.parametrize(
    ("text", "kubectl"),
    [case[1:] for case in READ_OTHERWISE_BY_RAPIDYAML],
    ids=[c[0] for c in READ_OTHERWISE_BY_RAPIDYAML],
)
def test_what_rapidyaml_reads_otherwise_is_read_as_kubectl_reads_it(
    text: str, kubectl: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert fast.decode_plain(text) is fast.DECLINED
    _same_reading(text.encode(), "m.yaml", monkeypatch)
    items = list(iter_bytes(text.encode(), "m.yaml"))
    if kubectl is None:
        assert [type(item) for item in items] == [InputError], items
    else:
        (document,) = items
        assert isinstance(document, Document) and document.obj["data"] == kubectl


def test_a_gpu_quantity_before_a_blank_line_in_flow_stays_a_number() -> None:
    """kubectl sends `nvidia.com/gpu: 1` (a number); rapidyaml read it as "1\n"."""
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - {name: c, image: i,\n"
        "     resources: {limits: {nvidia.com/gpu: 1\n\n     }}}\n"
    )
    assert fast.decode_plain(text) is fast.DECLINED
    (document,) = list(iter_bytes(text.encode(), "m.yaml"))
    assert isinstance(document, Document)
    assert document.obj["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 1}}


#: A comment after a block scalar header, and the value kubectl sends for the scalar (each
#: run through `kubectl patch --local -o json`): where the header has no chomping indicator,
#: rapidyaml takes a `-` in the comment for the strip one (and a `+` for the keep one), and
#: drops the final line break (or keeps the blank lines); a wider adversarial run found it.
COMMENTS_AFTER_A_BLOCK_HEADER = [
    ("  k: |  # c - d\n    x\n", "x\n"),
    ("  k: |  # c-9\n    x\n   # c\n  after: v\n", "x\n"),
    ("  k: >  # a - b\n    x\n    y\n", "x y\n"),
    ("  k: |  # keep+\n    x\n\n  after: v\n", "x\n"),
]


@pytest.mark.parametrize(("body", "kubectl"), COMMENTS_AFTER_A_BLOCK_HEADER)
def test_a_comment_after_a_block_header_keeps_the_scalars_chomping(
    body: str, kubectl: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _DATA + body
    assert fast.decode_plain(text) is fast.DECLINED
    _same_reading(text.encode(), "m.yaml", monkeypatch)
    (document,) = list(iter_bytes(text.encode(), "m.yaml"))
    assert isinstance(document, Document) and document.obj["data"]["k"] == kubectl


@pytest.mark.parametrize(
    "text",
    [
        _DATA + "  ? |\n    a\n  b: c\n",  # libyaml marks the key at `?`, rapidyaml at its text
        _DATA + "  k:\n  - ? x\n    name: gpu\n",
    ],
)
def test_explicit_keys_are_left_to_libyaml_for_their_lines(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert fast.decode_plain(text) is fast.DECLINED
    _same_reading(text.encode(), "m.yaml", monkeypatch)


@pytest.mark.parametrize(
    "text",
    [
        _DATA + "  image: repo@sha256:abc\n  mail: a@b.c\n  fmt: '%d'\n  url: a%20b\n",
        _DATA + '  at: "@b"\n  closer: "]"\n',
        _DATA + "  s: |\n    a | b > c\n  t: >-\n    x\n  q: http://a?b=c\n  u: |2 # indented\n     y\n",
        _DATA + "  v: |+ # keep - or strip\n    y\n\n  w: |-2 # +\n     z\n",
    ],
)
def test_reserved_characters_inside_or_quoted_stay_on_the_fast_path(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert fast.decode_plain(text) not in (fast.DECLINED, fast.EMPTY)
    _same_reading(text.encode(), "m.yaml", monkeypatch)


def test_the_misread_colon_searches_find_what_the_one_pattern_finds() -> None:
    """fast._misread_colon is _MISREAD_COLON split into searches that run faster: the same
    answer on every string of the characters the pattern looks at, up to 9 long, drawn."""
    import random

    chance = random.Random(25)
    alphabet = " :\n[{,-?]}a#'"
    for _ in range(300_000):
        text = "".join(chance.choice(alphabet) for _ in range(chance.randint(0, 9)))
        assert fast._misread_colon(text) == (fast._MISREAD_COLON.search(text) is not None), repr(text)


def test_the_blank_line_search_finds_what_the_one_pattern_finds() -> None:
    """fast._blank_line is _BLANK_LINE as a faster search and a look at the first line."""
    import random

    chance = random.Random(25)
    for _ in range(100_000):
        text = "".join(chance.choice(" \na") for _ in range(chance.randint(0, 8)))
        assert fast._blank_line(text) == (fast._BLANK_LINE.search(text) is not None), repr(text)


def _comment_may_be_in_flow_by_pattern(text: str) -> bool:
    """fast._comment_may_be_in_flow as first written: each line with a flow opener found by
    a search for the class [\\[{]."""
    opener = re.compile(r"[\[{]")
    position = opener.search(text)
    while position is not None:
        start = text.rfind("\n", 0, position.start()) + 1
        end = text.find("\n", position.start())
        if end < 0:
            end = len(text)
        if not fast._closed_line(text, start, end):
            return text.find("#", start) >= 0
        position = opener.search(text, end)
    return False


def test_the_flow_opener_searches_find_what_the_class_finds() -> None:
    """fast._comment_may_be_in_flow finds `[` and `{` by substring searches: the same answer
    as the class search on every string of the characters it looks at, up to 10 long, drawn."""
    import random

    chance = random.Random(25)
    alphabet = "[{]}#\n 'a"
    for _ in range(200_000):
        text = "".join(chance.choice(alphabet) for _ in range(chance.randint(0, 10)))
        assert fast._comment_may_be_in_flow(text) == _comment_may_be_in_flow_by_pattern(text), repr(text)


def test_deleting_the_printable_ascii_leaves_what_the_class_finds() -> None:
    """_unsafe's test of ASCII text (fast._PRINTABLE_ASCII) is _NOT_PRINTABLE_ASCII's."""
    for code in range(128):
        text = f"a\n{chr(code)}b"
        left = text.encode("ascii").translate(None, fast._PRINTABLE_ASCII)
        assert bool(left) == (fast._NOT_PRINTABLE_ASCII.search(text) is not None)
        assert fast._unsafe(text) or not left


def test_a_check_swaps_descriptor_2_once_and_rapidyaml_writes_nothing_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """rapidyaml writes its own text to descriptor 2 on a parse error; a check points it at
    /dev/null for the whole batch of files (once, not per file) and gives it back, so the
    report's input errors still reach stderr, and rapidyaml's text never does."""
    from dra_guard.cli.main import main
    from dra_guard.kubectl_yaml import ryml_native

    for index in range(40):
        body = (
            "kind: ConfigMap\ndata: [b, c\nd: e\n"
            if index % 10 == 0
            else f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{index}}}\n"
        )
        (tmp_path / f"f{index:02d}.yaml").write_text(body)
    swaps: list[int] = []
    real = os.dup2

    def counted(source: int, target: int, *arguments: Any) -> int:
        if target == 2:
            swaps.append(source)
        return real(source, target, *arguments)

    monkeypatch.setattr(ryml_native.os, "dup2", counted)
    code = main(["check", "--jobs", "1", "--format", "json", str(tmp_path)])
    out, err = capfd.readouterr()
    assert code == 2 and json.loads(out)["summary"]["objects"] == 36
    assert len(swaps) == 2, swaps  # to /dev/null at the first parse, back at the end of the check
    assert "f00.yaml:" in err and "ERROR" not in err and "parse_engine" not in err
