"""DRA001: accelerators requested as legacy extended resources."""

from __future__ import annotations

from collections.abc import Iterator
from fnmatch import fnmatchcase

from dra_guard.contract.accelerator_names import (
    SCHEDULER_SHARING_ANNOTATIONS,
    admission_tests,
    family_of,
    vendor_domain,
)
from dra_guard.contract.catalog import (
    CHART_EXTENDED_RESOURCES,
    LEGACY_RESOURCE_NAMES,
    LEGACY_RESOURCE_PREFIXES,
    is_legacy_resource,
)
from dra_guard.contract.findings import Severity
from dra_guard.contract.runtime_devices import (
    CDI_ANNOTATION,
    NAMES_NO_DEVICE,
    VISIBLE_DEVICES,
    cdi_annotation_keys,
    visible_devices_asked,
)
from dra_guard.model.extended_resources import (
    KUBEVIRT_DEVICE_LISTS,
    LIMIT_RANGE_DEFAULTS,
    REQUIREMENT_SECTIONS,
    Asked,
    Unverifiable,
    asked_resources,
)
from dra_guard.model.manifest import Path, mapping
from dra_guard.model.pod_templates import PodSpecView
from dra_guard.ruleapi.admission_form import (
    POD_KINDS,
    Admission,
    AdmissionTarget,
    Validation,
    containers,
    non_accelerator_classes,
    pod_metadata,
    pod_spec,
    string,
    string_list,
)
from dra_guard.ruleapi.config import EXTENDED_RESOURCE_CLASSES, Config
from dra_guard.ruleapi.context import Context, Pending, Resolved, Resource, Violation
from dra_guard.ruleapi.declarations import Example
from dra_guard.ruleapi.device_classes import class_pin, overridable, selectors_of
from dra_guard.ruleapi.options import STRING_SET, Option

