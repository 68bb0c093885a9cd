"""The scrubber a pod runs before its tenant's code (`dra-guard scrub`; README, "Memory
erasure"): the init container's name and command, the default image, and the device classes
it scrubs.  The builders emit it from these facts.

It scrubs through CUDA every NVIDIA device the container sees, so what it scrubs is decided by
the driver of a class's devices, not by the class's name: NVIDIA's GPU driver (full GPUs and
MIG instances), under its own classes and any other that selects its devices (NVIDIA's
per-profile `mig-1g-12gb.gpu.nvidia.com`).  Not `vfio.gpu.nvidia.com` (the GPU is handed to a
virtual machine, where no container runs CUDA on it), and no TPU, AMD, Intel or Gaudi class
(README: not scrubbed, and reported).  Where a class's driver comes from (the catalog, the
configuration, the input's DeviceClass) is the rules' business:
`dra_guard.ruleapi.device_classes.scrubbed_class`.
"""

from __future__ import annotations

import re

from dra_guard.contract.catalog import DEVICE_CLASSES

SCRUB_CONTAINER_NAME = "dra-guard-scrub"
SCRUB_COMMAND = ("dra-guard", "scrub")
#: The image `Dockerfile.scrub` builds and publishes (dra-guard[scrub] on NVIDIA's CUDA base
#: image), pinned by tag; pin your own by digest (`image@sha256:...`) where you mirror it.
DEFAULT_SCRUB_IMAGE = "ghcr.io/dra-guard/scrub:0.1.0"
#: The drivers (`device.driver`, the domain of their attributes) whose devices it scrubs.
SCRUBBED_DRIVERS = frozenset({"gpu.nvidia.com"})
#: Classes of those drivers whose devices no container reaches through CUDA (passthrough).
NOT_SCRUBBED_CLASSES = frozenset({"vfio.gpu.nvidia.com"})

_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}")
_TAG = re.compile(r":[\w][\w.-]{0,127}")


def scrubbed(device_class: str, driver: str | None = None) -> bool:
    """Whether the scrubber can scrub the devices of `device_class`, whose devices' driver is
    `driver` (None: the catalog's driver of the class, where it knows the class)."""
    if driver is None:
        known = DEVICE_CLASSES.get(device_class)
        driver = known.domain if known is not None else None
    return driver in SCRUBBED_DRIVERS and device_class not in NOT_SCRUBBED_CLASSES


#: The catalog's classes it scrubs (for docs; a class of another name may be scrubbed too).
SCRUBBED_CLASSES = frozenset(name for name in DEVICE_CLASSES if scrubbed(name))


def image_pin_problem(image: str) -> str | None:
    """Why `image` is not pinned (by digest, or by a tag other than `latest`); None if it is."""
    if _DIGEST.search(image):
        return None
    last = image.rsplit("/", 1)[-1]
    tag = _TAG.search(last)
    if tag is None:
        return "has no tag or digest (the node would pull whatever :latest is)"
    if tag.group(0) == ":latest":
        return "is pinned to :latest, which moves"
    return None
