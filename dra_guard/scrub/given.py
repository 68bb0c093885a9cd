"""Which NVIDIA GPUs and MIG devices a container was given, and which of them CUDA reached.

The device nodes are the record of what a container was given. The NVIDIA DRA driver hands
devices over through CDI and sets `NVIDIA_VISIBLE_DEVICES=void` (k8s-dra-driver-gpu,
`cmd/gpu-kubelet-plugin/cdi.go`), so the environment names nothing. Its CDI specs come from
the container toolkit (`pkg/nvcdi`): a whole GPU is `/dev/nvidiaN` (N is the GPU's minor
number); a MIG device is its parent's `/dev/nvidiaN` plus two capability nodes,
`/dev/nvidia-caps/nvidia-capM`, one for its GPU instance and one for its compute instance.
Which MIG instance a capability node opens is listed in /proc/driver/nvidia-caps/mig-minors
(`gpu0/gi1/ci0/access 21`; the toolkit's `internal/nvcaps`).

CUDA does not show a process every device it was given: "a single CUDA process can only
enumerate a single MIG device", and "CUDA will not enumerate non-MIG GPU if any compute
instance is enumerated on any other GPU" (NVIDIA MIG User Guide, "CUDA Device Enumeration",
https://docs.nvidia.com/datacenter/tesla/mig-user-guide/mig-device-names.html), and
CUDA_VISIBLE_DEVICES hides any. So the scrubber names each device CUDA shows it (its UUID,
through NVML: its GPU's minor number, and for a MIG device its GPU and compute instance IDs)
and compares: when a device given is not among them, each device given is scrubbed in a
process that CUDA shows it alone (apart.py); a device given and not scrubbed, or one that
cannot be told apart, fails the scrub.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

MIG_MINORS = "/proc/driver/nvidia-caps/mig-minors"

_GPU_NODE = re.compile(r"nvidia(\d+)")
_CAP_NODE = re.compile(r"nvidia-cap(\d+)")
_GI_CAP = re.compile(r"gpu(\d+)/gi(\d+)/access")
_CI_CAP = re.compile(r"gpu(\d+)/gi(\d+)/ci(\d+)/access")
#: Capabilities that are no device: creating and destroying MIG instances, and watching them.
_NOT_DEVICES = frozenset({"config", "monitor"})

#: Where a device is: (GPU minor, GPU instance ID, compute instance ID), both IDs None for a
#: whole GPU, the compute instance None for a GPU instance given without one.
Key = tuple[int, int | None, int | None]


@dataclass(frozen=True)
class GivenDevice:
    """One NVIDIA GPU or MIG device the container was given."""

    #: Where it is (`Key`); None for a capability node that cannot be placed.
    key: Key | None
    #: Its device nodes, as the container sees them.
    nodes: tuple[str, ...]

    def label(self, uuid: str | None = None) -> str:
        if self.key is None:
            named = self.nodes[0]
        else:
            gpu, gi, ci = self.key
            named = f"/dev/nvidia{gpu}"
            if gi is not None:
                named += f" MIG gi{gi}/ci{ci}" if ci is not None else f" MIG gi{gi} (no compute instance)"
        return f"{named} ({uuid})" if uuid else named


@dataclass(frozen=True)
class NamedDevice:
    """A device NVML names: its UUID (`GPU-…` or `MIG-…`) and where it is."""

    uuid: str
    gpu_minor: int
    gpu_instance: int | None = None
    compute_instance: int | None = None

    @property
    def key(self) -> Key:
        return (self.gpu_minor, self.gpu_instance, self.compute_instance)


def given_devices(dev: str = "/dev", mig_minors: str = MIG_MINORS) -> tuple[list[GivenDevice], list[str]]:
    """The NVIDIA devices whose nodes are under `dev`, and why any cannot be placed.

    A GPU with MIG capability nodes is given as those MIG devices (its memory outside them is
    other instances'); a GPU without is given whole. A capability node that mig-minors does not
    place is given as itself: it can never be matched, so it fails the scrub, as it should.
    """
    gpus = sorted(int(match.group(1)) for name in _listing(dev) if (match := _GPU_NODE.fullmatch(name)))
    caps_dir = os.path.join(dev, "nvidia-caps")
    caps = sorted(int(match.group(1)) for name in _listing(caps_dir) if (match := _CAP_NODE.fullmatch(name)))
    problems: list[str] = []
    given: list[GivenDevice] = []
    table: dict[int, str] = {}
    unread = None
    if caps:
        table, unread = _mig_minors(mig_minors)
    instances: dict[tuple[int, int], list[str]] = {}
    computes: dict[tuple[int, int, int], list[str]] = {}
    unplaced: list[str] = []
    for minor in caps:
        node = os.path.join(caps_dir, f"nvidia-cap{minor}")
        capability = table.get(minor, "")
        if capability in _NOT_DEVICES:
            continue
        if match := _CI_CAP.fullmatch(capability):
            gpu, gi, ci = (int(group) for group in match.groups())
            computes.setdefault((gpu, gi, ci), []).append(node)
        elif match := _GI_CAP.fullmatch(capability):
            gpu, gi = (int(group) for group in match.groups())
            instances.setdefault((gpu, gi), []).append(node)
        else:
            unplaced.append(node)
    parents = {gpu for gpu, _gi, _ci in computes} | {gpu for gpu, _gi in instances}
    for gpu in gpus:
        if gpu not in parents:
            given.append(GivenDevice((gpu, None, None), (os.path.join(dev, f"nvidia{gpu}"),)))
    for (gpu, gi, ci), nodes in sorted(computes.items()):
        given.append(GivenDevice((gpu, gi, ci), (*instances.get((gpu, gi), []), *nodes)))
    with_compute = {(gpu, gi) for gpu, gi, _ci in computes}
    for (gpu, gi), nodes in sorted(instances.items()):
        if (gpu, gi) not in with_compute:
            given.append(GivenDevice((gpu, gi, None), tuple(nodes)))
    if unplaced:
        why = unread or "does not list them as MIG instances"
        problems.append(f"cannot tell which MIG devices {', '.join(unplaced)} give: {mig_minors} {why}")
        given += [GivenDevice(None, (node,)) for node in unplaced]
    return given, problems


def unscrubbed(given: list[GivenDevice], reached: set[Key]) -> list[GivenDevice]:
    """The devices given and not reached: by key, so a device that cannot be placed never is."""
    return [device for device in given if device.key is None or device.key not in reached]


def bare_uuid(uuid: str) -> str:
    """A UUID without its `GPU-`/`MIG-` prefix, lower case: how CUDA's 16 bytes read."""
    text = uuid.strip().lower()
    return text[4:] if text[:4] in ("gpu-", "mig-") else text


def _mig_minors(path: str) -> tuple[dict[int, str], str | None]:
    """mig-minors as {minor: capability}, or why it cannot be read."""
    try:
        with open(path, encoding="ascii") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as error:
        return {}, f"cannot be read ({error.__class__.__name__})"
    table: dict[int, str] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            table[int(parts[1])] = parts[0]
    return table, None if table else "lists no capability"


def _listing(folder: str) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []
