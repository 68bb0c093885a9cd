"""DRA006: admin access to devices outside admin namespaces."""

from __future__ import annotations

from collections.abc import Iterator

from dra_guard.contract.findings import Severity
from dra_guard.model.manifest import CLAIM_KINDS
from dra_guard.ruleapi.admission_form import (
    REQUESTS,
    Admission,
    AdmissionTarget,
    Validation,
    bodies,
    string,
    string_list,
)
from dra_guard.ruleapi.context import Context, Resource, Violation
from dra_guard.ruleapi.declarations import Example
from dra_guard.ruleapi.options import STRING_SET, Option

ID = "DRA006"
NAME = "admin-access"
SEVERITY = Severity.CRITICAL
SUMMARY = "adminAccess: true is allowed only in namespaces configured as admin namespaces."
RATIONALE = (
    "A request with adminAccess ignores every ordinary claim on a device, as to access modes and "
    "allocations (resource.k8s.io v1 types.go), so it reaches devices already allocated to other claims, "
    "other tenants' slices and their memory included. It is meant for monitoring and maintenance agents in "
    "a few trusted namespaces. The API server itself allows it only in namespaces that carry the admin-access "
    "label (KEP-5018, GA in 1.36); this rule checks, before apply, the namespaces you list under "
    "admin-namespaces, which a Namespace object's labels do not change. Such a request is judged by this rule "
    "alone: it allocates nothing to its pods that another tenant could have held before, so pinning, "
    "exclusivity, sanitization, tags and the scrubber are not asked of it (the scrubber would take the free "
    "memory of devices other tenants are using); a request beside it without adminAccess is judged as ever."
)
REMEDIATION = (
    "Remove adminAccess, or move the object to a namespace listed under admin-namespaces in the "
    'dra-guard configuration, labelled as the API server requires: resource.kubernetes.io/admin-access: "true" '
    "from Kubernetes 1.34, resource.k8s.io/admin-access in 1.33."
)
#: The kinds this rule looks at (the engine runs it on nothing else).
KINDS = frozenset(CLAIM_KINDS)
CROSS_OBJECT = False
#: Admin access reads other tenants' devices; only configuration may allow it, not an annotation.
WAIVABLE = False
ADMIN_NAMESPACES = Option(
    key="admin-namespaces",
    type=STRING_SET,
    default=frozenset(),
    doc="Namespaces where requests may use adminAccess (monitoring and maintenance agents).",
)
OPTIONS = (ADMIN_NAMESPACES,)
_CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: monitor, namespace: %s}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.nvidia.com, allocationMode: All, adminAccess: true}
"""
EXAMPLES = (
    Example(
        title="adminAccess in a tenant's namespace",
        manifests=_CLAIM % "team-a",
        findings=("ResourceClaim/monitor#/spec/devices/requests/0/exactly/adminAccess",),
    ),
    Example(
        title="adminAccess in a namespace listed under admin-namespaces",
        manifests=_CLAIM % "gpu-ops",
        config={"admin-namespaces": ["gpu-ops"]},
    ),
)


def check(resource: Resource, context: Context) -> Iterator[Violation]:
    namespace = resource.namespace
    if namespace in context.config.get(ADMIN_NAMESPACES):
        return
    for request in resource.requests:
        if request.body.get("adminAccess") is True:
            where = f"namespace {namespace!r}" if namespace else "an object without a namespace"
            release = context.config.kubernetes_release
            label = f'{release.admin_access_label}: "true"'
            yield Violation(
                (*request.path, "adminAccess"),
                f"request {request.qualified_name!r} asks for adminAccess in {where}, which is not an admin namespace "
                f"(on Kubernetes {release.version} the namespace also needs the label {label})",
                evidence=(("metadata", "namespace"),),
            )


# --- admission ---------------------------------------------------------------------------


def _admission(target: AdmissionTarget) -> Admission:
    """adminAccess outside the admin namespaces: those of the configuration, and (with
    `--admin-namespace-label`) namespaces whose Namespace object carries that label, read from
    `namespaceObject`, which the API server gives every namespaced object's review."""
    release = target.config.kubernetes_release
    admin: list[str] = []
    configured = target.config.get(ADMIN_NAMESPACES)
    if configured:
        admin.append(f"(has(object.metadata.namespace) && object.metadata.namespace in {string_list(configured)})")
    if target.admin_namespace_label is not None:
        key, value = (string(part) for part in target.admin_namespace_label)
        labels = "namespaceObject.metadata.labels"
        admin.append(
            f"(has(namespaceObject.metadata) && has({labels}) && {key} in {labels} && {labels}[{key}] == {value})"
        )
    admitted = " || ".join(admin) or "false"
    asks = "has(b.adminAccess) && b.adminAccess == true"
    label = f'{release.admin_access_label}: "true"'
    consequence = (
        ", which is not an admin namespace (on Kubernetes "
        f"{release.version} the namespace also needs the label {label})"
    )
    return Admission(
        kinds=tuple(sorted(CLAIM_KINDS)),
        variables=(
            ("requests", REQUESTS),
            ("adminRequests", f"variables.requests.filter(r, {bodies('r')}.exists(b, {asks})).map(r, r.name)"),
        ),
        validations=(
            Validation(
                expression=f"size(variables.adminRequests) == 0 || {admitted}",
                message="a request asks for adminAccess outside the admin namespaces",
                message_expression="'request ' + variables.adminRequests[0] + ' asks for adminAccess in namespace ' "
                "+ (has(object.metadata.namespace) ? object.metadata.namespace : '') + " + string(consequence),
            ),
        ),
    )


ADMISSION = _admission
