"""The scrubber a pod runs before its tenant's code (`dra-guard scrub`; README, "Memory
erasure"): the init container's name and command, the default image, and the device classes
it scrubs.  The builders emit it from these facts.

It scrubs through CUDA, so only the device classes whose devices a container reaches as CUDA
devices: NVIDIA's full GPUs and MIG instances.  Not `vfio.gpu.nvidia.com` (the GPU is handed
to a virtual machine, where no container runs CUDA on it), and no TPU, AMD, Intel or Gaudi
class (README: not scrubbed, and reported).
"""

from __future__ import annotations

import re

SCRUB_CONTAINER_NAME = "dra-guard-scrub"
SCRUB_COMMAND = ("dra-guard", "scrub")
#: The image `Dockerfile.scrub` builds and publishes (dra-guard[scrub] on NVIDIA's CUDA base
#: image), pinned by tag; pin your own by digest (`image@sha256:...`) where you mirror it.
DEFAULT_SCRUB_IMAGE = "ghcr.io/dra-guard/scrub:0.1.0"
SCRUBBED_CLASSES = frozenset({"gpu.nvidia.com", "mig.nvidia.com"})

_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}")
_TAG = re.compile(r":[\w][\w.-]{0,127}")


def scrubbed(device_class: str) -> bool:
    """Whether the scrubber can scrub the devices of `device_class`."""
    return device_class in SCRUBBED_CLASSES


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
