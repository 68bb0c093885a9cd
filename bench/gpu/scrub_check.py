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
   reach, the scrubber must exit 1 and name it (alone) in `unscrubbed`; on a GPU with two MIG
   instances, given both (CUDA enumerates one per process), it must exit 1 naming one.

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
    if len(migs) >= 2:
        both_env = {**env, "CUDA_VISIBLE_DEVICES": ",".join(migs[:2])}
        code, summary = scrubber(both_env, container_dev(*mig_nodes(migs[0]), *mig_nodes(migs[1])))
        print(json.dumps({"step": "two MIG instances given", "uuids": migs[:2], "exit": code, **summary}))
        unscrubbed = summary.get("unscrubbed")
        if code != 1 or not isinstance(unscrubbed, list) or len(unscrubbed) != 1:
            failures.append(f"given two MIG instances: exit {code}, unscrubbed {unscrubbed}")
    print("RESULT", "ok" if not failures else "FAILED: " + "; ".join(failures))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
