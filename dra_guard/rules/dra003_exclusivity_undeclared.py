"""DRA003: accelerator requests that do not keep their devices to themselves."""

from __future__ import annotations

from collections.abc import Iterator

from dra_guard.contract.catalog import ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION, EXCLUSIVITY_GUARD
from dra_guard.contract.findings import Severity
from dra_guard.model.conjuncts import GUARD_TERM, conjunct_pattern, has_conjunct
from dra_guard.model.manifest import (
    ALL,
    CLAIM_KINDS,
    EXACT_COUNT,
    DeviceRequestView,
    declaration_places,
    get_path,
    items,
    mapping,
)
from dra_guard.ruleapi.admission_form import (
    CLAIM_METADATA,
    REQUESTS,
    Admission,
    AdmissionTarget,
    Validation,
    annotation,
    annotation_value,
    failing_requests,
    is_accelerator_body,
    on_template,
    selector_matches,
    some_request_body,
    string,
)
from dra_guard.ruleapi.context import Context, Resource, Violation
from dra_guard.ruleapi.declarations import Example

ID = "DRA003"
NAME = "exclusivity-undeclared"
SEVERITY = Severity.HIGH
SUMMARY = (
    f"Accelerator requests must be exclusive: the selector `{EXCLUSIVITY_GUARD}` where the target "
    f"Kubernetes enforces it (1.36+, All requests too), else {ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION}: "
    '"false" (ExactCount requests); and no capacity.requests.'
)
RATIONALE = (
    "The standard requires allowMultipleAllocations to be false for multi-tenant workloads, but no claim "
    "request has such a field (it exists only on ResourceSlice devices; the API server rejects it in a "
    "request). A device its driver publishes with allowMultipleAllocations: true (consumable capacity, "
    "KEP-5075) can be allocated to several claims at once, even one claim per pod from a template. Where the "
    "DRAConsumableCapacity gate is on (by default from Kubernetes 1.36; `consumable-capacity: true` for "
    f"1.34/1.35 clusters that enable it), the selector `{EXCLUSIVITY_GUARD}` makes the scheduler refuse such "
    "devices: that is the enforced form, and it is required there; the annotation alone is read by nothing "
    "in Kubernetes. Where the gate is off the expression does not compile, so exclusivity can only be "
    f"declared with the {ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION} annotation. A request with "
    "capacity.requests asks for a share of a device: the rest goes to other claims. The selector is required "
    "of allocationMode All requests as well: All takes a share of every matching device that allows multiple "
    "allocations (resource/v1 ExactDeviceRequest.capacity), which other claims share; before the gate no "
    "device is allocated twice, so there the annotation is asked of ExactCount requests only, as the "
    "standard words it."
)
REMEDIATION = (
    f"Add `&& {EXCLUSIVITY_GUARD}` to each request's selector (the dra-guard builders do) on Kubernetes 1.36+, "
    f'or the annotation {ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION}: "false" on older targets; remove capacity.requests.'
)
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
  metadata:
    annotations: {%s}
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: mig.nvidia.com
          selectors:
          - cel: {expression: "%s"}
          allocationMode: ExactCount
          count: 1%s
