"""ValidatingAdmissionPolicy + Binding objects from the rules' ADMISSION declarations.

One policy per covered rule, named `<prefix>-dra0NN-<name>`, so a denial names its rule
twice (policy and message) and a platform team can roll rules out one at a time. Each
policy matches its rule's kinds in every version, on CREATE and UPDATE; waivers are a
matchCondition (an object that carries `dra-guard.io/ignore-<ID>` with a reason is not
checked), except for rules that cannot be waived; the configuration (extra legacy
resources, admin namespaces, non-accelerator classes, disabled rules) is compiled into
the expressions, so the policies need no params object.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dra_guard.catalog import IGNORE_ANNOTATION_PREFIX, POD_SPEC_PATHS, VISIBLE_CHARACTER_RE2
from dra_guard.celkit import KIND_RESOURCES, Admission, AdmissionTarget, NotAdmissible, has_chain, string
from dra_guard.config import NON_WAIVABLE
from dra_guard.rules import Registry, Rule

ADMISSION_API = "admissionregistration.k8s.io/v1"
ENFORCEMENTS = ("Deny", "Warn", "Audit")
MANAGED_BY = {"app.kubernetes.io/managed-by": "dra-guard"}


@dataclass(frozen=True)
class Covered:
    rule: Rule
    admission: Admission


def covered_rules(registry: Registry, target: AdmissionTarget) -> list[Covered]:
    """The enabled rules with an ADMISSION declaration, with it built for `target`."""
    result = []
    for rule in registry.values():
        if not target.config.rule_enabled(rule.id) or isinstance(rule.admission, NotAdmissible):
            continue
        result.append(Covered(rule, rule.admission(target)))
    return result


def uncovered_rules(registry: Registry) -> list[tuple[Rule, str]]:
    """Rules the policies do not enforce, with the reason each gives."""
    return [(rule, rule.admission.reason) for rule in registry.values() if isinstance(rule.admission, NotAdmissible)]


def waived(rule_id: str, kinds: Sequence[str]) -> str:
    """CEL: the object (or its pod template) carries `ignore-<rule_id>` with a visible reason."""
    key = string(IGNORE_ANNOTATION_PREFIX + rule_id)
    places = ["object.metadata"]
    for kind in sorted(set(kinds)):
        path = POD_SPEC_PATHS.get(kind)
        place = "object." + ".".join(path[:-1]) + ".metadata" if path is not None and kind != "Pod" else None
        if place is not None and place not in places:  # the controllers share one place
            places.append(place)
    clauses = []
    for place in places:
        guards = has_chain(place)
        clauses.append(
            f"({guards} && has({place}.annotations) && {key} in {place}.annotations && "
            f"{place}.annotations[{key}].matches({string(VISIBLE_CHARACTER_RE2)}))"
        )
    return " || ".join(clauses)


def _resource_rules(kinds: Sequence[str]) -> list[dict[str, Any]]:
    by_group: dict[str, list[str]] = {}
    for kind in kinds:
        group, resource = KIND_RESOURCES[kind]
        by_group.setdefault(group, []).append(resource)
    return [
        {
            "apiGroups": [group],
            "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE"],
            "resources": sorted(resources),
        }
        for group, resources in sorted(by_group.items())
    ]


def _message_prefix(rule: Rule) -> str:
    return f"{rule.id}: "


def validating_admission_policy(covered: Covered, target: AdmissionTarget, prefix: str) -> dict[str, Any]:
    rule, admission = covered.rule, covered.admission
    match_conditions = []
    if admission.condition is not None:
        match_conditions.append({"name": "applies", "expression": admission.condition})
    if rule.id not in _non_waivable(rule, target):
        match_conditions.append({"name": "not-waived", "expression": f"!({waived(rule.id, admission.kinds)})"})
    validations = []
    for validation in admission.validations:
        entry: dict[str, Any] = {
            "expression": validation.expression,
            "message": _message_prefix(rule) + validation.message,
            "reason": "Invalid",
        }
        if validation.message_expression is not None:
            entry["messageExpression"] = f"{string(_message_prefix(rule))} + ({validation.message_expression})"
        validations.append(entry)
    spec: dict[str, Any] = {
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": _resource_rules(admission.kinds)},
    }
    if match_conditions:
        spec["matchConditions"] = match_conditions
    if admission.variables:
        spec["variables"] = [{"name": name, "expression": expression} for name, expression in admission.variables]
    spec["validations"] = validations
    return {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": f"{prefix}-{rule.slug}", "labels": dict(MANAGED_BY)},
        "spec": spec,
    }


def _non_waivable(rule: Rule, target: AdmissionTarget) -> frozenset[str]:
    configured = target.config.get(NON_WAIVABLE)
    if configured is not None:
        return configured
    return frozenset() if rule.waivable else frozenset({rule.id})


def binding(policy: Mapping[str, Any], enforcement: str) -> dict[str, Any]:
    if enforcement not in ENFORCEMENTS:
        raise ValueError(f"enforcement: must be one of {', '.join(ENFORCEMENTS)}, not {enforcement!r}")
    name = policy["metadata"]["name"]
    return {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name, "labels": dict(MANAGED_BY)},
        "spec": {"policyName": name, "validationActions": [enforcement]},
    }


def admission_objects(
    registry: Registry, target: AdmissionTarget, *, enforcement: str = "Deny", prefix: str = "dra-guard"
) -> list[dict[str, Any]]:
    """Policy, binding, policy, binding, ... in rule order."""
    objects: list[dict[str, Any]] = []
    for covered in covered_rules(registry, target):
        policy = validating_admission_policy(covered, target, prefix)
        objects += [policy, binding(policy, enforcement)]
    return objects


#: What the webhook sees: claims (to verify HMAC tags) and the workloads whose pods name
#: claim templates (their request names are checked against the namespace's templates).
WEBHOOK_KINDS = ("ResourceClaim", "ResourceClaimTemplate", *sorted(POD_SPEC_PATHS))
#: Never sent to the webhook: an unavailable webhook must not lock the control plane out.
WEBHOOK_EXEMPT_NAMESPACES = ("kube-system",)
#: The API server waits at most this long for the webhook (it allows 1-30 s).
WEBHOOK_TIMEOUT_SECONDS = 5


def webhook_configuration(
    client_config: Mapping[str, Any], ca_bundle: bytes, *, prefix: str = "dra-guard"
) -> dict[str, Any]:
    """A ValidatingWebhookConfiguration for `dra-guard webhook`.

    `client_config` is `{"url": ...}` or `{"service": {"namespace", "name", "path"?, "port"?}}`.
    """
    import base64

    return {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": f"{prefix}-webhook", "labels": dict(MANAGED_BY)},
        "webhooks": [
            {
                "name": "webhook.dra-guard.io",
                "admissionReviewVersions": ["v1"],
                "clientConfig": {**client_config, "caBundle": base64.b64encode(ca_bundle).decode("ascii")},
                "failurePolicy": "Fail",
                "sideEffects": "None",
                "timeoutSeconds": WEBHOOK_TIMEOUT_SECONDS,
                "matchPolicy": "Equivalent",
                "namespaceSelector": {
                    "matchExpressions": [
                        {
                            "key": "kubernetes.io/metadata.name",
                            "operator": "NotIn",
                            "values": list(WEBHOOK_EXEMPT_NAMESPACES),
                        }
                    ]
                },
                "rules": _resource_rules(WEBHOOK_KINDS),
            }
        ],
    }
