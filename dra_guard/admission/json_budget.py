"""What parsing a request body's JSON will cost in memory, bounded from above before it is parsed.

`json.loads` of 3 MiB can take far more than a review's allowance (serving.REVIEW_MIB,
32 MiB), whatever the shape of its JSON, and the webhook must refuse such a body before it
costs (docs/admission.md, "Failure modes").  Measured with tracemalloc on CPython 3.11 (the
decoded text, then `json.loads`, its C scanner), bodies of 3 MiB, each of nothing but one
shape, peak at:

=============================================  ======  =======================================
shape                                           MiB     what one piece of it takes
=============================================  ======  =======================================
`{"":{"":{...}}}` chains (depth 900)            113     a dict with a key, 184 bytes, per 5
`[{"":{}}, ...]`, `[{"":[]}, ...]`              96-99   a keyed dict and an empty container
`[[[]], ...]`, `[{}, ...]`, `[[0], ...]`        75-94   64 (dict) or 56 (list) per 2-3 bytes
`[["ab"], ...]`, `[{"":"ab"}, ...]`             66-76   a container and a string
`[[1,1], ...]`                                  52      a list and its first four slots
`["😀" raw, ...]`, `["ab", ...]`, `["\\u0100"]`   31-45   a string, 51 to 80 bytes, per 5 to 8
one dict of 320,000 distinct keys               34      its table, the parser's key memo, keys
`[257, ...]`, `[1.5, ...]`, `[1000, ...]`       25-30   an int (28) or float (24) per 4 bytes
one string holding one escaped or raw emoji     22-24   the string in UCS-4: 4 bytes a character
the largest Pod of tests/test_webhook_memory.py  13     29,646 env entries of two strings each
`[1, ...]`, `["a", ...]`, `[true, ...]`         8-16    cached objects: a slot each
=============================================  ======  =======================================

so no count of one kind of byte bounds it (the webhook once capped `{` and `[` at 131,072,
which 3 MiB of two-character strings, 35 MiB parsed, and 130,000 dicts of one key and a
short string, about 30 MiB, passed).
`estimate` charges every object the parser makes to a byte that introduces it, counted
with `bytes.count` (C speed: a few milliseconds for 3 MiB, microseconds for a usual review):

* a string (key or value) is introduced by its two `"` bytes: its header, 49 bytes when
  every string is ASCII, 76 at most otherwise (an escaped `"` only over-counts).  Its
  characters are the text's own, never more of them nor wider, unless a `\\u` escape
  makes a character wider than the text's (then 4 bytes each, at most), and the digits of
  an integer beyond its 32 bytes take less than a byte each: all of them are bounded by
  the decoded text's size.  A string holding escapes is built in a growing buffer, which
  over-allocates by a quarter and is copied when it widens: up to 0.875 of the string
  again, for a moment;
* a dict is introduced by `{`: 64 bytes, and 120 for the table of its first five keys;
* a list by `[`: 56 bytes, 32 for its first four slots, and its first element's object if
  that is a number (32 at most: an int below 2**60 or a float; small ints, `true`,
  `false` and `null` are shared);
* each further list element by a `,`: its slot (16 at most, the list growing by an eighth
  at a time) and its number object; a `,` between a dict's members costs nothing more;
* each dict member by its `:`: the table's growth past five keys, 44 bytes a key at most
  once it has grown (65,536 keys: 4-byte indices), its value's number object, and, while
  the parser runs, the entry of its key in the parser's memo of keys (a dict as large) and
  a table's old copy while it grows (22 bytes a key more, one table at a time).

Lists and dicts are charged as one element or member past the first takes: a slot or
entry for every value.  A value is a string, a container or a number or literal, which
the `:`, `[` or `,` before it introduces; whitespace makes nothing.  What a parse holds
once done (the parsed body, which the engine then reads) and what it holds at its peak
(with the text, the memo, and the growing buffers and tables) are bounded apart
(`JsonCost`); the tests check both against every shape above
(tests/test_webhook_json_budget.py).  Both are what tracemalloc counts: a list or a string
that grows in place (`realloc`) counts at its new size, and the allocator's rounding of
each object is not counted.
"""

from __future__ import annotations

import re
import sys
from typing import NamedTuple

#: Bytes each counted byte is charged (see the module's docstring).
ASCII_STRING_HALF = 25  # a quote: half an ASCII string's 49-byte header, rounded up
STRING_HALF = 38  # a quote: half the largest string header, 76 bytes (UCS-4)
DICT = 184  # `{`: the dict and the table of its first five keys
LIST = 120  # `[`: the list, four slots and its first element's number
ELEMENT = 48  # `,`: a slot and a number
MEMBER = 76  # `:`: 44 bytes of table and a number
#: While parsing, for each `:`: its key's entry in the parser's memo (as large as a dict's)
#: and the old copy of a table that grows (22 bytes a key).
MEMBER_PARSING = 66
#: The top-level value, and the parser's own small objects (its memo's dict among them).
PARSE_OVERHEAD = 4096
#: What a string with escapes may take again while it is built, of its own size.
ESCAPED_STRING_GROWTH = 0.875

#: A `\u` escape of a character past ASCII (any but `\u0000`..`\u007f`): a string holding
#: one is not ASCII.  An escaped backslash before a `u` matches too, which only over-counts.
_NON_ASCII_ESCAPE = re.compile(rb"\\u(?!00[0-7])")
#: A `\u` escape of a character past Latin-1: the string holding it may be wider than the
#: text (kube-apiserver escapes U+2028 and U+2029 so).
_WIDE_ESCAPE = re.compile(rb"\\u(?!00)")


class JsonCost(NamedTuple):
    """Bytes of Python objects `json.loads` of a body makes: what it holds once done (the
    parsed value) and at its peak (the decoded text included), both upper bounds."""

    parsed: int
    peak: int


def decoding_bound(body: bytes) -> int:
    """The most decoding `body` as UTF-8 may take: the text, one byte a character when it
    is ASCII, else up to four, and a narrower copy while the decoder widens it, and the
    string's header."""
    return (1 if body.isascii() else 5) * len(body) + 2 * ASCII_STRING_HALF + 2 * STRING_HALF


def estimate(body: bytes, text: str) -> JsonCost:
    """An upper bound on what `json.loads(text)` makes and holds, `text` being `body`
    decoded (its own size is known exactly, and bounds the strings' characters)."""
    text_bytes = sys.getsizeof(text)
    quotes, colons = body.count(b'"'), body.count(b":")
    backslashes = b"\\" in body  # memchr: a tenth of the time of looking for `\u`
    escapes = backslashes and b"\\u" in body
    ascii_strings = text.isascii() and not (escapes and _NON_ASCII_ESCAPE.search(body))
    # Each quote is one character of the text that no string holds (or an escape's, whose
    # backslash is the character), so it leaves the strings that much less.
    characters = 4 * len(text) if escapes and _WIDE_ESCAPE.search(body) else text_bytes
    characters = max(0, characters - quotes)
    parsed = (
        PARSE_OVERHEAD
        + characters
        + quotes * (ASCII_STRING_HALF if ascii_strings else STRING_HALF)
        + body.count(b"{") * DICT
        + body.count(b"[") * LIST
        + body.count(b",") * ELEMENT
        + colons * MEMBER
    )
    growing = int(characters * ESCAPED_STRING_GROWTH) if backslashes else 0
    return JsonCost(parsed, parsed + text_bytes + growing + colons * MEMBER_PARSING)
