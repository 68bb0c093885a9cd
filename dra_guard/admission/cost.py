"""What evaluating a policy costs the API server, counted as cel-go counts it at run time.

The API server stops a CEL evaluation that exceeds its cost limit, and under
`failurePolicy: Fail` that error denies the request: an expensive policy refuses compliant
objects.  The limits (k8s.io/apiserver `pkg/apis/cel/config.go`): `PerCallLimit`, 1,000,000
for each expression evaluated (each variable included); `RuntimeCELCostBudget`, 10,000,000
for one policy's validations, its variables and its messageExpressions together
(`pkg/admission/plugin/policy/validating/validator.go`: the messageExpressions are evaluated
after the validations, with what remains, and with their own, fresh, variables; the lazily
evaluated variables are charged to the expression that first reads them,
`pkg/admission/plugin/cel/composition.go`); `RuntimeCELCostBudgetMatchConditions`, 2,500,000
for the matchConditions.

Go's estimator cannot run here, so this module evaluates the policies' CEL itself and counts
each step the way cel-go's cost tracker does (`interpreter/runtimecost.go`, with the
standard-library call costs of its `costCall`; `common/cost.go` for the factors), under the
API server's program options (k8s.io/apiserver `pkg/cel/environment/base.go`): constant
folding on (`OptOptimize`: constant list literals cost nothing, `x in [constants]` is a set
lookup) and presence tests free (`PresenceTestHasCost(false)`).  The Kubernetes cost
estimator (`pkg/cel/library/cost.go`) adds nothing for the standard functions used here.
The charges, in cost units:

* an identifier or a field selection: 1 (a presence test `has(a.b)`: the selections only);
  an index: 1 for a constant one, the index expression's own cost for a variable one;
* a call: 1 (`size`, `type`, `string` of an int, `!`, arithmetic, `+` on lists, `<` on numbers); `==` and `!=`:
  a tenth of the shorter operand's size, rounded up; `+` on strings: a tenth of both
  lengths; `startsWith`, `endsWith`: a tenth of the receiver's length; `contains`: the
  product of both tenths; `matches`: (1 + the string's length) / 10, rounded up, times the
  pattern's length / 4, rounded up; `in` a list that is not a constant: its size;
* a list literal that is not constant: 10, a map literal: 30;
* `&&`, `||`, `?:`: nothing beyond their operands (with CEL's short-circuits; a `?:` branch
  that is a plain variable costs its selections only);
* a comprehension, per element it visits: `all` 3 and `exists` 4 (the loop condition and
  the accumulator) plus the predicate; `exists_one` the predicate, plus 2 where it holds;
  `map` 12 plus the transform; `filter` the predicate, plus 13 where it holds; then 1 (2
  for `exists_one`) for the result.

`tests/test_admission_cost.py` checks these charges against the expectations of cel-go's
own `interpreter/runtimecost_test.go`, checks that the values computed here are those the
emulator's cel-python computes, and measures the generated policies on the largest objects
the API allows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

#: k8s.io/apiserver pkg/apis/cel/config.go
PER_CALL_LIMIT = 1_000_000
RUNTIME_CEL_COST_BUDGET = 10_000_000
RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS = 2_500_000
#: cel-go common/cost.go
STRING_TRAVERSAL_COST_FACTOR = 0.1
REGEX_STRING_LENGTH_COST_FACTOR = 0.25
LIST_CREATE_BASE_COST = 10
MAP_CREATE_BASE_COST = 30

_TYPE_NAMES = ("map", "list", "string", "int", "uint", "double", "bool", "bytes", "null_type", "type")
_MACROS = ("all", "exists", "exists_one", "map", "filter")


class CelError(Exception):
    """An evaluation error, as a value: CEL's `&&` and `||` absorb it when the other side decides."""


@dataclass(frozen=True)
class TypeValue:
    name: str


class _Unset:
    """A variable not evaluated yet."""


_UNSET = _Unset()


