"""Mutated real manifests, for holding the fast reader to the PyYAML reader.

The seeds are the ASCII documents of the corpus, the fixtures, the examples and the
benchmark's realistic mix; a mutant is a seed with one to three edits of the kinds an
adversarial run found the fast reader's gaps with (README "The fast reader"): characters
of YAML's syntax put in, taken out or replaced; a line duplicated, dropped, swapped with the
next, moved left or right, joined to the next or split; a value wrapped in quotes or
brackets; a `- ` item rewritten in flow style over lines; more text after a line's closing
quote or bracket.  `tests/test_yaml_fuzz.py` reads a fixed sample; `tools/fuzz_readers.py`
reads them for as long as it is asked to, with the yaml-test-suite's inputs as seeds too
(`suite_seeds`).
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Iterator
from pathlib import Path

from testkit.paths import REPO_ROOT

_FOLDERS = ("tests/corpus", "tests/fixtures", "examples")
_TOKENS = (" ", "\n", "  ", "- ", ": ", "-", ":", ",", "[", "]", "{", "}", "'", '"', "|", ">", "|-", "#", " #")
_TOKENS += ("?", "...", "---", "a", "1", "0x1", "true", "~", "\n  ", "\n    ", "\n- ")
_TAILS = (" - z", " -", " k: v", " - - z", " ? z", " # c", " :", " ,", " ]", " x")


def _documents(text: str) -> Iterator[str]:
    for document in text.split("\n---\n"):
        if document.strip() and document.isascii() and "\t" not in document and "\r" not in document:
            yield document if document.endswith("\n") else document + "\n"


def seeds(benchmark_documents: int = 600) -> list[str]:
    """The seed documents, in a stable order."""
    found: list[str] = []
    for folder in _FOLDERS:
        for path in sorted((REPO_ROOT / folder).rglob("*.yaml")):
            found.extend(_documents(path.read_text(encoding="utf-8", errors="replace")))
    from bench.corpus import write_realistic

    with tempfile.TemporaryDirectory() as scratch:
        write_realistic(Path(scratch), benchmark_documents)
        for path in sorted(Path(scratch).glob("*.yaml")):
            found.extend(_documents(path.read_text(encoding="utf-8")))
    return found


def suite_seeds() -> list[str]:
    """The yaml-test-suite's inputs (tests/fixtures/yaml-test-suite) as seeds, each alone and
    as the value of a ConfigMap key (`tests/test_yaml_test_suite.wrapped`): every corner of
    YAML's syntax, where the manifests hold few."""
    from tests.test_yaml_test_suite import inputs, wrapped

    found: list[str] = []
    for path in inputs():
        text = path.read_bytes()
        for variant in (text, wrapped(text)):
            found.extend(_documents(variant.decode("utf-8", errors="replace")))
    return found


def _edit_characters(rng: random.Random, text: str) -> str:
    where = rng.randrange(len(text) + 1)
    roll = rng.random()
    if roll < 0.4:
        return text[:where] + rng.choice(_TOKENS) + text[where:]
    if roll < 0.7:
        return text[:where] + text[where + rng.randint(1, 3) :]
    return text[:where] + rng.choice(_TOKENS) + text[where + 1 :]


def _edit_lines(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    where = rng.randrange(len(lines))
    line = lines[where]
    roll = rng.randrange(7)
    if roll == 0:
        lines.insert(where, line)
    elif roll == 1:
        del lines[where]
    elif roll == 2 and where + 1 < len(lines):
        lines[where], lines[where + 1] = lines[where + 1], lines[where]
    elif roll == 3:
        lines[where] = " " * rng.randint(1, 4) + line
    elif roll == 4:
        lines[where] = line[min(rng.randint(1, 4), len(line) - len(line.lstrip(" "))) :]
    elif roll == 5 and where + 1 < len(lines):
        lines[where : where + 2] = [line + " " + lines[where + 1].lstrip(" ")]
    elif " " in line.strip():
        cut = line.index(" ", len(line) - len(line.lstrip(" ")))
        lines[where : where + 1] = [line[:cut], " " * rng.randint(0, 6) + line[cut + 1 :]]
    return "\n".join(lines)


def _edit_values(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    where = rng.randrange(len(lines))
    line = lines[where]
    roll = rng.randrange(3)
    if roll == 0 and ": " in line:  # a value wrapped in quotes or brackets
        key, value = line.split(": ", 1)
        opener, closer = rng.choice((("'", "'"), ('"', '"'), ("[", "]"), ("{a: ", "}")))
        lines[where] = f"{key}: {opener}{value}{closer}"
    elif roll == 1 and line.lstrip(" ").startswith("- ") and ": " in line:  # an item in flow style over lines
        indent = len(line) - len(line.lstrip(" "))
        key, value = line.lstrip(" ")[2:].split(": ", 1)
        lines[where : where + 1] = [" " * indent + "- {" + key + ":", " " * (indent + 4) + value + "}"]
    else:  # more after the line's end
        lines[where] = line + rng.choice(_TAILS)
    return "\n".join(lines)


_EDITS = (_edit_characters, _edit_characters, _edit_lines, _edit_values)


def mutant(rng: random.Random, seed: str) -> str:
    """`seed` with one to three edits."""
    text = seed
    for _ in range(rng.choice((1, 1, 2, 3))):
        text = rng.choice(_EDITS)(rng, text)
    return text
