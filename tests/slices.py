"""One slice of every vendor constructor, and the attribute values a real device would carry."""

from __future__ import annotations

import dataclasses

from dra_guard import AcceleratorSlice
from dra_guard.contract.mig_profiles import max_per_gpu

# (id, slice, a device value that must match, one that must not)
VENDOR_SLICES = [
    ("nvidia-mig", AcceleratorSlice.nvidia_mig("1g.10gb"), "1g.10gb", "2g.20gb"),
    ("nvidia-mig-me", AcceleratorSlice.nvidia_mig("3g.40gb+me"), "3g.40gb+me", "3g.40gb"),
    (
        "nvidia-gpu",
        AcceleratorSlice.nvidia_gpu("NVIDIA H100 80GB HBM3"),
        "NVIDIA H100 80GB HBM3",
        "NVIDIA A100-SXM4-40GB",
    ),
    ("google-tpu", AcceleratorSlice.google_tpu("v6e"), "v6e", "v5e"),
    ("amd-gpu", AcceleratorSlice.amd_gpu("cpx_nps4"), "cpx_nps4", "spx_nps1"),
]


def with_count(accelerator: AcceleratorSlice, count: int) -> AcceleratorSlice:
    """`accelerator` asking for `count` devices, or for as many MIG devices as one GPU holds
    of its profile (one of a `+me` profile) where that is fewer: the builder refuses slices
    of one GPU that no GPU holds, and slices from several GPUs are DRA011's finding."""
    if accelerator.device_class == "mig.nvidia.com":
        count = min(count, max_per_gpu(accelerator.pin_value)[0])
    return dataclasses.replace(accelerator, count=count)