class LazyVariables:
    """`variables`: each evaluated on first use in a pass, its cost charged once, there."""

    def __init__(self, expressions: Sequence[tuple[str, str]], evaluate: Callable[[str, str], Any]) -> None:
        self._expressions = dict(expressions)
        self._values: dict[str, Any] = dict.fromkeys(self._expressions, _UNSET)
        self._evaluate = evaluate

    def get(self, name: str) -> Any:
        if name not in self._expressions:
            return CelError(f"no such variable: {name}")
        if self._values[name] is _UNSET:
            self._values[name] = self._evaluate(name, self._expressions[name])
        return self._values[name]


def _type_of(value: Any) -> str:
    if value is None:
        return "null_type"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, Mapping):
        return "map"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, TypeValue):
        return "type"
    return "unknown"


def _size(value: Any) -> int:
    """cel-go's `actualSize`: the size of strings (in code points), bytes, lists and maps; 1 otherwise."""
    if isinstance(value, (str, bytes, list, tuple, Mapping)):
        return len(value)
    return 1


def _tenths(size: int) -> int:
    return math.ceil(size * STRING_TRAVERSAL_COST_FACTOR)


def _equal(left: Any, right: Any) -> bool:
    """CEL equality: values of different types are unequal, except numbers."""
    left_type, right_type = _type_of(left), _type_of(right)
    if left_type != right_type:
        return left_type in ("int", "double") and right_type in ("int", "double") and left == right
    if left_type == "list":
        return len(left) == len(right) and all(_equal(a, b) for a, b in zip(left, right, strict=True))
    if left_type == "map":
        return left.keys() == right.keys() and all(_equal(left[key], right[key]) for key in left)
    return bool(left == right)


# --- compiling: the parse tree as small nodes, with what cel-go's planner decides ---------------
#
# A node is a tuple whose first item says what it is.  Attributes (cel-go's word for an
# identifier with selections and indexes on it, and `?:`) are marked when compiled, as are
# constant list and map literals, so evaluation does not look at the tree again.

Node = tuple[Any, ...]
_LAYERS = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary", "member"}
    | {"primary", "paren_expr"}
)


@lru_cache(maxsize=2048)
def compile_expression(expression: str) -> Node:
    from celpy.celparser import CELParser

    return _compile(CELParser().parse(expression))


def _compile(tree: Any) -> Node:
    while tree.data in _LAYERS and len(tree.children) == 1:
        tree = tree.children[0]
    kind = tree.data
    if kind == "expr":
        condition, truthy, falsy = (_compile(child) for child in tree.children)
        return ("cond", condition, truthy, falsy)
    if kind in ("conditionalor", "conditionaland"):
        return ("or" if kind == "conditionalor" else "and", tuple(_compile(term) for term in _flatten(tree)))
    if kind in ("relation", "addition", "multiplication"):
        operator, right = tree.children
        return ("binary", operator.data, _compile(operator.children[0]), _compile(right), _constant_list(right))
    if kind == "unary":
        operator, operand = tree.children
        return ("unary", operator.data, _compile(operand))
    if kind == "literal":
        return ("literal", _literal_value(tree.children[0]))
    if kind == "ident":
        name = str(tree.children[0])
        if name in _TYPE_NAMES:
            return ("literal", TypeValue(name))  # a type name: a constant
        return ("literal", None) if name == "null" else ("ident", name)
    if kind == "member_dot":
        operand = _compile(tree.children[0])
        return ("select", operand, str(tree.children[1]), _is_attribute(operand))
    if kind == "member_index":
        operand, index = _compile(tree.children[0]), _compile(tree.children[1])
        # A constant index is a qualifier (1), a variable one costs only itself, another
        # expression is a qualifier too; an index on a computed value is a relative attribute.
        charge = (0 if _is_attribute(operand) else 1) + (0 if index[0] != "literal" and _is_attribute(index) else 1)
        return ("index", operand, index, charge)
    if kind == "list_lit":
        elements = tuple(_compile(child) for child in tree.children[0].children) if tree.children else ()
        return ("list", elements, all(element[0] == "literal" for element in elements))
    if kind == "map_lit":
        parts = tuple(_compile(child) for child in tree.children[0].children) if tree.children else ()
        return ("map", parts, all(part[0] == "literal" for part in parts))
    if kind == "ident_arg":
        name = str(tree.children[0])
        arguments = tuple(_compile(child) for child in tree.children[1].children) if len(tree.children) > 1 else ()
        if name == "has":
            return _compile_has(arguments[0])
        return ("call", name, arguments)
    if kind == "member_dot_arg":
        target, name = _compile(tree.children[0]), str(tree.children[1])
        arguments = tuple(_compile(child) for child in tree.children[2].children) if len(tree.children) > 2 else ()
        if name in _MACROS:
            if len(arguments) != 2 or arguments[0][0] != "ident":
                raise NotImplementedError(f"the cost model reads {name}() with an iteration variable and one body")
            return ("macro", name, target, arguments[0][1], arguments[1])
        return ("method", name, target, arguments)
    raise NotImplementedError(f"the cost model does not read {kind!r}")


