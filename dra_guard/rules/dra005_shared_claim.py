"""DRA005: one claim shared by several pods."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from dra_guard.contract.catalog import POD_GROUP_KINDS
from dra_guard.contract.findings import Severity
from dra_guard.model.manifest import Path, mapping, text
from dra_guard.model.pod_groups import SCHEDULING_API, group_claims
from dra_guard.model.pod_templates import PodSpecView
from dra_guard.ruleapi.admission_form import CONTROLLER_KINDS, Admission, AdmissionTarget, Validation, pod_spec
from dra_guard.ruleapi.context import Context, Pending, Resolved, Resource, Violation
from dra_guard.ruleapi.declarations import Example
from dra_guard.ruleapi.device_classes import decided_by_input

ID = "DRA005"
NAME = "shared-claim"
SEVERITY = Severity.HIGH
SUMMARY = "Each pod must get its own claim from a template; a claim shared between pods shares the device."
RATIONALE = (
    "A ResourceClaim named by resourceClaimName is one allocation: every pod that names it runs on the same "
    "devices, so tenants (or replicas) see each other's memory. In a controller's pod template it is shared "
    "by every replica, and in a Pod written with generateName and no name by every pod each `kubectl create` "
    "of it makes; a PodGroup's claims are reserved for the whole group, and so are a Workload's pod group "
    "templates' (nested in composite templates too) and a Job's or CronJob's spec.scheduling.resourceClaims "
    "(WorkloadWithJob, alpha 1.37), which become its PodGroup's; with "
    "DRAWorkloadResourceClaims (alpha 1.36) a pod claim from a template resolves to the group's one claim when "
    "the pod's PodGroup (schedulingGroup.podGroupName) declares a claim with the same name and template (core/v1 "
    "PodResourceClaim): such template claims are reported as shared too, where the PodGroup is among the "
    "objects. A claim the control plane made for one pod (from its template, or for its extended resources) has "
    "that Pod as its controller owner and is that pod's: another pod naming it by resourceClaimName shares it. "
    "Claims and templates that ask for no accelerator (non-accelerator-classes) may be shared. Pod "
    "templates are found in built-in workloads, in JobSet, LeaderWorkerSet, the Kubeflow jobs and training "
    "runtimes, Ray, Argo Workflows and KServe, and in any other kind with a pod-spec-shaped mapping. Pods are "
    "compared across namespaces as they would land: a pod without a namespace goes to the namespace the "
    "input is applied to, which may be any other pod's."
)
REMEDIATION = "Use resourceClaimTemplateName so that Kubernetes creates one claim per pod."
#: Every kind: workload CRDs, and kinds nobody told us about, have pod templates too.
KINDS = None
# Whether another pod names the same claim depends on the whole input set.
CROSS_OBJECT = True
WAIVABLE = True
OPTIONS = ()
FACETS = {
    "template-claim": "a controller's pod template names a ResourceClaim that every pod it creates would share",
    "generated-pod-claim": "a Pod with generateName names a ResourceClaim that every create of it shares",
    "pods-share-claim": "pods of the input name the same ResourceClaim, or a Pod names one made for another pod",
    "group-claim": "a PodGroup's claim (a Workload's, a Job's scheduling claim) is shared by every pod of the group",
    "group-template": "a pod's template claim resolves to the one claim its PodGroup makes",
}
_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: team-a}
spec:
  containers:
  - name: main
    image: cuda
    resources:
      claims: [{name: gpu}]
  resourceClaims:
  - {name: gpu, resourceClaimName: shared-slice}
"""
EXAMPLES = (
    Example(
        title="A Deployment's pod template names one claim: every replica shares the device",
        manifests="""\
apiVersion: apps/v1
kind: Deployment
metadata: {name: inference, namespace: team-a}
spec:
  replicas: 3
  selector: {matchLabels: {app: inference}}
  template:
    metadata: {labels: {app: inference}}
    spec:
      containers:
      - name: main
        image: server
        resources:
          claims: [{name: gpu}]
      resourceClaims:
      - {name: gpu, resourceClaimName: shared-slice}
""",
        findings=("Deployment/inference#/spec/template/spec/resourceClaims/0/resourceClaimName",),
    ),
    Example(
        title="A gang-scheduled Job shares its scheduling claim among all its pods (WorkloadWithJob, 1.37)",
        manifests="""\
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: team-a}
spec:
  parallelism: 4
  scheduling:
    schedulingPolicy: {gang: {minCount: 4}}
    resourceClaims:
    - {name: gpu, resourceClaimTemplateName: slice}
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: trainer
        resources:
          claims: [{name: gpu}]
      resourceClaims:
      - {name: gpu, resourceClaimTemplateName: slice}
""",
        findings=("Job/train#/spec/scheduling/resourceClaims/0",),
    ),
    Example(
        title="Two pods name the same ResourceClaim",
        manifests=f"{_POD % 'first'}---\n{_POD % 'second'}",
        findings=(
            "Pod/first#/spec/resourceClaims/0/resourceClaimName",
            "Pod/second#/spec/resourceClaims/0/resourceClaimName",
        ),
    ),
    Example(
        title="One pod, one claim of its own",
        manifests=_POD % "only",
    ),
    Example(
        title="Each replica gets its own claim from a template",
        manifests="""\
apiVersion: apps/v1
kind: Deployment
metadata: {name: inference, namespace: team-a}
spec:
  replicas: 3
  selector: {matchLabels: {app: inference}}
  template:
    metadata: {labels: {app: inference}}
    spec:
      containers:
      - name: main
        image: server
        resources:
          claims: [{name: gpu}]
      resourceClaims:
      - {name: gpu, resourceClaimTemplateName: slice}
""",
    ),
)


