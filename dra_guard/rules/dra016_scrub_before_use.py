"""DRA016: a pod with accelerator claims scrubs its devices before any of its containers runs."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from dra_guard.contract.container_fields import kept_fields
from dra_guard.contract.findings import Severity
from dra_guard.contract.scrubber import (
    DEFAULT_SCRUB_IMAGE,
    SCRUB_COMMAND,
    SCRUB_CONTAINER_NAME,
    SCRUBBED_DRIVERS,
    SCRUBBER_FIELDS,
    TERMINATION_MESSAGE_PATH,
    image_pin_problem,
    moved_termination_message,
    privileged,
)
from dra_guard.model.manifest import ContainerView, Path, text
from dra_guard.model.pod_templates import PodSpecView
from dra_guard.ruleapi.admission_form import (
    CONTROLLER_KINDS,
    Admission,
    AdmissionTarget,
    Validation,
    containers,
    pod_spec,
    string,
    string_list,
)
from dra_guard.ruleapi.context import ClaimFacts, Context, Pending, Resolved, Resource, Violation
from dra_guard.ruleapi.declarations import Example
from dra_guard.ruleapi.device_classes import decided_by_input, scrub_hint
from dra_guard.ruleapi.options import ConfigError, Option, ParseContext, StringMap, StringSet

ID = "DRA016"
NAME = "scrub-before-use"
SEVERITY = Severity.CRITICAL
SUMMARY = (
    f"A pod with an accelerator claim must run the scrubber ({SCRUB_CONTAINER_NAME}, `dra-guard scrub`) as its "
    "first init container, unchanged, holding every claim of a class it scrubs."
)
RATIONALE = (
    "No DRA driver dra-guard has read erases a device when its claim is released (NVIDIA's and AMD's unprepare "
    "does nothing, Intel's neither; the TPU driver only empties a log directory), and CUDA promises no zero-fill: "
    "what one tenant left in device memory can be read by the next. The scrubber reads every byte of every device "
    "the pod was given, reports what it found, zeroes it and verifies the zeroing, and the pod's other containers "
    "start only after it exits 0. That holds only if it runs first (an init container or sidecar ahead of it "
    "reaches the devices before they are clean; `restartPolicy: Always` makes it a sidecar that the next "
    "containers do not wait for), holds every accelerator claim of the pod (a device it is not given it cannot "
    "see), and is the image and command you configured: a container of that name with another image, a changed "
    'command (a tenant\'s `command: ["true"]`), arguments, environment or mounts proves nothing (nor does a '
    "termination message path other than the default: the kubelet mounts a file there, which over a device node "
    "hides that device from the scrubber alone), and a privileged one is shown every device of the node, so it "
    "would fill and zero other pods' GPUs too. It scrubs the GPUs "
    "and MIG instances of NVIDIA's GPU driver (gpu.nvidia.com) the pod sees, so a class is scrubbed by what its "
    "devices are, whatever its name (NVIDIA's per-profile mig-1g-12gb.gpu.nvidia.com too): its selector must fix "
    "device.driver == 'gpu.nvidia.com' and device.attributes['gpu.nvidia.com'].type == 'gpu' or 'mig', each in a "
    "top-level &&, as the catalog's classes, the selector extra-classes gives, or else its DeviceClass among the "
    "checked objects shows it. The same driver's passthrough devices (type 'vfio', vfio.gpu.nvidia.com) are handed "
    "to a virtual machine and are not scrubbed, and a class whose selector does not show which devices it selects "
    "(extra-classes without a selector, none at all) is not counted as scrubbed. A claim of any other "
    "accelerator class is reported as unscrubbed unless the configuration accepts the class (unscrubbed-classes, "
    "with a reason that the report shows on the waived finding). Whether a pod claim is an accelerator's is read "
    "from its template or claim: among the objects for `check`, from the API server for the webhook; the "
    "admission policy decides the scrubber's own shape, which the pod alone shows. A claim or template that is "
    "not among the checked objects is a low finding unless the scrubber holds it."
)
REMEDIATION = (
    f"Build the workload with IsolatedAcceleratorWorkload or with_claim_template(scrub_image=...), or add the "
    f"init container `{SCRUB_CONTAINER_NAME}` first, with the configured image, `command: "
    f"[{', '.join(SCRUB_COMMAND)}]` and every accelerator claim in resources.claims; for a class it cannot scrub, "
    "accept the class under unscrubbed-classes with a reason."
)
#: Every kind: pods, built-in workloads, and the workload CRDs whose pod templates dra-guard finds.
KINDS = None
#: Whether a pod claim is an accelerator's is written in its template or claim.
CROSS_OBJECT = True
#: Unscrubbed memory leaks one tenant's data to the next: classes are accepted in the
#: configuration, with a reason, never by an annotation on the workload.
WAIVABLE = False


class PinnedImages(StringSet):
    description = "list of images, each pinned by tag or digest"

    def parse(self, key: str, value: object, context: ParseContext) -> frozenset[str]:
        images = super().parse(key, value, context)
        for image in sorted(images):
            problem = image_pin_problem(image)
            if problem is not None:
                raise ConfigError(f"{key}: {image!r} {problem}")
        return images


SCRUB_IMAGES = Option(
    key="scrub-images",
    type=PinnedImages(),
    default=frozenset({DEFAULT_SCRUB_IMAGE}),
    doc="The scrubber images a pod may run, each pinned by tag or digest (the builders' scrub_image must be one).",
)
UNSCRUBBED_CLASSES = Option(
    key="unscrubbed-classes",
    type=StringMap("mapping of device class to the reason it is accepted unscrubbed"),
    default=MappingProxyType({}),
    doc="Accelerator classes the scrubber cannot scrub that you accept unscrubbed, each with the reason the "
    "reports show (for example a single-tenant TPU pool).",
)
OPTIONS = (SCRUB_IMAGES, UNSCRUBBED_CLASSES)
FACETS = {
    "scrubber-not-first": f"the container {SCRUB_CONTAINER_NAME} is not the pod's first init container",
    "scrubber-image": "the scrubber runs an image the configuration does not list",
    "scrubber-changed": "the scrubber's command is not `dra-guard scrub`, or it has arguments, environment, "
    "mounts, probes, a termination message path other than the default, or other fields that change what runs, "
    "or it is privileged (which shows it every device of the node)",
    "scrubber-restartable": "the scrubber has a restartPolicy (Always makes it a sidecar nobody waits for)",
    "no-scrubber": "a pod with a claim of a class the scrubber scrubs runs no scrubber",
    "claim-not-scrubbed": "the scrubber does not hold an accelerator claim of the pod",
    "unscrubbable-class": "a pod claim asks for an accelerator class the scrubber cannot scrub",
    "unknown-claim": "a pod claim's template or claim is not among the checked objects, and no scrubber holds it",
}

#: What a scrubber container may carry besides its name, image and command: the fields the
#: builders write (resources.claims) and those the API server defaults on every container
#: (`dra_guard.contract.scrubber.SCRUBBER_FIELDS`, which the builders check too).
_ALLOWED_FIELDS = SCRUBBER_FIELDS | {"restartPolicy"}  # restartPolicy: its own facet
#: Every other field of core/v1 Container (1.32-1.37; tests/rules/test_dra016.py checks the
#: list against the OpenAPI schemas): the policy names them, since CEL cannot list the keys
#: of a typed object.
CHANGED_FIELDS = (
    "args",
    "env",
    "envFrom",
    "lifecycle",
    "livenessProbe",
    "ports",
    "readinessProbe",
    "resizePolicy",
    "restartPolicyRules",
    "startupProbe",
    "stdin",
    "stdinOnce",
    "tty",
    "volumeDevices",
    "volumeMounts",
    "workingDir",
)

_TEMPLATE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: %s, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - name: dev
        exactly: {deviceClassName: %s, allocationMode: ExactCount, count: 1}
"""
_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: team-a}
spec:
%s  containers:
  - name: main
    image: trainer:1.0
    resources:
      claims: [{name: dev}]
  resourceClaims:
  - {name: dev, resourceClaimTemplateName: slice}
