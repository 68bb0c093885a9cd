"""DRA002: accelerator requests whose selectors do not pin one profile."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from dra_guard.contract.catalog import DEVICE_CLASSES, DeviceClass
from dra_guard.contract.findings import Severity
from dra_guard.model.conjuncts import DEPTH, attribute_term, conjunct_pattern, has_conjunct
from dra_guard.model.manifest import CLAIM_KINDS, cel_expressions, get_path, items, mapping, text
from dra_guard.model.selectors import Pin, analyse
from dra_guard.ruleapi.admission_form import (
    REQUESTS,
    Admission,
    AdmissionTarget,
    Validation,
    failing_requests,
    is_accelerator_body,
    selector_matches,
    string_list,
)
from dra_guard.ruleapi.config import EXTRA_CLASSES
from dra_guard.ruleapi.context import Context, Pending, Resolved, Resource, Violation
from dra_guard.ruleapi.declarations import Example
from dra_guard.ruleapi.device_classes import class_pin, configured_selectors, redefinition

ID = "DRA002"
NAME = "profile-not-pinned"
SEVERITY = Severity.HIGH
SUMMARY = "Every accelerator request must pin one profile with a CEL selector on the class's pinning attribute."
RATIONALE = (
    "Without a pin the scheduler may hand out any slice the class offers (a 7g.80gb for a job sized for "
    "1g.10gb, or another tenant's partition layout). A pin counts only as a top-level && conjunct "
    "device.attributes['<domain>'].<attribute> == '<literal>': under || (e.g. `|| true`), ! or ?: it "
    "constrains nothing. dra-guard finds the conjuncts with one RE2 pattern, which the admission policies "
    "use too; it reads string literals as CEL's lexer does, except an empty one, one with a backslash "
    "before a quote, and a triple-quoted one, which it does not read: a selector holding one is reported "
    "unpinned (fail closed; DRA003 likewise), and a // comment runs to the end of its line. The class's "
    "own selectors count too (the allocator applies them first): NVIDIA's "
    "per-profile class mig-1g-12gb.gpu.nvidia.com pins profile == '1g.12gb' for every request of it, when "
    "dra-guard knows the class from extra-classes.<class>.selector or, for a class neither the configuration "
    "nor the catalog knows, from a DeviceClass among the checked objects (an admission policy sees only the "
    "claim, so it knows classes from the configuration only). A DeviceClass among the objects never replaces "
    "a class dra-guard knows: DeviceClasses are cluster-scoped, so a tenant's redefinition of gpu.nvidia.com "
    "with a pinning selector is refused at apply while the claims relying on it are created unpinned; such "
    "a redefinition is reported on the DeviceClass. "
    "A pin on an attribute the class's devices do not publish is no pin at all: the CEL selector fails on "
    "such a device with an evaluation error and the allocator aborts the claim (it does not quietly match "
    "nothing). A MIG `profile` selector on class gpu.nvidia.com, which selects whole GPUs, is the "
    "standard's own example of this."
)
REMEDIATION = (
    "Add a selector such as device.attributes['gpu.nvidia.com'].profile == '1g.10gb' on class "
    "mig.nvidia.com (productName for gpu.nvidia.com, tpuGen for tpu.google.com, partitionProfile for gpu.amd.com)."
)
#: The kinds this rule looks at (the engine runs it on nothing else).
KINDS = frozenset({*CLAIM_KINDS, "DeviceClass"})
# The class's selectors may pin: a DeviceClass further on in the input can clear a finding
# on a class dra-guard does not know.
CROSS_OBJECT = True
WAIVABLE = True
OPTIONS = ()
FACETS = {
    "no-class": "an accelerator request names no deviceClassName",
    "invalid-cel": "a selector is not valid CEL (the API server refuses it before any policy)",
    "unread-pin": "the pin is written in a form the shared pattern does not read",
    "unpinned": "no top-level && conjunct pins the class's profile attribute to one value",
    "redefined-class": "a DeviceClass redefines a class dra-guard knows with different pinning",
}
_PER_PROFILE_SELECTOR = (
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig' && "
    "device.attributes['gpu.nvidia.com'].profile == '1g.12gb'"
)
EXAMPLES = (
    Example(
        title="A MIG request without a selector: any profile will do",
        manifests="""\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: slice, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: mig.nvidia.com, allocationMode: ExactCount, count: 1}
