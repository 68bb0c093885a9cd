"""The dra-guard rules as Pulumi policies (`pulumi_dra/policy/__main__.py` packs them).

One ResourceValidationPolicy per rule, named `dra0NN-<rule-name>`, checks each
Kubernetes resource on its own; `dra005-...-stack` and `dra009-...-stack` check the whole
stack for what one resource cannot show (a claim used by several pods, templates that
exist nowhere in the stack).  Props arrive as the SDK's read-only proxies with numbers as
floats; an unknown value during preview is reported as advisory "cannot verify until
apply", never as an error.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
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
    proxy,
)
from pulumi_policy import Severity as PolicySeverity
from pulumi_policy.proxy import UnknownValueError

from dra_guard.config import Config, ConfigError, parse_policy_config
from dra_guard.engine import check_objects
from dra_guard.findings import Finding, Severity
from dra_guard.rules import RULES, Rule

PACK_NAME = "dra-guard"
CROSS_OBJECT_SUFFIX = "-stack"

#: The same options for every policy (`--policy-pack-config`), from the registry: each
#: option's camelCase key, except those that select rules (enforcement levels do that).
#: The CLI fills in these defaults, but the SDK alone (and our tests) do not, so parsing
#: applies them too.
CONFIG_SCHEMA = PolicyConfigSchema(
    properties={option.camel_key: option.schema() for option in RULES.options.values() if not option.selects_rules}
)


def default_enforcement(rule: Rule) -> EnforcementLevel:
    """Mandatory for critical and high rules, advisory for medium and low."""
    return EnforcementLevel.MANDATORY if rule.severity >= Severity.HIGH else EnforcementLevel.ADVISORY


def kubernetes_api_version(resource_type: str) -> str | None:
    """`kubernetes:apps/v1:Deployment` -> `apps/v1`; `kubernetes:core/v1:Pod` -> `v1`.

    None for anything that is not a Kubernetes object type (providers, components such as
    `kubernetes:yaml/v2:ConfigGroup` or `kubernetes:helm.sh/v4:Chart`, whose children are
    validated one by one).
    """
    parts = resource_type.split(":")
    if len(parts) != 3 or parts[0] != "kubernetes" or "/" not in parts[1]:
        return None
    group, _, version = parts[1].partition("/")
    if group in ("yaml", "helm.sh", "kustomize"):
        return None
    return version if group == "core" else f"{group}/{version}"


class CannotVerifyUntilApply(UnknownValueError):
    """An unknown value: the SDK reports this as an advisory diagnostic, not a failure."""

    def __init__(self, unknown: UnknownValueError) -> None:
        super().__init__(unknown.unknown_type_sentinel, unknown.props)
        self.message = f"cannot verify until apply: {super().__getattribute__('message')}"

    def __str__(self) -> str:
        return self.message


_UNKNOWN_SENTINELS = frozenset(
    getattr(proxy, name)
    for name in dir(proxy)
    if name.startswith("UNKNOWN_") and name.endswith("_VALUE") and isinstance(getattr(proxy, name), str)
)
# The SDK's proxy classes expose their target under "__target"; if they are ever renamed,
# the generic Mapping/Sequence path below (checked reads) still gives the same result.
_PROXY_CLASSES: tuple[type, ...] = tuple(
    cls for cls in (getattr(proxy, "_DictProxy", None), getattr(proxy, "_ListProxy", None)) if isinstance(cls, type)
)


class _UnknownSeen(Exception):
    """Raised by the fast walk; the slow walk then finds where, for the message."""


def _plain(value: Any) -> Any:
    """Proxies to plain dicts and lists; an unknown value raises UnknownValueError.

    The SDK's proxies check every read; reading their targets and checking the leaves
    here does the same job in one pass.  Paths are only worked out when an unknown is
    actually there (rare, and only during preview).
    """
    try:
        return _fast_plain(value)
    except _UnknownSeen:
        _checked_walk(value, [])
        raise AssertionError("unknown value not found again") from None  # pragma: no cover


def _fast_plain(value: Any) -> Any:
    kind = type(value)
    if kind in _PROXY_CLASSES:
        value = value["__target"]
        kind = type(value)
    if kind is dict:
        return {key: _fast_plain(item) for key, item in value.items()}
    if kind is list:
        return [_fast_plain(item) for item in value]
    if kind is str:
        if value in _UNKNOWN_SENTINELS:
            raise _UnknownSeen
        return value
    if isinstance(value, Mapping):
        return {key: _fast_plain(value[key]) for key in value}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [_fast_plain(item) for item in value]
    return value


def _checked_walk(value: Any, path: list[str]) -> None:
    """Reads everything through the SDK's own checks, which raise with the exact path."""
    if isinstance(value, str) and value in _UNKNOWN_SENTINELS:
        raise UnknownValueError(value, path)
    if isinstance(value, Mapping):
        for key in value:
            _checked_walk(value[key], [*path, str(key)])
    elif isinstance(value, Sequence) and not isinstance(value, str | bytes):
        for index in range(len(value)):
            _checked_walk(value[index], [*path, str(index)])


