"""Configuration is validated in one place; unknown keys and values are errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dra_guard.config import Config, ConfigError, config_from_mapping, discover_config, load_config_file


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"disabel": []}, "unknown option 'disabel'"),
        ({"disable": ["DRA013"]}, "unknown rule DRA013"),
        ({"disable": "DRA001"}, "must be a list of strings"),
        ({"admin-namespaces": [1]}, "must be a list of strings"),
        ({"hmac-key-env": "not a name"}, "environment variable name"),
        ({"extra-classes": {"x.io": {"pin-attribute": "model"}}}, "qualified"),
        ({"extra-classes": {"x.io": {"pin-attribute": "x.io/model", "colour": "red"}}}, "unknown key colour"),
        ({"extra-classes": ["x.io"]}, "must map device class names"),
    ],
)
def test_bad_values_are_errors(values: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_mapping(values, "test.yaml")


def test_all_options() -> None:
    config = config_from_mapping(
        {
            "enable": ["DRA001", "DRA002"],
            "disable": ["DRA002"],
            "non-waivable": ["DRA001"],
            "admin-namespaces": ["gpu-admin"],
            "non-accelerator-classes": ["nic.example.com"],
            "extra-legacy-resources": ["example.com/gpu"],
            "extra-classes": {"fpga.example.org": {"pin-attribute": "fpga.example.org/bitstream"}},
            "hmac-key-env": "DRA_GUARD_KEY",
        }
    )
    assert config.rule_enabled("DRA001") and not config.rule_enabled("DRA002") and not config.rule_enabled("DRA003")
    assert not config.is_accelerator("nic.example.com") and config.is_accelerator("unknown.example.com")
    fpga = config.device_class("fpga.example.org")
    assert fpga is not None and fpga.topology_attribute == "resource.kubernetes.io/pcieRoot"
    assert config.with_hmac_key_from({"DRA_GUARD_KEY": "s3cret"}).hmac_key == b"s3cret"
    with pytest.raises(ConfigError, match="not set"):
        config.with_hmac_key_from({})


def test_discovery_prefers_dra_guard_yaml_and_ignores_unrelated_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert discover_config(tmp_path) == Config()
    (tmp_path / "pyproject.toml").write_text('[tool.dra-guard]\nadmin-namespaces = ["ops"]\n')
    assert discover_config(tmp_path).admin_namespaces == {"ops"}
    (tmp_path / ".dra-guard.yaml").write_text("admin-namespaces: [gpu-ops]\n")
    assert discover_config(tmp_path).admin_namespaces == {"gpu-ops"}


def test_broken_files_name_themselves(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.dra-guard\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config_file(tmp_path / "pyproject.toml")
    (tmp_path / "c.yaml").write_text("a: [\n")
    with pytest.raises(ConfigError, match=r"c\.yaml: invalid YAML"):
        load_config_file(tmp_path / "c.yaml")
