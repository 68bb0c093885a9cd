"""`dra-guard migrate`: the thin file layer around `migrate_file`.

Inputs are never written to unless `--in-place`, which keeps `<file>.bak` and replaces each
changed file atomically.  Nothing is written outside the folder the inputs were named from
(`--in-place`) or the `-o` folder: a symlink is written through to its real file when that
lies inside, and refused, before anything is written, when it does not.  `-o OUT` writes
a file, or a directory mirroring the inputs; without either the migrated YAML goes to
stdout.  `--dry-run` prints a unified diff and writes nothing.  Exit 0 when everything was
migrated, 2 when any object or file was refused (the rest is still migrated and written),
a file could not be written, or the command was used wrongly.
"""

from __future__ import annotations

import argparse
import difflib
import glob
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from dra_guard.contract.catalog import DEVICE_CLASSES, SCRUB_BEFORE_USE
from dra_guard.contract.findings import InputError
from dra_guard.migrate.migration import FileMigration, migrate_file, scan_templates
from dra_guard.migrate.plan import TemplateNames
from dra_guard.migrate.settings import MigrationSettings

if TYPE_CHECKING:  # the walk loads when files are chosen
    from dra_guard.read.walk import Candidate, Patterns

EXIT_CLEAN = 0
EXIT_ERROR = 2
STDIN_OUTPUT_NAME = "stdin.yaml"


class UsageError(Exception):
    """A command line that cannot be carried out; nothing is written."""


class WriteError(Exception):
    """A file that could not be written; the files before it were written, each whole
    (`written`: what the report names as written)."""

    def __init__(self, message: str, written: dict[str, str]) -> None:
        super().__init__(message)
        self.written = written


@dataclass
class Invocation:
    """What the command line and the configuration `check` would use ask for."""

    settings: MigrationSettings
    #: Patterns that keep files out of directory walks (the command line's, the configuration's).
    excludes: list[Patterns] = field(default_factory=list)
    #: The most bytes read from one input (`max-file-bytes`).
    max_file_bytes: int = 64 * 1024 * 1024


def _first_path(paths: Sequence[str]) -> str:
    """Where configuration discovery starts, as for `check`: the first path (`.` for stdin)."""
    return "." if not paths or paths[0] == "-" else paths[0]