ID = "DRA001"
NAME = "legacy-extended-resource"
SEVERITY = Severity.CRITICAL
SUMMARY = "Accelerators must be requested through DRA claims, not extended resources such as nvidia.com/gpu."
RATIONALE = (
    "Device-plugin extended resources (nvidia.com/gpu, nvidia.com/mig-*, google.com/tpu, ...) carry no "
    "profile pin, no exclusivity or sanitization contract and no isolation tag; nothing in the request "
    "says what the device's memory held before. DRA-backed extended resources (KEP-5004; beta and on by "
    "default in Kubernetes 1.36, GA in 1.37) are no better: deviceclass.resource.kubernetes.io/<class> "
    "(unless the class is no accelerator: listed under non-accelerator-classes, or a class dra-guard does not "
    "know whose DeviceClass among the checked objects fixes a NIC's or a CPU's driver), and any name a "
    "DeviceClass maps with spec.extendedResourceName (DeviceClasses among the checked "
    "objects, or listed under extended-resource-classes), are allocated through a claim the scheduler "
    "generates per pod, with no claim template, so no exclusivity guard, sanitization declaration or "
    "isolation tag, and no pin unless the class's own selector pins one (NVIDIA's per-profile classes "
    "such as mig-1g-12gb.gpu.nvidia.com do). nvidia.com/gpu is such a name wherever NVIDIA's chart "
    "(v25.12.0+) renders resource.k8s.io/v1; intel.com/gpu and intel.com/gaudi where Intel's charts set "
    "enableDRAExtendedResources, and no device plugin serves them, so they are reported even without the "
    "class. So are the names other device plugins register, from their source: AMD's mixed partitions "
    "(amd.com/cpx_nps4), every gpu.intel.com/ name (i915_monitoring and xe_monitoring give access to "
    "every GPU of the node), NVIDIA's KubeVirt passthrough and vGPU names (nvidia.com/GA102GL_A10, "
    "nvidia.com/NVIDIA_A10-12Q), and GPU-sharing plugins that hand several tenants one GPU's memory "
    "(HAMi's nvidia.com/gpumem and gpucores, huawei.com/Ascend*, metax-tech.com/*, volcano.sh/vgpu-*, "
    "aliyun.com/gpu-mem, tencent.com/vcuda-*, AWS's k8s.amazonaws.com/vgpu, Koordinator's "
    "koordinator.sh/gpu-core, gpu-memory-ratio and the rest of its GPU shares); GKE's Cloud TPU names "
    "(cloud-tpus.google.com/v2, v3, preemptible-v2, preemptible-v3); and KAI Scheduler's gpu-fraction "
    "and gpu-memory pod annotations, which share a GPU with no resource at all; GPUs the NVIDIA container "
    "runtime gives a container that asks for none: an NVIDIA_VISIBLE_DEVICES variable in its env naming "
    "devices (anything but unset, empty, void or none; from valueFrom, fail closed), which the toolkit honours "
    "for unprivileged containers by default, and the pod annotations nvidia.cdi.k8s.io/container.<name>, "
    "nvidia.cdi.k8s.io/pod and nvidia.cdi.k8s.io, whose CDI devices the toolkit's NRI plugin injects (an "
    "image's own ENV is not in the manifest: only the node's toolkit configuration closes that). A name under an "
    "accelerator vendor's domain (nvidia.com/, amd.com/, habana.ai/, cloud-tpus.google.com/, ...) that "
    "dra-guard does not know, and no DeviceClass maps, is "
    "unverifiable (medium), fail closed: allowed-extended-resources lists names that are not accelerators "
    "(NVIDIA's network operator's NICs under nvidia.com/ are known). Requests are found where Kubernetes "
    "reads them: containers and pod-level resources of every pod template (built-in workloads, JobSet, "
    "LeaderWorkerSet, Kubeflow, Ray, Argo, KServe, and pod-spec-shaped mappings of any other kind); a "
    "LimitRange's default and defaultRequest, and for containers its max and min, which the API server "
    "turns into defaults (maxLimitRequestRatio too, fail closed); in kinds outside Kubernetes' own groups "
    "every mapping shaped as ResourceRequirements, whatever its key (TrainJob's resourcesPerNode), while "
    "limits or requests beside other fields may be a cap, so an accelerator named there is unverifiable "
    "(medium); operators' GPU fields, which they write into the pods' limits (SparkApplication driver.gpu "
    "and executor.gpu, VLLMRuntime resources.gpu and gpuType, a Dynamo component's resources.limits.gpu "
    "and gpuType, its custom and device.resources names); a KubeAI Model's resourceProfile, whose profile's "
    "limits the operator multiplies into the model server container: the profiles of KubeAI's chart ask for "
    "nvidia.com/gpu (nvidia-gpu-l4, ...), amd.com/gpu (amd-gpu-mi300x) or google.com/tpu (google-tpu-v5e-1x1, "
    "...), a cpu profile or a multiple of 0 for nothing, and any other profile, defined in the operator's Helm "
    "values, is unverifiable (medium); a KAITO Workspace's inference.preset and tuning.preset (an "
    "InferenceSet's template, a MultiRoleInference's model), whose pods KAITO gives nvidia.com/gpu "
    "(nvidia.com/mig-<profile> under a mig partition with a profile) though no field names it; KubeVirt "
    "gpus[] and accelerator hostDevices[] "
    "deviceNames; Argo "
    "podSpecPatch and resource-manifest strings, read after filling in their {{...}} placeholders as Argo "
    "does, and a kustomization's patches (inline, and the files it names; in JSON 6902 operations also "
    "the path, .../limits/nvidia.com~1gpu), all read as kubectl reads YAML (what cannot be read, a "
    "resource name that holds a placeholder, or a placeholder that is a whole value and could add fields, "
    "is unverifiable, medium); so is a resource name that is a {{...}} placeholder anywhere else (a Helm "
    "template read unrendered). ResourceQuota, Kueue quotas, Karpenter NodePool limits and NodeClaim "
    "resources (the node it launches), and KAI Scheduler Queue resources only cap, and are not requests. "
    'A quantity of zero, however written (0, "0", 0Gi), or null asks for nothing: the scheduler and the '
    "kubelet's device manager skip it, so a LimitRange whose max is 0 (how a namespace forbids GPUs) "
    "passes; in a kustomization's JSON 6902 patches, remove and test write nothing, and an add or "
    "replace of a zero quantity asks for nothing. Lists are read as kubectl reads them: a List inside "
    "a List is refused by kubectl, so it is an input error, not a check of its items."
)
REMEDIATION = (
    "Remove the extended resource and request the slice through a ResourceClaimTemplate: "
    "IsolatedAcceleratorWorkload in cdk8s or Pulumi builds both objects for you."
)
#: Every kind: a resources mapping can sit anywhere, in CRDs too.
KINDS = None
# A name a DeviceClass maps is known only once every DeviceClass of the input is read.
CROSS_OBJECT = True
WAIVABLE = True
EXTRA_LEGACY_RESOURCES = Option(
    key="extra-legacy-resources",
    type=STRING_SET,
    default=frozenset(),
    doc="More extended-resource names that request accelerators (a vendor's device plugin dra-guard does "
    "not know), reported like nvidia.com/gpu.",
)
ALLOWED_EXTENDED_RESOURCES = Option(
    key="allowed-extended-resources",
    type=STRING_SET,
    default=frozenset(),
    doc="Extended-resource names under an accelerator vendor's domain (nvidia.com/, amd.com/, ...) that "
    "request no accelerator (a NIC plugin's names), which would otherwise be reported as unverifiable; "
    "shell-style patterns such as nvidia.com/rdma_* allowed. Names dra-guard knows as accelerators stay "
    "reported (waive those with dra-guard.io/ignore-DRA001 and a reason).",
)
OPTIONS = (EXTRA_LEGACY_RESOURCES, ALLOWED_EXTENDED_RESOURCES)
EXAMPLES = (
    Example(
        title="GPUs from the NVIDIA container runtime, asked for by environment and by CDI annotation",
        manifests="""\
apiVersion: v1
kind: Pod
metadata:
  name: trainer
  namespace: team-a
  annotations: {nvidia.cdi.k8s.io/container.sidecar: nvidia.com/gpu=all}
spec:
  containers:
  - name: main
    image: pytorch
    env:
    - {name: NVIDIA_VISIBLE_DEVICES, value: all}
  - name: sidecar
    image: exporter
    env:
    - {name: NVIDIA_VISIBLE_DEVICES, value: void}
""",
        findings=(
            "Pod/trainer#/spec/containers/0/env/0",
            "Pod/trainer#/metadata/annotations/nvidia.cdi.k8s.io~1container.sidecar",
        ),
    ),
    Example(
        title="A pod asks for a whole GPU through the device plugin",
        manifests="""\
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: team-a}
spec:
  containers:
  - name: main
    image: pytorch
    resources:
      limits: {nvidia.com/gpu: 1}
""",
        findings=("Pod/trainer#/spec/containers/0/resources/limits/nvidia.com~1gpu",),
    ),
    Example(
        title="A MIG slice through the device plugin, hidden in a CRD's pod template",
        manifests="""\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: sweep, namespace: team-a}
spec:
  replicatedJobs:
  - name: workers
    template:
      spec:
        template:
          spec:
            containers:
            - name: main
              image: jax
              resources:
                requests: {nvidia.com/mig-1g.10gb: 1}
""",
        findings=(
            "JobSet/sweep#/spec/replicatedJobs/0/template/spec/template/spec/containers/0/resources/requests"
            "/nvidia.com~1mig-1g.10gb",
        ),
    ),
    Example(
        title="A resource name the configuration lists under extra-legacy-resources",
        manifests="""\
apiVersion: v1
kind: Pod
metadata: {name: inference, namespace: team-a}
spec:
  containers:
  - name: main
    image: server
    resources:
      limits: {example.com/gpu: 1}
""",
        findings=("Pod/inference#/spec/containers/0/resources/limits/example.com~1gpu",),
        config={"extra-legacy-resources": ["example.com/gpu"]},
    ),
    Example(
        title="A LimitRange that gives every container of the namespace a GPU",
        manifests="""\
apiVersion: v1
kind: LimitRange
metadata: {name: gpu-default, namespace: team-a}
spec:
  limits:
  - type: Container
    default: {nvidia.com/gpu: 1}
""",
        findings=("LimitRange/gpu-default#/spec/limits/0/default/nvidia.com~1gpu",),
    ),
    Example(
        title="A name a DeviceClass in the input maps onto GPUs (extendedResourceName)",
        manifests="""\
apiVersion: v1
kind: Pod
metadata: {name: inference, namespace: team-a}
spec:
  containers:
  - name: main
    image: server
    resources:
      limits: {example.com/gpu: 1}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: example-gpu}
spec:
  extendedResourceName: example.com/gpu
  selectors:
  - cel: {expression: "device.driver == 'gpu.example.com'"}
""",
        findings=("Pod/inference#/spec/containers/0/resources/limits/example.com~1gpu",),
    ),
    Example(
        title="A KubeAI Model whose resource profile is the chart's L4 GPU profile",
        manifests="""\
apiVersion: kubeai.org/v1
kind: Model
metadata: {name: llama, namespace: team-a}
spec:
  url: hf://meta-llama/Llama-3.1-8B-Instruct
  engine: VLLM
  resourceProfile: nvidia-gpu-l4:1
""",
        findings=("Model/llama#/spec/resourceProfile",),
    ),
    Example(
        title="A KAITO Workspace that runs a preset model, on GPUs KAITO requests through the device plugin",
        manifests="""\
apiVersion: kaito.sh/v1beta1
kind: Workspace
metadata: {name: phi-4-mini, namespace: team-a}
resource:
  instanceType: Standard_NC24ads_A100_v4
  labelSelector:
    matchLabels: {apps: phi-4}
inference:
  preset:
    name: phi-4-mini-instruct
""",
        findings=("Workspace/phi-4-mini#/inference/preset",),
    ),
    Example(
        title="A KubeVirt VM that passes a GPU through the device plugin",
        manifests="""\
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: vm, namespace: team-a}
spec:
  template:
    spec:
      domain:
        devices:
          gpus:
          - {name: gpu1, deviceName: nvidia.com/GA102GL_A10}
""",
        findings=("VirtualMachine/vm#/spec/template/spec/domain/devices/gpus/0/deviceName",),
    ),
    Example(
        title="CPU and memory only",
        manifests="""\
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: team-a}
spec:
  containers:
  - name: main
    image: nginx
    resources:
      limits: {cpu: "1", memory: 1Gi, example.com/gpu: 1}
""",
    ),
)
# KEP-5004: a DeviceClass is also requestable as this extended resource (implicit claim).
IMPLICIT_DRA_PREFIX = "deviceclass.resource.kubernetes.io/"
IMPLICIT_CLAIM = "the scheduler allocates it through a claim it generates per pod"
#: What a request through an extended resource does without, compared with a claim template.
LOST = "no claim template, so no exclusivity guard, sanitization declaration or isolation tag"
#: Device-plugin domains whose host devices are accelerators (KubeVirt names them
#: `nvidia.com/<GPU model>`, `nvidia.com/GRID_<vGPU type>`, ...).
ACCELERATOR_DEVICE_DOMAINS = ("nvidia.com/", "amd.com/", "habana.ai/", "gpu.intel.com/", "aws.amazon.com/neuron")


