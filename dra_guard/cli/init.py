"""`dra-guard init`: wire dra-guard into a project, one piece at a time, never overwriting.

Each target is written only when asked for.  Files that do not exist are created; the two
files a project already owns and that exist to be extended (cdk8s.yaml's `validations:`,
.pre-commit-config.yaml's `repos:`) get our entry added with their comments and order
kept; any other existing file is left untouched and reported.

What is written names no path of the machine it was written on, so it can be committed:
cdk8s.yaml names a shim in the app (`.dra-guard/cdk8s-plugin/`) that finds the installed
plugin at synth time, and the Pulumi pack (`policy-pack/`) names its virtualenv relative
to itself and imports the policies from the dra-guard installed there.

Nothing is written outside the project directory: a target whose real path leaves it (the
file, or a folder above it such as `.github`, a symlink out of the project, as a cloned
repository may hold) is refused, and writes go through dra_guard.cli.safe_write.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: What `dra-guard init` can write, in the order it writes them.
TARGETS = ("cdk8s", "pulumi", "config", "pre-commit", "ci")
PLUGIN_CLASS = "DraGuardValidation"
#: The shim `init cdk8s` writes into the app, and how cdk8s.yaml names it: a relative path,
#: which the cdk8s-cli resolves from the app's folder (it loads `./...` as a local plugin).
SHIM_DIR = os.path.join(".dra-guard", "cdk8s-plugin")
SHIM_PACKAGE = "./.dra-guard/cdk8s-plugin"
SHIM_FILES = ("package.json", "index.js")
#: The policy pack `init pulumi` writes, in the Pulumi project's folder.
PACK_DIR = "policy-pack"
CONFIG_FILE = ".dra-guard.yaml"
PRE_COMMIT_FILE = ".pre-commit-config.yaml"
WORKFLOW_FILE = os.path.join(".github", "workflows", "dra-guard.yml")
#: The pre-commit hook passes file names: non-manifests among them are skipped, as in a walk.
HOOK_ENTRY = "dra-guard check --skip-non-manifests"


class ScaffoldError(Exception):
    """A target that cannot be written; the message says which file and why."""


@dataclass(frozen=True)
class Change:
    """What `init` did to one file."""

    path: str
    #: "created", "updated" or "unchanged".
    action: str
    note: str = ""

    def __str__(self) -> str:
        return f"{self.action} {self.path}" + (f" ({self.note})" if self.note else "")


def cdk8s_plugin_dir() -> str:
    """The cdk8s-cli validation plugin shipped inside this package."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cdk8s_plugin")


def cdk8s_shim_dir() -> str:
    """The shim that `init cdk8s` copies into an app (dra_guard/cdk8s_plugin/shim/)."""
    return os.path.join(cdk8s_plugin_dir(), "shim")


def cdk8s_plugin_version() -> str:
    with open(os.path.join(cdk8s_plugin_dir(), "package.json"), encoding="utf-8") as handle:
        version = json.load(handle)["version"]
    return str(version)


def _round_trip() -> Any:
    from ruamel.yaml import YAML

    yaml = YAML()  # round-trip mode: comments, key order and quoting survive
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = sys.maxsize  # never fold a long value (a path) over two lines
    return yaml


def _load_round_trip(path: str, real: str) -> Any:
    from ruamel.yaml.error import YAMLError

    try:
        with open(real, encoding="utf-8") as handle:
            return _round_trip().load(handle)
    except (OSError, UnicodeDecodeError) as error:
        raise ScaffoldError(f"{path}: cannot read: {error}") from None
    except YAMLError as error:
        # ruamel's message spans lines (the marks); the CLI's errors are one line each.
        raise ScaffoldError(f"{path}: not valid YAML, left unchanged: {' '.join(str(error).split())}") from None
    except RecursionError:
        raise ScaffoldError(f"{path}: YAML nested too deeply to edit, left unchanged") from None


def _dump_round_trip(document: Any, path: str, real: str) -> None:
    """Replace `real` (where `path` really is) atomically: a crash never leaves half a cdk8s.yaml."""
    import io

    from dra_guard.cli.safe_write import write_atomically  # tempfile: only when writing

    buffer = io.StringIO()
    _round_trip().dump(document, buffer)
    try:
        write_atomically(real, buffer.getvalue().encode("utf-8"))
    except OSError as error:
        raise ScaffoldError(f"{path}: cannot write: {error.strerror or error}") from None


def _real_target(directory: str, path: str) -> str:
    """Where `path` really is, which must be inside the project `directory`: a symlinked
    target, or a symlinked folder above it (`.github` -> /etc), must not take a write out;
    nor may the project folder itself, named inside the working folder, lead out of it."""
    from dra_guard.cli.safe_write import OutsideRoot, confined, real_path_inside

    try:
        return confined(directory, real_path_inside(path, directory))
    except OutsideRoot as error:
        raise ScaffoldError(f"{error}; refusing to write outside the project, nothing written") from None