def _compile_has(argument: Node) -> Node:
    if argument[0] != "select":
        raise NotImplementedError("has() of something other than a field selection")
    _, operand, name, _ = argument
    # The selections are charged, the identifier at the root and the test itself are not.
    return ("has", operand, name, 1 if _root_identifier(operand) else 0)


def _flatten(tree: Any) -> list[Any]:
    """The terms of `a || b || c` (or `&&`), left to right: the grammar nests them leftwards."""
    terms = []
    while len(tree.children) == 2:
        terms.append(tree.children[1])
        tree = tree.children[0]
    terms.append(tree.children[0])
    return terms[::-1]


def _root_identifier(node: Node) -> str | None:
    """The identifier a chain of selections and indexes starts from, if it is one."""
    while node[0] in ("select", "index"):
        node = node[1]
    return node[1] if node[0] == "ident" else None


def _is_attribute(node: Node) -> bool:
    """cel-go plans identifiers, selections and indexes on them, and `?:`, as attributes."""
    return _root_identifier(node) is not None or node[0] == "cond"


def _constant_list(tree: Any) -> bool:
    """A list literal of literals only (constant-folded under OptOptimize)."""
    while tree.data in _LAYERS and len(tree.children) == 1:
        tree = tree.children[0]
    if tree.data != "list_lit":
        return False
    if not tree.children:
        return True
    return all(_compile(element)[0] == "literal" for element in tree.children[0].children)


def _literal_value(token: Any) -> Any:
    from celpy.evaluation import celbytes, celstr

    kind, text = token.type, token.value
    if kind == "INT_LIT":
        negative = text.startswith("-")
        digits = text.lstrip("-")
        value = int(digits, 16) if digits.lower().startswith("0x") else int(digits)
        return -value if negative else value
    if kind == "UINT_LIT":
        return int(text[:-1], 0)
    if kind == "FLOAT_LIT":
        return float(text)
    if kind in ("STRING_LIT", "MLSTRING_LIT"):
        return str(celstr(token))
    if kind == "BYTES_LIT":
        return bytes(celbytes(token))
    if kind == "BOOL_LIT":
        return text == "true"
    return None


# --- evaluating, and charging --------------------------------------------------------------