def check(resource: Resource, context: Context) -> Iterator[Violation | Pending]:
    extra = context.config.get(EXTRA_LEGACY_RESOURCES)
    # A kustomization's document arrives with its patch files read (dra_guard.read.loader);
    # one from stdin, or given as an object, has none.
    patch_files = getattr(resource.document, "patch_files", None)
    for asked in asked_resources(resource.obj, resource.pods, patch_files):
        if isinstance(asked, Unverifiable):
            yield Violation(
                asked.path,
                f"cannot verify what this requests: {asked.why}; a legacy accelerator request could hide there",
                severity=Severity.MEDIUM,
                evidence=(),
            )
            continue
        name, path = asked.name, asked.path
        if asked.section in KUBEVIRT_DEVICE_LISTS:
            if (
                asked.section == "gpus"
                or is_legacy_resource(name, extra)
                or name.startswith(ACCELERATOR_DEVICE_DOMAINS)
            ):
                message = f"passes the device-plugin accelerator {name!r} through to the VM ({asked.section})"
                yield Violation(path, message, evidence=())
            continue
        if asked.uncertain:
            # A limits/requests mapping beside other fields of a CRD: a request or a cap.
            if is_legacy_resource(name, extra) or _unknown_vendor_name(context, name):
                yield Violation(
                    path,
                    f"cannot verify whether {name!r} here is requested or capped: a {asked.section} mapping "
                    f"{asked.uncertain} is not ResourceRequirements; if it requests, it is a legacy accelerator "
                    "request",
                    severity=Severity.MEDIUM,
                    evidence=(),
                )
            continue
        if is_legacy_resource(name, extra):
            # A finding rests on the resource name at its path alone (evidence=()); a
            # DeviceClass further on may only say that DRA serves the name.  The facts
            # repeat across workloads (the same container asking for the same resource):
            # they are kept once (context.shared).
            where, how = _place(asked)
            args = (context, name, f"{where}legacy accelerator resource {name!r}{_how(asked)}", where, how)
            yield Pending(path, _legacy, context.shared(args), evidence=())
        elif name.startswith(IMPLICIT_DRA_PREFIX):
            device_class = name[len(IMPLICIT_DRA_PREFIX) :]
            if context.config.is_accelerator(device_class) or overridable(device_class, context.config):
                where, how = _place(asked)
                yield Pending(path, _implicit, context.shared((context, name, device_class, where, how)), evidence=())
        elif name in CHART_EXTENDED_RESOURCES:
            where, how = _place(asked)
            yield Pending(path, _chart_mapped, context.shared((context, name, where, how)), evidence=())
        elif "/" in name:
            # Any other qualified name may be one a DeviceClass maps, here or further on;
            # under an accelerator vendor's domain it is unverifiable unless one does.
            unknown = _unknown_vendor_name(context, name)
            where, how = _place(asked)
            yield Pending(path, _mapped, context.shared((context, name, where, how, unknown)), evidence=())
    # An annotation written once for many pods (an Argo workflow's `spec.podMetadata`) is
    # reported once, at the place it is written.
    reported: set[Path] = set()
    for pod in resource.pods:
        for violation in (*_scheduler_shares(pod), *_runtime_devices(pod)):
            if violation.path not in reported:
                reported.add(violation.path)
                yield violation


