"""Evaluate ValidatingAdmissionPolicies on an object the way the API server does.

For the parity test (the policies must deny exactly what the engine reports). Follows the
admission chain for a CREATE: the API server first decodes the object into its typed form
(null fields disappear, except inside opaque `parameters`, which it keeps as given) and
applies its defaults (a DRA request's `allocationMode` becomes `ExactCount`, its `count`
1); then for each policy whose match constraints select the object's resource and whose
binding selects its namespace, every matchCondition is evaluated (one false skips the
policy; otherwise an error applies the failurePolicy), the variables are bound in order
(lazily in the API server: an error surfaces only where a variable is used, which binding
errors as error values reproduces), and each validation's expression must be true — false
denies with the message (or the messageExpression's value), an error denies under
`failurePolicy: Fail`. CEL is evaluated with cel-python, whose regular expressions are RE2
like the API server's. What the evaluation costs is counted apart (`costs`, with
`dra_guard.admission.cost`): an evaluation over the API server's limits is an error, which
denies under `failurePolicy: Fail`.

The request is a CREATE by a tenant unless the caller says otherwise (`operation`,
`user_info`: `request.userInfo` as the API server sets it), so the policies' exemption of
the control plane's claim writers can be evaluated. `webhook_decision` answers the other
question the API server asks before a webhook runs: whether the ValidatingWebhookConfiguration
sends it the request at all (its rules, namespaceSelector and matchConditions), for an
UPDATE with the `old_object` the API server sends along.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from dra_guard.contract.container_fields import as_stored
from dra_guard.model.extended_resources import (
    LIMIT_RANGE_BOUNDS,
    LIMIT_RANGE_DEFAULTS,
    REQUIREMENT_SECTIONS,
    asks_nothing,
)
from dra_guard.model.pod_templates import BUILTIN_GROUPS, api_group
from dra_guard.ruleapi.admission_form import KIND_RESOURCES

if TYPE_CHECKING:
    from dra_guard.admission.cost import PolicyCost


@dataclass(frozen=True)
class Denial:
    policy: str
    message: str

    @property
    def rule(self) -> str:
        """The rule ID every dra-guard message starts with."""
        return self.message.partition(":")[0]


#: Who writes a request when a test does not say: an ordinary tenant's user.
TENANT_USER: Mapping[str, Any] = {"username": "alice", "groups": ["system:authenticated"]}
#: Operations a request may have, and those that carry no `object`.
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")


@lru_cache(maxsize=4096)  # the policies' own expressions (up to 39 KiB), not an input's
def _program(expression: str) -> Any:
    import celpy

    environment = celpy.Environment()
    return environment.program(environment.compile(expression))


def stored_form(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object as the API server holds it at admission: nulls dropped, zero quantities
    written "0", DRA defaults set."""
    stored: dict[str, Any] = _zeros_canonical(_without_nulls(copy.deepcopy(dict(obj))))
    if _typed(stored):
        _containers_as_stored(stored)
    if str(stored.get("apiVersion", "")).startswith("resource.k8s.io/"):
        spec: dict[str, Any] = stored["spec"] if isinstance(stored.get("spec"), dict) else {}
        claim_spec = spec.get("spec") if stored.get("kind") == "ResourceClaimTemplate" else spec
        devices = claim_spec.get("devices") if isinstance(claim_spec, dict) else None
        for request in devices.get("requests", []) if isinstance(devices, dict) else []:
            if not isinstance(request, dict):
                continue
            bodies = [request.get("exactly")] if "exactly" in request else []
            bodies += list(request.get("firstAvailable") or [])
            if "exactly" not in request and "firstAvailable" not in request:
                bodies.append(request)  # flat (v1alpha3/v1beta1)
            for body in bodies:
                if isinstance(body, dict) and "deviceClassName" in body:
                    body.setdefault("allocationMode", "ExactCount")
                    if body["allocationMode"] == "ExactCount":
                        body.setdefault("count", 1)
    return stored


