"""How many MIG devices of one profile a single NVIDIA GPU can hold.

A GPU in MIG mode has at most 7 compute slices (GPCs) and 8 memory slices; a profile
`<g>g.<m>gb` takes `g` compute slices and as many memory slices as its memory needs, so one
GPU holds at most min(7 // g, 8 // memory slices) of it, fewer on GPUs with fewer slices
(A30: 4 and 4; RTX PRO 6000 Blackwell: 4), and one of a `+me` / `+me.all` profile (a GPU has
one set of media engines).  Which GPU a profile belongs to shows in its memory size: 1g.10gb
is 1 of 8 memory slices of an 80 GB A100/H100 (7 fit) but 2 of 8 of a 40 GB A100 (4 fit).

`PER_GPU` is NVIDIA's own statement of those maxima: the `all-<profile>` configurations of
NVIDIA/mig-parted (`deployments/systemd/config-default.yaml` @ 219e780dc4a53d391985d6a4844c91bc89db8210,
unchanged at HEAD bd7160f43f16462eeb21e1eda5e67b5b6b03fd7d), each of which partitions every
GPU into as many devices of one profile as it holds; where a profile exists on several GPUs
(1g.10gb, 1g.35gb), the largest count.  A profile not listed (a GPU newer than the table)
gets the bound every MIG GPU obeys: 7 // g, and 1 with media extensions.
"""

from __future__ import annotations

import re
from typing import Final

#: Compute slices of the largest MIG GPUs (A100, H100, H200, GH200, B200, GB200, B300).
COMPUTE_SLICES: Final = 7

