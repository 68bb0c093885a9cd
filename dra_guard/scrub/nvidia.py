"""Scrub NVIDIA GPUs and MIG instances through the CUDA driver API (cuda-python).

For each device CUDA shows the process (which may be fewer than the container was given:
dra_guard/scrub/given.py compares the two, and run.py then scrubs each device given in a
process that CUDA shows it alone, apart.py): allocate all free memory in chunks
(halving a chunk the driver refuses, down to `min_chunk`), copy each chunk to the host and
count the bytes that are not zero (what the previous holder left, as the next one would see
it), zero it with cuMemsetD8, copy it back and count again, then free it.

What cannot be read this way is reported, not hidden: the memory that was not free when the
scrubber's context became current (`reserved_bytes`: total minus free before the first
allocation: the context's own memory, and whatever another process or the driver held), and
the free memory no chunk could be allocated from (`unreachable_bytes`).  run.py bounds both.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

MIB = 1024 * 1024


class ScrubError(RuntimeError):
    """The devices cannot be scrubbed at all (no CUDA, no device, a driver error)."""


@dataclass(frozen=True)
class DeviceScrub:
    #: Its place among the devices scrubbed: its CUDA ordinal when one process scrubbed them all.
    index: int
    name: str
    total_bytes: int
    reserved_bytes: int
    checked_bytes: int
    nonzero_before_bytes: int
    nonzero_after_bytes: int
    unreachable_bytes: int
    seconds: float
    #: Its streaming multiprocessors (CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT; a MIG device's
    #: own), which a context's memory scales with; None when CUDA does not say.
    multiprocessors: int | None = None
    #: What CUDA calls the device (cuDeviceGetUuid_v2: a MIG device's own UUID), without the
    #: `GPU-`/`MIG-` prefix, which its 16 bytes do not carry; None when CUDA does not say.
    uuid: str | None = None


def load_driver() -> ModuleType:
    """cuda-python's driver bindings (`cuda.bindings.driver`, or `cuda.cuda` before 12.6)."""
    for name in ("cuda.bindings.driver", "cuda.cuda"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ScrubError("cuda-python is not installed (install dra-guard[scrub])")


class _Cuda:
    def __init__(self, driver: ModuleType) -> None:
        self.driver = driver
        self.success = driver.CUresult.CUDA_SUCCESS
        self.out_of_memory = driver.CUresult.CUDA_ERROR_OUT_OF_MEMORY

    def call(self, name: str, *args: Any) -> Any:
        result = getattr(self.driver, name)(*args)
        error, values = result[0], result[1:]
        if error != self.success:
            raise ScrubError(f"{name} failed: {self.describe(error)}")
        return values[0] if len(values) == 1 else values

    def describe(self, error: Any) -> str:
        described = self.driver.cuGetErrorName(error)
        name = described[1] if described[0] == self.success else None
        return name.decode() if isinstance(name, bytes) else str(error)

    @contextmanager
    def context(self, device: Any) -> Iterator[None]:
        context = self.call("cuDevicePrimaryCtxRetain", device)
        try:
            self.call("cuCtxSetCurrent", context)
            yield
        finally:
            self.driver.cuDevicePrimaryCtxRelease(device)


def scrub_all(chunk_bytes: int, min_chunk_bytes: int, driver: ModuleType | None = None) -> list[DeviceScrub]:
    cuda = _Cuda(driver if driver is not None else load_driver())
    cuda.call("cuInit", 0)
    count = cuda.call("cuDeviceGetCount")
    if count == 0:
        raise ScrubError("CUDA sees no device")
    return [_scrub_device(cuda, index, chunk_bytes, min_chunk_bytes) for index in range(count)]


def device_uuids(driver: ModuleType | None = None) -> list[str | None]:
    """The UUID (as `DeviceScrub.uuid`) of each device CUDA shows this process, in CUDA's order,
    None where CUDA gives none; none when cuInit finds no device (CUDA_ERROR_NO_DEVICE: the
    devices may be hidden, by CUDA_VISIBLE_DEVICES).  No context is made: no device memory is
    taken."""
    cuda = _Cuda(driver if driver is not None else load_driver())
    error = cuda.driver.cuInit(0)[0]
    if error == getattr(cuda.driver.CUresult, "CUDA_ERROR_NO_DEVICE", None):
        return []
    if error != cuda.success:
        raise ScrubError(f"cuInit failed: {cuda.describe(error)}")
    count = cuda.call("cuDeviceGetCount")
    return [_uuid(cuda, cuda.call("cuDeviceGet", index)) for index in range(count)]


def scrub_only(uuid: str, chunk_bytes: int, min_chunk_bytes: int, driver: ModuleType | None = None) -> DeviceScrub:
    """Scrub the device `uuid` (bare, as `DeviceScrub.uuid`), when it is the one device CUDA
    shows this process; otherwise ScrubError, before any device memory is touched."""
    cuda = _Cuda(driver if driver is not None else load_driver())
    cuda.call("cuInit", 0)
    count = cuda.call("cuDeviceGetCount")
    if count == 0:
        raise ScrubError("CUDA sees no device")
    shown = [_uuid(cuda, cuda.call("cuDeviceGet", index)) for index in range(count)]
    if shown != [uuid]:
        named = ", ".join(found or "a device without a UUID" for found in shown)
        raise ScrubError(f"CUDA shows {named}, not {uuid} alone")
    return _scrub_device(cuda, 0, chunk_bytes, min_chunk_bytes)


def _scrub_device(cuda: _Cuda, index: int, chunk_bytes: int, min_chunk_bytes: int) -> DeviceScrub:
    device = cuda.call("cuDeviceGet", index)
    raw_name = cuda.call("cuDeviceGetName", 256, device)
    name = raw_name.split(b"\0", 1)[0].decode(errors="replace") if isinstance(raw_name, bytes) else str(raw_name)
    uuid = _uuid(cuda, device)
    multiprocessors = _multiprocessors(cuda, device)
    started = time.perf_counter()
    with cuda.context(device):
        free, total = cuda.call("cuMemGetInfo")
        chunks = _allocate_all(cuda, chunk_bytes, min_chunk_bytes)
        try:
            unreachable, _ = cuda.call("cuMemGetInfo")
            buffers: dict[int, tuple[bytearray, bytes]] = {}
            before = 0
            for pointer, size in chunks:
                buffer, zeros = buffers.setdefault(size, (bytearray(size), bytes(size)))
                cuda.call("cuMemcpyDtoH", buffer, pointer, size)
                before += _nonzero(buffer, zeros)
                cuda.call("cuMemsetD8", pointer, 0, size)
            cuda.call("cuCtxSynchronize")
            after = 0
            for pointer, size in chunks:
                buffer, zeros = buffers[size]
                cuda.call("cuMemcpyDtoH", buffer, pointer, size)
                after += _nonzero(buffer, zeros)
        finally:
            for pointer, _size in chunks:
                cuda.driver.cuMemFree(pointer)
    checked = sum(size for _pointer, size in chunks)
    seconds = time.perf_counter() - started
    return DeviceScrub(
        index,
        name,
        int(total),
        int(total) - int(free),
        checked,
        before,
        after,
        int(unreachable),
        seconds,
        multiprocessors,
        uuid,
    )


def _multiprocessors(cuda: _Cuda, device: Any) -> int | None:
    attributes = getattr(cuda.driver, "CUdevice_attribute", None)
    attribute = getattr(attributes, "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT", None)
    if attribute is None:
        return None
    result = cuda.driver.cuDeviceGetAttribute(attribute, device)
    return int(result[1]) if result[0] == cuda.success and int(result[1]) > 0 else None


def _uuid(cuda: _Cuda, device: Any) -> str | None:
    """The device's UUID as CUDA reports it, or None.  cuDeviceGetUuid_v2 names a MIG device by
    its own UUID; where only cuDeviceGetUuid exists and names it by its parent GPU's, the device
    is taken for that whole GPU, which the container was not given: its MIG device then counts
    as not scrubbed (never the other way round)."""
    for name in ("cuDeviceGetUuid_v2", "cuDeviceGetUuid"):
        function = getattr(cuda.driver, name, None)
        if function is None:
            continue
        result = function(device)
        if result[0] != cuda.success:
            return None
        raw = getattr(result[1], "bytes", None)
        if isinstance(raw, str):
            raw = raw.encode("latin-1")
        if not isinstance(raw, bytes) or len(raw) != 16:
            return None
        text = raw.hex()
        return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
    return None


def _nonzero(buffer: bytearray, zeros: bytes) -> int:
    """The bytes of `buffer` that are not zero: a memcmp when all are (the common case after a
    driver scrub, and always after ours), a count only when some are not."""
    return 0 if buffer == zeros else len(buffer) - buffer.count(0)


def _allocate_all(cuda: _Cuda, chunk_bytes: int, min_chunk_bytes: int) -> list[tuple[Any, int]]:
    chunks: list[tuple[Any, int]] = []
    size = chunk_bytes
    while True:
        result = cuda.driver.cuMemAlloc(size)
        if result[0] == cuda.success:
            chunks.append((result[1], size))
            continue
        if result[0] != cuda.out_of_memory:
            for pointer, _size in chunks:
                cuda.driver.cuMemFree(pointer)
            raise ScrubError(f"cuMemAlloc failed: {cuda.describe(result[0])}")
        if size <= min_chunk_bytes:
            return chunks
        size = max(min_chunk_bytes, size // 2)
