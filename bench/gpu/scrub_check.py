"""The scrubber on a real NVIDIA GPU (issue: "Verified on a GPU").  Run by scrub_check.sh.

1. Process A fills every byte of device memory it can allocate with a pattern and exits.
2. The scrubber runs: it must report the residue it found (or none, when the driver's
   scrub-on-free cleared it, which it then says) and leave none, and exit 0, which also needs
   the memory in use before it ran (its own CUDA context, on an idle GPU) to be within its
   default bound (6 MiB per SM): the MiB per SM measured is printed.
3. Process B allocates all free memory and must find no byte of the pattern.
4. The scrubber's rate (GB/s): on the whole GPU, or, where MIG is already configured (this
   script never changes the GPU's MIG mode), steps 1-3 run on the first MIG instance
   (CUDA_VISIBLE_DEVICES) and the scrubber is given that instance's nodes alone, as a
   container would be: a folder of empty files named like them stands for its /dev (the
   scrubber reads which devices it was given from the names).
5. Fail-closed: given one device node more, a /dev/nvidiaN past the last GPU, which CUDA cannot
   reach, the scrubber must exit 1 and name it (alone) in `unscrubbed`.
6. Each device in a process of its own (dra_guard/scrub/apart.py: a child with
   CUDA_VISIBLE_DEVICES set to the device's UUID), where CUDA shows the scrubber fewer devices
   than it was given; each must exit 0 with exactly the devices given in `devices` (by UUID)
   and `unscrubbed` empty:
   - the devices of steps 1-3, hidden from the scrubber itself (CUDA_VISIBLE_DEVICES=-1, so
     its cuInit finds no device);
   - where there are two MIG instances, with no CUDA_VISIBLE_DEVICES, as in a container: A
     fills the second, the scrubber is given both (a CUDA process enumerates one), and B must
     then find none of the pattern on the second;
   - where a GPU not in MIG mode is beside a MIG instance: given both (CUDA enumerates no
     whole GPU beside a MIG device).
   A case this machine cannot make is printed as not run, not skipped in silence.

Prints one JSON line per step and a last line, `RESULT ok|FAILED`, then exits 0 or 1.
Needs cuda-python (`cuda.bindings`) and the repository on PYTHONPATH; nothing else.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from typing import Any

PATTERN = 0xA5
CHUNK = 1 << 30
MIN_CHUNK = 2 << 20

# Both helpers start the same way: the parameters, and a context on device 0.
PREAMBLE = r"""
import sys
CHUNK, MIN_CHUNK, PATTERN = map(int, sys.argv[1:4])
from cuda.bindings import driver as d
ok = d.CUresult.CUDA_SUCCESS
assert d.cuInit(0)[0] == ok
err, dev = d.cuDeviceGet(0); assert err == ok
err, ctx = d.cuDevicePrimaryCtxRetain(dev); assert err == ok
assert d.cuCtxSetCurrent(ctx)[0] == ok
"""

FILL = (
    PREAMBLE
    + r"""
size, filled = CHUNK, 0
while True:
    err, ptr = d.cuMemAlloc(size)
    if err == ok:
        assert d.cuMemsetD8(ptr, PATTERN, size)[0] == ok
        filled += size
        continue
    if size <= MIN_CHUNK:
        break
    size //= 2
assert d.cuCtxSynchronize()[0] == ok
print(filled)
# exits without freeing: the process's memory goes back to the driver as a tenant's would
"""
)

SEARCH = (
    PREAMBLE
    + r"""
size, searched, found = CHUNK, 0, 0
host = {}
while True:
    err, ptr = d.cuMemAlloc(size)
    if err == ok:
        buffer = host.setdefault(size, bytearray(size))
        assert d.cuMemcpyDtoH(buffer, ptr, size)[0] == ok
        found += buffer.count(PATTERN)
        searched += size
        continue
    if size <= MIN_CHUNK:
        break
    size //= 2
print(searched, found)
"""
)


def bare(uuid: str) -> str:
    """A UUID as the scrubber's `devices` give it: without `GPU-`/`MIG-`, lower case."""
    from dra_guard.scrub.given import bare_uuid

    return bare_uuid(uuid)


