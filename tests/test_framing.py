"""framing.py's separator search: the literal-first search finds exactly the lines the
one pattern (`^---` in multi-line mode) finds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dra_guard.kubectl_yaml import framing
from tests.manifest_strategies import manifest_file

# Lines and line fragments where `---` stands at a line start, inside a line, twice on a
# line, on consecutive lines, and at the start and end of the text.
_PIECES = st.sampled_from(
    ["---", "----", "--- #x", "--- a", " ---", "a---", "a ---b", "-", "--", "#", " ", "x: 1", "\n"]
)


def _spans(matches: object) -> list[tuple[int, int, str]]:
    return [(match.start(), match.end(), match.group(1)) for match in matches]  # type: ignore[attr-defined]


@settings(max_examples=2000, deadline=None)
@given(st.lists(_PIECES, max_size=12).map("".join))
def test_separator_lines_are_the_patterns(text: str) -> None:
    expected = _spans(framing._SEPARATOR_LINE.finditer(text))
    assert _spans(framing._separator_lines(text)) == expected


@settings(max_examples=300, deadline=None)
@given(manifest_file())
def test_separator_lines_of_manifests_are_the_patterns(data: bytes) -> None:
    text = framing.kubectl_lines(data.decode("utf-8", "replace"))
    assert _spans(framing._separator_lines(text)) == _spans(framing._SEPARATOR_LINE.finditer(text))


def test_the_search_sees_separators_next_to_each_other() -> None:
    text = "---\n---\na ---\n----\n--- #c\n"
    assert [match.start() for match in framing._separator_lines(text)] == [0, 4, 14, 19]
