"""The dra-guard rules as Pulumi policies (`pulumi_dra/policy/__main__.py` packs them).

One ResourceValidationPolicy per rule, named after it (`dra0NN-<rule-name>`), checks each
Kubernetes resource on its own.  A rule that needs the whole object set (CROSS_OBJECT)
also gets a StackValidationPolicy, `<policy name>-stack`: one check over the stack, of
which it reports only the findings the engine marks as cross-object (a claim used by
several pods, a template that exists nowhere in the stack), the ones no resource shows
on its own.  Everything here is derived from the registry; nothing names a rule.

Each policy's `--policy-pack-config` goes through dra-guard's one config parser
(camelCase keys); a configuration it refuses is reported by that policy, with the same
message as the CLI's, instead of checking.  Props are unwrapped by `pulumi_dra.props`.

What cannot be known before apply masks only what depends on it.  A value unknown
during preview, or a field a `*Patch` resource leaves to the live object, is left out of
the object the rules see; a finding is still reported (at the policy's enforcement level)
when neither its path nor the evidence it declares (`Violation.evidence`) touches such a
part, so a known `nvidia.com/gpu` request next to an unknown image stays a mandatory
legacy-request violation.  A finding that may depend on an unknown part is not reported; instead
each policy whose rule looks at the resource's kind adds the advisory "cannot verify
until apply" (it cannot prove the absence of findings either).  Two more policies, not
rules: `readable-input` (mandatory) reports fields the rules cannot read (the CLI's input
errors), and `verifiable-contents` (advisory) names resources whose contents cannot be
checked before apply: Helm v3 Releases, and what a patch leaves to the live object.
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

from dra_guard.catalog import IGNORE_ANNOTATION_PREFIX
from dra_guard.config import ENABLE, Config, ConfigError, parse_policy_config, policy_option
from dra_guard.engine import check_objects
from dra_guard.findings import Finding, InputError, Severity
from dra_guard.rules import RULES, Rule
from pulumi_dra.props import HELM_RELEASE_TYPES, CannotVerifyUntilApply, PropsObject, read_props

PACK_NAME = "dra-guard"
#: PulumiPolicy.yaml's description (a test keeps the file in step).
PACK_DESCRIPTION = "Isolated sliced accelerators on Kubernetes DRA: the dra-guard rules, one policy per rule."
CROSS_OBJECT_SUFFIX = "-stack"
#: The two policies that are not rules.
READABLE_INPUT = "readable-input"
VERIFIABLE_CONTENTS = "verifiable-contents"
HELM_RELEASE_ADVISORY = (
    "contents cannot be verified before apply: a Helm v3 Release installs objects Pulumi never sees; "
    "use kubernetes:helm.sh/v4:Chart, whose objects are checked one by one"
)
PATCH_ADVISORY = (
    "a patch is checked for what it sets; what it leaves to the live object (other fields, other "
    "annotations, the rest of the pod spec) only the merged object would show, so check the object it patches"
)

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


class _Outcome:
    """What the rules make of one resource: definite findings by rule, and what is unsure."""

    def __init__(self, read: PropsObject, findings: list[Finding], errors: list[InputError]) -> None:
        self.read = read
        self.kind = str(read.obj.get("kind", ""))
        self.by_rule: dict[str, list[Finding]] = {rule_id: [] for rule_id in RULES}
        #: Rules with a finding that may depend on an unknown part (not reported).
        self.masked: set[str] = set()
        for finding in findings:
            if finding.cross_object:
                continue  # the stack policies report those
            if read.definite(finding.path, finding.evidence, IGNORE_ANNOTATION_PREFIX + finding.rule):
                self.by_rule[finding.rule].append(finding)
            else:
                self.masked.add(finding.rule)
        self.errors = errors

    def unsure(self, rule: Rule) -> CannotVerifyUntilApply | None:
        """The advisory for a rule that looks at this kind when part of the object is unknown."""
        if rule.id not in self.masked and not rule.applies_to(self.kind):
            return None
        return self.read.cannot_verify()


class _LastResource(threading.local):
    """The rules' outcome for the props object seen last on this gRPC worker thread.

    The SDK calls every policy of the pack in turn for one resource; when they receive
    the same props object (see `pulumi_dra.analyze_once`) and the same configuration,
    all rules run once and each policy takes its own rule's findings.  Otherwise (other
    props, other config, or the SDK without the shim) the rules simply run again.
    """

    props: Any = None
    config_values: Mapping[str, Any] | None = None
    outcome: _Outcome | None = None
    #: A configuration the parser refused.
    problem: ConfigError | None = None


_last = _LastResource()


def _outcome(args: ResourceValidationArgs, policy_name: str) -> _Outcome | None:
    """The rules' outcome for this resource; None when it is no Kubernetes object."""
    values = args.get_config() or None
    if _last.props is not args.props or _last.config_values != values:
        _last.props, _last.config_values, _last.outcome, _last.problem = args.props, values, None, None
        try:
            config = config_from_policy(values, policy_name)
        except ConfigError as problem:
            _last.problem = problem
        else:
            read = read_props(args.resource_type, args.props)
            if read is not None:
                report = check_objects([read.obj], config, origins=[args.urn], complete=False)
                _last.outcome = _Outcome(read, report.findings, report.errors)
    if _last.problem is not None:
        config_from_policy(values, policy_name)  # raises again, naming this policy
    return _last.outcome


