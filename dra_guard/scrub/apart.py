"""One device scrubbed in a process of its own, which CUDA shows that device alone.

A CUDA process enumerates a single MIG device, and no whole GPU beside one (NVIDIA MIG User
Guide, "CUDA Device Enumeration",
https://docs.nvidia.com/datacenter/tesla/mig-user-guide/mig-device-names.html), so a
container given two MIG devices, or a GPU and a MIG device, cannot have them all scrubbed by
one process.  run.py then scrubs each device it was given in a child process, the same
interpreter running `python -m dra_guard.scrub.apart UUID CHUNK MIN_CHUNK`, with
CUDA_VISIBLE_DEVICES set to that device's UUID as NVML names it (`GPU-<uuid>`, `MIG-<uuid>`).
CUDA_VISIBLE_DEVICES takes "a comma-separated sequence of GPU identifiers", UUIDs among them
"in the same format as given by nvidia-smi -L" (which lists MIG devices as `MIG-<uuid>`), and
"only single MIG instance enumeration is supported" (CUDA Programming Guide, "CUDA Environment
Variables",
https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/environment-variables.html).

The child scrubs only when CUDA shows it exactly that device (`scrub_only`), and prints one
JSON line: `{"device": {...}}` (a `DeviceScrub`) and exits 0, or `{"error": "..."}` and exits
1.  The parent trusts nothing it did not check: a child that cannot be started, crashes, runs
past its time (it is killed), exits non-zero, prints no result it can read, or reports a
device other than the one it was asked for (by UUID) leaves the device not scrubbed, and
`scrub_apart` says why.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from typing import Any, TextIO

from dra_guard.scrub.given import bare_uuid
from dra_guard.scrub.nvidia import DeviceScrub, ScrubError, scrub_only

#: How the parent starts a child: its interpreter's arguments before the child's own.
CHILD = ("-m", "dra_guard.scrub.apart")

_FIELDS = frozenset(field.name for field in dataclasses.fields(DeviceScrub))
#: The most of a child's stderr a reason quotes.
_QUOTED = 200


def scrub_apart(uuid: str, chunk_bytes: int, min_chunk_bytes: int, timeout_s: float) -> DeviceScrub | str:
    """Scrub the device NVML names `uuid` in a child process that CUDA shows it alone: its
    result, or why the device is not scrubbed."""
    if not sys.executable:
        return "no Python interpreter is known to start its scrubbing process with"
    command = [sys.executable, *CHILD, uuid, str(chunk_bytes), str(min_chunk_bytes)]
    environment = {**os.environ, "CUDA_VISIBLE_DEVICES": uuid}
    try:
        done = subprocess.run(
            command, env=environment, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        return f"its scrubbing process did not finish within {timeout_s:g} s and was killed"
    except OSError as error:
        return f"its scrubbing process could not be started ({error})"
    said = _last_line(done.stderr)[:_QUOTED]
    quoted = f": {said}" if said else ""
    if done.returncode < 0:
        return f"its scrubbing process was killed by signal {-done.returncode}{quoted}"
    reply = _reply(_last_line(done.stdout))
    if isinstance(reply, str):
        return f"its scrubbing process could not scrub it: {reply}"
    if reply is None:
        return f"its scrubbing process printed no result it can be judged by (exit {done.returncode}){quoted}"
    if done.returncode != 0:
        return f"its scrubbing process exited {done.returncode}{quoted}"
    if reply.uuid != bare_uuid(uuid):
        return f"its scrubbing process reached {reply.uuid or 'a device without a UUID'}, not it"
    return reply


def _last_line(output: bytes) -> str:
    lines = output.decode("utf-8", errors="replace").strip().splitlines()
    return lines[-1].strip() if lines else ""


def _reply(line: str) -> DeviceScrub | str | None:
    """The child's result, its error, or None when the line is neither."""
    try:
        reply = json.loads(line)
    except ValueError:
        return None
    if not isinstance(reply, dict) or len(reply) != 1:
        return None
    if isinstance(reply.get("error"), str):
        return str(reply["error"])
    return _device(reply.get("device"))


def _device(value: Any) -> DeviceScrub | None:
    if not isinstance(value, dict) or set(value) != _FIELDS:
        return None
    for name, item in value.items():
        if name == "name":
            valid = isinstance(item, str)
        elif name == "uuid":
            valid = item is None or isinstance(item, str)
        elif name == "seconds":
            valid = isinstance(item, (int, float)) and not isinstance(item, bool) and item >= 0
        elif name == "multiprocessors":
            valid = item is None or _count(item)
        else:
            valid = _count(item)
        if not valid:
            return None
    return DeviceScrub(**value)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def main(arguments: list[str], stdout: TextIO) -> int:
    """The child: scrub the one device CUDA shows it, if it is `arguments[0]`."""
    try:
        uuid, chunk_bytes, min_chunk_bytes = arguments[0], int(arguments[1]), int(arguments[2])
    except (IndexError, ValueError):
        stdout.write(json.dumps({"error": f"usage: {' '.join(CHILD)} UUID CHUNK_BYTES MIN_CHUNK_BYTES"}) + "\n")
        return 2
    try:
        result = scrub_only(bare_uuid(uuid), chunk_bytes, min_chunk_bytes)
    except ScrubError as error:
        stdout.write(json.dumps({"error": str(error)}) + "\n")
        return 1
    stdout.write(json.dumps({"device": dataclasses.asdict(result)}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], sys.stdout))
