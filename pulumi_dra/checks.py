"""What the pack's policies do when called: read the props and run the rules.

`pulumi_dra.policies` imports this at the first Analyze, not when the pack starts: it
is what loads the engine and every rule module (README, "Performance").
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs, StackValidationArgs

from dra_guard.catalog import IGNORE_ANNOTATION_PREFIX
from dra_guard.config import ENABLE, WAIVERS, Config, ConfigError, parse_policy_config
from dra_guard.engine import check_objects
from dra_guard.findings import Finding, InputError
from dra_guard.rules import RULES, Rule
from pulumi_dra.analyze_once import plain_props
from pulumi_dra.props import HELM_RELEASE_TYPES, CannotVerifyUntilApply, PropsObject, is_patch_type, read_props

#: The configuration of a policy given none (frozen: one serves every resource).
_NO_CONFIG = Config()


def config_from_policy(values: Mapping[str, Any] | None, policy_name: str) -> Config:
    """A policy's `--policy-pack-config` through the one config parser (ConfigError if bad)."""
    if not values:
        return _NO_CONFIG
    return parse_policy_config(values, RULES, f"policy {policy_name}")


def violation_text(finding: Finding) -> str:
    return (
        f"{finding.rule} [{finding.severity.label}] {finding.object} at {finding.path or '/'}: "
        f"{finding.message}. Fix: {finding.remediation}"
    )


#: What `_LastResource` holds before the first resource: no props object is this one.
_NO_PROPS: Any = object()

#: Each rule and its policy name by rule ID, in a plain dict: every policy looks its rule
#: up on every resource (`Rule.slug` is computed on each read).

_POLICY_RULES: dict[str, tuple[Rule, str]] = {rule.id: (rule, rule.slug) for rule in RULES.values()}
_RULE_POLICY_NAMES = frozenset(name for _, name in _POLICY_RULES.values())


class _Outcome:
    """What the rules make of one resource: definite findings by rule, and what is unsure."""

    def __init__(
        self,
        read: PropsObject,
        findings: list[Finding],
        errors: list[InputError],
        waived_rules: frozenset[str] = frozenset(),
    ) -> None:
        """`waived_rules`: the rules the configuration's `waivers` entries name."""
        self.read = read
        self.kind = str(read.obj.get("kind", ""))
        #: Only the rules with findings: most resources have none, and every policy asks.
        self.by_rule: dict[str, list[Finding]] = {}
        #: Rules with a finding that may depend on an unknown part (not reported).
        self.masked: set[str] = set()
        for finding in findings:
            if finding.cross_object:
                continue  # the stack policies report those
            key = IGNORE_ANNOTATION_PREFIX + finding.rule
            if read.definite(finding.path, finding.evidence, key, configured=finding.rule in waived_rules):
                self.by_rule.setdefault(finding.rule, []).append(finding)
            else:
                self.masked.add(finding.rule)
        self.errors = errors
        #: Part of the object is unknown (checked first: most resources are fully known).
        self.unknown = bool(read.unknown)

    def unsure(self, rule: Rule) -> CannotVerifyUntilApply | None:
        """The advisory for a rule that looks at this kind when part of the object is unknown."""
        if not self.read.unknown:
            return None  # what cannot_verify() would say, without building anything
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

    #: (props, config values, outcome, a configuration the parser refused): one tuple,
    #: read in one step by each of the seventeen policies that ask per resource.
    state: tuple[Any, Mapping[str, Any] | None, _Outcome | None, ConfigError | None] = (_NO_PROPS, None, None, None)


_last = _LastResource()


