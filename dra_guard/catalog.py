"""The vendor catalog and the annotation contract (README.md, "Isolation tag"), as data.

Everything here is a constant that rules, builders and front ends look up; nothing here
decides anything.  Adding a vendor means adding one ``DeviceClass`` entry.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

#: The standard topology attribute every DRA driver may publish (KEP-4381/5491).
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"

#: ``resource.k8s.io`` versions we emit, newest first; the first is the default.
RESOURCE_API_VERSIONS = (
    "resource.k8s.io/v1",
    "resource.k8s.io/v1beta2",
    "resource.k8s.io/v1beta1",
    "resource.k8s.io/v1alpha3",
)
DEFAULT_RESOURCE_API_VERSION = RESOURCE_API_VERSIONS[0]
#: Versions whose device requests are flat; the others wrap them in ``exactly``.
FLAT_REQUEST_API_VERSIONS = frozenset({"resource.k8s.io/v1beta1", "resource.k8s.io/v1alpha3"})

SANITIZATION_POLICIES = ("WipeOnDeallocate", "ZeroFillMemoryOnRelease")
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

ANNOTATION_PREFIX = "dra-guard.io/"
SANITIZATION_ANNOTATION = ANNOTATION_PREFIX + "sanitization"
ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION = ANNOTATION_PREFIX + "allow-multiple-allocations"
TENANT_ANNOTATION = ANNOTATION_PREFIX + "tenant"
#: The tenant as a workload label too, so NetworkPolicies and quotas can select on it.
TENANT_LABEL = ANNOTATION_PREFIX + "tenant"
ISOLATION_TAG_ANNOTATION = ANNOTATION_PREFIX + "isolation-tag"
IGNORE_ANNOTATION_PREFIX = ANNOTATION_PREFIX + "ignore-"
#: Code points that show nothing (Unicode 14 categories Zs, Zl, Zp, Cc, Cf: spaces,
#: controls, zero-width and format characters). A waiver reason made only of these gives no
#: reason, so it waives nothing; the engine and the admission policies test these ranges.
INVISIBLE_RANGES = (
    (0x0, 0x20), (0x7F, 0xA0), (0xAD, 0xAD), (0x600, 0x605), (0x61C, 0x61C), (0x6DD, 0x6DD),
    (0x70F, 0x70F), (0x890, 0x891), (0x8E2, 0x8E2), (0x1680, 0x1680), (0x180E, 0x180E),
    (0x2000, 0x200F), (0x2028, 0x202F), (0x205F, 0x2064), (0x2066, 0x206F), (0x3000, 0x3000),
    (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
    (0x13430, 0x13438), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
)  # fmt: skip
#: The same test as an RE2 character class (CEL's `matches`), for the admission policies.
VISIBLE_CHARACTER_RE2 = (
    "[^"
    + "".join(f"\\x{{{low:X}}}" + (f"-\\x{{{high:X}}}" if high != low else "") for low, high in INVISIBLE_RANGES)
    + "]"
)


def has_visible_character(text: str) -> bool:
    """Whether `text` shows anything (see INVISIBLE_RANGES)."""
    return any(not any(low <= ord(character) <= high for low, high in INVISIBLE_RANGES) for character in text)


# MIG profile names as NVIDIA's driver publishes them in the `profile` attribute:
# <compute slices>g.<memory>gb, optionally with a media-engine / graphics suffix
# (`1g.10gb`, `3g.40gb+me`, `1g.24gb+me.all`, `1g.24gb-me`, `4g.96gb+gfx`).
MIG_PROFILE_PATTERN = re.compile(r"[1-9][0-9]?g\.[1-9][0-9]{0,3}gb(?:\+me\.all|\+me|-me|\+gfx)?")


@dataclass(frozen=True)
class DeviceClass:
    """One DeviceClass of a DRA driver and what the standard requires of requests for it."""

    name: str
    #: Attribute domain of the driver (`device.attributes['<domain>']`, `device.driver`).
    domain: str
    #: Unqualified attribute a selector must fix to one literal (DRA002).
    pin_attribute: str
    #: Qualified attribute that several devices of one claim must share (DRA011).
    topology_attribute: str
    #: Legacy device-plugin extended resources this class replaces (for migration).
    legacy_resources: tuple[str, ...] = ()
    #: Full-match pattern for pin values, where the vendor has a grammar.
    pin_value_pattern: re.Pattern[str] | None = None

    @property
    def qualified_pin_attribute(self) -> str:
        return f"{self.domain}/{self.pin_attribute}"


_CLASSES = (
    DeviceClass(
        "mig.nvidia.com",
        "gpu.nvidia.com",
        "profile",
        "gpu.nvidia.com/parentUUID",
        pin_value_pattern=MIG_PROFILE_PATTERN,
    ),
    DeviceClass(
        "gpu.nvidia.com",
        "gpu.nvidia.com",
        "productName",
        PCIE_ROOT,
        legacy_resources=("nvidia.com/gpu", "nvidia.com/gpu.shared"),
    ),
    DeviceClass("vfio.gpu.nvidia.com", "gpu.nvidia.com", "productName", PCIE_ROOT),
    DeviceClass(
        "tpu.google.com",
        "tpu.google.com",
        "tpuGen",
        PCIE_ROOT,
        legacy_resources=("google.com/tpu",),
    ),
    DeviceClass(
        "gpu.amd.com",
        "gpu.amd.com",
        "partitionProfile",
        PCIE_ROOT,
        legacy_resources=("amd.com/gpu",),
    ),
    DeviceClass(
        "gpu.intel.com",
        "gpu.intel.com",
        "model",
        PCIE_ROOT,
        legacy_resources=("gpu.intel.com/i915", "gpu.intel.com/xe"),
    ),
    DeviceClass(
        "gaudi.intel.com",
        "gaudi.intel.com",
        "model",
        PCIE_ROOT,
        legacy_resources=("habana.ai/gaudi",),
    ),
    DeviceClass("gpu.example.com", "gpu.example.com", "model", PCIE_ROOT),
)

DEVICE_CLASSES: Mapping[str, DeviceClass] = MappingProxyType({c.name: c for c in _CLASSES})

#: Exact legacy extended-resource names (DRA001).
LEGACY_RESOURCE_NAMES = frozenset(name for device_class in _CLASSES for name in device_class.legacy_resources)
#: Legacy names that are families: `nvidia.com/mig-<profile>`, `aws.amazon.com/neuron*`.
LEGACY_RESOURCE_PREFIXES = ("nvidia.com/mig-", "aws.amazon.com/neuron")


def is_legacy_resource(name: str, extra_names: frozenset[str] = frozenset()) -> bool:
    """Whether a `resources.limits`/`requests` key is a legacy accelerator request."""
    return name in LEGACY_RESOURCE_NAMES or name in extra_names or name.startswith(LEGACY_RESOURCE_PREFIXES)


def topology_attribute_for(device_class: str) -> str:
    """The attribute that aligns several devices of `device_class` (PCIe root if unknown)."""
    known = DEVICE_CLASSES.get(device_class)
    return known.topology_attribute if known else PCIE_ROOT
