"""The scrubber on a real NVIDIA GPU (issue: "Verified on a GPU").  Run by scrub_check.sh.

1. Process A fills every byte of device memory it can allocate with a pattern and exits.
2. The scrubber runs: it must report the residue it found (or none, when the driver's
   scrub-on-free cleared it, which it then says) and leave none.
3. Process B allocates all free memory and must find no byte of the pattern.
4. The scrubber's rate (GB/s) on the whole GPU, and on a MIG instance where MIG is already
   configured (this script never changes the GPU's MIG mode).

Prints one JSON line per step and a last line, `RESULT ok|FAILED`, then exits 0 or 1.
Needs cuda-python (`cuda.bindings`) and the repository on PYTHONPATH; nothing else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


def scrubber(env: dict[str, str]) -> tuple[int, dict[str, object]]:
    code = (
        "import sys; from dra_guard.scrub.run import Settings, scrub; "
        "sys.exit(scrub(Settings(), sys.stdout, sys.stderr))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    line = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "{}"
    return result.returncode, json.loads(line)


def mig_uuids() -> list[str]:
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return []
    return [part.split("UUID: ")[1].rstrip(")") for part in listing.splitlines() if "MIG-" in part and "UUID: " in part]


def main() -> int:
    env = dict(os.environ)
    failures = []
    started = time.perf_counter()
    filled = int(python(FILL, env))
    print(json.dumps({"step": "A fills", "bytes": filled, "seconds": round(time.perf_counter() - started, 2)}))
    code, summary = scrubber(env)
    print(json.dumps({"step": "scrub", "exit": code, **summary}))
    if code != 0:
        failures.append(f"scrubber exited {code}: {summary.get('reason')}")
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
    for uuid in mig_uuids()[:1]:
        mig_env = {**env, "CUDA_VISIBLE_DEVICES": uuid}
        code, summary = scrubber(mig_env)
        print(json.dumps({"step": "scrub one MIG instance", "uuid": uuid, "exit": code, **summary}))
        if code != 0:
            failures.append(f"scrubber on {uuid} exited {code}: {summary.get('reason')}")
    if not mig_uuids():
        print(json.dumps({"step": "MIG", "note": "MIG is not configured on this GPU; not timed (left as it is)"}))
    print("RESULT", "ok" if not failures else "FAILED: " + "; ".join(failures))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
