"""`dra-guard scrub` (and `python -m dra_guard.scrub`): its command line."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

MIB = 1024 * 1024


def _whole(unit: str) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of {unit}") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"{value} {unit}: must be at least 1")
        return value

    return parse


_mebibytes = _whole("MiB")
_seconds = _whole("s")


def add_scrub_parser(commands: Any) -> None:
    scrub = commands.add_parser(
        "scrub",
        help="in a pod, before the tenant's code: read, zero and verify the memory of every accelerator it holds",
        description="Run as the pod's first init container, holding every accelerator claim of the pod. Prints "
        "one JSON line (devices, bytes checked, bytes found non-zero before zeroing, seconds, GB/s, and "
        "'unscrubbed': every device the container was given that was not scrubbed); exits 1 with a one-line "
        "reason when a device cannot be scrubbed or is not zero after zeroing, and when a GPU or MIG device the "
        "container was given (its /dev/nvidiaN and /dev/nvidia-caps nodes) is not among those CUDA scrubbed, "
        "named by UUID through NVML, or cannot be told apart, and when more of a device's memory was in use "
        "before it ran than --reserved-mib (that memory is not read). A CUDA process enumerates at most one MIG "
        "device, and no whole GPU beside one: when CUDA does not show it every device the container was given, "
        "each is scrubbed in a process of its own with CUDA_VISIBLE_DEVICES set to its UUID, and one whose "
        "process fails, runs past --device-timeout-s or reaches another device is not scrubbed. NVIDIA GPUs and "
        "MIG instances only (install dra-guard[scrub]); any other accelerator is refused.",
    )
    scrub.add_argument("--chunk-mib", type=_mebibytes, default=1024, help="allocation size to start with (1024)")
    scrub.add_argument("--min-chunk-mib", type=_mebibytes, default=2, help="smallest allocation tried (2)")
    scrub.add_argument(
        "--unreachable-mib",
        type=_mebibytes,
        default=64,
        help="free memory that may stay unallocated before the scrub fails (64)",
    )
    scrub.add_argument(
        "--reserved-mib",
        type=_mebibytes,
        default=None,
        help="memory of a device that may be in use before the scrub (total minus free once the scrubber's CUDA "
        "context exists: that context, and whatever another process or the driver holds, none of it read) before "
        "the scrub fails (default: 6 MiB per streaming multiprocessor, at least 128: twice the ~3 MiB per SM a bare "
        "CUDA context was measured to take, 555 MiB on a 188-SM RTX PRO 6000 and 107 MiB on a 34-SM RTX 4060 Ti, "
        "ggml-org/llama.cpp#23604; not measured by dra-guard)",
    )
    scrub.add_argument(
        "--device-timeout-s",
        type=_seconds,
        default=1800,
        help="how long a device scrubbed in a process of its own may take before that process is killed and the "
        "device is not scrubbed (1800)",
    )
    scrub.add_argument("--dev", default="/dev", help=argparse.SUPPRESS)  # tests: another /dev
    scrub.add_argument("--sys-class", default="/sys/class/drm", help=argparse.SUPPRESS)
    scrub.add_argument("--mig-minors", default="/proc/driver/nvidia-caps/mig-minors", help=argparse.SUPPRESS)


def run_scrub(arguments: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from dra_guard.scrub.run import Settings, scrub

    if arguments.min_chunk_mib > arguments.chunk_mib:
        stderr.write("dra-guard scrub: --min-chunk-mib is larger than --chunk-mib\n")
        return 2
    settings = Settings(
        chunk_bytes=arguments.chunk_mib * MIB,
        min_chunk_bytes=arguments.min_chunk_mib * MIB,
        unreachable_tolerance_bytes=arguments.unreachable_mib * MIB,
        reserved_tolerance_bytes=None if arguments.reserved_mib is None else arguments.reserved_mib * MIB,
        device_timeout_s=arguments.device_timeout_s,
        dev=arguments.dev,
        sys_class=arguments.sys_class,
        mig_minors=arguments.mig_minors,
    )
    return scrub(settings, stdout, stderr)
