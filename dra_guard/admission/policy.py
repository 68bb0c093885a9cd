"""ValidatingAdmissionPolicy + Binding objects from the rules' ADMISSION declarations.

One policy per covered rule, named `<prefix>-dra0NN-<name>`, so a denial names its rule
twice (policy and message) and a platform team can roll rules out one at a time. Each
policy matches its rule's kinds in every version, on CREATE and UPDATE, but for an update
that changes nothing a rule reads (the control plane's cleanup: dra_guard.admission.updates,
the matchCondition `changes-what-rules-read`); waivers are a
matchCondition (an object that carries `dra-guard.io/ignore-<ID>` with a reason is not
checked), except for rules that cannot be waived; the configuration (extra legacy
resources, admin namespaces, non-accelerator classes, disabled rules) is compiled into
the expressions, so the policies need no params object.

ResourceClaims that the control plane writes for pods are not checked (a matchCondition on
`request.userInfo.username`, `admission-claim-writers`): the resource-claim controller
creates a pod's claim from its ResourceClaimTemplate, which admission checks when it is
written and which cannot change afterwards, and the scheduler creates the claims of
DRA-backed extended resources and adds its finalizer to every claim it allocates. Nothing
else exempts a claim: a tenant can write the owner references and annotations those
claims carry.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dra_guard.admission.updates import reviewed_condition
from dra_guard.contract.catalog import (
    ANNOTATION_PREFIX,
    IGNORE_ANNOTATION_PREFIX,
    POD_CONTROLLER_KINDS,
    POD_GROUP_KINDS,
    POD_SPEC_PATHS,
    VISIBLE_CHARACTER_RE2,
)
from dra_guard.ruleapi.admission_form import (
    KIND_RESOURCES,
    Admission,
    AdmissionTarget,
    NotAdmissible,
    has_chain,
    pod_spec,
    string,
    string_list,
)
from dra_guard.ruleapi.config import ADMISSION_CLAIM_WRITERS, CLAIM_WRITERS, NON_WAIVABLE
from dra_guard.ruleapi.declarations import RuleModuleError
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
        admission = rule.admission(target)
        unknown = sorted(admission.covers - rule.facet_codes) if admission.covers is not None else []
        if unknown:
            raise RuleModuleError(f"rule module {rule.module}: ADMISSION covers undeclared facets {', '.join(unknown)}")
        result.append(Covered(rule, admission))
    return result


def uncovered_rules(registry: Registry) -> list[tuple[Rule, str]]:
    """Rules the policies do not enforce, with the reason each gives."""
    return [(rule, rule.admission.reason) for rule in registry.values() if isinstance(rule.admission, NotAdmissible)]


def waived(rule_id: str, kinds: Sequence[str]) -> str:
    """CEL: the object (or its pod template) carries `ignore-<rule_id>` with a visible reason.

    A controller's (`POD_CONTROLLER_KINDS`) own metadata does not count: what a policy decides
    on a controller is in its pod template, which its pods get with the template's
    annotations only, so only the template's waiver waives there (as in the engine:
    `dra_guard.engine.run._annotation_waiver`)."""
    key = string(IGNORE_ANNOTATION_PREFIX + rule_id)
    controllers = sorted(set(kinds) & set(POD_CONTROLLER_KINDS))
    clauses = []
    for place in _metadata_places(kinds):
        guards = has_chain(place)
        if place == "object.metadata" and controllers:
            guards = f"!(object.kind in {string_list(controllers)}) && {guards}"
        clauses.append(
            f"({guards} && has({place}.annotations) && {key} in {place}.annotations && "
            f"{place}.annotations[{key}].matches({string(VISIBLE_CHARACTER_RE2)}))"
        )
    return " || ".join(clauses)


#: Who writes ResourceClaims for pods in a cluster, and why their writes are exempt, from
#: kubernetes/kubernetes:
#: * the resource-claim controller: @ 3de376ecf6955ccd1b2ae31ffb310ae082b11cb1
#:   pkg/controller/resourceclaim/controller.go (`handleClaim` creates the claim of a pod's
#:   ResourceClaimTemplate: the template's `spec.metadata` and `spec.spec`, the annotation
#:   `resource.kubernetes.io/pod-claim-name`, `generateName: <pod>-<pod claim>-` and a
#:   controller owner reference to the Pod; `syncClaim` removes the scheduler's finalizer with
#:   an update). Its client is `system:serviceaccount:kube-system:resource-claim-controller`
#:   (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/controller_policy.go: create, update
#:   and patch on resourceclaims) under kube-controller-manager's
#:   --use-service-account-credentials, `system:kube-controller-manager` without it.
#: * the kube-scheduler: @ 16913111deb1a4c4ff76f4ba7ffd9ebef397a303
#:   pkg/scheduler/framework/plugins/dynamicresources/extendeddynamicresources.go
#:   (`createExtendedResourceClaimInAPI`: for a pod's DRA-backed extended resources, KEP-5004,
#:   it creates a claim with `pl.clientset`, the scheduler's own client, annotated
#:   `resource.kubernetes.io/extended-resource-claim: "true"`, `generateName:
#:   <pod>-extended-resources-`, a controller owner reference to the Pod and requests
#:   `container-<i>-request-<j>` on the mapped device class; `deleteClaim` removes the
#:   finalizer with an update), and dynamicresources.go `bindClaim` ("The finalizer needs to
#:   be added in a normal update", on every claim it allocates). The scheduler authenticates
#:   as `system:kube-scheduler` (staging/src/k8s.io/apiserver/pkg/authentication/user/user.go
#:   `KubeScheduler`, bound to the `system:kube-scheduler` ClusterRole in bootstrappolicy).
#: So both identities create and update claims: exempting only their creates would deny the
#: scheduler's finalizer update on the claims they created, and the pod would never start.
#: A claim's spec is immutable after creation (pkg/apis/resource/validation/validation.go
#: `ValidateResourceClaimUpdate`), so an exempt update changes metadata only.
CLAIM_WRITER_CONDITION = "not-a-claim-writer"


def claim_writer_exemption(writers: Sequence[str]) -> str:
    """CEL (a matchCondition): false for a write of a ResourceClaim by one of `writers`.

    `request.kind` and `request.userInfo` are always set by the API server; the `has()`
    guards keep the expression total (false, not an error) where a request lacks them."""
    return (
        "!(has(request.kind) && request.kind.group == 'resource.k8s.io' && request.kind.kind == 'ResourceClaim' && "
        "has(request.userInfo) && has(request.userInfo.username) && "
        f"request.userInfo.username in {string_list(writers)})"
    )


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
    # An update that changes nothing a rule reads (the control plane's cleanup) is not
    # checked: denied, it would strand the object (dra_guard.admission.updates).
    match_conditions = [reviewed_condition()]
    writers = target.config.get(ADMISSION_CLAIM_WRITERS)
    if "ResourceClaim" in admission.kinds and writers:
        match_conditions.append({"name": CLAIM_WRITER_CONDITION, "expression": claim_writer_exemption(writers)})
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


#: What the webhook sees: claims (to verify HMAC tags), the workloads whose pods name
#: claim templates (their request names are checked against the namespace's templates)
#: and the scheduling groups (alpha APIs no policy matches: the webhook answers for them).
WEBHOOK_KINDS = ("ResourceClaim", "ResourceClaimTemplate", *sorted(POD_SPEC_PATHS), *POD_GROUP_KINDS)
#: Never sent to the webhook: an unavailable webhook must not lock the control plane out.
WEBHOOK_EXEMPT_NAMESPACES = ("kube-system",)
#: The API server waits at most this long for the webhook (it allows 1-30 s).
WEBHOOK_TIMEOUT_SECONDS = 5
#: Which namespaces the webhook reviews: `all` but the exempt ones, or only those that
#: `opt-in` with a label (never the exempt ones either).
WEBHOOK_NAMESPACE_MODES = ("all", "opt-in")
#: The label a namespace opts in with, by default.
WEBHOOK_OPT_IN_LABEL = ("dra-guard.io/enforce", "true")
#: What the API server does when it cannot get the webhook's answer (docs/admission.md).
WEBHOOK_FAILURE_POLICIES = ("Fail", "Ignore")
#: Resource names that never request an accelerator (with `hugepages-<size>`).
PLAIN_RESOURCES = ("cpu", "ephemeral-storage", "memory")
#: The matchCondition that sends the webhook only what can hold an accelerator request.
ACCELERATOR_CONDITION = "may-request-accelerators"


#: Past these sizes the webhook's matchCondition stops looking and sends the object to the
#: webhook: its cost is then bounded by a constant, whatever the object (an object built to
#: exhaust the CEL cost limit must neither be refused for it nor, under `Ignore`, skip the
#: webhook). Ordinary pods are far below them.
MAX_SCANNED_CONTAINERS = 64
MAX_SCANNED_RESOURCE_NAMES = 16
MAX_SCANNED_ANNOTATIONS = 256


def _scan(collection: str, variable: str, predicate: str, limit: int) -> str:
    """CEL: `collection` is larger than `limit`, or some element of it satisfies `predicate`."""
    return f"(size({collection}) > {limit} || {collection}.exists({variable}, {predicate}))"


def _requests_more_than_plain_resources(resources: str) -> str:
    """CEL: a ResourceRequirements that names claims, or a resource that is not cpu, memory,
    ephemeral-storage or hugepages-* (or more resources than are looked at)."""
    plain = f"!(name in {string_list(PLAIN_RESOURCES)} || name.startsWith('hugepages-'))"
    lists = [f"(has({resources}.claims) && size({resources}.claims) > 0)"]
    for field_name in ("requests", "limits"):
        names = f"{resources}.{field_name}"
        lists.append(f"(has({names}) && {_scan(names, 'name', plain, MAX_SCANNED_RESOURCE_NAMES)})")
    return " || ".join(lists)


def accelerator_condition() -> str:
    """CEL (a webhook matchCondition, `object` and `request` only): the object can hold an
    accelerator request or a dra-guard declaration.

    A claim, a claim template, a PodGroup or a Workload (scheduling.k8s.io) always can. A
    workload or pod can when its pod spec has `resourceClaims`, when a container (init or
    regular) or the pod-level resources name claims or a resource other than cpu, memory,
    ephemeral-storage and hugepages-* (a device plugin's or a DRA-backed extended resource),
    or when the object's or its pod template's annotations have a `dra-guard.io/` key. The
    pod spec and its containers are bound once, each as the one element of a list. Past
    `MAX_SCANNED_*` containers, resource names or annotations the object is sent without
    looking further, so the cost stays bounded.
    Ephemeral containers are left out: the API server refuses resources on them."""
    uses_more = _requests_more_than_plain_resources("c.resources")
    container_lists = (
        "(has(pod.initContainers) ? pod.initContainers : []) + (has(pod.containers) ? pod.containers : [])"
    )
    pod_checks = " || ".join(
        [
            "(has(pod.resourceClaims) && size(pod.resourceClaims) > 0)",
            f"(has(pod.resources) && ({_requests_more_than_plain_resources('pod.resources')}))",
            f"[{container_lists}].exists(cs, "
            f"{_scan('cs', 'c', f'has(c.resources) && ({uses_more})', MAX_SCANNED_CONTAINERS)})",
        ]
    )
    clauses = [
        "request.kind.group == 'resource.k8s.io'",
        # PodGroups and Workloads are rare and all of them may name claims; naming the kinds
        # keeps the condition true to itself should the webhook's rules ever send more.
        "request.kind.group == 'scheduling.k8s.io' && request.kind.kind in "
        f"[{', '.join(string(kind) for kind in POD_GROUP_KINDS)}]",
        f"[{pod_spec(POD_SPEC_PATHS)}].exists(pod, {pod_checks})",
    ]
    declared = f"key.startsWith({string(ANNOTATION_PREFIX)})"
    for place in _metadata_places(POD_SPEC_PATHS):
        annotations = f"{place}.annotations"
        clauses.append(
            f"({has_chain(place)} && has({annotations}) && "
            f"{_scan(annotations, 'key', declared, MAX_SCANNED_ANNOTATIONS)})"
        )
    return " || ".join(clauses)


def _metadata_places(kinds: Iterable[str]) -> list[str]:
    """The object's metadata, then each distinct pod-template metadata of `kinds`."""
    places = ["object.metadata"]
    for kind in sorted(set(kinds)):
        path = POD_SPEC_PATHS.get(kind)
        if path is None or kind == "Pod":
            continue
        place = "object." + ".".join(path[:-1]) + ".metadata"
        if place not in places:
            places.append(place)
    return places


def webhook_match_conditions(claim_writers: Sequence[str] = CLAIM_WRITERS) -> list[dict[str, str]]:
    """The webhook's matchConditions: what can hold an accelerator request, not an update
    that changes nothing a rule reads (`dra_guard.admission.updates`), and not a claim the
    control plane writes for a pod (`admission-claim-writers`)."""
    conditions = [{"name": ACCELERATOR_CONDITION, "expression": accelerator_condition()}, reviewed_condition()]
    if claim_writers:
        conditions.append({"name": CLAIM_WRITER_CONDITION, "expression": claim_writer_exemption(claim_writers)})
    return conditions


def namespace_selector(
    mode: str = "all",
    label: tuple[str, str] = WEBHOOK_OPT_IN_LABEL,
    exempt: Sequence[str] = (),
) -> dict[str, Any]:
    """The webhook's namespaceSelector: every namespace (`all`) or those labelled `label`
    (`opt-in`), never kube-system nor the `exempt` ones."""
    if mode not in WEBHOOK_NAMESPACE_MODES:
        raise ValueError(f"namespaces: must be one of {', '.join(WEBHOOK_NAMESPACE_MODES)}, not {mode!r}")
    never = {
        "key": "kubernetes.io/metadata.name",
        "operator": "NotIn",
        "values": sorted({*WEBHOOK_EXEMPT_NAMESPACES, *exempt}),
    }
    selector: dict[str, Any] = {}
    if mode == "opt-in":
        selector["matchLabels"] = {label[0]: label[1]}
    selector["matchExpressions"] = [never]
    return selector


def webhook_configuration(
    client_config: Mapping[str, Any],
    ca_bundle: bytes,
    *,
    prefix: str = "dra-guard",
    namespaces: str = "all",
    namespace_label: tuple[str, str] = WEBHOOK_OPT_IN_LABEL,
    exempt_namespaces: Sequence[str] = (),
    failure_policy: str = "Fail",
    claim_writers: Sequence[str] = CLAIM_WRITERS,
) -> dict[str, Any]:
    """A ValidatingWebhookConfiguration for `dra-guard webhook`.

    `client_config` is `{"url": ...}` or `{"service": {"namespace", "name", "path"?, "port"?}}`.
    """
    import base64

    if failure_policy not in WEBHOOK_FAILURE_POLICIES:
        raise ValueError(
            f"failure_policy: must be one of {', '.join(WEBHOOK_FAILURE_POLICIES)}, not {failure_policy!r}"
        )

    def entry(name: str, rules: list[dict[str, Any]], conditions: list[dict[str, str]]) -> dict[str, Any]:
        return {
            "name": name,
            "admissionReviewVersions": ["v1"],
            "clientConfig": {**client_config, "caBundle": base64.b64encode(ca_bundle).decode("ascii")},
            "failurePolicy": failure_policy,
            "sideEffects": "None",
            "timeoutSeconds": WEBHOOK_TIMEOUT_SECONDS,
            "matchPolicy": "Equivalent",
            "namespaceSelector": namespace_selector(namespaces, namespace_label, exempt_namespaces),
            "rules": rules,
            "matchConditions": conditions,
        }

    reservations = {
        "apiGroups": ["resource.k8s.io"],
        "apiVersions": ["*"],
        "operations": ["UPDATE"],
        "resources": ["resourceclaims/status"],
    }
    return {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": f"{prefix}-webhook", "labels": dict(MANAGED_BY)},
        "webhooks": [
            entry("webhook.dra-guard.io", _resource_rules(WEBHOOK_KINDS), webhook_match_conditions(claim_writers)),
            # The scheduler's reservation of a claim for a pod, whoever writes it: checked
            # against that pod (dra_guard.admission.reservations).
            entry(
                RESERVATION_WEBHOOK,
                [reservations],
                [{"name": RESERVATION_CONDITION, "expression": reservation_condition()}],
            ),
        ],
    }


#: The webhook entry for reservations, and its one matchCondition.
RESERVATION_WEBHOOK = "reservations.dra-guard.io"
RESERVATION_CONDITION = "reserves-for-another-consumer"


def reservation_condition() -> str:
    """CEL (a webhook matchCondition): the update adds a consumer to the claim's reservedFor
    (by uid): a pod, or a pod group (a PodGroup, whose pods all get the claim). The rest of a
    claim's status (its allocation alone, a driver's device status, a reservation taken
    away) is never sent."""
    added = (
        "object.status.reservedFor.exists(c, !(has(oldObject.status) && "
        "has(oldObject.status.reservedFor) && oldObject.status.reservedFor.exists(o, o.uid == c.uid)))"
    )
    return f"has(object.status) && has(object.status.reservedFor) && {added}"
