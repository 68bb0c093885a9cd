"""Which DRA slice replaces each device-plugin extended resource.

The device class comes from the catalog (`DeviceClass.legacy_resources`), or from the
resource name itself for MIG (`nvidia.com/mig-<profile>`) and for DRA's own implicit
extended resource (`deviceclass.resource.kubernetes.io/<class>`).  The value that pins the
profile comes from the name for MIG and from the user for everything else: a product
name, a TPU generation, a partition profile cannot be guessed from `nvidia.com/gpu: 1`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from dra_guard.building.spec import AcceleratorSlice
from dra_guard.contract.catalog import (
    DEVICE_CLASSES,
    LEGACY_RESOURCE_NAMES,
    MIG_PROFILE_PATTERN,
    DeviceClass,
    is_legacy_resource,
)

MIG_PREFIX = "nvidia.com/mig-"
#: KEP-5004: every DeviceClass is requestable as this extended resource (an implicit claim).
IMPLICIT_DRA_PREFIX = "deviceclass.resource.kubernetes.io/"
#: NVIDIA's device plugin renames time-sliced and MPS-shared resources with this suffix
#: (k8s-device-plugin `api/config/v1/consts.go`, DefaultSharedResourceNameSuffix).
SHARED_SUFFIX = ".shared"
# The device plugin names a MIG resource "mig-" + profile with "+" turned into "."
# (k8s-device-plugin internal/rm/rm.go), so `1g.10gb+me` is requested as `mig-1g.10gb.me`.
_MIG_RESOURCE = re.compile(r"(?P<base>[1-9][0-9]?g\.[1-9][0-9]{0,3}gb)(?P<suffix>\.me\.all|\.me|\.gfx|-me)?")

#: The named constructor of each class that has one; other classes use the generic form.
_CONSTRUCTORS: Mapping[str, Callable[[str, int], AcceleratorSlice]] = {
    "mig.nvidia.com": AcceleratorSlice.nvidia_mig,
    "gpu.nvidia.com": AcceleratorSlice.nvidia_gpu,
    "tpu.google.com": AcceleratorSlice.google_tpu,
    "gpu.amd.com": AcceleratorSlice.amd_gpu,
}
#: The command-line flag that supplies each class's pin value, where it has its own.
PIN_FLAGS: Mapping[str, str] = {"gpu.nvidia.com": "--gpu-product", "tpu.google.com": "--tpu-gen"}


@dataclass(frozen=True)
class Replacement:
    """The device class (and the pin value, when known) that replaces one legacy name."""

    resource: str
    device_class: DeviceClass
    #: None when the user has to supply it (see `pin_hint`).
    pin_value: str | None
    #: Something a person should know about the change (shared GPUs become exclusive).
    note: str | None = None

    def make_slice(self, count: int) -> AcceleratorSlice:
        """The slice, through the vendor constructor where there is one (ValueError if invalid)."""
        if self.pin_value is None:
            raise ValueError(f"{self.resource}: {pin_hint(self.device_class)}")
        constructor = _CONSTRUCTORS.get(self.device_class.name)
        if constructor is not None:
            return constructor(self.pin_value, count)
        return AcceleratorSlice(
            self.device_class.name, self.device_class.qualified_pin_attribute, self.pin_value, count
        )


@dataclass(frozen=True)
class Unmigratable:
    """A legacy name migrate has no device class for."""

    resource: str
    reason: str


def pin_hint(device_class: DeviceClass) -> str:
    """What the user must pass to pin `device_class`."""
    flag = PIN_FLAGS.get(device_class.name)
    spelled = f"{flag} VALUE" if flag else f"--pin {device_class.name}=VALUE"
    return (
        f"class {device_class.name} is pinned by {device_class.qualified_pin_attribute}, "
        f"which the resource name does not give; pass {spelled}"
    )


def is_migratable_name(name: str, extra_legacy: frozenset[str], accelerator: Callable[[str], bool]) -> bool:
    """Whether `name` in a limits/requests mapping is something migrate must replace."""
    if is_legacy_resource(name, extra_legacy):
        return True
    return name.startswith(IMPLICIT_DRA_PREFIX) and accelerator(name[len(IMPLICIT_DRA_PREFIX) :])


def resolve(
    name: str,
    pins: Mapping[str, str],
    classes: Callable[[str], DeviceClass | None] = DEVICE_CLASSES.get,
) -> Replacement | Unmigratable:
    """The replacement for legacy resource `name`, with `pins` (device class -> pin value)."""
    if name.startswith(MIG_PREFIX):
        return _mig(name)
    if name.startswith(IMPLICIT_DRA_PREFIX):
        class_name = name[len(IMPLICIT_DRA_PREFIX) :]
        known = classes(class_name)
        if known is None:
            return Unmigratable(
                name, f"device class {class_name} is unknown; declare it under extra-classes in the configuration"
            )
        return Replacement(name, known, pins.get(known.name))
    if name in LEGACY_RESOURCE_NAMES:
        device_class = next(item for item in DEVICE_CLASSES.values() if name in item.legacy_resources)
        note = None
        if name.endswith(SHARED_SUFFIX):
            note = f"{name} was a time-shared GPU; the claim gives the pod an exclusive one"
        return Replacement(name, device_class, pins.get(device_class.name), note)
    return Unmigratable(name, "dra-guard knows no DRA device class for this resource; migrate it by hand")


def _mig(name: str) -> Replacement | Unmigratable:
    device_class = DEVICE_CLASSES["mig.nvidia.com"]
    spelled = name[len(MIG_PREFIX) :]
    note = None
    if spelled.endswith(SHARED_SUFFIX):
        spelled = spelled[: -len(SHARED_SUFFIX)]
        note = f"{name} was a time-shared MIG device; the claim gives the pod an exclusive one"
    match = _MIG_RESOURCE.fullmatch(spelled)
    if match is None:
        return Unmigratable(name, f"{spelled!r} is not a MIG profile the NVIDIA device plugin publishes")
    suffix = match["suffix"] or ""
    profile = match["base"] + ("+" + suffix[1:] if suffix.startswith(".") else suffix)
    if not MIG_PROFILE_PATTERN.fullmatch(profile):  # pragma: no cover - the two grammars agree
        return Unmigratable(name, f"{profile!r} is not a MIG profile")
    return Replacement(name, device_class, profile, note)
