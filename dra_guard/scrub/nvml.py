"""Name the NVIDIA devices this process can see, through NVML (libnvidia-ml.so.1, the driver's
management library, which the container toolkit mounts beside libcuda).

For each GPU: its UUID and minor number (the N of /dev/nvidiaN); for each MIG device on it
that this process can open: its UUID and its GPU and compute instance IDs (what the MIG
capability nodes name).  Read through ctypes, so the scrubber needs no other package.
"""

from __future__ import annotations

import ctypes
from typing import Any

from dra_guard.scrub.given import NamedDevice
from dra_guard.scrub.nvidia import ScrubError

LIBRARY = "libnvidia-ml.so.1"
_SUCCESS = 0
#: NVML_DEVICE_UUID_V2_BUFFER_SIZE.
_UUID_BUFFER = 96


def nvml_devices(library: str = LIBRARY) -> list[NamedDevice]:
    """Every GPU and MIG device NVML names for this process; ScrubError when NVML cannot be
    used at all.  A device NVML will not describe is left out (so never counts as reached)."""
    try:
        nvml: Any = ctypes.CDLL(library)
    except OSError as error:
        raise ScrubError(f"NVML ({library}) cannot be loaded: {error}") from None
    code = nvml.nvmlInit_v2()
    if code != _SUCCESS:
        raise ScrubError(f"nvmlInit_v2 failed ({code})")
    try:
        count = ctypes.c_uint()
        code = nvml.nvmlDeviceGetCount_v2(ctypes.byref(count))
        if code != _SUCCESS:
            raise ScrubError(f"nvmlDeviceGetCount_v2 failed ({code})")
        found: list[NamedDevice] = []
        for index in range(count.value):
            found += _gpu_and_its_migs(nvml, index)
        return found
    finally:
        nvml.nvmlShutdown()


def _gpu_and_its_migs(nvml: Any, index: int) -> list[NamedDevice]:
    gpu = ctypes.c_void_p()
    minor = ctypes.c_uint()
    if nvml.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(index), ctypes.byref(gpu)) != _SUCCESS:
        return []
    uuid = _uuid(nvml, gpu)
    if uuid is None or nvml.nvmlDeviceGetMinorNumber(gpu, ctypes.byref(minor)) != _SUCCESS:
        return []
    found = [NamedDevice(uuid, minor.value)]
    most = ctypes.c_uint()
    if nvml.nvmlDeviceGetMaxMigDeviceCount(gpu, ctypes.byref(most)) != _SUCCESS:
        return found  # not MIG-capable: NVML_ERROR_NOT_SUPPORTED
    for position in range(most.value):
        mig = ctypes.c_void_p()
        gi, ci = ctypes.c_uint(), ctypes.c_uint()
        if nvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu, ctypes.c_uint(position), ctypes.byref(mig)) != _SUCCESS:
            continue  # no MIG device there, or not this process's to open
        mig_uuid = _uuid(nvml, mig)
        if (
            mig_uuid is not None
            and nvml.nvmlDeviceGetGpuInstanceId(mig, ctypes.byref(gi)) == _SUCCESS
            and nvml.nvmlDeviceGetComputeInstanceId(mig, ctypes.byref(ci)) == _SUCCESS
        ):
            found.append(NamedDevice(mig_uuid, minor.value, gi.value, ci.value))
    return found


def _uuid(nvml: Any, handle: ctypes.c_void_p) -> str | None:
    buffer = ctypes.create_string_buffer(_UUID_BUFFER)
    if nvml.nvmlDeviceGetUUID(handle, buffer, ctypes.c_uint(_UUID_BUFFER)) != _SUCCESS:
        return None
    return buffer.value.decode("ascii", errors="replace")