def python(code: str, env: dict[str, str]) -> str:
    arguments = [str(CHUNK), str(MIN_CHUNK), str(PATTERN)]
    result = subprocess.run(
        [sys.executable, "-c", code, *arguments], capture_output=True, text=True, env=env, check=False
    )
    if result.returncode != 0:
        raise SystemExit(f"helper failed ({result.returncode}): {result.stderr.strip()[-400:]}")
    return result.stdout.strip()


def scrubber(env: dict[str, str], dev: str = "/dev") -> tuple[int, dict[str, object]]:
    code = (
        "import sys; from dra_guard.scrub.run import Settings, scrub; "
        "sys.exit(scrub(Settings(dev=sys.argv[1]), sys.stdout, sys.stderr))"
    )
    result = subprocess.run([sys.executable, "-c", code, dev], capture_output=True, text=True, env=env, check=False)
    line = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "{}"
    return result.returncode, json.loads(line)


def container_dev(*nodes: str) -> str:
    """A folder of empty files named as a container's /dev would hold `nodes` (the scrubber reads
    which devices it was given from the names alone)."""
    root = tempfile.mkdtemp(prefix="scrub-dev-")
    for node in nodes:
        path = os.path.join(root, node)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").close()
    return root


def mig_nodes(uuid: str) -> list[str]:
    """The nodes the container toolkit injects for the MIG device `uuid`: its GPU, and the
    capabilities of its GPU and compute instances (mig-minors)."""
    from dra_guard.scrub.given import MIG_MINORS
    from dra_guard.scrub.nvml import nvml_devices

    device = next(named for named in nvml_devices() if named.uuid == uuid)
    with open(MIG_MINORS, encoding="ascii") as handle:
        minors = dict(line.split() for line in handle if len(line.split()) == 2)
    prefix = f"gpu{device.gpu_minor}/gi{device.gpu_instance}"
    caps = [minors[f"{prefix}/access"], minors[f"{prefix}/ci{device.compute_instance}/access"]]
    return [f"nvidia{device.gpu_minor}", *(f"nvidia-caps/nvidia-cap{minor}" for minor in caps)]


def named() -> list[Any]:
    """Every GPU and MIG device NVML names (dra_guard.scrub.nvml.NamedDevice)."""
    from dra_guard.scrub.nvml import nvml_devices

    return list(nvml_devices())


