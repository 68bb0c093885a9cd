"""The `dra-guard` command: check, rules, explain, init, migrate.

Exit codes: 0 clean; 1 findings at or above --fail-on (not waived, not in the --baseline);
2 usage errors or unreadable input (--exit-zero and --fail-on never included).
Heavy modules (the rules' CEL parser) load only when a command needs them.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import gc
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from dra_guard import __version__
from dra_guard.cli.admission import add_admission_policy_parser, add_webhook_parser
from dra_guard.cli.completion import add_completion_parser
from dra_guard.cli.scrub import add_scrub_parser
from dra_guard.contract.errors import UnavailableParser
from dra_guard.present.report import FORMATS
from dra_guard.ruleapi.declarations import RuleModuleError

if TYPE_CHECKING:
    from dra_guard.contract.findings import BaselineEntry, Finding, Report
    from dra_guard.distribute.shards import Shard
    from dra_guard.read.inputs import Inputs
    from dra_guard.read.walk import Selection
    from dra_guard.ruleapi.config import Config

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2
#: Ctrl-C, as shells report a command SIGINT stopped (128 + 2).
EXIT_INTERRUPTED = 130


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, with the terminal's width found as `shutil` finds it but
    without importing `shutil` (and the compression modules it imports): argparse makes
    a formatter for every argument it adds, and that import was 3 % of a cold start."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None):
        super().__init__(prog, indent_increment, max_help_position, _terminal_columns() - 2 if width is None else width)


def _terminal_columns() -> int:
    with contextlib.suppress(ValueError):
        columns = int(os.environ.get("COLUMNS", "0"))
        if columns > 0:
            return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


class _ArgumentParser(argparse.ArgumentParser):
    """A parser whose help (and its subcommands') is formatted by `_HelpFormatter`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


def _add_report_options(parser: argparse.ArgumentParser) -> None:
    """What `check` and `merge` share: the report, its exit status, baselines, the configuration.
    --format and --color default to None, read as text and auto (`_conclude`), so that a
    shard can tell an option given from one left out and refuse it (`_shard`)."""
    parser.add_argument("--format", choices=FORMATS, default=None, help="the report's format (default: text)")
    parser.add_argument(
        "--fail-on",
        choices=("critical", "high", "medium", "low", "never"),
        default=None,
        help="exit 1 when a finding (not waived, not baselined) is at or above this severity; never: report "
        "only (default: the configuration's fail-on, else medium)",
    )
    parser.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 whatever the findings, as --fail-on never (input and usage errors still exit 2)",
    )
    parser.add_argument(
        "--fail-on-empty",
        action="store_true",
        help="exit 2 when no Kubernetes object was checked: no file read, or only files that hold none (empty, "
        "comments only, an empty List: an empty `helm template` output)",
    )
    parser.add_argument(
        "--fail-on-unchecked",
        action="store_true",
        help="exit 2 when a Helm chart or a kustomization could not be rendered and checked (in full)",
    )
    parser.add_argument(
        "--baseline",
        metavar="FILE",
        help="fail only on findings this baseline does not record; report those it does as baselined",
    )
    parser.add_argument(
        "--write-baseline",
        metavar="FILE",
        help="record today's findings in FILE (replaced), for --baseline; exit 0 unless input is unreadable",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="a .dra-guard.yaml or pyproject.toml (default: the nearest one from the first PATH, or the working "
        "directory for merge, up to the repository root)",
    )
    parser.add_argument(
        "--output", "-o", metavar="FILE", help="write the report here instead of stdout (never one of the inputs)"
    )
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default=None,
        help="colour the text report: auto (default) when stdout is a terminal, unless NO_COLOR is set "
        "(FORCE_COLOR forces it); never into an -o file",
    )
    parser.add_argument(
        "--slices",
        action="append",
        default=[],
        metavar="FILE",
        help="the cluster's ResourceSlices (`kubectl get resourceslices -o yaml > FILE`): report claims no "
        "node can allocate and pins that match several profiles (repeatable; adds to resource-slices)",
    )


#: The most processes `--jobs` starts: more than any machine's cores, fewer than a pids limit.
MAX_JOBS = 1024


def _jobs(text: str) -> int:
    jobs = int(text) if text.isascii() and text.isdigit() else 0
    if not 1 <= jobs <= MAX_JOBS:
        raise argparse.ArgumentTypeError(f"must be a whole number of processes from 1 to {MAX_JOBS:,} (got {text!r})")
    return jobs


#: The subcommands, as `build_parser` adds them.
COMMANDS = (
    "check",
    "merge",
    "rules",
    "explain",
    "init",
    "admission-policy",
    "webhook",
    "scrub",
    "migrate",
    "completion",
)


