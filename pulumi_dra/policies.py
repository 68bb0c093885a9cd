"""The dra-guard rules as Pulumi policies (`pulumi_dra/policy/__main__.py` packs them).

One ResourceValidationPolicy per rule, named after it (`dra0NN-<rule-name>`), checks each
Kubernetes resource on its own.  A rule that needs the whole object set (CROSS_OBJECT)
also gets a StackValidationPolicy, `<policy name>-stack`: one check over the stack, of
which it reports only the findings the engine marks as cross-object (a claim used by
several pods, a template that exists nowhere in the stack), the ones no resource shows
on its own.  Everything here is derived from the registry; nothing names a rule.

Each policy's `--policy-pack-config` goes through dra-guard's one config parser
(camelCase keys); a configuration it refuses is reported by that policy, with the same
message as the CLI's, instead of checking.  Props are unwrapped by `pulumi_dra.props`;
a value unknown during preview is reported as advisory "cannot verify until apply".
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy import Severity as PolicySeverity

from dra_guard.config import ENABLE, Config, ConfigError, parse_policy_config, policy_option
from dra_guard.engine import check_objects
from dra_guard.findings import Finding, Severity
from dra_guard.rules import RULES, Rule
from pulumi_dra.props import CannotVerifyUntilApply, kubernetes_object

PACK_NAME = "dra-guard"
#: PulumiPolicy.yaml's description (a test keeps the file in step).
PACK_DESCRIPTION = "Isolated sliced accelerators on Kubernetes DRA: the dra-guard rules, one policy per rule."
CROSS_OBJECT_SUFFIX = "-stack"

#: The same options for every policy, from the registry: each option's camelCase key,
#: except those that select rules (enforcement levels do that in Pulumi).  The CLI fills
#: in these defaults; the SDK alone (and our tests) do not, and need not: an option that
#: is not set reads as its default.
CONFIG_SCHEMA = PolicyConfigSchema(
    properties={option.camel_key: option.schema() for option in RULES.options.values() if policy_option(option)}
)


def default_enforcement(rule: Rule) -> EnforcementLevel:
    """Mandatory for critical and high rules, advisory for medium and low."""
    return EnforcementLevel.MANDATORY if rule.severity >= Severity.HIGH else EnforcementLevel.ADVISORY


def config_from_policy(values: Mapping[str, Any] | None, policy_name: str) -> Config:
    """A policy's `--policy-pack-config` through the one config parser (ConfigError if bad)."""
    if not values:
        return Config()
    return parse_policy_config(values, RULES, f"policy {policy_name}")


def violation_text(finding: Finding) -> str:
    return (
        f"{finding.rule} [{finding.severity.label}] {finding.object} at {finding.path or '/'}: "
        f"{finding.message}. Fix: {finding.remediation}"
    )


class _LastResource(threading.local):
    """The rules' findings for the props object seen last on this gRPC worker thread.

    The SDK calls every policy of the pack in turn for one resource; when they receive
    the same props object (see `pulumi_dra.analyze_once`) and the same configuration,
    all rules run once and each policy takes its own rule's findings.  Otherwise (other
    props, other config, or the SDK without the shim) the rules simply run again.
    """

    props: Any = None
    config_values: Mapping[str, Any] | None = None
    findings: dict[str, list[Finding]] | None = None
    #: Why the rules could not run: a configuration the parser refused, or an unknown value.
    problem: ConfigError | CannotVerifyUntilApply | None = None


_last = _LastResource()


def _findings_by_rule(args: ResourceValidationArgs, policy_name: str) -> dict[str, list[Finding]] | None:
    """Per-object findings of every rule for this resource; None when it is no Kubernetes object."""
    values = args.get_config() or None
    if _last.props is not args.props or _last.config_values != values:
        _last.props, _last.config_values, _last.findings, _last.problem = args.props, values, None, None
        try:
            config = config_from_policy(values, policy_name)
            obj = kubernetes_object(args.resource_type, args.props)
        except (ConfigError, CannotVerifyUntilApply) as problem:
            _last.problem = problem
        else:
            if obj is not None:
                report = check_objects([obj], config, origins=[args.urn], complete=False)
                _last.findings = {rule_id: [] for rule_id in RULES}
                for finding in report.findings:
                    if not finding.cross_object:  # the stack policies report those
                        _last.findings[finding.rule].append(finding)
    if isinstance(_last.problem, ConfigError):
        config_from_policy(values, policy_name)  # raises again, naming this policy
    if isinstance(_last.problem, CannotVerifyUntilApply):
        raise CannotVerifyUntilApply(_last.problem)  # a fresh one: the SDK reads its message
    return _last.findings


def _resource_validator(rule: Rule) -> Callable[[ResourceValidationArgs, ReportViolation], None]:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        try:
            findings = _findings_by_rule(args, rule.slug)
        except ConfigError as error:
            report_violation(str(error), None)
            return
        for finding in (findings or {}).get(rule.id, ()):
            report_violation(violation_text(finding), None)

    return validate


def _stack_validator(rule: Rule, policy_name: str) -> Callable[[StackValidationArgs, ReportViolation], None]:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        try:
            config = config_from_policy(args.get_config(), policy_name)
        except ConfigError as error:
            report_violation(str(error), None)
            return
        objects, urns = [], []
        for resource in args.resources:
            try:
                obj = kubernetes_object(resource.resource_type, resource.props)
            except CannotVerifyUntilApply:
                continue  # the resource policies already say so for this resource
            if obj is not None:
                objects.append(obj)
                urns.append(resource.urn)
        # One run of this rule over the stack; the per-object findings are the resource
        # policy's to report, so only what needed the other objects is reported here.
        report = check_objects(objects, config.with_value(ENABLE, frozenset({rule.id})), origins=urns)
        for finding in report.findings:
            if finding.cross_object:
                report_violation(violation_text(finding), finding.origin)

    return validate


def build_policies() -> list[Policy]:
    policies: list[Policy] = []
    for rule in RULES.values():
        common: dict[str, Any] = {
            "enforcement_level": default_enforcement(rule),
            "config_schema": CONFIG_SCHEMA,
            "severity": PolicySeverity(rule.severity.label),
            "remediation_steps": rule.remediation,
            "tags": ["kubernetes", "dra", "accelerators"],
        }
        policies.append(
            ResourceValidationPolicy(
                name=rule.slug, description=rule.summary, validate=_resource_validator(rule), **common
            )
        )
        if rule.cross_object:
            name = rule.slug + CROSS_OBJECT_SUFFIX
            policies.append(
                StackValidationPolicy(
                    name=name,
                    description=f"{rule.summary} (across the whole stack)",
                    validate=_stack_validator(rule, name),
                    **common,
                )
            )
    return policies