"""
_SCRUBBER = f"""\
  - name: {SCRUB_CONTAINER_NAME}
    image: {DEFAULT_SCRUB_IMAGE}
    command: [{", ".join(SCRUB_COMMAND)}]
    resources:
      claims: [{{name: dev}}]
"""
_INIT = "  initContainers:\n"
_MIG = _TEMPLATE % ("slice", "mig.nvidia.com")
_TPU = _TEMPLATE % ("slice", "tpu.google.com")
EXAMPLES = (
    Example(
        title="The scrubber runs first and holds the MIG claim",
        manifests=f"{_MIG}---\n" + _POD % (_INIT + _SCRUBBER),
    ),
    Example(
        title="A pod with a MIG claim and no scrubber",
        manifests=f"{_MIG}---\n{_POD % ''}",
        findings=("Pod/trainer#/spec/resourceClaims/0",),
    ),
    Example(
        title="A tenant's look-alike: the scrubber's name, a command that does nothing",
        manifests=f"{_MIG}---\n" + _POD % ("  initContainers:\n" + _SCRUBBER.replace("[dra-guard, scrub]", '["true"]')),
        findings=("Pod/trainer#/spec/initContainers/0/command",),
    ),
    Example(
        title="A privileged scrubber: shown every GPU of the node, it would scrub other pods' devices too",
        manifests=f"{_MIG}---\n" + _POD % (_INIT + _SCRUBBER + "    securityContext: {privileged: true}\n"),
        findings=("Pod/trainer#/spec/initContainers/0/securityContext/privileged",),
    ),
    Example(
        title="The scrubber under the restricted Pod Security Standard: its securityContext changes no device it sees",
        manifests=f"{_MIG}---\n"
        + _POD
        % (
            _INIT
            + _SCRUBBER
            + "    securityContext:\n      runAsNonRoot: true\n      allowPrivilegeEscalation: false\n"
            "      capabilities: {drop: [ALL]}\n      seccompProfile: {type: RuntimeDefault}\n"
        ),
    ),
    Example(
        title="An init container holding the device runs before the scrubber",
        manifests=f"{_MIG}---\n"
        + _POD
        % (
            "  initContainers:\n  - name: warmup\n    image: trainer:1.0\n    resources:\n"
            "      claims: [{name: dev}]\n" + _SCRUBBER
        ),
        findings=("Pod/trainer#/spec/initContainers/1",),
    ),
    Example(
        title="The scrubber as a restartable sidecar: the trainer does not wait for it",
        manifests=f"{_MIG}---\n" + _POD % (_INIT + _SCRUBBER + "    restartPolicy: Always\n"),
        findings=("Pod/trainer#/spec/initContainers/0/restartPolicy",),
    ),
    Example(
        title="A TPU claim: the scrubber cannot scrub TPUs",
        manifests=f"{_TPU}---\n{_POD % ''}",
        findings=("Pod/trainer#/spec/resourceClaims/0",),
    ),
    Example(
        title="A TPU class accepted unscrubbed, with a reason: reported as waived, never silently",
        manifests=f"{_TPU}---\n{_POD % ''}",
        config={"unscrubbed-classes": {"tpu.google.com": "single-tenant TPU node pool, nodes recycled per tenant"}},
    ),
    Example(
        title="A NIC claim needs no scrubber",
        manifests=f"{_TEMPLATE % ('slice', 'dranet.gke.io')}---\n{_POD % ''}",
        config={"non-accelerator-classes": ["dranet.gke.io"]},
    ),
)


# --- the scrubber's own shape (the pod alone shows it) --------------------------------------


def _list_and_index(container: ContainerView) -> tuple[str, int]:
    """Which container list of the pod spec the container is in, and where."""
    last = container.path[-1] if container.path else ""
    if isinstance(last, int) and len(container.path) >= 2:
        return str(container.path[-2]), last
    return str(last), 0


def find_scrubber(pod: PodSpecView) -> ContainerView | None:
    """The pod's container named as the scrubber (names are unique in a pod)."""
    return next((container for container in pod.containers if container.name == SCRUB_CONTAINER_NAME), None)