def whole_gpus() -> list[Any]:
    """The GPUs not in MIG mode (nvidia-smi), which CUDA shows whole, as NVML names them."""
    try:
        listing = subprocess.run(
            ["nvidia-smi", "--query-gpu=uuid,mig.mode.current", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
    except OSError:
        return []
    whole = {line.split(",")[0].strip() for line in listing.splitlines() if "Enabled" not in line}
    return [device for device in named() if device.gpu_instance is None and device.uuid in whole]


def apart(name: str, env: dict[str, str], nodes: list[str], uuids: list[str], failures: list[str]) -> None:
    """Step 6: given `nodes`, the scrubber must exit 0 having scrubbed exactly `uuids`."""
    code, summary = scrubber(env, container_dev(*nodes))
    print(json.dumps({"step": name, "uuids": uuids, "exit": code, **summary}))
    devices = summary.get("devices")
    reached = sorted(str(device.get("uuid")) for device in devices) if isinstance(devices, list) else []
    if code != 0 or summary.get("unscrubbed") != [] or reached != sorted(bare(uuid) for uuid in uuids):
        failures.append(f"{name}: exit {code}, unscrubbed {summary.get('unscrubbed')}, scrubbed {reached}")


def mig_uuids() -> list[str]:
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return []
    return [part.split("UUID: ")[1].rstrip(")") for part in listing.splitlines() if "MIG-" in part and "UUID: " in part]


def main() -> int:
    env = dict(os.environ)
    failures = []
    migs = mig_uuids()
    given = [name for name in os.listdir("/dev") if re.fullmatch(r"nvidia\d+", name)]
    if migs:
        env["CUDA_VISIBLE_DEVICES"] = migs[0]
        given = mig_nodes(migs[0])
        print(json.dumps({"step": "MIG", "note": f"steps 1-3 on {migs[0]}, given its nodes alone: {given}"}))
    dev = container_dev(*given)
    started = time.perf_counter()
    filled = int(python(FILL, env))
    print(json.dumps({"step": "A fills", "bytes": filled, "seconds": round(time.perf_counter() - started, 2)}))
    code, summary = scrubber(env, dev)
    print(json.dumps({"step": "scrub", "exit": code, **summary}))
    if code != 0:
        failures.append(f"scrubber exited {code}: {summary.get('reason')}")
    scrubbed = summary.get("devices")
    for device in scrubbed if isinstance(scrubbed, list) else []:
        reserved, sms = device.get("reserved_bytes", 0), device.get("multiprocessors")
        print(
            json.dumps(
                {
                    "step": "in use before the scrub (its CUDA context, if nothing else runs)",
                    "device": device.get("index"),
                    "reserved_mib": reserved // (1 << 20),
                    "multiprocessors": sms,
                    "mib_per_multiprocessor": round(reserved / (1 << 20) / sms, 2) if sms else None,
                }
            )
        )
    residue = summary.get("bytes_nonzero_before", 0)
    print(
        json.dumps(
            {
                "step": "what the scrubber saw",
                "residue_bytes": residue,
                "driver_scrub_on_free": summary.get("driver_scrub_on_free"),
                "reading": "residue of A found, then zeroed"
                if residue
                else "no residue: the driver had already scrubbed A's memory",
            }
        )
    )
    searched, found = (int(value) for value in python(SEARCH, env).split())
    print(json.dumps({"step": "B searches", "bytes": searched, "pattern_bytes_found": found}))
    if found:
        failures.append(f"B found {found} bytes of A's pattern")
    past = 1 + max((int(name[6:]) for name in os.listdir("/dev") if re.fullmatch(r"nvidia\d+", name)), default=-1)
    code, summary = scrubber(env, container_dev(*given, f"nvidia{past}"))
    print(json.dumps({"step": "a GPU node CUDA cannot reach", "exit": code, **summary}))
    if code != 1 or summary.get("unscrubbed") != [f"/dev/nvidia{past}"]:
        failures.append(f"given /dev/nvidia{past}, which CUDA cannot reach: exit {code}, {summary.get('unscrubbed')}")
    # 6. Each device in a process of its own, with no CUDA_VISIBLE_DEVICES, as in a container.
    bare_env = {key: value for key, value in env.items() if key != "CUDA_VISIBLE_DEVICES"}
    hidden = migs[:1] or [gpu.uuid for gpu in whole_gpus() if f"nvidia{gpu.gpu_minor}" in given]
    apart("hidden from the scrubber itself", {**bare_env, "CUDA_VISIBLE_DEVICES": "-1"}, given, hidden, failures)
    if len(migs) >= 2:
        filled = int(python(FILL, {**env, "CUDA_VISIBLE_DEVICES": migs[1]}))
        print(json.dumps({"step": "A fills the second MIG instance", "uuid": migs[1], "bytes": filled}))
        apart("two MIG instances given", bare_env, [*mig_nodes(migs[0]), *mig_nodes(migs[1])], migs[:2], failures)
        searched, found = (int(value) for value in python(SEARCH, {**env, "CUDA_VISIBLE_DEVICES": migs[1]}).split())
        print(json.dumps({"step": "B searches the second", "bytes": searched, "pattern_bytes_found": found}))
        if found:
            failures.append(f"B found {found} bytes of A's pattern on {migs[1]}")
    else:
        print(json.dumps({"step": "two MIG instances given", "note": f"not run: {len(migs)} MIG instance(s) here"}))
    whole = whole_gpus()
    if migs and whole:
        nodes = [f"nvidia{whole[0].gpu_minor}", *mig_nodes(migs[0])]
        apart("a GPU beside a MIG instance", bare_env, nodes, [whole[0].uuid, migs[0]], failures)
    else:
        note = "not run: needs a GPU in MIG mode and one not"
        print(json.dumps({"step": "a GPU beside a MIG instance", "note": note}))
    print("RESULT", "ok" if not failures else "FAILED: " + "; ".join(failures))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