#: The fields of a built-in kind that hold resource lists (a container's and a pod's
#: `resources`, a LimitRange item's bounds and defaults).
_RESOURCE_LISTS = frozenset({*REQUIREMENT_SECTIONS, *LIMIT_RANGE_DEFAULTS, *LIMIT_RANGE_BOUNDS})


def _zeros_canonical(value: Any) -> Any:
    """A resource list's zero quantity as the API server writes it back ("0", Quantity's
    canonical form, whether `0`, `0.0` or `0Gi` was sent): the policies compare with it.
    Other quantities stay as sent; no policy reads their value."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in _RESOURCE_LISTS and isinstance(item, dict):
                value[key] = {name: "0" if asks_nothing(quantity) else quantity for name, quantity in item.items()}
            else:
                _zeros_canonical(item)
    elif isinstance(value, list):
        for item in value:
            _zeros_canonical(item)
    return value


#: The pod spec fields that hold containers.
_CONTAINER_LISTS = frozenset({"containers", "initContainers", "ephemeralContainers"})


def _typed(obj: Mapping[str, Any]) -> bool:
    """Whether the API server decodes the object into a typed form (a kind it serves itself),
    where `omitempty` fields written empty disappear; a custom resource is kept as written."""
    version = obj.get("apiVersion")
    return isinstance(version, str) and api_group(obj) in BUILTIN_GROUPS


def _containers_as_stored(value: Any) -> None:
    """Every container under the object without the fields the API server leaves out
    (`contract.container_fields`: `args: []`, `stdin: false`, ...)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in _CONTAINER_LISTS and isinstance(item, list):
                item[:] = [as_stored(each) if isinstance(each, dict) else each for each in item]
            _containers_as_stored(item)
    elif isinstance(value, list):
        for item in value:
            _containers_as_stored(item)


def _without_nulls(value: Any, raw: bool = False) -> Any:
    """Typed fields lose their nulls in decoding; a RawExtension (opaque `parameters`) keeps
    the JSON it was given, nulls and all."""
    if raw:
        return value
    if isinstance(value, dict):
        opaque = "driver" in value and "parameters" in value
        return {
            key: _without_nulls(item, raw=opaque and key == "parameters")
            for key, item in value.items()
            if item is not None
        }
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


def _matches_rules(rules: Sequence[Mapping[str, Any]], obj: Mapping[str, Any], operation: str) -> bool:
    located = KIND_RESOURCES.get(str(obj.get("kind")))
    if located is None:
        return False
    group, resource = located
    api_group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    if api_group != group:
        return False
    return any(
        group in rule["apiGroups"] and resource in rule["resources"] and operation in rule["operations"]
        for rule in rules
    )


def _matches_resource(policy: Mapping[str, Any], obj: Mapping[str, Any], operation: str = "CREATE") -> bool:
    return _matches_rules(policy["spec"]["matchConstraints"]["resourceRules"], obj, operation)