def held_claims(container: ContainerView) -> frozenset[str]:
    """The pod claims the container holds whole (an entry with `request` holds part of one)."""
    return frozenset(text(claim.get("name")) for _, claim in container.claims() if "request" not in claim)


def _shape(pod: PodSpecView, scrubber: ContainerView, images: frozenset[str]) -> Iterator[Violation]:
    listed, index = _list_and_index(scrubber)
    if (listed, index) != ("initContainers", 0):
        ahead = [
            container.name or "(unnamed)"
            for container in pod.containers
            if container is not scrubber
            and _ahead(_list_and_index(container), (listed, index))
            and any(True for _ in container.claims())
        ]
        where = f"init container {index + 1}" if listed == "initContainers" else f"in {listed}"
        held = f"; {', '.join(repr(name) for name in ahead)} hold{'s' if len(ahead) == 1 else ''} claims before it"
        yield Violation(
            scrubber.path,
            f"the scrubber {SCRUB_CONTAINER_NAME!r} is {where}{pod.where}; it must be the first init container, "
            f"so that no container reaches the pod's devices before they are scrubbed{held if ahead else ''}",
            facet="scrubber-not-first",
        )
    container = scrubber.container
    image = container.get("image")
    if not isinstance(image, str) or image not in images:
        yield Violation(
            (*scrubber.path, "image"),
            f"the scrubber{pod.where} runs image {image!r}, which is not a configured scrub image "
            f"({', '.join(sorted(images))}): another image proves nothing",
            facet="scrubber-image",
        )
    if container.get("command") != list(SCRUB_COMMAND):
        yield Violation(
            (*scrubber.path, "command"),
            f"the scrubber's command{pod.where} is {container.get('command')!r}, not {list(SCRUB_COMMAND)!r}",
            facet="scrubber-changed",
        )
    # What the API server keeps: `args: []` or `stdin: false` is no argument (contract.container_fields).
    for field in sorted(key for key in kept_fields(container) if key not in _ALLOWED_FIELDS):
        yield Violation(
            (*scrubber.path, field),
            f"the scrubber{pod.where} sets {field}, which changes what it runs or sees; it must have none",
            facet="scrubber-changed",
        )
    if moved_termination_message(container):
        yield Violation(
            (*scrubber.path, "terminationMessagePath"),
            f"the scrubber{pod.where} has its termination message mounted at "
            f"{container.get('terminationMessagePath')!r}: the kubelet mounts a file there, which over a device "
            f"node would hide that device from the scrubber alone; it must be {TERMINATION_MESSAGE_PATH!r} or unset",
            facet="scrubber-changed",
        )
    if privileged(container):
        yield Violation(
            (*scrubber.path, "securityContext", "privileged"),
            f"the scrubber{pod.where} is privileged (securityContext.privileged): it is shown every device of the "
            "node, so it would fill and zero the memory of other pods' GPUs and count them as given; it must not "
            "be privileged",
            facet="scrubber-changed",
        )
    if container.get("restartPolicy") is not None:
        yield Violation(
            (*scrubber.path, "restartPolicy"),
            f"the scrubber{pod.where} has restartPolicy {container.get('restartPolicy')!r}: it must be a plain init "
            "container (with Always it is a sidecar, and the pod's containers start before it has finished)",
            facet="scrubber-restartable",
        )


