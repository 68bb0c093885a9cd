"""The scrubber a pod runs before its tenant's code (`dra-guard scrub`; README, "Memory
erasure"): the init container's name and command, the default image, and the device classes
it scrubs.  The builders emit it from these facts.

It scrubs through CUDA every NVIDIA device the container sees, so what it scrubs is decided by
what a class's devices are, not by the class's name: devices of NVIDIA's GPU driver whose
`type` is `gpu` or `mig` (full GPUs and MIG instances), under NVIDIA's own classes and any
other whose selectors fix both (NVIDIA's per-profile `mig-1g-12gb.gpu.nvidia.com`).  Not the
same driver's `vfio` devices (a GPU bound to vfio-pci for a virtual machine: no container
reaches it through CUDA; NVIDIA's `vfio.gpu.nvidia.com` selects them), and no TPU, AMD, Intel
or Gaudi class (README: not scrubbed, and reported).  Where a class's selectors come from
(the catalog, the configuration, the input's DeviceClass) and how they are read is the
rules' business: `dra_guard.ruleapi.device_classes.scrubbed_class`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from dra_guard.contract.catalog import DEVICE_CLASSES
from dra_guard.contract.container_fields import kept_fields

SCRUB_CONTAINER_NAME = "dra-guard-scrub"
SCRUB_COMMAND = ("dra-guard", "scrub")
#: The image `Dockerfile.scrub` builds and publishes (dra-guard[scrub] on NVIDIA's CUDA base
#: image), pinned by tag; pin your own by digest (`image@sha256:...`) where you mirror it.
DEFAULT_SCRUB_IMAGE = "ghcr.io/dra-guard/scrub:0.1.0"
#: The drivers (`device.driver`, the domain of their attributes) whose devices it scrubs.
SCRUBBED_DRIVERS = frozenset({"gpu.nvidia.com"})
#: For each of those drivers, the attribute every device of it publishes to say what it is,
#: and the values of the devices the scrubber reaches through CUDA.  NVIDIA's GPU driver
#: publishes `type` on every device: `gpu`, `mig` (static and dynamic MIG alike), `vfio` (a
#: GPU bound to vfio-pci, handed to a virtual machine as /dev/vfio nodes) and, for IMEX
#: channels, `imex-channel` (NVIDIA/k8s-dra-driver-gpu @ 22407113785e78c7763b4637689a201eb39c6199,
#: cmd/gpu-kubelet-plugin/types.go, deviceinfo.go `Attributes`/`GetDevice`, mig.go).  A class
#: is scrubbed only where its selectors fix the driver and one of these values.
SCRUBBED_DEVICE_TYPES: Mapping[str, tuple[str, frozenset[str]]] = MappingProxyType(
    {"gpu.nvidia.com": ("type", frozenset({"gpu", "mig"}))}
)
#: The catalog's classes whose devices it scrubs: those whose selector fixes a scrubbed
#: driver and device type (tests/test_scrub_builders.py derives the set from the catalog's
#: selectors, as `check` reads them).  `vfio.gpu.nvidia.com`, of the same driver, is not one.
SCRUBBED_CLASSES = frozenset({"gpu.nvidia.com", "mig.nvidia.com"})

#: The fields the scrubber's container may carry: those the builders write (resources for
#: its claims), those the API server defaults on every container, and securityContext
#: (which a namespace's Pod Security level may require), but not privileged mode
#: (`privileged`, below).  Any other field changes what runs or what it sees (DRA016
#: `scrubber-changed`); `restartPolicy` makes it a sidecar the other containers do not wait
#: for (`scrubber-restartable`).
SCRUBBER_FIELDS = frozenset(
    {
        "name",
        "image",
        "command",
        "resources",
        "imagePullPolicy",
        "terminationMessagePath",
        "terminationMessagePolicy",
        "securityContext",
    }
)

#: Where the kubelet mounts a container's termination message file unless the container
#: names another path (the API server's default for `terminationMessagePath`).  The kubelet
#: bind-mounts a file of the host at that path in the container; named as one of the device
#: nodes the scrubber finds its devices by (`/dev/nvidia0`, `/dev/nvidia-caps/nvidia-cap12`),
#: it would hide that node from the scrubber alone (the mount is the scrubber container's, the
#: tenant's container still sees the device), so the scrubber's must be the default.
TERMINATION_MESSAGE_PATH = "/dev/termination-log"

_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}")
_TAG = re.compile(r":[\w][\w.-]{0,127}")


def scrubbed(device_class: str, driver: str | None = None) -> bool:
    """What the builders, which see no DeviceClass, take the scrubber to scrub: a class the
    catalog knows, when it is one of `SCRUBBED_CLASSES`; any other, when its devices' driver
    (`driver`, the domain a slice pins) is one it scrubs.  That emits the scrubber for a
    class of NVIDIA's driver whose selectors nothing here can read; `check` and admission
    decide such a class by its selectors, and a scrubber given a device it cannot scrub
    exits 1, so the pod never starts (README, "Memory erasure")."""
    if device_class in DEVICE_CLASSES:
        return device_class in SCRUBBED_CLASSES
    return driver in SCRUBBED_DRIVERS


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


def privileged(container: Mapping[str, Any]) -> bool:
    """Whether the container asks for privileged mode: `securityContext.privileged` set to
    anything but false (null is unset; a value the API server refuses counts, failing closed).

    Of the container's securityContext, only this changes which devices the scrubber reaches,
    and so which it scrubs.  The scrubber takes the devices it was given from its device nodes
    (`dra_guard.scrub.given`), and a container opens only the device nodes the runtime put in
    it and its device cgroup allows: for a privileged container containerd adds every device
    of the host and allows them all (containerd/containerd @ 301026e58c619e63d09c0ec411012e54c0124b03,
    internal/cri/server/container_create.go: `oci.WithHostDevices, oci.WithAllDevicesAllowed`),
    so the scrubber would fill and zero the free memory of every GPU and MIG device on the
    node, other pods' included, and count them as given.  The other fields leave that set as
    it is (kubernetes/api @ 10b39a39bcee995dfe7cd5e8e7b922be5e46f1e2, core/v1/types.go
    `SecurityContext`): capabilities and allowPrivilegeEscalation (no_new_privs) change what
    the process may do, and the kernel's device cgroup check does not consult capabilities
    (CAP_SYS_ADMIN would let a program rewrite its cgroup; the scrubber's fixed command does not),
    nor does NVIDIA's driver, which admits a process to a MIG instance only with that instance's
    capability node, administrator or not (NVIDIA/open-gpu-kernel-modules @
    129479b1b7345f0055016ab3aa42ae78a4ca2048, gpu_instance_subscription.c `gisubscriptionConstruct_IMPL`);
    runAsUser, runAsGroup and runAsNonRoot choose who opens the device nodes that are there,
    not which are; procMount Unmasked drops the runtime's masked /proc paths, none of them a
    device; seLinuxOptions, seccompProfile and appArmorProfile can only deny more, and
    readOnlyRootFilesystem touches no device; windowsOptions applies on Windows only, where
    the scrubber does not run."""
    security = container.get("securityContext")
    return isinstance(security, Mapping) and security.get("privileged") not in (None, False)


def moved_termination_message(container: Mapping[str, Any]) -> bool:
    """Whether the container's termination message file is mounted anywhere but the default
    (`TERMINATION_MESSAGE_PATH`; unset or empty, the API server writes the default)."""
    path = container.get("terminationMessagePath")
    return path not in (None, "", TERMINATION_MESSAGE_PATH)


def not_the_scrubber(container: Mapping[str, Any]) -> str | None:
    """Why a container named as the scrubber would not scrub before the pod's other
    containers run, or only the pod's devices, whatever its image: another command, a
    restartPolicy, a field that changes what runs, or privileged mode (None: it is the
    scrubber's shape).  What the builders and `migrate` check before they give a claim to a
    scrubber already in the pod."""
    if container.get("command") != list(SCRUB_COMMAND):
        return f"runs command {container.get('command')!r}, not {list(SCRUB_COMMAND)!r}"
    if container.get("restartPolicy") is not None:
        return (
            f"has restartPolicy {container.get('restartPolicy')!r} (with Always it is a sidecar, and the pod's "
            "containers start before it has finished)"
        )
    changed = sorted(key for key in kept_fields(container) if key not in SCRUBBER_FIELDS)
    if changed:
        return f"sets {', '.join(changed)}, which change what it runs or sees"
    if moved_termination_message(container):
        return (
            f"mounts its termination message at {container.get('terminationMessagePath')!r}, not "
            f"{TERMINATION_MESSAGE_PATH!r} (a file mounted over a device node hides that device from it)"
        )
    if privileged(container):
        return "is privileged (securityContext.privileged), which shows it every device of the node, not only the pod's"
    return None
