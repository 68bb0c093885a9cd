"""What parsing a request body takes, estimated before it is parsed
(dra_guard.admission.json_budget), against what `json.loads` takes, measured with
tracemalloc: the estimate bounds every worst shape of JSON, the webhook refuses a body
whose parse its review cannot afford (docs/admission.md, "Failure modes"), and the largest
real objects are still reviewed."""

from __future__ import annotations

import json
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from dra_guard.admission import json_budget
from dra_guard.admission.webhook import DEFAULT_MAX_BODY, PARSED_BODY_BYTES, PARSING_BYTES, Webhook
from dra_guard.ruleapi.config import Config
from dra_guard.rules import RULES
from tests.test_webhook_bounded import PLAIN_POD, admission_review, serving
from tests.test_webhook_memory import _largest_review

#: Each shape fills a body of this size (the bound is linear in every count, so a
#: smaller body shows each shape's ratio; the largest body is 3 MiB).
SHAPE_BYTES = 2**20


def _filled(piece: str) -> bytes:
    """A JSON array of `piece` repeated to fill `SHAPE_BYTES`."""
    count = (SHAPE_BYTES - 2) // (len(piece.encode()) + 1)
    return ("[" + ",".join([piece] * count) + "]").encode()


def _one_dict(value: str) -> bytes:
    """One dict of distinct short keys, filling `SHAPE_BYTES` (its table grows, and the
    parser's memo of keys with it)."""
    count = SHAPE_BYTES // (len(f'"{0:x}":{value},') + 3)
    return ("{" + ",".join(f'"{index:x}":{value}' for index in range(count)) + "}").encode()


def _dicts_of(keys: int) -> bytes:
    """Dicts of `keys` keys each, every key distinct."""
    pieces, size, index = [], 2, 0
    while True:
        piece = "{" + ",".join(f'"{index + key:x}":0' for key in range(keys)) + "}"
        if size + len(piece) + 1 > SHAPE_BYTES:
            return ("[" + ",".join(pieces) + "]").encode()
        pieces.append(piece)
        size, index = size + len(piece) + 1, index + keys


def _string(middle: str) -> bytes:
    """One string of `x` filling `SHAPE_BYTES`, with `middle` (JSON) near its end."""
    return ('"' + "x" * (SHAPE_BYTES - 2 - len(middle.encode()) - 8) + middle + '"').encode()


#: The worst shapes of JSON, each a body of nothing else (json_budget's table).
SHAPES: dict[str, bytes] = {
    "empty dicts": _filled("{}"),
    "empty lists": _filled("[]"),
    "lists of one number": _filled("[0]"),
    "nested lists": _filled("[[]]"),
    "keyed dicts of an empty dict": _filled('{"":{}}'),
    "keyed dicts of a small int": _filled('{"":0}'),
    "keyed dicts of an int": _filled('{"":-6}'),
    "keyed dicts of a string": _filled('{"":"ab"}'),
    "keyed dicts of a list": _filled('{"":[0]}'),
    "keyed dicts, escaped keys and values": _filled('{"\\u0100":"\\u0100"}'),
    "keyed dicts, raw non-ASCII": _filled('{"é":"é"}'),
    "dicts of six keys": _filled('{"a":0,"b":0,"c":0,"d":0,"e":0,"f":0}'),
    "dicts of 11 distinct keys": _dicts_of(11),
    "dicts of 43 distinct keys": _dicts_of(43),
    "one dict of distinct keys": _one_dict("0"),
    "one dict of distinct keys of empty dicts": _one_dict("{}"),
    "chains of keyed dicts": _filled('{"":' * 900 + "{}" + "}" * 900),
    "two-character strings": _filled('"ab"'),
    "one-character strings": _filled('"a"'),
    "escaped strings past Latin-1": _filled('"\\u0100"'),
    "escaped emoji": _filled('"\\ud83d\\ude00"'),
    "raw emoji": _filled('"😀"'),
    "escaped Latin-1 strings": _filled('"\\u00e9a"'),
    "lists of strings": _filled('["ab"]'),
    "ints": _filled("257"),
    "negative ints": _filled("-6"),
    "large ints": _filled("4611686018427387904"),
    "floats": _filled("1.5"),
    "lists of two ints": _filled("[1,1]"),
    "one long string": _string(""),
    "one long string and an escaped emoji": _string("\\ud83d\\ude00"),
    "one long string and a raw emoji": _string("😀"),
    "one long string and an escaped U+2028": _string("\\u2028"),
    "one long string, newlines and raw Latin-1": _string("é\\n\\n"),
    "long strings with escapes": _filled('"' + "x" * 100 + '\\n"'),
}


