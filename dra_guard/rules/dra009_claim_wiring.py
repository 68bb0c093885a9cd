"""DRA009: pod claims, container claims and templates that do not fit together."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from dra_guard.contract.findings import Severity
from dra_guard.model.manifest import Path, text
from dra_guard.model.pod_templates import PodSpecView
from dra_guard.ruleapi.admission_form import POD_KINDS, Admission, AdmissionTarget, Validation, containers, pod_spec
from dra_guard.ruleapi.context import ClaimFacts, Context, Pending, Resolved, Resource, Violation
from dra_guard.ruleapi.declarations import Example
from dra_guard.ruleapi.device_classes import decided_by_input

ID = "DRA009"
NAME = "claim-wiring"
SEVERITY = Severity.MEDIUM
SUMMARY = "Container claims, pod claims and claim templates must refer to each other correctly."
RATIONALE = (
    "A container claim that names no pod claim is rejected by the API server; a pod claim that no "
    "container uses allocates (and holds) a device for nothing; a `request` that names no request of the "
    "template exposes nothing. A template that is not among the checked objects may simply live "
    "elsewhere, so that case is reported at low severity. A claim for NICs that attach to the pod "
    "(DRANET moves them into the pod's network namespace) needs no container to name it, and an NVIDIA "
    "ComputeDomain makes the template its spec.channel.resourceClaimTemplate.name names. A pod claim must "
    "name exactly one of `resourceClaimName` and `resourceClaimTemplateName`: the `source` that held them "
    "before Kubernetes 1.31 is gone, and the API server refuses a pod claim with both or neither, so what it "
    "would have asked for is not judged."
)
REMEDIATION = (
    "Make every container's resources.claims[].name match a spec.resourceClaims[].name, use every pod claim, "
    "and check template and request names."
)
#: Every kind: workload CRDs, and kinds nobody told us about, have pod templates too.
KINDS = None
# Whether a template or request exists depends on the whole input set.
CROSS_OBJECT = True
WAIVABLE = True
OPTIONS = ()
FACETS = {
    "undeclared-claim": "a container uses a claim the pod does not declare",
    "unknown-request": "a container asks for a request its claim or template does not have",
    "unused-claim": "a pod claim naming a ResourceClaim (or nothing) is used by no container",
    "unused-template-claim": "a pod claim from a template is used by no container (and does not attach to the pod)",
    "missing-template": "the ResourceClaimTemplate a pod claim names is not among the checked objects",
    "claim-source": "a pod claim names both a ResourceClaim and a template, or neither (the pre-1.31 `source` shape)",
}
_TEMPLATE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: slice, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: mig.nvidia.com, allocationMode: ExactCount, count: 1}
"""
_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: team-a}
spec:
  containers:
  - name: main
    image: cuda
    resources:
      claims: [%s]
  resourceClaims:
  - {name: accelerator, resourceClaimTemplateName: slice}
