"""The regex fast path of DRA002's selector analysis agrees with cel-python's parser.

The fast path only answers for `term && term ...` with escape-free literals; for anything
it recognises, the parse-tree analysis must give exactly the same pins.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dra_guard.model.selectors import _fast_analyse, _parse_and_analyse

IDENTIFIERS = st.sampled_from(["profile", "productName", "tpuGen", "model", "in", "true", "x_1", "_a", "1bad"])
DOMAINS = st.sampled_from(["gpu.nvidia.com", "tpu.google.com", "d", "a b", "x&&y", "it's"])
VALUES = st.text(alphabet=st.sampled_from(list("abc1g.+-_ '\"&|\\")), max_size=8)
SPACES = st.sampled_from(["", " ", "  ", "\n"])
QUOTES = st.sampled_from(["'", '"'])


@st.composite
def literal(draw: st.DrawFn, text: st.SearchStrategy[str]) -> str:
    quote = draw(QUOTES)
    return quote + draw(text) + quote


GUARD_TERMS = st.sampled_from(
    [
        "device.allowMultipleAllocations == false",
        "device.allowMultipleAllocations==false",
        " device.allowMultipleAllocations == false ",
        "false == device.allowMultipleAllocations",
        "device.allowMultipleAllocations == true",
        "device.allowMultipleAllocations != false",
        "device.allowMultipleAllocations == falsey",
        "device.allowMultipleAllocation == false",
    ]
)


@st.composite
def term(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 4)) == 0:
        return draw(GUARD_TERMS)
    space = draw(SPACES)
    if draw(st.booleans()):
        left = f"device.attributes[{draw(literal(DOMAINS))}].{draw(IDENTIFIERS)}"
    else:
        left = "device.driver"
    right = draw(literal(VALUES))
    operator = draw(st.sampled_from(["==", "==", "==", "!=", "="]))
    return (
        f"{space}{left}{space}{operator}{space}{right}{space}" if draw(st.booleans()) else f"{right} {operator} {left}"
    )


@st.composite
def expression(draw: st.DrawFn) -> str:
    terms = draw(st.lists(term(), min_size=1, max_size=4))
    joiners = [draw(st.sampled_from(["&&", " && ", "||", "&& true &&"])) for _ in terms[1:]]
    text = terms[0]
    for joiner, next_term in zip(joiners, terms[1:], strict=True):
        text += joiner + next_term
    return text


@settings(max_examples=500, deadline=None)
@given(expression())
def test_fast_path_agrees_with_the_parser(text: str) -> None:
    fast = _fast_analyse(text)
    if fast is not None:
        assert fast == _parse_and_analyse(text), text


SAFE_VALUES = st.text(alphabet=st.sampled_from(list("abc1g.+-_ &|()!?:")), max_size=10)
SAFE_DOMAINS = st.sampled_from(["gpu.nvidia.com", "tpu.google.com", "d", "a b", "x&&y", "x || y"])
SAFE_IDENTIFIERS = st.sampled_from(["profile", "productName", "tpuGen", "model", "x_1", "_a"])


@st.composite
def well_formed_term(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 4)) == 0:
        space = draw(SPACES)
        return f"{space}device.allowMultipleAllocations{space}=={space}false{space}"
    quote = draw(QUOTES)
    value = f"{quote}{draw(SAFE_VALUES)}{quote}"
    if draw(st.booleans()):
        left = f"device.attributes[{quote}{draw(SAFE_DOMAINS)}{quote}].{draw(SAFE_IDENTIFIERS)}"
    else:
        left = "device.driver"
    space = draw(SPACES)
    return f"{space}{left}{space}=={space}{value}{space}"


@settings(max_examples=300, deadline=None)
@given(st.lists(well_formed_term(), min_size=1, max_size=5))
def test_fast_path_answers_every_well_formed_conjunction_and_agrees(terms: list[str]) -> None:
    text = "&&".join(terms)
    fast = _fast_analyse(text)
    assert fast is not None, text
    assert fast == _parse_and_analyse(text), text


def test_fast_path_answers_the_shape_our_builders_emit() -> None:
    from dra_guard import AcceleratorSlice, selector_expression

    for accelerator in (AcceleratorSlice.nvidia_mig("1g.10gb"), AcceleratorSlice.nvidia_gpu("NVIDIA H100 80GB HBM3")):
        assert _fast_analyse(selector_expression(accelerator)) is not None
        guarded = _fast_analyse(selector_expression(accelerator, exclusivity_guard=True))
        assert guarded is not None and guarded.exclusivity_guard and len(guarded.pins) == 1
