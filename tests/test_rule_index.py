"""The rules' index: what the Pulumi pack lists at start-up without importing the rules."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from dra_guard.present import rule_index
from dra_guard.ruleapi.declarations import EXTRA_RULES_ENV
from dra_guard.rules import RULES
from testkit.paths import REPO_ROOT


def test_the_index_is_the_registrys() -> None:
    assert rule_index.INDEX_FILE.read_text(encoding="utf-8") == rule_index.render(RULES), (
        "dra_guard/rules/index.json is stale: run `make docs`"
    )


def test_loading_it_gives_what_the_registry_declares() -> None:
    index = rule_index.load({})
    assert [rule.id for rule in index.rules] == list(RULES)
    for facts in index.rules:
        rule = RULES[facts.id]
        assert dataclasses.astuple(facts) == (
            rule.id,
            rule.slug,
            rule.severity,
            rule.summary,
            rule.remediation,
            rule.cross_object,
        )
    # With extra rule modules named, only the registry knows them all: it is read instead
    # (tests/test_synthetic_rule.py starts the pack so, and finds the extra rule's policy).
    assert rule_index.load({EXTRA_RULES_ENV: "synthetic_rules.rule"}) == index  # this process has none


@pytest.mark.e2e
def test_the_pack_starts_without_the_rules_or_the_engine() -> None:
    probe = (
        "import sys; import pulumi_dra.analyze_once; from pulumi_dra.policies import build_policies; "
        "policies = build_policies(); "
        "print(len(policies), sorted(m for m in sys.modules if m.startswith(('dra_guard.rules', 'dra_guard.engine'))))"
    )
    environment = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=environment, cwd=REPO_ROOT
    )
    count, loaded = result.stdout.split(" ", 1)
    assert int(count) > len(RULES) and loaded.strip() == "[]"
