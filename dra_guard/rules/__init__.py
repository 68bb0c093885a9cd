"""The rule registry: an explicit table from rule ID to the module that implements it."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType

from dra_guard.context import Context, Resource, Violation
from dra_guard.findings import Severity


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    severity: Severity
    summary: str
    rationale: str
    remediation: str
    check: Callable[[Resource, Context], Iterator[Violation]]
    #: Needs the whole input set (claim users, template lookups), not just one object.
    cross_object: bool = False
    #: The kinds it applies to; None for every kind (DRA001 scans every object).
    kinds: frozenset[str] | None = None

    def applies_to(self, kind: str) -> bool:
        return self.kinds is None or kind in self.kinds

    @property
    def slug(self) -> str:
        """`dra001-legacy-extended-resource`: the policy name used by front ends."""
        return f"{self.id.lower()}-{self.name}"


def _rule(module: ModuleType) -> Rule:
    return Rule(
        module.ID,
        module.NAME,
        module.SEVERITY,
        module.SUMMARY,
        module.RATIONALE,
        module.REMEDIATION,
        module.check,
        getattr(module, "CROSS_OBJECT", False),
        frozenset(module.KINDS) if hasattr(module, "KINDS") else None,
    )


def build_registry(modules: list[ModuleType]) -> Mapping[str, Rule]:
    """ID -> rule; refuses a second rule with an ID or name already taken."""
    registry: dict[str, Rule] = {}
    names: set[str] = set()
    for module in modules:
        rule = _rule(module)
        if rule.id in registry or rule.name in names:
            raise ValueError(f"duplicate rule {rule.id} {rule.name}")
        registry[rule.id] = rule
        names.add(rule.name)
    return registry


#: The catalog, in ID order: one module per rule, named dra0NN_<rule name>.
RULE_MODULES = (
    "dra001_legacy_extended_resource",
    "dra002_profile_not_pinned",
    "dra003_exclusivity_undeclared",
    "dra004_sanitization_undeclared",
    "dra005_shared_claim",
    "dra006_admin_access",
    "dra007_temporal_sharing",
    "dra008_nondeterministic_allocation",
    "dra009_claim_wiring",
    "dra010_invalid_dra_schema",
    "dra011_topology_unaligned",
    "dra012_isolation_tag",
)

RULES: Mapping[str, Rule] = build_registry([importlib.import_module(f"{__name__}.{module}") for module in RULE_MODULES])