class _Evaluator:
    """Evaluates compiled nodes over plain Python values, adding up cel-go's charges."""

    def __init__(self, activation: Mapping[str, Any], *, optimize: bool = True) -> None:
        self.activation = activation
        self.optimize = optimize
        self.cost = 0
        self.locals: dict[str, Any] = {}

    def eval(self, node: Node) -> Any:
        return _EVALUATE[node[0]](self, node)

    def literal(self, node: Node) -> Any:
        return node[1]

    def ident(self, node: Node) -> Any:
        self.cost += 1
        name = node[1]
        if name in self.locals:
            return self.locals[name]
        if name in self.activation:
            return self.activation[name]
        return CelError(f"undeclared reference to {name!r}")

    def cond(self, node: Node) -> Any:
        _, condition, truthy, falsy = node
        chosen = self.eval(condition)
        if isinstance(chosen, CelError):
            return chosen
        if not isinstance(chosen, bool):
            return CelError("a ?: condition that is not a bool")
        branch = truthy if chosen else falsy
        value = self.eval(branch)
        if _root_identifier(branch) is not None:
            # A plain variable as a branch is read inside cel-go's conditional attribute,
            # where the identifier itself is not charged (its selections are).
            self.cost -= 1
        return value

    def logical(self, node: Node) -> Any:
        stop = node[0] == "or"
        error: CelError | None = None
        for term in node[1]:
            value = self.eval(term)
            if value is stop:
                return stop
            if not isinstance(value, bool):
                error = error or _as_error(value)
        return error if error is not None else not stop

    def unary(self, node: Node) -> Any:
        value = self.eval(node[2])
        self.cost += 1
        if isinstance(value, CelError):
            return value
        if node[1] == "unary_not":
            return not value if isinstance(value, bool) else CelError("! of something other than a bool")
        return -value if _type_of(value) in ("int", "double") else CelError("- of something other than a number")

    def binary(self, node: Node) -> Any:
        _, operator, left_node, right_node, constant_right = node
        left = self.eval(left_node)
        right = self.eval(right_node)
        if operator == "relation_in":
            if not (self.optimize and constant_right):
                self.cost += _size(right) if isinstance(right, list) else 1
            return _in(left, right)
        if isinstance(left, CelError) or isinstance(right, CelError):
            self.cost += 1
            return left if isinstance(left, CelError) else right
        if operator in ("relation_eq", "relation_ne"):
            self.cost += _tenths(min(_size(left), _size(right)))
            return _equal(left, right) == (operator == "relation_eq")
        if operator.startswith("relation_"):
            self.cost += _tenths(min(_size(left), _size(right))) if isinstance(left, (str, bytes)) else 1
            return _compare(operator, left, right)
        if operator == "addition_add" and isinstance(left, str) and isinstance(right, str):
            self.cost += _tenths(len(left) + len(right))
            return left + right
        self.cost += 1
        return _arithmetic(operator, left, right)

    def select(self, node: Node) -> Any:
        _, operand_node, name, attribute = node
        operand = self.eval(operand_node)
        self.cost += 1 if attribute else 2  # on a computed value: a relative attribute too
        if isinstance(operand, CelError):
            return operand
        if isinstance(operand, LazyVariables):
            return operand.get(name)
        if isinstance(operand, Mapping):
            return operand[name] if name in operand else CelError(f"no such key: {name}")
        return CelError(f"field selection on a {_type_of(operand)}")

    def has(self, node: Node) -> Any:
        _, operand_node, name, uncharged_root = node
        operand = self.eval(operand_node)
        self.cost += 1 - uncharged_root
        if isinstance(operand, CelError):
            return operand
        if isinstance(operand, LazyVariables):
            return True
        if isinstance(operand, Mapping):
            return name in operand
        return CelError("has() on something other than a map")

    def index(self, node: Node) -> Any:
        _, operand_node, index_node, charge = node
        operand = self.eval(operand_node)
        index = self.eval(index_node)
        self.cost += charge
        if isinstance(operand, CelError) or isinstance(index, CelError):
            return operand if isinstance(operand, CelError) else index
        if isinstance(operand, list):
            if _type_of(index) != "int" or not 0 <= index < len(operand):
                return CelError("index out of range")
            return operand[index]
        if isinstance(operand, Mapping):
            return operand[index] if index in operand else CelError(f"no such key: {index!r}")
        return CelError("index on something other than a list or map")

    def list_literal(self, node: Node) -> Any:
        values = [self.eval(element) for element in node[1]]
        if not (self.optimize and node[2]):
            self.cost += LIST_CREATE_BASE_COST
        return next((value for value in values if isinstance(value, CelError)), values)

    def map_literal(self, node: Node) -> Any:
        parts = [self.eval(part) for part in node[1]]
        if not (self.optimize and node[2]):
            self.cost += MAP_CREATE_BASE_COST
        error = next((value for value in parts if isinstance(value, CelError)), None)
        return error if error is not None else dict(zip(parts[::2], parts[1::2], strict=True))

    def call(self, node: Node) -> Any:
        _, name, arguments = node
        values = [self.eval(argument) for argument in arguments]
        if name == "dyn":
            return values[0]
        self.cost += 1
        error = next((value for value in values if isinstance(value, CelError)), None)
        if error is not None:
            return error
        if name == "size":
            return _length(values[0])
        if name == "type":
            return TypeValue(_type_of(values[0]))
        if name == "string" and _type_of(values[0]) in ("int", "string"):
            # A conversion is one call (cel-go's costCall default); DRA017 splices a count
            # into its pattern with it.
            return values[0] if isinstance(values[0], str) else str(values[0])
        raise NotImplementedError(f"the cost model has no function {name}()")

    def method(self, node: Node) -> Any:
        _, name, target_node, arguments = node
        target = self.eval(target_node)
        values = [self.eval(argument) for argument in arguments]
        error = next((value for value in [target, *values] if isinstance(value, CelError)), None)
        if error is not None or name == "size":
            self.cost += 1
            return error if error is not None else _length(target)
        if not isinstance(target, str) or not all(isinstance(value, str) for value in values):
            self.cost += 1
            return CelError(f"{name} on something other than strings")
        if name in ("startsWith", "endsWith"):
            self.cost += _tenths(len(target))
            return target.startswith(values[0]) if name == "startsWith" else target.endswith(values[0])
        if name == "contains":
            self.cost += _tenths(len(target)) * _tenths(len(values[0]))
            return values[0] in target
        if name == "matches":
            pattern = values[0]
            self.cost += _tenths(1 + len(target)) * math.ceil(len(pattern) * REGEX_STRING_LENGTH_COST_FACTOR)
            return _matches(target, pattern)
        raise NotImplementedError(f"the cost model has no function {name}()")

    def macro(self, node: Node) -> Any:
        _, name, target_node, variable, body = node
        iterable = self.eval(target_node)
        if isinstance(iterable, CelError):
            return iterable
        if not isinstance(iterable, (list, Mapping)):
            return CelError(f"{name}() over something that is not a list or map")
        if not self.optimize and name in ("map", "filter"):
            self.cost += LIST_CREATE_BASE_COST  # the accumulator's `[]`, not folded into a constant
        saved = self.locals
        self.locals = {**saved}
        try:
            return _MACRO_LOOPS[name](self, list(iterable), variable, body)
        finally:
            self.locals = saved

    def loop_all(self, elements: list[Any], variable: str, body: Node) -> Any:
        accumulator: Any = True
        for element in elements:
            self.cost += 2  # the loop condition, @not_strictly_false(@result)
            if accumulator is False:
                break
            self.locals[variable] = element
            self.cost += 1  # @result && ...
            accumulator = _and(accumulator, self.eval(body))
        self.cost += 1
        return accumulator

    def loop_exists(self, elements: list[Any], variable: str, body: Node) -> Any:
        accumulator: Any = False
        for element in elements:
            self.cost += 3  # the loop condition, @not_strictly_false(!@result)
            if accumulator is True:
                break
            self.locals[variable] = element
            self.cost += 1  # @result || ...
            accumulator = _or(accumulator, self.eval(body))
        self.cost += 1
        return accumulator

    def loop_exists_one(self, elements: list[Any], variable: str, body: Node) -> Any:
        # No early exit: an error is carried to the end, and every element is still visited.
        found: Any = 0
        for element in elements:
            self.locals[variable] = element
            value = self.eval(body)
            if not isinstance(value, bool):
                found = found if isinstance(found, CelError) else _as_error(value)
            elif value:
                self.cost += 2  # @result + 1
                found = found + 1 if isinstance(found, int) else found
        self.cost += 2  # @result == 1
        return found if isinstance(found, CelError) else found == 1

    def loop_map(self, elements: list[Any], variable: str, body: Node) -> Any:
        result: Any = []
        for element in elements:
            self.locals[variable] = element
            value = self.eval(body)
            self.cost += 1 + LIST_CREATE_BASE_COST + 1  # @result + [f(x)]
            if isinstance(value, CelError) and not isinstance(result, CelError):
                result = value
            elif isinstance(result, list):
                result.append(value)
        self.cost += 1
        return result

    def loop_filter(self, elements: list[Any], variable: str, body: Node) -> Any:
        result: Any = []
        for element in elements:
            self.locals[variable] = element
            value = self.eval(body)
            if not isinstance(value, bool):
                result = result if isinstance(result, CelError) else _as_error(value)
            elif value:
                self.cost += 1 + LIST_CREATE_BASE_COST + 1 + 1  # @result + [x]
                if isinstance(result, list):
                    result.append(element)
        self.cost += 1
        return result


