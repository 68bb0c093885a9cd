"""The RE2 conjunct pattern agrees with cel-python's parse tree.

DRA002 and DRA003 decide with the pattern (so that the admission policies, whose CEL uses
the same pattern in `matches`, decide alike). Here the parser is the reference: on every
generated expression the parser accepts, the pattern never sees a conjunct the parser
does not (sound), and within the forms the pattern reads (groups at most DEPTH deep,
once-quoted strings, plain domain and attribute spellings) it sees every one (complete).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dra_guard.model.conjuncts import DEPTH, GUARD_TERM, attribute_term, has_conjunct
from dra_guard.model.selectors import analyse

PIN = "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"
TERM = attribute_term("gpu.nvidia.com", "profile")

_PINS = st.sampled_from(
    [
        PIN,
        "'1g.10gb' == device.attributes['gpu.nvidia.com'].profile",
        'device.attributes["gpu.nvidia.com"]["profile"] == "3g.40gb"',
        "device . attributes [ 'gpu.nvidia.com' ] . profile  ==  r'1g.10gb'",
        "device.attributes['gpu.nvidia.com'].productName == 'A100'",
        "device.attributes['tpu.google.com'].profile == 'x'",
    ]
)
_ATOMS = st.sampled_from(
    [
        "device.driver == 'gpu.nvidia.com'",
        "device.allowMultipleAllocations == false",
        "true",
        "x > 2",
        "'a && b || c' == device.driver",
        '"(" != ")"',
        "[1, 2].size() == 2",
        "{'k': 'v'}['k'] == 'v'",
        "f(a, [b, {c: d}])",
        "device.attributes['gpu.nvidia.com'].memory >= 4",
        "'it\\'s' == device.driver",
        "a / b == 1",
        # Literals the pattern does not read (fail closed), each of which it once misread:
        # a triple-quoted literal holding a quote, and raw literals ending in a backslash.
        "\"\"\"a'b\"\"\" == '''a'b''''",
        "r'\\' == r'\\'",
        "'' == device.driver",
        # A comment runs to the end of its line, and a division's `/` is no quote.
        "x == 1 // && a || b '\n",
        "(1/'x'.size() == 1)",
    ]
)


def _combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(children, children).map(lambda pair: f"{pair[0]} && {pair[1]}"),
        st.tuples(children, children).map(lambda pair: f"{pair[0]} || {pair[1]}"),
        children.map(lambda child: f"({child})"),
        children.map(lambda child: f"!({child})"),
        st.tuples(children, children).map(lambda pair: f"x ? {pair[0]} : {pair[1]}"),
        children.map(lambda child: f"f({child})"),
    )


_NESTED = st.recursive(st.one_of(_PINS, _ATOMS), _combine, max_leaves=6)
# Conjunctions with a pin somewhere among them, so that most examples have a conjunct to find.
_CONJUNCTIONS = st.tuples(st.lists(_NESTED, max_size=3), _PINS, st.randoms()).map(
    lambda drawn: " && ".join(drawn[2].sample([*drawn[0], drawn[1]], len(drawn[0]) + 1))
)
EXPRESSIONS = st.one_of(_NESTED, _CONJUNCTIONS, _CONJUNCTIONS.map(lambda text: f"({text}) && true"))


def _parser_pins(expression: str) -> bool | None:
    analysis = analyse(expression)
    if analysis.error is not None:
        return None
    return any(pin.qualified_attribute == "gpu.nvidia.com/profile" for pin in analysis.pins)


def _parser_guard(expression: str) -> bool | None:
    analysis = analyse(expression)
    return None if analysis.error is not None else analysis.exclusivity_guard


def _nesting(expression: str) -> int:
    """Deepest group nesting outside string literals and comments (a rough reading, for the
    oracle)."""
    depth = deepest = 0
    quote = None
    escaped = False
    comment = False
    for index, character in enumerate(expression):
        if comment:
            comment = character != "\n"
        elif quote:
            if escaped:
                escaped = False
            elif character == "\\":
                escaped = True
            elif character == quote:
                quote = None
        elif expression.startswith("//", index):
            comment = True
        elif character in "'\"":
            quote = character
        elif character in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif character in ")]}":
            depth -= 1
    return deepest


def _reads_every_literal(expression: str) -> bool:
    """No literal the pattern leaves unread (fail closed): an empty one, or one where a
    backslash stands before a quote (roughly: the substrings, wherever they are)."""
    return not any(mark in expression for mark in ("''", '""', "\\'", '\\"'))


@settings(max_examples=600, derandomize=True, deadline=None)
@given(EXPRESSIONS)
def test_the_pattern_sees_a_pin_only_where_the_parser_does(expression: str) -> None:
    parsed = _parser_pins(expression)
    if parsed is None:
        return  # not CEL: the API server refuses it, and DRA002 reports it
    matched = has_conjunct(expression, TERM)
    assert not matched or parsed, f"pattern sees a pin the parser does not: {expression}"
    if _nesting(expression) <= DEPTH and _reads_every_literal(expression):
        assert matched == parsed, f"pattern {'misses' if parsed else 'invents'} a pin: {expression}"


@settings(max_examples=400, derandomize=True, deadline=None)
@given(EXPRESSIONS)
def test_the_guard_pattern_agrees_with_the_parser(expression: str) -> None:
    parsed = _parser_guard(expression)
    if parsed is None:
        return
    matched = has_conjunct(expression, GUARD_TERM)
    assert not matched or parsed, expression
    if _nesting(expression) <= DEPTH and _reads_every_literal(expression):
        assert matched == parsed, expression


@pytest.mark.parametrize(
    ("expression", "pinned"),
    [
        (PIN, True),
        (f"device.driver == 'gpu.nvidia.com' && {PIN} && device.allowMultipleAllocations == false", True),
        (f"{PIN} || true", False),
        (f"({PIN} && a) && b", True),
        (f"x ? {PIN} : false", False),
        (f"!({PIN})", False),
        (f"'&& {PIN} &&' == device.driver", False),
        (f"f(a && b) && {PIN} // a comment with ' and ( in it", True),
        (f"(({PIN}))", True),
        ("device.attributes['gpu.n\\x76idia.com'].profile == 'x'", False),  # escaped domain: not read
        # A triple-quoted literal holds quotes: `true || (...)` selects every device.
        (f"\"\"\"a'b\"\"\" == '''a'b''' || '' == '''a'b''' && {PIN}", False),
        # r'\' is the literal \ (a raw literal's backslash is itself): `true || (...)` again.
        (f"r'\\' == r'\\' || 'x' == 'x' && {PIN}", False),
        (f"{PIN[:-10]}r'1g.10gb\\' || true || 'x' == r'y\\'", False),
        (f"{PIN} && b'\\x00' != br'\\d'", True),  # escapes that are no quotes are read
        # A comment ends at the end of its line, not before the next `&&`: this is `true`.
        (f"true // && {PIN}", False),
        (f"true // a comment\n && {PIN} // another", True),
        # `/'` is a division then a literal: the pattern once read the quote as division's.
        (f"(1/'x'.size() == 1) || true || ('y/'.size() == 1) && {PIN}", False),
    ],
)
def test_known_shapes(expression: str, pinned: bool) -> None:
    assert has_conjunct(expression, TERM) is pinned
