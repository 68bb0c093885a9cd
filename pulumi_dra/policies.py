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

The pack lists its policies when it starts, from the rules' index
(`dra_guard.present.rule_index`), and loads the rules and the engine (`pulumi_dra.checks`) at the
first call of a policy: its start-up costs little more than the policy SDK's.

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

import importlib
from collections.abc import Callable, Container
from types import ModuleType
from typing import Any, cast

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

from dra_guard.findings import Severity
from dra_guard.present.rule_index import RuleFacts
from dra_guard.present.rule_index import load as load_rule_index

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

_RULE_INDEX = load_rule_index()
#: The same options for every policy, from the registry: each option's camelCase key,
#: except those that select rules (enforcement levels do that in Pulumi).  The CLI fills
#: in these defaults; the SDK alone (and our tests) do not, and need not: an option that
#: is not set reads as its default.
CONFIG_SCHEMA = PolicyConfigSchema(properties=dict(_RULE_INDEX.policy_options))


def default_enforcement(rule: RuleFacts) -> EnforcementLevel:
    """Mandatory for critical and high rules, advisory for medium and low."""
    return EnforcementLevel.MANDATORY if rule.severity >= Severity.HIGH else EnforcementLevel.ADVISORY


_loaded: list[ModuleType] = []


def _checks() -> ModuleType:
    """`pulumi_dra.checks`, imported by the first policy called."""
    if not _loaded:
        _loaded.append(importlib.import_module("pulumi_dra.checks"))
    return _loaded[0]


class _ResourcePolicy(ResourceValidationPolicy):
    """A ResourceValidationPolicy whose `validate` calls its one validation and returns.

    The SDK's `validate` (which `has_validation` expects subclasses may override) makes a
    list of the validations, tests each result for an awaitable and defines a coroutine
    function on every call, for every policy on every resource; ours return None.

    `silent_policies(args)`, the same function for every policy of the pack, names those
    that would report nothing on a resource, without reporting: the pack's Analyze leaves
    them out (`pulumi_dra.analyze_once`).
    """

    def __init__(self, validate: Callable[[ResourceValidationArgs, ReportViolation], None], **kwargs: Any) -> None:
        super().__init__(validate=validate, **kwargs)
        self._validation = validate
        self.silent_policies = _silent_policies

    def validate(self, args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        self._validation(args, report_violation)


def _resource_validator(rule: RuleFacts) -> Callable[[ResourceValidationArgs, ReportViolation], None]:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        _checks().validate_resource(rule.id, args, report_violation)

    return validate


def _stack_validator(rule: RuleFacts, policy_name: str) -> Callable[[StackValidationArgs, ReportViolation], None]:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        _checks().validate_stack(rule.id, policy_name, args, report_violation)

    return validate


def _validate_readable_input(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """Fields the rules cannot read because they have the wrong type: the CLI's input errors."""
    _checks().validate_readable_input(args, report_violation, READABLE_INPUT)


def _validate_verifiable_contents(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    _checks().validate_verifiable_contents(args, report_violation, HELM_RELEASE_ADVISORY, PATCH_ADVISORY)


def _silent_policies(args: ResourceValidationArgs) -> Container[str]:
    """The names of the pack's resource policies that report nothing on this resource."""
    return cast("Container[str]", _checks().silent_policies(args, READABLE_INPUT, VERIFIABLE_CONTENTS))


def build_policies() -> list[Policy]:
    policies: list[Policy] = []
    for rule in _RULE_INDEX.rules:
        common: dict[str, Any] = {
            "enforcement_level": default_enforcement(rule),
            "config_schema": CONFIG_SCHEMA,
            "severity": PolicySeverity(rule.severity.label),
            "remediation_steps": rule.remediation,
            "tags": ["kubernetes", "dra", "accelerators"],
        }
        policies.append(
            _ResourcePolicy(name=rule.slug, description=rule.summary, validate=_resource_validator(rule), **common)
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
        _ResourcePolicy(
            name=READABLE_INPUT,
            description="Kubernetes resources whose fields have the types the dra-guard rules read",
            validate=_validate_readable_input,
            enforcement_level=EnforcementLevel.MANDATORY,
            severity=PolicySeverity.HIGH,
            remediation_steps="Give the field the type Kubernetes defines for it (the message names it).",
            tags=["kubernetes", "dra", "accelerators"],
        ),
        _ResourcePolicy(
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
