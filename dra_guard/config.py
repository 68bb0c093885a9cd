"""Configuration: `[tool.dra-guard]` in pyproject.toml or `.dra-guard.yaml`.

The accepted keys, their types and defaults are declared once in `OPTIONS`; everything
else is an error, so a misspelt `disabel` never silently turns nothing off.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from dra_guard.catalog import DEVICE_CLASSES, PCIE_ROOT, DeviceClass

CONFIG_FILE_NAMES = (".dra-guard.yaml", ".dra-guard.yml", "pyproject.toml")
DEFAULT_NON_WAIVABLE = frozenset({"DRA004", "DRA006"})
_RULE_ID = re.compile(r"DRA\d{3}")


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the file and key."""


@dataclass(frozen=True)
class Config:
    #: When set, only these rules run.
    enable: frozenset[str] | None = None
    disable: frozenset[str] = frozenset()
    non_waivable: frozenset[str] = DEFAULT_NON_WAIVABLE
    admin_namespaces: frozenset[str] = frozenset()
    non_accelerator_classes: frozenset[str] = frozenset()
    extra_legacy_resources: frozenset[str] = frozenset()
    extra_classes: Mapping[str, DeviceClass] = field(default_factory=dict)
    #: Name of the environment variable holding the isolation-tag HMAC key.
    hmac_key_env: str | None = None
    #: The key itself, resolved from the environment by `with_hmac_key_from()`.
    hmac_key: bytes | None = field(default=None, repr=False)
    source: str | None = None

    def rule_enabled(self, rule_id: str) -> bool:
        return (self.enable is None or rule_id in self.enable) and rule_id not in self.disable

    def device_class(self, name: str) -> DeviceClass | None:
        return self.extra_classes.get(name) or DEVICE_CLASSES.get(name)

    def is_accelerator(self, device_class: str) -> bool:
        # Fail closed: a class nobody told us about is an accelerator.
        return device_class not in self.non_accelerator_classes

    def with_hmac_key_from(self, environ: Mapping[str, str]) -> Config:
        if self.hmac_key_env is None:
            return self
        value = environ.get(self.hmac_key_env)
        if not value:
            raise ConfigError(
                f"{self.source or 'config'}: hmac-key-env names {self.hmac_key_env}, which is not set or empty; "
                "isolation tags cannot be verified without the key"
            )
        return replace(self, hmac_key=value.encode("utf-8"))


def _rule_ids(key: str, value: Any) -> frozenset[str]:
    from dra_guard.rules import RULES

    names = _strings(key, value)
    unknown = sorted(name for name in names if name not in RULES)
    if unknown:
        raise ConfigError(f"{key}: unknown rule {', '.join(unknown)}; known rules are DRA001-DRA{len(RULES):03d}")
    return names


def _strings(key: str, value: Any) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise ConfigError(f"{key}: must be a list of strings")
    return frozenset(value)


def _env_name(key: str, value: Any) -> str:
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        raise ConfigError(f"{key}: must be an environment variable name")
    return value


def _extra_classes(key: str, value: Any) -> dict[str, DeviceClass]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{key}: must map device class names to {{pin-attribute, topology-attribute}}")
    classes = {}
    for name, spec in value.items():
        if not isinstance(spec, Mapping) or not isinstance(spec.get("pin-attribute"), str):
            raise ConfigError(f"{key}.{name}: needs pin-attribute: '<driver domain>/<attribute>'")
        unknown = sorted(set(spec) - {"pin-attribute", "topology-attribute"})
        if unknown:
            raise ConfigError(f"{key}.{name}: unknown key {', '.join(unknown)}")
        domain, slash, attribute = spec["pin-attribute"].partition("/")
        if not slash or not domain or not attribute:
            raise ConfigError(f"{key}.{name}.pin-attribute: must be qualified as '<driver domain>/<attribute>'")
        topology = spec.get("topology-attribute", PCIE_ROOT)
        if not isinstance(topology, str) or "/" not in topology:
            raise ConfigError(f"{key}.{name}.topology-attribute: must be a qualified attribute name")
        classes[str(name)] = DeviceClass(str(name), domain, attribute, topology)
    return classes


# key -> (Config field, parser)
OPTIONS: Mapping[str, tuple[str, Callable[[str, Any], Any]]] = {
    "enable": ("enable", _rule_ids),
    "disable": ("disable", _rule_ids),
    "non-waivable": ("non_waivable", _rule_ids),
    "admin-namespaces": ("admin_namespaces", _strings),
    "non-accelerator-classes": ("non_accelerator_classes", _strings),
    "extra-legacy-resources": ("extra_legacy_resources", _strings),
    "extra-classes": ("extra_classes", _extra_classes),
    "hmac-key-env": ("hmac_key_env", _env_name),
}


def config_from_mapping(values: Mapping[str, Any], source: str = "config") -> Config:
    if not isinstance(values, Mapping):
        raise ConfigError(f"{source}: must be a mapping of options")
    settings: dict[str, Any] = {"source": source}
    for key, value in values.items():
        if key not in OPTIONS:
            raise ConfigError(f"{source}: unknown option {key!r}; known options: {', '.join(OPTIONS)}")
        field_name, parse = OPTIONS[key]
        try:
            settings[field_name] = parse(key, value)
        except ConfigError as error:
            raise ConfigError(f"{source}: {error}") from None
    return Config(**settings)


def load_config_file(path: str | os.PathLike[str]) -> Config:
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
        return config_from_mapping(document.get("tool", {}).get("dra-guard", {}), f"{file} [tool.dra-guard]")
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"{file}: invalid YAML: {error}") from None
    return config_from_mapping(document or {}, str(file))


def discover_config(directory: str | os.PathLike[str] = ".") -> Config:
    """The first of .dra-guard.yaml / pyproject.toml (with a [tool.dra-guard] table) here."""
    for name in CONFIG_FILE_NAMES:
        candidate = os.path.join(directory, name)
        if not os.path.isfile(candidate):
            continue
        if name == "pyproject.toml":
            with open(candidate, encoding="utf-8", errors="replace") as handle:
                if "[tool.dra-guard" not in handle.read():
                    continue
        return load_config_file(candidate)
    return Config()