_EVALUATE: Mapping[str, Callable[[_Evaluator, Node], Any]] = {
    "literal": _Evaluator.literal,
    "ident": _Evaluator.ident,
    "cond": _Evaluator.cond,
    "or": _Evaluator.logical,
    "and": _Evaluator.logical,
    "unary": _Evaluator.unary,
    "binary": _Evaluator.binary,
    "select": _Evaluator.select,
    "has": _Evaluator.has,
    "index": _Evaluator.index,
    "list": _Evaluator.list_literal,
    "map": _Evaluator.map_literal,
    "call": _Evaluator.call,
    "method": _Evaluator.method,
    "macro": _Evaluator.macro,
}
_MACRO_LOOPS: Mapping[str, Callable[[_Evaluator, list[Any], str, Node], Any]] = {
    "all": _Evaluator.loop_all,
    "exists": _Evaluator.loop_exists,
    "exists_one": _Evaluator.loop_exists_one,
    "map": _Evaluator.loop_map,
    "filter": _Evaluator.loop_filter,
}


def _as_error(value: Any) -> CelError:
    return value if isinstance(value, CelError) else CelError("a logical operand that is not a bool")


def _and(left: Any, right: Any) -> Any:
    if left is False or right is False:
        return False
    if not isinstance(left, bool):
        return _as_error(left)
    return True if right is True else _as_error(right)


