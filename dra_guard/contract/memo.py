"""A cache for answers about strings an input holds, that stays small whatever the input.

`functools.lru_cache` bounds how many answers it keeps, not their size: a cache of 8,192
answers keyed by CEL expressions or resource names holds 8,192 strings of whatever length
came in.  The CLI reads each input once, but the webhook runs for weeks, and a client that
reaches it directly can send a different 3 MiB string in each review: 8,192 of them are
24 GiB, far past the pod's 256 MiB.  `memo_short` remembers answers only for arguments
short enough (the strings real manifests hold: selectors of a few hundred bytes, resource
names of at most 316); a longer one is answered each time it is asked.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

#: Characters of a string argument up to which its answer is kept.
SHORT = 1024


def memo_short(
    maxsize: int, short: int = SHORT, *, longer: int = 0, longer_maxsize: int = 0
) -> Callable[[Callable[[str], T]], Callable[[str], T]]:
    """`lru_cache(maxsize)` for a function of one string, for strings of at most `short`
    characters, and a second one of `longer_maxsize` answers for strings of at most
    `longer` (where a longer string costs much to answer again: a CEL program, a parse);
    at most `maxsize` * `short` + `longer_maxsize` * `longer` characters kept."""

    def wrap(function: Callable[[str], T]) -> Callable[[str], T]:
        cached = functools.lru_cache(maxsize=maxsize)(function)
        cached_longer = functools.lru_cache(maxsize=longer_maxsize)(function) if longer_maxsize else function

        @functools.wraps(function)
        def call(key: str) -> T:
            if len(key) <= short:
                return cached(key)
            return cached_longer(key) if len(key) <= longer else function(key)

        return call

    return wrap


class _Kept(Generic[T]):
    """Up to `size` answers, the least recently used dropped first.  Safe across threads
    without a lock (a check imports no `threading`: tests/test_cold_start.py): each
    OrderedDict call is atomic under the GIL, and a key dropped by another thread between
    two calls is a miss, answered again."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._answers: OrderedDict[str, T] = OrderedDict()

    def get(self, key: str) -> tuple[bool, T | None]:
        try:
            answer = self._answers[key]
            self._answers.move_to_end(key)
        except KeyError:
            return False, None
        return True, answer

    def put(self, key: str, answer: T) -> None:
        answers = self._answers
        answers[key] = answer
        while len(answers) > self._size:
            try:
                answers.popitem(last=False)
            except KeyError:  # emptied by another thread meanwhile
                break

    def holds(self, key: str) -> bool:
        return key in self._answers


class KnownMemo(Generic[T]):
    """`memo_short`'s cache, which can also say whether it holds an answer (`holds`), for
    a caller that must know whether asking costs anything (the webhook: whether a review
    will parse CEL).  A little slower than `lru_cache`'s, so only where that is asked."""

    def __init__(
        self, function: Callable[[str], T], maxsize: int, short: int, longer: int, longer_maxsize: int
    ) -> None:
        self._function = function
        self._short, self._longer = short, longer
        self._kept: _Kept[T] = _Kept(maxsize)
        self._kept_longer: _Kept[T] = _Kept(longer_maxsize)
        functools.update_wrapper(self, function)

    def _tier(self, key: str) -> _Kept[T] | None:
        if len(key) <= self._short:
            return self._kept
        return self._kept_longer if len(key) <= self._longer else None

    def __call__(self, key: str) -> T:
        tier = self._tier(key)
        if tier is None:
            return self._function(key)
        found, answer = tier.get(key)
        if found:
            return answer  # type: ignore[return-value]
        answer = self._function(key)
        tier.put(key, answer)
        return answer

    def holds(self, key: str) -> bool:
        """Whether the answer for `key` is kept: asking for it now costs nothing."""
        tier = self._tier(key)
        return tier is not None and tier.holds(key)


def known_memo(
    maxsize: int, short: int = SHORT, *, longer: int = 0, longer_maxsize: int = 0
) -> Callable[[Callable[[str], T]], KnownMemo[T]]:
    """`memo_short`, as a `KnownMemo` (it can say whether it holds an answer)."""

    def wrap(function: Callable[[str], T]) -> KnownMemo[T]:
        return KnownMemo(function, maxsize, short, longer, longer_maxsize)

    return wrap
