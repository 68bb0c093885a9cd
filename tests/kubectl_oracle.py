"""The real kubectl as an oracle: which objects `kubectl apply -f FILE` would send.

`kubectl patch --local -f FILE --type merge -p '{}' -o json` reads FILE exactly as apply
does (the same resource builder: YAMLOrJSONDecoder, unstructured decoding, List
flattening), needs no cluster, and prints every object it would send, unchanged: an
empty merge patch adds nothing.  (`kubectl label --local` works too but adds the label,
and refuses objects whose `metadata` it cannot label; `create --dry-run=client` asks a
server first.)

Files are checked many per kubectl process: each is preceded by a marker object, so
the output splits per file.  kubectl goes on with the other files after an error, and
most errors name their file; a batch with an error that does not (a bad List item) is
split in halves, run side by side, until each error is pinned to its file.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

MARKER = "dra-guard-oracle-marker"
#: The reading commands: an empty merge patch, and (to cross-check it) a probe label.
PATCH = ("patch", "--local", "--type", "merge", "-p", "{}", "-o", "json")
LABEL = ("label", "--local", "-o", "json", "dra-guard-probe=x")


@dataclass
class KubectlRead:
    """What kubectl did with one file."""

    objects: list[Any] = field(default_factory=list)
    #: kubectl reported an error for the file (it may still have sent the objects before).
    failed: bool = False
    message: str = ""


def kubectl() -> str:
    """The kubectl binary; the differential tests fail (never skip) without it."""
    found = shutil.which("kubectl")
    if found is None:
        pytest.fail("kubectl is not installed: the kubectl differential tests need it (they never skip)")
    return found


def kubectl_version() -> str:
    result = subprocess.run(
        [kubectl(), "version", "--client", "-o", "json"], capture_output=True, text=True, check=True
    )
    return str(json.loads(result.stdout)["clientVersion"]["gitVersion"])


def _command(files: Sequence[Path], verb: Sequence[str]) -> list[str]:
    command = [kubectl(), *verb]
    for path in files:
        command += ["-f", str(path)]
    return command


def _objects(stdout: str) -> list[Any]:
    decoder = json.JSONDecoder()
    objects: list[Any] = []
    position = 0
    while True:
        while position < len(stdout) and stdout[position] in " \t\r\n":
            position += 1
        if position >= len(stdout):
            return objects
        value, position = decoder.raw_decode(stdout, position)
        objects.append(value)


def _run(files: Sequence[Path], verb: Sequence[str] = PATCH) -> tuple[list[Any], str, int]:
    result = subprocess.run(_command(files, verb), capture_output=True, text=True, timeout=120, check=False)
    return _objects(result.stdout), result.stderr.strip(), result.returncode


def read_one(path: Path, verb: Sequence[str] = PATCH) -> KubectlRead:
    objects, stderr, code = _run([path], verb)
    if code != 0 and stderr == f"error: no objects passed to {verb[0]}":
        return KubectlRead([], False, "")
    return KubectlRead(objects, code != 0, stderr)


def _marker(directory: Path, number: int) -> Path:
    path = directory / f"{MARKER}-{number}.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{MARKER}-{number}"}}))
    return path


def _is_marker(obj: Any) -> bool:
    return isinstance(obj, dict) and str(obj.get("metadata", {}).get("name", "")).startswith(MARKER)


def read_many(paths: Sequence[Path], scratch: Path, verb: Sequence[str] = PATCH) -> list[KubectlRead]:
    """kubectl's reading of each file, in as few kubectl processes as errors allow."""
    scratch.mkdir(parents=True, exist_ok=True)
    markers = [_marker(scratch, number) for number in range(len(paths) + 1)]
    results: list[KubectlRead | None] = [None] * len(paths)

    def batch(first: int, last: int) -> None:
        if last - first == 1:
            results[first] = read_one(paths[first], verb)
            return
        files: list[Path] = []
        for number in range(first, last):
            files += [markers[number], paths[number]]
        files.append(markers[last])
        objects, stderr, code = _run(files, verb)
        messages: dict[int, list[str]] = {}
        for line in filter(None, stderr.splitlines()):
            named = [number for number in range(first, last) if str(paths[number]) in line]
            if len(named) != 1:
                middle = (first + last) // 2
                halves = [threading.Thread(target=batch, args=span) for span in ((first, middle), (middle, last))]
                for half in halves:
                    half.start()
                for half in halves:
                    half.join()
                return
            messages.setdefault(named[0], []).append(line)
        groups: list[list[Any]] = []
        for obj in objects:
            if _is_marker(obj):
                groups.append([])
            else:
                groups[-1].append(obj)
        assert len(groups) == last - first + 1, "every marker must come back"
        assert code == 0 or messages, stderr
        for offset, group in enumerate(groups[:-1]):
            lines = messages.get(first + offset, [])
            results[first + offset] = KubectlRead(group, bool(lines), "\n".join(lines))

    if paths:
        batch(0, len(paths))
    return [result for result in results if result is not None]


def same_json(left: Any, right: Any) -> bool:
    """Equal as JSON values, types included (True is not 1, 1 is not 1.0)."""
    if type(left) is not type(right):
        return False
    if type(left) is dict:
        return left.keys() == right.keys() and all(same_json(left[key], right[key]) for key in left)
    if type(left) is list:
        return len(left) == len(right) and all(same_json(a, b) for a, b in zip(left, right, strict=True))
    return bool(left == right)


def same_objects(left: Sequence[Any], right: Sequence[Any]) -> bool:
    return len(left) == len(right) and all(same_json(a, b) for a, b in zip(left, right, strict=True))


def is_subsequence(part: Sequence[Any], whole: Sequence[Any]) -> bool:
    """Every object of `part` appears in `whole`, in the same order."""
    rest = iter(whole)
    return all(any(same_json(obj, candidate) for candidate in rest) for obj in part)