def _ahead(place: tuple[str, int], scrubber: tuple[str, int]) -> bool:
    """Whether a container at `place` may run before the scrubber, at `scrubber`, has finished."""
    listed, index = place
    if scrubber[0] == "initContainers":
        return listed == "initContainers" and index < scrubber[1]
    return listed == "initContainers" or listed != scrubber[0] or index != scrubber[1]


# --- the pod's claims (their templates say which are accelerators) ---------------------------


def check(resource: Resource, context: Context) -> Iterator[Violation | Pending]:
    images = context.config.get(SCRUB_IMAGES)
    for pod in resource.pods:
        scrubber = find_scrubber(pod)
        if scrubber is not None:
            yield from _shape(pod, scrubber, images)
        held = held_claims(scrubber) if scrubber is not None else frozenset()
        for path, claim in pod.claims:
            yield from _claim(
                context, resource.namespace, pod, (path, claim), has_scrubber=scrubber is not None, held=held
            )


def _claim(
    context: Context,
    namespace: str,
    pod: PodSpecView,
    pod_claim: tuple[Path, Mapping[str, Any]],
    *,
    has_scrubber: bool,
    held: frozenset[str],
) -> Iterator[Violation | Pending]:
    path, claim = pod_claim
    name = text(claim.get("name"))
    template, claim_name = claim.get("resourceClaimTemplateName"), claim.get("resourceClaimName")
    if isinstance(template, str) and template:
        target: tuple[str, str] = ("ResourceClaimTemplate", template)
    elif isinstance(claim_name, str) and claim_name:
        target = ("ResourceClaim", claim_name)
    else:
        return  # neither: DRA009 and DRA010 report it
    facts = _Claim(name, *target, name in held, has_scrubber, pod.where)
    settled = (context.settled_template if target[0] == "ResourceClaimTemplate" else context.settled_claim)(
        namespace, target[1]
    )
    decided_now = settled is not None and not any(decided_by_input(cls, context.config) for cls in settled.classes)
    for facet in FACETS_OF_CLAIMS:
        if facts.held and facet != "unscrubbable-class":
            continue  # the scrubber holds it: only a class it cannot scrub is left to report
        if facet == "unknown-claim" and (decided_now or not context.complete):
            continue
        if decided_now and settled is not None:
            # Decided now: nothing to keep until the end.  (An accepted class is reported
            # waived, which only a resolved finding carries: a class the scrubber cannot
            # scrub waits, unless it is cleared now, as most claims' classes are.)
            verdict = _JUDGES[facet](context, settled, facts)
            if verdict is None:
                continue
            if facet != "unscrubbable-class":
                yield Violation(path, verdict.message, cross_object=True, facet=facet)
                continue
        yield Pending(path, _resolve, (context, namespace, facts, facet), facet=facet)