def _or(left: Any, right: Any) -> Any:
    if left is True or right is True:
        return True
    if not isinstance(left, bool):
        return _as_error(left)
    return False if right is False else _as_error(right)


def _length(value: Any) -> Any:
    return len(value) if isinstance(value, (str, bytes, list, Mapping)) else CelError("size of a scalar")


def _in(element: Any, container: Any) -> Any:
    if isinstance(element, CelError) or isinstance(container, CelError):
        return element if isinstance(element, CelError) else container
    if isinstance(container, list):
        return any(_equal(element, item) for item in container)
    if isinstance(container, Mapping):
        return element in container
    return CelError("in on something other than a list or map")


def _compare(operator: str, left: Any, right: Any) -> Any:
    numbers = ("int", "double")
    if not (_type_of(left) == _type_of(right) or (_type_of(left) in numbers and _type_of(right) in numbers)):
        return CelError(f"no such overload: {_type_of(left)} {operator} {_type_of(right)}")
    return {
        "relation_lt": left < right,
        "relation_le": left <= right,
        "relation_gt": left > right,
        "relation_ge": left >= right,
    }[operator]


def _arithmetic(operator: str, left: Any, right: Any) -> Any:
    if operator == "addition_add" and isinstance(left, list) and isinstance(right, list):
        return left + right
    if _type_of(left) != _type_of(right) or _type_of(left) not in ("int", "double"):
        return CelError(f"no such overload: {_type_of(left)} {operator} {_type_of(right)}")
    if operator == "addition_add":
        return left + right
    if operator == "addition_sub":
        return left - right
    if operator == "multiplication_mul":
        return left * right
    if right == 0:
        return CelError("division by zero")
    if operator == "multiplication_div":
        return int(left / right) if isinstance(left, int) else left / right
    return int(math.fmod(left, right)) if isinstance(left, int) else math.fmod(left, right)


def _matches(text: str, pattern: str) -> Any:
    import re2  # type: ignore[import-untyped]  # google-re2 ships no type information

    try:
        return re2.search(pattern, text) is not None
    except re2.error as error:
        return CelError(f"invalid pattern: {error}")


# --- expressions and policies ---------------------------------------------------------------


