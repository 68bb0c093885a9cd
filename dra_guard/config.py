"""Configuration: `[tool.dra-guard]` in pyproject.toml, `.dra-guard.yaml`, enforce() and the
Pulumi pack's policy config, all read by one parser.

The accepted keys are the options the registry knows: those declared here (shared by
several rules, or about rule selection) and those each rule module declares for itself.
Unknown keys are errors, so a misspelt `disabel` never silently turns nothing off.  This
module does not import the rules: callers hand the registry in as an `OptionCatalog`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, TypeVar, cast

import yaml

from dra_guard.catalog import DEVICE_CLASSES, PCIE_ROOT, DeviceClass
from dra_guard.options import RULE_IDS, STRING_LIST, STRING_SET, ConfigError, Option, OptionType, ParseContext
from dra_guard.walk import repository_root

__all__ = [
    "CONFIG_FILE_NAMES",
    "CORE_OPTIONS",
    "EXCLUDE",
    "Config",
    "ConfigError",
    "OptionCatalog",
    "discover_config",
    "load_config_file",
    "parse_config",
    "parse_policy_config",
]

T = TypeVar("T")
CONFIG_FILE_NAMES = (".dra-guard.yaml", ".dra-guard.yml", "pyproject.toml")


class DeviceClassMap(OptionType[Mapping[str, DeviceClass]]):
    """Device classes the catalog does not know, each with the attribute that pins a profile."""

    description = "mapping of device class name to {pin-attribute, topology-attribute}"
    _KEYS = ("pin-attribute", "topology-attribute")

    def parse(self, key: str, value: object, context: ParseContext) -> Mapping[str, DeviceClass]:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{key}: must map device class names to {{pin-attribute, topology-attribute}}")
        classes = {}
        for name, spec in value.items():
            if not isinstance(spec, Mapping) or not isinstance(spec.get("pin-attribute"), str):
                raise ConfigError(f"{key}.{name}: needs pin-attribute: '<driver domain>/<attribute>'")
            unknown = sorted(set(spec) - set(self._KEYS))
            if unknown:
                raise ConfigError(f"{key}.{name}: unknown key {', '.join(unknown)}")
            domain, slash, attribute = spec["pin-attribute"].partition("/")
            if not slash or not domain or not attribute:
                raise ConfigError(f"{key}.{name}.pin-attribute: must be qualified as '<driver domain>/<attribute>'")
            topology = spec.get("topology-attribute", PCIE_ROOT)
            if not isinstance(topology, str) or "/" not in topology:
                raise ConfigError(f"{key}.{name}.topology-attribute: must be a qualified attribute name")
            classes[str(name)] = DeviceClass(str(name), domain, attribute, topology)
        return MappingProxyType(classes)

    def json_schema(self) -> dict[str, Any]:
        attribute = {"type": "string", "pattern": "^[^/]+/.+$"}
        return {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {key: attribute for key in self._KEYS},
                "required": ["pin-attribute"],
                "additionalProperties": False,
            },
        }

    def to_json(self, value: object) -> Any:
        if not isinstance(value, Mapping):
            return value
        return {
            name: {"pin-attribute": item.qualified_pin_attribute, "topology-attribute": item.topology_attribute}
            for name, item in sorted(value.items())
        }


# --- the options several rules share (each rule module declares its own) -------------

ENABLE: Option[frozenset[str] | None] = Option(
    key="enable",
    type=RULE_IDS,
    default=None,
    doc="Run only these rules.",
    default_doc="every rule",
    selects_rules=True,
)
DISABLE = Option(key="disable", type=RULE_IDS, default=frozenset(), doc="Do not run these rules.", selects_rules=True)
NON_WAIVABLE: Option[frozenset[str] | None] = Option(
    key="non-waivable",
    type=RULE_IDS,
    default=None,
    doc="Rules whose findings an ignore annotation cannot waive; an empty list makes every rule waivable.",
    default_doc="the rules marked not waivable",
)
NON_ACCELERATOR_CLASSES = Option(
    key="non-accelerator-classes",
    type=STRING_SET,
    default=frozenset(),
    doc="Device classes that are not accelerators (NICs, ...): their requests are not checked. "
    "Every other class counts as an accelerator, including classes dra-guard does not know.",
)
EXTRA_CLASSES: Option[Mapping[str, DeviceClass]] = Option(
    key="extra-classes",
    type=DeviceClassMap(),
    default=MappingProxyType({}),
    doc="Device classes dra-guard does not know, with the attribute that pins a profile "
    "(`<driver domain>/<attribute>`) and, optionally, the attribute that aligns devices "
    "(default resource.kubernetes.io/pcieRoot).",
)
EXCLUDE: Option[tuple[str, ...]] = Option(
    key="exclude",
    type=STRING_LIST,
    default=(),
    doc="Paths `dra-guard check` leaves out of directory walks, as .gitignore patterns relative to "
    "the configuration file's directory (`charts/legacy/`, `*.generated.yaml`). Files named on the "
    "command line are still checked.",
    default_doc="nothing",
    selects_files=True,
)
CORE_OPTIONS: tuple[Option[Any], ...] = (
    ENABLE,
    DISABLE,
    NON_WAIVABLE,
    NON_ACCELERATOR_CLASSES,
    EXTRA_CLASSES,
    EXCLUDE,
)


class OptionCatalog(Protocol):
    """What the parser needs from the rule registry."""

    @property
    def options(self) -> Mapping[str, Option[Any]]:
        """Every option by its kebab-case key: CORE_OPTIONS, then each rule's."""

    @property
    def rule_ids(self) -> Sequence[str]: ...


