"""`dra-guard completion SHELL`: the scripts complete what the parser declares.

The bash script is loaded into a real `bash` and its completion function is called as bash
calls it on TAB (COMP_WORDS, COMP_CWORD, then the function `complete -p dra-guard` names), so
what is asserted is what a user sees.  The zsh and fish scripts are syntax-checked by their
shells where those are installed (the test says so when they are not).
"""

from __future__ import annotations

import argparse
import io
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from dra_guard.cli.completion import SHELLS, completion_script
from dra_guard.cli.main import build_parser, main
from dra_guard.present.report import FORMATS


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (commands,) = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    return dict(commands.choices)


def _long_options(parser: argparse.ArgumentParser) -> set[str]:
    return {
        option
        for action in parser._actions
        if action.help != argparse.SUPPRESS
        for option in action.option_strings
        if option.startswith("--")
    }


def complete(script: str, words: list[str], cwd: Path) -> list[str]:
    """What bash offers for the last of `words` (the word being completed, maybe empty)."""
    (cwd / ".completion.bash").write_text(script, encoding="utf-8")
    driver = (
        "source .completion.bash\n"
        # The function bash itself would call, as `complete -F` registered it.
        "function=$(complete -p dra-guard | sed -E 's/.* -F ([^ ]+) .*/\\1/')\n"
        f"COMP_WORDS=({' '.join(shlex.quote(word) for word in words)})\n"
        f"COMP_CWORD={len(words) - 1}\n"
        'COMP_LINE="${COMP_WORDS[*]}"\nCOMP_POINT=${#COMP_LINE}\n'
        '"$function" dra-guard "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"\n'
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    result = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", driver], cwd=cwd, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if line]


@pytest.fixture(scope="module")
def bash_script() -> str:
    return completion_script(build_parser(), "bash")


def test_the_command_prints_the_script_of_the_parser() -> None:
    out = io.StringIO()
    assert main(["completion", "bash"], stdout=out) == 0
    assert out.getvalue() == completion_script(build_parser(), "bash")
    assert "complete " in out.getvalue() and out.getvalue().endswith("\n")


def test_an_unknown_shell_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        main(["completion", "cmd.exe"])
    assert refused.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


@pytest.mark.e2e
def test_bash_completes_the_subcommands(bash_script: str, tmp_path: Path) -> None:
    offered = complete(bash_script, ["dra-guard", ""], tmp_path)
    assert sorted(offered) == sorted(_subparsers(build_parser()))
    assert {"check", "migrate", "completion"} <= set(offered)
    assert complete(bash_script, ["dra-guard", "mi"], tmp_path) == ["migrate"]


@pytest.mark.e2e
def test_bash_completes_the_options_of_check(bash_script: str, tmp_path: Path) -> None:
    offered = complete(bash_script, ["dra-guard", "check", "--"], tmp_path)
    assert set(offered) == _long_options(_subparsers(build_parser())["check"])
    assert {"--format", "--baseline", "--write-baseline", "--fail-on", "--exit-zero"} <= set(offered)
    assert complete(bash_script, ["dra-guard", "check", "--write-"], tmp_path) == ["--write-baseline"]
    # Another subcommand's options are its own.
    assert "--baseline" not in complete(bash_script, ["dra-guard", "migrate", "--"], tmp_path)


@pytest.mark.e2e
def test_bash_completes_choices(bash_script: str, tmp_path: Path) -> None:
    assert sorted(complete(bash_script, ["dra-guard", "check", "--format", ""], tmp_path)) == sorted(FORMATS)
    assert complete(bash_script, ["dra-guard", "check", "--fail-on", "n"], tmp_path) == ["never"]
    assert sorted(complete(bash_script, ["dra-guard", "completion", ""], tmp_path)) == sorted(SHELLS)


@pytest.mark.e2e
def test_bash_completes_files_and_folders(bash_script: str, tmp_path: Path) -> None:
    (tmp_path / "baseline.json").write_text("{}\n")
    (tmp_path / "k8s").mkdir()
    files = complete(bash_script, ["dra-guard", "check", "--baseline", ""], tmp_path)
    assert {"baseline.json", "k8s"} <= set(files)
    assert {"baseline.json", "k8s"} <= set(complete(bash_script, ["dra-guard", "check", "k8s", ""], tmp_path))
    assert complete(bash_script, ["dra-guard", "init", "cdk8s", "--dir", ""], tmp_path) == ["k8s"]


@pytest.mark.e2e
def test_what_is_added_to_the_parser_is_completed(tmp_path: Path) -> None:
    """The script is generated from the parser: an option or a subcommand added to it (as
    `check --jobs` or `merge` may be) is offered with no change to the completion module."""
    parser = build_parser()
    commands = _subparsers(parser)
    commands["check"].add_argument("--jobs-for-this-test", type=int)
    (action,) = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    # With its help: argparse lists a subcommand without one nowhere (`dra-guard --help`), and
    # shtab takes it for hidden.  test_bash_completes_the_subcommands fails on such a one.
    merged = action.add_parser("merge-for-this-test", help="merge reports")
    merged.add_argument("reports", nargs="+", metavar="FILE")
    script = completion_script(parser, "bash")
    assert "--jobs-for-this-test" in complete(script, ["dra-guard", "check", "--jobs"], tmp_path)
    assert complete(script, ["dra-guard", "merge-for"], tmp_path) == ["merge-for-this-test"]
    (tmp_path / "a.sarif").write_text("{}\n")
    assert "a.sarif" in complete(script, ["dra-guard", "merge-for-this-test", ""], tmp_path)


@pytest.mark.e2e
def test_the_zsh_script_is_valid_zsh(tmp_path: Path) -> None:
    script = completion_script(build_parser(), "zsh")
    assert script.startswith("#compdef dra-guard") and "--write-baseline" in script
    if shutil.which("zsh") is None:
        pytest.skip("zsh is not installed: its script is generated but not syntax-checked")
    (tmp_path / "_dra-guard").write_text(script, encoding="utf-8")
    result = subprocess.run(["zsh", "-n", str(tmp_path / "_dra-guard")], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.e2e
def test_fish_completes_from_its_script(tmp_path: Path) -> None:
    """fish parses the script and, asked as on TAB (`complete -C`), offers what the parser has."""
    script = completion_script(build_parser(), "fish")
    assert "complete -c dra-guard" in script
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed: its script is generated but neither parsed nor run")
    path = tmp_path / "dra-guard.fish"
    path.write_text(script, encoding="utf-8")
    parsed = subprocess.run(["fish", "--no-execute", str(path)], capture_output=True, text=True, check=False)
    assert parsed.returncode == 0, parsed.stdout + parsed.stderr

    def offered(line: str) -> set[str]:
        command = f"source {shlex.quote(str(path))}; complete -C {shlex.quote(line)}"
        result = subprocess.run(["fish", "--no-config", "-c", command], capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stderr
        return {candidate.split("\t", 1)[0] for candidate in result.stdout.splitlines()}

    parser = build_parser()
    assert offered("dra-guard ") == set(_subparsers(parser))
    assert offered("dra-guard check --") == _long_options(_subparsers(parser)["check"])
    assert offered("dra-guard check --format ") == set(FORMATS)
