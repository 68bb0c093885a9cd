"""DRA006: admin access to devices outside admin namespaces."""

from __future__ import annotations

from collections.abc import Iterator

from dra_guard.context import Context, Resource, Violation
from dra_guard.findings import Severity
from dra_guard.manifest import CLAIM_KINDS

ID = "DRA006"
NAME = "admin-access"
SEVERITY = Severity.CRITICAL
SUMMARY = "adminAccess: true is allowed only in namespaces configured as admin namespaces."
RATIONALE = (
    "A request with adminAccess gets access to devices that are already allocated to other claims, "
    "including other tenants' slices and their memory. It is meant for monitoring and maintenance agents "
    "in a few trusted namespaces."
)
REMEDIATION = (
    "Remove adminAccess, or move the object to a namespace listed under admin-namespaces in the "
    'dra-guard configuration (and labelled resource.kubernetes.io/admin-access: "true").'
)
#: The kinds this rule looks at (the engine runs it on nothing else).
KINDS = CLAIM_KINDS


def check(resource: Resource, context: Context) -> Iterator[Violation]:
    namespace = resource.namespace
    if namespace in context.config.admin_namespaces:
        return
    for request in resource.requests:
        if request.body.get("adminAccess") is True:
            where = f"namespace {namespace!r}" if namespace else "an object without a namespace"
            yield Violation(
                (*request.path, "adminAccess"),
                f"request {request.qualified_name!r} asks for adminAccess in {where}, which is not an admin namespace",
            )