@dataclass(frozen=True)
class Config:
    """Parsed option values by key; an option that was not set reads as its default."""

    values: Mapping[str, object] = field(default_factory=dict)
    #: Where the values came from, for messages.
    source: str | None = None

    def get(self, option: Option[T]) -> T:
        if option.key in self.values:
            return cast(T, self.values[option.key])
        return option.default

    def with_value(self, option: Option[T], value: T) -> Config:
        return Config({**self.values, option.key: value}, self.source)

    def rule_enabled(self, rule_id: str) -> bool:
        enabled = self.get(ENABLE)
        return (enabled is None or rule_id in enabled) and rule_id not in self.get(DISABLE)

    def device_class(self, name: str) -> DeviceClass | None:
        return self.get(EXTRA_CLASSES).get(name) or DEVICE_CLASSES.get(name)

    def is_accelerator(self, device_class: str) -> bool:
        # Fail closed: a class nobody told us about is an accelerator.
        return device_class not in self.get(NON_ACCELERATOR_CLASSES)


def parse_config(
    values: object, catalog: OptionCatalog, source: str = "config", *, environ: Mapping[str, str | bytes] = os.environ
) -> Config:
    """Options as written in a configuration file: kebab-case keys."""
    spelt = {option.key: option for option in catalog.options.values()}
    return _parse(values, spelt, source, ParseContext(catalog.rule_ids, environ))


def parse_policy_config(
    values: object, catalog: OptionCatalog, source: str, *, environ: Mapping[str, str | bytes] = os.environ
) -> Config:
    """A Pulumi policy's config: camelCase keys, no rule selection (enforcement levels do
    that) and no file selection (the pack reads no files)."""
    spelt = {option.camel_key: option for option in catalog.options.values() if policy_option(option)}
    return _parse(values, spelt, source, ParseContext(catalog.rule_ids, environ))


def policy_option(option: Option[Any]) -> bool:
    """Whether the Pulumi pack takes this option."""
    return not option.selects_rules and not option.selects_files


def _parse(values: object, spelt: Mapping[str, Option[Any]], source: str, context: ParseContext) -> Config:
    if not isinstance(values, Mapping):
        raise ConfigError(f"{source}: must be a mapping of options")
    parsed: dict[str, object] = {}
    for key, value in values.items():
        option = spelt.get(key)
        if option is None:
            raise ConfigError(f"{source}: unknown option {key!r}; known options: {', '.join(spelt)}")
        try:
            parsed[option.key] = option.parse(key, value, context)
        except ConfigError as error:
            raise ConfigError(f"{source}: {error}") from None
    return Config(parsed, source)


def load_config_file(
    path: str | os.PathLike[str], catalog: OptionCatalog, *, environ: Mapping[str, str | bytes] = os.environ
) -> Config:
    file = os.fspath(path)
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
        return parse_config(table, catalog, f"{file} [tool.dra-guard]", environ=environ)
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"{file}: invalid YAML: {error}") from None
    return parse_config(document or {}, catalog, str(file), environ=environ)


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