def _measured(body: bytes) -> tuple[int, int, int]:
    """What decoding `body` takes at its peak, then what `json.loads` of the text holds
    once done and at its peak, the text included (bytes, tracemalloc)."""
    tracemalloc.start()
    try:
        text = body.decode("utf-8")
        _, decoding = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    tracemalloc.start()
    try:
        value = json.loads(text)
        parsed, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del value
    return decoding, parsed, peak + sys.getsizeof(text)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_estimate_bounds_what_parsing_takes_for_every_worst_shape(shape: str) -> None:
    body = SHAPES[shape]
    decoding, parsed, peak = _measured(body)
    cost = json_budget.estimate(body, body.decode("utf-8"))
    assert decoding <= json_budget.decoding_bound(body)
    assert parsed <= cost.parsed, f"{shape}: parsed {parsed:,} bytes, estimated {cost.parsed:,}"
    assert peak <= cost.peak, f"{shape}: {peak:,} bytes at the peak, estimated {cost.peak:,}"


def test_the_largest_real_pod_is_estimated_within_a_reviews_allowance() -> None:
    """The largest Pod of tests/test_webhook_memory.py (3 MiB): 10.4 MiB parsed, 13.4 at
    the peak; estimated 20.6 and 27.4, within 24 and 32."""
    body = _largest_review()
    _, parsed, peak = _measured(body)
    cost = json_budget.estimate(body, body.decode("utf-8"))
    assert parsed <= cost.parsed <= PARSED_BODY_BYTES, (parsed, cost, PARSED_BODY_BYTES)
    assert peak <= cost.peak <= PARSING_BYTES, (peak, cost, PARSING_BYTES)
    print(
        f"\n{len(body) / 2**20:.1f} MiB Pod: parsed {parsed / 2**20:.1f} MiB, estimated {cost.parsed / 2**20:.1f} "
        f"(at most {PARSED_BODY_BYTES / 2**20:.0f}); peak {peak / 2**20:.1f}, estimated {cost.peak / 2**20:.1f} "
        f"(at most {PARSING_BYTES / 2**20:.0f})"
    )


def _padded_pod(*pieces: tuple[str, int]) -> bytes:
    """A Pod's review with each piece of JSON, as many times as it says, in a list beside
    its spec, within the largest body."""
    body = json.dumps(admission_review(PLAIN_POD), separators=(",", ":")).encode()
    padding = ",".join(",".join([piece] * count) for piece, count in pieces).encode()
    padded = body.replace(b'"spec":{', b'"padding":[' + padding + b'],"spec":{', 1)
    assert len(padded) <= DEFAULT_MAX_BODY
    return padded


#: Bodies within the largest, each under the 131,072 `{` and `[` the webhook once allowed,
#: whose parse takes more than a review's parsed body may (24 MiB).
CRAFTED = {
    "two-character strings": _padded_pod(('"ab"', 600_000)),
    "keyed dicts and strings": _padded_pod(('{"":"ab"}', 130_000), ('"ab"', 330_000)),
}


@pytest.mark.parametrize("shape", sorted(CRAFTED))
def test_a_body_whose_parse_a_review_cannot_afford_is_refused_unparsed(
    shape: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = CRAFTED[shape]
    assert body.count(b"{") + body.count(b"[") <= 131_072
    _, parsed, _ = _measured(body)
    assert parsed > PARSED_BODY_BYTES, f"{shape}: parses to {parsed / 2**20:.1f} MiB"
    loads = json.loads
    parsed_texts: list[int] = []

    def recorded(text: Any, **options: Any) -> Any:
        if len(text) > 100_000:
            parsed_texts.append(len(text))
        return loads(text, **options)

    monkeypatch.setattr(json, "loads", recorded)
    with serving(tmp_path) as running:
        status, payload, _ = running.post(body)
    assert status == 400, payload
    assert payload["error"].startswith("the body is refused unparsed: its JSON may take, once parsed, up to "), payload
    assert payload["error"].endswith("MiB, more than the 24 MiB one review's memory allows it"), payload
    assert not parsed_texts


def test_the_largest_real_pod_is_reviewed(tmp_path: Path) -> None:
    with serving(tmp_path) as running:
        status, payload, _ = running.post(_largest_review())
    assert status == 200 and payload["response"]["allowed"] is True, payload


def test_a_body_that_would_take_more_than_a_review_to_decode_is_refused_undecoded() -> None:
    """With a larger `--max-body`, 7 MiB that is not ASCII may decode to 35 MiB (four bytes
    a character, and the narrower copy it is widened from)."""
    body = json.dumps(admission_review(PLAIN_POD) | {"padding": "é" * (7 * 2**19)}, ensure_ascii=False).encode()
    app = Webhook(RULES, Config())
    review, problem = app._parse(body)[:2]
    assert review is None
    assert problem == (
        "the body is refused unparsed: decoding it may take up to 35.0 MiB, more than the 32 MiB one review's "
        "memory allows it"
    )
