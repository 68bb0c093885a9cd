"""A fake CUDA driver module (`cuda.bindings.driver`, as far as the scrubber calls it) over host
memory, for tests/test_scrub.py, in the test's process and in the processes the scrubber
starts to scrub one device each (dra_guard/scrub/apart.py).

It shows a process the devices of a node (`FakeDevice`) as real CUDA does: all of them when
CUDA_VISIBLE_DEVICES is unset, else those it names by UUID, in its order, up to the first
name that matches none; and never more than one MIG device, nor a whole GPU beside one
(NVIDIA MIG User Guide, "CUDA Device Enumeration").  With none, cuInit fails with
CUDA_ERROR_NO_DEVICE, as the driver API's does.  A child process gets the same node: the
test puts `child_site()` first on PYTHONPATH, whose `cuda.bindings.driver` is this fake built
from DRA_GUARD_FAKE_CUDA (`node_setting`).  Only the standard library is imported here.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import signal
import tempfile
import time
import types
from dataclasses import dataclass
from typing import Any

MIB = 1024 * 1024
SETTING = "DRA_GUARD_FAKE_CUDA"


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_NO_DEVICE = 100


class CUdevice_attribute(enum.IntEnum):  # cuda-python's name
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16


@dataclass
class FakeDevice:
    """One device of the node: `uuid` as NVML writes it (`GPU-…`, `MIG-…`)."""

    uuid: str
    total: int = 64 * MIB
    #: Memory the scrubber's own context takes.
    context: int = 4 * MIB
    #: Memory other processes hold.
    held: int = 0
    #: Bytes the previous holder left, found at the start of the first allocation.
    residue: int = 0
    multiprocessors: int = 8
    #: What cuDeviceGetUuid_v2 says: "" its own UUID, None no UUID (an error), else that UUID
    #: (another device's: the process did not reach the device it was pointed at).
    cuda_uuid: str | None = ""
    #: What a process does once it makes a context on the device: "" scrub it, "crash" be
    #: killed (SIGKILL), "hang" sleep, "silent" exit 0 saying nothing, "raise" an uncaught error.
    fails: str = ""


def visible(node: list[FakeDevice], setting: str | None) -> list[int]:
    """The positions in `node` of the devices CUDA shows a process, in CUDA's order."""
    if setting is None:
        chosen = list(range(len(node)))
    else:
        chosen = []
        for entry in setting.split(","):
            matches = [place for place, device in enumerate(node) if device.uuid.lower() == entry.strip().lower()]
            if not matches:
                break
            chosen.append(matches[0])
    migs = [place for place in chosen if node[place].uuid.startswith("MIG-")]
    return migs[:1] if migs else chosen


