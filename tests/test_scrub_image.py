"""The scrubber's image (Dockerfile.scrub) asks the NVIDIA container runtime for no GPU.

Its base, NVIDIA's CUDA image, sets `ENV NVIDIA_VISIBLE_DEVICES=all`, which the toolkit's
legacy runtime honours for unprivileged containers by default (contract.runtime_devices): a
scrubber started from it where nothing overrides the variable would be given every GPU of
the node, not only its claim's.  The image is not built here: that needs a registry."""

from __future__ import annotations

import re

from dra_guard.contract.runtime_devices import NAMES_NO_DEVICE, VISIBLE_DEVICES
from testkit.paths import REPO_ROOT

DOCKERFILE = REPO_ROOT / "Dockerfile.scrub"


def _environment() -> dict[str, str]:
    """The variables the image's own ENV instructions set after its last FROM."""
    joined = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    environment: dict[str, str] = {}
    for line in joined.splitlines():
        keyword, _, rest = line.strip().partition(" ")
        if keyword.upper() == "FROM":
            environment.clear()
        elif keyword.upper() == "ENV":
            for name, value in re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=(\S*)", rest):
                environment[name] = value
    return environment


def test_the_scrubber_image_names_no_gpu_to_the_nvidia_runtime() -> None:
    assert _environment().get(VISIBLE_DEVICES) in NAMES_NO_DEVICE