#: How the API server names an object from its generateName (k8s.io/apiserver
#: pkg/storage/names/generate.go SimpleNameGenerator: at most 58 characters of it, then 5
#: random ones), before validating admission runs (generic/registry/store.go `create`).
GENERATED_PREFIX_LENGTH = 58
GENERATED_SUFFIX_LENGTH = 5


def made_many_times(obj: Mapping[str, Any]) -> str | None:
    """The object's generateName when it has no name of its own: each create makes a new
    object.  At validating admission the API server has already filled `name` from it, so a
    name that is what it generates (the prefix and five more characters) counts as none."""
    meta = mapping(obj.get("metadata"))
    generate_name, name = text(meta.get("generateName")), text(meta.get("name"))
    if not generate_name:
        return None
    if not name:
        return generate_name
    prefix = generate_name[:GENERATED_PREFIX_LENGTH]
    generated = len(name) == len(prefix) + GENERATED_SUFFIX_LENGTH and name.startswith(prefix)
    if len(generate_name) > GENERATED_PREFIX_LENGTH:  # CEL has no substring: the length alone
        generated = len(name) == GENERATED_PREFIX_LENGTH + GENERATED_SUFFIX_LENGTH
    return generate_name if generated else None


def check(resource: Resource, context: Context) -> Iterator[Violation | Pending]:
    for path, claim in group_claims(resource.kind, resource.obj):
        group = "the group" if resource.kind in POD_GROUP_KINDS else f"the {resource.kind}'s pod group"
        message = f"{resource.kind} claim {text(claim.get('name'))!r} is shared by every pod of {group}"
        args = (context, resource.namespace, text(claim.get("resourceClaimName")), message)
        template = text(claim.get("resourceClaimTemplateName"))
        yield Pending(path, _group_claim, (*args, template), facet="group-claim")
    if resource.kind in POD_GROUP_KINDS and text(resource.obj.get("apiVersion")).startswith(SCHEDULING_API):
        return
    # Several pod specs may share one claim list (an Argo workflow's): report it once.
    reported: set[Path] = set()
    for pod in resource.pods:
        for path, claim in pod.claims:
            claim_name = claim.get("resourceClaimName")
            if not isinstance(claim_name, str) or path in reported:
                continue
            reported.add(path)
            namespace = resource.namespace
            generate_name = made_many_times(resource.obj) if resource.kind == "Pod" else None
            if pod.is_template or generate_name is not None:
                if generate_name is not None:
                    facet = "generated-pod-claim"
                    message = (
                        f"this Pod has generateName {generate_name!r} and no name of its own: every `kubectl create` "
                        f"of it makes another pod naming ResourceClaim {claim_name!r}, and they all share it"
                    )
                else:
                    facet = "template-claim"
                    message = (
                        f"the pod template of this {resource.kind} names ResourceClaim {claim_name!r}, "
                        "which every pod it creates would share"
                    )
                known = context.settled_claim(namespace, claim_name)
                if known is None or any(decided_by_input(name, context.config) for name in known.classes):
                    # The claim may come further on, and ask for no accelerator; or a DeviceClass
                    # further on may show that its class is a NIC's.
                    args = (context, namespace, claim_name, message)
                    yield Pending((*path, "resourceClaimName"), _unless_no_accelerator, args, facet=facet)
                elif not context.no_accelerator(known):
                    yield Violation((*path, "resourceClaimName"), message, facet=facet)
                continue
            # A function and its arguments, not a closure: one is kept per pod until the end.
            shared = (context, claim_name, namespace, resource.serial, resource.name)
            yield Pending((*path, "resourceClaimName"), _shared_with, shared, facet="pods-share-claim")
        yield from _group_shared_templates(resource, context, pod, reported)


