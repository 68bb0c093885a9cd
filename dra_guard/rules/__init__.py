"""The rule registry: an explicit, ordered list of rule modules, each checked as it registers.

A rule is one module, `dra0NN_<name>.py`, whose top declares everything about it (see
`_CONSTANTS`): identity, severity and texts, the kinds it looks at, whether it needs the
whole object set, whether it can be waived, its options and its examples; whose
`check(resource, context)` yields violations; and whose `ADMISSION` is its CEL form for the
API server, or `NotAdmissible("why")` (`dra_guard.ruleapi.admission_form`).  Everything else (the config parser, CLI
listings, docs/rules.md, SARIF metadata, the Pulumi policies) is derived from here.

`DRA_GUARD_EXTRA_RULES` (comma-separated module names) appends rule modules from outside
this package, in order, through the same checks: how a rule can be tried, and tested,
without editing anything else.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, ValuesView
from dataclasses import dataclass, field
from types import MappingProxyType, ModuleType
from typing import Any

from dra_guard.contract.findings import Severity
from dra_guard.ruleapi.admission_form import AdmissionDeclaration, NotAdmissible
from dra_guard.ruleapi.config import CORE_OPTIONS
from dra_guard.ruleapi.context import Context, Pending, Resource, Violation
from dra_guard.ruleapi.declarations import EXTRA_RULES_ENV, Example, RuleModuleError
from dra_guard.ruleapi.options import Option

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
    "dra013_extended_resource_class",
    "dra014_unsatisfiable",
    "dra015_blanket_device_toleration",
    "dra016_scrub_before_use",
    "dra017_tpu_host_split",
)

_ID = re.compile(r"DRA\d{3}")
_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
_TEXTS = ("SUMMARY", "RATIONALE", "REMEDIATION")
# Every constant a rule module must declare, and its type.
_CONSTANTS: Mapping[str, type | tuple[type, ...]] = {
    "ID": str,
    "NAME": str,
    "SEVERITY": Severity,
    **dict.fromkeys(_TEXTS, str),
    "KINDS": (frozenset, type(None)),
    "CROSS_OBJECT": bool,
    "WAIVABLE": bool,
    "OPTIONS": tuple,
    "EXAMPLES": tuple,
}


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    severity: Severity
    summary: str
    rationale: str
    remediation: str
    check: Callable[[Resource, Context], Iterator[Violation | Pending]]
    #: Some findings need the whole input set (claim users, template lookups): they are
    #: `Pending`, resolved after the last object, and front ends that see one object at a
    #: time leave them to a check of the whole set.
    cross_object: bool
    #: The kinds it applies to; None for every kind (DRA001 scans every object).
    kinds: frozenset[str] | None
    #: False: an ignore annotation cannot waive it unless the configuration says so.
    waivable: bool
    options: tuple[Option[Any], ...]
    examples: tuple[Example, ...]
    #: The module that declares it.
    module: str
    #: Its form as a ValidatingAdmissionPolicy (`ADMISSION`: a function of the target), or
    #: `NotAdmissible` saying why it has none.
    admission: AdmissionDeclaration
    #: `FACETS`: its distinct checks, code -> what the check finds; empty for a rule of one check.
    facets: Mapping[str, str]
    #: The facets its findings may carry ("" alone for a rule that declares none): made once,
    #: since the engine tests every finding's facet against it.
    facet_codes: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "facet_codes", frozenset(self.facets) if self.facets else frozenset({""}))

    def applies_to(self, kind: str) -> bool:
        return self.kinds is None or kind in self.kinds

    @property
    def slug(self) -> str:
        """`dra001-legacy-extended-resource`: the policy name used by front ends."""
        return f"{self.id.lower()}-{self.name}"


def _rule(module: ModuleType) -> Rule:
    """The module's declaration as a Rule, or RuleModuleError saying what is wrong."""

    def refuse(problem: str) -> RuleModuleError:
        return RuleModuleError(f"rule module {module.__name__}: {problem}")

    declared: dict[str, Any] = {}
    for constant, expected in _CONSTANTS.items():
        if not hasattr(module, constant):
            raise refuse(f"missing {constant}")
        value = getattr(module, constant)
        if not isinstance(value, expected):
            names = " or ".join(t.__name__ for t in (expected if isinstance(expected, tuple) else (expected,)))
            raise refuse(f"{constant} must be a {names}, not {type(value).__name__}")
        declared[constant] = value
    rule_id, name = declared["ID"], declared["NAME"]
    if not _ID.fullmatch(rule_id):
        raise refuse(f"ID {rule_id!r} is not DRA followed by three digits")
    if not _NAME.fullmatch(name):
        raise refuse(f"NAME {name!r} is not kebab-case")
    expected_module = f"{rule_id.lower()}_{name.replace('-', '_')}"
    if module.__name__.rpartition(".")[2] != expected_module:
        raise refuse(f"a rule {rule_id} named {name} lives in a module named {expected_module}")
    for text in _TEXTS:
        if not declared[text].strip():
            raise refuse(f"{text} is empty")
    kinds = declared["KINDS"]
    if kinds is not None and not (kinds and all(isinstance(kind, str) and kind for kind in kinds)):
        raise refuse("KINDS must be a non-empty frozenset of kind names, or None for every kind")
    if not all(isinstance(option, Option) for option in declared["OPTIONS"]):
        raise refuse("OPTIONS must hold only Option declarations")
    examples = declared["EXAMPLES"]
    if not all(isinstance(example, Example) for example in examples):
        raise refuse("EXAMPLES must hold only Example declarations")
    if not any(example.fails for example in examples):
        raise refuse("EXAMPLES has no example that must fail")
    if all(example.fails for example in examples):
        raise refuse("EXAMPLES has no example that must pass")
    check = getattr(module, "check", None)
    if not callable(check):
        raise refuse("check(resource, context) is missing or not callable")
    if not hasattr(module, "ADMISSION"):
        raise refuse(
            "missing ADMISSION (a function of the AdmissionTarget returning an Admission, or NotAdmissible('why'))"
        )
    admission = module.ADMISSION
    if not (isinstance(admission, NotAdmissible) or callable(admission)):
        raise refuse("ADMISSION must be a function of the AdmissionTarget, or NotAdmissible('why')")
    if isinstance(admission, NotAdmissible) and not (isinstance(admission.reason, str) and admission.reason.strip()):
        raise refuse("ADMISSION is NotAdmissible without a reason: say why the API server cannot decide the rule")
    facets: object = getattr(module, "FACETS", MappingProxyType({}))
    if not isinstance(facets, Mapping):
        raise refuse(f"FACETS must be a mapping of facet code to description, not {type(facets).__name__}")
    for code, description in facets.items():
        if not (isinstance(code, str) and _NAME.fullmatch(code)):
            raise refuse(f"facet {code!r} is not kebab-case")
        if not (isinstance(description, str) and description.strip()):
            raise refuse(f"facet {code} has no description")
    if len(facets) == 1:
        raise refuse("FACETS declares one facet: a rule of one check declares none")
    return Rule(
        id=rule_id,
        name=name,
        severity=declared["SEVERITY"],
        summary=declared["SUMMARY"],
        rationale=declared["RATIONALE"],
        remediation=declared["REMEDIATION"],
        check=check,
        cross_object=declared["CROSS_OBJECT"],
        kinds=kinds,
        waivable=declared["WAIVABLE"],
        options=declared["OPTIONS"],
        examples=examples,
        module=module.__name__,
        admission=admission,
        facets=MappingProxyType(dict(facets)),
    )


