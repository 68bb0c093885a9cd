"""The vendor catalog, the Kubernetes releases we target and the annotation contract
(README.md, "Isolation tag"), as data.

Everything here is a constant that rules, builders and front ends look up; nothing here
decides anything.  Adding a vendor means adding one ``DeviceClass`` entry (see
docs/architecture.md, "A new vendor").  What each driver publishes was read from its
source at the commit cited next to its entry; tests/fixtures/slices/*.yaml hold devices
written from the same source, and tests/test_catalog.py checks the entries against them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, NamedTuple

from dra_guard.contract.accelerator_names import family_of

#: The standard topology attribute (KEP-4381): the PCIe root complex, `pci<domain>:<bus>`.
#: Drivers *may* publish it; several do only when they can derive it (see the classes).
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"

# DRA attribute names (resource.k8s.io v1 types.go @ v0.36.0): a qualified name's domain is
# a DNS subdomain of at most 63 characters (DeviceMaxDomainLength), the name a C identifier
# of at most 32 (DeviceMaxIDLength).
ATTRIBUTE_DOMAIN_MAX_LENGTH = 63
ATTRIBUTE_NAME_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}")

#: ``resource.k8s.io`` versions we emit, newest first; the first is the default.
RESOURCE_API_VERSIONS = (
    "resource.k8s.io/v1",
    "resource.k8s.io/v1beta2",
    "resource.k8s.io/v1beta1",
    "resource.k8s.io/v1alpha3",
)
DEFAULT_RESOURCE_API_VERSION = RESOURCE_API_VERSIONS[0]
#: A GA version, as kube-apiserver's `--runtime-config=api/ga=true` matches it (`v<N>`; the
#: beta and alpha patterns are `v<N>beta<M>` and `v<N>alpha<M>`: k8s.io/apiserver
#: pkg/server/resourceconfig/helpers.go).
GA_API_VERSION = re.compile(r"[a-z0-9.-]+/v[0-9]+")
#: Versions whose device requests are flat; the others wrap them in ``exactly``.
FLAT_REQUEST_API_VERSIONS = frozenset({"resource.k8s.io/v1beta1", "resource.k8s.io/v1alpha3"})

#: The moments a claim's device memory is promised to be erased (README, "Memory erasure"):
#: when the claim is deallocated, when memory is released (both performed by the driver or
#: the kernel module, not by dra-guard), or before the pod's containers use it, which the
#: scrubber init container performs and DRA016 requires of every pod.
#: The one that dra-guard performs: only for devices the scrubber scrubs (DRA004).
SCRUB_BEFORE_USE = "ScrubBeforeUse"
SANITIZATION_POLICIES = ("WipeOnDeallocate", "ZeroFillMemoryOnRelease", SCRUB_BEFORE_USE)
DEFAULT_SANITIZATION = SANITIZATION_POLICIES[0]

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "Job")

#: Where the pod spec sits in each kind that has pods (CronJob two levels deeper).  The
#: builders wire claims in here and the rules read pods from here: one table for both.
POD_SPEC_PATHS: Mapping[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "PodTemplate": ("template", "spec"),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}

#: The kinds whose controllers make pods from their pod template.  A pod gets the template's
#: labels and annotations and nothing of the controller's own metadata (kubernetes/kubernetes
#: @ 1f8996f8cec98af38ab4cba237421b28c1cef9a3 pkg/controller/controller_utils.go
#: `GetPodFromTemplate`: `getPodsAnnotationSet(template)`; a CronJob's Job gets its
#: jobTemplate's, and the Job's pods their template's), so a waiver on the controller's own
#: metadata never reaches the pods the cluster admits.  A PodTemplate object makes no pods.
POD_CONTROLLER_KINDS = tuple(kind for kind in POD_SPEC_PATHS if kind not in ("Pod", "PodTemplate"))


#: Scheduling objects (scheduling.k8s.io, alpha; KEP-4671, KEP-5729) whose resourceClaims
#: every pod of the group shares.
POD_GROUP_KINDS = ("PodGroup", "Workload")

ANNOTATION_PREFIX = "dra-guard.io/"
SANITIZATION_ANNOTATION = ANNOTATION_PREFIX + "sanitization"
ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION = ANNOTATION_PREFIX + "allow-multiple-allocations"
TENANT_ANNOTATION = ANNOTATION_PREFIX + "tenant"
#: The tenant as a workload label too, so NetworkPolicies and quotas can select on it.
TENANT_LABEL = ANNOTATION_PREFIX + "tenant"
ISOLATION_TAG_ANNOTATION = ANNOTATION_PREFIX + "isolation-tag"
IGNORE_ANNOTATION_PREFIX = ANNOTATION_PREFIX + "ignore-"
#: Characters that print as nothing although Unicode files them as letters (Hangul fillers)
#: or symbols (the blank Braille pattern).
BLANK_LOOKING = "\u115f\u1160\u3164\uffa0\u2800"
#: A visible character as an RE2 class (CEL's `matches`): a letter, digit, punctuation mark
#: or symbol that is not blank-looking. The admission policies and `has_visible_character`
#: decide alike.
VISIBLE_CHARACTER_RE2 = "[\\p{N}\\p{P}]|[^\\P{L}\\x{115F}\\x{1160}\\x{3164}\\x{FFA0}]|[^\\P{S}\\x{2800}]"


def has_visible_character(text: str) -> bool:
    """Whether `text` shows anything: a letter, digit, punctuation mark or symbol. Spaces,
    zero-width and other format characters, controls and combining marks alone are a
    waiver reason nobody can read, so they waive nothing."""
    import unicodedata

    return any(unicodedata.category(character)[0] in "LNPS" and character not in BLANK_LOOKING for character in text)


#: The exclusivity guard: a selector term that makes the scheduler itself refuse devices
#: published with `allowMultipleAllocations: true` (consumable capacity, KEP-5075).  The DRA
#: CEL environment declares `device.allowMultipleAllocations` only with the
#: DRAConsumableCapacity gate on (kubernetes/dynamic-resource-allocation cel/compile.go:
#: `fieldsV134ConsumableCapacity`, selected by `EnableConsumableCapacity` for new
#: expressions); a device that does not set the field reads as false there.
EXCLUSIVITY_GUARD = "device.allowMultipleAllocations == false"


# --- Kubernetes releases ---------------------------------------------------------------


class KubernetesRelease(NamedTuple):
    """What one Kubernetes minor release serves and does by default, as far as we emit or check it."""

    version: str
    #: resource.k8s.io versions that serve ResourceClaims and ResourceClaimTemplates (the
    #: release's official OpenAPI, as kubernetes-validate bundles it), newest first.
    claim_api_versions: tuple[str, ...]
    #: DRAConsumableCapacity: None where the feature does not exist, else whether the gate
    #: is on by default (alpha 1.34, beta and on 1.36; KEP-5075 kep.yaml).
    consumable_capacity_default: bool | None
    #: The namespace label that allows adminAccess (KEP-5018): `DRAAdminNamespaceLabelKey`
    #: in resource/v1beta1 types.go @ v0.33.0, renamed in v1/v1beta1/v1beta2 @ v0.34.0.
    admin_access_label: str
    #: Whether the DynamicResourceAllocation feature gate is on by default: beta and off in
    #: 1.32 and 1.33, GA and on from 1.34 (KEP-4381 kep.yaml).
    dra_enabled_by_default: bool = True
    #: Whether DRAAdminAccess is on by default (KEP-5018: alpha in 1.33, beta from 1.34): where
    #: it is off the API server drops `adminAccess` from a request on create, which is then an
    #: ordinary request.
    admin_access_by_default: bool = True

    @property
    def consumable_capacity_exists(self) -> bool:
        return self.consumable_capacity_default is not None

    @property
    def claim_api_versions_served_by_default(self) -> tuple[str, ...]:
        """The claim versions a cluster serves without `--runtime-config`: the GA ones.

        Beta API versions added since 1.24 are off by default (KEP-3136, checked upstream by
        kubernetes/kubernetes pkg/controlplane/instance_test.go
        TestNoBetaVersionsEnabledByDefault), and every resource.k8s.io beta is newer; alpha
        versions are always off.  So 1.33 serves none, and 1.34+ only `resource.k8s.io/v1`.
        """
        return tuple(version for version in self.claim_api_versions if GA_API_VERSION.fullmatch(version))


_ADMIN_LABEL_1_33 = "resource.k8s.io/admin-access"
_ADMIN_LABEL = "resource.kubernetes.io/admin-access"
_SERVED_1_33 = ("resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1", "resource.k8s.io/v1alpha3")
_SERVED_1_34 = ("resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1")

KUBERNETES_RELEASES: Mapping[str, KubernetesRelease] = MappingProxyType(
    {
        release.version: release
        for release in (
            KubernetesRelease(
                "1.33",
                _SERVED_1_33,
                None,
                _ADMIN_LABEL_1_33,
                dra_enabled_by_default=False,
                admin_access_by_default=False,
            ),
            KubernetesRelease("1.34", _SERVED_1_34, False, _ADMIN_LABEL),
            KubernetesRelease("1.35", _SERVED_1_34, False, _ADMIN_LABEL),
            KubernetesRelease("1.36", _SERVED_1_34, True, _ADMIN_LABEL),
            KubernetesRelease("1.37", _SERVED_1_34, True, _ADMIN_LABEL),
        )
    }
)
KUBERNETES_VERSIONS = tuple(KUBERNETES_RELEASES)
DEFAULT_KUBERNETES_VERSION = "1.36"


def exclusivity_guard_compiles(release: KubernetesRelease, consumable_capacity: bool | None) -> bool:
    """Whether `EXCLUSIVITY_GUARD` compiles on `release`, with the gate as the user states it
    (None: the release's default)."""
    if release.consumable_capacity_default is None:
        return False
    return release.consumable_capacity_default if consumable_capacity is None else consumable_capacity


# --- device classes ------------------------------------------------------------------

Publication = Literal["always", "conditional"]


class TopologyAttribute(NamedTuple):
    """An attribute a `matchAttribute` constraint can align several devices of a class on."""

    #: Qualified name (`<domain>/<name>`).
    name: str
    #: "always": every device of the class carries it; "conditional": only some nodes'
    #: devices do, and a device without it is never chosen for such a constraint.
    published: Publication
    #: When it is there, and what it means; shown in messages and docs.
    note: str


# MIG profile names as NVIDIA's driver publishes them in the `profile` attribute:
# go-nvlib MigProfileInfo.String(), `%dg.%dgb` plus at most one of `+me`, `+me.all`, `+gfx`,
# `-me`; the driver skips profiles whose compute and GPU slices differ, so `Nc.Mg.Xgb` is
# never published (NVIDIA/k8s-dra-driver-gpu @ 22407113, cmd/gpu-kubelet-plugin/nvlib.go).
MIG_PROFILE_PATTERN = re.compile(r"[1-9][0-9]?g\.[1-9][0-9]{0,3}gb(?:\+me\.all|\+me|-me|\+gfx)?")
#: MIG instances one GPU holds at most (7 on A100/H100/GH200/B200, of the 1g profiles).
MIG_SLICES_PER_GPU = 7

# TPU generations as the driver publishes them in `tpuGen`: AcceleratorGen(label) returns a
# new-style label (`tpu7x`) verbatim, else one of hardware.go tpuGenerationFamilies
# (kubernetes-sigs/dra-driver-google-tpu @ f5a9d8c8, cmd/tpu-dra-kubeletplugin/util.go).
TPU_GENERATIONS = ("v3", "v4", "v4lite", "v5lite", "v5litepod", "v5p", "v6e")
TPU_GEN_PATTERN = re.compile(r"v3|v4|v4lite|v5lite|v5litepod|v5p|v6e|tpu[0-9]+[a-z]?")

# AMD partition profiles: `<compute>_<memory>` lower-cased from sysfs current_compute_partition
# and current_memory_partition (ROCm/k8s-gpu-dra-driver @ 26224272, pkg/amdgpu/amdgpu.go); the
# modes are those amdgpu documents (AMD SMI "GPU partitioning": SPX/DPX/TPX/QPX/CPX, NPS1/2/4/8).
AMD_PARTITION_PROFILE_PATTERN = re.compile(r"(?:spx|dpx|tpx|qpx|cpx)_nps[1248]")

_INTEL_GPU_MODELS = (
    # intel/intel-resource-drivers-for-kubernetes @ 1da939fa, pkg/gpu/device/models.go; any
    # other PCI id publishes `Unknown`.  Not enforced: the table grows with new parts.
    "A30M", "A310", "A380", "A40/A50", "A580", "A60", "A60M", "A750", "A770", "B50", "B570", "B580",
    "B60", "B65", "B70", "B370", "B390", "Flex 140", "Flex 170", "Max 1100", "Max 1450", "Max 1550",
    "Alder Lake-P", "Raptor Lake-P", "Arrow Lake-S",
)  # fmt: skip

_NVIDIA = "NVIDIA/k8s-dra-driver-gpu @ 22407113 (v0.4.0)"
_PCIE_ROOT_WHEN_DERIVABLE = TopologyAttribute(
    PCIE_ROOT,
    "conditional",
    "published only where the driver can derive it from sysfs (not on Hyper-V guests, for example); "
    "a claim for more devices than one root complex holds never allocates with it",
)


class ChartExtendedResource(NamedTuple):
    """An extended resource name a driver's chart maps to its DeviceClass (KEP-5004): a pod
    that asks for it gets a device of the class through a claim the scheduler generates."""

    name: str
    #: Whether the chart sets it without being asked.
    by_default: bool
    #: When the chart sets it.
    when: str


@dataclass(frozen=True)
class DeviceClass:
    """One DeviceClass of a DRA driver: what it selects, and what its driver publishes."""

    name: str
    #: Attribute domain of the driver (`device.attributes['<domain>']`), also its `device.driver`.
    domain: str
    #: Unqualified attribute a selector must fix to one literal (DRA002).
    pin_attribute: str
    #: Attributes that can align several devices of one claim, as the driver publishes them;
    #: empty when it publishes none.
    topology: tuple[TopologyAttribute, ...] = ()
    #: The alignment the builders add for several devices by default: only an attribute
    #: every device carries and that any count a node holds can meet; None otherwise.
    default_alignment: str | None = None
    #: Topology attributes the driver never publishes (a constraint on them never allocates).
    never_published: tuple[str, ...] = ()
    #: Devices one claim can get with the default alignment, where that is bounded.
    max_aligned_count: int | None = None
    #: Legacy device-plugin extended resources this class replaces (for migration).
    legacy_resources: tuple[str, ...] = ()
    #: Full-match pattern for pin values, where the driver derives them from a grammar.
    pin_value_pattern: re.Pattern[str] | None = None
    #: Values the driver publishes: all of them where the list is closed, else examples.
    known_pin_values: tuple[str, ...] = ()
    #: Values people write that the driver never publishes -> what it publishes instead.
    pin_value_hints: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: The selector of the driver's own DeviceClass (its chart): what the allocator
    #: evaluates before a request's own selectors (dra-guard check --slices).
    class_selector: str = ""
    #: The extended resource name the driver's chart can map to this class
    #: (spec.extendedResourceName, KEP-5004), and whether it does by default.
    chart_extended_resource: ChartExtendedResource | None = None
    #: The integer attribute every device publishes as the number of devices on its host,
    #: where the driver shares host state between every claim on a host and so a claim must
    #: take the whole host (TPU: chipCount, DRA017); None where a host may be split.
    whole_host_attribute: str | None = None
    #: Where the facts above come from.
    source: str = ""

    @property
    def qualified_pin_attribute(self) -> str:
        return f"{self.domain}/{self.pin_attribute}"

    @property
    def topology_attributes(self) -> tuple[str, ...]:
        return tuple(attribute.name for attribute in self.topology)

    def topology_attribute(self, name: str) -> TopologyAttribute | None:
        return next((attribute for attribute in self.topology if attribute.name == name), None)


_CLASSES = (
    DeviceClass(
        "mig.nvidia.com",
        "gpu.nvidia.com",
        "profile",
        topology=(
            # mig.go CommonAttributesMig: parentUUID on every MIG device, static and dynamic.
            TopologyAttribute("gpu.nvidia.com/parentUUID", "always", "the parent GPU's UUID, on every MIG device"),
            _PCIE_ROOT_WHEN_DERIVABLE,
        ),
        default_alignment="gpu.nvidia.com/parentUUID",
        max_aligned_count=MIG_SLICES_PER_GPU,
        legacy_resources=(),  # nvidia.com/mig-<profile>: a prefix, below
        pin_value_pattern=MIG_PROFILE_PATTERN,
        known_pin_values=("1g.10gb", "3g.40gb", "1g.10gb+me", "7g.80gb"),
        class_selector="device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
        source=f"{_NVIDIA}: templates/deviceclass-mig.yaml, cmd/gpu-kubelet-plugin/mig.go, deviceinfo.go",
    ),
    DeviceClass(
        "gpu.nvidia.com",
        "gpu.nvidia.com",
        # The NVML device name, e.g. `NVIDIA H100 80GB HBM3`.  A GPU in MIG mode is not a
        # `type: gpu` device (nvlib.go GetPerGpuAllocatableDevices): it never matches here.
        "productName",
        topology=(_PCIE_ROOT_WHEN_DERIVABLE,),  # deviceinfo.go: `if d.pcieRootAttr != nil`
        legacy_resources=("nvidia.com/gpu", "nvidia.com/gpu.shared"),
        class_selector="device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
        # templates/deviceclass-gpu.yaml: rendered when the chart targets resource.k8s.io/v1
        # (since v25.12.0, commit d7b7d1ec); absent on v1beta1/v1beta2.
        chart_extended_resource=ChartExtendedResource(
            "nvidia.com/gpu", True, "by default since v25.12.0 wherever it renders resource.k8s.io/v1"
        ),
        source=f"{_NVIDIA}: templates/deviceclass-gpu.yaml, cmd/gpu-kubelet-plugin/deviceinfo.go GpuInfo",
    ),
    DeviceClass(
        "vfio.gpu.nvidia.com",
        "gpu.nvidia.com",
        # The pci.ids name (go-nvlib nvpci, `GH100 [H100 SXM5 80GB]`), not the NVML name.
        "productName",
        topology=(_PCIE_ROOT_WHEN_DERIVABLE,),
        class_selector="device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'",
        source=f"{_NVIDIA}: templates/deviceclass-vfio-gpu.yaml, deviceinfo.go VfioDeviceInfo (PassthroughSupport)",
    ),
    DeviceClass(
        "tpu.google.com",
        "tpu.google.com",
        "tpuGen",
        # Never: no use of the deviceattribute package anywhere in cmd/; `topology` (2x4) is a
        # property of the host, equal on every chip, not something to align on.
        never_published=(PCIE_ROOT,),
        legacy_resources=("google.com/tpu",),
        pin_value_pattern=TPU_GEN_PATTERN,
        known_pin_values=TPU_GENERATIONS,
        pin_value_hints=MappingProxyType(
            {
                "v5e": "v5lite (a v5e device label) or v5litepod (a v5e podslice)",
                "v7x": "tpu7x (new-style labels are published verbatim)",
            }
        ),
        class_selector='device.driver == "tpu.google.com"',
        # chipCount is the host's chip count, the same on every chip of a host (manager.go
        # NewTPUManager, from the tpu.google.com/chip-count label or the hardware probe); the
        # driver bind-mounts /tmp/tpu_logs into every claim on a host and empties it on any
        # Unprepare (manager.go libtpuLogDir, cdi.go CreateCommonSpecFile, state.go
        # unprepareDevices), and refuses a claim with fewer chips at Prepare (state.go
        # prepareDevices: "claim requests partial tpu devices").
        whole_host_attribute="chipCount",
        source="kubernetes-sigs/dra-driver-google-tpu @ f5a9d8c8: templates/deviceclass.yaml, "
        "cmd/tpu-dra-kubeletplugin/manager.go GetDevice and NewTPUManager, util.go AcceleratorGen, "
        "state.go prepareDevices and unprepareDevices, cdi.go CreateCommonSpecFile",
    ),
    DeviceClass(
        "gpu.amd.com",
        "gpu.amd.com",
        "partitionProfile",
        topology=(
            TopologyAttribute(
                PCIE_ROOT, "conditional", 'published only when derivable (`if d.pcieRootAttr.Name != ""`)'
            ),
            # Partitions publish parentDeviceID, full GPUs deviceID: partitions of one GPU only.
            TopologyAttribute(
                "gpu.amd.com/parentDeviceID",
                "conditional",
                "on partitions only (full GPUs publish deviceID instead): partitions of one GPU",
            ),
        ),
        legacy_resources=("amd.com/gpu",),
        pin_value_pattern=AMD_PARTITION_PROFILE_PATTERN,
        class_selector="device.driver == 'gpu.amd.com'",
        source="ROCm/k8s-gpu-dra-driver @ 26224272: helm-charts-k8s/templates/deviceclass.yaml, "
        "cmd/gpu-kubeletplugin/deviceinfo.go",
    ),
    DeviceClass(
        "gpu.intel.com",
        "gpu.intel.com",
        "model",
        topology=(
            TopologyAttribute(
                PCIE_ROOT,
                "always",
                'always present, but "" where the root cannot be derived: such devices all match each other',
            ),
        ),
        legacy_resources=("gpu.intel.com/i915", "gpu.intel.com/xe"),
        known_pin_values=_INTEL_GPU_MODELS,
        class_selector='device.driver == "gpu.intel.com"',
        chart_extended_resource=ChartExtendedResource(
            "intel.com/gpu", False, "when installed with enableDRAExtendedResources: true; off by default"
        ),
        source="intel/intel-resource-drivers-for-kubernetes @ 1da939fa: charts/intel-gpu-resource-driver, "
        "cmd/kubelet-gpu-plugin/node_state.go, pkg/gpu/discovery/discovery-pci.go",
    ),
    DeviceClass(
        # The chart's VM-passthrough class: by default the same devices as gpu.intel.com.
        "gpu-vfio.intel.com",
        "gpu.intel.com",
        "model",
        topology=(
            TopologyAttribute(
                PCIE_ROOT,
                "always",
                'always present, but "" where the root cannot be derived: such devices all match each other',
            ),
        ),
        known_pin_values=_INTEL_GPU_MODELS,
        class_selector='device.driver == "gpu.intel.com"',
        source="intel/intel-resource-drivers-for-kubernetes @ 1da939fa: charts/intel-gpu-resource-driver "
        "templates/device-class.yaml (manageBinding.enabled: true)",
    ),
    DeviceClass(
        "gaudi.intel.com",
        "gaudi.intel.com",
        "model",
        topology=(
            TopologyAttribute(
                PCIE_ROOT,
                "always",
                'always present, but "" where the root cannot be derived: such devices all match each other',
            ),
        ),
        legacy_resources=("habana.ai/gaudi",),
        known_pin_values=("Gaudi", "Gaudi2", "Gaudi3"),
        class_selector='device.driver == "gaudi.intel.com"',
        chart_extended_resource=ChartExtendedResource(
            "intel.com/gaudi", False, "when installed with enableDRAExtendedResources: true; off by default"
        ),
        source="intel/intel-resource-drivers-for-kubernetes @ 1da939fa: charts/intel-gaudi-resource-driver, "
        "cmd/kubelet-gaudi-plugin/node_state.go, pkg/gaudi/discovery/discovery.go",
    ),
    DeviceClass(
        "gpu.example.com",
        "gpu.example.com",
        "model",
        never_published=(PCIE_ROOT,),
        pin_value_pattern=re.compile(r"LATEST-GPU-MODEL"),
        known_pin_values=("LATEST-GPU-MODEL",),
        class_selector="device.driver == 'gpu.example.com'",
        source="kubernetes-sigs/dra-example-driver @ 31914cea: internal/profiles/gpu/gpu.go, "
        "deployments/helm/dra-example-driver/templates/deviceclass.yaml",
    ),
)

DEVICE_CLASSES: Mapping[str, DeviceClass] = MappingProxyType({c.name: c for c in _CLASSES})


class NonAcceleratorClass(NamedTuple):
    """A DeviceClass whose devices are not accelerators: the rules leave its requests alone."""

    name: str
    #: `device.driver` of its devices, where it is known.
    driver: str
    what: str
    source: str
    #: The selector of its DeviceClass, where it has an upstream source ("" otherwise).
    class_selector: str = ""
    #: Its devices attach to the pod, not to a container: DRANET moves the interface into
    #: the pod's network namespace when the sandbox starts (kubernetes-sigs/dranet @
    #: f258477c, pkg/driver/nri_hooks.go RunPodSandbox) and adds its RDMA character devices
    #: to every container of the pod (createContainer), so no container names the claim.
    pod_level: bool = False


_DRANET = "kubernetes-sigs/dranet @ f258477c"
#: DRANET's DeviceClasses are the user's: the names its examples (and AWS's chart) give them.
_DRANET_NIC = "a NIC class of DRANET (driver dra.net); DRANET classes are user-defined, this is the name"
_NON_ACCELERATORS = (
    NonAcceleratorClass(
        "compute-domain-daemon.nvidia.com",
        "compute-domain.nvidia.com",
        "the IMEX daemon of an NVIDIA ComputeDomain (multi-node NVLink), one per node",
        f"{_NVIDIA}: templates/deviceclass-compute-domain-daemon.yaml",
        "device.driver == 'compute-domain.nvidia.com' && "
        "device.attributes['compute-domain.nvidia.com'].type == 'daemon'",
    ),
    NonAcceleratorClass(
        "compute-domain-default-channel.nvidia.com",
        "compute-domain.nvidia.com",
        "IMEX channel 0 of an NVIDIA ComputeDomain",
        f"{_NVIDIA}: templates/deviceclass-compute-domain-default-channel.yaml",
        "device.driver == 'compute-domain.nvidia.com' && "
        "device.attributes['compute-domain.nvidia.com'].type == 'channel' && "
        "device.attributes['compute-domain.nvidia.com'].id == 0",
    ),
    NonAcceleratorClass(
        # The driver is gpu.nvidia.com, an accelerator driver, so only the class is named:
        # its selector picks the driver's IMEX channels (type 'imex-channel'), never a GPU.
        # Later releases moved channels to ComputeDomains; NVIDIA's quickstart demo
        # (demo/specs/quickstart/v1/imex-test1.yaml) still names it.
        "imex.nvidia.com",
        "",
        "an IMEX channel of NVIDIA's GPU driver before ComputeDomains (multi-node NVLink memory export)",
        "NVIDIA/k8s-dra-driver-gpu @ cd399adc: deployments/helm/k8s-dra-driver/templates/deviceclass-imex.yaml",
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'imex-channel'",
    ),
    NonAcceleratorClass(
        "netdev.google.com",
        "",
        "GKE's managed network-interface class (DRANET-based; installed by GKE, no upstream source)",
        "GKE documentation",
    ),
    NonAcceleratorClass(
        "mrdma.google.com",
        "",
        "GKE's managed RDMA network-interface class (DRANET-based; installed by GKE)",
        "GKE documentation",
    ),
    NonAcceleratorClass(
        "multinic",
        "dra.net",
        f"{_DRANET_NIC} of its GKE multi-network demo",
        f"{_DRANET}: examples/demo_gke_multinetwork/deviceclass.yaml",
        'device.driver == "dra.net"',
        pod_level=True,
    ),
    NonAcceleratorClass(
        "dranet",
        "dra.net",
        f"{_DRANET_NIC} of its NVIDIA GPU + NIC demo and its GKE RDMA, TPU and KubeRay guides",
        f"{_DRANET}: examples/demo_nvidia_dranet/deviceclass.yaml",
        'device.driver == "dra.net"',
        pod_level=True,
    ),
    NonAcceleratorClass(
        "dranet.net",
        "dra.net",
        f"{_DRANET_NIC} of its distributed-training and OCI GB200 examples",
        f"{_DRANET}: examples/distributed_training/device-class.yaml",
        'device.driver == "dra.net"',
        pod_level=True,
    ),
    NonAcceleratorClass(
        "dra.net",
        "dra.net",
        f"{_DRANET_NIC} of its OCI BM.GPU.H100.8 example",
        f"{_DRANET}: examples/oci_oke_examples/BM.GPU.H100.8/deviceclass.yaml",
        'device.driver == "dra.net"',
        pod_level=True,
    ),
    NonAcceleratorClass(
        "rdma",
        "dra.net",
        f"{_DRANET_NIC} of its GKE RDMA demo (RDMA NICs: a second selector asks for `rdma`)",
        f"{_DRANET}: examples/demo_gke_rdma/rdma-perftest.yaml",
        pod_level=True,
    ),
    NonAcceleratorClass(
        "dranet-rdma-for-mpi",
        "dra.net",
        f"{_DRANET_NIC} of its MPI operator example (RDMA NICs: a second selector asks for `rdma == true`)",
        f"{_DRANET}: examples/mpi_operator/dra_resources.yaml",
        pod_level=True,
    ),
    NonAcceleratorClass(
        "erdma.alibaba.dra.net",
        "dra.net",
        f"{_DRANET_NIC} of its Alibaba ACK eRDMA example (a second selector asks for `alibaba.dra.net` erdma)",
        f"{_DRANET}: examples/alibaba_ack_examples/gpu-erdma/device-class.yaml",
        pod_level=True,
    ),
    NonAcceleratorClass(
        # AWS's EFA NICs through DRANET: the aws-dranet chart (deviceClass.create: true by
        # default) installs this class; DRANET's EKS example pairs it with a GPU in one template.
        "efa.networking.k8s.aws",
        "dra.net",
        "AWS Elastic Fabric Adapter NICs, as DRANET publishes them (the aws-dranet chart's class)",
        "aws/eks-charts @ 79203dcc: stable/aws-dranet/templates/deviceclass.yaml, values.yaml deviceClass.name; "
        f"{_DRANET}: examples/aws_eks_examples/gpu-efa/device-class.yaml",
        'device.driver == "dra.net" &&\ndevice.attributes["dra.net"].pciDevice == \'Elastic Fabric Adapter (EFA)\'\n',
        pod_level=True,
    ),
    NonAcceleratorClass(
        "dra.cpu",
        "dra.cpu",
        "exclusive CPUs of the CPU DRA driver (containers name the claim: the CPUs are pinned per container)",
        "kubernetes-sigs/dra-driver-cpu @ de980986: deployment/helm/dra-driver-cpu/templates/deviceclass.yaml, "
        "cmd/dracpu/app.go driverName",
        'device.driver == "dra.cpu"',
    ),
    NonAcceleratorClass(
        # Crypto and compression offload, not an AI accelerator: its device plugin's names
        # (`qat.intel.com/generic`, `cy`, `dc`, ...) are under no accelerator domain either.
        "qat.intel.com",
        "qat.intel.com",
        "Intel QuickAssist Technology (QAT) crypto and compression virtual functions",
        "intel/intel-resource-drivers-for-kubernetes @ 1da939fa: deployments/qat/base/device-class.yaml, "
        "charts/intel-qat-resource-driver/templates/device-class.yaml",
        'device.driver == "qat.intel.com"',
    ),
    NonAcceleratorClass(
        "net.example.com",
        "net.example.com",
        "the example driver's NIC profile (shareable devices)",
        "kubernetes-sigs/dra-example-driver @ 31914cea: internal/profiles/net/net.go, "
        "deployments/helm/dra-example-driver/templates/deviceclass.yaml",
        "device.driver == 'net.example.com'",
    ),
    NonAcceleratorClass(
        "cpu.example.com",
        "cpu.example.com",
        "the example driver's CPU profile (NUMA nodes as shareable devices)",
        "kubernetes-sigs/dra-example-driver @ 31914cea: internal/profiles/cpu/cpu.go, "
        "deployments/helm/dra-example-driver/templates/deviceclass.yaml",
        "device.driver == 'cpu.example.com'",
    ),
)

#: Classes known not to be accelerators.  Every other class, known or not, is treated as an
#: accelerator (fail closed: docs/rules.md, "Options", `non-accelerator-classes`).
NON_ACCELERATOR_CLASSES: Mapping[str, NonAcceleratorClass] = MappingProxyType({c.name: c for c in _NON_ACCELERATORS})
#: Drivers whose devices are never accelerators (NICs, CPUs, IMEX channels): a DeviceClass
#: whose selector fixes `device.driver` to one of them, in a top-level && conjunct, selects
#: no accelerator (`dra_guard.ruleapi.device_classes.selected_driver`).
NON_ACCELERATOR_DRIVERS = frozenset(c.driver for c in _NON_ACCELERATORS if c.driver)
#: Drivers whose devices are accelerators: the domains of dra-guard's classes.  A DeviceClass
#: whose selector fixes `device.driver` to one of them selects accelerators, whatever its name
#: (`dra_guard.ruleapi.device_classes.overridable`).
ACCELERATOR_DRIVERS = frozenset(c.domain for c in _CLASSES)
#: Drivers whose devices attach to the pod, not to a container (DRANET): see `pod_level`.
POD_LEVEL_DRIVERS = frozenset(c.driver for c in _NON_ACCELERATORS if c.driver and c.pod_level)

#: Exact legacy extended-resource names (DRA001).
LEGACY_RESOURCE_NAMES = frozenset(name for device_class in _CLASSES for name in device_class.legacy_resources)
#: Legacy names that are families: `nvidia.com/mig-<profile>`, `aws.amazon.com/neuron*`.
LEGACY_RESOURCE_PREFIXES = ("nvidia.com/mig-", "aws.amazon.com/neuron")


#: Extended resource names the drivers' charts map to their DeviceClasses (KEP-5004), by name.
CHART_EXTENDED_RESOURCES: Mapping[str, tuple[str, ChartExtendedResource]] = MappingProxyType(
    {
        c.chart_extended_resource.name: (c.name, c.chart_extended_resource)
        for c in _CLASSES
        if c.chart_extended_resource is not None
    }
)


def class_selector(name: str) -> str | None:
    """The selector of a driver's own DeviceClass of this name, if dra-guard knows it."""
    known = DEVICE_CLASSES.get(name) or NON_ACCELERATOR_CLASSES.get(name)
    return known.class_selector if known is not None and known.class_selector else None


def is_legacy_resource(name: str, extra_names: frozenset[str] = frozenset()) -> bool:
    """Whether a `resources.limits`/`requests` key is a legacy accelerator request: a device
    plugin's name for one of our classes, another plugin's (`dra_guard.contract.accelerator_names`),
    or one the configuration adds."""
    return (
        name in LEGACY_RESOURCE_NAMES
        or name in extra_names
        or name.startswith(LEGACY_RESOURCE_PREFIXES)
        or family_of(name) is not None
    )