class _Claim(NamedTuple):
    """A pod claim, as its pending findings keep it."""

    name: str
    kind: str
    target: str
    held: bool
    has_scrubber: bool
    where: str

    def label(self) -> str:
        return f"pod claim {self.name!r} ({self.kind} {self.target!r})"


def _resolve(context: Context, namespace: str, facts: _Claim, facet: str) -> Resolved | None:
    find = context.find_template if facts.kind == "ResourceClaimTemplate" else context.find_claim
    target = find(namespace, facts.target)
    if facet == "unknown-claim":
        if target is not None:
            return None
        return Resolved(
            f"{facts.label()} is not among the checked objects{facts.where}: if it asks for an accelerator, "
            "nothing scrubs its devices before this pod's containers run",
            severity=Severity.LOW,
        )
    if target is None:
        return None
    return _JUDGES[facet](context, target, facts)


def _accelerator_classes(context: Context, target: ClaimFacts) -> list[str]:
    return sorted({cls for cls in target.classes if cls and context.is_accelerator_class(cls)})


def _unscrubbed(context: Context, target: ClaimFacts, facts: _Claim) -> Resolved | None:
    """A claim of a class the scrubber scrubs that no scrubber, or not this pod's, holds."""
    if facts.held or not any(context.is_scrubbed_class(cls) for cls in _accelerator_classes(context, target)):
        return None
    if facts.has_scrubber:
        message = (
            f"the scrubber{facts.where} does not hold {facts.label()}: the devices of that claim are not scrubbed; "
            "add it to the scrubber's resources.claims"
        )
    else:
        message = (
            f"{facts.label()} asks for devices the scrubber scrubs, and the pod{facts.where} runs no scrubber: "
            "what the device's previous holder left in its memory reaches this pod's containers"
        )
    return Resolved(message)


def _unscrubbable(context: Context, target: ClaimFacts, facts: _Claim) -> Resolved | None:
    """A claim of an accelerator class the scrubber cannot scrub: reported, or accepted by name."""
    classes = [cls for cls in _accelerator_classes(context, target) if not context.is_scrubbed_class(cls)]
    if not classes:
        return None
    accepted: Mapping[str, str] = context.config.get(UNSCRUBBED_CLASSES)
    message = (
        f"{facts.label()} asks for {', '.join(classes)}, which dra-guard's scrubber cannot scrub ({SCRUBS}): "
        "what the previous holder left in device memory is not erased before this pod runs"
        + scrub_hint(classes, context.config)
    )
    refused = [cls for cls in classes if cls not in accepted]
    if refused:
        if len(refused) < len(classes):
            message += f"; unscrubbed-classes does not accept {', '.join(refused)}"
        return Resolved(message)
    reasons = "; ".join(f"{cls}: {accepted[cls]}" for cls in classes)
    return Resolved(message, accepted=f"accepted unscrubbed by the configuration (unscrubbed-classes) -- {reasons}")