def _shim_text(name: str) -> str:
    with open(os.path.join(cdk8s_shim_dir(), name), encoding="utf-8") as handle:
        return handle.read()


def _write_ours(directory: str, path: str, text: str, note: str = "") -> Change:
    """A file of ours (the shim, the pack): created, or reported unchanged when it is there
    already, as written or not: a file someone edited is theirs now, never overwritten."""
    real = _real_target(directory, path)
    if os.path.lexists(path) and os.path.isfile(real):
        try:
            with open(real, encoding="utf-8") as handle:
                same = handle.read() == text
        except (OSError, UnicodeDecodeError):
            same = False
        if not same:
            return Change(path, "unchanged", "it already exists and differs from what init writes; not overwritten")
        return Change(path, "unchanged", "already up to date")
    return _create(directory, path, text, note)


def init_cdk8s(directory: str) -> list[Change]:
    """Add the dra-guard validation plugin to `cdk8s.yaml`, through a shim in the app that
    finds the installed plugin at synth time (`.dra-guard/cdk8s-plugin/`, to commit)."""
    path = os.path.join(directory, "cdk8s.yaml")
    real = _real_target(directory, path)
    if not os.path.isfile(real):
        raise ScaffoldError(f"{path}: no such file; run `dra-guard init cdk8s` in your cdk8s app's directory")
    document = _load_round_trip(path, real)
    if not isinstance(document, dict):
        raise ScaffoldError(f"{path}: expected a mapping at the top, left unchanged")
    validations = document.get("validations")
    if validations is not None and not isinstance(validations, list):
        raise ScaffoldError(f"{path}: `validations` is not a list, left unchanged")
    shim = {name: os.path.join(directory, SHIM_DIR, name) for name in SHIM_FILES}
    for target in shim.values():  # every file inside the project, or nothing written
        _real_target(directory, target)
    # The shim first: cdk8s.yaml never names a folder that is not there.
    changes = [_write_ours(directory, target, _shim_text(name)) for name, target in shim.items()]
    entry = {
        "package": SHIM_PACKAGE,
        "version": cdk8s_plugin_version(),
        "class": PLUGIN_CLASS,
        "properties": {"failOn": "medium"},
    }
    if validations is None:
        document["validations"] = [entry]
    else:
        ours = [item for item in validations if isinstance(item, dict) and item.get("class") == PLUGIN_CLASS]
        if ours:
            current = ours[0]
            if current.get("package") == entry["package"] and current.get("version") == entry["version"]:
                return [*changes, Change(path, "unchanged", "the dra-guard plugin is already configured")]
            # An older init wrote the installed plugin's absolute path: now the shim's.
            current["package"], current["version"] = entry["package"], entry["version"]
            _dump_round_trip(document, path, real)
            return [*changes, Change(path, "updated", f"plugin package is now {entry['package']}")]
        validations.append(entry)
    _dump_round_trip(document, path, real)
    note = f"added the dra-guard validation plugin through {entry['package']}; commit that folder with the app"
    return [*changes, Change(path, "updated", note)]


PACK_POLICY_YAML = """\
# Written by `dra-guard init pulumi`: the dra-guard rules as a Pulumi policy pack, one policy
# per rule, run by the Python of the virtualenv below (relative to this folder) with the
# dra-guard installed there (requirements.txt).  From the project's folder:
#   pulumi preview --policy-pack {pack}
description: "Isolated sliced accelerators on Kubernetes DRA: the dra-guard rules, one policy per rule."
runtime:
  name: python
  options:
    virtualenv: {virtualenv}
version: {version}
"""

PACK_REQUIREMENTS = """\
# Written by `dra-guard init pulumi`: what the pack's virtualenv needs.  dra-guard is not on
# PyPI (a package of that name there is not this one): install it from your wheel or checkout
# (`pip install 'dra_guard-{version}-py3-none-any.whl[pulumi]'`), or name where pip gets it
# (`dra-guard init pulumi --install REQUIREMENT` writes that line instead).
{requirement}
"""

PACK_MAIN = '''\
"""The dra-guard policy pack, written by `dra-guard init pulumi`.

Pulumi runs this file with the Python of the virtualenv named in PulumiPolicy.yaml; the
policies come from the dra-guard installed there, so upgrading dra-guard upgrades the pack.
serve() starts the Analyzer gRPC server and never returns.
"""

from pulumi_dra.policy import serve

serve()
'''


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # another drive (Windows)
        return False