def settings_from(arguments: argparse.Namespace, environ: Mapping[str, str] = os.environ) -> Invocation:
    """The settings for the command line and the dra-guard configuration `check` would use."""
    from dra_guard.contract.catalog import KUBERNETES_RELEASES
    from dra_guard.contract.served import served_claim_api_versions
    from dra_guard.contract.validators import require_dns_label
    from dra_guard.read.config_file import find_config_file, load_config_file
    from dra_guard.read.walk import Patterns
    from dra_guard.ruleapi.config import EXCLUDE, MAX_FILE_BYTES, Config, ConfigError
    from dra_guard.rules import RULES

    config_file = arguments.config or find_config_file(_first_path(arguments.paths))
    try:
        config = load_config_file(config_file, RULES, environ=environ) if config_file else Config()
    except ConfigError as error:
        raise UsageError(str(error)) from None

    def option(key: str) -> Any:
        declared = RULES.options.get(key)
        return config.get(declared) if declared is not None else None

    extra_classes = option("extra-classes") or {}
    pins: dict[str, str] = {}
    for spelled in arguments.pin:
        device_class, equals, value = spelled.partition("=")
        if not equals or not value:
            raise UsageError(f"--pin {spelled}: expected CLASS=VALUE, e.g. gpu.amd.com=cpx_nps4")
        if device_class not in DEVICE_CLASSES and device_class not in extra_classes:
            raise UsageError(f"--pin {spelled}: unknown device class {device_class!r}")
        pins[device_class] = value
    if arguments.gpu_product is not None:
        pins["gpu.nvidia.com"] = arguments.gpu_product
    if arguments.tpu_gen is not None:
        pins["tpu.google.com"] = arguments.tpu_gen

    hmac_key: str | bytes | None = None
    if arguments.hmac_key_env:
        hmac_key = environ.get(arguments.hmac_key_env)
        if not hmac_key:
            raise UsageError(f"--hmac-key-env names {arguments.hmac_key_env}, which is not set or empty")
    else:
        secret = option("hmac-key-env")  # the key `check` will verify the tags with
        hmac_key = secret.value if secret is not None else None

    # The target release decides which API versions exist and whether requests carry the
    # exclusivity guard; from the configuration unless the command line says otherwise.
    kubernetes_version = arguments.kubernetes_version or option("kubernetes-version")
    release = KUBERNETES_RELEASES[kubernetes_version]
    runtime_config = tuple(arguments.runtime_config) or None
    try:
        served = served_claim_api_versions(kubernetes_version, runtime_config)
    except ValueError as error:
        raise UsageError(f"--runtime-config: {error}") from None
    gate = (
        f" (and the DynamicResourceAllocation feature gate, beta and off by default in {kubernetes_version})"
        if not release.dra_enabled_by_default
        else ""
    )
    if arguments.api_version is None and not served:
        raise UsageError(
            f"a Kubernetes {kubernetes_version} cluster serves no ResourceClaimTemplate version"
            + (" by default" if runtime_config is None else f" with --runtime-config={','.join(runtime_config)}")
            + f"; pass the --runtime-config your API server has, e.g. {release.claim_api_versions[0]}=true{gate}"
        )
    api_version = arguments.api_version or served[0]
    if api_version not in release.claim_api_versions:
        raise UsageError(
            f"--api-version {api_version}: Kubernetes {kubernetes_version} serves ResourceClaimTemplates in "
            f"{', '.join(release.claim_api_versions)}"
        )
    if api_version not in served:
        cluster = "a default" if runtime_config is None else "a"
        flag = "" if runtime_config is None else f" with --runtime-config={','.join(runtime_config)}"
        raise UsageError(
            f"--api-version {api_version}: not served by {cluster} Kubernetes {kubernetes_version} cluster{flag}; "
            f"pass --runtime-config={api_version}=true if your API server enables it{gate}"
        )
    scrub_image = None if arguments.no_scrubber else _scrub_image(arguments.scrub_image, option("scrub-images"))
    if scrub_image is None and arguments.sanitization == SCRUB_BEFORE_USE:
        # It would declare an erasure that no pod performs (DRA004, DRA016).
        raise UsageError(
            f"--sanitization {SCRUB_BEFORE_USE} declares that the scrubber runs first in every pod, and "
            "--no-scrubber adds none; give one of them only"
        )
    namespace = arguments.namespace
    if namespace is not None:
        try:
            require_dns_label("--namespace", namespace)
        except ValueError as error:
            raise UsageError(str(error)) from None
    consumable_capacity = option("consumable-capacity") if kubernetes_version == option("kubernetes-version") else None
    settings = MigrationSettings(
        pins=pins,
        api_version=api_version,
        kubernetes_version=kubernetes_version,
        runtime_config=runtime_config,
        consumable_capacity=consumable_capacity,
        sanitization=arguments.sanitization,
        tenant_from_namespace=arguments.tenant_from_namespace,
        namespace=namespace,
        hmac_key=hmac_key,
        scrub_image=scrub_image,
        extra_legacy_resources=frozenset(option("extra-legacy-resources") or ()),
        non_accelerator_classes=frozenset(option("non-accelerator-classes") or ()),
        extra_classes=extra_classes,
    )
    excludes = [Patterns(os.getcwd(), tuple(arguments.exclude))]
    if config_file:
        excludes.append(Patterns(os.path.dirname(os.path.abspath(config_file)), config.get(EXCLUDE)))
    return Invocation(settings, excludes, config.get(MAX_FILE_BYTES))