""",
        findings=("ResourceClaimTemplate/slice#/spec/spec/devices/requests/0/exactly",),
    ),
    Example(
        title="A pin under || constrains nothing",
        manifests="""\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: slice, namespace: team-a}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: mig.nvidia.com
        allocationMode: ExactCount
        count: 1
        selectors:
        - cel: {expression: "device.attributes['gpu.nvidia.com'].profile == '1g.10gb' || true"}
""",
        findings=("ResourceClaim/slice#/spec/devices/requests/0/exactly",),
    ),
    Example(
        title="A MIG profile selector on the whole-GPU class never matches",
        manifests="""\
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaimTemplate
metadata: {name: slice, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        deviceClassName: gpu.nvidia.com
        allocationMode: ExactCount
        count: 1
        selectors:
        - cel: {expression: "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}
""",
        findings=("ResourceClaimTemplate/slice#/spec/spec/devices/requests/0",),
    ),
    Example(
        title="NVIDIA's per-profile class, declared in the configuration, pins the profile itself",
        manifests="""\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: slice, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: mig-1g-12gb.gpu.nvidia.com, allocationMode: ExactCount, count: 1}
""",
        config={
            "extra-classes": {
                "mig-1g-12gb.gpu.nvidia.com": {
                    "pin-attribute": "gpu.nvidia.com/profile",
                    "selector": _PER_PROFILE_SELECTOR,
                }
            }
        },
    ),
    Example(
        title="A DeviceClass that redefines the driver's class pins nothing for the claims",
        manifests="""\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.nvidia.com}
spec:
  selectors:
  - cel:
      expression: >-
        device.driver == 'gpu.nvidia.com' &&
        device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100'
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: whole-gpu, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com, allocationMode: ExactCount, count: 1}
""",
        findings=(
            "DeviceClass/gpu.nvidia.com#/spec/selectors",
            "ResourceClaimTemplate/whole-gpu#/spec/spec/devices/requests/0/exactly",
        ),
    ),
    Example(
        title="One MIG profile pinned in a top-level conjunct",
        manifests="""\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: slice, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: mig.nvidia.com
          allocationMode: ExactCount
          count: 1
          selectors:
          - cel:
              expression: >-
                device.driver == 'gpu.nvidia.com' &&
                device.attributes['gpu.nvidia.com'].profile == '1g.10gb'
