"""DRA003: ExactCount requests on objects that do not declare exclusivity."""

from __future__ import annotations

from collections.abc import Iterator

from dra_guard.catalog import ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION
from dra_guard.context import Context, Resource, Violation
from dra_guard.findings import Severity
from dra_guard.manifest import ALL, CLAIM_KINDS, EXACT_COUNT, annotations_of
from dra_guard.rulekit import Example

ID = "DRA003"
NAME = "exclusivity-undeclared"
SEVERITY = Severity.HIGH
SUMMARY = f'Claims with ExactCount requests must declare {ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION}: "false".'
RATIONALE = (
    "The standard requires allowMultipleAllocations to be false for multi-tenant workloads, but no claim "
    "request has such a field in any resource.k8s.io version (it exists only on ResourceSlice devices, and "
    "the API server rejects it in a request). Exclusivity is therefore declared with this annotation, which "
    "admission and node agents can enforce, and kept by structure (one claim per pod from a template)."
)
REMEDIATION = f'Add the annotation {ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION}: "false" to the claim or template.'
#: The kinds this rule looks at (the engine runs it on nothing else).
KINDS = frozenset(CLAIM_KINDS)
CROSS_OBJECT = False
WAIVABLE = True
OPTIONS = ()
_TEMPLATE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: slice
  namespace: team-a
  annotations: {%s}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: mig.nvidia.com, allocationMode: ExactCount, count: 1}
"""
EXAMPLES = (
    Example(
        title="An exclusive request that does not say so",
        manifests=_TEMPLATE % "",
        findings=("ResourceClaimTemplate/slice#/metadata",),
    ),
    Example(
        title="The annotation says the device may be shared",
        manifests=_TEMPLATE % f'{ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION}: "true"',
        findings=("ResourceClaimTemplate/slice#/metadata/annotations/dra-guard.io~1allow-multiple-allocations",),
    ),
    Example(
        title="Exclusivity declared",
        manifests=_TEMPLATE % f'{ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION}: "false"',
    ),
)


def check(resource: Resource, context: Context) -> Iterator[Violation]:
    # As stored: an absent or null mode is ExactCount.  A mode the API server refuses
    # counts too, so a misspelt mode cannot switch the rule off.
    exact = [request for request in context.accelerator_requests(resource) if request.allocation_mode != ALL]
    if not exact:
        return
    value = annotations_of(resource.obj).get(ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION)
    if value == "false":
        return
    first = exact[0]
    label = f"{'ExactCount request' if first.allocation_mode == EXACT_COUNT else 'request'} {first.qualified_name!r}"
    if value is None:
        yield Violation(("metadata",), f"{label} but no {ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION} annotation")
    else:
        yield Violation(
            ("metadata", "annotations", ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION),
            f'{ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION} is {value!r}; exclusive claims must say "false"',
        )
