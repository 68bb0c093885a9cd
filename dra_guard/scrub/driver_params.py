"""Whether the NVIDIA kernel driver scrubs device memory when it is freed.

Resource Manager scrubs framebuffer pages on free by default on recent GPUs, and per MIG
instance, unless the registry key `RMDisableScrubOnFree` is set to 1 through the module
parameter `NVreg_RegistryDwords` (open-gpu-kernel-modules `mem_scrub.c`, `mem_mgr.c`).  The
driver shows its registry parameters in /proc/driver/nvidia/params (`RegistryDwords: "..."`)
and in sysfs.
"""

from __future__ import annotations

import re

PROC_PARAMS = "/proc/driver/nvidia/params"
SYS_PARAM = "/sys/module/nvidia/parameters/NVreg_RegistryDwords"

_DISABLE = re.compile(r"RMDisableScrubOnFree\s*=\s*(0x[0-9a-f]+|\d+)", re.IGNORECASE)


def scrub_on_free(paths: tuple[str, ...] = (PROC_PARAMS, SYS_PARAM)) -> str:
    """ "disabled" (the key is set non-zero), "not-disabled" (the driver's parameters are
    readable and do not set it), or "unknown" (none of them can be read)."""
    readable = False
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError:
            continue
        readable = True
        for value in _DISABLE.findall(text):
            if int(value, 0) != 0:
                return "disabled"
    return "not-disabled" if readable else "unknown"
