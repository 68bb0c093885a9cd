"""The configuration's JSON Schema (dra_guard/config.schema.json) is what the option
declarations derive, accepts what the parser accepts and refuses what it refuses."""

from __future__ import annotations

import datetime
import json
from typing import Any

import jsonschema
import pytest
import tomllib
import yaml

from dra_guard.present.config_schema import SCHEMA_FILE, render
from dra_guard.read.config_file import parse_config
from dra_guard.ruleapi.options import ConfigError
from dra_guard.rules import RULES
from testkit.paths import REPO_ROOT

REPO_FIXTURE_CONFIG = REPO_ROOT / "tests" / "fixtures" / "repo" / ".dra-guard.yaml"


def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return schema


def test_the_shipped_schema_is_the_registrys() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == render(RULES), (
        "stale: python -m dra_guard.present.config_schema > dra_guard/config.schema.json (make docs)"
    )
    jsonschema.Draft202012Validator.check_schema(_schema())
    assert set(_schema()["properties"]) == set(RULES.options)


def _readme_table() -> dict[str, Any]:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("```toml\n[tool.dra-guard]\n", 1)[1].split("```", 1)[0]
    return tomllib.loads(block)


@pytest.mark.parametrize(
    "values",
    [
        pytest.param(_readme_table(), id="readme-example"),
        pytest.param(
            yaml.safe_load((REPO_ROOT / "tests" / "fixtures" / "repo" / ".dra-guard.yaml").read_text()),
            id="repo-fixture",
        ),
        pytest.param({}, id="empty"),
        pytest.param({"unscrubbed-classes": {"tpu.google.com": "single-tenant pool"}}, id="accepted-class"),
    ],
)
def test_what_the_parser_accepts_the_schema_accepts(values: dict[str, Any]) -> None:
    parse_config(values, RULES, "test", environ={"KEY": "k", values.get("hmac-key-env", "KEY"): "k"})
    jsonschema.validate(_as_json(values), _schema())


def _as_json(value: Any) -> Any:
    """A TOML or YAML date as JSON (and the editors' schema tools) see it: its ISO text."""
    if isinstance(value, dict):
        return {key: _as_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_json(item) for item in value]
    return value.isoformat() if isinstance(value, datetime.date) else value


@pytest.mark.parametrize(
    "values",
    [
        pytest.param({"no-such-option": 1}, id="unknown-key"),
        pytest.param({"admin-namespaces": "ops"}, id="a-string-for-a-list"),
        pytest.param({"unscrubbed-classes": ["tpu.google.com"]}, id="a-list-for-a-mapping"),
    ],
)
def test_what_the_parser_refuses_the_schema_refuses(values: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        parse_config(values, RULES, "test")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(values, _schema())
