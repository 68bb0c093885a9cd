"""Configurations as the reading layer gives them: the file that applies to a path (found as
ruff finds its own), read and parsed, with the files its options name read too
(`resource-slices`).  `dra_guard.ruleapi.config` parses values and opens nothing; these are
the functions that may open files, and the ones the CLI, `enforce()` and the pack call."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any, NamedTuple

import yaml

from dra_guard.read.files import Refused, read_regular
from dra_guard.read.loader import load_paths
from dra_guard.read.walk import repository_root
from dra_guard.ruleapi import config as values
from dra_guard.ruleapi.config import CONFIG_FILE_NAMES, MAX_FILE_BYTES, Config, ConfigError, OptionCatalog


def read_manifests(path: str) -> list[Any]:
    """The objects in the file of manifests `path` (`ParseContext.read_manifests`): read as
    `check` reads it; what it cannot read is a ConfigError naming the file and line."""
    loaded = load_paths([path])
    if loaded.errors:
        raise ConfigError(str(loaded.errors[0]))
    return [document.obj for document in loaded.documents]


def parse_config(
    options: object,
    catalog: OptionCatalog,
    source: str = "config",
    *,
    environ: Mapping[str, str | bytes] = os.environ,
    directory: str | None = None,
) -> Config:
    """`dra_guard.ruleapi.config.parse_config`, reading the files its options name."""
    return values.parse_config(
        options, catalog, source, environ=environ, directory=directory, read_manifests=read_manifests
    )


def parse_policy_config(
    options: object, catalog: OptionCatalog, source: str, *, environ: Mapping[str, str | bytes] = os.environ
) -> Config:
    """`dra_guard.ruleapi.config.parse_policy_config`, reading the files its options name."""
    return values.parse_policy_config(options, catalog, source, environ=environ, read_manifests=read_manifests)


def load_config_file(
    path: str | os.PathLike[str], catalog: OptionCatalog, *, environ: Mapping[str, str | bytes] = os.environ
) -> Config:
    file = os.fspath(path)
    directory = os.path.dirname(file) or os.curdir
    try:
        with open(file, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{file}: cannot read: {error}") from None
    if file.endswith(".toml"):
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover - Python 3.10
            import tomli as tomllib  # type: ignore[import-not-found, no-redef, unused-ignore]
        try:
            document = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise ConfigError(f"{file}: invalid TOML: {error}") from None
        except RecursionError:
            raise ConfigError(f"{file}: TOML nested too deeply to be a configuration") from None
        table = document.get("tool", {}).get("dra-guard", {})
        return parse_config(table, catalog, f"{file} [tool.dra-guard]", environ=environ, directory=directory)
    try:
        document = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError) as error:  # ValueError: a date that does not exist (2027-02-30)
        raise ConfigError(f"{file}: invalid YAML: {error}") from None
    except RecursionError:
        raise ConfigError(f"{file}: YAML nested too deeply to be a configuration") from None
    return parse_config(document or {}, catalog, str(file), environ=environ, directory=directory)


class Discovered(NamedTuple):
    """What configuration discovery found: the file (None: none applies), and the
    candidates it passed over, each with why (for a note on stderr)."""

    path: str | None
    ignored: tuple[str, ...] = ()


def find_config_file(start: str | os.PathLike[str]) -> str | None:
    """The configuration that applies to `start` (see `locate_config_file`)."""
    return locate_config_file(start).path


def locate_config_file(start: str | os.PathLike[str]) -> Discovered:
    """The configuration that applies to `start`, found as ruff finds its own.

    From `start` (a file's folder, or a folder) up, the first folder with a
    `.dra-guard.yaml`, `.dra-guard.yml` or a `pyproject.toml` that has a `[tool.dra-guard]`
    table wins.  Inside a git repository the search stops at its root.  Outside one it
    stops at the user's home directory, never above it (a `start` outside the home
    directory is the only folder looked at), and, as git's `safe.directory` does, passes
    over a file that neither the current user nor root owns: a configuration can turn
    rules off, so one that someone else wrote (in a shared `/tmp`) is not obeyed.
    """
    directory = os.path.abspath(start)
    while not os.path.isdir(directory):  # a file, a glob or a path that does not exist
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    root = repository_root(directory)
    if root is not None:
        ceiling = root
    else:
        home = _home()
        ceiling = home if home is not None and _within(directory, home) else directory
    ignored: list[str] = []
    while True:
        for name in CONFIG_FILE_NAMES:
            candidate = os.path.join(directory, name)
            if not os.path.isfile(candidate):
                continue
            if root is None and (owner := _foreign_owner(candidate)) is not None:
                ignored.append(f"{_as_given(candidate)}: {owner}")
                continue
            if name == "pyproject.toml":
                try:
                    text = read_regular(candidate, MAX_FILE_BYTES.default)
                except (OSError, Refused):
                    continue
                if b"[tool.dra-guard" not in text:
                    continue
            return Discovered(_as_given(candidate), tuple(ignored))
        parent = os.path.dirname(directory)
        if directory in (ceiling, parent):
            return Discovered(None, tuple(ignored))
        directory = parent


def _home() -> str | None:
    """The user's home directory ($HOME), absolute, or None when there is none."""
    home = os.path.expanduser("~")
    return os.path.abspath(home) if home != "~" and os.path.isabs(home) else None


def _within(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # another drive
        return False


def _foreign_owner(path: str) -> str | None:
    """Why `path` is not to be trusted: owned by someone other than the current user and
    root (None: it may be read; always None where the OS has no owners)."""
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None:
        return None
    try:
        owner = os.stat(path).st_uid
    except OSError:
        return None
    user = geteuid()
    if owner in (user, 0):
        return None
    return f"owned by uid {owner}, not by you (uid {user}) or root (as git's safe.directory asks)"


def _as_given(path: str) -> str:
    """`./.dra-guard.yaml` under the working directory (as messages have always named it),
    the absolute path elsewhere."""
    relative = os.path.relpath(path)
    if relative.startswith(os.pardir):
        return path
    return os.path.join(os.curdir, relative)


def discover_config(
    start: str | os.PathLike[str], catalog: OptionCatalog, *, environ: Mapping[str, str | bytes] = os.environ
) -> Config:
    """The configuration `find_config_file(start)` finds, or the defaults."""
    found = find_config_file(start)
    return load_config_file(found, catalog, environ=environ) if found is not None else Config()