def _outcome(args: ResourceValidationArgs, policy_name: str) -> _Outcome | None:
    """The rules' outcome for this resource; None when it is no Kubernetes object."""
    values = args.get_config() or None
    props, last_values, outcome, problem = _last.state
    if props is not args.props or (last_values is not values and last_values != values):
        outcome = problem = None
        try:
            config = config_from_policy(values, policy_name)
        except ConfigError as refused:
            problem = refused
        else:
            read = read_props(args.resource_type, args.props, plain_props(args.props))
            if read is not None:
                report = check_objects([read.obj], config, origins=[args.urn], complete=False)
                waived_rules = frozenset(entry.rule for entry in config.get(WAIVERS))
                outcome = _Outcome(read, report.findings, report.errors, waived_rules)
        _last.state = (args.props, values, outcome, problem)
    if problem is not None:
        config_from_policy(values, policy_name)  # raises again, naming this policy
    return outcome


def _rule_says(rule_id: str, args: ResourceValidationArgs) -> tuple[Sequence[Finding], CannotVerifyUntilApply | None]:
    """What the policy of rule `rule_id` reports on one resource: its findings, then the
    advisory it raises (ConfigError for a configuration the parser refuses)."""
    props, last_values, outcome, problem = _last.state
    # Every policy after the first on a resource, with no configuration: the outcome is known.
    if props is not args.props or problem is not None or last_values is not None or args.get_config():
        outcome = _outcome(args, _POLICY_RULES[rule_id][1])
    if outcome is None:
        return (), None
    findings = outcome.by_rule.get(rule_id, ())
    return findings, outcome.unsure(_POLICY_RULES[rule_id][0]) if outcome.unknown else None


def validate_resource(rule_id: str, args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """The policy of rule `rule_id` on one resource."""
    try:
        findings, unsure = _rule_says(rule_id, args)
    except ConfigError as error:
        report_violation(str(error), None)
        return
    for finding in findings:
        report_violation(violation_text(finding), None)
    if unsure is not None:
        raise unsure  # the SDK reports it as an advisory, after the violations above


def _unreadable(args: ResourceValidationArgs, policy_name: str) -> list[InputError]:
    try:
        outcome = _outcome(args, policy_name)
    except ConfigError:
        return []  # the rule policies report their configuration
    return outcome.errors if outcome is not None else []


def validate_readable_input(args: ResourceValidationArgs, report_violation: ReportViolation, policy_name: str) -> None:
    """Fields the rules cannot read because they have the wrong type: the CLI's input errors."""
    for error in _unreadable(args, policy_name):
        report_violation(f"{args.resource_type} {args.name}: {error.message}", None)


def validate_verifiable_contents(
    args: ResourceValidationArgs, report_violation: ReportViolation, helm_release_advisory: str, patch_advisory: str
) -> None:
    if args.resource_type in HELM_RELEASE_TYPES:
        report_violation(helm_release_advisory, None)
        return
    if is_patch_type(args.resource_type):
        report_violation(f"{args.resource_type} {args.name}: {patch_advisory}", None)


def silent_policies(args: ResourceValidationArgs, readable_input: str, verifiable_contents: str) -> set[str]:
    """The pack's resource policies (by name) that report nothing on this resource when
    they have no configuration: what `validate_resource`, `validate_readable_input` and
    `validate_verifiable_contents` would report, decided once for all of them."""
    outcome = _outcome(args, readable_input)  # no configuration: nothing for the parser to refuse
    silent = set(_RULE_POLICY_NAMES)
    if outcome is not None:
        for rule_id in outcome.by_rule:
            silent.discard(_POLICY_RULES[rule_id][1])
        if outcome.unknown:
            for rule, name in _POLICY_RULES.values():
                if outcome.unsure(rule) is not None:
                    silent.discard(name)
    if outcome is None or not outcome.errors:
        silent.add(readable_input)
    if args.resource_type not in HELM_RELEASE_TYPES and not is_patch_type(args.resource_type):
        silent.add(verifiable_contents)
    return silent


def validate_stack(
    rule_id: str, policy_name: str, args: StackValidationArgs, report_violation: ReportViolation
) -> None:
    """The stack policy of rule `rule_id`: its cross-object findings over every resource."""
    rule = RULES[rule_id]
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
