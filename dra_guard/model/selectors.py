"""Which attribute a CEL device selector pins, and whether it carries the exclusivity
guard, found in its parse tree (DRA002, DRA003).

A selector pins an attribute when one of its top-level `&&` conjuncts is
`device.attributes['<domain>'].<attribute> == '<literal>'` (either side, `.attr` or
`['attr']`, parentheses around conjunctions allowed).  It carries the exclusivity guard
when one of them is `device.allowMultipleAllocations == false` (either side).  Anything
under `||`, `!` or `?:` does not count: `pin || true` selects every device.  cel-python's
parser is loaded on first use, so commands that never look at a selector do not pay for it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, NamedTuple

from dra_guard.contract.memo import known_memo


class Pin(NamedTuple):
    domain: str
    attribute: str
    value: str

    @property
    def qualified_attribute(self) -> str:
        return f"{self.domain}/{self.attribute}"


class SelectorAnalysis(NamedTuple):
    #: Why the expression could not be parsed, or None.
    error: str | None
    #: Attribute pins among the top-level conjuncts.
    pins: tuple[Pin, ...]
    #: Whether a top-level conjunct is `device.allowMultipleAllocations == false`.
    exclusivity_guard: bool = False


@lru_cache(maxsize=1)
def _parser() -> Any:
    from celpy import celparser

    return celparser.CELParser()


# The shape our builders (and most drivers' examples) emit: `term && term && ...` where each
# term is `device.driver == '<lit>'`, `device.attributes['<d>'].<attr> == '<lit>'` with
# escape-free literals, or the guard `device.allowMultipleAllocations == false`.  Matching
# it exactly gives the same answer as the parser without building cel-python's grammar
# (~0.2 s); any other text goes to the parser.
_LITERAL = r"""'[^'\\\r\n]*'|"[^"\\\r\n]*\""""
_TERM = re.compile(
    rf"""\s*(?:device\.attributes\[\s*({_LITERAL})\s*\]\.([A-Za-z_][A-Za-z0-9_]*)|device\.driver)"""
    rf"""\s*==\s*({_LITERAL})\s*"""
)
_GUARD_TERM = re.compile(r"\s*device\.allowMultipleAllocations\s*==\s*false\s*")
_AND = re.compile(r"&&")
_CEL_RESERVED = frozenset(
    {
        "as",
        "break",
        "const",
        "continue",
        "else",
        "false",
        "for",
        "function",
        "if",
        "import",
        "in",
        "let",
        "loop",
        "package",
        "namespace",
        "null",
        "return",
        "true",
        "var",
        "void",
        "while",
    }
)


def _fast_analyse(expression: str) -> SelectorAnalysis | None:
    pins: list[Pin] = []
    guarded = False
    position = 0
    while True:
        term = _TERM.match(expression, position)
        if term is not None:
            domain, attribute, value = term.groups()
            if attribute in _CEL_RESERVED:
                return None
            if domain is not None:
                pins.append(Pin(domain[1:-1], attribute, value[1:-1]))
        else:
            term = _GUARD_TERM.match(expression, position)
            if term is None:
                return None
            guarded = True
        position = term.end()
        if position == len(expression):
            return SelectorAnalysis(error=None, pins=tuple(pins), exclusivity_guard=guarded)
        conjunction = _AND.match(expression, position)
        if conjunction is None:
            return None
        position = conjunction.end()


#: The longest CEL selector the API server accepts (k8s.io/api resource/v1,
#: `CELSelectorExpressionMaxLength`).  Longer ones are never parsed: cel-python's parser
#: takes some 30 us and 3 KiB of memory a byte, and one of 100 KB sent straight to the
#: webhook took the process past its memory limit.
CEL_SELECTOR_MAX_LENGTH = 10 * 1024


def byte_length(expression: str) -> int:
    """Its length in bytes, as Go's len() counts them."""
    return len(expression) if expression.isascii() else len(expression.encode("utf-8", "surrogatepass"))


def analysed_at_once(expression: str) -> bool:
    """Whether `analyse(expression)` needs no parser: the fast path reads it, or it is too
    long to parse.  The webhook reviews an object on its event loop only when this holds for
    each of its expressions."""
    return _fast_analyse(expression) is not None or byte_length(expression) > CEL_SELECTOR_MAX_LENGTH


def parsed_already(expression: str) -> bool:
    """Whether `analyse(expression)` needs no parser now: `analysed_at_once`, or its answer
    is kept.  The webhook gives a review a place among the parsers only when some selector
    of the claim templates it names is not (`dra_guard.admission.webhook`)."""
    return analysed_at_once(expression) or analyse.holds(expression)


@known_memo(maxsize=8192, longer=CEL_SELECTOR_MAX_LENGTH, longer_maxsize=256)
def analyse(expression: str) -> SelectorAnalysis:
    """What a selector pins and whether it guards exclusivity, remembered: expressions of up
    to `memo.SHORT` characters, the usual, 8,192 of them; longer ones the API server accepts
    (at most 10 KiB), 256 of them (2.5 MiB), so that a template read for review after review
    is parsed once; none longer (`dra_guard.contract.memo`)."""
    fast = _fast_analyse(expression)
    if fast is not None:
        return fast
    size = byte_length(expression)
    if size > CEL_SELECTOR_MAX_LENGTH:
        return SelectorAnalysis(
            error=f"{size:,} bytes, longer than the API server accepts ({CEL_SELECTOR_MAX_LENGTH:,})", pins=()
        )
    return _parse_and_analyse(expression)


