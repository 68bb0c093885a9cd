"""Which accelerators a container sees: the device nodes its claims injected under /dev.

A DRA driver hands a container its devices as device nodes (through CDI): NVIDIA GPUs as
`/dev/nvidiaN` (MIG instances add `/dev/nvidia-caps/nvidia-capN`), AMD GPUs as `/dev/kfd`
with `/dev/dri/renderDN`, Intel GPUs as `/dev/dri/renderDN` alone, Intel Gaudi as
`/dev/accel/accelN`, Google TPUs as `/dev/accelN` (v4 and earlier) or a VFIO group `/dev/vfio/N`
(v5e and later), and a device bound to vfio-pci through iommufd as `/dev/vfio/devices/vfioN` (NVIDIA's
driver hands its passthrough GPUs over so where iommufd is preferred:
NVIDIA/k8s-dra-driver-gpu @ 22407113785e78c7763b4637689a201eb39c6199,
cmd/gpu-kubelet-plugin/vfio-cdi.go `GetDeviceSpecsByPCIBusID`; otherwise it is a VFIO group
`/dev/vfio/N` too).  A VFIO group says nothing of whose device it is (a TPU's, a passthrough
GPU's): both forms are named "vfio", and refused.  Which vendor a render node belongs to is read from
sysfs where it can be; a node that cannot be placed is reported as unknown (and so refused),
never skipped.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

#: Vendors the scrubber can scrub.
SCRUBBABLE = frozenset({"nvidia"})

_NVIDIA_GPU = re.compile(r"nvidia\d+")
_ACCEL = re.compile(r"accel\d+")
_RENDER = re.compile(r"renderD\d+")
_VFIO_GROUP = re.compile(r"\d+")
_VFIO_DEVICE = re.compile(r"vfio\d+")
#: PCI vendor IDs of render nodes' devices (sysfs `device/vendor`).
_PCI_VENDORS = {"0x10de": "nvidia", "0x1002": "amd", "0x8086": "intel"}


@dataclass(frozen=True)
class VisibleDevice:
    #: "nvidia", "amd", "intel", "intel-gaudi", "tpu", "vfio" (a device bound to vfio-pci, as
    #: a VFIO group or through iommufd, whatever its vendor) or "unknown".
    vendor: str
    #: The device node, as the container sees it.
    node: str


def visible_devices(dev: str = "/dev", sys_class: str = "/sys/class/drm") -> list[VisibleDevice]:
    """Every accelerator device node under `dev`, in a stable order."""
    found: list[VisibleDevice] = []
    names = _listing(dev)
    found += [VisibleDevice("nvidia", os.path.join(dev, name)) for name in names if _NVIDIA_GPU.fullmatch(name)]
    found += [VisibleDevice("tpu", os.path.join(dev, name)) for name in names if _ACCEL.fullmatch(name)]
    found += [
        VisibleDevice("intel-gaudi", os.path.join(dev, "accel", name))
        for name in _listing(os.path.join(dev, "accel"))
        if _ACCEL.fullmatch(name)
    ]
    found += [
        VisibleDevice("vfio", os.path.join(dev, "vfio", name))
        for name in _listing(os.path.join(dev, "vfio"))
        if _VFIO_GROUP.fullmatch(name)
    ]
    found += [
        VisibleDevice("vfio", os.path.join(dev, "vfio", "devices", name))
        for name in _listing(os.path.join(dev, "vfio", "devices"))
        if _VFIO_DEVICE.fullmatch(name)
    ]
    amd = "kfd" in names
    for name in _listing(os.path.join(dev, "dri")):
        if _RENDER.fullmatch(name):
            vendor = _render_vendor(sys_class, name) or ("amd" if amd else "unknown")
            if vendor != "nvidia":  # an NVIDIA GPU's render node: the GPU is its /dev/nvidiaN
                found.append(VisibleDevice(vendor, os.path.join(dev, "dri", name)))
    return found


def _listing(folder: str) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def _render_vendor(sys_class: str, name: str) -> str | None:
    try:
        with open(os.path.join(sys_class, name, "device", "vendor"), encoding="ascii") as handle:
            return _PCI_VENDORS.get(handle.read().strip().lower(), "unknown")
    except (OSError, UnicodeDecodeError):
        return None