def _unknown_vendor_name(context: Context, name: str) -> str | None:
    """The accelerator vendor domain of a name no table knows and the configuration does not
    allow (`allowed-extended-resources`), if it is under one."""
    domain = vendor_domain(name)
    if domain is None:
        return None
    allowed = context.config.get(ALLOWED_EXTENDED_RESOURCES)
    if name in allowed or any(fnmatchcase(name, pattern) for pattern in allowed):
        return None
    return domain


def _scheduler_shares(pod: PodSpecView) -> Iterator[Violation]:
    """GPU shares asked for by annotation (KAI Scheduler), with no resource at all."""
    annotations = mapping(pod.template_metadata.get("annotations"))
    if not annotations:
        return
    for key, what in SCHEDULER_SHARING_ANNOTATIONS.items():
        written = pod.annotation_path(key)
        if written is not None:
            value = annotations[key]
            yield Violation(
                written,
                f"asks the scheduler for a share of a GPU by annotation ({what}, {key}: {value!r}), with no "
                f"resource and no claim: {LOST}, and the GPU's memory is shared with the other pods on it",
                evidence=(),
            )


def _runtime_devices(pod: PodSpecView) -> Iterator[Violation]:
    """GPUs the NVIDIA container runtime gives a container that asks for none: by its
    NVIDIA_VISIBLE_DEVICES variable, or by the pod's CDI annotation for it
    (contract.runtime_devices)."""
    for container in pod.containers:
        for index, why in visible_devices_asked(container.container):
            yield Violation(
                (*container.path, "env", index),
                f"container {container.name!r}{pod.where} {why}: where the node's NVIDIA container runtime "
                "honours the variable (its default), the container gets those GPUs with no resource and no claim "
                f"({LOST}); leave it unset or `void` and request the device through a DRA claim (a node "
                "component that must see every GPU, such as NVIDIA's device plugin, is waived with "
                "dra-guard.io/ignore-DRA001 on its pod template)",
                evidence=(),
            )
    annotations = mapping(pod.template_metadata.get("annotations"))
    if not annotations:
        return
    # A container's key rests on that container's name too; the pod's keys on nothing else.
    keys: dict[str, tuple[Path, ...]] = {}
    for container in pod.containers:
        own, *pod_wide = cdi_annotation_keys(container.name)
        keys.setdefault(own, ((*container.path, "name"),))
        for key in pod_wide:
            keys.setdefault(key, ())
    for key, evidence in keys.items():
        written = pod.annotation_path(key)
        if written is not None:
            yield Violation(
                written,
                f"names CDI devices by annotation ({key}: {annotations[key]!r}), which the NVIDIA container "
                "toolkit's NRI plugin injects into the container where it runs, with no resource and no claim "
                f"({LOST}); request the device through a DRA claim",
                evidence=evidence,
            )