def _group_shared_templates(
    resource: Resource, context: Context, pod: PodSpecView, reported: set[Path]
) -> Iterator[Pending]:
    """Template claims that resolve to the one claim of the pod's PodGroup (KEP-5729)."""
    group = text(mapping(pod.spec.get("schedulingGroup")).get("podGroupName"))
    if not group:
        return
    for path, claim in pod.claims:
        template = claim.get("resourceClaimTemplateName")
        if not isinstance(template, str) or not template or (*path, "resourceClaimTemplateName") in reported:
            continue
        reported.add((*path, "resourceClaimTemplateName"))
        facts = (text(claim.get("name")), text(claim.get("resourceClaimName")), template)
        args = (context, resource.namespace, group, facts)
        yield Pending((*path, "resourceClaimTemplateName"), _shared_by_group, args, facet="group-template")


def _shared_by_group(context: Context, namespace: str, group: str, facts: tuple[str, str, str]) -> str | None:
    name, claim_name, template = facts
    claim = {"name": name, "resourceClaimName": claim_name, "resourceClaimTemplateName": template}
    if not context.pod_group_shares(namespace, group, claim) or _template_no_accelerator(context, namespace, template):
        return None
    return (
        f"pod claim {name!r} resolves to the one claim PodGroup {group!r} makes from template {template!r} "
        "(the group declares the same claim): every pod of the group shares it"
    )


def _group_claim(context: Context, namespace: str, claim_name: str, message: str, template: str) -> Resolved | None:
    if (claim_name and _claims_no_accelerator(context, namespace, claim_name)) or (
        template and _template_no_accelerator(context, namespace, template)
    ):
        return None
    # The group object alone gives the finding; a claim or template among the objects can only clear it.
    return Resolved(message, cross_object=False)


def _template_no_accelerator(context: Context, namespace: str, name: str) -> bool:
    template = context.find_template(namespace, name)
    return template is not None and context.no_accelerator(template)