def pack_virtualenv(directory: str, chosen: str | None = None) -> tuple[str, str]:
    """The pack's `virtualenv` option and a note: `chosen` (relative to the current folder),
    else the running interpreter's virtualenv when it lies in the project, else the project's
    `.venv`; written relative to the pack's folder (Pulumi resolves it from there) when it
    lies in the project, else as an absolute path, which only this machine has."""
    project = os.path.abspath(directory)
    pack = os.path.join(project, PACK_DIR)
    if chosen is not None:
        target = os.path.abspath(chosen)
    elif sys.prefix != sys.base_prefix and _inside(os.path.abspath(sys.prefix), project):
        target = os.path.abspath(sys.prefix)
    else:
        target = os.path.join(project, ".venv")
    if not _inside(target, project):
        return target, f"the virtualenv {target} is outside the project: the pack runs only where that path exists"
    relative = os.path.relpath(target, pack).replace(os.sep, "/")
    if not os.path.isdir(target):
        return relative, (
            f"create the virtualenv {os.path.relpath(target, project)} in the project and install requirements.txt "
            "in it, or name another with --virtualenv"
        )
    return relative, f"runs with the virtualenv {relative}"


def _with_pulumi_extra(requirement: str) -> str:
    """`dra-guard @ URL` (what `--install` gives `init ci`) with the extra the pack needs."""
    import re

    return re.sub(r"^(\s*dra[-_.]guard)(?=\s*(?:@|[=<>!~]=|;|$))", r"\1[pulumi]", requirement, count=1, flags=re.I)


def init_pulumi(directory: str, virtualenv: str | None = None, install: str | None = None) -> list[Change]:
    """A project-local policy pack (`policy-pack/`) that runs the installed dra-guard's policies."""
    from dra_guard import __version__

    relative, note = pack_virtualenv(directory, virtualenv)
    requirement = _with_pulumi_extra(install) if install is not None else f"dra-guard[pulumi]=={__version__}"
    texts = {
        "PulumiPolicy.yaml": PACK_POLICY_YAML.format(
            pack=PACK_DIR, virtualenv=json.dumps(relative), version=json.dumps(__version__)
        ),
        "requirements.txt": PACK_REQUIREMENTS.format(version=__version__, requirement=requirement),
        "__main__.py": PACK_MAIN,
    }
    paths = {name: os.path.join(directory, PACK_DIR, name) for name in texts}
    for path in paths.values():  # every file inside the project, or nothing written
        _real_target(directory, path)
    return [
        _write_ours(directory, paths[name], text, note if name == "PulumiPolicy.yaml" else "")
        for name, text in texts.items()
    ]


def _create(directory: str, path: str, text: str, note: str = "") -> Change:
    real = _real_target(directory, path)
    if os.path.lexists(path):
        return Change(path, "unchanged", "it already exists; not overwritten")
    try:
        # The folders of the real path: real_path_inside resolved every symlink above it.
        os.makedirs(os.path.dirname(real), exist_ok=True)
        _create_exclusively(real, text)
    except FileExistsError:
        return Change(path, "unchanged", "it already exists; not overwritten")
    except OSError as error:
        raise ScaffoldError(f"{path}: cannot write: {error.strerror or error}") from None
    return Change(path, "created", note)


