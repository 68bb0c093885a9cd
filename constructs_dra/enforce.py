"""Synth-time enforcement: the dra-guard rules as a cdk8s validation.

`enforce(scope)` makes `cdk8s synth` (App.synth, Testing.synth, Chart.to_json) fail on
any non-compliant ApiObject under `scope` — raw objects, cdk8s-plus objects and ours —
with the construct path, the rule, the object and the fix in each message.

Our constructs validate their own objects too (that catches later `add_json_patch`
edits), with the configuration of the nearest `enforce()` above them when there is one
— the user's HMAC key, extra legacy resources, disabled rules and `fail_on` — so that
one configuration applies to every object; the construct's own `hmac_key` verifies its
tags only when that configuration names no key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsii
from cdk8s import ApiObject
from constructs import Construct, IConstruct, IValidation

from dra_guard.config import Config, parse_config
from dra_guard.engine import check_objects
from dra_guard.findings import Finding, Severity
from dra_guard.rules import RULES

#: Set on constructs that validate their own objects, so `enforce()` does not repeat them.
SELF_VALIDATING_ATTRIBUTE = "_dra_guard_self_validating"
#: The node metadata type `enforce()` leaves on its scope, naming its validation: node
#: metadata, not a Python attribute, because a scope made on the JavaScript side (cdk8s'
#: `Testing.app()`) comes back as a new proxy object each time it is looked up.
ENFORCED_METADATA = "dra-guard:enforce"
_ENFORCED: dict[str, DraGuardValidation] = {}
_HMAC_KEY_OPTION = "hmac-key-env"
# A construct holds its HMAC key in memory.  It reaches the rules through the one config
# parser, as the value of the variable `hmac-key-env` names, so it is checked like any key.
_OWN_KEY_VARIABLE = "DRA_GUARD_CONSTRUCT_HMAC_KEY"


def format_finding(finding: Finding) -> str:
    """One validation message: where, which rule, which object, what is wrong, how to fix it."""
    return (
        f"{finding.rule} [{finding.severity.label}] {finding.object} (construct {finding.origin}, "
        f"at {finding.path or '/'}): {finding.message}. Fix: {finding.remediation}"
    )


def _api_objects(scope: IConstruct) -> list[ApiObject]:
    return [child for child in scope.node.find_all() if isinstance(child, ApiObject)]


def _under_self_validating(api_object: ApiObject, scope: IConstruct) -> bool:
    for ancestor in api_object.node.scopes:
        if ancestor is not scope and getattr(ancestor, SELF_VALIDATING_ATTRIBUTE, False):
            return True
    return False


@jsii.implements(IValidation)
class DraGuardValidation:
    """Checks every ApiObject under a scope together, so cross-object rules see them all."""

    def __init__(
        self, scope: IConstruct, config: Config | Mapping[str, Any] | None = None, fail_on: Severity = Severity.LOW
    ) -> None:
        self._scope = scope
        if config is None or isinstance(config, Config):
            self._config = config or Config()
        else:  # options as in .dra-guard.yaml; a bad one fails here, where it is written
            self._config = parse_config(config, RULES, f"dra-guard config of {scope.node.path or 'the app'}")
        self._fail_on = fail_on

    @property
    def config(self) -> Config:
        return self._config

    @property
    def fail_on(self) -> Severity:
        return self._fail_on

    def validate(self) -> list[str]:
        api_objects = _api_objects(self._scope)
        report = check_objects(
            [api_object.to_json() for api_object in api_objects],
            self._config,
            origins=[api_object.node.path for api_object in api_objects],
        )
        skip = {
            api_object.node.path
            for api_object in api_objects
            if self._scope is not api_object and _under_self_validating(api_object, self._scope)
        }
        messages = [f"{error}" for error in report.errors]
        messages += [
            format_finding(finding)
            for finding in report.findings
            if finding.severity >= self._fail_on and finding.origin not in skip
        ]
        return messages


def enforce(
    scope: Construct, config: Config | Mapping[str, Any] | None = None, fail_on: str = "medium"
) -> DraGuardValidation:
    """Fail synthesis when any ApiObject under `scope` breaks a dra-guard rule.

    `config` is a `Config` (e.g. from `dra_guard.config.load_config_file`) or the options
    as .dra-guard.yaml writes them (`{"admin-namespaces": ["gpu-ops"]}`); a bad option
    raises `ConfigError` with the same message as the CLI's.  `fail_on` is the lowest
    severity that fails; the default, `medium`, is the CLI's and the cdk8s-cli plugin's
    too (a template that lives outside the app is only `low`).  Returns the validation,
    which can also be called directly (`.validate()` lists the messages).
    """
    validation = DraGuardValidation(scope, config, Severity.parse(fail_on))
    scope.node.add_validation(validation)
    token = f"enforce-{len(_ENFORCED) + 1}"
    _ENFORCED[token] = validation
    scope.node.add_metadata(ENFORCED_METADATA, token)
    return validation


def _enforcing(construct: IConstruct) -> DraGuardValidation | None:
    """The latest `enforce()` validation of the nearest scope at or above `construct`."""
    for scope in reversed(construct.node.scopes):
        tokens = [entry.data for entry in scope.node.metadata if entry.type == ENFORCED_METADATA]
        if tokens and tokens[-1] in _ENFORCED:
            return _ENFORCED[tokens[-1]]
    return None


@jsii.implements(IValidation)
class _SelfValidation:
    """One of our constructs' objects, checked with the configuration that applies to it.

    Resolved when cdk8s validates (at synth), not when the construct is built, so an
    `enforce()` called after the construct still applies.  The user's configuration
    wins for every option it sets; the construct's own facts (its key, the release and
    capacity it was built for) fill in the rest.
    """

    def __init__(self, construct: Construct, values: Mapping[str, Any], environ: Mapping[str, str | bytes]) -> None:
        self._construct = construct
        self._values = values
        self._environ = environ

    def _config(self, enforcing: DraGuardValidation | None) -> tuple[Config, Severity]:
        user = enforcing.config if enforcing is not None else Config()
        fail_on = enforcing.fail_on if enforcing is not None else Severity.LOW
        own_values = {key: value for key, value in self._values.items() if key not in user.values}
        if not own_values:
            return user, fail_on
        own = parse_config(own_values, RULES, f"construct {self._construct.node.path}", environ=self._environ)
        return Config({**own.values, **user.values}, user.source or own.source), fail_on

    def validate(self) -> list[str]:
        config, fail_on = self._config(_enforcing(self._construct))
        return DraGuardValidation(self._construct, config, fail_on).validate()


def validate_self(
    construct: Construct,
    hmac_key: str | bytes | None = None,
    *,
    kubernetes_version: str | None = None,
    consumable_capacity: bool | None = None,
) -> None:
    """Attach the rules to one of our constructs, over its own objects.

    They are compliant when built; this catches later edits (`add_json_patch`, ...),
    with the configuration of the nearest `enforce()` above the construct, if any.
    The construct's own key verifies its tags, and its objects are checked for the
    Kubernetes release they were built for, where that configuration says nothing else.
    """
    values: dict[str, Any] = {}
    environ: dict[str, str | bytes] = {}
    if hmac_key:
        values[_HMAC_KEY_OPTION] = _OWN_KEY_VARIABLE
        environ[_OWN_KEY_VARIABLE] = hmac_key
    if kubernetes_version is not None:
        values["kubernetes-version"] = kubernetes_version
    if consumable_capacity is not None:
        values["consumable-capacity"] = consumable_capacity
    parse_config(values, RULES, f"construct {construct.node.path}", environ=environ)  # a bad value fails now
    setattr(construct, SELF_VALIDATING_ATTRIBUTE, True)
    construct.node.add_validation(_SelfValidation(construct, values, environ))
