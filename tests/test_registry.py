"""The registry checks each rule module's declaration and refuses a malformed one by name."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import pytest

from dra_guard.contract.findings import Severity
from dra_guard.ruleapi.admission_form import NotAdmissible
from dra_guard.ruleapi.declarations import Example, RuleModuleError
from dra_guard.ruleapi.options import STRING_SET, Option
from dra_guard.rules import RULE_MODULES, RULES, build_registry, load_registry
from dra_guard.rules import dra001_legacy_extended_resource as dra001
from testkit.paths import REPO_ROOT

FAILING = Example("fails", "kind: Pod\n", ("Pod/p#/spec",))
PASSING = Example("passes", "kind: Pod\n")


def module(name: str = "dra099_synthetic_rule", **overrides: Any) -> types.ModuleType:
    """A rule module built in memory, valid unless `overrides` break it."""
    declared: dict[str, Any] = {
        "ID": "DRA099",
        "NAME": "synthetic-rule",
        "SEVERITY": Severity.LOW,
        "SUMMARY": "s",
        "RATIONALE": "r",
        "REMEDIATION": "f",
        "KINDS": frozenset({"Pod"}),
        "CROSS_OBJECT": False,
        "WAIVABLE": True,
        "OPTIONS": (),
        "EXAMPLES": (FAILING, PASSING),
        "check": lambda resource, context: iter(()),
        "ADMISSION": NotAdmissible("a synthetic rule has no policy"),
    }
    declared.update(overrides)
    result = types.ModuleType(f"tests.synthetic.{name}")
    for key, value in declared.items():
        if value is not _MISSING:
            setattr(result, key, value)
    return result


_MISSING = object()


def test_the_catalog_keeps_its_ids() -> None:
    """IDs, names and severities are stable; new rules may only be added."""
    fixed = {
        "DRA001": ("legacy-extended-resource", "critical"),
        "DRA002": ("profile-not-pinned", "high"),
        "DRA003": ("exclusivity-undeclared", "high"),
        "DRA004": ("sanitization-undeclared", "critical"),
        "DRA005": ("shared-claim", "high"),
        "DRA006": ("admin-access", "critical"),
        "DRA007": ("temporal-sharing", "critical"),
        "DRA008": ("nondeterministic-allocation", "high"),
        "DRA009": ("claim-wiring", "medium"),
        "DRA010": ("invalid-dra-schema", "high"),
        "DRA011": ("topology-unaligned", "medium"),
        "DRA012": ("isolation-tag", "high"),
    }
    assert {rule_id: (RULES[rule_id].name, RULES[rule_id].severity.label) for rule_id in fixed} == fixed
    assert list(RULES) == sorted(RULES), "registered in ID order"
    assert [rule.module.rpartition(".")[2] for rule in RULES.values()] == list(RULE_MODULES)
    assert sorted(rule.id for rule in RULES.values() if not rule.waivable) == ["DRA004", "DRA006", "DRA016"]


def test_rule_scopes_by_kind() -> None:
    assert RULES["DRA001"].kinds is None  # legacy requests can hide in any object, CRDs included
    assert RULES["DRA002"].applies_to("ResourceClaimTemplate") and not RULES["DRA002"].applies_to("Deployment")
    assert RULES["DRA007"].applies_to("DeviceClass")
    # Pod templates can sit in any kind (workload CRDs, kinds nobody told us about).
    assert RULES["DRA005"].kinds is None and RULES["DRA009"].kinds is None


def test_options_are_collected_with_the_rule_that_declares_them() -> None:
    owners = {key: owner.id for key, option in RULES.options.items() if (owner := RULES.owner(option))}
    assert owners == {
        "extra-legacy-resources": "DRA001",
        "allowed-extended-resources": "DRA001",
        "admin-namespaces": "DRA006",
        "hmac-key-env": "DRA012",
        "resource-slices": "DRA014",
        "scrub-images": "DRA016",
        "unscrubbed-classes": "DRA016",
    }
    assert {"enable", "disable", "non-waivable", "non-accelerator-classes", "extra-classes"} <= set(RULES.options)


def test_a_valid_module_registers() -> None:
    registry = build_registry([dra001, module()])
    assert list(registry) == ["DRA001", "DRA099"] and registry["DRA099"].slug == "dra099-synthetic-rule"
    assert registry.find("dra099") is registry.find("synthetic-rule") is registry["DRA099"]


_broken: list[tuple[str, Callable[[], types.ModuleType], str]] = [
    ("missing constant", lambda: module(WAIVABLE=_MISSING), "missing WAIVABLE"),
    ("wrong type", lambda: module(SEVERITY="low"), "SEVERITY must be a Severity, not str"),
    ("kinds as a list", lambda: module(KINDS=["Pod"]), "KINDS must be a frozenset or NoneType, not list"),
    ("empty kinds", lambda: module(KINDS=frozenset()), "KINDS must be a non-empty frozenset"),
    ("bool as int", lambda: module(CROSS_OBJECT=1), "CROSS_OBJECT must be a bool, not int"),
    ("bad id", lambda: module(ID="DRA99"), "ID 'DRA99' is not DRA followed by three digits"),
    ("bad name", lambda: module(NAME="Synthetic_Rule"), "NAME 'Synthetic_Rule' is not kebab-case"),
    (
        "module name",
        lambda: module(name="dra099_other"),
        "a rule DRA099 named synthetic-rule lives in a module named dra099_synthetic_rule",
    ),
    ("empty text", lambda: module(SUMMARY=" "), "SUMMARY is empty"),
    ("no failing example", lambda: module(EXAMPLES=(PASSING,)), "no example that must fail"),
    ("no passing example", lambda: module(EXAMPLES=(FAILING,)), "no example that must pass"),
    ("example type", lambda: module(EXAMPLES=(FAILING, PASSING, "x")), "EXAMPLES must hold only Example"),
    ("option type", lambda: module(OPTIONS=("admin-namespaces",)), "OPTIONS must hold only Option"),
    ("check", lambda: module(check=None), "check(resource, context) is missing or not callable"),
    ("no admission", lambda: module(ADMISSION=_MISSING), "missing ADMISSION"),
    ("admission type", lambda: module(ADMISSION="DRA099"), "ADMISSION must be a function of the AdmissionTarget"),
    ("unexplained", lambda: module(ADMISSION=NotAdmissible(" ")), "ADMISSION is NotAdmissible without a reason"),
]


@pytest.mark.parametrize(
    ("make", "problem"), [(make, problem) for _, make, problem in _broken], ids=[i for i, *_ in _broken]
)
def test_malformed_modules_are_refused_by_name(make: Callable[[], types.ModuleType], problem: str) -> None:
    with pytest.raises(RuleModuleError) as raised:
        build_registry([make()])
    assert str(raised.value).startswith("rule module tests.synthetic.dra099_")
    assert problem in str(raised.value)


def test_duplicates_are_refused() -> None:
    with pytest.raises(RuleModuleError, match="duplicate rule ID DRA001"):
        build_registry([dra001, dra001])
    renamed = module(name="dra098_synthetic_rule", ID="DRA098")
    with pytest.raises(RuleModuleError, match="duplicate rule name synthetic-rule"):
        build_registry([module(), renamed])


@pytest.mark.parametrize("key", ["extra-legacy-resources", "non-waivable"])
def test_option_keys_are_unique_across_the_registry(key: str) -> None:
    clash = Option(key=key, type=STRING_SET, default=frozenset(), doc="d")
    with pytest.raises(RuleModuleError, match=f"option {key} clashes with the option of"):
        build_registry([dra001, module(OPTIONS=(clash,))])


def test_examples_may_only_set_known_options() -> None:
    example = Example("configured", "kind: Pod\n", config={"admin-namespaces": ["x"]})
    with pytest.raises(RuleModuleError, match="example 'configured' sets unknown option admin-namespaces"):
        build_registry([module(EXAMPLES=(FAILING, example))])


def test_extra_modules_that_cannot_be_imported_are_refused() -> None:
    with pytest.raises(RuleModuleError, match=r"DRA_GUARD_EXTRA_RULES: cannot import rule module no\.such\.module"):
        load_registry(["no.such.module"])


def test_every_rule_has_its_own_test_module() -> None:
    """A rule is its module plus tests/rules/test_<module>.py (yamllint's tests/rules/ layout)."""
    test_modules = sorted(path.stem.removeprefix("test_") for path in (REPO_ROOT / "tests" / "rules").glob("test_*.py"))
    assert test_modules == sorted(RULE_MODULES)