def _resource_validator(rule: Rule) -> Callable[[ResourceValidationArgs, ReportViolation], None]:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        try:
            outcome = _outcome(args, rule.slug)
        except ConfigError as error:
            report_violation(str(error), None)
            return
        if outcome is None:
            return
        for finding in outcome.by_rule[rule.id]:
            report_violation(violation_text(finding), None)
        unsure = outcome.unsure(rule)
        if unsure is not None:
            raise unsure  # the SDK reports it as an advisory, after the violations above

    return validate


def _validate_readable_input(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Fields the rules cannot read because they have the wrong type: the CLI's input errors."""
    try:
        outcome = _outcome(args, READABLE_INPUT)
    except ConfigError:
        return  # the rule policies report their configuration
    for error in outcome.errors if outcome is not None else ():
        report_violation(f"{args.resource_type} {args.name}: {error.message}", None)


def _validate_verifiable_contents(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type in HELM_RELEASE_TYPES:
        report_violation(HELM_RELEASE_ADVISORY, None)
        return
    read = read_props(args.resource_type, args.props)
    if read is not None and read.patch:
        report_violation(f"{args.resource_type} {args.name}: {PATCH_ADVISORY}", None)


def _stack_validator(rule: Rule, policy_name: str) -> Callable[[StackValidationArgs, ReportViolation], None]:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        try:
            config = config_from_policy(args.get_config(), policy_name)
        except ConfigError as error:
            report_violation(str(error), None)
            return
        objects, urns = [], []
        for resource in args.resources:
            read = read_props(resource.resource_type, resource.props)
            if read is None or read.patch:
                continue  # a patch is no object of its own (verifiable-contents says so)
            problem = read.cannot_verify()
            if problem is not None:
                # A stack-wide finding may rest on any object (a claim's users, a
                # template's name), so with one object not fully known none is definite.
                raise problem
            objects.append(read.obj)
            urns.append(resource.urn)
        # One run of this rule over the stack; the per-object findings are the resource
        # policy's to report, so only what needed the other objects is reported here.
        report = check_objects(objects, config.with_value(ENABLE, frozenset({rule.id})), origins=urns)
        for finding in report.findings:
            if finding.cross_object:
                report_violation(violation_text(finding), finding.origin)
        for failure in report.errors:
            if failure.rule == rule.id:  # the rule failed on the stack: that is no pass
                report_violation(f"{rule.id} could not check the stack: {failure.message}", None)

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
    # Not rules: what the rules could not read, and what cannot be read before apply.
    policies += [
        ResourceValidationPolicy(
            name=READABLE_INPUT,
            description="Kubernetes resources whose fields have the types the dra-guard rules read",
            validate=_validate_readable_input,
            enforcement_level=EnforcementLevel.MANDATORY,
            severity=PolicySeverity.HIGH,
            remediation_steps="Give the field the type Kubernetes defines for it (the message names it).",
            tags=["kubernetes", "dra", "accelerators"],
        ),
        ResourceValidationPolicy(
            name=VERIFIABLE_CONTENTS,
            description="Resources whose contents dra-guard cannot verify before apply",
            validate=_validate_verifiable_contents,
            enforcement_level=EnforcementLevel.ADVISORY,
            severity=PolicySeverity.LOW,
            remediation_steps="Use kubernetes:helm.sh/v4:Chart instead of a v3 Release; check patched objects "
            "where they are defined.",
            tags=["kubernetes", "dra", "accelerators"],
        ),
    ]
    return policies