#: What the scrubber scrubs, for messages.
SCRUBS = (
    f"it scrubs the GPUs and MIG instances of NVIDIA's driver, {', '.join(sorted(SCRUBBED_DRIVERS))}, not its "
    "passthrough (vfio) devices"
)


def _no_scrubber(context: Context, target: ClaimFacts, facts: _Claim) -> Resolved | None:
    return None if facts.has_scrubber else _unscrubbed(context, target, facts)


def _claim_not_scrubbed(context: Context, target: ClaimFacts, facts: _Claim) -> Resolved | None:
    return _unscrubbed(context, target, facts) if facts.has_scrubber else None


#: The facets a pod claim's template decides, and how ("unknown-claim": in `_resolve`).
_JUDGES: Mapping[str, Callable[[Context, ClaimFacts, _Claim], Resolved | None]] = {
    "no-scrubber": _no_scrubber,
    "claim-not-scrubbed": _claim_not_scrubbed,
    "unscrubbable-class": _unscrubbable,
}
FACETS_OF_CLAIMS = (*_JUDGES, "unknown-claim")


# --- admission ---------------------------------------------------------------------------


def _admission(target: AdmissionTarget) -> Admission:
    """The scrubber's own shape, which the pod (or pod template) alone shows.  Whether a pod
    must run one at all, and hold which claims, rests on its claims' templates, which a
    policy cannot read: the webhook decides those facets, reading the templates."""
    name = string(SCRUB_CONTAINER_NAME)
    init = "variables.pod.initContainers"
    first = f"has({init}) && size({init}) > 0 && has({init}[0].name) && {init}[0].name == {name}"
    configured: frozenset[str] = target.config.get(SCRUB_IMAGES)
    images = string_list(sorted(configured))
    command = "[" + ", ".join(string(part) for part in SCRUB_COMMAND) + "]"
    unchanged = " && ".join(f"!has(c.{field})" for field in CHANGED_FIELDS)
    return Admission(
        kinds=(*CONTROLLER_KINDS, "Pod"),
        variables=(
            ("pod", pod_spec((*CONTROLLER_KINDS, "Pod"))),
            ("scrubbers", f"({containers()}).filter(c, has(c.name) && c.name == {name})"),
        ),
        validations=(
            Validation(
                expression=f"size(variables.scrubbers) == 0 || ({first})",
                message=f"the scrubber {SCRUB_CONTAINER_NAME} must be the pod's first init container, so that no "
                "container reaches the pod's devices before they are scrubbed",
            ),
            Validation(
                expression=f"variables.scrubbers.all(c, has(c.image) && c.image in {images})",
                message=f"the scrubber {SCRUB_CONTAINER_NAME} runs an image that is not a configured scrub image",
            ),
            Validation(
                expression=f"variables.scrubbers.all(c, has(c.command) && c.command == {command} && {unchanged} && "
                f"(!has(c.terminationMessagePath) || c.terminationMessagePath == {string(TERMINATION_MESSAGE_PATH)}))",
                message=f"the scrubber {SCRUB_CONTAINER_NAME} must run `{' '.join(SCRUB_COMMAND)}` unchanged: no "
                "other command, arguments, environment, mounts, probes or termination message path",
            ),
            Validation(
                # Only `privileged` of its securityContext changes which devices it reaches
                # (`dra_guard.contract.scrubber.privileged`).
                expression="variables.scrubbers.all(c, !has(c.securityContext) || "
                "!has(c.securityContext.privileged) || !c.securityContext.privileged)",
                message=f"the scrubber {SCRUB_CONTAINER_NAME} must not be privileged: it would be shown every "
                "device of the node, and fill and zero the memory of other pods' GPUs",
            ),
            Validation(
                expression="variables.scrubbers.all(c, !has(c.restartPolicy))",
                message=f"the scrubber {SCRUB_CONTAINER_NAME} must be a plain init container: with restartPolicy "
                "Always it is a sidecar, and the pod's containers start before it has finished",
            ),
        ),
        covers=frozenset({"scrubber-not-first", "scrubber-image", "scrubber-changed", "scrubber-restartable"}),
    )


ADMISSION = _admission
