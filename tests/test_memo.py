"""Caches of answers about an input's strings keep only short strings.

The webhook runs for weeks, and a client that reaches it directly can send a new long string
in every review: lru_caches of 8,192 answers keyed by whatever came in held 8,192 of them
(24 GiB of 3 MiB selectors).  Each cache keyed by an input's strings keeps at most
`memo.SHORT` characters a key; longer ones are answered, not remembered.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from dra_guard.admission import emulate
from dra_guard.contract.accelerator_names import family_of
from dra_guard.contract.memo import SHORT, known_memo, memo_short
from dra_guard.model import allocation, selectors
from dra_guard.model.conjuncts import has_conjunct


def test_short_strings_are_remembered_and_long_ones_are_not() -> None:
    calls: list[str] = []

    @memo_short(maxsize=16, short=8)
    def length(text: str) -> int:
        calls.append(text)
        return len(text)

    assert [length("short"), length("short"), length("x" * 9), length("x" * 9)] == [5, 5, 9, 9]
    assert calls == ["short", "x" * 9, "x" * 9]
    assert length.__name__ == "length"


# Each function a review reaches with a string of its object, as it is asked.
ASKED: dict[str, Callable[[str], Any]] = {
    "selectors.analyse": selectors.analyse,
    "conjuncts.has_conjunct": lambda text: has_conjunct(text, 'device.driver == "gpu.nvidia.com"'),
    "accelerator_names.family_of": family_of,
    "allocation._referenced_domains": allocation._referenced_domains,
}


@pytest.mark.parametrize("name", sorted(ASKED))
def test_long_strings_asked_are_not_kept(name: str) -> None:
    ask, count, size = ASKED[name], 200, 64 * 1024
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for index in range(count):
            # A new string each time, as each review brings its own (a selector the fast
            # path cannot read: over 10 KiB, so that no parser runs).
            ask(f'device.attributes["x{index}"] == "' + "y" * size + '"')
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < count * size // 20, f"{name} kept {kept:,} bytes of {count * size:,} asked"


def test_compiled_programs_are_kept_up_to_the_longest_selector() -> None:
    """DRA014 compiles a selector for each device it tries: one of up to 10 KiB (the API
    server's longest) is kept, or 1,000 devices compiled an 8 KiB one 1,000 times (51 s);
    a longer one, which the API server refuses, is not compiled at all.  The policies' own programs are
    always kept: their expressions are ours, not an input's."""
    short = 'device.driver == "gpu.nvidia.com"'
    assert len(short) <= SHORT
    long = short + " && true" * (SHORT // 8 + 1)
    assert SHORT < len(long) <= selectors.CEL_SELECTOR_MAX_LENGTH
    too_long = short + " && true" * (selectors.CEL_SELECTOR_MAX_LENGTH // 8 + 1)
    for expression in (short, long):
        assert allocation._program(expression) is allocation._program(expression)
        assert emulate._program(expression) is emulate._program(expression)
    assert allocation._program(too_long) is None  # longer than the API server accepts: not compiled


def test_a_second_tier_keeps_a_few_longer_strings() -> None:
    calls: list[str] = []

    @memo_short(maxsize=16, short=8, longer=16, longer_maxsize=1)
    def length(text: str) -> int:
        calls.append(text)
        return len(text)

    for text in ("x" * 12, "x" * 12, "y" * 12, "x" * 12, "z" * 17, "z" * 17):
        length(text)
    assert calls == ["x" * 12, "y" * 12, "x" * 12, "z" * 17, "z" * 17]  # one longer kept at a time


def test_a_known_memo_says_what_it_holds_and_keeps_as_memo_short_does() -> None:
    """`known_memo` keeps what `memo_short` keeps, least recently used dropped first, and
    `holds` says whether asking costs nothing now (the webhook: whether a review parses)."""
    calls: list[str] = []

    @known_memo(maxsize=2, short=8, longer=16, longer_maxsize=1)
    def length(text: str) -> int:
        calls.append(text)
        return len(text)

    assert not length.holds("a")
    for text in ("a", "b", "a", "c"):  # "b" is the least recently used when "c" comes
        length(text)
    assert calls == ["a", "b", "c"]
    assert [length.holds(text) for text in ("a", "b", "c")] == [True, False, True]
    for text in ("x" * 12, "x" * 12, "y" * 12, "z" * 17, "z" * 17):
        length(text)
    assert calls[3:] == ["x" * 12, "y" * 12, "z" * 17, "z" * 17]
    assert [length.holds(text) for text in ("x" * 12, "y" * 12, "z" * 17)] == [False, True, False]
    assert length.__name__ == "length"


def test_a_known_memo_is_safe_across_threads() -> None:
    """Review threads ask `analyse` at once: answers stay right and the size bounded."""
    from concurrent.futures import ThreadPoolExecutor

    @known_memo(maxsize=64)
    def doubled(text: str) -> str:
        return text * 2

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(doubled, [str(index % 200) for index in range(20_000)]))
    assert answers == [str(index % 200) * 2 for index in range(20_000)]
    assert sum(doubled.holds(str(index)) for index in range(200)) == 64