def _parse_and_analyse(expression: str) -> SelectorAnalysis:
    from celpy.celparser import CELParseError

    try:
        tree = _parser().parse(expression)
    except CELParseError as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else "syntax error"
        return SelectorAnalysis(error=first_line, pins=())
    except RecursionError:
        return SelectorAnalysis(error="expression nested too deeply", pins=())
    conjuncts = _conjuncts(tree)
    pins = tuple(pin for conjunct in conjuncts if (pin := _pin(conjunct)) is not None)
    return SelectorAnalysis(error=None, pins=pins, exclusivity_guard=any(_is_guard(c) for c in conjuncts))


def _tree(node: Any) -> tuple[str, list[Any]] | None:
    data = getattr(node, "data", None)
    return (str(data), list(node.children)) if data is not None else None


def _conjuncts(expr: Any) -> list[Any]:
    """The `relation` nodes joined by top-level `&&` (no `||`, no `?:` above them)."""
    shape = _tree(expr)
    if shape is None or shape[0] != "expr" or len(shape[1]) != 1:
        return []  # a ternary: neither branch is certain
    disjunction = _tree(shape[1][0])
    if disjunction is None or disjunction[0] != "conditionalor" or len(disjunction[1]) != 1:
        return []  # an `||` at the top: no conjunct is certain
    result: list[Any] = []
    pending = [disjunction[1][0]]
    while pending:
        node = pending.pop()
        conjunction = _tree(node)
        if conjunction is None:
            continue
        if conjunction[0] == "conditionaland":
            pending.extend(reversed(conjunction[1]))
            continue
        inner = _parenthesised(node)
        if inner is not None:
            result.extend(_conjuncts(inner))
        else:
            result.append(node)
    return result


def _descend_to(node: Any, rules: frozenset[str]) -> tuple[str, list[Any]] | None:
    """The first node named in `rules`, going down through single-child wrappers only."""
    current = node
    while True:
        shape = _tree(current)
        if shape is None:
            return None
        if shape[0] in rules:
            return shape
        if len(shape[1]) != 1:
            return None
        current = shape[1][0]


_PAREN = frozenset({"paren_expr"})
_MEMBER = frozenset({"member_dot", "member_index"})
_PRIMARY = frozenset({"ident", "literal"})


def _parenthesised(node: Any) -> Any | None:
    """The inner `expr` when `node` is nothing but `( expr )`."""
    shape = _descend_to(node, _PAREN)
    return shape[1][0] if shape is not None and shape[1] else None


def _pin(relation: Any) -> Pin | None:
    operands = _equality_operands(relation)
    if operands is None:
        return None
    left, right = operands
    for attribute_side, literal_side in ((left, right), (right, left)):
        reference = _attribute_reference(attribute_side)
        value = _string_literal(literal_side)
        if reference is not None and value is not None:
            return Pin(reference[0], reference[1], value)
    return None


def _equality_operands(relation: Any) -> tuple[Any, Any] | None:
    """(left, right) of `left == right`.  The grammar nests it as relation(relation_eq(left), right)."""
    shape = _tree(relation)
    if shape is None or len(shape[1]) != 2:
        return None
    equality = _tree(shape[1][0])
    if equality is None or equality[0] != "relation_eq" or len(equality[1]) != 1:
        return None
    return equality[1][0], shape[1][1]


def _is_guard(relation: Any) -> bool:
    """`device.allowMultipleAllocations == false`, either way round."""
    operands = _equality_operands(relation)
    if operands is None:
        return False
    for field_side, literal_side in (operands, operands[::-1]):
        member = _member(field_side)
        if (
            member is not None
            and member[0] == "member_dot"
            and len(member[1]) == 2
            and _tree(member[1][1]) is None
            and str(member[1][1]) == "allowMultipleAllocations"
            and _is_identifier(member[1][0], "device")
            and _leaf(literal_side) == ("literal", "false")
        ):
            return True
    return False


def _attribute_reference(node: Any) -> tuple[str, str] | None:
    """`device.attributes['<domain>'].<attr>` or `...['<attr>']` as (domain, attr)."""
    member = _member(node)
    if member is None:
        return None
    kind, children = member
    if kind == "member_dot" and len(children) == 2 and _tree(children[1]) is None:
        attribute: str | None = str(children[1])
    elif kind == "member_index" and len(children) == 2:
        attribute = _string_literal(children[1])
    else:
        return None
    domain_access = _member(children[0])
    if attribute is None or domain_access is None or domain_access[0] != "member_index":
        return None
    domain = _string_literal(domain_access[1][1]) if len(domain_access[1]) == 2 else None
    attributes = _member(domain_access[1][0])
    if domain is None or attributes is None or attributes[0] != "member_dot" or len(attributes[1]) != 2:
        return None
    if str(attributes[1][1]) != "attributes" or not _is_identifier(attributes[1][0], "device"):
        return None
    return domain, attribute


def _member(node: Any) -> tuple[str, list[Any]] | None:
    return _descend_to(node, _MEMBER)


def _leaf(node: Any) -> tuple[str, str] | None:
    """(rule, token text) of a primary such as `ident device` or `literal 'x'`."""
    shape = _descend_to(node, _PRIMARY)
    if shape is None or len(shape[1]) != 1 or _tree(shape[1][0]) is not None:
        return None
    return shape[0], str(shape[1][0])


def _is_identifier(node: Any, name: str) -> bool:
    return _leaf(node) == ("ident", name)


def _string_literal(node: Any) -> str | None:
    leaf = _leaf(node)
    if leaf is None or leaf[0] != "literal":
        return None
    token = leaf[1]
    raw = token[:1] in ("r", "R")
    body = token[1:] if raw else token
    if not body or body[0] not in "'\"":
        return None  # a number, bool, null or bytes literal
    import ast  # only the parser path needs it

    try:
        value = ast.literal_eval(("r" if raw else "") + body)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None
