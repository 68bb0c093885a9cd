"""Hand-written manifests on which PyYAML and kubectl disagree, with what kubectl sends.

Each case says what dra-guard's reader yields (`sent`), whether it refuses part of the
file (`refused`, a fragment of the error), and what kubectl v1.32 does (`kubectl`):
"same" (it sends exactly `sent`, no error), "fails" (it reports an error, after
sending `sent`, if anything), or "sends" (it sends more than `sent`: dra-guard refuses
what it cannot be sure of).  tests/test_kubectl_differential.py checks every case
against the real kubectl; tests/test_kubectl_reading.py checks the reader.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Case:
    id: str
    text: str | bytes
    sent: list[dict[str, Any]] = field(default_factory=list)
    refused: str = ""
    kubectl: str = "same"

    @property
    def data(self) -> bytes:
        return self.text if isinstance(self.text, bytes) else self.text.encode()

    @property
    def name(self) -> str:
        return self.id + (".json" if self.data.lstrip().startswith(b"{") else ".yaml")


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"


def cm(data: Any = None, name: str = "c", **extra: Any) -> dict[str, Any]:
    """The ConfigMap `CM` (plus `data:` and other fields) as kubectl sends it."""
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **extra}
    if data is not None:
        obj["data"] = data
    return obj


def claim(request: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "gpu"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": request}]}},
    }


ALIASED = [f"x{number}" for number in range(400)]


def aliased(copies: int) -> str:
    """400 scalars under an anchor, then `copies` aliases of them: go-yaml allows 135."""
    return CM + f"a: &a [{', '.join(ALIASED)}]\nb: [{', '.join(['*a'] * copies)}]\n"


CLAIM = (
    "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: gpu}\n"
    "spec:\n  devices:\n    requests:\n    - name: gpu\n      exactly:\n"
)
TRUE_WORDS = ["y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE"]
FALSE_WORDS = ["n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE"]
BOOLEANS = TRUE_WORDS + FALSE_WORDS
NOT_UTF8 = base64.b64encode(b"a\xe2\x82b").decode()

CASES = [
    # --- merge keys ------------------------------------------------------------------
    Case(
        "merge-after-explicit-key-overrides-it",
        CLAIM
        + "        deviceClassName: gpu.example.com\n        adminAccess: false\n        <<: {adminAccess: true}\n",
        [claim({"deviceClassName": "gpu.example.com", "adminAccess": True})],
    ),
    Case(
        "merge-before-explicit-key-is-overridden",
        CM + "data:\n  <<: {mode: merged}\n  mode: explicit\n",
        [cm({"mode": "explicit"})],
    ),
    Case(
        "merge-sequence-first-mapping-wins",
        CM + "one: &a {mode: first}\ntwo: &b {mode: second, other: b}\ndata:\n  <<: [*a, *b]\n",
        [cm({"mode": "first", "other": "b"}, one={"mode": "first"}, two={"mode": "second", "other": "b"})],
    ),
    Case(
        "merge-alias-after-explicit-key",
        CM + "base: &base {expression: B}\ndata:\n  expression: A\n  <<: *base\n",
        [cm({"expression": "B"}, base={"expression": "B"})],
    ),
    Case("merge-of-a-scalar-fails", CM + "data:\n  <<: x\n", refused="map merge", kubectl="fails"),
    Case("quoted-merge-key-is-a-plain-key", CM + 'data: {"<<": {a: b}}\n', [cm({"<<": {"a": "b"}})]),
    Case("non-specific-tag-merge-key-merges", CM + "data: {a: x, ! <<: {a: z}}\n", [cm({"a": "z"})]),
    # --- YAML 1.1 scalars --------------------------------------------------------------
    Case(
        "yaml11-booleans-every-spelling",
        CM + "data:\n" + "".join(f"  k{number}: {word}\n" for number, word in enumerate(BOOLEANS)),
        [cm({f"k{number}": word in TRUE_WORDS for number, word in enumerate(BOOLEANS)})],
    ),
    Case(
        "quoted-booleans-stay-strings",
        CM + "data: {a: \"on\", b: 'y', c: !!str yes}\n",
        [cm({"a": "on", "b": "y", "c": "yes"})],
    ),
    Case(
        "admin-access-y-is-true",
        CLAIM + "        deviceClassName: gpu.example.com\n        adminAccess: y\n",
        [claim({"deviceClassName": "gpu.example.com", "adminAccess": True})],
    ),
    Case(
        "namespace-n-is-false-and-refused",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: n}\n",
        refused="metadata.namespace must be a string",
        kubectl="fails",
    ),
    Case(
        "number-spellings",
        CM + "data: {a: 1e3, b: 0o17, c: 1_000, d: 0x1F, e: 1:30, f: 08, g: 1.0, h: .5, i: 1e20, j: 1e21, k: 0b101,"
        " l: +1, m: -0x10, o: 017, p: 190:20:30, q: 1e400}\n",
        [
            cm(
                {
                    "a": 1000,
                    "b": 15,
                    "c": 1000,
                    "d": 31,
                    "e": "1:30",
                    "f": 8,
                    "g": 1,
                    "h": 0.5,
                    "i": 100000000000000000000,
                    "j": 1e21,
                    "k": 5,
                    "l": 1,
                    "m": -16,
                    "o": 15,
                    "p": "190:20:30",
                    "q": "1e400",
                }
            )
        ],
    ),
    Case(
        "huge-integers-become-floats",
        CM + "data: {a: 18446744073709551615, b: 99999999999999999999, c: 123456789012345678901234567890,"
        " d: -9223372036854775809, e: 9223372036854775807}\n",
        [
            cm(
                {
                    "a": 18446744073709552000,
                    "b": 100000000000000000000,
                    "c": 1.2345678901234568e29,
                    "d": -9223372036854776000,
                    "e": 9223372036854775807,
                }
            )
        ],
    ),
    Case(
        "timestamps-stay-strings",
        CM + "data: {a: 2001-12-14, b: 2001-12-14t21:59:43.10-05:00, c: 2001-12-14 21:59:43.10 -5, d: 2002-13-45}\n",
        [
            cm(
                {
                    "a": "2001-12-14",
                    "b": "2001-12-14t21:59:43.10-05:00",
                    "c": "2001-12-14 21:59:43.10 -5",
                    "d": "2002-13-45",
                }
            )
        ],
    ),
    Case("nan-fails", CM + "data: {a: .nan}\n", refused="NaN or infinity", kubectl="fails"),
    Case("infinity-fails", CM + "data: {a: [-.inf]}\n", refused="NaN or infinity", kubectl="fails"),
    Case("nan-replaced-by-a-later-key-is-fine", CM + "data: {a: .nan, a: 1}\n", [cm({"a": 1})]),
    Case("duplicate-keys-last-wins", CM + "data:\n  mode: first\n  mode: last\n", [cm({"mode": "last"})]),
    # --- keys ---------------------------------------------------------------------------
    Case(
        "non-string-keys-become-strings",
        CM + "data: {1: a, on: b, n: c, 0x1F: d, 1.5: e, 1e6: f, 3.14159265358979: g, .inf: h}\n",
        [cm({"1": "a", "true": "b", "false": "c", "31": "d", "1.5": "e", "1e+06": "f", "3.1415927": "g", ".inf": "h"})],
    ),
    Case("null-key-fails", CM + "data: {~: a}\n", refused="null key", kubectl="fails"),
    Case("uint64-key-fails", CM + "data: {18446744073709551615: a}\n", refused="uint64", kubectl="fails"),
    Case("mapping-key-fails", CM + "data: {? {a: b} : c}\n", refused="invalid map key", kubectl="fails"),
    Case(
        "keys-colliding-as-strings-are-refused",
        CM + 'data: {1: a, "1": b}\n',
        refused="both become '1'",
        kubectl="sends",
    ),
    Case(
        "a-doubt-does-not-hide-a-kubectl-error-that-stops-the-file",
        CM + 'data: {1: a, "1": b, c: .inf}\n---\n' + CM,
        refused="NaN or infinity",
        kubectl="fails",
    ),
    # --- tags ---------------------------------------------------------------------------
    Case(
        "binary-values-and-keys-are-decoded",
        CM + f"data:\n  a: !!binary {_b64('TimeSlicing')}\n  ? !!binary {_b64('nvidia.com/gpu')}\n  : 1\n",
        [cm({"a": "TimeSlicing", "nvidia.com/gpu": 1})],
    ),
    Case(
        "binary-block-scalar-is-decoded",
        CM + f"data:\n  a: !!binary |\n    {_b64('nvidia.com/gpu')[:8]}\n    {_b64('nvidia.com/gpu')[8:]}\n",
        [cm({"a": "nvidia.com/gpu"})],
    ),
    Case(
        "binary-that-is-not-utf8-is-replaced-byte-by-byte",
        CM + f"data: {{a: !!binary {NOT_UTF8}}}\n",
        [cm({"a": "a\ufffd\ufffdb"})],
    ),
    Case("binary-with-bad-base64-fails", CM + "data: {a: !!binary not base64}\n", refused="base64", kubectl="fails"),
    Case(
        "local-and-non-specific-tags-keep-the-text",
        CM + 'data: {a: !foo bar, b: ! 12, c: !!str 12, d: !!int "12", e: !!float 1, f: !!map x, g: !foo [1]}\n',
        [cm({"a": "bar", "b": "12", "c": "12", "d": 12, "e": 1, "f": "x", "g": [1]})],
    ),
    Case("wrong-explicit-tag-fails", CM + "data: {a: !!int foo}\n", refused="cannot decode !!str", kubectl="fails"),
    Case("tag-before-a-comma-fails", CM + "data: {a: !!str, b: x}\n", refused="flow indicator", kubectl="fails"),
    Case(
        "explicit-timestamp-is-refused",
        CM + "data: {a: !!timestamp 2001-12-14}\n",
        refused="!!timestamp",
        kubectl="sends",
    ),
    # --- what go-yaml's scanner reads differently ------------------------------------------
    Case("escaped-slash-fails", CM + 'data: {a: "x\\/y"}\n', refused="\\/", kubectl="fails"),
    Case("question-mark-in-a-flow-scalar-fails", CM + "data: [c?d]\n", refused="'?'", kubectl="fails"),
    Case("yaml-1-2-directive-fails", "%YAML 1.2\n--- \n" + CM, refused="invalid YAML", kubectl="fails"),
    # --- anchors and aliases -----------------------------------------------------------
    Case(
        "anchor-defined-twice-the-later-wins", CM + "data: {a: &x 1, b: &x 2, c: *x}\n", [cm({"a": 1, "b": 2, "c": 2})]
    ),
    Case("recursive-alias-fails", CM + "data: &x [1, *x]\n", refused="contains itself", kubectl="fails"),
    Case(
        "alias-bomb-fails",
        "a: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)),
        refused="excessive aliasing",
        kubectl="fails",
    ),
    Case("aliasing-just-within-go-yamls-limit", aliased(135), [cm(a=ALIASED, b=[ALIASED] * 135)]),
    Case("aliasing-just-beyond-go-yamls-limit", aliased(136), refused="excessive aliasing", kubectl="fails"),
    # --- documents ---------------------------------------------------------------------
    Case(
        "dash-dash-dash-hash-line-splits-documents",
        CM + "---#: |\n" + CM.replace("name: c", "name: d"),
        [cm(), cm(name="d")],
    ),
    Case("dash-dash-dash-hash-on-the-first-line-is-a-key", "---#: 1\n" + CM, [{"---#": 1, **cm()}]),
    Case(
        "separator-with-content-stops-kubectl",
        CM + "---\n" + CM.replace("name: c", "name: d") + "--- {a: 1}\n" + CM,
        [cm()],
        refused="document separator",
        kubectl="fails",
    ),
    Case("four-dashes-stop-kubectl", CM + "----\n" + CM, refused="document separator", kubectl="fails"),
    Case(
        "empty-and-comment-only-documents-are-skipped",
        "---\n# Source: chart/templates/a.yaml\n---\n" + CM + "---\n\n---\n# nothing\n---\n",
        [cm()],
    ),
    Case(
        "document-end-marker-with-a-second-document-is-refused",
        CM + "...\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\n",
        refused="more than one YAML document",
        kubectl="sends",
    ),
    Case(
        "document-end-marker-after-a-broken-document-stops-the-file",
        CM + "data: {a: .nan}\n...\nkind: Secret\n---\n" + CM,
        refused="NaN or infinity",
        kubectl="fails",
    ),
    Case(
        "a-bare-cr-before-dashes-is-refused",
        (CM + "\r---\r" + CM).encode(),
        refused="more than one YAML document",
        kubectl="sends",
    ),
    Case("crlf-line-ends", (CM + "---\n" + CM).replace("\n", "\r\n"), [cm(), cm()]),
    Case("byte-order-mark", b"\xef\xbb\xbf" + CM.encode(), [cm()]),
    Case("scalar-document-is-refused", CM + "---\njust text\n", [cm()], refused="is a str", kubectl="fails"),
    Case(
        "a-file-without-kind-is-refused",
        "replicaCount: 2\nimage: {tag: latest}\n",
        refused="no apiVersion and no kind",
        kubectl="fails",
    ),
    Case(
        "api-version-with-two-slashes-is-refused",
        "apiVersion: a/b/c\nkind: Pod\n",
        refused="apiVersion",
        kubectl="fails",
    ),
    Case(
        "non-utf8-stops-at-its-document",
        CM.encode() + b"---\n" + CM.encode() + b"data: {a: caf\xe9}\n",
        [cm()],
        refused="not UTF-8",
        kubectl="sends",  # go-yaml v2 lets the byte through as U+FFFD
    ),
    Case(
        "utf16-with-a-byte-order-mark",
        "\ufeff".encode("utf-16-le") + (CM + "---\n" + CM).encode("utf-16-le"),
        [cm(), cm()],
    ),
    Case("utf16-big-endian", "\ufeff".encode("utf-16-be") + CM.encode("utf-16-be"), [cm()]),
    Case(
        "json-after-a-utf8-byte-order-mark",
        b'\xef\xbb\xbf{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "generation": 1.0}}',
        refused="64-bit integer",
        kubectl="fails",
    ),
    # --- lists -------------------------------------------------------------------------
    Case(
        "items-of-any-kind-are-sent-instead-of-the-object",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: wrapper}\nitems:\n"
        "- {apiVersion: v1, kind: Pod, metadata: {name: p}}\n",
        [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}],
    ),
    Case(
        "typed-list-items-get-the-list-kind",
        "apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: a}\n- null\n- {kind: 5, metadata: {name: b}}\n",
        [
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}},
            {"apiVersion": "v1", "kind": "Pod"},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b"}},
        ],
    ),
    Case("items-null-sends-nothing", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nitems: null\n"),
    Case(
        "nested-list-fails-the-whole-list",
        "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod}\n"
        "- {apiVersion: v1, kind: List, items: []}\n",
        refused="itself a list",
        kubectl="fails",
    ),
    Case(
        "list-item-without-kind-is-refused-alone",
        "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod}\n- {metadata: {name: x}}\n"
        "- {apiVersion: v1, kind: Secret}\n",
        [{"apiVersion": "v1", "kind": "Pod"}, {"apiVersion": "v1", "kind": "Secret"}],
        refused="list item 1 has no kind",
        kubectl="fails",
    ),
    Case(
        "items-must-be-a-list",
        "apiVersion: v1\nkind: List\nitems: {a: b}\n",
        refused="items must be a list",
        kubectl="fails",
    ),
    # --- metadata as kubectl types it --------------------------------------------------------
    Case(
        "metadata-timestamps-and-integers",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, creationTimestamp: null, generation: 1.0,"
        " deletionTimestamp: 2020-01-01T00:00:00Z}\n",
        [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": "p",
                    "creationTimestamp": None,
                    "generation": 1,
                    "deletionTimestamp": "2020-01-01T00:00:00Z",
                },
            }
        ],
    ),
    Case(
        "metadata-date-without-time-is-refused",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, creationTimestamp: 2020-01-01}\n",
        refused="RFC 3339",
        kubectl="fails",
    ),
    Case(
        "label-value-yes-is-refused",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {gpu: yes}}\n",
        refused="metadata.labels.gpu",
        kubectl="fails",
    ),
    # --- JSON streams ------------------------------------------------------------------
    Case(
        "json-stream",
        '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},'
        ' "data": {"n": 1.0, "m": 1e3, "s": "\\ud800"}}\n'
        'null\n{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}',
        [cm({"n": 1, "m": 1000, "s": "\ufffd"}), cm()],
    ),
    Case(
        "json-duplicate-keys-last-wins",
        '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": 1, "a": 2}}',
        [cm({"a": 2})],
    ),
    Case(
        "json-duplicate-metadata-is-checked-every-time",
        '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 5}, "metadata": {"name": "c"}}',
        refused="metadata.name",
        kubectl="fails",
    ),
    Case(
        "json-float-generation-is-refused",
        '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "generation": 1.0}}',
        refused="64-bit integer",
        kubectl="fails",
    ),
    Case(
        "json-non-utf8-between-values-stops-there",
        b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}\n\xff\n'
        b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}}\n',
        [cm()],
        refused="not UTF-8",
        kubectl="fails",  # Go's json.Decoder: invalid character looking for beginning of value
    ),
    Case(
        "json-non-utf8-in-a-string-stops-at-its-value",
        b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}\n'
        b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}, "data": {"a": "caf\xe9"}}\n',
        [cm()],
        refused="not UTF-8",
        kubectl="sends",  # Go's json.Decoder lets the byte through as U+FFFD
    ),
    Case("json-nan-fails", '{"apiVersion": "v1", "kind": "Pod", "a": NaN}', refused="NaN", kubectl="fails"),
    Case(
        "yaml-flow-mapping-first-is-read-as-json",
        "{apiVersion: v1, kind: Pod}\n",
        refused="invalid JSON",
        kubectl="fails",
    ),
]