def requested_command(argv: Sequence[str]) -> str | None:
    """The subcommand a command line runs, when `build_parser` may add it alone: a run
    reads one subcommand's arguments, and building the other nine (about a hundred
    arguments, a formatter each) was a few per cent of a cold start.  None where the whole
    parser is wanted: top-level options or help, an unknown name (its error lists every
    subcommand), and `completion`, which writes the scripts of them all."""
    first = argv[0] if argv else None
    return first if first in COMMANDS and first != "completion" else None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `dra-guard` parser: every subcommand, or `command` alone (`requested_command`)."""

    def wanted(name: str) -> bool:
        return command is None or command == name

    # argparse exits 2 on usage errors, which is already our contract.
    parser = _ArgumentParser(
        prog="dra-guard",
        description="Author and check isolated sliced-accelerator workloads on Kubernetes DRA.",
    )
    parser.add_argument("--version", action="version", version=f"dra-guard {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_ArgumentParser)
    if wanted("check"):
        _add_check_parser(commands)
    if wanted("merge"):
        merge = commands.add_parser(
            "merge",
            help="one report from the facts files of `check --shard I/N` (every shard of one check)",
            description="Merge the facts files `dra-guard check --shard I/N --facts-out FILE` wrote, one per "
            "shard, into the report one `check` of everything would write.",
        )
        merge.add_argument("facts", nargs="+", metavar="FACTS", help="every shard's facts file")
        _add_report_options(merge)
    if wanted("rules"):
        rules = commands.add_parser("rules", help="list the rules")
        rules.add_argument(
            "--format", choices=("text", "markdown"), default="text", help="markdown is docs/rules.md (`make docs`)"
        )
    if wanted("explain"):
        explain = commands.add_parser("explain", help="explain one rule: its options, waivability and examples")
        explain.add_argument(
            "rule", metavar="RULE", help="a rule ID (any case) or name, as `dra-guard rules` lists them"
        )
    if wanted("init"):
        _add_init_parser(commands)
    if wanted("admission-policy"):
        add_admission_policy_parser(commands)
    if wanted("webhook"):
        add_webhook_parser(commands)
    if wanted("scrub"):
        add_scrub_parser(commands)
    if wanted("migrate"):
        from dra_guard.cli.migrate_arguments import add_arguments

        migrate = commands.add_parser(
            "migrate",
            help="rewrite device-plugin requests (nvidia.com/gpu, ...) as DRA claim templates",
            description="Rewrite device-plugin requests as compliant DRA claim templates and wired pods. "
            "Inputs are only changed with --in-place; exit 2 when anything could not be migrated.",
        )
        add_arguments(migrate)
    if wanted("completion"):
        add_completion_parser(commands)
    return parser


def _add_check_parser(commands: Any) -> None:
    check = commands.add_parser(
        "check",
        help="check manifests against the rules",
        description="Check Kubernetes manifests (files, directories, globs, or - for stdin).",
    )
    # No default here: run_check tells "no path named" (the working folder, and a note when
    # something is piped in unread) from `.` named.
    check.add_argument(
        "paths", nargs="*", default=[], metavar="PATH", help="files, directories, globs, or - (default: .)"
    )
    _add_report_options(check)
    check.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="leave paths matching this .gitignore-style pattern out of directory walks (repeatable; adds to "
        "the configuration's exclude)",
    )
    check.add_argument(
        "--jobs",
        "-j",
        type=_jobs,
        default=None,
        metavar="N",
        help="read and check files in N processes, at most 1,024 (default: the cores available; 1: this "
        "process only); the report is the same whatever N",
    )
    check.add_argument(
        "--shard",
        metavar="I/N",
        help="check only the I-th of N shares of the files and write them to --facts-out, for `dra-guard merge` "
        "(a CI matrix: every shard runs on the same checkout and command line)",
    )
    check.add_argument(
        "--facts-out",
        metavar="FILE",
        help="with --shard: where this shard's facts go (its findings, unresolved); no report is written",
    )
    check.add_argument("--no-ignore", action="store_true", help="do not honour .gitignore files in walks")
    check.add_argument(
        "--skip-non-manifests",
        action="store_true",
        help="treat files named on the command line like files a walk finds: skip (and count) those that "
        "are not Kubernetes manifests (for pre-commit)",
    )


def _add_init_parser(commands: Any) -> None:
    # Imported here: a check has no use for the scaffolding module.
    from dra_guard.cli.init import TARGETS

    init = commands.add_parser(
        "init",
        help="wire dra-guard into a project (cdk8s plugin, Pulumi policy pack, config, pre-commit, CI)",
        description="Write only what is asked for; existing files are never overwritten.",
    )
    init.add_argument("targets", nargs="+", choices=TARGETS, metavar="TARGET", help=", ".join(TARGETS))
    init.add_argument("--dir", default=".", help="the project directory (default: .)")
    init.add_argument("--repo", help="pre-commit: this repository's URL, to install the hook from it")
    init.add_argument("--rev", help="pre-commit: the tag or commit of --repo")
    init.add_argument(
        "--install",
        metavar="REQUIREMENT",
        help="ci: the pip requirement that installs dra-guard; pulumi: the one requirements.txt names "
        "(default: dra-guard[pulumi]==<this version>)",
    )
    init.add_argument(
        "--virtualenv",
        metavar="DIR",
        help="pulumi: the virtualenv the pack runs in (default: the running one if it lies in the project, "
        "else <dir>/.venv); written relative to the pack",
    )
    init.add_argument(
        "--annotations",
        action="store_true",
        help="ci: show findings as workflow annotations (--format github), for repositories without code scanning",
    )


def printable(text: str) -> str:
    """`text` with what UTF-8 cannot encode (lone surrogates from a JSON string or a file
    name of another locale) as escapes, so that no report fails to be written."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