def _create_exclusively(real: str, text: str) -> None:
    """O_EXCL: never replace a file that appeared in the meantime, nor write through a
    symlink planted at the name (O_EXCL fails on one, dangling or not)."""
    from dra_guard.cli.safe_write import fsync_directory

    with open(real, "x", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    fsync_directory(os.path.dirname(real))


def starter_config() -> str:
    """Every option of the registry, commented out, with its doc and default."""
    import textwrap

    from dra_guard.rules import RULES

    lines = [
        "# dra-guard configuration, found by walking up from the checked paths (see the README).",
        "# Every option is optional and shown with its default; unknown keys are errors.",
        "# `dra-guard rules` lists the rules, `dra-guard explain <rule>` shows one with its options.",
    ]
    for option in RULES.options.values():
        lines.append("")
        lines += ["# " + line for line in textwrap.wrap(option.doc, 86, break_on_hyphens=False)]
        if option.default_doc is not None:
            lines.append(f"# {option.key}: ...            (default: {option.default_doc})")
        else:
            lines.append(f"# {option.key}: {json.dumps(option.type.to_json(option.default))}")
    return "\n".join(lines) + "\n"


def init_config(directory: str) -> Change:
    return _create(directory, os.path.join(directory, CONFIG_FILE), starter_config())


def _hook(repo: str | None, rev: str | None) -> dict[str, Any]:
    if repo is not None:
        # This repository's .pre-commit-hooks.yaml: pre-commit installs dra-guard from it.
        return {"repo": repo, "rev": rev or "main", "hooks": [{"id": "dra-guard"}]}
    return {
        "repo": "local",
        "hooks": [
            {
                "id": "dra-guard",
                "name": "dra-guard",
                "entry": HOOK_ENTRY,
                "language": "system",
                "types_or": ["yaml", "json"],
                "require_serial": True,
            }
        ],
    }


def init_pre_commit(directory: str, repo: str | None = None, rev: str | None = None) -> Change:
    """Add a dra-guard hook to .pre-commit-config.yaml (created if there is none)."""
    path = os.path.join(directory, PRE_COMMIT_FILE)
    hook = _hook(repo, rev)
    real = _real_target(directory, path)
    if not os.path.lexists(path):
        import io

        buffer = io.StringIO()
        _round_trip().dump({"repos": [hook]}, buffer)
        return _create(directory, path, buffer.getvalue())
    document = _load_round_trip(path, real)
    if not isinstance(document, dict) or not isinstance(document.get("repos", []), list):
        raise ScaffoldError(f"{path}: expected a mapping with a `repos` list, left unchanged")
    repos = document.setdefault("repos", [])
    for existing in repos:
        hooks = existing.get("hooks", []) if isinstance(existing, Mapping) else []
        if not isinstance(hooks, list):
            raise ScaffoldError(f"{path}: a repo's `hooks` is not a list, left unchanged")
        if any(isinstance(item, Mapping) and item.get("id") == "dra-guard" for item in hooks):
            return Change(path, "unchanged", "a dra-guard hook is already configured")
    repos.append(hook)
    _dump_round_trip(document, path, real)
    return Change(path, "updated", "added the dra-guard hook")


_WORKFLOW_HEAD = """\
# Written by `dra-guard init ci{option}`: checks the repository's manifests on every push and
# pull request and shows the findings {where}.
name: dra-guard
on:
  push:
  pull_request:
permissions:
  contents: read
{permissions}jobs:
  dra-guard:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: Install dra-guard
        run: python -m pip install "$DRA_GUARD_INSTALL"
        env:
          # A pip requirement for dra-guard: a wheel URL or git+https://...@<tag>{{install_note}}
          DRA_GUARD_INSTALL: {{install}}
"""
WORKFLOW = _WORKFLOW_HEAD.format(
    option="", where="in the Security tab (code scanning, SARIF)", permissions="  security-events: write\n"
) + (
    """\
      - run: dra-guard check --format sarif --output dra-guard.sarif .
      - uses: github/codeql-action/upload-sarif@v3
        if: always()
        with:
          sarif_file: dra-guard.sarif
"""
)
#: `init ci --annotations`, for repositories without code scanning: the findings as
#: annotations on the run and on the pull request's files (workflow commands).
ANNOTATIONS_WORKFLOW = _WORKFLOW_HEAD.format(
    option=" --annotations", where="as annotations on the run and the pull request's files", permissions=""
) + (
    """\
      # GitHub shows the first 10 errors and 10 warnings of a step as annotations; the log
      # holds every finding, and the last line counts them.
      - run: dra-guard check --format github .
"""
)


def init_ci(directory: str, install: str | None = None, annotations: bool = False) -> Change:
    """A GitHub Actions workflow that runs `dra-guard check` and uploads SARIF (or, with
    `annotations`, writes its findings as workflow annotations)."""
    workflow = ANNOTATIONS_WORKFLOW if annotations else WORKFLOW
    if install is None:
        text = workflow.format(
            install="${{ vars.DRA_GUARD_INSTALL }}", install_note=" (set it as a repository variable)"
        )
        note = "set the repository variable DRA_GUARD_INSTALL to a pip requirement for dra-guard"
    else:
        text = workflow.format(install=json.dumps(install), install_note="")
        note = ""
    return _create(directory, os.path.join(directory, WORKFLOW_FILE), text, note)


def run_init(
    targets: list[str],
    directory: str = ".",
    *,
    repo: str | None = None,
    rev: str | None = None,
    install: str | None = None,
    annotations: bool = False,
    virtualenv: str | None = None,
) -> list[Change | ScaffoldError]:
    """Write the requested targets in TARGETS order; a target that fails does not stop the others."""
    writers: Mapping[str, Callable[[], Sequence[Change]]] = {
        "cdk8s": lambda: init_cdk8s(directory),
        "pulumi": lambda: init_pulumi(directory, virtualenv, install),
        "config": lambda: [init_config(directory)],
        "pre-commit": lambda: [init_pre_commit(directory, repo, rev)],
        "ci": lambda: [init_ci(directory, install, annotations)],
    }
    results: list[Change | ScaffoldError] = []
    for target in TARGETS:
        if target in targets:
            try:
                results.extend(writers[target]())
            except ScaffoldError as error:
                results.append(error)
            except OSError as error:  # what no writer foresaw is still a one-line error
                results.append(ScaffoldError(f"{error.filename or target}: {error.strerror or error}"))
    return results
