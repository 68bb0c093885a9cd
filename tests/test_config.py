"""Configuration is validated in one place; unknown keys and values are errors."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from dra_guard.read.config_file import discover_config, load_config_file, parse_config, parse_policy_config
from dra_guard.ruleapi.config import (
    DISABLE,
    ENABLE,
    EXTRA_CLASSES,
    NON_ACCELERATOR_CLASSES,
    NON_WAIVABLE,
    Config,
    ConfigError,
)
from dra_guard.rules import RULES
from dra_guard.rules.dra001_legacy_extended_resource import EXTRA_LEGACY_RESOURCES
from dra_guard.rules.dra006_admin_access import ADMIN_NAMESPACES
from dra_guard.rules.dra012_isolation_tag import HMAC_KEY_ENV
from testkit.paths import REPO_ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"disabel": []}, "unknown option 'disabel'"),
        ({"disable": ["DRA999"]}, "unknown rule DRA999"),
        ({"disable": "DRA001"}, "must be a list of strings"),
        ({"admin-namespaces": [1]}, "must be a list of strings"),
        ({"admin-namespaces": "ns"}, "admin-namespaces: must be a list of strings"),
        ({"hmac-key-env": "not a name"}, "environment variable name"),
        ({"extra-classes": {"x.io": {"pin-attribute": "model"}}}, "qualified"),
        ({"extra-classes": {"x.io": {"pin-attribute": "x.io/model", "colour": "red"}}}, "unknown key colour"),
        ({"extra-classes": ["x.io"]}, "must map device class names"),
        ({"extra-classes": {"x.io": {"pin-attribute": "x.io/model", "selector": "device.driver =="}}}, "not valid CEL"),
        ({"extra-classes": {"x.io": {"pin-attribute": "x.io/model", "selector": ""}}}, "the CEL expression"),
    ],
)
def test_bad_values_are_errors(values: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        parse_config(values, RULES, "test.yaml")
    assert str(raised.value).startswith("test.yaml: ")


def test_unknown_rules_name_the_known_ones() -> None:
    first, *_, last = RULES
    with pytest.raises(ConfigError, match=f"known rules are {first}-{last}$"):
        parse_config({"enable": ["DRA999"]}, RULES)


def test_all_options() -> None:
    first, second, third = list(RULES)[:3]
    config = parse_config(
        {
            "enable": [first, second],
            "disable": [second],
            "non-waivable": [first],
            "admin-namespaces": ["gpu-admin"],
            "non-accelerator-classes": ["nic.example.com"],
            "extra-legacy-resources": ["example.com/gpu"],
            "extra-classes": {"fpga.example.org": {"pin-attribute": "fpga.example.org/bitstream"}},
            "hmac-key-env": "DRA_GUARD_KEY",
        },
        RULES,
        environ={"DRA_GUARD_KEY": "s3cret"},
    )
    assert config.rule_enabled(first) and not config.rule_enabled(second) and not config.rule_enabled(third)
    assert config.get(NON_WAIVABLE) == {first}
    assert config.get(ADMIN_NAMESPACES) == {"gpu-admin"}
    assert config.get(EXTRA_LEGACY_RESOURCES) == {"example.com/gpu"}
    assert not config.is_accelerator("nic.example.com") and config.is_accelerator("unknown.example.com")
    fpga = config.device_class("fpga.example.org")
    # No topology-attribute given: nothing is known to be on every device, so no alignment.
    assert fpga is not None and fpga.topology == () and fpga.default_alignment is None
    secret = config.get(HMAC_KEY_ENV)
    assert secret is not None and secret.value == b"s3cret" and "s3cret" not in repr(config)


def test_defaults_are_the_declared_ones() -> None:
    config = Config()
    for option in RULES.options.values():
        assert config.get(option) == option.default
    assert config.get(ENABLE) is None and config.get(DISABLE) == frozenset()
    assert config.get(EXTRA_CLASSES) == {} and config.get(NON_ACCELERATOR_CLASSES) == frozenset()


def test_a_key_environment_variable_that_is_not_set_is_an_error() -> None:
    message = "test.yaml: hmac-key-env names DRA_KEY, which is not set or empty; isolation tags cannot be verified"
    for environ in ({}, {"DRA_KEY": ""}):
        with pytest.raises(ConfigError, match=f"^{message}"):
            parse_config({"hmac-key-env": "DRA_KEY"}, RULES, "test.yaml", environ=environ)


def test_a_key_handed_over_in_memory_may_be_bytes() -> None:
    config = parse_config({"hmac-key-env": "KEY"}, RULES, environ={"KEY": b"\xffkey"})
    secret = config.get(HMAC_KEY_ENV)
    assert secret is not None and secret.value == b"\xffkey" and secret.variable == "KEY"


def test_policy_config_uses_camel_case_keys_and_the_same_messages() -> None:
    config = parse_policy_config({"adminNamespaces": ["ops"]}, RULES, "policy p")
    assert config.get(ADMIN_NAMESPACES) == {"ops"}
    # A bare string is refused, not read as the set of its characters.
    with pytest.raises(ConfigError) as from_file:
        parse_config({"admin-namespaces": "ns"}, RULES, "source")
    with pytest.raises(ConfigError) as from_policy:
        parse_policy_config({"adminNamespaces": "ns"}, RULES, "source")
    assert str(from_file.value) == "source: admin-namespaces: must be a list of strings"
    assert str(from_policy.value) == "source: adminNamespaces: must be a list of strings"
    with pytest.raises(ConfigError, match="unknown option 'admin-namespaces'"):
        parse_policy_config({"admin-namespaces": ["ops"]}, RULES, "source")
    # Rule selection is the enforcement level's job in Pulumi.
    with pytest.raises(ConfigError, match="unknown option 'disable'"):
        parse_policy_config({"disable": []}, RULES, "source")


def test_discovery_prefers_dra_guard_yaml_and_ignores_unrelated_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert discover_config(tmp_path, RULES) == Config()
    (tmp_path / "pyproject.toml").write_text('[tool.dra-guard]\nadmin-namespaces = ["ops"]\n')
    assert discover_config(tmp_path, RULES).get(ADMIN_NAMESPACES) == {"ops"}
    (tmp_path / ".dra-guard.yaml").write_text("admin-namespaces: [gpu-ops]\n")
    assert discover_config(tmp_path, RULES).get(ADMIN_NAMESPACES) == {"gpu-ops"}


def test_broken_files_name_themselves(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.dra-guard\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config_file(tmp_path / "pyproject.toml", RULES)
    (tmp_path / "c.yaml").write_text("a: [\n")
    with pytest.raises(ConfigError, match=r"c\.yaml: invalid YAML"):
        load_config_file(tmp_path / "c.yaml", RULES)


def test_the_readme_configuration_example_is_valid_and_its_default_is_the_registrys() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("```toml\n[tool.dra-guard]\n", 1)[1].split("```", 1)[0]
    table = tomllib.loads(block)
    config = parse_config(table, RULES, "README.md", environ={table["hmac-key-env"]: "k"})
    assert set(config.values) == set(table)
    (line,) = [line for line in block.splitlines() if line.startswith("non-waivable")]
    assert line.endswith("# the default")
    assert table["non-waivable"] == [rule.id for rule in RULES.values() if not rule.waivable]
