"""Extended-resource names that ask for accelerators outside DRA, from each device plugin's source.

The device plugins dra-guard's own classes replace (`nvidia.com/gpu`, `nvidia.com/mig-*`,
`google.com/tpu`, ...) are in the catalog's `legacy_resources`.  This table adds the names
other plugins register, each with the file and commit it was read from: AMD's partition
names, every name of Intel's GPU plugin, NVIDIA's KubeVirt passthrough and vGPU names, and
the GPU-sharing plugins and schedulers (HAMi, Volcano, Alibaba's gpushare, Tencent's
gpu-manager, Koordinator), which hand several tenants slices of one GPU's memory with nothing
erasing it between them.

Then the vendor domains: a name under one of them that no table knows is not let through
(it may be the next plugin's GPU) but reported as unverifiable, unless it is one of the
NIC names NVIDIA's network operator registers under `nvidia.com/`, or the configuration
allows it (docs/rules.md, DRA001, `allowed-extended-resources`).  Pure data and string
tests: it imports nothing of ours.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

from dra_guard.contract.memo import memo_short


class NameFamily(NamedTuple):
    """Names one device plugin registers for accelerators (or shares of one)."""

    #: Who registers them, as messages say it ("HAMi's vGPU shares").
    what: str
    names: tuple[str, ...] = ()
    #: Prefixes of families whose members are open-ended (`huawei.com/Ascend910B3`).
    prefixes: tuple[str, ...] = ()
    #: Full-match pattern, where a plugin builds names from a grammar; `pattern_prefix`
    #: is the literal start every match has (so the admission policy tests it first).
    pattern: re.Pattern[str] | None = None
    pattern_prefix: str = ""
    source: str = ""
    #: True when several pods get shares of one device (the plugin's point).
    shares: bool = False

    def has(self, name: str) -> bool:
        if name in self.names or name.startswith(self.prefixes):
            return True
        return self.pattern is not None and self.pattern.fullmatch(name) is not None


_HAMI = "Project-HAMi/HAMi charts/hami/values.yaml @ 4707fb02"

FAMILIES = (
    NameFamily(
        "AMD's device plugin in mixed partition naming (amd.com/<compute partition>_<memory partition>)",
        # `mixed` strategy: one resource per (compute, memory) partition pair.
        pattern=re.compile(r"amd\.com/[a-z]px_nps[0-9]+"),
        pattern_prefix="amd.com/",
        source="ROCm/k8s-device-plugin internal/pkg/plugin @ ed764684",
    ),
    NameFamily(
        # Every name it registers: i915, xe, the *_monitoring names that give access to every
        # GPU of the node, and millicores, memory.max and tiles (shares of one GPU).
        "Intel's GPU device plugin",
        prefixes=("gpu.intel.com/",),
        source="intel/intel-device-plugins-for-kubernetes cmd/gpu_plugin @ 94a91bc9 (monitoring), "
        "@ 526de261 (millicores, memory.max, tiles from NFD; removed at 281ca081)",
    ),
    NameFamily(
        # One name per NPU, or `-shared-dev-num` pods on each (its `sharedDevNum` option).
        "Intel's NPU device plugin",
        names=("npu.intel.com/accel",),
        source="intel/intel-device-plugins-for-kubernetes cmd/npu_plugin/npu_plugin.go @ 94a91bc9",
    ),
    NameFamily(
        "NVIDIA's KubeVirt GPU device plugin (passthrough names from the PCI device name, vGPU names from the "
        "vGPU type, spaces made underscores)",
        # Those names keep the PCI database's and the vGPU type's capitals (GA102GL_A10,
        # NVIDIA_A10-12Q); every name NVIDIA's container device plugins register is lower case.
        pattern=re.compile(r"nvidia\.com/.*[A-Z].*"),
        pattern_prefix="nvidia.com/",
        source="NVIDIA/kubevirt-gpu-device-plugin pkg/device_plugin @ d26f2374",
    ),
    NameFamily(
        "HAMi's GPU shares (memory and core fractions of a GPU)",
        names=(
            "nvidia.com/gpumem",
            "nvidia.com/gpumem-percentage",
            "nvidia.com/gpucores",
            "amd.com/gpumem",
            "amd.com/gpucores",
        ),
        source=_HAMI,
        shares=True,
    ),
    NameFamily(
        "HAMi's Ascend, MetaX, Moore Threads, Cambricon, Hygon, Iluvatar, Enflame, Kunlunxin, Vastai and Biren devices",
        # The names HAMi's chart configures, exactly: an exact name costs the admission policy
        # nothing, a prefix about two units a name (docs/admission.md). Ascend and MetaX keep
        # a prefix, as their device plugins name a resource after each chip model. A name of
        # these domains that is not listed is still unverifiable (ACCELERATOR_DOMAINS).
        names=(
            "mthreads.com/vgpu",
            "mthreads.com/sgpu-memory",
            "mthreads.com/sgpu-core",
            "cambricon.com/vmlu",
            "cambricon.com/mlu.smlu.vmemory",
            "cambricon.com/mlu.smlu.vcore",
            "hygon.com/dcunum",
            "hygon.com/dcumem",
            "hygon.com/dcucores",
            "enflame.com/drs-gcu",
            "enflame.com/gcu-memory",
            "enflame.com/gcu-core",
            "enflame.com/gcu",
            "kunlunxin.com/xpu",
            "kunlunxin.com/vxpu",
            "kunlunxin.com/vxpu-memory",
            "vastaitech.com/va",
            "birentech.com/gpu",
            *(
                f"iluvatar.ai/{model}{suffix}"
                for model in ("BI-V100", "BI-V150", "MR-V100", "MR-V50")
                for suffix in ("-vgpu", ".vCore", ".vMem")
            ),
        ),
        prefixes=("huawei.com/Ascend", "metax-tech.com/"),
        source=_HAMI,
        shares=True,
    ),
    NameFamily(
        "Volcano's GPU-sharing device plugins",
        names=(
            "volcano.sh/vgpu-number",
            "volcano.sh/vgpu-memory",
            "volcano.sh/vgpu-memory-percentage",
            "volcano.sh/vgpu-cores",
            "volcano.sh/gpu-memory",
            "volcano.sh/gpu-number",
        ),
        source="Project-HAMi/volcano-vgpu-device-plugin @ 4fb76ba1; volcano-sh/devices @ 95b591b6",
        shares=True,
    ),
    NameFamily(
        "Alibaba Cloud's GPU-sharing device plugin",
        names=("aliyun.com/gpu-mem", "aliyun.com/gpu-count", "aliyun.com/gpu-core.percentage"),
        source="AliyunContainerService/gpushare-device-plugin @ 45fb8b88",
        shares=True,
    ),
    NameFamily(
        # The plugin hands out `--vgpu` virtual GPUs per physical GPU, shared through MPS
        # (its README: a pod asks for k8s.amazonaws.com/vgpu and gets the physical GPU's
        # NVIDIA_VISIBLE_DEVICES, server.go Allocate).
        "AWS's virtual GPU device plugin (MPS shares of one GPU)",
        names=("k8s.amazonaws.com/vgpu",),
        source="awslabs/aws-virtual-gpu-device-plugin pkg/gpu/nvidia/server.go @ 51832a5f (resourceName)",
        shares=True,
    ),
    NameFamily(
        # GKE's Cloud TPU names before TPU node pools (google.com/tpu): whole TPU devices of
        # a generation; `google.com/` does not cover this subdomain, so it is a domain below.
        "GKE's Cloud TPU names (before TPU node pools)",
        names=(
            "cloud-tpus.google.com/v2",
            "cloud-tpus.google.com/preemptible-v2",
            "cloud-tpus.google.com/v3",
            "cloud-tpus.google.com/preemptible-v3",
        ),
        source="pytorch/torchx torchx/specs/named_resources_tpu.py @ e556ac32 (_register_type); "
        "tensorflow/tpu models/official/resnet/resnet_k8s.yaml, mask_rcnn/mask_rcnn_k8s.yaml @ 7dc921f8",
    ),
    NameFamily(
        # Koordinator's device-share names (a percentage of a GPU's cores and memory, so
        # several pods on one GPU), and the `kubernetes.io/` spellings it still maps onto
        # them (DeprecatedDeviceResourcesMapper). Its other names under both prefixes are
        # CPU and memory colocation tiers, RDMA and FPGA: not listed, and no domain here.
        "Koordinator's GPU shares",
        names=(
            "koordinator.sh/gpu",
            "koordinator.sh/gpu.shared",
            "koordinator.sh/gpu-core",
            "koordinator.sh/gpu-memory",
            "koordinator.sh/gpu-memory-ratio",
            "kubernetes.io/gpu",
            "kubernetes.io/gpu-core",
            "kubernetes.io/gpu-memory",
            "kubernetes.io/gpu-memory-ratio",
        ),
        source="koordinator-sh/koordinator apis/extension/device_share.go, deprecated.go @ a7a1b76b",
        shares=True,
    ),
    NameFamily(
        "Tencent's gpu-manager (vCUDA shares)",
        names=("tencent.com/vcuda-core", "tencent.com/vcuda-memory"),
        source="tkestack/gpu-manager @ 8cd842ed",
        shares=True,
    ),
)

#: Domains under which device plugins register accelerators: a name there that no family
#: knows is unverifiable (fail closed), not passed.
ACCELERATOR_DOMAINS = (
    "nvidia.com/",
    "amd.com/",
    "gpu.intel.com/",
    "npu.intel.com/",
    # Intel's FPGA plugin names accelerator functions and regions (`af-<id>`, `region-<id>`,
    # and the mode names its webhook maps: cmd/fpga_plugin @ 94a91bc9), as xilinx.com/ does.
    "fpga.intel.com/",
    "habana.ai/",
    "google.com/",
    # A subdomain `google.com/` does not cover (a name's domain ends at its slash).
    "cloud-tpus.google.com/",
    "aws.amazon.com/",
    "xilinx.com/",
    "huawei.com/",
    "metax-tech.com/",
    "mthreads.com/",
    "cambricon.com/",
    "hygon.com/",
    "iluvatar.ai/",
    "enflame.com/",
    "kunlunxin.com/",
    "vastaitech.com/",
    "birentech.com/",
    "volcano.sh/",
    "tencent.com/",
)

#: Names under an accelerator domain that are NICs: NVIDIA's network operator registers its
#: RDMA, SR-IOV and host-device resources under `nvidia.com/` (the names of its examples;
#: Mellanox/network-operator example/ @ b06827e0).  Other names it is configured with go in
#: `allowed-extended-resources`.
NOT_ACCELERATORS = frozenset({"nvidia.com/hostdev", "nvidia.com/mlnxnics", "nvidia.com/sriovlegacy"})
NOT_ACCELERATOR_PREFIXES = ("nvidia.com/rdma_shared_device_", "nvidia.com/sriov_")


@memo_short(maxsize=4096)
def family_of(name: str) -> NameFamily | None:
    """The device-plugin family that registers `name` for accelerators, if one does (no
    NIC name is in one: the admission policy tests the families alone).

    Asked for every resource name of every container (`cpu`, `memory`, ...) and tested
    against each family's names, prefixes and pattern: the answers are kept, for the
    few names an input repeats (only short names: a name is any string an input holds)."""
    return next((family for family in FAMILIES if family.has(name)), None)


def vendor_domain(name: str) -> str | None:
    """The accelerator domain `name` is under (with its slash), if any; NIC names are under none."""
    if name in NOT_ACCELERATORS or name.startswith(NOT_ACCELERATOR_PREFIXES):
        return None
    return next((domain for domain in ACCELERATOR_DOMAINS if name.startswith(domain)), None)


#: Pod annotations through which a scheduler hands out a share of a GPU with no resource
#: request at all: KAI Scheduler (and Run:ai before it) reads them and binds the pod to a
#: GPU that other pods share (NVIDIA/KAI-Scheduler pkg/common/constants.go @ 72de64fc,
#: `GpuFraction`, `GpuMemory`).
SCHEDULER_SHARING_ANNOTATIONS: Mapping[str, str] = MappingProxyType(
    {
        "gpu-fraction": "KAI Scheduler's (and Run:ai's) GPU fraction",
        "gpu-memory": "KAI Scheduler's GPU memory share",
    }
)


def admission_tests() -> tuple[frozenset[str], tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The families as the admission policy tests them: exact names, prefixes, and
    (literal prefix, RE2 pattern) pairs, the prefix tested first because it is cheap."""
    names = frozenset(name for family in FAMILIES for name in family.names)
    prefixes = tuple(prefix for family in FAMILIES for prefix in family.prefixes)
    patterns = tuple(
        (family.pattern_prefix, f"^{family.pattern.pattern}$") for family in FAMILIES if family.pattern is not None
    )
    return names, prefixes, patterns