class FakeCuda(types.ModuleType):
    """`cuda.bindings.driver` over host memory, showing the devices `visible` picks."""

    CUresult = CUresult
    CUdevice_attribute = CUdevice_attribute

    def __init__(self, node: list[FakeDevice]) -> None:
        super().__init__("cuda.bindings.driver")
        self.node = node
        self.shown: list[int] = []
        self.current = 0
        self.used = [0] * len(node)
        self.residue = [device.residue for device in node]
        self.memory: dict[int, bytearray] = {}

    def cuInit(self, flags: int) -> tuple[Any, ...]:
        self.shown = visible(self.node, os.environ.get("CUDA_VISIBLE_DEVICES"))
        return (CUresult.CUDA_SUCCESS if self.shown else CUresult.CUDA_ERROR_NO_DEVICE,)

    def _device(self, ordinal: int) -> FakeDevice:
        return self.node[self.shown[ordinal]]

    def cuDeviceGetCount(self) -> tuple[Any, ...]:
        return (CUresult.CUDA_SUCCESS, len(self.shown))

    def cuDeviceGet(self, ordinal: int) -> tuple[Any, ...]:
        return (CUresult.CUDA_SUCCESS, ordinal)

    def cuDeviceGetName(self, size: int, ordinal: int) -> tuple[Any, ...]:
        return (CUresult.CUDA_SUCCESS, b"NVIDIA Fake\0\0")

    def cuDeviceGetAttribute(self, attribute: CUdevice_attribute, ordinal: int) -> tuple[Any, ...]:
        assert attribute is CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
        return (CUresult.CUDA_SUCCESS, self._device(ordinal).multiprocessors)

    def cuDeviceGetUuid_v2(self, ordinal: int) -> tuple[Any, ...]:
        device = self._device(ordinal)
        uuid = device.uuid if device.cuda_uuid == "" else device.cuda_uuid
        if uuid is None:
            return (CUresult.CUDA_ERROR_INVALID_VALUE, None)
        return (CUresult.CUDA_SUCCESS, types.SimpleNamespace(bytes=bytes.fromhex(uuid[4:].replace("-", ""))))

    def cuDevicePrimaryCtxRetain(self, ordinal: int) -> tuple[Any, ...]:
        fails = self._device(ordinal).fails
        if fails == "crash":
            os.kill(os.getpid(), signal.SIGKILL)
        elif fails == "hang":
            time.sleep(3600)
        elif fails == "silent":
            os._exit(0)
        elif fails == "raise":
            raise RuntimeError("the fake driver broke")
        return (CUresult.CUDA_SUCCESS, ordinal)

    def cuDevicePrimaryCtxRelease(self, ordinal: int) -> tuple[Any, ...]:
        return (CUresult.CUDA_SUCCESS,)

    def cuCtxSetCurrent(self, context: int) -> tuple[Any, ...]:
        self.current = self.shown[context]
        return (CUresult.CUDA_SUCCESS,)

    def _free(self) -> int:
        device = self.node[self.current]
        return device.total - device.context - device.held - self.used[self.current]

    def cuMemGetInfo(self) -> tuple[Any, ...]:
        return (CUresult.CUDA_SUCCESS, self._free(), self.node[self.current].total)

    def cuMemAlloc(self, size: int) -> tuple[Any, ...]:
        if size > self._free():
            return (CUresult.CUDA_ERROR_OUT_OF_MEMORY, None)
        self.used[self.current] += size
        pointer = len(self.memory) + 1
        residue = min(size, self.residue[self.current])
        self.residue[self.current] -= residue
        self.memory[pointer] = bytearray(b"\xa5" * residue + bytes(size - residue))
        return (CUresult.CUDA_SUCCESS, pointer)

    def cuMemFree(self, pointer: int) -> tuple[Any, ...]:
        self.used[self.current] -= len(self.memory[pointer])
        return (CUresult.CUDA_SUCCESS,)

    def cuMemcpyDtoH(self, buffer: bytearray, pointer: int, size: int) -> tuple[Any, ...]:
        buffer[:] = self.memory[pointer][:size]
        return (CUresult.CUDA_SUCCESS,)

    def cuMemsetD8(self, pointer: int, value: int, size: int) -> tuple[Any, ...]:
        self.memory[pointer][:size] = bytes([value]) * size
        return (CUresult.CUDA_SUCCESS,)

    def cuCtxSynchronize(self) -> tuple[Any, ...]:
        return (CUresult.CUDA_SUCCESS,)

    def cuGetErrorName(self, error: CUresult) -> tuple[Any, ...]:
        return (CUresult.CUDA_SUCCESS, error.name.encode())


def node_setting(node: list[FakeDevice]) -> str:
    """DRA_GUARD_FAKE_CUDA's value: the node, for a child process."""
    return json.dumps([dataclasses.asdict(device) for device in node])


def from_environment() -> FakeCuda:
    return FakeCuda([FakeDevice(**device) for device in json.loads(os.environ[SETTING])])


_SITE: list[str] = []


def child_site() -> str:
    """A folder whose `cuda.bindings.driver` is `from_environment()`: first on a child's
    PYTHONPATH, with the repository after it."""
    if not _SITE:
        root = tempfile.mkdtemp(prefix="fake-cuda-")
        os.makedirs(os.path.join(root, "cuda", "bindings"))
        for name in ("cuda/__init__.py", "cuda/bindings/__init__.py"):
            with open(os.path.join(root, name), "w", encoding="utf-8"):
                pass
        with open(os.path.join(root, "cuda", "bindings", "driver.py"), "w", encoding="utf-8") as handle:
            handle.write("import sys\nfrom tests.fake_cuda import from_environment\n")
            handle.write("sys.modules[__name__] = from_environment()\n")
        _SITE.append(root)
    return _SITE[0]