class Registry(Mapping[str, Rule]):
    """Rules by ID, in registration order, and every configuration option they accept."""

    def __init__(self, modules: Iterable[ModuleType], core_options: Sequence[Option[Any]] = CORE_OPTIONS) -> None:
        self._rules: dict[str, Rule] = {}
        self._options: dict[str, Option[Any]] = {}
        #: Option key -> the rule that declares it (core options have none).
        self._owners: dict[str, Rule] = {}
        for option in core_options:
            self._add_option(option, None)
        names: dict[str, str] = {}
        for module in modules:
            rule = _rule(module)
            if rule.id in self._rules:
                raise RuleModuleError(f"rule module {rule.module}: duplicate rule ID {rule.id}")
            if rule.name in names:
                raise RuleModuleError(
                    f"rule module {rule.module}: duplicate rule name {rule.name} (also {names[rule.name]})"
                )
            for option in rule.options:
                self._add_option(option, rule)
            self._rules[rule.id] = rule
            names[rule.name] = rule.id
        for rule in self._rules.values():
            for example in rule.examples:
                unknown = sorted(set(example.config) - set(self._options))
                if unknown:
                    raise RuleModuleError(
                        f"rule module {rule.module}: example {example.title!r} sets unknown option {', '.join(unknown)}"
                    )

    def _add_option(self, option: Option[Any], rule: Rule | None) -> None:
        where = f"rule module {rule.module}" if rule else "core options"
        clash = self._options.get(option.key) or next(
            (
                other
                for other in self._options.values()
                if other.camel_key == option.camel_key
                or (option.command_line is not None and other.command_line == option.command_line)
            ),
            None,
        )
        if clash is not None:
            owner = self._owners.get(clash.key)
            raise RuleModuleError(
                f"{where}: option {option.key} clashes with the option of "
                f"{f'rule {owner.id}' if owner else 'the core'} ({clash.key})"
            )
        self._options[option.key] = option
        if rule is not None:
            self._owners[option.key] = rule

    def __getitem__(self, rule_id: str) -> Rule:
        return self._rules[rule_id]

    def values(self) -> ValuesView[Rule]:
        # The dict's own view: Mapping's would call __getitem__ for each rule.
        return self._rules.values()

    def __iter__(self) -> Iterator[str]:
        return iter(self._rules)

    def __len__(self) -> int:
        return len(self._rules)

    @property
    def options(self) -> Mapping[str, Option[Any]]:
        """Every option by key: the core options, then each rule's, in rule order."""
        return self._options

    @property
    def rule_ids(self) -> Sequence[str]:
        return tuple(self._rules)

    @property
    def rule_names(self) -> Mapping[str, str]:
        """Each rule's name, to its ID (a configuration may name a rule either way)."""
        return MappingProxyType({rule.name: rule.id for rule in self._rules.values()})

    def option_on_command_line(self, flag: str) -> Option[Any]:
        """The option whose values the `dra-guard check` flag `flag` adds to (`--slices`)."""
        found = next((option for option in self._options.values() if option.command_line == flag), None)
        if found is None:
            raise RuleModuleError(f"no rule declares the option {flag} adds to")
        return found

    def owner(self, option: Option[Any]) -> Rule | None:
        """The rule that declares `option`; None for the options several rules share."""
        return self._owners.get(option.key)

    def find(self, text: str) -> Rule | None:
        """A rule by ID (any case) or by name."""
        return self._rules.get(text.upper()) or next((rule for rule in self._rules.values() if rule.name == text), None)


def build_registry(modules: Iterable[ModuleType]) -> Registry:
    """A registry of these modules; RuleModuleError names the first one that is malformed."""
    return Registry(modules)


def extra_rule_modules(environ: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(name.strip() for name in environ.get(EXTRA_RULES_ENV, "").split(",") if name.strip())


def load_registry(extra_modules: Sequence[str] = ()) -> Registry:
    """The built-in rules, then `extra_modules` (importable module names), in that order."""
    modules = [importlib.import_module(f"{__name__}.{name}") for name in RULE_MODULES]
    for name in extra_modules:
        try:
            modules.append(importlib.import_module(name))
        except ImportError as error:
            raise RuleModuleError(f"{EXTRA_RULES_ENV}: cannot import rule module {name}: {error}") from None
    return build_registry(modules)


RULES: Registry = load_registry(extra_rule_modules(os.environ))
