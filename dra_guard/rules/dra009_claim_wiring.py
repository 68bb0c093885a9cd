"""DRA009: pod claims, container claims and templates that do not fit together."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from dra_guard.context import Context, Resource, Violation
from dra_guard.findings import Severity
from dra_guard.manifest import POD_SPEC_PATHS, Path, containers, pod_claims, request_names, text
from dra_guard.rulekit import Example

ID = "DRA009"
NAME = "claim-wiring"
SEVERITY = Severity.MEDIUM
SUMMARY = "Container claims, pod claims and claim templates must refer to each other correctly."
RATIONALE = (
    "A container claim that names no pod claim is rejected by the API server; a pod claim that no "
    "container uses allocates (and holds) a device for nothing; a `request` that names no request of the "
    "template exposes nothing. A template that is not among the checked objects may simply live "
    "elsewhere, so that case is reported at low severity."
)
REMEDIATION = (
    "Make every container's resources.claims[].name match a spec.resourceClaims[].name, use every pod claim, "
    "and check template and request names."
)
#: The kinds this rule looks at (the engine runs it on nothing else).
KINDS = frozenset(POD_SPEC_PATHS)
# Reads the indexes of the whole input set, so it runs after every object is in.
CROSS_OBJECT = True
WAIVABLE = True
OPTIONS = ()
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
        title="Container, pod claim and template fit together",
        manifests=f"{_TEMPLATE}---\n{_POD % '{name: accelerator, request: gpu}'}",
    ),
)


def check(resource: Resource, context: Context) -> Iterator[Violation]:
    pod = resource.pod
    if pod is None:
        return
    declared = {text(claim.get("name")): (path, claim) for path, claim in pod_claims(pod)}
    used: set[str] = set()
    for container in containers(pod):
        for path, claim in container.claims():
            name = text(claim.get("name"))
            used.add(name)
            if name not in declared:
                yield Violation(
                    (*path, "name"), f"container {container.name!r} uses claim {name!r}, which the pod does not declare"
                )
                continue
            request = claim.get("request")
            if isinstance(request, str) and context.complete:
                yield from _check_request(
                    resource=resource,
                    context=context,
                    container=container.name,
                    pod_claim=declared[name][1],
                    request=request,
                    path=path,
                )
    for name, (path, claim) in declared.items():
        if name not in used:
            yield Violation(path, f"pod claim {name!r} is used by no container")
        template_name = claim.get("resourceClaimTemplateName")
        if (
            context.complete
            and isinstance(template_name, str)
            and context.find_template(resource.namespace, template_name) is None
        ):
            yield Violation(
                (*path, "resourceClaimTemplateName"),
                f"ResourceClaimTemplate {template_name!r} is not among the checked objects",
                severity=Severity.LOW,
                cross_object=True,
            )


def _check_request(
    *,
    resource: Resource,
    context: Context,
    container: str,
    pod_claim: Mapping[str, Any],
    request: str,
    path: Path,
) -> Iterator[Violation]:
    template_name = pod_claim.get("resourceClaimTemplateName")
    claim_name = pod_claim.get("resourceClaimName")
    target = None
    if isinstance(template_name, str):
        target = context.find_template(resource.namespace, template_name)
    elif isinstance(claim_name, str):
        target = context.find_claim(resource.namespace, claim_name)
    if target is not None and request not in request_names(target.obj):
        yield Violation(
            (*path, "request"),
            f"container {container!r} asks for request {request!r}, which {target.kind} {target.name!r} does not have",
            cross_object=True,
        )
