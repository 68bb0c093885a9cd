"""One slice of every vendor constructor, and the attribute values a real device would carry."""

from __future__ import annotations

from dra_guard import AcceleratorSlice

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