@dataclass(frozen=True)
class Evaluated:
    value: Any
    cost: int


def evaluate(expression: str, activation: Mapping[str, Any], *, optimize: bool = True) -> Evaluated:
    """The expression's value (a `CelError` for an error) and what cel-go charges for it."""
    evaluator = _Evaluator(activation, optimize=optimize)
    value = evaluator.eval(compile_expression(expression))
    return Evaluated(value, evaluator.cost)


@dataclass(frozen=True)
class Charge:
    """One program run: a matchCondition, a variable, a validation or a messageExpression."""

    what: str
    cost: int


@dataclass
class PolicyCost:
    """What one policy's evaluation of one object costs, program by program."""

    policy: str
    match_conditions: list[Charge] = field(default_factory=list)
    #: The validations with the variables they read, then the messageExpressions with theirs.
    evaluation: list[Charge] = field(default_factory=list)
    #: Whether the policy denies the object (a false validation, or an error under
    #: failurePolicy Fail), from the values computed here; limits aside.
    denied: bool = False

    @property
    def largest(self) -> Charge:
        return max([*self.match_conditions, *self.evaluation], key=lambda charge: charge.cost)

    @property
    def total(self) -> int:
        return sum(charge.cost for charge in self.evaluation)

    def problems(self) -> list[str]:
        """Each limit this evaluation exceeds: the API server would stop it, and deny."""
        found = [
            f"{self.policy}: {charge.what} costs {charge.cost:,}, over the per-expression limit {PER_CALL_LIMIT:,}"
            for charge in [*self.match_conditions, *self.evaluation]
            if charge.cost > PER_CALL_LIMIT
        ]
        conditions = sum(charge.cost for charge in self.match_conditions)
        if conditions > RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS:
            found.append(f"{self.policy}: its matchConditions cost {conditions:,}, over their budget")
        if self.total > RUNTIME_CEL_COST_BUDGET:
            found.append(f"{self.policy}: its evaluation costs {self.total:,}, over the policy budget")
        return found


def policy_cost(
    policy: Mapping[str, Any], obj: Mapping[str, Any], namespace: Mapping[str, Any] | None = None
) -> PolicyCost:
    """Evaluate a ValidatingAdmissionPolicy on a stored object (`emulate.stored_form`) as the
    API server does, counting each program: every matchCondition; then, if all hold, the
    validations in order, each variable charged where it is first read; then every
    messageExpression, with variables evaluated afresh."""
    spec = policy["spec"]
    result = PolicyCost(str(policy["metadata"]["name"]))
    base = {"object": obj, "oldObject": None, "params": None, "namespaceObject": namespace, "request": {}}
    # Every matchCondition is evaluated; one false skips the policy, else an error denies.
    outcomes = []
    for condition in spec.get("matchConditions", []):
        evaluated = evaluate(condition["expression"], base)
        result.match_conditions.append(Charge(f"matchCondition {condition['name']}", evaluated.cost))
        outcomes.append(evaluated.value)
    if any(outcome is False for outcome in outcomes):
        return result
    if any(outcome is not True for outcome in outcomes):
        result.denied = True
        return result
    declared = [(variable["name"], variable["expression"]) for variable in spec.get("variables", [])]
    passes = (
        ("validation", [validation["expression"] for validation in spec["validations"]]),
        ("messageExpression", [validation.get("messageExpression") for validation in spec["validations"]]),
    )
    charges = result.evaluation
    for label, expressions in passes:
        activation: dict[str, Any] = dict(base)

        def run_variable(name: str, expression: str, activation: dict[str, Any] = activation) -> Any:
            evaluated = evaluate(expression, activation)
            charges.append(Charge(f"variable {name}", evaluated.cost))
            return evaluated.value

        activation["variables"] = LazyVariables(declared, run_variable)
        for index, expression in enumerate(expressions):
            if expression is None:
                continue
            evaluated = evaluate(expression, activation)
            charges.append(Charge(f"{label} {index}", evaluated.cost))
            if label == "validation" and evaluated.value is not True:
                result.denied = True
    return result