def _where(asked: Asked) -> str:
    """How the finding's message starts: who asks."""
    if asked.inner:
        return f"{asked.holder} requests (at {asked.inner} inside it) "
    if asked.section in REQUIREMENT_SECTIONS:
        return "requests "
    return f"LimitRange {asked.section} names "


def _place(asked: Asked) -> tuple[str, str]:
    """How a message starts (`_where`) and what follows the name in it (nothing more for
    plain limits and requests).  Worked out only for names that may be reported: most
    names an object asks for are cpu and memory."""
    return _where(asked), "" if asked.section in REQUIREMENT_SECTIONS and not asked.via else _how(asked)


def _how(asked: Asked) -> str:
    if asked.via:
        return f" ({asked.via})"
    if asked.section in REQUIREMENT_SECTIONS:
        return f" in {asked.section}"
    if asked.section in LIMIT_RANGE_DEFAULTS:
        return ", which the API server adds to every container of the namespace that does not set it"
    if asked.section == "maxLimitRequestRatio":
        return " (a ratio: it adds nothing, but it makes the namespace ready for device-plugin accelerators)"
    source = "default" if asked.section == "max" else "defaultRequest"
    return f"; for containers the API server copies {asked.section} into {source}, so every container gets it"


def _lost(context: Context, device_class: str) -> str:
    """What a request through an extended resource does without, for this class."""
    known = context.config.device_class(device_class)
    selectors = selectors_of(device_class, context.config, context.class_selectors(device_class))
    pinned = class_pin(known, selectors.expressions) if selectors is not None else None
    pin = f"only the class's own pin, {pinned}" if pinned else "no profile pin (the class pins none)"
    return f"{IMPLICIT_CLAIM}: {LOST}, and {pin}"


