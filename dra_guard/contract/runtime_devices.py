"""GPUs the NVIDIA container runtime gives a container that asks for none.

Without a resource or a claim, a container is given NVIDIA GPUs by the NVIDIA Container
Toolkit on two requests it reads from the container itself (NVIDIA/nvidia-container-toolkit
@ d34b3046758cb1a5db606b2a39519c731bbf9f56):

* the environment variable `NVIDIA_VISIBLE_DEVICES` (internal/config/image/envvars.go): `all`,
  GPU indexes or UUIDs give the container those GPUs, `void`, empty or unset none, `none` none
  but the driver's libraries (image/devices.go `NewVisibleDevices`, cuda_image.go
  `devicesFromEnvvars`).  An unprivileged container's variable is honoured unless the node's
  toolkit sets `accept-nvidia-visible-devices-envvar-when-unprivileged = false`, which is not
  the default (api/config/v1/config.go `GetDefault`: `AcceptEnvvarUnprivileged: true`;
  cuda_image.go `VisibleDevices`);
* a pod annotation `nvidia.cdi.k8s.io/container.<container>`, `nvidia.cdi.k8s.io/pod` or
  `nvidia.cdi.k8s.io` naming CDI devices (`nvidia.com/gpu=all`), which the toolkit's NRI plugin
  injects where it runs (cmd/nvidia-ctk-installer/container/runtime/nri/plugin.go
  `injectCDIDevices`; containerd/nri pkg/plugin/annotations.go `GetEffectiveAnnotation`),
  for any namespace but `management.nvidia.com/gpu`, allowed in its namespaces only.

Which devices a variable or annotation names is the node's to resolve; the manifest shows only
that it asks.  An image's own `ENV NVIDIA_VISIBLE_DEVICES=all` (every CUDA base image has it) is
not in the manifest at all: only the node's toolkit configuration closes that (README,
"Memory erasure: what is guaranteed today").
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
#: Values that give the container no GPU, as written: any other spelling (spaces, `void` in a
#: list), which the toolkit may also read as none, is reported (rewrite it as one of these).
NAMES_NO_DEVICE = frozenset({"", "void", "none"})
#: The NRI plugin's annotation key (`nriCDIAnnotationDomain`).
CDI_ANNOTATION = "nvidia.cdi.k8s.io"


def cdi_annotation_keys(container: str) -> tuple[str, ...]:
    """The pod annotations that give `container` CDI devices, in the NRI plugin's order (the
    container's first)."""
    return (f"{CDI_ANNOTATION}/container.{container}", f"{CDI_ANNOTATION}/pod", CDI_ANNOTATION)


def visible_devices_asked(container: Mapping[str, Any]) -> Iterator[tuple[int, str]]:
    """Each `env` entry (its index, and why) that sets NVIDIA_VISIBLE_DEVICES to name
    devices, or from a source the manifest does not show."""
    env = container.get("env")
    if not isinstance(env, list):
        return
    for index, entry in enumerate(env):
        if not isinstance(entry, Mapping) or entry.get("name") != VISIBLE_DEVICES:
            continue
        if entry.get("valueFrom") is not None:
            yield index, f"sets {VISIBLE_DEVICES} from a source the manifest does not show (valueFrom)"
        elif entry.get("value") not in NAMES_NO_DEVICE and entry.get("value") is not None:
            yield index, f"sets {VISIBLE_DEVICES}={entry.get('value')!r}"
