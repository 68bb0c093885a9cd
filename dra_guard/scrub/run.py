"""One scrub of every accelerator the container sees, and its one-line JSON summary.

Exit 0 only when every device the container was given was scrubbed and verified zero.
Residue found before zeroing is evidence (`bytes_nonzero_before`), reported, not a failure.
Exit 1, with a one-line reason on stderr, when a device cannot be scrubbed (no CUDA, a vendor
the scrubber does not support, no device at all), when a GPU or MIG device the container was
given was not among those CUDA scrubbed, or cannot be told apart (`unscrubbed` names them),
when more of a device's memory was in use before the scrub than a CUDA context takes (it is
not read), when memory the driver reports free cannot be reached, or when anything is not
zero after zeroing.

When CUDA shows this process every NVIDIA device the container was given, this process
scrubs them all.  When it does not (two MIG devices, a GPU beside a MIG device, a GPU that
CUDA_VISIBLE_DEVICES hides), each device given is scrubbed in a process of its own that CUDA
shows it alone (apart.py), in the order given_devices lists them; this process then makes no
CUDA context at all.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import asdict, dataclass
from typing import TextIO

from dra_guard.scrub import nvml
from dra_guard.scrub.apart import scrub_apart
from dra_guard.scrub.devices import SCRUBBABLE, VisibleDevice, visible_devices
from dra_guard.scrub.driver_params import scrub_on_free
from dra_guard.scrub.given import MIG_MINORS, GivenDevice, Key, NamedDevice, bare_uuid, given_devices, unscrubbed
from dra_guard.scrub.nvidia import MIB, DeviceScrub, ScrubError, device_uuids, scrub_all

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

#: How long a device scrubbed in a process of its own may take before that process is killed
#: and the device counts as not scrubbed.  Not measured: far above what reading a device's
#: memory twice takes (the bench prints GB/s), so only a process that hangs reaches it.
DEVICE_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class Settings:
    chunk_bytes: int = 1024 * MIB
    min_chunk_bytes: int = 2 * MIB
    #: Free memory no chunk could be allocated from, above which the scrub fails.
    unreachable_tolerance_bytes: int = 64 * MIB
    #: Memory in use before the scrub above which a device fails; None: the per-SM default.
    reserved_tolerance_bytes: int | None = None
    #: The time a device scrubbed in a process of its own may take.
    device_timeout_s: float = DEVICE_TIMEOUT_S
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
        results, found, not_scrubbed = _scrub_nvidia(given, placing, settings)
        problems += found
        missed += not_scrubbed
    seconds = time.perf_counter() - started
    stdout.write(_summary(devices, results, driver_scrub, seconds, problems, missed=missed) + "\n")
    stdout.flush()
    if problems:
        stderr.write(
            f"dra-guard scrub: {problems[0]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "") + "\n"
        )
        return EXIT_NOT_SCRUBBED
    return EXIT_SCRUBBED


def _scrub_nvidia(
    given: list[GivenDevice], placing: list[str], settings: Settings
) -> tuple[list[DeviceScrub], list[str], list[str]]:
    """Scrub the NVIDIA devices given, in this process when CUDA shows it all of them, each in
    a process of its own otherwise: the devices scrubbed, the problems, and the devices given
    and not scrubbed (labelled)."""
    try:
        shown = {uuid for uuid in device_uuids() if uuid is not None}
    except ScrubError as error:
        return [], [str(error)], [device.label() for device in given]
    named: list[NamedDevice] | None
    try:
        named, naming = nvml.nvml_devices(), []
    except ScrubError as error:
        named, naming = None, [f"cannot tell which devices CUDA scrubbed: {error}"]
    uuids: dict[Key | None, str] = {device.key: device.uuid for device in named or []}
    if any(device.key in uuids and bare_uuid(uuids[device.key]) not in shown for device in given):
        return _apart(given, placing, uuids, settings)
    return _together(given, placing, settings, named=named, naming=naming, uuids=uuids)


def _together(
    given: list[GivenDevice],
    placing: list[str],
    settings: Settings,
    *,
    named: list[NamedDevice] | None,
    naming: list[str],
    uuids: dict[Key | None, str],
) -> tuple[list[DeviceScrub], list[str], list[str]]:
    """Every device CUDA shows this process, scrubbed here, then matched with those given."""
    problems: list[str] = []
    results: list[DeviceScrub] = []
    try:
        results = scrub_all(settings.chunk_bytes, settings.min_chunk_bytes)
    except ScrubError as error:
        problems.append(str(error))
    problems += _verdicts(results, settings)
    if not results:
        return results, problems, [device.label(uuids.get(device.key)) for device in given]
    not_reached = given
    if named is not None:
        by_uuid = {bare_uuid(device.uuid): device for device in named}
        reached = {by_uuid[result.uuid].key for result in results if result.uuid is not None and result.uuid in by_uuid}
        not_reached = unscrubbed(given, reached)
    problems += placing + naming
    if not_reached:
        problems.append(_not_reached(not_reached, given, uuids, named is not None))
    return results, problems, [device.label(uuids.get(device.key)) for device in not_reached]


def _apart(
    given: list[GivenDevice], placing: list[str], uuids: dict[Key | None, str], settings: Settings
) -> tuple[list[DeviceScrub], list[str], list[str]]:
    """Each device given scrubbed in a process that CUDA shows it alone, in the order given;
    `index` is a device's place among those scrubbed."""
    results: list[DeviceScrub] = []
    failed: list[str] = []
    missed: list[str] = []
    unnamed: list[GivenDevice] = []
    for device in given:
        uuid = uuids.get(device.key)
        if uuid is None:
            missed.append(device.label())
            if device.key is not None:  # one that cannot be placed is in `placing`
                unnamed.append(device)
            continue
        outcome = scrub_apart(uuid, settings.chunk_bytes, settings.min_chunk_bytes, settings.device_timeout_s)
        if isinstance(outcome, str):
            failed.append(f"not scrubbed: {device.label(uuid)}: {outcome}")
            missed.append(device.label(uuid))
        else:
            results.append(dataclasses.replace(outcome, index=len(results)))
    problems = _verdicts(results, settings) + placing + failed
    if unnamed:
        problems.append(
            f"not scrubbed: {', '.join(device.label() for device in unnamed)}: NVML names no such device, so no "
            "process could be given it alone"
        )
    return results, problems, missed


def _not_reached(
    missing: list[GivenDevice], given: list[GivenDevice], uuids: dict[Key | None, str], named: bool
) -> str:
    hint = " (NVML names none of the others, so none could be scrubbed in a process of its own)" if named else ""
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
