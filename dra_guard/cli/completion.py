"""`dra-guard completion SHELL`: a shell completion script, generated from the command line's
own parser by shtab, so every subcommand, option and choice added to the parser is completed
without anything here changing.

shtab is imported only by this command: a check's cold start never pays for it.
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

#: The shells whose scripts tests/test_completion.py runs (bash) or syntax-checks (zsh, fish).
SHELLS = ("bash", "zsh", "fish")

#: Arguments named by these metavars complete file names, or folder names; everything else
#: completes its choices, or nothing.  A new option declared with `metavar="FILE"` is
#: completed as a file with no change here.
FILE_METAVARS = frozenset({"FILE", "PATH", "OUT", "FACTS"})
DIRECTORY_METAVARS = frozenset({"DIR"})


def add_completion_parser(commands: Any) -> None:
    completion = commands.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh, fish)",
        description="Print dra-guard's completion script for SHELL; the README's Installing section says where "
        "each shell reads it from.",
    )
    completion.add_argument("shell", choices=SHELLS, metavar="SHELL", help=", ".join(SHELLS))


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of `parser` for `shell`."""
    import shtab

    for action in _actions(parser):
        name = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
        if name in FILE_METAVARS:
            action.complete = shtab.FILE  # type: ignore[attr-defined]  # shtab reads this attribute
        elif name in DIRECTORY_METAVARS:
            action.complete = shtab.DIRECTORY  # type: ignore[attr-defined]
    script: str = shtab.complete(parser, shell)
    return script if script.endswith("\n") else script + "\n"


def _actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """Every argument of `parser` and of its subcommands, each once."""
    found: list[argparse.Action] = []
    for action in parser._actions:
        found.append(action)
        if isinstance(action, argparse._SubParsersAction):
            for subparser in dict.fromkeys(action.choices.values()):  # aliases map to one parser
                found.extend(_actions(subparser))
    return found


def run_completion(parser: argparse.ArgumentParser, shell: str, stdout: TextIO) -> int:
    stdout.write(completion_script(parser, shell))
    return 0
