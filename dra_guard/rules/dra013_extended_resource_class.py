"""DRA013: accelerator DeviceClasses that any pod can ask for by an extended resource name."""

from __future__ import annotations

from collections.abc import Iterator

from dra_guard.contract.catalog import ACCELERATOR_DRIVERS, DEVICE_CLASSES, NON_ACCELERATOR_DRIVERS
from dra_guard.contract.catalog import NON_ACCELERATOR_CLASSES as KNOWN_NON_ACCELERATOR_CLASSES
from dra_guard.contract.findings import Severity
from dra_guard.model.manifest import cel_expressions, get_path, is_dra_object
from dra_guard.ruleapi.admission_form import Admission, AdmissionTarget, Validation, selector_matches, string_list
from dra_guard.ruleapi.config import EXTRA_CLASSES, NON_ACCELERATOR_CLASSES
from dra_guard.ruleapi.context import Context, Resource, Violation
from dra_guard.ruleapi.declarations import Example
from dra_guard.ruleapi.device_classes import class_pin, driver_pattern, is_accelerator_class, overridable

ID = "DRA013"
NAME = "extended-resource-class"
SEVERITY = Severity.HIGH
SUMMARY = "An accelerator DeviceClass must not map an extended resource name (spec.extendedResourceName)."
RATIONALE = (
    "With spec.extendedResourceName (KEP-5004: beta and on by default in Kubernetes 1.36, GA in 1.37), any "
    "pod in any namespace that puts the name in its resources (nvidia.com/gpu: 1) gets a device of the class "
    "through a claim the scheduler generates for it: no ResourceClaimTemplate, so no exclusivity guard, "
    "sanitization declaration, isolation tag or profile pin of its own, only what the class's selector "
    "says. Every request that reaches the class that way escapes the claim rules; DRA001 reports the "
    "requests it can see, this rule the door itself. NVIDIA's chart sets nvidia.com/gpu on gpu.nvidia.com "
    "wherever it renders resource.k8s.io/v1 (since v25.12.0), Intel's charts set intel.com/gpu and "
    "intel.com/gaudi with enableDRAExtendedResources. The implicit name deviceclass.resource.kubernetes.io/"
    "<class> exists for every class while the DRAExtendedResource feature gate is on; requests for it are "
    "DRA001's. Classes listed under non-accelerator-classes (NICs, IMEX channels) are not reported, nor a "
    "class dra-guard does not know whose own selector fixes a NIC's or a CPU's driver in a top-level && "
    "conjunct (device.driver == \"dra.net\" && ..., as DRANET's and AWS's EFA classes are written). A NIC "
    "class dra-guard knows only by the name DRANET's examples give it (rdma, dranet, ...) is reported when "
    "its selector fixes an accelerator's driver (gpu.nvidia.com, tpu.google.com, ...)."
)
REMEDIATION = (
    "Remove spec.extendedResourceName from the class (NVIDIA's chart has no value for it: patch the rendered "
    "class; Intel's charts: leave enableDRAExtendedResources false) and give workloads ResourceClaimTemplates; "
    "on a cluster with one tenant, waive it with dra-guard.io/ignore-DRA013 and the reason."
)
KINDS = frozenset({"DeviceClass"})
CROSS_OBJECT = False
WAIVABLE = True
OPTIONS = ()
_CLASS = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: %s
spec:
  selectors:
  - cel:
      expression: "%s"%s
"""
_GPU = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
EXAMPLES = (
    Example(
        title="NVIDIA's chart on resource.k8s.io/v1: nvidia.com/gpu hands out whole GPUs",
        manifests=_CLASS % ("gpu.nvidia.com", _GPU, "\n  extendedResourceName: nvidia.com/gpu"),
        findings=("DeviceClass/gpu.nvidia.com#/spec/extendedResourceName",),
    ),
    Example(
        title="The same class without the mapping: only claims reach it",
        manifests=_CLASS % ("gpu.nvidia.com", _GPU, ""),
    ),
    Example(
        title="A NIC class the configuration says is no accelerator",
        manifests=_CLASS
        % ("sriov-nic", "device.driver == 'sriov.example.com'", "\n  extendedResourceName: example.com/vf"),
        config={"non-accelerator-classes": ["sriov-nic"]},
    ),
)


def check(resource: Resource, context: Context) -> Iterator[Violation]:
    if not is_dra_object(resource.obj):
        return
    mapped = get_path(resource.obj, ("spec", "extendedResourceName"))
    if not isinstance(mapped, str) or not mapped:
        return
    selectors = cel_expressions(get_path(resource.obj, ("spec", "selectors")))
    # The object is the class: a class neither the configuration nor the catalog knows is
    # no accelerator when its own selector fixes a NIC's or a CPU's driver (DRANET's EFA
    # classes: `device.driver == "dra.net" && ...`), as every other rule judges it.
    if not is_accelerator_class(resource.name, context.config, selectors):
        return
    # The object is the class: its own selectors are what the generated claims get.
    pinned = class_pin(context.config.device_class(resource.name), selectors)
    pin = f"only this class's own pin ({pinned})" if pinned else "no profile pin"
    yield Violation(
        ("spec", "extendedResourceName"),
        f"maps extended resource {mapped!r}: any pod of any namespace that asks for it gets a "
        f"{resource.name} device through a claim the scheduler generates, with no claim template "
        f"(no exclusivity guard, sanitization declaration or isolation tag) and {pin}",
        evidence=(("metadata", "name"), ("spec", "selectors")),
    )


def _admission(target: AdmissionTarget) -> Admission:
    configured: frozenset[str] = target.config.get(NON_ACCELERATOR_CLASSES)
    exempt = sorted({*KNOWN_NON_ACCELERATOR_CLASSES, *configured})
    mapped = "has(object.spec) && has(object.spec.extendedResourceName) && object.spec.extendedResourceName != ''"
    # A NIC or CPU class the catalog knows by its conventional name (`rdma`) is one unless its
    # own selector fixes an accelerator driver (`overridable`): the same pattern, GPU drivers.
    by_name = [name for name in exempt if not overridable(name, target.config)]
    named = sorted(set(exempt) - set(by_name))
    # A class neither the configuration nor the catalog knows is decided by its own selector,
    # as `is_accelerator_class` decides it: one pattern for every NIC and CPU driver.  Not a
    # class known by its conventional name: only the GPU drivers' pattern decides that one.
    known = sorted({*DEVICE_CLASSES, *target.config.get(EXTRA_CLASSES), *named})
    by_selector = (
        f"object.metadata.name != '' && !(object.metadata.name in {string_list(known)}) && "
        + selector_matches("object.spec", driver_pattern(NON_ACCELERATOR_DRIVERS))
    )
    unless_accelerator = (
        f"object.metadata.name in {string_list(named)} && "
        f"!({selector_matches('object.spec', driver_pattern(ACCELERATOR_DRIVERS))})"
    )
    exempt_name = (
        f"has(object.metadata.name) && (object.metadata.name in {string_list(by_name)} || "
        f"({unless_accelerator}) || ({by_selector}))"
    )
    return Admission(
        kinds=("DeviceClass",),
        validations=(
            Validation(
                expression=f"!({mapped}) || ({exempt_name})",
                message="an accelerator DeviceClass maps an extended resource name: any pod can take its "
                "devices without a claim template",
                message_expression="'DeviceClass maps extended resource ' + object.spec.extendedResourceName + "
                "': any pod of any namespace can take its devices without a claim template'",
            ),
        ),
    )


ADMISSION = _admission