@dataclass
class SelectedFiles:
    """The files to migrate, read once, and what the walk left out."""

    files: list[tuple[str, bytes]] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    #: Files a walk found that are no Kubernetes manifests (as `check` skips them).
    skipped: list[str] = field(default_factory=list)
    #: Helm charts: their templates are not manifests, so they are not migrated.
    charts: list[str] = field(default_factory=list)
    #: Symlinked folders a walk did not follow: named, not migrated.
    links: list[str] = field(default_factory=list)
    #: Git indexes a walk could not read (path, why): see `dra_guard.read.walk.Selection`.
    unread_indexes: list[tuple[str, str]] = field(default_factory=list)


def _read_inputs(arguments: argparse.Namespace, invocation: Invocation, stdin: BinaryIO | None) -> SelectedFiles:
    """The files `check` would read for these paths (walks, excludes, .gitignore, charts)."""

    from dra_guard.read.files import read_input, standard_input
    from dra_guard.read.inputs import is_manifest
    from dra_guard.read.loader import STDIN_NAME
    from dra_guard.read.walk import STDIN, Ignores, select

    output = arguments.output
    output_file = output if output and not output.endswith(("/", os.sep)) and not os.path.isdir(output) else None
    selection = select(
        arguments.paths,
        ignores=Ignores(invocation.excludes, gitignore=not arguments.no_ignore),
        output=output_file,
    )
    inputs = SelectedFiles(
        errors=list(selection.errors),
        charts=list(selection.charts),
        links=list(selection.links),
        unread_indexes=list(selection.unread_indexes),
    )
    if selection.output_named:
        raise UsageError(f"-o would overwrite the input {output}; use --in-place to rewrite inputs")
    output_directory = os.path.realpath(output) + os.sep if output and not output_file else None
    inside = [
        candidate.found
        and output_directory is not None
        and os.path.realpath(candidate.path).startswith(output_directory)
        for candidate in selection.files
    ]
    copies = _earlier_copies(selection.files, inside, output, arguments.paths) if any(inside) else set()
    for candidate, in_output in zip(selection.files, inside, strict=True):
        if in_output and os.path.realpath(candidate.path) in copies:
            continue  # what an earlier run wrote into -o is not an input
        data = read_input(
            candidate.path, invocation.max_file_bytes, (stdin or standard_input()) if candidate.path == STDIN else None
        )
        if isinstance(data, str):
            inputs.errors.append(InputError(candidate.path, None, data))
            continue
        # A file a chart reads with `.Files.Get` or `tpl` is no manifest either (`file_items`).
        if candidate.found and ((candidate.in_chart and b"{{" in data) or not is_manifest(data)):
            inputs.skipped.append(candidate.path)
            continue
        if in_output:
            raise UsageError(
                f"-o {output} holds {candidate.path}, which the walk finds as an input and which is no copy "
                "of another input: it would be left out; write the copies to a folder outside the inputs' "
                "(or move a stale copy away); nothing written"
            )
        inputs.files.append((STDIN_NAME if candidate.path == STDIN else candidate.path, data))
    return inputs


def _earlier_copies(
    candidates: Sequence[Candidate], inside: Sequence[bool], output: str, paths: Sequence[str]
) -> set[str]:
    """The real paths in the -o folder where this run would write its copy of an input that
    lies outside it: an earlier run's copies, left out of the inputs so that a rerun reads
    the same files.  Any other manifest found there is an input that would be left out, or
    (-o naming an input folder) overwritten: `_read_inputs` refuses it."""
    from dra_guard.read.walk import STDIN

    root = _input_root(paths)
    copies = set()
    for candidate, in_output in zip(candidates, inside, strict=True):
        if in_output:
            continue
        path = candidate.path
        relative = STDIN_OUTPUT_NAME if path == STDIN else os.path.relpath(os.path.abspath(path), root)
        copies.add(os.path.realpath(os.path.join(output, relative)))
    return copies


