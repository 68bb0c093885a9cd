"""What the registry declares about each rule and option, read without importing the rules.

A front end that lists the rules before it checks anything -- the Pulumi pack names its
policies when it starts, and checks at the first Analyze -- would otherwise import every
rule module and the engine below them, which costs more than the policy SDK itself
(README, "Performance").  `rules/index.json` holds the declarations as `describe()`
derives them from the registry; `make docs` writes it and `tests/test_rule_index.py` fails
while it is stale.  With extra rule modules (`DRA_GUARD_EXTRA_RULES`) only the registry
knows every rule, so `load()` derives the index from it instead.

    python -m dra_guard.present.rule_index > dra_guard/rules/index.json
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dra_guard.contract.findings import Severity
from dra_guard.ruleapi.declarations import EXTRA_RULES_ENV

if TYPE_CHECKING:
    from dra_guard.rules import Registry

INDEX_FILE = Path(__file__).parent.parent / "rules" / "index.json"


@dataclass(frozen=True)
class RuleFacts:
    """A rule as a front end lists it."""

    id: str
    slug: str
    severity: Severity
    summary: str
    remediation: str
    #: Whether some of its findings need the whole object set (see `Rule.cross_object`).
    cross_object: bool


@dataclass(frozen=True)
class RuleIndex:
    rules: tuple[RuleFacts, ...]
    #: The JSON schema of each option the Pulumi pack takes, by its camelCase key.
    policy_options: Mapping[str, Any]


def describe(registry: Registry) -> dict[str, Any]:
    """The index of `registry`, as `rules/index.json` holds it."""
    from dra_guard.ruleapi.config import policy_option

    return {
        "rules": [
            {
                "id": rule.id,
                "slug": rule.slug,
                "severity": rule.severity.label,
                "summary": rule.summary,
                "remediation": rule.remediation,
                "cross_object": rule.cross_object,
            }
            for rule in registry.values()
        ],
        "policy_options": {
            option.camel_key: option.schema() for option in registry.options.values() if policy_option(option)
        },
    }


def _index(described: Mapping[str, Any]) -> RuleIndex:
    rules = tuple(
        RuleFacts(
            id=rule["id"],
            slug=rule["slug"],
            severity=Severity.parse(rule["severity"]),
            summary=rule["summary"],
            remediation=rule["remediation"],
            cross_object=rule["cross_object"],
        )
        for rule in described["rules"]
    )
    return RuleIndex(rules, described["policy_options"])


def load(environ: Mapping[str, str] = os.environ) -> RuleIndex:
    """The rules and options, from `rules/index.json` unless extra rule modules are named."""
    if environ.get(EXTRA_RULES_ENV, "").strip():
        from dra_guard.rules import RULES

        return _index(json.loads(json.dumps(describe(RULES))))
    return _index(json.loads(INDEX_FILE.read_text(encoding="utf-8")))


def render(registry: Registry) -> str:
    return json.dumps(describe(registry), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    from dra_guard.rules import RULES

    print(render(RULES), end="")