def _mapping_class(context: Context, name: str) -> tuple[str, bool] | None:
    """The accelerator DeviceClass that serves `name` (the one created last wins, v1 types.go
    `extendedResourceName`), and whether the configuration alone says so."""
    configured = context.config.extended_resource_class(name)
    classes = [cls for cls in context.extended_resource_classes(name) if context.is_accelerator_class(cls)]
    if not classes:
        return None
    chosen = classes[-1]
    return chosen, chosen == configured and len(classes) == 1


def _legacy(context: Context, name: str, legacy: str, where: str, how: str) -> Resolved:
    mapped = _mapping_class(context, name)
    if mapped is not None:
        device_class, _ = mapped
        message = f"{where}{name!r}{how}, which DeviceClass {device_class!r} maps (extendedResourceName): "
        return Resolved(message + _lost(context, device_class), cross_object=False)
    family = None if name in LEGACY_RESOURCE_NAMES else family_of(name)
    if family is not None:
        legacy += f" ({family.what}{'; the pods sharing one device share its memory' if family.shares else ''})"
    chart = CHART_EXTENDED_RESOURCES.get(name)
    if chart is not None:
        device_class, chart_mapping = chart
        legacy += (
            f" (served by a device plugin, or by DeviceClass {device_class!r} where its driver's chart maps it, "
            f"{chart_mapping.when}): {LOST}, and no profile pin"
        )
    return Resolved(legacy, cross_object=False)


def _implicit(context: Context, name: str, device_class: str, where: str, how: str) -> Resolved | None:
    if not context.is_accelerator_class(device_class):
        # The input's DeviceClass of that name fixes a NIC's or a CPU's driver (a DRANET class
        # named as its user likes): the implicit name asks for no accelerator.  The pod alone
        # gives the finding (its policy decides it so); the class can only clear it.
        return None
    message = f"{where}{name!r}{how}, the extended resource every DeviceClass has (KEP-5004), here {device_class!r}: "
    # A NIC class by name (`rdma`) is an accelerator only by the input's DeviceClass, which
    # the pod's policy cannot see: then the finding is cross-object.
    return Resolved(message + _lost(context, device_class), cross_object=overridable(device_class, context.config))