def _input_root(paths: Sequence[str]) -> str:
    """The folder the inputs are named from: the directories given, the folders of files and globs."""
    from dra_guard.read.walk import STDIN

    folders = []
    for path in paths:
        if path == STDIN:
            continue
        if glob.has_magic(path):  # the folder before the first wildcard
            folder = os.path.dirname(path[: min(path.index(c) for c in "*?[" if c in path)]) or "."
        else:
            folder = path if os.path.isdir(path) else os.path.dirname(path) or "."
        folders.append(os.path.abspath(folder))
    return os.path.commonpath(folders) if folders else os.getcwd()


def _output_paths(files: Sequence[FileMigration], output: str, paths: Sequence[str]) -> dict[str, str]:
    """Where each input goes under `-o`: OUT itself for one file named, else OUT/<its path
    below the folder the inputs were named from> (a directory or glob always gives a directory)."""
    from dra_guard.read.loader import STDIN_NAME
    from dra_guard.read.walk import STDIN

    walked = any(os.path.isdir(path) or glob.has_magic(path) for path in paths if path != STDIN)
    directory = walked or len(files) > 1 or os.path.isdir(output) or output.endswith(("/", os.sep))
    if not directory:
        return {files[0].name: output} if files else {}
    root = _input_root(paths)
    targets = {}
    for file in files:
        relative = STDIN_OUTPUT_NAME if file.name == STDIN_NAME else os.path.relpath(os.path.abspath(file.name), root)
        targets[file.name] = os.path.join(output, relative)
    return targets


def _refuse_colliding_targets(targets: Mapping[str, str]) -> None:
    """Two inputs whose copies would go to one file (stdin and a `stdin.yaml`, a file and a
    link to another file of the same name): the second would replace the first unseen."""
    first: dict[str, str] = {}
    for name, target in targets.items():
        where = os.path.normcase(os.path.realpath(target))
        if where in first:
            raise UsageError(
                f"-o would write both {first[where]} and {name} to {target}; name them apart, nothing written"
            )
        first[where] = name


def _refuse_overwriting_inputs(targets: Mapping[str, str]) -> None:
    inputs = {os.path.realpath(name) for name in targets}
    for name, target in targets.items():
        if os.path.realpath(target) in inputs:
            raise UsageError(f"-o would overwrite the input {name}; use --in-place to rewrite inputs")


