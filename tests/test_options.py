"""Option declarations: keys, the keys Pulumi sees, schemas, and parsing by type."""

from __future__ import annotations

import pytest

from dra_guard.ruleapi.options import RULE_IDS, STRING_SET, ConfigError, EnvSecret, Option, ParseContext, Secret

CONTEXT = ParseContext(rule_ids=("DRA001", "DRA002", "DRA003", "DRA099"), environ={"KEY": "k"})


def test_keys_are_kebab_case_and_pulumi_gets_camel_case() -> None:
    option = Option(key="extra-legacy-resources", type=STRING_SET, default=frozenset(), doc="d")
    assert option.camel_key == "extraLegacyResources"
    assert Option(key="enable", type=RULE_IDS, default=None, doc="d").camel_key == "enable"
    for bad in ("Extra", "extra_legacy", "extra--legacy", "-extra", "extra-"):
        with pytest.raises(ValueError, match="is not kebab-case"):
            Option(key=bad, type=STRING_SET, default=frozenset(), doc="d")
    with pytest.raises(TypeError, match="type must be an OptionType"):
        Option(key="x", type=list, default=[], doc="d")  # type: ignore[arg-type]


def test_schema_carries_the_doc_and_a_writable_default() -> None:
    listed = Option(key="names", type=STRING_SET, default=frozenset({"b", "a"}), doc="Some names.")
    assert listed.schema() == {
        "type": "array",
        "items": {"type": "string"},
        "description": "Some names.",
        "default": ["a", "b"],
    }
    secret: Option[Secret | None] = Option(key="key-env", type=EnvSecret("x"), default=None, doc="d")
    assert "default" not in secret.schema() and secret.schema()["type"] == "string"


def test_rule_id_sets_name_the_known_rules_as_ranges() -> None:
    assert RULE_IDS.parse("enable", ["DRA002"], CONTEXT) == {"DRA002"}
    with pytest.raises(
        ConfigError, match=r"^enable: unknown rule DRA004, DRA005; known rules are DRA001-DRA003, DRA099$"
    ):
        RULE_IDS.parse("enable", ["DRA005", "DRA004", "DRA001"], CONTEXT)


@pytest.mark.parametrize("value", ["ns", [""], [1], None, {"a": 1}])
def test_string_sets_refuse_anything_but_a_list_of_strings(value: object) -> None:
    with pytest.raises(ConfigError, match=r"^key: must be a list of strings$"):
        STRING_SET.parse("key", value, CONTEXT)


def test_secrets_are_read_from_the_environment_when_parsed() -> None:
    needed = EnvSecret(needed_for="nothing works")
    assert needed.parse("key-env", "KEY", CONTEXT) == Secret("KEY", b"k")
    with pytest.raises(ConfigError, match=r"^key-env names OTHER, which is not set or empty; nothing works$"):
        needed.parse("key-env", "OTHER", CONTEXT)
    with pytest.raises(ConfigError, match=r"^key-env: must be an environment variable name$"):
        needed.parse("key-env", "1BAD", CONTEXT)
