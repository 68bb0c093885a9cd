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


def memo_short(maxsize: int, short: int = SHORT) -> Callable[[Callable[[str], T]], Callable[[str], T]]:
    """`lru_cache(maxsize)` for a function of one string, for strings of at most `short`
    characters: at most `maxsize` * `short` characters kept."""

    def wrap(function: Callable[[str], T]) -> Callable[[str], T]:
        cached = functools.lru_cache(maxsize=maxsize)(function)

        @functools.wraps(function)
        def call(key: str) -> T:
            return cached(key) if len(key) <= short else function(key)

        return call

    return wrap