""",
    ),
)


def check(resource: Resource, context: Context) -> Iterator[Violation | Pending]:
    if resource.kind == "DeviceClass":
        yield from _check_device_class(resource, context)
        return
    for request in context.accelerator_requests(resource):
        label = f"request {request.qualified_name!r}"
        if not request.device_class:
            yield Violation(
                request.path,
                f"{label} names no deviceClassName, so nothing about the device is pinned",
                facet="no-class",
            )
            continue
        known = context.config.device_class(request.device_class)
        pins: list[Pin] = []
        expressions: list[str] = []
        broken = False
        for index, selector in enumerate(items(request.body.get("selectors"))):
            expression = get_path(selector, ("cel", "expression"))
            if not isinstance(expression, str):
                continue
            expressions.append(expression)
            analysis = analyse(expression)
            if analysis.error is not None:
                broken = True
                yield Violation(
                    (*request.path, "selectors", index, "cel", "expression"),
                    f"{label}: selector is not valid CEL ({analysis.error})",
                    facet="invalid-cel",
                )
            pins.extend(analysis.pins)
        if broken:
            continue
        # The decision is the RE2 pattern the admission policy uses too; the parse tree only
        # explains a refusal.
        term = attribute_term(known.domain, known.pin_attribute) if known else attribute_term()
        if any(has_conjunct(expression, term) for expression in expressions):
            continue
        wanted = known.qualified_pin_attribute if known else "device.attributes['<domain>'].<attribute>"
        good = [pin for pin in pins if known is None or pin.qualified_attribute == known.qualified_pin_attribute]
        if good:
            # The parser sees the pin, the pattern (which the admission policy shares) does not.
            yield Violation(
                request.path,
                f"{label} pins {wanted} in a form dra-guard does not read (nested more than {DEPTH} groups deep, "
                "next to a triple-quoted string, or with escapes in the domain or attribute); write it as a plain "
                "top-level && conjunct",
                facet="unread-pin",
            )
            continue
        if pins:
            others = ", ".join(sorted({pin.qualified_attribute for pin in pins}))
            hint = ""
            if request.device_class == "gpu.nvidia.com" and any(pin.attribute == "profile" for pin in pins):
                hint = (
                    "; whole GPUs publish no profile, so the selector fails on them with an evaluation error and "
                    "allocation aborts: MIG slices are requested from class mig.nvidia.com"
                )
            message = (
                f"{label} on class {request.device_class} pins {others}, which that class does not publish "
                f"for pinning; it is pinned by {wanted}{hint}"
            )
        else:
            message = (
                f"{label} on class {text(request.device_class)} does not pin {wanted} to one value "
                "in a top-level && conjunct"
            )
        configured = configured_selectors(request.device_class, context.config)
        if configured is not None:
            # A class the configuration or the catalog knows: its selectors decide, whatever
            # DeviceClass of that name the input holds (`dra_guard.ruleapi.device_classes`).
            if class_pin(known, configured.expressions) is None:
                yield Violation(request.path, message, facet="unpinned")
        elif context.complete:
            # A class dra-guard does not know: a DeviceClass of that name among the objects
            # (before or after this one) is what the cluster gets, and its selectors decide.
            args = (context, request.device_class, known, message)
            yield Pending(request.path, _unless_the_class_pins, args, facet="unpinned")
        else:
            yield Violation(request.path, message, facet="unpinned")


def _unless_the_class_pins(
    context: Context, device_class: str, known: DeviceClass | None, message: str
) -> Resolved | None:
    from_input = context.class_selectors(device_class)
    if from_input is None:
        # The claim decides alone, as an admission policy would.
        return Resolved(message, cross_object=False)
    if class_pin(known, from_input):
        return None
    # The claim alone gives the finding; the class could only have cleared it.
    pins_nothing = f"; DeviceClass {device_class} among the checked objects pins nothing either"
    return Resolved(message + pins_nothing, cross_object=False)


def _check_device_class(resource: Resource, context: Context) -> Iterator[Violation]:
    """A DeviceClass that redefines a class dra-guard knows, pinning otherwise."""
    if not text(resource.obj.get("apiVersion")).startswith("resource.k8s.io/"):
        return
    name = text(mapping(resource.obj.get("metadata")).get("name"))
    expressions = list(cel_expressions(mapping(resource.obj.get("spec")).get("selectors")))
    problem = redefinition(name, context.config, expressions) if name else None
    if problem is not None:
        yield Violation(("spec", "selectors"), problem, facet="redefined-class")


def _admission(target: AdmissionTarget) -> Admission:
    """The same decision in CEL: each accelerator body's selectors must match the pattern of
    its class's pin (any attribute for classes dra-guard does not know)."""
    config = target.config
    extra: Mapping[str, DeviceClass] = config.get(EXTRA_CLASSES)
    classes = {**DEVICE_CLASSES, **extra}
    by_pin: dict[tuple[str, str], list[str]] = {}
    # Classes whose own selector (as configured) pins: every request of them is pinned.
    pinned_by_class: list[str] = []
    for name, device_class in classes.items():
        if config.is_accelerator(name):
            by_pin.setdefault((device_class.domain, device_class.pin_attribute), []).append(name)
            configured = configured_selectors(name, config)
            if configured is not None and class_pin(device_class, configured.expressions):
                pinned_by_class.append(name)

    def pinned(body: str) -> str:
        chain = selector_matches(body, conjunct_pattern(attribute_term()))
        for (domain, attribute), names in sorted(by_pin.items(), reverse=True):
            matches = selector_matches(body, conjunct_pattern(attribute_term(domain, attribute)))
            chain = f"({body}.deviceClassName in {string_list(names)} ? ({matches}) : ({chain}))"
        return chain

    def check(body: str) -> str:
        chain = pinned(body)
        if pinned_by_class:
            chain = f"({body}.deviceClassName in {string_list(pinned_by_class)} || {chain})"
        return f"!({is_accelerator_body(body, config)}) || (has({body}.deviceClassName) && {chain})"

    return Admission(
        kinds=tuple(sorted(CLAIM_KINDS)),
        variables=(("requests", REQUESTS), ("unpinned", failing_requests(check))),
        validations=(
            Validation(
                expression="size(variables.unpinned) == 0",
                message="a request does not pin its class's profile attribute in a top-level && conjunct",
                message_expression="'request ' + variables.unpinned[0] + \" does not pin its class's profile "
                'attribute to one value in a top-level && conjunct"',
            ),
        ),
        # The API server compiles selectors before admission: invalid CEL never reaches a
        # policy.  A DeviceClass is no kind the policy matches.
        covers=frozenset({"no-class", "unread-pin", "unpinned"}),
    )


ADMISSION = _admission
