"""How a rule says what the API server itself can enforce: its ADMISSION declaration.

A rule module declares `ADMISSION` next to its Python `check()`, so the rule's two forms
change together: either a function of the target (configuration, Kubernetes version,
admin-namespace label) returning an `Admission` — the CEL that a ValidatingAdmissionPolicy
evaluates — or `NotAdmissible("why")` for a rule that needs more than one object.
`dra_guard.admission` assembles the policies; a parity test proves that, for every object
the tests know, the policy denies exactly what the engine reports for the rule.

The helpers below write standard CEL only (the macros `all`, `exists`, `exists_one`,
`map`, `filter`; `has()`, `size()`, `in`, `matches`, `startsWith`, `endsWith`,
`contains`) with every optional field guarded by `has()`: an evaluation error in a policy
with `failurePolicy: Fail` denies the request, so an unguarded read would deny compliant
objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

from dra_guard.contract.catalog import NON_ACCELERATOR_CLASSES as KNOWN_NON_ACCELERATOR_CLASSES
from dra_guard.contract.catalog import POD_SPEC_PATHS
from dra_guard.contract.findings import Finding
from dra_guard.ruleapi.config import KUBERNETES_VERSION, NON_ACCELERATOR_CLASSES, Config

#: kind -> (API group, resource): what a policy's resourceRules name for each kind (a
#: policy matches these kinds in these groups only).
KIND_RESOURCES: Mapping[str, tuple[str, str]] = {
    "Pod": ("", "pods"),
    "PodTemplate": ("", "podtemplates"),
    "ReplicationController": ("", "replicationcontrollers"),
    "LimitRange": ("", "limitranges"),
    "Deployment": ("apps", "deployments"),
    "StatefulSet": ("apps", "statefulsets"),
    "DaemonSet": ("apps", "daemonsets"),
    "ReplicaSet": ("apps", "replicasets"),
    "Job": ("batch", "jobs"),
    "CronJob": ("batch", "cronjobs"),
    "ResourceClaim": ("resource.k8s.io", "resourceclaims"),
    "ResourceClaimTemplate": ("resource.k8s.io", "resourceclaimtemplates"),
    "DeviceClass": ("resource.k8s.io", "deviceclasses"),
    # Workload-aware scheduling (alpha, KEP-4671/KEP-5729): a group's claims are shared by
    # every pod of the group.
    "PodGroup": ("scheduling.k8s.io", "podgroups"),
    "Workload": ("scheduling.k8s.io", "workloads"),
}


class AdmissionTarget(NamedTuple):
    """What the generated policy is for: the configuration (its `kubernetes-version` is the
    cluster's release) and how admin namespaces are marked."""

    config: Config
    #: A namespace label that marks admin namespaces (DRA006), `(key, value)`.
    admin_namespace_label: tuple[str, str] | None = None

    @classmethod
    def for_release(
        cls, config: Config, kubernetes_version: str | None = None, admin_namespace_label: tuple[str, str] | None = None
    ) -> AdmissionTarget:
        """A target whose release is `kubernetes_version` ("1.36") when given, else the config's."""
        if kubernetes_version is not None:
            config = config.with_value(KUBERNETES_VERSION, kubernetes_version)
        return cls(config, admin_namespace_label)


class Validation(NamedTuple):
    """One CEL check: `expression` is true when the object complies."""

    expression: str
    #: Said when the check fails; the generator puts the rule ID in front.
    message: str
    #: A CEL string naming the offending container or request (the rule ID is prefixed).
    message_expression: str | None = None


class Admission(NamedTuple):
    """A rule as a ValidatingAdmissionPolicy."""

    #: The kinds the policy matches (their resources, all versions, CREATE and UPDATE).
    kinds: tuple[str, ...]
    validations: tuple[Validation, ...]
    #: `variables`, in order: (name, CEL expression); later ones may use earlier ones.
    variables: tuple[tuple[str, str], ...] = ()
    #: A matchCondition: the policy ignores objects for which it is false. It may use
    #: `object` only: the API server gives matchConditions no variables.
    condition: str | None = None
    #: The rule's facets (`FACETS`) whose findings the policy decides, when it decides only
    #: some (default: every finding that needs only the object itself). The parity test
    #: compares exactly these, and the webhook leaves them to the policy; see `decides`.
    covers: frozenset[str] | None = None


class NotAdmissible(NamedTuple):
    """A rule the API server cannot decide from one object; `reason` says why."""

    reason: str


AdmissionDeclaration = Callable[[AdmissionTarget], Admission] | NotAdmissible


def decides(admission: Admission, finding: Finding) -> bool:
    """Whether the policy, rather than the webhook, answers for this finding of its rule.

    A policy decides only findings on objects of the kinds (and API groups) it matches, and
    only those that need no other object (not cross-object: a policy sees one object).
    Among those, a rule's `covers` names the facets, the rule's distinct checks, that the
    policy performs; without one, it performs them all.  A facet, not a message, decides:
    rewording a finding cannot move it between the policy and the webhook.
    """
    group = finding.object.api_version.rpartition("/")[0]
    if finding.object.kind not in admission.kinds or KIND_RESOURCES[finding.object.kind][0] != group:
        return False  # a kind the policy does not match (a CRD's pod template, a kind of another group)
    if finding.cross_object:
        return False
    return admission.covers is None or finding.facet in admission.covers


# --- writing CEL ------------------------------------------------------------------------


def string(value: str) -> str:
    """`value` as a single-quoted CEL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n").replace("\r", "\\r") + "'"


def selector_matches(body: str, pattern: str) -> str:
    """CEL: one of the body's CEL selectors matches the RE2 `pattern`."""
    return selector_matches_expression(body, string(pattern))


def selector_matches_expression(body: str, pattern: str) -> str:
    """CEL: one of the body's CEL selectors matches the RE2 pattern that the CEL expression
    `pattern` computes (DRA017 splices a request's count into its pattern)."""
    return (
        f"has({body}.selectors) && {body}.selectors.exists(s, has(s.cel) && has(s.cel.expression) "
        f"&& s.cel.expression.matches({pattern}))"
    )


def string_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(string(value) for value in sorted(values)) + "]"


#: The metadata a template's claims are made with (`spec.metadata`), in CEL.
CLAIM_METADATA = "object.spec.metadata"


def annotation(key: str, place: str = "object.metadata") -> str:
    """`true` when the metadata at `place` has annotation `key` (guarded)."""
    guards = "" if place == "object.metadata" else has_chain(place) + " && "
    return f"({guards}has({place}.annotations) && {string(key)} in {place}.annotations)"


def annotation_value(key: str, place: str = "object.metadata") -> str:
    """The annotation's value; only meaningful where `annotation(key, place)` holds."""
    return f"{place}.annotations[{string(key)}]"


def on_template(expression: str) -> str:
    """CEL: `expression` holds, or the object is not a ResourceClaimTemplate."""
    return f"object.kind != 'ResourceClaimTemplate' || ({expression})"


def devices_list(field: str) -> str:
    """CEL: the `devices.<field>` list (requests, constraints, config) of a ResourceClaim or
    ResourceClaimTemplate, or `[]`; written with `object` alone, for matchConditions too."""
    return (
        "(object.kind == 'ResourceClaimTemplate' ? "
        f"(has(object.spec.spec) && has(object.spec.spec.devices) && has(object.spec.spec.devices.{field}) "
        f"? object.spec.spec.devices.{field} : []) : "
        f"(has(object.spec) && has(object.spec.devices) && has(object.spec.devices.{field}) "
        f"? object.spec.devices.{field} : []))"
    )


#: The top-level device requests of a ResourceClaim or ResourceClaimTemplate, or `[]`.
#: Written with `object` alone, so a matchCondition (which gets no variables) can use it.
REQUESTS = devices_list("requests")


def some_request_body(check: Callable[[str], str], requests: str = "variables.requests") -> str:
    """True when `check(body)` holds for at least one request body of the claim."""
    return (
        f"{requests}.exists(r, has(r.firstAvailable) ? r.firstAvailable.exists(s, {check('s')}) : "
        f"(has(r.exactly) ? {check('r.exactly')} : {check('r')}))"
    )


def bodies(request: str) -> str:
    """CEL: the request's bodies as a list (its firstAvailable entries, or its one body)."""
    single = f"(has({request}.exactly) ? [{request}.exactly] : [{request}])"
    return f"(has({request}.firstAvailable) ? {request}.firstAvailable : {single})"


def failing_requests(check: Callable[[str], str], requests: str = "variables.requests") -> str:
    """CEL: the names of the requests with a body for which `check(body)` is false.

    The check is written once (not once per request shape), so a large pattern inside it
    is not repeated; a validation `size(variables.<this>) == 0` names the culprits.
    """
    return f"{requests}.filter(r, {bodies('r')}.exists(b, !({check('b')}))).map(r, r.name)"


def is_accelerator_body(body: str, config: Config) -> str:
    """The body requests a device class the configuration counts as an accelerator, and not
    with adminAccess (monitoring: `Context.accelerator_requests` leaves it out too)."""
    admin = not_admin_access(body, config)
    non_accelerator = non_accelerator_classes(config)
    if not non_accelerator:
        return admin
    return f"{admin} && !(has({body}.deviceClassName) && {body}.deviceClassName in {string_list(non_accelerator)})"


def not_admin_access(body: str, config: Config) -> str:
    """The body is no adminAccess request the target release honours (`Context._monitors`)."""
    if not config.kubernetes_release.admin_access_by_default:
        return "true"
    return f"!(has({body}.adminAccess) && {body}.adminAccess == true)"


def has_accelerator_request(config: Config, requests: str = REQUESTS) -> str:
    """The claim requests at least one accelerator (usable in a matchCondition)."""
    return some_request_body(lambda body: is_accelerator_body(body, config), requests)


def non_accelerator_classes(config: Config) -> list[str]:
    """The device classes that are not accelerators: dra-guard's own and the configuration's."""
    configured: frozenset[str] = config.get(NON_ACCELERATOR_CLASSES)
    return sorted({*KNOWN_NON_ACCELERATOR_CLASSES, *configured})


def has_chain(place: str) -> str:
    """`has(a.b) && has(a.b.c) ...` for every field on the way to `place` (`true` for an identifier)."""
    parts = place.split(".")
    return " && ".join(f"has({'.'.join(parts[: index + 1])})" for index in range(1, len(parts))) or "true"


#: The kinds whose objects carry pods: Pod, PodTemplate and the built-in controllers.
POD_KINDS = tuple(sorted(POD_SPEC_PATHS))
#: The built-in kinds whose pod spec is a template that stamps out many pods.
CONTROLLER_KINDS = tuple(kind for kind in POD_KINDS if kind != "Pod")


def pod_spec(kinds: Iterable[str] = POD_KINDS) -> str:
    """CEL: the object's pod spec (where `POD_SPEC_PATHS` puts it for its kind), or `{}`.

    Written with `object` alone; policies bind it to `variables.pod` once.  The API server
    compiles policies with `object` untyped, so the branches need not share a type."""
    return _by_kind({kind: tuple(POD_SPEC_PATHS[kind]) for kind in kinds})


def pod_metadata(kinds: Iterable[str] = POD_KINDS) -> str:
    """CEL: the metadata of the object's pod (a Pod's own, a template's beside its spec), or `{}`."""
    return _by_kind({kind: (*POD_SPEC_PATHS[kind][:-1], "metadata") for kind in kinds})


def _by_kind(paths: Mapping[str, tuple[str, ...]]) -> str:
    """CEL: the field at the object kind's path (guarded), or `{}`; kinds sharing a path share a branch."""
    by_path: dict[tuple[str, ...], list[str]] = {}
    for kind in sorted(paths):
        by_path.setdefault(paths[kind], []).append(kind)
    expression = "{}"
    for path, names in sorted(by_path.items(), reverse=True):
        place = "object." + ".".join(path)
        expression = f"(object.kind in {string_list(names)} && {has_chain(place)} ? {place} : {expression})"
    return expression


def containers(pod: str = "variables.pod") -> str:
    """CEL: the pod's init, regular and ephemeral containers, in that order, as one list."""
    lists = ("initContainers", "containers", "ephemeralContainers")
    return " + ".join(f"(has({pod}.{name}) ? {pod}.{name} : [])" for name in lists)