def _chart_mapped(context: Context, name: str, where: str, how: str) -> Resolved:
    mapped = _mapping_class(context, name)
    if mapped is not None:
        device_class, _ = mapped
        message = f"{where}{name!r}{how}, which DeviceClass {device_class!r} maps (extendedResourceName): "
    else:
        device_class, chart = CHART_EXTENDED_RESOURCES[name]
        message = (
            f"{where}{name!r}{how}, which the {device_class} driver's chart maps to DeviceClass "
            f"{device_class!r} ({chart.when}): "
        )
    # No device plugin serves the name: it is DRA's, or nothing's.
    return Resolved(message + _lost(context, device_class), cross_object=False)


def _mapped(context: Context, name: str, where: str, how: str, unknown_domain: str | None) -> Resolved | None:
    mapped = _mapping_class(context, name)
    if mapped is None:
        if unknown_domain is None or context.extended_resource_classes(name):
            return None  # not a vendor's name, or a (non-accelerator) DeviceClass says what it is
        return Resolved(
            f"{where}{name!r}{how}, which dra-guard cannot verify: a name under {unknown_domain!r}, where device "
            "plugins register accelerators, that dra-guard does not know and no DeviceClass maps; list it "
            "under allowed-extended-resources if it is no accelerator (a NIC), under extra-legacy-resources if "
            "it is one",
            severity=Severity.MEDIUM,
        )
    device_class, configured = mapped
    message = f"{where}{name!r}{how}, which DeviceClass {device_class!r} maps (extendedResourceName): "
    # Mapped by the configuration alone, the object and the configuration decide it.
    return Resolved(message + _lost(context, device_class), cross_object=not configured)


# --- admission ---------------------------------------------------------------------------


def _legacy_name(name: str, config: Config) -> str:
    """CEL: the resource name `name` asks for an accelerator the way `check` says it does.

    The configuration is compiled in: its extra legacy names, the names its
    extended-resource-classes map onto accelerator classes, and its non-accelerator classes
    (whose implicit `deviceclass.resource.kubernetes.io/<class>` names are not accelerators);
    so are the names drivers' charts map (reported with or without their DeviceClass).
    Names that DeviceClasses map are another object's business: the webhook's, at best."""
    non_accelerator = non_accelerator_classes(config)
    mapped = {
        resource
        for resource, device_class in config.get(EXTENDED_RESOURCE_CLASSES).items()
        if device_class not in non_accelerator
    }
    family_names, family_prefixes, family_patterns = admission_tests()
    exact = string_list(
        {
            *LEGACY_RESOURCE_NAMES,
            *family_names,
            *CHART_EXTENDED_RESOURCES,
            *config.get(EXTRA_LEGACY_RESOURCES),
            *mapped,
        }
    )
    # Exact names are a set lookup (free); each prefix costs about 2 units a name, and a
    # pattern is matched only behind its literal prefix.
    prefixes = " || ".join(
        [
            *(f"{name}.startsWith({string(prefix)})" for prefix in (*LEGACY_RESOURCE_PREFIXES, *family_prefixes)),
            *(
                f"({name}.startsWith({string(prefix)}) && {name}.matches({string(pattern)}))"
                for prefix, pattern in family_patterns
            ),
        ]
    )
    implicit = f"{name}.startsWith({string(IMPLICIT_DRA_PREFIX)})"
    if non_accelerator:
        implicit += f" && !({name} in {string_list(IMPLICIT_DRA_PREFIX + cls for cls in non_accelerator)})"
    return f"({name} in {exact} || {prefixes} || ({implicit}))"


def _asks_legacy(quantities: str, key: str, config: Config) -> str:
    """CEL: `key` of the `quantities` map is a legacy name with a quantity that is not zero.
    The API server stores every zero quantity as "0" (Quantity's canonical form), and a
    zero asks for nothing (`asks_nothing`)."""
    return f"({_legacy_name(key, config)} && string({quantities}[{key}]) != '0')"


def _names_legacy(quantities: str, config: Config) -> str:
    """CEL: the (guarded) `quantities` map asks for a legacy resource."""
    return f"(has({quantities}) && {quantities}.exists(k, {_asks_legacy(quantities, 'k', config)}))"


def _first_legacy(owner: str, config: Config) -> str:
    """CEL: the first legacy name asked for in the owner's resources (limits, then requests)."""
    found = " + ".join(
        f"(has({owner}.{section}) ? {owner}.{section}.filter(k, {_asks_legacy(f'{owner}.{section}', 'k', config)}) "
        ": [])"
        for section in REQUIREMENT_SECTIONS
    )
    return f"({found})[0]"


