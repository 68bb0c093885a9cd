"""Top-level `&&` conjuncts of a CEL selector, recognised by one RE2 pattern.

DRA002 (a pin on the class's attribute) and DRA003 (the exclusivity guard) ask the same
question of a selector: is one of its top-level `&&` conjuncts this term?  Answering it
with a regular expression means the engine and the admission policies (CEL's `matches`,
also RE2) decide identically, by construction.

The pattern reads the whole expression as CEL's lexer would, as far as `&&` goes: string
literals (quoted, raw, bytes) and `//` comments are opaque; parentheses,
brackets and braces nest (to `DEPTH` levels, beyond which a conjunct is not recognised:
fail closed); a top-level `||` or `?` leaves no conjunct certain, so the pattern cannot
match. A conjunct counts when it is the term itself, optionally in parentheses, or a
parenthesised conjunction containing it (so `(a && pin) && b` pins). Everything that is
not a literal, comment or group is matched character by character, so an expression the
pattern accepts is still compiled elsewhere (the API server refuses invalid CEL before
admission; the engine reports it under DRA002).

A literal must span exactly what the lexer (cel-go's CEL.g4) makes it span, or a `||` the
lexer sees could hide in what the pattern takes for a string. Two spellings would let the
pattern end a literal elsewhere, so neither is read (a selector holding one is not
recognised: fail closed):

* an empty literal (two quotes): three quotes in a row open a triple-quoted literal, which
  may hold quotes, where the pattern would read an empty literal and open another;
* a backslash before a quote: in a raw literal a backslash is itself (`r'\\'` is the
  literal `\\`), and the pattern, which cannot tell an `r` prefix from the end of a name,
  would read an escaped quote and end the literal at a later one.

Without them, a literal ends at the next quote of its kind however it is read.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from dra_guard.contract.memo import SHORT

#: How deeply groups may nest inside a conjunct the pattern still reads.
DEPTH = 2

#: Blanks and comments. A comment runs to the end of its line (CEL.g4: '//' (~'\n')*): one
#: the pattern could end early would let it read the rest of the line as code. Within the
#: expression its line ends in a line feed; a last comment that ends the text is matched
#: once, at the end of the whole pattern (`_END`), which keeps the pattern short.
_WS = r"(?:\s|//[^\n]*\n)*"
_END = r"(?://[^\n]*)?$"
#: A string or bytes literal, quoted (`'...'`, `"..."`), raw or bytes, neither empty nor
#: holding an escaped quote (see above); triple-quoted literals are not read.
_LITERAL = r"""(?:'(?:[^'\\\n\r]|\\[^'"\n\r])+'|"(?:[^"\\\n\r]|\\[^'"\n\r])+")"""
STRING = rf"[bB]?[rR]?{_LITERAL}"
#: A string literal (not bytes): the value side of a pin.
TEXT_STRING = rf"[rR]?{_LITERAL}"
_COMMENT = r"//[^\n]*\n"
# One character that is none of: quote, group delimiter, &, |, ?, /; or a `/` that does not
# start a comment (division) with such a character after it.
_PLAIN = r"""/?[^/'"()\[\]{}&|?]"""


def _groups(depth: int) -> str:
    """A bracketed group ((...), [...] or {...}) with anything inside, nesting up to `depth`.

    Opening and closing brackets are not paired by type: in CEL that compiles they always
    are, and what does not compile never reaches a rule or a policy as a pin (the engine
    reports it, the API server refuses it), so the pattern stays small.
    """
    if depth == 0:
        return "[^\\s\\S]"  # no group at all
    # A `/` is division, matched with the character after it, which must not be a quote or
    # a bracket (as at the top level): `/'` read as one character put a quote out of step.
    inner = f"(?:{STRING}|{_COMMENT}|{_groups(depth - 1)}|/?[^/'\"()\\[\\]{{}}])"
    return rf"[(\[{{]{inner}*[)\]}}]"


def _conjunct(depth: int) -> str:
    """One conjunct: literals, comments, groups and plain characters, no top-level && || ?."""
    return f"(?:{STRING}|{_COMMENT}|{_groups(depth)}|{_PLAIN})+"


def _wanted(term: str, depth: int) -> str:
    """The term, possibly parenthesised, or a parenthesised conjunction containing it."""
    if depth == 0:
        return f"(?:{term})"
    other = _conjunct(depth - 1)
    inner = f"(?:{other}{_WS}&&{_WS})*{_wanted(term, depth - 1)}(?:{_WS}&&{_WS}{other})*"
    return rf"(?:{term}|\({_WS}{inner}{_WS}\))"


@lru_cache(maxsize=256)
def conjunct_pattern(term: str, depth: int = DEPTH) -> str:
    """An RE2 pattern that matches a whole expression one of whose top-level && conjuncts is `term`."""
    other = _conjunct(depth)
    wanted = _wanted(term, depth)
    return rf"^{_WS}(?:{other}{_WS}&&{_WS})*{wanted}(?:{_WS}&&{_WS}{other})*{_WS}{_END}"


def _literal_of(value: str | None) -> str:
    """A string literal whose value is `value` written without escapes (any, for None)."""
    if value is None:
        return r"""(?:[rR]?(?:'[^'\\\n\r]*'|"[^"\\\n\r]*"))"""
    quoted = "".join("\\" + character if not character.isalnum() else character for character in value)
    return rf"""(?:[rR]?(?:'{quoted}'|"{quoted}"))"""


def attribute_term(domain: str | None = None, attribute: str | None = None, values: Iterable[str] | None = None) -> str:
    """`device.attributes['<domain>'].<attribute> == '<literal>'`, either side, `.a` or `['a']`.

    None stands for any domain, attribute or literal; `values` are the literals allowed.
    Domain, attribute and values must be written without escape sequences (an escaped
    spelling is not recognised: fail closed).
    """
    name = r"[A-Za-z_][A-Za-z0-9_]*" if attribute is None else attribute
    reference = (
        rf"device{_WS}\.{_WS}attributes{_WS}\[{_WS}{_literal_of(domain)}{_WS}\]{_WS}"
        rf"(?:\.{_WS}{name}|\[{_WS}{_literal_of(attribute)}{_WS}\])"
    )
    value = TEXT_STRING if values is None else _literal_of_any(values)
    return rf"(?:{reference}{_WS}=={_WS}{value}|{value}{_WS}=={_WS}{reference})"


def _literal_of_any(values: Iterable[str]) -> str:
    """A string literal whose value is one of `values`, written without escapes."""
    alternatives = "|".join(
        "".join("\\" + character if not character.isalnum() else character for character in value)
        for value in sorted(set(values))
    )
    return rf"""(?:[rR]?(?:'(?:{alternatives})'|"(?:{alternatives})"))"""


#: Where `int_attribute_term(..., None)` puts the integer, so that a policy can splice in
#: the request's count (`split_at_value`); a NUL never occurs in a pattern otherwise.
VALUE_PLACEHOLDER = "\x00"


def int_attribute_term(domain: str, attribute: str, value: int | None) -> str:
    """`device.attributes['<domain>'].<attribute> == <value>`, either side, the integer in
    decimal (VALUE_PLACEHOLDER for None)."""
    reference = (
        rf"device{_WS}\.{_WS}attributes{_WS}\[{_WS}{_literal_of(domain)}{_WS}\]{_WS}"
        rf"(?:\.{_WS}{attribute}|\[{_WS}{_literal_of(attribute)}{_WS}\])"
    )
    number = VALUE_PLACEHOLDER if value is None else str(value)
    return rf"(?:{reference}{_WS}=={_WS}{number}|{number}{_WS}=={_WS}{reference})"


def split_at_value(pattern: str) -> list[str]:
    """A pattern built from `int_attribute_term(..., None)`, cut where the integer goes."""
    return pattern.split(VALUE_PLACEHOLDER)


def driver_term(driver: str) -> str:
    """`device.driver == '<driver>'`, either side (the driver written without escapes)."""
    reference = rf"device{_WS}\.{_WS}driver"
    literal = _literal_of(driver)
    return rf"(?:{reference}{_WS}=={_WS}{literal}|{literal}{_WS}=={_WS}{reference})"


def any_driver_term(drivers: Iterable[str]) -> str:
    """`device.driver == '<driver>'` for any of `drivers`, either side: one term, so that a
    policy asks one `matches` of a selector for a whole set of drivers (a `matches` costs
    about the same whatever the pattern, and is paid once per selector and per pattern)."""
    alternatives = "|".join(
        "".join("\\" + character if not character.isalnum() else character for character in driver)
        for driver in sorted(set(drivers))
    )
    reference = rf"device{_WS}\.{_WS}driver"
    literal = rf"""(?:[rR]?(?:'(?:{alternatives})'|"(?:{alternatives})"))"""
    return rf"(?:{reference}{_WS}=={_WS}{literal}|{literal}{_WS}=={_WS}{reference})"


#: `device.allowMultipleAllocations == false`, either side: the exclusivity guard.
GUARD_TERM = (
    rf"(?:device{_WS}\.{_WS}allowMultipleAllocations{_WS}=={_WS}false"
    rf"|false{_WS}=={_WS}device{_WS}\.{_WS}allowMultipleAllocations)"
)


def has_conjunct(expression: str, term: str) -> bool:
    """Whether a top-level conjunct of `expression` is `term` (RE2, as CEL's `matches`);
    remembered for expressions of at most `memo.SHORT` characters (`dra_guard.contract.memo`)."""
    return _has_conjunct_remembered(expression, term) if len(expression) <= SHORT else _has_conjunct(expression, term)


def _has_conjunct(expression: str, term: str) -> bool:
    import re2  # type: ignore[import-untyped]  # google-re2 ships no type information

    return re2.search(conjunct_pattern(term), expression) is not None


_has_conjunct_remembered = lru_cache(maxsize=8192)(_has_conjunct)
