"""The `dra-guard` command: check, rules, explain.

Exit codes: 0 clean; 1 findings at or above --fail-on; 2 usage errors or unreadable input.
Heavy modules (the rules' CEL parser) load only when a command needs them.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from dra_guard import __version__

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2


def build_parser() -> argparse.ArgumentParser:
    # argparse exits 2 on usage errors, which is already our contract.
    parser = argparse.ArgumentParser(
        prog="dra-guard",
        description="Author and check isolated sliced-accelerator workloads on Kubernetes DRA.",
    )
    parser.add_argument("--version", action="version", version=f"dra-guard {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = commands.add_parser(
        "check",
        help="check manifests against the rules",
        description="Check Kubernetes manifests (files, directories, globs, or - for stdin).",
    )
    check.add_argument(
        "paths", nargs="*", default=["."], metavar="PATH", help="files, directories, globs, or - (default: .)"
    )
    check.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    check.add_argument(
        "--fail-on",
        choices=("critical", "high", "medium", "low"),
        default="medium",
        help="exit 1 when a finding is at or above this severity (default: medium)",
    )
    check.add_argument(
        "--config", metavar="FILE", help="a .dra-guard.yaml or pyproject.toml (default: discovered in .)"
    )
    check.add_argument("--output", "-o", metavar="FILE", help="write the report here instead of stdout")

    commands.add_parser("rules", help="list the rules")
    explain = commands.add_parser("explain", help="explain one rule")
    explain.add_argument("rule", metavar="DRA0NN")
    return parser


def _write(text: str, output: str | None, stdout: TextIO) -> None:
    if output is None:
        stdout.write(text)
        return
    with open(output, "w", encoding="utf-8") as handle:
        handle.write(text)


def run_check(arguments: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from dra_guard.config import ConfigError, discover_config, load_config_file
    from dra_guard.engine import check_documents
    from dra_guard.findings import Severity
    from dra_guard.loader import load_paths
    from dra_guard.report import FORMATS

    try:
        config = load_config_file(arguments.config) if arguments.config else discover_config(".")
        config = config.with_hmac_key_from(os.environ)
    except ConfigError as error:
        stderr.write(f"dra-guard: {error}\n")
        return EXIT_ERROR
    loaded = load_paths(arguments.paths)
    report = check_documents(loaded.documents, config)
    report.errors = loaded.errors + report.errors
    report.files = loaded.files
    try:
        _write(FORMATS[arguments.format](report), arguments.output, stdout)
    except OSError as write_error:
        stderr.write(f"dra-guard: cannot write {arguments.output}: {write_error.strerror or write_error}\n")
        return EXIT_ERROR
    if arguments.output is not None or arguments.format != "text":
        # Machine formats go to stdout or a file; people still need to see input errors.
        for input_error in report.errors:
            stderr.write(f"{input_error}\n")
    if report.errors:
        return EXIT_ERROR
    threshold = Severity.parse(arguments.fail_on)
    return EXIT_FINDINGS if any(finding.severity >= threshold for finding in report.findings) else EXIT_CLEAN


def run_rules(stdout: TextIO) -> int:
    from dra_guard.rules import RULES

    width = max(len(rule.name) for rule in RULES.values())
    for rule in RULES.values():
        stdout.write(f"{rule.id}  {rule.name:<{width}}  {rule.severity.label:<8}  {rule.summary}\n")
    return EXIT_CLEAN


def run_explain(rule_id: str, stdout: TextIO, stderr: TextIO) -> int:
    from dra_guard.rules import RULES

    rule = RULES.get(rule_id.upper()) or next((r for r in RULES.values() if r.name == rule_id), None)
    if rule is None:
        stderr.write(f"dra-guard: no rule {rule_id!r}; `dra-guard rules` lists them\n")
        return EXIT_ERROR
    stdout.write(
        f"{rule.id} {rule.name} ({rule.severity.label})\n\n{rule.summary}\n\nWhy: {rule.rationale}\n\n"
        f"Fix: {rule.remediation}\n\nWaive on one object (not for non-waivable rules) with the annotation\n"
        f'  dra-guard.io/ignore-{rule.id}: "<reason>"\n'
    )
    return EXIT_CLEAN


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    parser = build_parser()
    arguments = parser.parse_args(argv)
    if arguments.command == "check":
        return run_check(arguments, stdout, stderr)
    if arguments.command == "rules":
        return run_rules(stdout)
    if arguments.command == "explain":
        return run_explain(arguments.rule, stdout, stderr)
    parser.print_help(stdout)
    return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover - `python -m dra_guard.cli`
    sys.exit(main())