def _admission(target: AdmissionTarget) -> Admission:
    """Legacy names in the containers and the pod-level resources of every built-in kind with
    pods, and in LimitRanges (what their items inject into containers)."""
    config = target.config

    def asks(owner: str) -> str:
        resources = f"{owner}.resources"
        sections = " || ".join(_names_legacy(f"{resources}.{section}", config) for section in REQUIREMENT_SECTIONS)
        return f"(has({resources}) && ({sections}))"

    bounds = " || ".join(_names_legacy(f"l.{field}", config) for field in ("max", "min", "maxLimitRequestRatio"))
    defaults = " || ".join(_names_legacy(f"l.{field}", config) for field in LIMIT_RANGE_DEFAULTS)
    # For type Container (and a type the API server would refuse), bounds become defaults.
    injects = "(!has(l.type) || !(l.type in ['Pod', 'PersistentVolumeClaim']))"
    limit_items = (
        "(object.kind == 'LimitRange' && has(object.spec) && has(object.spec.limits) ? "
        f"object.spec.limits.filter(l, {defaults} || ({injects} && ({bounds}))) : [])"
    )
    shares = " || ".join(f"{string(key)} in variables.meta.annotations" for key in SCHEDULER_SHARING_ANNOTATIONS)
    # contract.runtime_devices, as `_runtime_devices` reads it (a `value: ""` is not stored).
    names_devices = (
        f"e.name == {string(VISIBLE_DEVICES)} && (has(e.valueFrom) || "
        f"(has(e.value) && !(e.value in {string_list(sorted(NAMES_NO_DEVICE))})))"
    )
    cdi_keys = " || ".join(f"{string(key)} in variables.meta.annotations" for key in cdi_annotation_keys("")[1:])
    per_container = (
        f"({containers()}).exists(c, ({string(CDI_ANNOTATION + '/container.')} + c.name) in variables.meta.annotations)"
    )
    return Admission(
        kinds=(*POD_KINDS, "LimitRange"),
        variables=(
            ("pod", pod_spec()),
            ("meta", pod_metadata()),
            ("legacy", f"({containers()}).filter(c, {asks('c')})"),
            ("limits", limit_items),
            ("visible", f"({containers()}).filter(c, has(c.env) && c.env.exists(e, {names_devices}))"),
        ),
        validations=(
            Validation(
                expression="size(variables.legacy) == 0",
                message="a container requests a legacy accelerator resource (an extended resource such as "
                "nvidia.com/gpu); request it through a DRA claim",
                message_expression="'container ' + variables.legacy[0].name + ' requests legacy accelerator "
                "resource ' + "
                + _first_legacy("variables.legacy[0].resources", config)
                + " + '; request it through a DRA claim'",
            ),
            Validation(
                expression=f"!{asks('variables.pod')}",
                message="the pod-level resources request a legacy accelerator resource (an extended resource such "
                "as nvidia.com/gpu); request it through a DRA claim",
            ),
            Validation(
                expression=f"!(has(variables.meta.annotations) && ({shares}))",
                message="the pod asks the scheduler for a share of a GPU by annotation (gpu-fraction or gpu-memory: "
                "KAI Scheduler, Run:ai); request it through a DRA claim",
            ),
            Validation(
                expression="size(variables.visible) == 0",
                message=f"a container sets {VISIBLE_DEVICES}, which gives it GPUs through the NVIDIA container "
                "runtime with no resource and no claim; leave it unset or void and request the device through a "
                "DRA claim",
                message_expression=f"'container ' + variables.visible[0].name + ' sets {VISIBLE_DEVICES}, which "
                "gives it GPUs through the NVIDIA container runtime with no resource and no claim; leave it unset "
                "or void and request the device through a DRA claim'",
            ),
            Validation(
                expression=f"!(has(variables.meta.annotations) && ({cdi_keys} || {per_container}))",
                message=f"the pod names CDI devices by annotation ({CDI_ANNOTATION}), which the NVIDIA container "
                "toolkit's NRI plugin injects with no resource and no claim; request the device through a DRA claim",
            ),
            Validation(
                expression="size(variables.limits) == 0",
                message="a LimitRange gives containers a legacy accelerator resource (an extended resource such as "
                "nvidia.com/gpu)",
            ),
        ),
    )


ADMISSION = _admission
