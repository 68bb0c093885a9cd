"""DRA004: accelerator claims that do not declare memory sanitization."""

from __future__ import annotations

from collections.abc import Iterator

from dra_guard.contract.catalog import IGNORE_ANNOTATION_PREFIX, SANITIZATION_ANNOTATION, SANITIZATION_POLICIES
from dra_guard.contract.findings import Severity
from dra_guard.model.manifest import CLAIM_KINDS, declaration_places
from dra_guard.ruleapi.admission_form import (
    CLAIM_METADATA,
    Admission,
    AdmissionTarget,
    Validation,
    annotation,
    annotation_value,
    has_accelerator_request,
    on_template,
    string_list,
)
from dra_guard.ruleapi.context import Context, Resource, Violation
from dra_guard.ruleapi.declarations import Example

ID = "DRA004"
NAME = "sanitization-undeclared"
SEVERITY = Severity.CRITICAL
SUMMARY = (
    f"Accelerator claims and templates must declare {SANITIZATION_ANNOTATION}: "
    f"{', '.join(SANITIZATION_POLICIES[:-1])} or {SANITIZATION_POLICIES[-1]}."
)
RATIONALE = (
    "Device memory outlives the pod: weights and KV-cache of one tenant can be read by the next unless it "
    "is wiped. The API has no field for it, and none of the drivers dra-guard has read (NVIDIA's, Intel's) "
    "wipes a device when its claim is deallocated, so the policy is a declared, tamper-evident contract "
    "(covered by the isolation tag) for the driver or a node agent to honour. ScrubBeforeUse is the one value "
    "dra-guard performs: the scrubber init container erases and verifies the devices before the pod's containers "
    'run, and DRA016 requires it of every pod (README, "Memory erasure"). Kubernetes\' own hook for a '
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
_TEMPLATE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: slice
  namespace: team-a
  annotations: {%s}
spec:%s
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
    Example(
        title="A template that declares it only on itself: the claims made from it carry nothing",
        manifests=_TEMPLATE % (f"{SANITIZATION_ANNOTATION}: WipeOnDeallocate", ""),
        findings=("ResourceClaimTemplate/slice#/spec/metadata",),
    ),
    Example(
        title="A template whose claims carry the policy too (spec.metadata)",
        manifests=_TEMPLATE
        % (
            f"{SANITIZATION_ANNOTATION}: WipeOnDeallocate",
            f"\n  metadata:\n    annotations: {{{SANITIZATION_ANNOTATION}: ZeroFillMemoryOnRelease}}",
        ),
    ),
)


def check(resource: Resource, context: Context) -> Iterator[Violation]:
    requests = context.accelerator_requests(resource)
    if not requests:
        return
    allowed = " or ".join(SANITIZATION_POLICIES)
    for place, place_annotations in declaration_places(resource.obj):
        value = place_annotations.get(SANITIZATION_ANNOTATION)
        if value in SANITIZATION_POLICIES:
            continue
        where = "" if place == ("metadata",) else _IN_CLAIM_METADATA
        if value is None:
            yield Violation(
                place, f"accelerator {resource.kind} declares no {SANITIZATION_ANNOTATION}{where} ({allowed})"
            )
        else:
            # Rests on the value, and on the device classes that make this an accelerator claim.
            yield Violation(
                (*place, "annotations", SANITIZATION_ANNOTATION),
                f"{SANITIZATION_ANNOTATION}{where} is {value!r}; it must be {allowed}",
                evidence=tuple((*request.path, "deviceClassName") for request in requests),
            )


#: What a finding on a template's `spec.metadata` adds: the claims it makes carry that.
_IN_CLAIM_METADATA = " in spec.metadata, which is all the claims made from it carry"


def _admission(target: AdmissionTarget) -> Admission:
    def declared(place: str) -> str:
        return (
            f"{annotation(SANITIZATION_ANNOTATION, place)} && {annotation_value(SANITIZATION_ANNOTATION, place)} in "
            + string_list(SANITIZATION_POLICIES)
        )

    policies = " or ".join(SANITIZATION_POLICIES)
    return Admission(
        kinds=tuple(sorted(CLAIM_KINDS)),
        condition=has_accelerator_request(target.config),
        validations=(
            Validation(
                expression=declared("object.metadata"),
                message=f"accelerator claim declares no valid {SANITIZATION_ANNOTATION} ({policies})",
            ),
            Validation(
                expression=on_template(declared(CLAIM_METADATA)),
                message=f"accelerator claim template declares no valid {SANITIZATION_ANNOTATION}"
                f"{_IN_CLAIM_METADATA} ({policies})",
            ),
        ),
    )


ADMISSION = _admission
