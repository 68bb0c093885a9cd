"""Colour in the text report: only on a terminal, never into a file or a pipe; NO_COLOR
turns it off, FORCE_COLOR and `--color always` on, `--color never` off; and the coloured
text, its ANSI codes taken out, is the plain text byte for byte."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from dra_guard.cli.main import main
from testkit.paths import REPO_ROOT

CORPUS = REPO_ROOT / "tests" / "corpus"  # findings at every severity
ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Terminal(io.StringIO):
    """A stdout that says whether it is a terminal."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.fixture(autouse=True)
def _no_colour_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    # The runner's own environment (a CI that sets FORCE_COLOR) must not decide.
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("input") / "broken.yaml"
    path.write_text("kind: [unclosed\n", encoding="utf-8")
    return path


def check(*arguments: str | Path, tty: bool) -> tuple[int, str, str]:
    stdout, stderr = Terminal(tty), io.StringIO()
    code = main(["check", *map(str, arguments)], stdout, stderr)
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.fixture(scope="module")
def plain(broken: Path) -> str:
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("NO_COLOR", raising=False)
        patch.delenv("FORCE_COLOR", raising=False)
        _, text, _ = check(CORPUS, broken, tty=False)
    assert "[low]" in text and "[critical]" in text and ": error: " in text
    return text


def test_a_terminal_gets_colour_and_stripped_it_is_the_plain_text(plain: str, broken: Path) -> None:
    code, text, _ = check(CORPUS, broken, tty=True)
    assert code == 2  # the broken file: an input error, as without colour
    assert text != plain
    assert ANSI.sub("", text) == plain
    assert "[\x1b[1;31mcritical\x1b[0m]" in text
    assert "[\x1b[31mhigh\x1b[0m]" in text
    assert "[\x1b[33mmedium\x1b[0m]" in text
    assert "[\x1b[36mlow\x1b[0m]" in text
    assert re.search(r": \x1b\[1mDRA\d{3}\x1b\[0m \[", text)
    assert ": \x1b[31merror\x1b[0m: " in text
    # Links and the summary stay plain: what a reader copies out carries no codes.
    assert all(not ANSI.search(line) for line in text.splitlines() if line.startswith("  see "))
    assert not ANSI.search(text.splitlines()[-1])


def test_a_pipe_or_a_file_like_stdout_gets_none(plain: str, broken: Path) -> None:
    assert check(CORPUS, broken, tty=False)[1] == plain
    assert check(CORPUS, broken, "--color", "auto", tty=False)[1] == plain


@pytest.mark.parametrize("value", ["1", "true", "0"])  # any value but the empty one
def test_no_color_turns_it_off(plain: str, broken: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("NO_COLOR", value)
    assert check(CORPUS, broken, tty=True)[1] == plain
    monkeypatch.setenv("FORCE_COLOR", "1")  # NO_COLOR wins over FORCE_COLOR
    assert check(CORPUS, broken, tty=True)[1] == plain


def test_an_empty_no_color_is_unset(broken: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "")
    assert ANSI.search(check(CORPUS, broken, tty=True)[1])


def test_force_color_colours_a_pipe(plain: str, broken: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    text = check(CORPUS, broken, tty=False)[1]
    assert ANSI.search(text) and ANSI.sub("", text) == plain
    monkeypatch.setenv("FORCE_COLOR", "")
    assert check(CORPUS, broken, tty=False)[1] == plain


def test_the_flag_wins_over_the_terminal_and_the_environment(
    plain: str, broken: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    always = check(CORPUS, broken, "--color", "always", tty=False)[1]
    assert ANSI.search(always) and ANSI.sub("", always) == plain
    assert check(CORPUS, broken, "--color", "never", tty=True)[1] == plain
    monkeypatch.setenv("NO_COLOR", "1")
    assert check(CORPUS, broken, "--color", "always", tty=True)[1] == always
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert check(CORPUS, broken, "--color", "never", tty=True)[1] == plain


@pytest.mark.parametrize("color", ["auto", "always"])
def test_an_output_file_is_never_coloured(
    plain: str, broken: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, color: str
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    report = tmp_path / "report.txt"
    code, stdout, _ = check(CORPUS, broken, "--color", color, "-o", report, tty=True)
    assert code == 2 and stdout == ""
    assert report.read_text(encoding="utf-8") == plain


@pytest.mark.parametrize("output_format", ["json", "sarif", "github"])
def test_machine_formats_are_never_coloured(broken: Path, output_format: str) -> None:
    coloured = check(CORPUS, broken, "--format", output_format, "--color", "always", tty=True)[1]
    assert coloured == check(CORPUS, broken, "--format", output_format, tty=False)[1]
    assert not ANSI.search(coloured)