def _shared_with(context: Context, claim_name: str, namespace: str, serial: int, pod_name: str) -> str | None:
    others = context.other_claim_users(claim_name, namespace, serial)
    claim = context.find_claim(namespace, claim_name)
    # A claim the control plane made for another pod (from that pod's template, or for its
    # extended resources) is that pod's: naming it shares its devices with it, though no
    # other pod of the input names it (`controlling_pod`).
    owner = claim.owner_pod if claim is not None and claim.owner_pod != pod_name else ""
    if not (others or owner) or _claims_no_accelerator(context, namespace, claim_name):
        return None
    users = [f"Pod/{user.name}" for user in others]
    if owner:
        users.append(f"Pod/{owner} (the pod it was made for: its controller owner reference)")
    return f"ResourceClaim {claim_name!r} is also used by {', '.join(sorted(users))}"


def _unless_no_accelerator(context: Context, namespace: str, claim_name: str, message: str) -> Resolved | None:
    if _claims_no_accelerator(context, namespace, claim_name):
        return None
    # The pod template alone gives the finding (fail closed: a claim not in the input counts
    # as an accelerator claim); the claim, wherever it comes in the input, can only clear it.
    # So it is the object's own finding, whichever order the objects come in.
    return Resolved(message, cross_object=False)


def _claims_no_accelerator(context: Context, namespace: str, name: str) -> bool:
    """The claim is in the input and asks only for non-accelerator devices (a NIC, a CPU
    profile, an IMEX channel): sharing it is none of this rule's business.  A claim that is
    not in the input counts as an accelerator claim (fail closed)."""
    claim = context.find_claim(namespace, name)
    return claim is not None and context.no_accelerator(claim)


# --- admission ---------------------------------------------------------------------------


def _admission(target: AdmissionTarget) -> Admission:
    """A controller's (or PodTemplate's) pod template naming a ResourceClaim: every pod it
    makes would share it; so would every pod made from a Pod with generateName (at
    validating admission its name is already the generated one: `made_many_times`).
    Decided without the claim: at admission the claim cannot be read,
    so one that asks only for a NIC counts as an accelerator claim (fail closed), as in a
    check of the workload alone.  Pods that share a claim are cross-object (the webhook's);
    PodGroup and Workload (scheduling.k8s.io) are alpha APIs no cluster serves by default,
    so their claims are left to the webhook too."""
    named = "has(c.resourceClaimName)"
    generate_name, name = "object.metadata.generateName", "object.metadata.name"
    prefix, suffix = GENERATED_PREFIX_LENGTH, GENERATED_SUFFIX_LENGTH
    generated = (
        f"!has({name}) || {name} == '' || (size({generate_name}) > {prefix} ? size({name}) == {prefix + suffix} : "
        f"(size({name}) == size({generate_name}) + {suffix} && {name}.startsWith({generate_name})))"
    )
    many = f"object.kind != 'Pod' || (has({generate_name}) && {generate_name} != '' && ({generated}))"
    return Admission(
        kinds=(*CONTROLLER_KINDS, "Pod"),
        variables=(
            ("pod", pod_spec((*CONTROLLER_KINDS, "Pod"))),
            (
                "shared",
                f"({many}) && has(variables.pod.resourceClaims) ? variables.pod.resourceClaims.filter(c, {named}) : []",
            ),
        ),
        validations=(
            Validation(
                expression="size(variables.shared) == 0",
                message="the pod template (or a Pod with generateName) names a ResourceClaim (resourceClaimName), "
                "which every pod it creates would share; use resourceClaimTemplateName",
                message_expression="object.kind == 'Pod' ? 'this Pod has generateName ' + "
                "object.metadata.generateName + ': every create of it makes another pod naming ResourceClaim ' + "
                "variables.shared[0].resourceClaimName + ', and they all share it; use resourceClaimTemplateName' : "
                "'the pod template of this ' + object.kind + ' names ResourceClaim ' + "
                "variables.shared[0].resourceClaimName + ', which every pod it creates would share; use "
                "resourceClaimTemplateName'",
            ),
        ),
        covers=frozenset({"template-claim", "generated-pod-claim"}),
    )


ADMISSION = _admission