"""
_PIN = "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"
_DECLARED = f'{ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION}: "false"'


def _template(annotations: str, expression: str, extra: str = "", *, claims: str | None = None) -> str:
    """The example template; its claims (spec.metadata) declare what it does unless `claims`."""
    return _TEMPLATE % (annotations, annotations if claims is None else claims, expression, extra)


EXAMPLES = (
    Example(
        title="Kubernetes 1.36: the annotation alone enforces nothing",
        manifests=_template(_DECLARED, _PIN),
        findings=("ResourceClaimTemplate/slice#/spec/spec/devices/requests/0/exactly/selectors",),
    ),
    Example(
        title="Kubernetes 1.36: the scheduler keeps the device exclusive",
        manifests=_template(_DECLARED, f"{_PIN} && {EXCLUSIVITY_GUARD}"),
    ),
    Example(
        title="Kubernetes 1.35 (gate off by default): an exclusive request that does not say so",
        manifests=_template("", _PIN),
        findings=("ResourceClaimTemplate/slice#/metadata", "ResourceClaimTemplate/slice#/spec/metadata"),
        config={"kubernetes-version": "1.35"},
    ),
    Example(
        title="Kubernetes 1.35: declared on the template, but not on the claims made from it",
        manifests=_template(_DECLARED, _PIN, claims=""),
        findings=("ResourceClaimTemplate/slice#/spec/metadata",),
        config={"kubernetes-version": "1.35"},
    ),
    Example(
        title="Kubernetes 1.35: exclusivity declared",
        manifests=_template(_DECLARED, _PIN),
        config={"kubernetes-version": "1.35"},
    ),
    Example(
        title="The annotation says the device may be shared",
        manifests=_template(f'{ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION}: "true"', f"{_PIN} && {EXCLUSIVITY_GUARD}"),
        findings=(
            "ResourceClaimTemplate/slice#/metadata/annotations/dra-guard.io~1allow-multiple-allocations",
            "ResourceClaimTemplate/slice#/spec/metadata/annotations/dra-guard.io~1allow-multiple-allocations",
        ),
    ),
    Example(
        title="A share of a device's capacity: other claims get the rest",
        manifests=_template(
            _DECLARED, f"{_PIN} && {EXCLUSIVITY_GUARD}", "\n          capacity: {requests: {memory: 10Gi}}"
        ),
        findings=("ResourceClaimTemplate/slice#/spec/spec/devices/requests/0/exactly/capacity/requests",),
    ),
)


def _guarded(request: DeviceRequestView) -> bool:
    return any(
        isinstance(expression := get_path(selector, ("cel", "expression")), str)
        and has_conjunct(expression, GUARD_TERM)
        for selector in items(request.body.get("selectors"))
    )


def check(resource: Resource, context: Context) -> Iterator[Violation]:
    accelerator = context.accelerator_requests(resource)
    for request in accelerator:
        if mapping(mapping(request.body.get("capacity")).get("requests")):
            yield Violation(
                (*request.path, "capacity", "requests"),
                f"request {request.qualified_name!r} asks for a share of a device's capacity (capacity.requests): "
                "the device can be allocated to other claims at the same time",
            )
    # As stored: an absent or null mode is ExactCount.  A mode the API server refuses
    # counts too, so a misspelt mode cannot switch the rule off.
    exact = [request for request in accelerator if request.allocation_mode != ALL]
    if not accelerator:
        return
    places = declaration_places(resource.obj)
    for place, place_annotations in places if exact else ():
        value = place_annotations.get(ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION)
        if value is not None and value != "false":
            where = "" if place == ("metadata",) else " in spec.metadata (what the claims made from it carry)"
            yield Violation(
                (*place, "annotations", ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION),
                f'{ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION}{where} is {value!r}; exclusive claims must say "false"',
            )
    value = places[0][1].get(ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION)
    release = context.config.kubernetes_release
    if context.config.exclusivity_guard_compiles:
        # Every request, All too: an All request takes a share of each matching device that
        # allows multiple allocations (resource/v1 `ExactDeviceRequest.Capacity`, kubernetes/api
        # @ 10b39a39), which other claims share as well.
        for request in accelerator:
            if not _guarded(request):
                declared = "the annotation alone enforces nothing" if value == "false" else "nothing keeps it exclusive"
                yield Violation(
                    (*request.path, "selectors"),
                    f"request {request.qualified_name!r} has no selector `{EXCLUSIVITY_GUARD}`: on Kubernetes "
                    f"{release.version} with DRAConsumableCapacity on, a device published with "
                    f"allowMultipleAllocations: true can go to other claims too, and {declared}",
                )
        return
    if not exact:
        return  # before DRAConsumableCapacity no device is allocated twice: All takes whole devices
    first = exact[0]
    label = f"{'ExactCount request' if first.allocation_mode == EXACT_COUNT else 'request'} {first.qualified_name!r}"
    for place, place_annotations in places:
        if place_annotations.get(ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION) is None:
            where = "" if place == ("metadata",) else " in spec.metadata (what the claims made from it carry)"
            yield Violation(
                place,
                f"{label} but no {ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION} annotation{where} "
                f"(Kubernetes {release.version} without DRAConsumableCapacity cannot enforce exclusivity in the "
                "selector)",
            )


def _admission(target: AdmissionTarget) -> Admission:
    config = target.config
    key = ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION

    def accelerator(body: str) -> str:
        return is_accelerator_body(body, config)

    def exact(body: str) -> str:
        return f"{accelerator(body)} && (!has({body}.allocationMode) || {body}.allocationMode == 'ExactCount')"

    def no_capacity_share(body: str) -> str:
        share = f"has({body}.capacity) && has({body}.capacity.requests) && size({body}.capacity.requests) > 0"
        return f"!({accelerator(body)}) || !({share})"

    validations = [
        Validation(
            expression="size(variables.sharing) == 0",
            message="a request asks for a share of a device's capacity (capacity.requests)",
            message_expression="'request ' + variables.sharing[0] + \" asks for a share of a device's capacity "
            '(capacity.requests): the device can be allocated to other claims at the same time"',
        ),
        Validation(
            expression=f"!variables.exclusive || !{annotation(key)} || {annotation_value(key)} == 'false'",
            message=f'{key} must say "false" on a claim with exclusive requests',
        ),
        Validation(
            expression="!variables.exclusive || "
            + on_template(f"!{annotation(key, CLAIM_METADATA)} || {annotation_value(key, CLAIM_METADATA)} == 'false'"),
            message=f'{key} in spec.metadata (what the claims made from it carry) must say "false" on a claim '
            "template with exclusive requests",
        ),
    ]
    variables = [
        ("requests", REQUESTS),
        ("exclusive", some_request_body(exact)),
        ("sharing", failing_requests(no_capacity_share)),
    ]
    if config.exclusivity_guard_compiles:
        guard = conjunct_pattern(GUARD_TERM)
        variables.append(
            # Every accelerator request, All too (see `check`).
            (
                "unguarded",
                failing_requests(lambda body: f"!({accelerator(body)}) || ({selector_matches(body, guard)})"),
            )
        )
        consequence = " has no selector `" + EXCLUSIVITY_GUARD + "`: a device published with "
        consequence += "allowMultipleAllocations: true can go to other claims too"
        validations.append(
            Validation(
                expression="size(variables.unguarded) == 0",
                message=f"an exclusive request has no selector `{EXCLUSIVITY_GUARD}`",
                message_expression=f"'request ' + variables.unguarded[0] + {string(consequence)}",
            )
        )
    else:
        validations.append(
            Validation(
                expression=f"!variables.exclusive || {annotation(key)}",
                message=f"an exclusive request but no {key} annotation",
            )
        )
        validations.append(
            Validation(
                expression="!variables.exclusive || " + on_template(annotation(key, CLAIM_METADATA)),
                message=f"an exclusive request but no {key} annotation in spec.metadata (what the claims made "
                "from the template carry)",
            )
        )
    return Admission(kinds=tuple(sorted(CLAIM_KINDS)), variables=tuple(variables), validations=tuple(validations))


ADMISSION = _admission