#: profile -> the most devices of it one GPU holds, and the GPUs it exists on (from mig-parted's
#: comments and device filters; where those name none, from the memory size: 1g.45gb is a
#: quarter of a 180 GB B200).
PER_GPU: Final[dict[str, tuple[int, str]]] = {
    # A100-40GB, A800-40GB
    "1g.5gb": (7, "A100 40GB"),
    "1g.5gb+me": (1, "A100 40GB"),
    "2g.10gb": (3, "A100 40GB"),
    "3g.20gb": (2, "A100 40GB"),
    "4g.20gb": (1, "A100 40GB"),
    "7g.40gb": (1, "A100 40GB"),
    # H100-80GB, H800-80GB, A100-80GB, A800-80GB (1g.10gb: 7 there, 4 on A100 40GB)
    "1g.10gb": (7, "A100 80GB, H100 80GB; 4 on A100 40GB"),
    "1g.10gb+me": (1, "A100 80GB, H100 80GB"),
    "1g.20gb": (4, "A100 80GB, H100 80GB"),
    "2g.20gb": (3, "A100 80GB, H100 80GB"),
    "3g.40gb": (2, "A100 80GB, H100 80GB"),
    "4g.40gb": (1, "A100 80GB, H100 80GB"),
    "7g.80gb": (1, "A100 80GB, H100 80GB"),
    # A30-24GB: 4 compute and 4 memory slices
    "1g.6gb": (4, "A30"),
    "1g.6gb+me": (1, "A30"),
    "2g.12gb": (2, "A30"),
    "2g.12gb+me": (1, "A30"),
    "4g.24gb": (1, "A30"),
    # H100 NVL (94GB), H100-96GB, GH200 (96GB); 1g.24gb also RTX PRO 6000 Blackwell
    "1g.12gb": (7, "H100 94GB/96GB, GH200 96GB"),
    "1g.12gb+me": (1, "H100 94GB/96GB, GH200 96GB"),
    "1g.24gb": (4, "H100 94GB/96GB, GH200 96GB, RTX PRO 6000 Blackwell"),
    "1g.24gb+me": (1, "H100 94GB/96GB, GH200 96GB"),
    "2g.24gb": (3, "H100 94GB/96GB, GH200 96GB"),
    "3g.47gb": (2, "H100 NVL 94GB"),
    "4g.47gb": (1, "H100 NVL 94GB"),
    "7g.94gb": (1, "H100 NVL 94GB"),
    "3g.48gb": (2, "H100 96GB, GH200 96GB"),
    "4g.48gb": (1, "H100 96GB, GH200 96GB"),
    "7g.96gb": (1, "H100 96GB, GH200 96GB"),
    # RTX PRO 6000 Blackwell: 4 compute slices; +gfx (graphics), -me (no media), +me.all
    "1g.24gb+gfx": (4, "RTX PRO 6000 Blackwell"),
    "1g.24gb+me.all": (1, "RTX PRO 6000 Blackwell"),
    "1g.24gb-me": (4, "RTX PRO 6000 Blackwell"),
    "2g.48gb": (2, "RTX PRO 6000 Blackwell"),
    "2g.48gb+gfx": (2, "RTX PRO 6000 Blackwell"),
    "2g.48gb+me.all": (1, "RTX PRO 6000 Blackwell"),
    "2g.48gb-me": (2, "RTX PRO 6000 Blackwell"),
    "4g.96gb": (1, "RTX PRO 6000 Blackwell"),
    "4g.96gb+gfx": (1, "RTX PRO 6000 Blackwell"),
    # H200-141GB, H200 NVL; 1g.18gb also GH200 144GB HBM3e; 1g.35gb: 7 on GB300
    "1g.18gb": (7, "H200 141GB, GH200 144GB"),
    "1g.18gb+me": (1, "H200 141GB, GH200 144GB"),
    "1g.35gb": (7, "GB300; 4 on H200 141GB"),
    "1g.35gb+me": (1, ""),
    "2g.35gb": (3, "H200 141GB"),
    "3g.71gb": (2, "H200 141GB"),
    "4g.71gb": (1, "H200 141GB"),
    "7g.141gb": (1, "H200 141GB"),
    # GH200 144GB HBM3e
    "1g.36gb": (4, "GH200 144GB"),
    "2g.36gb": (3, "GH200 144GB"),
    "3g.72gb": (2, "GH200 144GB"),
    "4g.72gb": (1, "GH200 144GB"),
    "7g.144gb": (1, "GH200 144GB"),
    # B200 (1g.23gb also GB200)
    "1g.23gb": (7, "B200, GB200"),
    "1g.23gb+me": (1, "B200, GB200"),
    "1g.45gb": (4, "B200"),
    "2g.45gb": (3, "B200"),
    "3g.90gb": (2, "B200"),
    "4g.90gb": (1, "B200"),
    "7g.180gb": (1, "B200"),
    # GB200
    "1g.47gb": (4, "GB200"),
    "2g.47gb": (3, "GB200"),
    "3g.93gb": (2, "GB200"),
    "4g.93gb": (1, "GB200"),
    "7g.186gb": (1, "GB200"),
    # Listed without a GPU name in mig-parted
    "3g.95gb": (2, ""),
    "4g.95gb": (1, ""),
    "7g.189gb": (1, ""),
    # B300 (1g.34gb, 1g.67gb, 2g.67gb, 3g.135gb, 4g.135gb, 7g.269gb) and GB300
    "1g.34gb": (7, "B300"),
    "1g.34gb+me": (1, "B300"),
    "1g.67gb": (4, "B300"),
    "2g.67gb": (3, "B300"),
    "3g.135gb": (2, "B300"),
    "4g.135gb": (1, "B300"),
    "7g.269gb": (1, "B300"),
    "1g.70gb": (4, "GB300"),
    "2g.70gb": (3, "GB300"),
    "3g.139gb": (2, "GB300"),
    "4g.139gb": (1, "GB300"),
    "7g.278gb": (1, "GB300"),
}

_COMPUTE = re.compile(r"([0-9]+)g\.")


def max_per_gpu(profile: str) -> tuple[int, str]:
    """The most MIG devices of `profile` one GPU holds, and why (for an error message).

    `profile` is a well-formed MIG profile string (catalog.MIG_PROFILE_PATTERN)."""
    known = PER_GPU.get(profile)
    if known is not None:
        count, gpus = known
        where = f"{gpus}; " if gpus else ""
        return count, f"{where}NVIDIA mig-parted all-{profile.replace('+', '.')}"
    if profile.endswith(("+me", "+me.all")):
        return 1, "a GPU has one set of media engines, so one +me profile"
    match = _COMPUTE.match(profile)
    compute = int(match.group(1)) if match else 1
    # At least 1: whether such a profile exists at all is the pin value's question, not the count's.
    return max(COMPUTE_SLICES // compute, 1), f"a MIG GPU has at most {COMPUTE_SLICES} compute slices, {compute} each"
