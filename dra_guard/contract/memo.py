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
from collections.abc import Callable
from typing import TypeVar

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
