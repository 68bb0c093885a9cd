"""One scrub of every accelerator the container sees, and its one-line JSON summary.

Exit 0 only when every device the container was given was scrubbed and verified zero.
Residue found before zeroing is evidence (`bytes_nonzero_before`), reported, not a failure.
Exit 1, with a one-line reason on stderr, when a device cannot be scrubbed (no CUDA, a vendor
the scrubber does not support, no device at all), when a GPU or MIG device the container was
given was not among those CUDA scrubbed, or cannot be told apart (`unscrubbed` names them),
when more of a device's memory was in use before the scrub than a CUDA context takes (it is
not read), when memory the driver reports free cannot be reached, or when anything is not
zero after zeroing.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from typing import TextIO

from dra_guard.scrub import nvml
from dra_guard.scrub.devices import SCRUBBABLE, VisibleDevice, visible_devices
from dra_guard.scrub.driver_params import scrub_on_free
from dra_guard.scrub.given import MIG_MINORS, GivenDevice, Key, bare_uuid, given_devices, unscrubbed
from dra_guard.scrub.nvidia import MIB, DeviceScrub, ScrubError, scrub_all

EXIT_SCRUBBED = 0
EXIT_NOT_SCRUBBED = 1

#: The default bound on a device's memory in use before the scrub, per streaming
#: multiprocessor, and its floor.  A bare CUDA primary context was measured to take 555 MiB on
#: a 188-SM RTX PRO 6000 Blackwell and 107 MiB on a 34-SM RTX 4060 Ti, "the cost scales with SM
#: count" (ggml-org/llama.cpp#23604): about 3 MiB per SM.  Twice that leaves room for GPUs
#: with more threads per SM (2048 on H100 and B200, 1536 on those two) and other drivers; it is
#: not measured here.  Above it, the memory is another process's or the driver's, not read.
RESERVED_PER_MULTIPROCESSOR = 6 * MIB
RESERVED_FLOOR = 128 * MIB


@dataclass(frozen=True)
class Settings:
    chunk_bytes: int = 1024 * MIB
    min_chunk_bytes: int = 2 * MIB
    #: Free memory no chunk could be allocated from, above which the scrub fails.
    unreachable_tolerance_bytes: int = 64 * MIB
    #: Memory in use before the scrub above which a device fails; None: the per-SM default.
    reserved_tolerance_bytes: int | None = None
    dev: str = "/dev"
    sys_class: str = "/sys/class/drm"
    mig_minors: str = MIG_MINORS


def scrub(settings: Settings, stdout: TextIO, stderr: TextIO) -> int:
    started = time.perf_counter()
    devices = visible_devices(settings.dev, settings.sys_class)
    problems: list[str] = []
    results: list[DeviceScrub] = []
    if not devices:
        problems.append(f"no accelerator device is visible under {settings.dev} (does this container hold the claims?)")
    unsupported = [device for device in devices if device.vendor not in SCRUBBABLE]
    if unsupported:
        named = ", ".join(f"{device.node} ({device.vendor})" for device in unsupported)
        problems.append(f"cannot scrub {named}: dra-guard scrubs NVIDIA GPUs and MIG instances only")
    driver_scrub = "unknown"
    missed = [device.node for device in unsupported]
    if any(device.vendor == "nvidia" for device in devices):
        driver_scrub = scrub_on_free()
        given, placing = given_devices(settings.dev, settings.mig_minors)
        try:
            results = scrub_all(settings.chunk_bytes, settings.min_chunk_bytes)
        except ScrubError as error:
            problems.append(str(error))
        problems += _verdicts(results, settings)
        not_reached, naming, uuids = _coverage(given, results)
        missed += [device.label(uuids.get(device.key)) for device in not_reached]
        if results:
            problems += placing + naming
            if not_reached:
                problems.append(_not_reached(not_reached, given, uuids))
    seconds = time.perf_counter() - started
    stdout.write(_summary(devices, results, driver_scrub, seconds, problems, missed=missed) + "\n")
    stdout.flush()
    if problems:
        stderr.write(
            f"dra-guard scrub: {problems[0]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "") + "\n"
        )
        return EXIT_NOT_SCRUBBED
    return EXIT_SCRUBBED


def _coverage(
    given: list[GivenDevice], results: list[DeviceScrub]
) -> tuple[list[GivenDevice], list[str], dict[Key | None, str]]:
    """The devices given and not scrubbed, why CUDA's devices could not be named, and the UUID
    NVML gives each device it names."""
    if not results:
        return given, [], {}
    try:
        named = nvml.nvml_devices()
    except ScrubError as error:
        return given, [f"cannot tell which devices CUDA scrubbed: {error}"], {}
    by_uuid = {bare_uuid(device.uuid): device for device in named}
    reached = {by_uuid[result.uuid].key for result in results if result.uuid is not None and result.uuid in by_uuid}
    uuids: dict[Key | None, str] = {device.key: device.uuid for device in named}
    return unscrubbed(given, reached), [], uuids


def _not_reached(missing: list[GivenDevice], given: list[GivenDevice], uuids: dict[Key | None, str]) -> str:
    migs = sum(1 for device in given if device.key is not None and device.key[1] is not None)
    hint = ""
    if migs > 1:
        hint = " (a CUDA process enumerates at most one MIG device)"
    elif migs and len(given) > 1:
        hint = " (CUDA enumerates no whole GPU beside a MIG device)"
    return (
        f"not scrubbed: {', '.join(device.label(uuids.get(device.key)) for device in missing)}: CUDA reached "
        f"{len(given) - len(missing)} of the {len(given)} NVIDIA devices this container was given{hint}"
    )


def _verdicts(results: list[DeviceScrub], settings: Settings) -> list[str]:
    problems = []
    for result in results:
        if result.nonzero_after_bytes:
            problems.append(f"device {result.index}: {result.nonzero_after_bytes} bytes are not zero after zeroing")
        if result.unreachable_bytes > settings.unreachable_tolerance_bytes:
            problems.append(
                f"device {result.index}: {result.unreachable_bytes // MIB} MiB reported free could not be allocated"
            )
        if result.checked_bytes == 0:
            problems.append(f"device {result.index}: no memory could be allocated")
        limit = reserved_limit(result, settings)
        if limit is None:
            problems.append(
                f"device {result.index}: CUDA does not say how many multiprocessors it has, so the "
                f"{result.reserved_bytes // MIB} MiB in use before the scrub cannot be bounded (give --reserved-mib)"
            )
        elif result.reserved_bytes > limit:
            problems.append(
                f"device {result.index}: {result.reserved_bytes // MIB} MiB was in use before the scrub, more than a "
                f"CUDA context takes ({limit // MIB} MiB): another process's or the driver's, not read"
            )
    return problems


def reserved_limit(result: DeviceScrub, settings: Settings) -> int | None:
    """The most memory of `result`'s device that may be in use before the scrub, or None when it
    cannot be told (no --reserved-mib, no multiprocessor count)."""
    if settings.reserved_tolerance_bytes is not None:
        return settings.reserved_tolerance_bytes
    if result.multiprocessors is None:
        return None
    return max(RESERVED_FLOOR, RESERVED_PER_MULTIPROCESSOR * result.multiprocessors)


def _summary(
    devices: list[VisibleDevice],
    results: list[DeviceScrub],
    driver_scrub: str,
    seconds: float,
    problems: list[str],
    *,
    missed: list[str],
) -> str:
    checked = sum(result.checked_bytes for result in results)
    scrub_seconds = sum(result.seconds for result in results)
    return json.dumps(
        {
            "ok": not problems,
            "reason": problems[0] if problems else None,
            "problems": problems,
            "visible": [asdict(device) for device in devices],
            "unscrubbed": missed,
            "devices": [asdict(result) for result in results],
            "bytes_checked": checked,
            "bytes_nonzero_before": sum(result.nonzero_before_bytes for result in results),
            "bytes_nonzero_after": sum(result.nonzero_after_bytes for result in results),
            "bytes_reserved": sum(result.reserved_bytes for result in results),
            "bytes_unreachable": sum(result.unreachable_bytes for result in results),
            "seconds": round(seconds, 3),
            "gb_per_s": round(checked / scrub_seconds / 1e9, 2) if scrub_seconds > 0 and checked else None,
            "driver_scrub_on_free": driver_scrub,
        },
        sort_keys=True,
        separators=(",", ":"),
    )