def _diff(file: FileMigration) -> str:
    old = file.original.decode("utf-8", errors="replace").splitlines(True)
    new = file.output.decode("utf-8", errors="replace").splitlines(True)
    lines = difflib.unified_diff(old, new, f"a/{file.name}", f"b/{file.name}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def _concatenated(files: Sequence[FileMigration]) -> str:
    texts = [file.output.decode("utf-8", errors="replace") for file in files]
    parts: list[str] = []
    for text in texts:
        if parts:
            parts.append("---\n")
        parts.append(text if text.endswith("\n") or not text else text + "\n")
    return "".join(parts)


def run_migrate(
    arguments: argparse.Namespace,
    stdout: TextIO,
    stderr: TextIO,
    stdin: BinaryIO | None = None,
    environ: Mapping[str, str] = os.environ,
) -> int:
    from dra_guard.migrate.report import Unmigrated, render_json, render_text
    from dra_guard.read.walk import STDIN

    to_stdout = arguments.output is None and not arguments.in_place and not arguments.dry_run
    try:
        if arguments.format == "json" and to_stdout:
            raise UsageError("--format json puts the report on stdout: add -o OUT, --in-place or --dry-run")
        if arguments.in_place and STDIN in arguments.paths:
            raise UsageError("--in-place cannot rewrite stdin")
        invocation = settings_from(arguments, environ)
        inputs = _read_inputs(arguments, invocation, stdin)
    except UsageError as error:
        stderr.write(f"dra-guard: {error}\n")
        return EXIT_ERROR

    names = TemplateNames()
    for _, data in inputs.files:
        scan_templates(data, names)
    files = [migrate_file(data, name, invocation.settings, names) for name, data in inputs.files]
    errors = inputs.errors
    unmigrated = Unmigrated(inputs.skipped, inputs.charts, inputs.links, inputs.unread_indexes)

    written: dict[str, str] = {}
    write_failed = False
    if not arguments.dry_run and (arguments.output is not None or arguments.in_place):
        try:
            written = _write(files, arguments.output, arguments.paths)
        except UsageError as error:  # refused before anything was written
            stderr.write(f"dra-guard: {error}\n")
            return EXIT_ERROR
        except WriteError as error:
            # Some files were written: the report asked for still says which.
            stderr.write(f"dra-guard: {error}\n")
            written, write_failed = error.written, True

    report_stream = stderr if to_stdout or arguments.dry_run else stdout
    if to_stdout:
        stdout.write(_concatenated(files))
    if arguments.format == "json":
        diffs = {file.name: _diff(file) for file in files} if arguments.dry_run else None
        stdout.write(render_json(files, errors, written, unmigrated, diffs))
        for input_error in errors:  # people still see what could not be read
            stderr.write(f"{input_error}\n")
    else:
        if arguments.dry_run:
            stdout.write("".join(_diff(file) for file in files if file.changed))
        report_stream.write(render_text(files, errors, written, unmigrated))
    refused = errors or write_failed or any(file.refused for file in files)
    return EXIT_ERROR if refused else EXIT_CLEAN


BACKUP_SUFFIX = ".bak"


@dataclass
class _Write:
    """One file to write: where its bytes really go, and (in place) the original to keep."""

    real: str
    data: bytes
    #: The original, for `<real>.bak`; None when there is no backup to write.
    backup: bytes | None = None
    #: The names it was reached by (a file and a symlink to it are written once), and how
    #: the report shows each.
    shown: dict[str, str] = field(default_factory=dict)


def _write(files: Sequence[FileMigration], output: str | None, paths: Sequence[str]) -> dict[str, str]:
    """Check every target first, so that a refusal writes nothing; then write them all."""
    plan = _in_place_plan(files, paths) if output is None else _output_plan(files, output, paths)
    return _carry_out(plan)


def _inside(path: str, root: str, where: str) -> str:
    """The real path of `path`, which must lie inside the real `root`, and, where `root` is
    named inside the working folder, inside that too: a planted `out -> /etc` (for `-o
    out`) or a named folder that is a symlink leading out takes no write with it."""
    from dra_guard.cli.safe_write import OutsideRoot, confined, real_path_inside

    try:
        return confined(root, real_path_inside(path, root))
    except OutsideRoot as error:
        raise UsageError(f"{where}: {error}; refusing to write outside it, nothing written") from None


def _shown(target: str, real: str) -> str:
    """The report names a symlink's real file: that is what was rewritten."""
    return real if os.path.islink(target) else target


def _in_place_plan(files: Sequence[FileMigration], paths: Sequence[str]) -> list[_Write]:
    root = _input_root(paths)
    plan: dict[str, _Write] = {}
    for file in files:
        if not file.changed:
            continue
        real = _inside(file.name, root, "--in-place")
        _refuse_hard_links(real, file.name)
        entry = plan.get(real)
        if entry is None:
            keep = _backup_needed(real + BACKUP_SUFFIX, file.original, file.name)
            entry = plan[real] = _Write(real, file.output, file.original if keep else None)
        entry.shown[file.name] = _shown(file.name, real)
    return list(plan.values())


def _refuse_hard_links(real: str, name: str) -> None:
    """A file with other hard links is not rewritten in place: the atomic replace gives the
    name a new file and leaves the others with the legacy request, unseen; writing through
    the link instead would give up whole-or-untouched and change names outside the inputs'
    folder (a link's other names may lie anywhere on the file system)."""
    try:
        links = os.stat(real).st_nlink
    except OSError:
        return  # writing it reports why
    if links > 1:
        others = links - 1
        raise UsageError(
            f"{name} has {others} other hard link{'s' if others > 1 else ''}, which --in-place would leave "
            "unmigrated; break the link (cp FILE FILE.new && mv FILE.new FILE) or migrate a copy with -o; "
            "nothing written"
        )


def _backup_needed(backup: str, original: bytes, name: str) -> bool:
    """Whether `backup` must be written: not when it already holds the original (a rerun).
    One that holds anything else may be the only copy of an earlier original, so it is
    refused rather than overwritten (or numbered: one backup per file stays predictable)."""
    if not os.path.lexists(backup):
        return True
    if os.path.islink(backup) or not os.path.isfile(backup):
        raise UsageError(f"{backup} exists and is no regular file; move it away to migrate {name} in place")
    try:
        with open(backup, "rb") as handle:
            kept = handle.read()
    except OSError as error:
        raise UsageError(f"{backup}: cannot read: {error.strerror or error}") from None
    if kept != original:
        raise UsageError(
            f"{backup} exists and differs from {name}; move it away (it may be an earlier original) and run again"
        )
    return False


def _output_plan(files: Sequence[FileMigration], output: str, paths: Sequence[str]) -> list[_Write]:
    targets = _output_paths(files, output, paths)
    _refuse_colliding_targets(targets)
    _refuse_overwriting_inputs(targets)
    # -o FILE: its folder; -o DIR: DIR itself, so that a symlink planted inside it (a
    # subfolder or a file pointing elsewhere) cannot take the mirrored tree out of it.
    root = os.path.dirname(os.path.abspath(output)) if output in targets.values() else output
    plan = []
    for file in files:
        real = _inside(targets[file.name], root, f"-o {output}")
        plan.append(_Write(real, file.output, shown={file.name: _shown(targets[file.name], real)}))
    return plan


def _carry_out(plan: Sequence[_Write]) -> dict[str, str]:
    from dra_guard.cli.safe_write import remove_stale_temporaries, write_atomically

    # write_atomically removes its temporary on any exception; a run killed outright
    # (SIGKILL, power loss) runs no cleanup, so its leftovers go here, before anything new.
    for folder in sorted({os.path.dirname(entry.real) for entry in plan}):
        remove_stale_temporaries(folder)
    written: dict[str, str] = {}
    for done, entry in enumerate(plan):
        # The original is kept (`.bak`) before the file is replaced.
        writes = [] if entry.backup is None else [(entry.real + BACKUP_SUFFIX, entry.backup)]
        for path, data in [*writes, (entry.real, entry.data)]:
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                write_atomically(path, data, like=entry.real)
            except OSError as error:
                raise WriteError(
                    f"cannot write {path}: {error.strerror or error}; {done} file(s) written before it, each whole",
                    written,
                ) from None
        written.update(entry.shown)
    return written


def _scrub_image(given: str | None, configured: frozenset[str]) -> str:
    """The scrubber image: the one given (pinned, and one `check` accepts), or the configured one."""
    from dra_guard.contract.scrubber import DEFAULT_SCRUB_IMAGE, image_pin_problem

    if given is None:
        if DEFAULT_SCRUB_IMAGE in configured:
            return DEFAULT_SCRUB_IMAGE
        if len(configured) == 1:
            return next(iter(configured))
        raise UsageError(
            f"the configuration lists {len(configured)} scrub-images and not the default; pass --scrub-image IMAGE"
        )
    problem = image_pin_problem(given)
    if problem is not None:
        raise UsageError(f"--scrub-image {given}: {problem}")
    if given not in configured:
        raise UsageError(
            f"--scrub-image {given}: not among the configuration's scrub-images ({', '.join(sorted(configured))}), "
            "so check would report every migrated pod (DRA016); add it there"
        )
    return given