def kubernetes_object(resource_type: str, props: Mapping[str, Any]) -> dict[str, Any] | None:
    api_version = kubernetes_api_version(resource_type)
    if api_version is None:
        return None
    try:
        obj = _plain(props)
    except UnknownValueError as unknown:
        raise CannotVerifyUntilApply(unknown) from None
    obj.setdefault("apiVersion", api_version)
    obj.setdefault("kind", resource_type.rsplit(":", 1)[1])
    return dict(obj)


def config_from_policy(values: Mapping[str, Any] | None, policy_name: str) -> Config:
    """A policy's `--policy-pack-config` through the one config parser (camelCase keys)."""
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
    unknown: CannotVerifyUntilApply | None = None
    #: A configuration the policy cannot use: reported instead of checking.
    config_error: ConfigError | None = None


_last = _LastResource()


def _findings_by_rule(args: ResourceValidationArgs, policy_name: str) -> dict[str, list[Finding]] | None:
    """Findings of every rule for this resource, or None when it is no Kubernetes object."""
    values = args.get_config() or None
    if _last.props is not args.props or _last.config_values != values:
        _last.props, _last.config_values, _last.findings, _last.unknown = args.props, values, None, None
        _last.config_error = None
        try:
            config = config_from_policy(values, policy_name)
            obj = kubernetes_object(args.resource_type, args.props)
        except ConfigError as error:
            _last.config_error = error
        except CannotVerifyUntilApply as unknown:
            _last.unknown = unknown
        else:
            if obj is not None:
                report = check_objects([obj], config, origins=[args.urn], complete=False)
                _last.findings = {rule_id: [] for rule_id in RULES}
                for finding in report.findings:
                    _last.findings[finding.rule].append(finding)
    if _last.config_error is not None:
        raise _last.config_error
    if _last.unknown is not None:
        raise CannotVerifyUntilApply(_last.unknown)
    return _last.findings


def _resource_validator(rule: Rule) -> Callable[[ResourceValidationArgs, ReportViolation], None]:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        try:
            findings = _findings_by_rule(args, rule.slug)
        except ConfigError as error:
            report_violation(str(error), None)
            return
        if findings is None:
            return
        for finding in findings[rule.id]:
            report_violation(violation_text(finding), None)

    return validate


def _stack_validator(rule: Rule) -> Callable[[StackValidationArgs, ReportViolation], None]:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        objects, urns = [], []
        for resource in args.resources:
            try:
                obj = kubernetes_object(resource.resource_type, resource.props)
            except CannotVerifyUntilApply:
                continue  # the resource policies already say so for this resource
            if obj is not None:
                objects.append(obj)
                urns.append(resource.urn)
        try:
            config = config_from_policy(args.get_config(), rule.slug + CROSS_OBJECT_SUFFIX)
        except ConfigError as error:
            report_violation(str(error), None)
            return
        whole = check_objects(objects, config, origins=urns, complete=True).findings
        # Only what the per-resource pass cannot see: report each finding once.
        seen_alone = {
            (finding.origin, finding.path, finding.message)
            for obj, urn in zip(objects, urns, strict=True)
            for finding in check_objects([obj], config, origins=[urn], complete=False).findings
        }
        for finding in whole:
            if (finding.origin, finding.path, finding.message) not in seen_alone:
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
            policies.append(
                StackValidationPolicy(
                    name=rule.slug + CROSS_OBJECT_SUFFIX,
                    description=f"{rule.summary} (across the whole stack)",
                    validate=_stack_validator(rule),
                    **common,
                )
            )
    return policies
