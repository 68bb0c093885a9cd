"""DRA007: devices configured for time-slicing or MPS."""

from __future__ import annotations

from collections.abc import Iterator

from dra_guard.contract.findings import Severity
from dra_guard.model.manifest import CLAIM_KINDS, Path, claim_devices, get_path, items, mapping, text
from dra_guard.ruleapi.admission_form import Admission, AdmissionTarget, Validation
from dra_guard.ruleapi.context import Context, Pending, Resolved, Resource, Violation
from dra_guard.ruleapi.declarations import Example

ID = "DRA007"
NAME = "temporal-sharing"
SEVERITY = Severity.CRITICAL
SUMMARY = "Opaque device configuration must not share a device in time (sharing.strategy TimeSlicing or MPS)."
RATIONALE = (
    "Time-slicing and MPS run several processes on one GPU or MIG slice with shared memory and no isolation "
    "boundary. The sharing stays among the consumers of the claim the device is allocated to, so its blast "
    "radius decides the severity: a ResourceClaimTemplate gives each pod a claim of its own, and sharing among "
    "that pod's containers stays with one tenant (medium; NVIDIA's own MPS and time-slicing examples do this); "
    "a ResourceClaim is shared by every pod that names it, and a template that a PodGroup in the input names "
    "(DRAWorkloadResourceClaims) gives one claim to all the group's pods, so there one workload can observe or "
    "disturb another's (critical), as with a DeviceClass whose config time-slices every claim of the class. "
    "A GpuConfig or MigDeviceConfig without `sharing`, or no config at all, is no proof that a device is not "
    "time-sliced: with the NVIDIA driver's TimeSlicingSettings gate on, the driver normalises it to TimeSlicing "
    "(gpuconfig.go, migconfig.go Normalize; DefaultGpuConfig at prepare), which a manifest does not show."
)
REMEDIATION = "Remove the sharing section; give each workload its own slice (a MIG profile) instead."
_SHARING = {"timeslicing", "mps"}
#: The kinds this rule looks at (the engine runs it on nothing else).
KINDS = frozenset({*CLAIM_KINDS, "DeviceClass"})
# A PodGroup further on may share a template's claim among its pods.
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
      config:
      - requests: [gpu]
        opaque:
          driver: gpu.nvidia.com
          parameters:
            apiVersion: resource.nvidia.com/v1beta1
            kind: MigDeviceConfig
            sharing: {strategy: %s}
"""
EXAMPLES = (
    Example(
        title="MPS on a MIG slice, among the containers of each pod (medium: one pod's claim)",
        manifests=_TEMPLATE % "MPS",
        findings=("ResourceClaimTemplate/slice#/spec/spec/devices/config/0/opaque/parameters/sharing/strategy",),
    ),
    Example(
        title="A DeviceClass that time-slices every device it hands out",
        manifests="""\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: shared-gpu}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.nvidia.com'"}
  config:
  - opaque:
      driver: gpu.nvidia.com
      parameters:
        apiVersion: resource.nvidia.com/v1beta1
        kind: GpuConfig
        sharing: {strategy: TimeSlicing}
""",
        findings=("DeviceClass/shared-gpu#/spec/config/0/opaque/parameters/sharing/strategy",),
    ),
    Example(
        title="A PodGroup shares one claim from the template among all its pods (critical)",
        manifests=_TEMPLATE % "TimeSlicing"
        + """\
---
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {name: workers, namespace: team-a}
spec:
  schedulingPolicy: {gang: {minCount: 4}}
  resourceClaims:
  - {name: gpu, resourceClaimTemplateName: slice}
