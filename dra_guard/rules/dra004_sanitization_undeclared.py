"""DRA004: accelerator claims that do not declare memory sanitization."""

from __future__ import annotations

from collections.abc import Iterator

from dra_guard.catalog import IGNORE_ANNOTATION_PREFIX, SANITIZATION_ANNOTATION, SANITIZATION_POLICIES
from dra_guard.celkit import (
    Admission,
    AdmissionTarget,
    Validation,
    annotation,
    annotation_value,
    has_accelerator_request,
    string_list,
)
from dra_guard.context import Context, Resource, Violation
from dra_guard.findings import Severity
from dra_guard.manifest import CLAIM_KINDS, annotations_of
from dra_guard.rulekit import Example

ID = "DRA004"
NAME = "sanitization-undeclared"
SEVERITY = Severity.CRITICAL
SUMMARY = (
    f"Accelerator claims and templates must declare {SANITIZATION_ANNOTATION}: "
    "WipeOnDeallocate or ZeroFillMemoryOnRelease."
)
RATIONALE = (
    "Device memory outlives the pod: weights and KV-cache of one tenant can be read by the next unless it "
    "is wiped. The API has no field for it, and none of the drivers dra-guard has read (NVIDIA's, Intel's) "
    "wipes a device when its claim is deallocated, so the policy is a declared, tamper-evident contract "
    "(covered by the isolation tag) for the driver or a node agent to honour. Kubernetes' own hook for a "
    "device awaiting its wipe is a device taint (DeviceTaintRule, KEP-5055): a claim that tolerates every "
    "taint can still be given it (DRA015)."
)
REMEDIATION = f"Add {SANITIZATION_ANNOTATION}: WipeOnDeallocate (or ZeroFillMemoryOnRelease) and re-tag the object."
#: The kinds this rule looks at (the engine runs it on nothing else).
KINDS = frozenset(CLAIM_KINDS)
CROSS_OBJECT = False
#: A device that is not wiped leaks one tenant's memory to the next; no annotation excuses that.
WAIVABLE = False
OPTIONS = ()
_CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: slice
  namespace: team-a
  annotations: {%s}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: mig.nvidia.com, allocationMode: ExactCount, count: 1}
"""
EXAMPLES = (
    Example(
        title="An accelerator claim with no sanitization policy",
        manifests=_CLAIM % "",
        findings=("ResourceClaim/slice#/metadata",),
    ),
    Example(
        title="It cannot be waived: the ignore annotation is reported, not obeyed",
        manifests=_CLAIM % f'{IGNORE_ANNOTATION_PREFIX}{ID}: "the driver wipes anyway"',
        findings=("ResourceClaim/slice#/metadata",),
    ),
    Example(
        title="An unknown policy name",
        manifests=_CLAIM % f"{SANITIZATION_ANNOTATION}: Wipe",
        findings=("ResourceClaim/slice#/metadata/annotations/dra-guard.io~1sanitization",),
    ),
    Example(
        title="Wiped when the claim is deallocated",
        manifests=_CLAIM % f"{SANITIZATION_ANNOTATION}: WipeOnDeallocate",
    ),
)


def check(resource: Resource, context: Context) -> Iterator[Violation]:
    if not context.accelerator_requests(resource):
        return
    value = annotations_of(resource.obj).get(SANITIZATION_ANNOTATION)
    if value in SANITIZATION_POLICIES:
        return
    allowed = " or ".join(SANITIZATION_POLICIES)
    if value is None:
        yield Violation(("metadata",), f"accelerator {resource.kind} declares no {SANITIZATION_ANNOTATION} ({allowed})")
    else:
        # Rests on the value, and on the device classes that make this an accelerator claim.
        yield Violation(
            ("metadata", "annotations", SANITIZATION_ANNOTATION),
            f"{SANITIZATION_ANNOTATION} is {value!r}; it must be {allowed}",
            evidence=tuple((*request.path, "deviceClassName") for request in context.accelerator_requests(resource)),
        )


def _admission(target: AdmissionTarget) -> Admission:
    declared = (
        f"{annotation(SANITIZATION_ANNOTATION)} && {annotation_value(SANITIZATION_ANNOTATION)} in "
        + string_list(SANITIZATION_POLICIES)
    )
    return Admission(
        kinds=tuple(sorted(CLAIM_KINDS)),
        condition=has_accelerator_request(target.config),
        validations=(
            Validation(
                expression=declared,
                message=f"accelerator claim declares no valid {SANITIZATION_ANNOTATION} "
                f"({' or '.join(SANITIZATION_POLICIES)})",
            ),
        ),
    )


ADMISSION = _admission
