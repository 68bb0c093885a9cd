"""Configurations as the reading layer gives them: the file that applies to a path (found as
ruff finds its own), read and parsed, with the files its options name read too
(`resource-slices`).  `dra_guard.ruleapi.config` parses values and opens nothing; these are
the functions that may open files, and the ones the CLI, `enforce()` and the pack call."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

import yaml

from dra_guard.read.loader import load_paths
from dra_guard.read.walk import repository_root
from dra_guard.ruleapi import config as values
from dra_guard.ruleapi.config import CONFIG_FILE_NAMES, Config, ConfigError, OptionCatalog


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
        table = document.get("tool", {}).get("dra-guard", {})
        return parse_config(table, catalog, f"{file} [tool.dra-guard]", environ=environ, directory=directory)
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"{file}: invalid YAML: {error}") from None
    return parse_config(document or {}, catalog, str(file), environ=environ, directory=directory)


def find_config_file(start: str | os.PathLike[str]) -> str | None:
    """The configuration that applies to `start`, found as ruff finds its own.

    From `start` (a file's folder, or a folder) up to the root of the git repository it
    is in (the filesystem root outside one), the first folder with a `.dra-guard.yaml`,
    `.dra-guard.yml` or a `pyproject.toml` that has a `[tool.dra-guard]` table wins.
    """
    directory = os.path.abspath(start)
    while not os.path.isdir(directory):  # a file, a glob or a path that does not exist
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    root = repository_root(directory)
    while True:
        for name in CONFIG_FILE_NAMES:
            candidate = os.path.join(directory, name)
            if not os.path.isfile(candidate):
                continue
            if name == "pyproject.toml":
                with open(candidate, encoding="utf-8", errors="replace") as handle:
                    if "[tool.dra-guard" not in handle.read():
                        continue
            return _as_given(candidate)
        parent = os.path.dirname(directory)
        if directory in (root, parent):
            return None
        directory = parent


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