""",
        findings=("ResourceClaimTemplate/slice#/spec/spec/devices/config/0/opaque/parameters/sharing/strategy",),
    ),
    Example(
        title="A configuration that shares nothing",
        manifests=_TEMPLATE % "None",
    ),
)


def _configs(resource: Resource) -> Iterator[tuple[Path, object]]:
    located = claim_devices(resource.obj)
    if located is not None:
        path, devices = located
        for index, config in enumerate(items(devices.get("config"))):
            yield (*path, "config", index), config
    elif resource.kind == "DeviceClass":
        for index, config in enumerate(items(get_path(resource.obj, ("spec", "config")))):
            yield ("spec", "config", index), config


def check(resource: Resource, context: Context) -> Iterator[Violation | Pending]:
    for path, config in _configs(resource):
        parameters = get_path(config, ("opaque", "parameters"))
        strategy = text(get_path(parameters, ("sharing", "strategy")))
        # Compared case-insensitively: the driver's decoder is the judge, not our spelling.
        if strategy.casefold() not in _SHARING:
            continue
        kind = text(mapping(parameters).get("kind")) or "opaque configuration"
        where = (*path, "opaque", "parameters", "sharing", "strategy")
        shares = f"{kind} shares the device in time (sharing.strategy: {strategy})"
        if resource.kind == "ResourceClaimTemplate":
            # One claim per pod, unless a PodGroup shares one claim of the template among its pods.
            args = (context, resource.namespace, resource.name, shares)
            yield Pending(where, _template_blast_radius, args, severity=Severity.MEDIUM)
        elif resource.kind == "ResourceClaim":
            yield Violation(where, f"{shares} among every pod that names this ResourceClaim")
        else:
            yield Violation(where, f"{shares} in every claim of this class, claims several pods share included")


def _template_blast_radius(context: Context, namespace: str, name: str, shares: str) -> Resolved:
    groups = context.template_group_shared(namespace, name)
    if groups:
        message = f"{shares} among all the pods of {', '.join(groups)}, which share one claim from this template"
        # The template alone is a finding: the group only makes it graver.
        return Resolved(message, Severity.CRITICAL, cross_object=False)
    message = f"{shares} among the containers of each pod that gets a claim from this template (one pod's own)"
    return Resolved(message, Severity.MEDIUM, cross_object=False)


# --- admission ---------------------------------------------------------------------------

#: The strategies `_SHARING` names, matched as `str.casefold` compares them (RE2 folds case
#: by Unicode's simple folding, which agrees on these letters, the long s U+017F for `s` included).
_SHARING_RE2 = "^(?i)(timeslicing|mps)$"


def _admission(target: AdmissionTarget) -> Admission:
    """Opaque configs of claims, templates and DeviceClasses whose parameters say
    sharing.strategy TimeSlicing or MPS.  Parameters are any JSON object the driver reads
    (the API server checks only that it is one), so every step is type-checked before it is
    read: a value of another type shares nothing, as in `check`, rather than erroring."""
    configs = (
        "(object.kind == 'DeviceClass' ? "
        "(has(object.spec) && has(object.spec.config) ? object.spec.config : []) : "
        "object.kind == 'ResourceClaimTemplate' ? "
        "(has(object.spec) && has(object.spec.spec) && has(object.spec.spec.devices) && "
        "has(object.spec.spec.devices.config) ? object.spec.spec.devices.config : []) : "
        "(has(object.spec) && has(object.spec.devices) && has(object.spec.devices.config) ? "
        "object.spec.devices.config : []))"
    )
    parameters = "c.opaque.parameters"
    shares = (
        f"has(c.opaque) && has({parameters}) && type({parameters}) == map && "
        f"has({parameters}.sharing) && type({parameters}.sharing) == map && "
        f"has({parameters}.sharing.strategy) && type({parameters}.sharing.strategy) == string && "
        f"{parameters}.sharing.strategy.matches('{_SHARING_RE2}')"
    )
    sharing = "variables.sharing[0].opaque.parameters"
    kind = f"(has({sharing}.kind) && type({sharing}.kind) == string ? {sharing}.kind : 'opaque configuration')"
    return Admission(
        kinds=tuple(sorted(KINDS)),
        variables=(("sharing", f"{configs}.filter(c, {shares})"),),
        validations=(
            Validation(
                expression="size(variables.sharing) == 0",
                message="an opaque device configuration shares the device in time (sharing.strategy TimeSlicing "
                "or MPS)",
                message_expression=f"{kind} + ' shares the device in time (sharing.strategy: ' + "
                f"{sharing}.sharing.strategy + ')'",
            ),
        ),
    )


ADMISSION = _admission