"""
EXAMPLES = (
    Example(
        title="A container claim that names no pod claim, and a pod claim no container uses",
        manifests=f"{_TEMPLATE}---\n{_POD % '{name: gpu}'}",
        findings=(
            "Pod/trainer#/spec/containers/0/resources/claims/0/name",
            "Pod/trainer#/spec/resourceClaims/0",
        ),
    ),
    Example(
        title="A request the template does not have",
        manifests=f"{_TEMPLATE}---\n{_POD % '{name: accelerator, request: tpu}'}",
        findings=("Pod/trainer#/spec/containers/0/resources/claims/0/request",),
    ),
    Example(
        title="A template that is not among the checked objects (low: it may live elsewhere)",
        manifests=_POD % "{name: accelerator}",
        findings=("Pod/trainer#/spec/resourceClaims/0/resourceClaimTemplateName",),
    ),
    Example(
        title="A pod claim in the shape before Kubernetes 1.31 (`source`), which the API server refuses",
        manifests=_POD.replace("resourceClaimTemplateName: slice", "source: {resourceClaimTemplateName: slice}")
        % "{name: accelerator}",
        findings=("Pod/trainer#/spec/resourceClaims/0",),
    ),
    Example(
        title="Container, pod claim and template fit together",
        manifests=f"{_TEMPLATE}---\n{_POD % '{name: accelerator, request: gpu}'}",
    ),
)


def check(resource: Resource, context: Context) -> Iterator[Violation | Pending]:
    # Pods of several templates may share one claim list (an Argo workflow's): a finding
    # about a claim itself is made once.
    looked_up: set[Path] = set()
    for pod in resource.pods:
        yield from _wiring(resource, context, pod, looked_up)


def _wiring(
    resource: Resource, context: Context, pod: PodSpecView, looked_up: set[Path]
) -> Iterator[Violation | Pending]:
    declared = {text(claim.get("name")): (path, claim) for path, claim in pod.claims}
    used: set[str] = set()
    for container in pod.containers:
        for path, claim in container.claims():
            name = text(claim.get("name"))
            used.add(name)
            if name not in declared:
                # A pod that gets claims from elsewhere (a KServe runtime) may declare it there.
                if pod.complete:
                    yield Violation(
                        (*path, "name"),
                        f"container {container.name!r}{pod.where} uses claim {name!r}, which the pod does not declare",
                        facet="undeclared-claim",
                    )
                continue
            request = claim.get("request")
            if isinstance(request, str) and context.complete:
                pod_claim = declared[name][1]
                wanted = {
                    "resourceClaimTemplateName": pod_claim.get("resourceClaimTemplateName"),
                    "resourceClaimName": pod_claim.get("resourceClaimName"),
                }
                args = (context, resource.namespace, container.name, wanted, request)
                # Decided now when the target is already known: nothing to keep until the end.
                if _target(context, resource.namespace, pod_claim, settled=True) is None:
                    yield Pending((*path, "request"), _unknown_request, args, facet="unknown-request")
                elif (message := _unknown_request(*args)) is not None:
                    yield Violation((*path, "request"), message, cross_object=True, facet="unknown-request")
    for name, (path, claim) in declared.items():
        if (problem := _source_problem(claim)) is not None:
            yield Violation(path, f"pod claim {name!r} {problem}", facet="claim-source")
            continue
        if name not in used and pod.complete:
            yield from _unused(context, resource.namespace, path, claim, label=f"pod claim {name!r}", where=pod.where)
        template_name = claim.get("resourceClaimTemplateName")
        if context.complete and isinstance(template_name, str) and path not in looked_up:
            looked_up.add(path)
            if context.settled_template(resource.namespace, template_name) is not None:
                continue  # already among the checked objects: no finding, nothing to keep
            yield Pending(
                (*path, "resourceClaimTemplateName"),
                _missing_template,
                (context, resource.namespace, template_name),
                severity=Severity.LOW,
                facet="missing-template",
            )


def _source_problem(claim: Mapping[str, Any]) -> str | None:
    """Why the API server refuses a pod claim for what it names, or None.  kubernetes/api
    @ 10b39a39bcee995dfe7cd5e8e7b922be5e46f1e2, core/v1/types.go `PodResourceClaim`: "Exactly
    one of ResourceClaimName and ResourceClaimTemplateName must be set"; its `Source` is
    "tombstoned since Kubernetes 1.31"."""
    names = [field for field in ("resourceClaimName", "resourceClaimTemplateName") if claim.get(field) is not None]
    if len(names) == 2:
        return "names both a ResourceClaim and a ResourceClaimTemplate; the API server refuses it"
    if names:
        return None
    if "source" in claim:
        return (
            "uses `source`, which Kubernetes 1.31 replaced with `resourceClaimName` or `resourceClaimTemplateName` "
            "beside `name`; the API server refuses it, and the claim it names is not judged"
        )
    return "names neither a ResourceClaim nor a ResourceClaimTemplate; the API server refuses it"


def _unused(
    context: Context, namespace: str, path: Path, claim: Mapping[str, Any], *, label: str, where: str
) -> Iterator[Violation | Pending]:
    """A pod claim no container names: a finding unless its claim or template asks only for
    devices that attach to the pod (DRANET's NICs), which no container names."""
    template = claim.get("resourceClaimTemplateName")
    # A claim from a template may be one that attaches to the pod (a NIC): the policy cannot
    # read the template, so that check is the webhook's.
    facet = "unused-template-claim" if isinstance(template, str) else "unused-claim"
    if isinstance(template, str):
        label = f"{label} (template {template!r})"
    message = f"{label} is used by no container{where}"
    target = _target(context, namespace, claim, settled=True)
    if target is not None and not any(decided_by_input(name, context.config) for name in target.classes):
        if not context.pod_level(target):  # decided now: nothing to keep until the end
            yield Violation(path, message, facet=facet)
    elif isinstance(template, str) or isinstance(claim.get("resourceClaimName"), str):
        wanted = {"resourceClaimTemplateName": template, "resourceClaimName": claim.get("resourceClaimName")}
        yield Pending(path, _unless_pod_level, (context, namespace, wanted, message), facet=facet)
    else:
        yield Violation(path, message, facet=facet)


def _unless_pod_level(context: Context, namespace: str, pod_claim: Mapping[str, Any], message: str) -> Resolved | None:
    target = _target(context, namespace, pod_claim, settled=False)
    if target is not None and context.pod_level(target):
        return None
    # The pod alone gives the finding (a claim or template not among the objects counts as
    # one a container must name); the other objects can only clear it.
    return Resolved(message, cross_object=False)


def _target(context: Context, namespace: str, pod_claim: Mapping[str, Any], *, settled: bool) -> ClaimFacts | None:
    """The template or claim a pod claim names (`settled`: only if no later object can change it)."""
    template_name = pod_claim.get("resourceClaimTemplateName")
    claim_name = pod_claim.get("resourceClaimName")
    if isinstance(template_name, str):
        return (context.settled_template if settled else context.find_template)(namespace, template_name)
    if isinstance(claim_name, str):
        return (context.settled_claim if settled else context.find_claim)(namespace, claim_name)
    return None


def _missing_template(context: Context, namespace: str, template_name: str) -> str | None:
    if context.find_template(namespace, template_name) is not None:
        return None
    return f"ResourceClaimTemplate {template_name!r} is not among the checked objects"


def _unknown_request(
    context: Context, namespace: str, container: str, wanted: Mapping[str, Any], request: str
) -> str | None:
    """A function and its arguments, not a closure: a pending finding crosses processes
    (`dra_guard.distribute`), and only what pickles by name can."""
    target = _target(context, namespace, wanted, settled=False)
    if target is None or request in target.request_names:
        return None
    owner = f"{target.kind} {target.name!r}"
    return f"container {container!r} asks for request {request!r}, which {owner} does not have"


# --- admission ---------------------------------------------------------------------------


def _admission(target: AdmissionTarget) -> Admission:
    """The one part of this rule that one object shows and the API server lets through: a
    pod claim that no container uses, unless it names a template.  A container claim naming
    no pod claim is refused by the API server's own pod validation; whether a template
    exists, has the request a container names, or asks only for NICs that attach to the pod
    (which no container names), needs the namespace's templates: the webhook reads them."""
    used = "has(c.resources) && has(c.resources.claims) ? c.resources.claims.map(x, x.name) : []"
    return Admission(
        kinds=POD_KINDS,
        variables=(
            ("pod", pod_spec()),
            ("used", f"({containers()}).map(c, {used})"),
            (
                "unused",
                "has(variables.pod.resourceClaims) ? variables.pod.resourceClaims.filter(p, "
                "!has(p.resourceClaimTemplateName) && !variables.used.exists(names, p.name in names))"
                ".map(p, p.name) : []",
            ),
        ),
        validations=(
            Validation(
                expression="size(variables.unused) == 0",
                message="a pod claim is used by no container: it holds a device for nothing",
                message_expression="'pod claim ' + variables.unused[0] + ' is used by no container: it holds a "
                "device for nothing'",
            ),
        ),
        covers=frozenset({"unused-claim"}),
    )


ADMISSION = _admission