class _Printable:
    """Writes to `stream`, escaping what UTF-8 cannot encode (see `printable`)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(printable(text))


def _write(write: Callable[[Any], None], output: str | None, stdout: TextIO | None, *, binary: bool = False) -> None:
    """Stream a report to stdout or to `output`, piece by piece (a large report is never
    one string); `binary`: `write` writes bytes, to `output` only."""
    if output is None:
        assert stdout is not None and not binary
        write(_Printable(stdout))
        return
    from dra_guard.cli.safe_write import OutsideRoot, confined, rename_target

    if os.path.exists(output) and not os.path.isfile(output):
        # /dev/null, a FIFO, a terminal: nothing to replace, and no folder to write beside.
        # Written through, so never where a name planted in the working folder leads out
        # of it (`dra-guard.sarif -> /dev/sda`).
        try:
            confined(output, os.path.realpath(output))
        except OutsideRoot as error:
            raise OSError(errno.EPERM, f"{error}; refusing to write outside it") from None
        if binary:
            with open(output, "wb") as raw:
                write(raw)
        else:
            with open(output, "w", encoding="utf-8") as stream:
                write(_Printable(stream))
        return
    # Atomically: a reader of the file (CI uploading SARIF) sees the whole report or the
    # previous file, never half of one, whatever happens to this process.
    import tempfile  # only here: it costs start-up time every run would pay

    try:
        # The real folder: the temporary and the rename land in the same one, and a
        # symlinked folder planted in the working folder (`reports -> /etc`) leads no
        # report out of it.
        output = rename_target(output)
    except OutsideRoot as error:
        raise OSError(errno.EPERM, f"{error}; refusing to write outside it") from None
    directory = os.path.dirname(output)
    handle, temporary = tempfile.mkstemp(prefix=".dra-guard-", suffix=".tmp", dir=directory)
    try:
        if binary:
            with os.fdopen(handle, "wb") as raw:
                write(raw)
        else:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                write(_Printable(stream))
        if os.path.exists(output):
            os.chmod(temporary, os.stat(output).st_mode & 0o777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, output)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def color_wanted(mode: str, output: str | None, stream: TextIO, environ: Mapping[str, str]) -> bool:
    """Whether the text report is coloured: never into a file (`-o`); `--color always` or
    `never` as it says; else not with NO_COLOR (https://no-color.org), yes with FORCE_COLOR
    (each when set and not empty), else when `stream` is a terminal."""
    if output is not None or mode == "never":
        return False
    if mode == "always":
        return True
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR"):
        return True
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):  # a closed or stream-like object
        return False


def _first_path(paths: Sequence[str]) -> str:
    """Where configuration discovery starts: the first path (the working directory for stdin)."""
    first = paths[0] if paths else "."
    return "." if first == "-" else first


#: The day waivers' expiry dates are compared with, YYYY-MM-DD (unset: today, UTC), for
#: tests and for replaying a past check.
TODAY_ENV = "DRA_GUARD_TODAY"


def _check_config(arguments: argparse.Namespace, start: str, stderr: TextIO) -> tuple[Config, str | None] | int:
    """The configuration of a check (or a merge): `--config` or the one found from `start`,
    with DRA_GUARD_TODAY and `--slices`, and its file; or the exit status of an error."""
    from dra_guard.read.config_file import load_config_file, locate_config_file
    from dra_guard.ruleapi.config import Config, ConfigError
    from dra_guard.rules import RULES

    config_file = arguments.config
    if config_file is None:
        discovered = locate_config_file(start)
        for ignored in discovered.ignored:
            stderr.write(printable(f"dra-guard: ignoring the configuration {ignored}\n"))
        config_file = discovered.path
    try:
        config = load_config_file(config_file, RULES) if config_file else Config()
    except ConfigError as error:
        stderr.write(f"dra-guard: {error}\n")
        return EXIT_ERROR
    paths = getattr(arguments, "paths", ["."])
    if config_file and not arguments.config and not _among(config_file, paths):
        # Found above what is checked (a parent folder, the home directory): say so, since
        # nothing on the command line names it.
        stderr.write(printable(f"dra-guard: configuration: {config_file}\n"))
    today = os.environ.get(TODAY_ENV)
    if today:
        from dataclasses import replace

        from dra_guard.contract.waivers import parse_expiry

        day = parse_expiry(today)
        if day is None:
            stderr.write(printable(f"dra-guard: {TODAY_ENV}: must be a date YYYY-MM-DD, got {today!r}\n"))
            return EXIT_ERROR
        config = replace(config, today=day)
    if arguments.slices:
        try:
            config = _with_slices(config, arguments.slices)
        except ConfigError as error:
            stderr.write(f"dra-guard: {error}\n")
            return EXIT_ERROR
    return config, config_file


def _report_setup(
    arguments: argparse.Namespace, config: Config, inputs: Sequence[str], stderr: TextIO
) -> tuple[list[BaselineEntry] | None] | int:
    """The baseline to compare with (None: none), once --baseline and --write-baseline are
    known to be usable; or the exit status of an error."""
    from dra_guard.ruleapi.config import MAX_FILE_BYTES

    baseline: list[BaselineEntry] | None = None
    if arguments.baseline is not None:
        try:
            baseline = _read_baseline(arguments.baseline, config.get(MAX_FILE_BYTES))
        except ValueError as error:
            stderr.write(printable(f"dra-guard: {error}\n"))
            return EXIT_ERROR
    if arguments.write_baseline is not None:
        refused = _baseline_refused(arguments.write_baseline, arguments.output, inputs)
        if refused:
            stderr.write(
                printable(f"dra-guard: refusing to write the baseline to {arguments.write_baseline}: {refused}\n")
            )
            return EXIT_ERROR
    return (baseline,)


def run_check(arguments: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from dra_guard.read.inputs import Inputs, is_manifest
    from dra_guard.read.walk import Ignores, Patterns, select
    from dra_guard.ruleapi.config import EXCLUDE, MAX_FILE_BYTES

    if not arguments.paths:
        arguments.paths = ["."]
        _note_unread_stdin(stderr)
    if gc.get_freeze_count() == 0:
        # What the imports made lives as long as the process: the collector need not scan
        # it again (once per process: a caller's own objects are frozen at most once).
        gc.freeze()
    shard = _shard(arguments, stderr)
    if isinstance(shard, int):
        return shard
    found = _check_config(arguments, _first_path(arguments.paths), stderr)
    if isinstance(found, int):
        return found
    config, config_file = found
    setup = _report_setup(arguments, config, arguments.paths, stderr)
    if isinstance(setup, int):
        return setup
    if _refuses_to_overwrite_settings(arguments, config, config_file, stderr):
        return EXIT_ERROR
    excludes = [Patterns(os.getcwd(), tuple(arguments.exclude))]
    if config_file:
        excludes.append(Patterns(os.path.dirname(os.path.abspath(config_file)), config.get(EXCLUDE)))
    output = arguments.output if shard is None else arguments.facts_out
    from dra_guard.distribute.facts_file import is_facts_file

    # Shards' facts files in the tree are left out: every shard selects the same files.
    selection = select(
        arguments.paths,
        ignores=Ignores(excludes, gitignore=not arguments.no_ignore),
        named_like_found=arguments.skip_non_manifests,
        output=output,
        ours=is_facts_file,
    )
    if selection.output_named or (selection.output_found and _holds_a_manifest(output, is_manifest)):
        what = "the report" if shard is None else "the facts"
        stderr.write(f"dra-guard: refusing to write {what} to {output}: it is one of the inputs\n")
        return EXIT_ERROR
    if _overwrites_what_is_read(selection, output, shard is None, arguments.write_baseline, stderr):
        return EXIT_ERROR
    inputs = Inputs(selection, max_bytes=config.get(MAX_FILE_BYTES))
    # One input is checked in this process: a check of one file (an editor's, a pre-commit
    # hook's) neither imports nor starts the pool.
    several = len(selection.files) + len(selection.charts) > 1
    from dra_guard.distribute.cores import available_cores

    workers = arguments.jobs or (available_cores() if several else 1)
    from dra_guard.kubectl_yaml.fast import holding_stderr, read_fast_when_large

    # Which reader reads each document is decided from the whole input, before any of it
    # is read: the same in one process, in workers and in every shard.
    read_fast_when_large(selection.file_sizes())
    if shard is not None:
        return _write_shard(inputs, config, shard, workers=workers, facts_out=arguments.facts_out, stderr=stderr)
    # rapidyaml writes to descriptor 2, swapped away for the check (nothing else of ours
    # writes there until the report is written, below).
    with holding_stderr():
        if workers > 1:
            from dra_guard.distribute.pool import check_inputs

            report = check_inputs(inputs, config, workers)
        else:
            from dra_guard.engine.run import check_stream

            report = check_stream(inputs, config)
    report.files, report.skipped, report.unchecked = inputs.files, inputs.skipped, inputs.unchecked
    return _conclude(report, arguments, config, baseline=setup[0], stdout=stdout, stderr=stderr)


def _note_unread_stdin(stderr: TextIO) -> None:
    """Say so when data is piped or redirected in and no path is named: `helm template x |
    dra-guard check` checks the working folder, not what helm wrote (`-` names standard
    input, as the README shows), and a run that passes on the wrong input must not look like
    one that read it.  A note, not an error: a CI runner may hand every step a pipe."""
    import stat

    try:
        status = os.fstat(0)
    except (OSError, ValueError):  # closed (`<&-`): nothing was piped in
        return
    if stat.S_ISFIFO(status.st_mode) or (stat.S_ISREG(status.st_mode) and status.st_size > 0):
        stderr.write("dra-guard: standard input is not read (name - to check it); checking the working folder\n")


def _refuses_to_overwrite_settings(
    arguments: argparse.Namespace, config: Config, config_file: str | None, stderr: TextIO
) -> bool:
    """Whether -o, --write-baseline or --facts-out names one of the files the command reads
    besides its input (said on `stderr`): it would be replaced by what the command writes.
    A baseline brought up to date in place (--write-baseline onto --baseline) is what
    --write-baseline is for."""
    from dra_guard.rules import RULES

    read = [("the configuration file", config_file), *(("a --slices file", path) for path in arguments.slices)]
    # The configuration's `resource-slices` (with --slices, merged into the same option).
    slices = config.get(RULES.option_on_command_line("--slices")).paths
    read += [("a resource-slices file of the configuration", path) for path in slices]
    read += [("one of the facts files", path) for path in getattr(arguments, "facts", ())]
    baseline = [("the --baseline file", arguments.baseline)]
    for flag, path, guarded in (
        ("the report", arguments.output, read + baseline),
        ("the baseline", arguments.write_baseline, read),
        ("the facts", getattr(arguments, "facts_out", None), read + baseline),
    ):
        if path is None or path == "-":
            continue
        target = os.path.realpath(path)
        setting = next((what for what, given in guarded if given and os.path.realpath(given) == target), None)
        if setting is not None:
            stderr.write(printable(f"dra-guard: refusing to write {flag} to {path}: it is {setting}\n"))
            return True
    return False


def _overwrites_what_is_read(
    selection: Selection, output: str | None, report: bool, baseline: str | None, stderr: TextIO
) -> bool:
    """Whether the report (or facts) file or the baseline is a file the check reads that is
    no candidate of the walk (said on `stderr`): one a kustomization reads (`-o base/pod.yaml`
    while the overlay is checked) or one inside a Helm chart the check renders."""
    from dra_guard.read.inputs import read_besides

    for what, path in (("the report" if report else "the facts", output), ("the baseline", baseline)):
        if path is None or path == "-":
            continue
        why = read_besides(selection, path)
        if why is not None:
            stderr.write(printable(f"dra-guard: refusing to write {what} to {path}: it is {why}\n"))
            return True
    return False


def _shard(arguments: argparse.Namespace, stderr: TextIO) -> Shard | int | None:
    """`--shard I/N` (None without it), or the exit status of a usage error."""
    if arguments.shard is None and arguments.facts_out is None:
        return None
    from dra_guard.distribute.shards import Shard

    problem = None
    if arguments.shard is None or arguments.facts_out is None:
        problem = "--shard and --facts-out go together"
    elif arguments.facts_out == "-":
        problem = "--facts-out: give the facts a file name"
    else:
        clashing = [
            flag
            for flag, value in (
                ("--format", arguments.format),
                ("--color", arguments.color),
                ("--output", arguments.output),
                ("--baseline", arguments.baseline),
                ("--write-baseline", arguments.write_baseline),
                # The exit status is the merge's: a shard's says only that its facts were written.
                ("--fail-on", arguments.fail_on),
                ("--exit-zero", arguments.exit_zero or None),
                ("--fail-on-empty", arguments.fail_on_empty or None),
                ("--fail-on-unchecked", arguments.fail_on_unchecked or None),
            )
            if value is not None
        ]
        if clashing:
            problem = (
                f"{', '.join(clashing)}: a shard writes facts, not a report or an exit status; "
                "give it to `dra-guard merge`"
            )
    if problem is None:
        try:
            return Shard.parse(arguments.shard)
        except ValueError as error:
            problem = str(error)
    stderr.write(f"dra-guard: {problem}\n")
    return EXIT_ERROR


def _write_shard(inputs: Inputs, config: Config, shard: Shard, *, workers: int, facts_out: str, stderr: TextIO) -> int:
    from datetime import datetime, timezone

    from dra_guard.distribute.shards import FactsError, check_shard
    from dra_guard.kubectl_yaml.fast import holding_stderr

    today = config.today or datetime.now(timezone.utc).date()
    try:
        with holding_stderr():
            facts = check_shard(inputs, config, shard, workers, today)
    except FactsError as error:
        stderr.write(printable(f"dra-guard: shard {shard}: {error}\n"))
        return EXIT_ERROR
    try:
        _write_bytes(facts, facts_out)
    except OSError as error:
        stderr.write(printable(f"dra-guard: cannot write the facts {facts_out}: {error.strerror or error}\n"))
        return EXIT_ERROR
    stderr.write(printable(f"dra-guard: shard {shard}: facts written to {facts_out}; `dra-guard merge` reports\n"))
    return EXIT_CLEAN


def run_merge(arguments: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from dra_guard.distribute.shards import FactsError, merge
    from dra_guard.read.files import read_input

    found = _check_config(arguments, ".", stderr)
    if isinstance(found, int):
        return found
    config = found[0]
    setup = _report_setup(arguments, config, arguments.facts, stderr)
    if isinstance(setup, int):
        return setup
    if _refuses_to_overwrite_settings(arguments, config, found[1], stderr):
        return EXIT_ERROR
    facts: list[tuple[str, bytes]] = []
    for path in arguments.facts:
        if path == "-":
            stderr.write("dra-guard: merge: give each facts file by name, not standard input\n")
            return EXIT_ERROR
        data = read_input(path, FACTS_MAX_BYTES)
        if isinstance(data, str):
            stderr.write(printable(f"dra-guard: {path}: {data}\n"))
            return EXIT_ERROR
        facts.append((path, data))
    try:
        merged = merge(facts, config)
    except FactsError as error:
        stderr.write(printable(f"dra-guard: merge: {error}\n"))
        return EXIT_ERROR
    report = merged.report
    report.files, report.skipped, report.unchecked = merged.files, merged.skipped, merged.unchecked
    return _conclude(report, arguments, config, baseline=setup[0], stdout=stdout, stderr=stderr)


#: The largest facts file `merge` reads (a shard's findings and facts, far smaller than its input).
FACTS_MAX_BYTES = 4 << 30


def _write_bytes(data: bytes, path: str) -> None:
    """`data` into `path`, atomically (as `_write` writes a report)."""

    def write(out: Any) -> None:
        out.write(data)

    _write(write, path, None, binary=True)


def _conclude(
    report: Report,
    arguments: argparse.Namespace,
    config: Config,
    *,
    baseline: list[BaselineEntry] | None,
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    """The report written as asked, what people must see on stderr, and the exit status."""
    from dra_guard.contract.findings import Severity
    from dra_guard.present.report import writer
    from dra_guard.ruleapi.config import FAIL_ON

    output = arguments.output
    output_format = arguments.format or "text"
    found = list(report.findings)
    if baseline is not None:
        from dra_guard.present.baseline import apply_baseline

        apply_baseline(report, baseline, arguments.baseline)
    try:
        write = writer(output_format)
        if output_format == "text" and color_wanted(arguments.color or "auto", output, stdout, os.environ):
            import functools

            from dra_guard.present.report.text import write_text

            write = functools.partial(write_text, color=True)
        _write(lambda out: write(report, out), output, stdout)
        if output is None:
            stdout.flush()  # a full disk or a closed pipe shows here, not at exit
    except OSError as write_error:
        where = "the report to stdout" if output is None else output
        stderr.write(f"dra-guard: cannot write {where}: {write_error.strerror or write_error}\n")
        if output is None:
            _silence(stdout)  # what is left in its buffer would fail again at exit
        return EXIT_ERROR
    if output is not None or output_format != "text":
        # Machine formats go to stdout or a file; people still need to see input errors.
        for input_error in report.errors:
            stderr.write(printable(f"{input_error}\n"))
        for unchecked in report.unchecked:
            stderr.write(printable(f"dra-guard: {unchecked}\n"))
        if report.gone:
            from dra_guard.present.report.text import gone_line

            stderr.write(printable(f"dra-guard: {gone_line(report)}\n"))
    if report.errors:
        if arguments.write_baseline is not None:
            stderr.write(f"dra-guard: baseline not written: {len(report.errors)} input error(s)\n")
        return EXIT_ERROR
    # Objects, not files: an empty `helm template` output piped in is one file read and
    # nothing checked, which must not pass a CI gate as clean.
    if getattr(arguments, "fail_on_empty", False) and report.objects == 0:
        stderr.write("dra-guard: no Kubernetes manifest was checked (--fail-on-empty)\n")
        return EXIT_ERROR
    if getattr(arguments, "fail_on_unchecked", False) and report.unchecked:
        kinds = " or ".join(f"{kind}(s)" for kind in sorted({unchecked.what for unchecked in report.unchecked}))
        in_full = "" if all(unchecked.status == "not checked" for unchecked in report.unchecked) else " in full"
        stderr.write(f"dra-guard: {len(report.unchecked)} {kinds} not checked{in_full} (--fail-on-unchecked)\n")
        return EXIT_ERROR
    if arguments.write_baseline is not None:
        return _write_baseline(arguments.write_baseline, found, stderr)
    fail_on = "never" if arguments.exit_zero else arguments.fail_on or config.get(FAIL_ON)
    if fail_on == "never":
        return EXIT_CLEAN
    threshold = Severity.parse(fail_on)
    return EXIT_FINDINGS if any(finding.severity >= threshold for finding in report.findings) else EXIT_CLEAN


def _read_baseline(path: str, max_bytes: int) -> list[BaselineEntry]:
    """The entries of the baseline file `path`; ValueError saying why it cannot be used."""
    from dra_guard.present.baseline import parse_baseline
    from dra_guard.read.files import read_input

    if path == "-":
        raise ValueError("--baseline: standard input holds the manifests; give the baseline as a file")
    data = read_input(path, max_bytes)
    if isinstance(data, str):
        raise ValueError(f"baseline {path}: {data}")
    return parse_baseline(data, path)


def _baseline_refused(path: str, output: str | None, paths: Sequence[str]) -> str | None:
    """Why the baseline must not be written to `path` (None: it may)."""
    from dra_guard.read.inputs import is_manifest

    if path == "-":
        return "give the baseline a file name"
    target = os.path.realpath(path)
    if output is not None and os.path.realpath(output) == target:
        return "it is the report's file (-o)"
    if any(named != "-" and os.path.realpath(named) == target for named in paths):
        return "it is one of the inputs"
    if os.path.isfile(path) and _holds_a_manifest(path, is_manifest):
        return "it holds Kubernetes manifests"
    return None


def _write_baseline(path: str, findings: Sequence[Finding], stderr: TextIO) -> int:
    from dra_guard.present.baseline import render_baseline

    text = render_baseline(findings)

    def write(out: _Printable) -> None:
        out.write(text)

    try:
        _write(write, path, stderr)
    except OSError as error:
        stderr.write(printable(f"dra-guard: cannot write the baseline {path}: {error.strerror or error}\n"))
        return EXIT_ERROR
    count = len(findings)
    stderr.write(printable(f"dra-guard: wrote {count} finding{'' if count == 1 else 's'} to the baseline {path}\n"))
    return EXIT_CLEAN


def _with_slices(config: Config, paths: Sequence[str]) -> Config:
    """The configuration with `--slices` files added to the option that flag extends (declared
    by the rule that reads the slices; read now: a file that cannot be read is an error before
    anything is checked)."""
    from dra_guard.read.config_file import read_manifests
    from dra_guard.ruleapi.options import ConfigError, ParseContext
    from dra_guard.rules import RULES

    option = RULES.option_on_command_line("--slices")
    if "-" in paths:
        raise ConfigError("--slices: standard input holds the manifests; give the ResourceSlices as a file")
    context = ParseContext(RULES.rule_ids, os.environ, read_manifests=read_manifests)
    added = option.parse("--slices", list(paths), context)
    return config.with_value(option, config.get(option) + added)


def _among(config_file: str, paths: Sequence[str]) -> bool:
    """Whether the configuration file lies in what the command line names: a folder given,
    or the folder of a file or glob given (the working directory for stdin)."""
    config_folder = os.path.dirname(os.path.abspath(config_file))
    for path in paths or ["."]:
        named = os.path.abspath("." if path == "-" else path)
        folder = named if os.path.isdir(named) else os.path.dirname(named)
        with contextlib.suppress(ValueError):
            if os.path.commonpath([config_folder, folder]) == folder:
                return True
    return False


def _holds_a_manifest(path: str, is_manifest: Callable[[bytes], bool]) -> bool:
    """Whether the existing report file a walk found is a manifest (an input), not an old report
    (a FIFO or a device is neither: it is never read; a policy report dra-guard wrote is a
    manifest, but the last run's report all the same)."""
    from dra_guard.present.report.policyreport import written_here
    from dra_guard.read.files import read_input
    from dra_guard.ruleapi.config import MAX_FILE_BYTES

    data = read_input(path, MAX_FILE_BYTES.default)
    return not isinstance(data, str) and is_manifest(data) and not written_here(data)


def run_rules(output_format: str, stdout: TextIO) -> int:
    from dra_guard.present.rule_docs import rules_markdown, rules_text
    from dra_guard.rules import RULES

    stdout.write(rules_markdown(RULES) if output_format == "markdown" else rules_text(RULES))
    return EXIT_CLEAN


def run_explain(rule_name: str, stdout: TextIO, stderr: TextIO) -> int:
    from dra_guard.present.rule_docs import explain_text
    from dra_guard.rules import RULES

    rule = RULES.find(rule_name)
    if rule is None:
        stderr.write(f"dra-guard: no rule {rule_name!r}; `dra-guard rules` lists them\n")
        return EXIT_ERROR
    stdout.write(explain_text(rule))
    return EXIT_CLEAN


def run_init(arguments: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from dra_guard.cli.init import ScaffoldError
    from dra_guard.cli.init import run_init as write_targets

    results = write_targets(
        arguments.targets,
        arguments.dir,
        repo=arguments.repo,
        rev=arguments.rev,
        install=arguments.install,
        annotations=arguments.annotations,
        virtualenv=arguments.virtualenv,
    )
    for result in results:
        if isinstance(result, ScaffoldError):
            stderr.write(f"dra-guard: {result}\n")
        else:
            stdout.write(f"{result}\n")
    return EXIT_ERROR if any(isinstance(result, ScaffoldError) for result in results) else EXIT_CLEAN


#: Commands that print what people read: a reader that stops early (`| head`) is no error.
_READ_BY_PEOPLE = frozenset({"rules", "explain", "completion"})
#: Commands that serve or run and report their own failures (an OSError there is not output's).
_LONG_RUNNING = frozenset({"webhook", "scrub"})


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    # Python sets sys.stdout and sys.stderr to None when the descriptor is closed (`>&-`):
    # writing the output then fails as writing to a closed descriptor does, and with no
    # stderr there is nobody to tell.
    stdout = stdout or _whole_writes(sys.stdout) or _closed_output()
    stderr = stderr or _whole_writes(sys.stderr, line_buffering=True) or open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
    parser = build_parser(requested_command(sys.argv[1:] if argv is None else argv))
    arguments = parser.parse_args(argv)
    try:
        status = _run(arguments, parser, stdout, stderr)
        stdout.flush()  # a full disk or a closed pipe shows here, not silently at exit
        return status
    except (RuleModuleError, UnavailableParser) as error:  # DRA_GUARD_EXTRA_RULES, DRA_GUARD_YAML_PARSER
        stderr.write(f"dra-guard: {error}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:  # Ctrl-C: the workers are stopped on the way out (pool.in_order)
        stderr.write("dra-guard: interrupted\n")
        return EXIT_INTERRUPTED
    except OSError as error:
        if arguments.command in _LONG_RUNNING:
            raise
        # Standard output went away (`| head`), filled up (`> /dev/full`) or was closed.
        # Point it at /dev/null so that the exit flush is quiet too.
        _silence(stdout)
        if isinstance(error, BrokenPipeError) and arguments.command in _READ_BY_PEOPLE:
            return EXIT_CLEAN  # the reader had read enough
        where = error.filename or "standard output"
        stderr.write(printable(f"dra-guard: cannot write {where}: {error.strerror or error}\n"))
        return EXIT_ERROR


def _whole_writes(stream: TextIO | None, *, line_buffering: bool = False) -> TextIO | None:
    """`stream` (sys.stdout or sys.stderr), on a buffered writer where it has none
    (`line_buffering`: each line written as it ends, as stderr's are without -u).

    With PYTHONUNBUFFERED (set in many images, this project's Dockerfile included) or
    `python -u`, the text stream writes straight to its file descriptor and ignores what
    that write returns: a write the descriptor takes only part of (a non-blocking pipe that
    is full, a reader that went away mid-write) loses the rest without an error, and a
    report is cut short under an exit status that says nothing of it.  A BufferedWriter
    writes the rest or raises (BlockingIOError, BrokenPipeError), which is reported as
    any failing output is.  Its own FileIO (closefd=False): the descriptor stays open.
    Only a FileIO is replaced: another raw stream writes in its own way (on a Windows
    console `_WindowsConsoleIO`, registered as a RawIOBase, writes UTF-16 to the console,
    where a FileIO would write UTF-8 bytes the console reads in its code page).
    """
    import io

    if not isinstance(stream, io.TextIOWrapper) or not isinstance(stream.buffer, io.FileIO):
        return stream
    try:
        raw = io.FileIO(stream.fileno(), "w", closefd=False)
    except (OSError, ValueError):
        return stream
    return io.TextIOWrapper(
        io.BufferedWriter(raw), encoding=stream.encoding, errors=stream.errors, line_buffering=line_buffering
    )


def _closed_output() -> TextIO:
    import io

    class ClosedOutput(io.TextIOBase):
        """Unbuffered, so the one failure is reported once (no flush fails again at exit)."""

        def writable(self) -> bool:
            return True

        def write(self, text: str) -> int:
            raise OSError(errno.EBADF, "standard output is closed")

    return ClosedOutput()  # type: ignore[return-value]  # a TextIOBase, as sys.stdout is


def _run(arguments: argparse.Namespace, parser: argparse.ArgumentParser, stdout: TextIO, stderr: TextIO) -> int:
    """The command `arguments` name, run; its exit status."""
    if arguments.command == "check":
        # Importing the rules and parsing make many short-lived, acyclic objects: with
        # the default thresholds the collector runs again and again and finds nothing
        # to free (4 % of a cold start, more of a large check).  A short-lived command
        # can afford fewer collections (mypy does the same).
        gc.set_threshold(100_000, 50, 100)
        return run_check(arguments, stdout, stderr)
    if arguments.command == "merge":
        gc.set_threshold(100_000, 50, 100)  # as for a check
        return run_merge(arguments, stdout, stderr)
    if arguments.command == "rules":
        return run_rules(arguments.format, stdout)
    if arguments.command == "explain":
        return run_explain(arguments.rule, stdout, stderr)
    if arguments.command == "init":
        return run_init(arguments, stdout, stderr)
    if arguments.command == "admission-policy":
        from dra_guard.cli.admission import run_admission_policy

        return run_admission_policy(arguments, stdout, stderr)
    if arguments.command == "webhook":
        from dra_guard.cli.admission import run_webhook

        return run_webhook(arguments, stdout, stderr)
    if arguments.command == "migrate":
        from dra_guard.cli.migrate import run_migrate

        return run_migrate(arguments, stdout, stderr)
    if arguments.command == "scrub":
        from dra_guard.cli.scrub import run_scrub

        return run_scrub(arguments, stdout, stderr)
    if arguments.command == "completion":
        from dra_guard.cli.completion import run_completion

        return run_completion(parser, arguments.shell, stdout)
    parser.print_help(stdout)
    return EXIT_ERROR


def _silence(stream: TextIO) -> None:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
