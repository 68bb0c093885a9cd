"""DRA004: accelerator claims that do not declare memory sanitization."""

from __future__ import annotations

from collections.abc import Iterator

from dra_guard.contract.catalog import (
    IGNORE_ANNOTATION_PREFIX,
    SANITIZATION_ANNOTATION,
    SANITIZATION_POLICIES,
    SCRUB_BEFORE_USE,
)
from dra_guard.contract.findings import Severity
from dra_guard.contract.scrubber import SCRUBBED_DRIVERS
from dra_guard.model.manifest import CLAIM_KINDS, DeviceRequestView, Path, declaration_places
from dra_guard.ruleapi.admission_form import (
    CLAIM_METADATA,
    REQUESTS,
    Admission,
    AdmissionTarget,
    Validation,
    annotation,
    annotation_value,
    failing_requests,
    has_accelerator_request,
    is_accelerator_body,
    on_template,
    string,
    string_list,
)
from dra_guard.ruleapi.context import Context, Pending, Resolved, Resource, Violation
from dra_guard.ruleapi.declarations import Example
from dra_guard.ruleapi.device_classes import decided_by_input, overridable, scrub_hint, scrubbed_classes

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
    'run, and DRA016 requires it of every pod (README, "Memory erasure"); it scrubs the devices of NVIDIA\'s '
    "GPU driver only, so ScrubBeforeUse on a claim of any other class (TPU, AMD, Intel, passthrough) declares "
    "an erasure nothing performs, and is reported whatever unscrubbed-classes accepts: that option accepts a pod "
    "running unscrubbed, not a claim saying it is scrubbed. Kubernetes' own hook for a "
    "device awaiting its wipe is a device taint (DeviceTaintRule, KEP-5055): a claim that tolerates every "
    "taint can still be given it (DRA015)."
)
REMEDIATION = (
    f"Add {SANITIZATION_ANNOTATION}: WipeOnDeallocate (or ZeroFillMemoryOnRelease) and re-tag the object; "
    f"{SCRUB_BEFORE_USE} only on claims of NVIDIA GPUs and MIG instances, whose pods run the scrubber."
)
#: The kinds this rule looks at (the engine runs it on nothing else).
KINDS = frozenset(CLAIM_KINDS)
CROSS_OBJECT = False
#: A device that is not wiped leaks one tenant's memory to the next; no annotation excuses that.
WAIVABLE = False
OPTIONS = ()
FACETS = {
    "undeclared": f"the claim or template declares no {SANITIZATION_ANNOTATION}, or a value that is no policy",
    "unscrubbable-class": f"it declares {SCRUB_BEFORE_USE} for devices of a class the scrubber cannot scrub",
}
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
        title="ScrubBeforeUse on a MIG claim: the scrubber erases it before the pod runs",
        manifests=_CLAIM % f"{SANITIZATION_ANNOTATION}: {SCRUB_BEFORE_USE}",
    ),
    Example(
        title="ScrubBeforeUse on a TPU claim, even with the class accepted unscrubbed: nothing scrubs a TPU",
        manifests=(_CLAIM % f"{SANITIZATION_ANNOTATION}: {SCRUB_BEFORE_USE}").replace(
            "mig.nvidia.com", "tpu.google.com"
        ),
        config={"unscrubbed-classes": {"tpu.google.com": "single-tenant TPU node pool"}},
        findings=("ResourceClaim/slice#/metadata/annotations/dra-guard.io~1sanitization",),
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


def check(resource: Resource, context: Context) -> Iterator[Violation | Pending]:
    requests = context.accelerator_requests(resource)
    if not requests:
        return
    allowed = " or ".join(SANITIZATION_POLICIES)
    for place, place_annotations in declaration_places(resource.obj):
        value = place_annotations.get(SANITIZATION_ANNOTATION)
        where = "" if place == ("metadata",) else _IN_CLAIM_METADATA
        if value == SCRUB_BEFORE_USE:
            yield from _scrub_unperformed(context, requests, (*place, "annotations", SANITIZATION_ANNOTATION), where)
        elif value in SANITIZATION_POLICIES:
            continue
        elif value is None:
            yield Violation(
                place,
                f"accelerator {resource.kind} declares no {SANITIZATION_ANNOTATION}{where} ({allowed})",
                facet="undeclared",
            )
        else:
            # Rests on the value, and on the device classes that make this an accelerator claim.
            yield Violation(
                (*place, "annotations", SANITIZATION_ANNOTATION),
                f"{SANITIZATION_ANNOTATION}{where} is {value!r}; it must be {allowed}",
                evidence=_classes_of(requests),
                facet="undeclared",
            )


#: What a finding on a template's `spec.metadata` adds: the claims it makes carry that.
_IN_CLAIM_METADATA = " in spec.metadata, which is all the claims made from it carry"


def _classes_of(requests: list[DeviceRequestView]) -> tuple[Path, ...]:
    return tuple((*request.path, "deviceClassName") for request in requests)


# --- ScrubBeforeUse where nothing scrubs --------------------------------------------------


def _scrub_unperformed(
    context: Context, requests: list[DeviceRequestView], path: Path, where: str
) -> Iterator[Violation | Pending]:
    """ScrubBeforeUse on a claim with a request of a class the scrubber cannot scrub.

    Whatever `unscrubbed-classes` accepts: that lets a pod run unscrubbed (DRA016), it does
    not make true a claim that says it is scrubbed.  A class whose driver only the input's
    DeviceClass can show waits for it (a DeviceClass of NVIDIA's driver clears the finding)."""
    classes = tuple(sorted({request.device_class for request in requests}))
    evidence = _classes_of(requests)
    if context.complete and any(decided_by_input(name, context.config) for name in classes):
        yield Pending(path, _unless_scrubbed, (context, classes, where), evidence=evidence, facet="unscrubbable-class")
        return
    message = _unscrubbed_message(context, _unscrubbable(context, classes), where)
    if message is not None:
        yield Violation(path, message, evidence=evidence, facet="unscrubbable-class")


def _unscrubbable(context: Context, classes: tuple[str, ...]) -> list[str]:
    """The accelerator classes among `classes` whose devices the scrubber cannot scrub."""
    return [name for name in classes if context.is_accelerator_class(name) and not context.is_scrubbed_class(name)]


def _unscrubbed_message(context: Context, unscrubbable: list[str], where: str) -> str | None:
    if not unscrubbable:
        return None
    named = ", ".join(name or "(a request that names no class)" for name in unscrubbable)
    hint = scrub_hint(unscrubbable, context.config)
    return (
        f"{SANITIZATION_ANNOTATION}{where} is {SCRUB_BEFORE_USE}, but the scrubber cannot scrub {named} (it scrubs "
        f"the GPUs and MIG instances of NVIDIA's driver, {', '.join(sorted(SCRUBBED_DRIVERS))}, not its passthrough "
        "(vfio) devices): nothing erases "
        "these devices before the pod runs, whatever unscrubbed-classes accepts; declare WipeOnDeallocate or "
        f"ZeroFillMemoryOnRelease for the driver or a node agent to honour{hint}"
    )


def _unless_scrubbed(context: Context, classes: tuple[str, ...], where: str) -> Resolved | None:
    unscrubbable = _unscrubbable(context, classes)
    message = _unscrubbed_message(context, unscrubbable, where)
    if message is None:
        return None
    # The claim alone gives the finding, as a policy decides it; a DeviceClass among the
    # objects could only clear it -- unless it made a NIC's class by name an accelerator's.
    return Resolved(message, cross_object=all(overridable(name, context.config) for name in unscrubbable))


def _admission(target: AdmissionTarget) -> Admission:
    config = target.config
    # The policy sees no DeviceClass: a class is scrubbed when the configuration or the
    # catalog knows it to be of the scrubber's driver (`scrubbed_classes`), as `check` and the
    # webhook know it; `check` decides a class only a DeviceClass could show to be NVIDIA's
    # by the claim alone too, where no DeviceClass of that name is among the objects.
    scrubbable = string_list(scrubbed_classes(config))

    def declared(place: str) -> str:
        return (
            f"{annotation(SANITIZATION_ANNOTATION, place)} && {annotation_value(SANITIZATION_ANNOTATION, place)} in "
            + string_list(SANITIZATION_POLICIES)
        )

    def scrub_performed(place: str) -> str:
        value = f"{annotation(SANITIZATION_ANNOTATION, place)} && {annotation_value(SANITIZATION_ANNOTATION, place)}"
        return f"!({value} == {string(SCRUB_BEFORE_USE)}) || size(variables.unscrubbed) == 0"

    def scrubbed_body(body: str) -> str:
        return (
            f"!({is_accelerator_body(body, config)}) || "
            f"(has({body}.deviceClassName) && {body}.deviceClassName in {scrubbable})"
        )

    policies = " or ".join(SANITIZATION_POLICIES)
    unscrubbed = (
        f"{SANITIZATION_ANNOTATION} is {SCRUB_BEFORE_USE}, but the scrubber cannot scrub the devices of a request's "
        "class (it scrubs NVIDIA GPUs and MIG instances)"
    )

    def naming(where: str) -> str:
        """A messageExpression naming the first request whose class is not scrubbed."""
        said = f"{SANITIZATION_ANNOTATION}{where} is {SCRUB_BEFORE_USE}, but the scrubber cannot scrub request "
        return f"{string(said)} + variables.unscrubbed[0] + {string(' (it scrubs NVIDIA GPUs and MIG instances)')}"

    return Admission(
        kinds=tuple(sorted(CLAIM_KINDS)),
        condition=has_accelerator_request(config),
        variables=(("requests", REQUESTS), ("unscrubbed", failing_requests(scrubbed_body))),
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
            Validation(
                expression=scrub_performed("object.metadata"), message=unscrubbed, message_expression=naming("")
            ),
            Validation(
                expression=on_template(scrub_performed(CLAIM_METADATA)),
                message=f"{unscrubbed}{_IN_CLAIM_METADATA}",
                message_expression=naming(_IN_CLAIM_METADATA),
            ),
        ),
    )


ADMISSION = _admission