def admission_request(
    obj: Mapping[str, Any], operation: str = "CREATE", user_info: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The parts of the AdmissionRequest the generated CEL reads (`request.kind`,
    `request.operation`, `request.userInfo`), as the API server fills them for `obj`."""
    if operation not in OPERATIONS:
        raise ValueError(f"operation: must be one of {', '.join(OPERATIONS)}, not {operation!r}")
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    return {
        "kind": {"group": group, "version": version, "kind": str(obj.get("kind", ""))},
        "operation": operation,
        "userInfo": dict(TENANT_USER if user_info is None else user_info),
        "namespace": str(metadata.get("namespace", "")),
        "name": str(metadata.get("name", "")),
    }


def _activation(
    obj: Mapping[str, Any],
    namespace: Mapping[str, Any] | None,
    request: Mapping[str, Any] | None = None,
    old_object: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    from celpy.adapter import json_to_cel

    return {
        "object": json_to_cel(dict(obj)),
        "oldObject": json_to_cel(dict(old_object)) if old_object is not None else None,
        "params": None,
        "namespaceObject": json_to_cel(dict(namespace)) if namespace is not None else None,
        "request": json_to_cel(dict(request if request is not None else admission_request(obj))),
    }


def _evaluate(expression: str, activation: Mapping[str, Any]) -> Any:
    """The value, or the exception the evaluation raised (an error value)."""
    from celpy.evaluation import CELEvalError

    try:
        return _program(expression).evaluate(activation)
    except CELEvalError as error:
        return error
    except Exception as error:  # cel-python raises a few plain exceptions (type errors)
        return CELEvalError(str(error))


def evaluate_policy(
    policy: Mapping[str, Any],
    obj: Mapping[str, Any],
    namespace: Mapping[str, Any] | None = None,
    *,
    request: Mapping[str, Any] | None = None,
    old_object: Mapping[str, Any] | None = None,
) -> list[Denial]:
    """The denials of one policy for a stored object (call `stored_form` first), in the
    `request` given (`admission_request`; default: a tenant's CREATE)."""
    from celpy.celtypes import BoolType, MapType, StringType

    name = policy["metadata"]["name"]
    spec = policy["spec"]
    request = request if request is not None else admission_request(obj)
    if not _matches_resource(policy, obj, str(request["operation"])):
        return []
    activation = _activation(obj, namespace, request, old_object)
    fail = spec.get("failurePolicy", "Fail") == "Fail"
    # All matchConditions are evaluated: one that is false skips the policy, even next to an
    # error; otherwise an error applies the failure policy (matchconditions/matcher.go).
    failed = []
    for condition in spec.get("matchConditions", []):
        value = _evaluate(condition["expression"], activation)
        if isinstance(value, BaseException) or not isinstance(value, BoolType):
            failed.append(f"matchCondition {condition['name']} failed: {value}")
        elif not value:
            return []
    if failed:
        return [Denial(name, "; ".join(failed))] if fail else []
    bound: dict[Any, Any] = {}
    for variable in spec.get("variables", []):
        activation["variables"] = MapType(bound)
        bound[StringType(variable["name"])] = _evaluate(variable["expression"], activation)
    activation["variables"] = MapType(bound)
    denials = []
    for validation in spec["validations"]:
        value = _evaluate(validation["expression"], activation)
        if isinstance(value, BaseException) or not isinstance(value, BoolType):
            if fail:
                denials.append(Denial(name, f"{validation['message']} (evaluation error: {value})"))
            continue
        if value:
            continue
        message = validation["message"]
        if "messageExpression" in validation:
            rendered = _evaluate(validation["messageExpression"], activation)
            if isinstance(rendered, str):
                message = str(rendered)
        denials.append(Denial(name, message))
    return denials


def admit(
    policies: Iterable[Mapping[str, Any]],
    obj: Mapping[str, Any],
    namespace: Mapping[str, Any] | None = None,
    *,
    user_info: Mapping[str, Any] | None = None,
    operation: str = "CREATE",
    old_object: Mapping[str, Any] | None = None,
) -> list[Denial]:
    """Every denial the policies give the object, written (`operation`, CREATE unless said)
    by `user_info` (`request.userInfo`: `{"username": ..., "groups": [...]}`; a tenant's
    unless said)."""
    stored, namespace = _review(obj, namespace)
    request = admission_request(stored, operation, user_info)
    old = stored_form(old_object) if old_object is not None else None
    denials: list[Denial] = []
    for policy in policies:
        if policy.get("kind") == "ValidatingAdmissionPolicy":
            denials += evaluate_policy(policy, stored, namespace, request=request, old_object=old)
    return denials


def costs(
    policies: Iterable[Mapping[str, Any]], obj: Mapping[str, Any], namespace: Mapping[str, Any] | None = None
) -> list[PolicyCost]:
    """What each policy that matches the object costs the API server to evaluate on CREATE
    (`dra_guard.admission.cost`); `PolicyCost.problems()` names the limits it exceeds."""
    from dra_guard.admission.cost import policy_cost

    stored, namespace = _review(obj, namespace)
    return [
        policy_cost(policy, stored, namespace)
        for policy in policies
        if policy.get("kind") == "ValidatingAdmissionPolicy" and _matches_resource(policy, stored)
    ]


def _review(obj: Mapping[str, Any], namespace: Mapping[str, Any] | None) -> tuple[dict[str, Any], Any]:
    """The object and Namespace a review gives the policies."""
    stored = stored_form(obj)
    if namespace is None and stored.get("kind") not in CLUSTER_SCOPED_KINDS:
        namespace = _namespace_of(stored)
    return stored, namespace


#: The kinds policies match that have no namespace (their `namespaceObject` is null).
CLUSTER_SCOPED_KINDS = frozenset({"DeviceClass"})


def _namespace_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The Namespace the API server reads for a namespaced object's review: the one it is
    created in (without labels, when the caller gives no Namespace object)."""
    metadata = obj.get("metadata")
    name = metadata.get("namespace") if isinstance(metadata, Mapping) else None
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name if isinstance(name, str) else "default"}}


def denied_rules(denials: Sequence[Denial]) -> set[str]:
    return {denial.rule for denial in denials}


# --- whether the API server calls the webhook -------------------------------------------

#: What the API server does with a request for one webhook of a configuration.
CALL, SKIP, REJECT = "call", "skip", "reject"


def webhook_decision(
    configuration: Mapping[str, Any],
    obj: Mapping[str, Any],
    namespace: Mapping[str, Any] | None = None,
    *,
    user_info: Mapping[str, Any] | None = None,
    operation: str = "CREATE",
    old_object: Mapping[str, Any] | None = None,
) -> str:
    """`CALL` when the API server sends the request to the configuration's (first) webhook,
    `SKIP` when it does not, `REJECT` when it refuses the request without calling it (a
    matchCondition error under `failurePolicy: Fail`; k8s.io/apiserver
    pkg/admission/plugin/webhook/matchconditions/matcher.go).

    In order: the webhook's `rules` (the object's resource and the operation), its
    `namespaceSelector` on the Namespace's labels (the API server sets
    `kubernetes.io/metadata.name` on every Namespace), then every matchCondition: one false
    skips the webhook; otherwise an error applies the failurePolicy."""
    from celpy.celtypes import BoolType

    webhook = configuration["webhooks"][0]
    stored = stored_form(obj)
    if not _matches_rules(webhook["rules"], stored, operation):
        return SKIP
    if stored.get("kind") not in CLUSTER_SCOPED_KINDS:
        namespace = namespace if namespace is not None else _namespace_of(stored)
        if not _selects(webhook.get("namespaceSelector", {}), _namespace_labels(namespace)):
            return SKIP
    request = admission_request(stored, operation, user_info)
    old = stored_form(old_object) if old_object is not None else None
    activation = _activation(stored, None, request, old)
    del activation["namespaceObject"], activation["params"]  # webhooks' CEL has neither
    failed = False
    for condition in webhook.get("matchConditions", []):
        value = _evaluate(condition["expression"], activation)
        if isinstance(value, BaseException) or not isinstance(value, BoolType):
            failed = True
        elif not value:
            return SKIP
    if failed:
        return REJECT if webhook.get("failurePolicy", "Fail") == "Fail" else SKIP
    return CALL


def _namespace_labels(namespace: Mapping[str, Any]) -> dict[str, str]:
    found = namespace.get("metadata")
    metadata: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    labels = {str(key): str(value) for key, value in (metadata.get("labels") or {}).items()}
    labels["kubernetes.io/metadata.name"] = str(metadata.get("name", ""))
    return labels


def _selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector on `labels` (an empty selector selects everything)."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True
