"""Analyze latency per resource over gRPC: the dra-guard pack against a one-policy no-op pack.

    .venv/bin/python -m bench.pulumi_analyze        # or: make bench

The packs run as `pulumi preview --policy-pack` runs them (`python -u -m pulumi.policy`)
and get the same 1,000 Kubernetes resources (compliant claim templates and workloads,
plain Deployments, legacy GPU CronJobs) as Analyze calls, interleaved in batches (in a
rotating order) so machine noise hits them alike.  The dra-guard pack is measured as
shipped and without `pulumi_dra.analyze_once` (what the pack costs if that shim cannot
install on some future SDK).  Target, as shipped: within 1.5x of the no-op pack.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pulumi.runtime.proto import analyzer_pb2

from bench.corpus import compliant_pair, legacy_gpu_cronjob, plain_deployment
from testkit.pack_process import configure, running_pack, struct

# The dra-guard pack exactly as pulumi_dra/policy/__main__.py builds it, minus the shim.
WITHOUT_SHIM_PACK = """
from pulumi_policy import EnforcementLevel, PolicyPack

from pulumi_dra.policies import PACK_NAME, build_policies

PolicyPack(name=PACK_NAME, policies=build_policies(), enforcement_level=EnforcementLevel.ADVISORY)
"""

NOOP_PACK = """
from pulumi_policy import PolicyPack, ResourceValidationPolicy

PolicyPack(
    name="noop",
    policies=[ResourceValidationPolicy(name="noop", description="does nothing", validate=lambda args, report: None)],
)
"""


def resources(count: int) -> list[analyzer_pb2.AnalyzeRequest]:
    objects: list[dict[str, Any]] = []
    index = 0
    while len(objects) < count:
        objects += [plain_deployment(index), legacy_gpu_cronjob(index), *compliant_pair(index)]
        index += 1
    requests = []
    for number, obj in enumerate(objects[:count]):
        group, _, version = obj["apiVersion"].rpartition("/")
        token = f"kubernetes:{group or 'core'}/{version}:{obj['kind']}"
        requests.append(
            analyzer_pb2.AnalyzeRequest(
                type=token, properties=struct(obj), urn=f"urn:pulumi:b::p::{token}::r{number}", name=f"r{number}"
            )
        )
    return requests


def timed_batch(stub: Any, batch: Sequence[analyzer_pb2.AnalyzeRequest]) -> float:
    start = time.perf_counter()
    for request in batch:
        stub.Analyze(request, timeout=60)
    return (time.perf_counter() - start) / len(batch)


def write_pack(directory: Path, main_source: str) -> Path:
    directory.mkdir()
    (directory / "PulumiPolicy.yaml").write_text("runtime: python\n")
    (directory / "__main__.py").write_text(main_source)
    return directory


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--resources", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=50)
    arguments = parser.parse_args(argv)
    requests = resources(arguments.resources)
    batches = [requests[i : i + arguments.batch] for i in range(0, len(requests), arguments.batch)]
    names = ("dra-guard", "without shim", "no-op pack")
    times: dict[str, list[float]] = {name: [] for name in names}
    ratios: dict[str, list[float]] = {name: [] for name in names[:2]}
    with tempfile.TemporaryDirectory(prefix="dra-guard-bench-packs-") as scratch:
        noop_dir = write_pack(Path(scratch) / "noop", NOOP_PACK)
        unshimmed_dir = write_pack(Path(scratch) / "unshimmed", WITHOUT_SHIM_PACK)
        with running_pack() as ours, running_pack(unshimmed_dir) as unshimmed, running_pack(noop_dir) as noop:
            stubs = dict(zip(names, (ours, unshimmed, noop), strict=True))
            for stub in stubs.values():
                configure(stub, {})
                timed_batch(stub, batches[0])  # warm up
            for number, batch in enumerate(batches):
                order = names[number % 3 :] + names[: number % 3]
                measured = {name: timed_batch(stubs[name], batch) for name in order}
                for name in names:
                    times[name].append(measured[name])
                for name, per_batch in ratios.items():
                    per_batch.append(measured[name] / measured["no-op pack"])
    base = statistics.median(times["no-op pack"]) * 1000
    ratio = statistics.median(ratios["dra-guard"])
    verdict = "ok" if ratio <= 1.5 else "MISSED"
    print(f"{'benchmark':<36} {'dra-guard':>12} {'no-op pack':>12} {'ratio':>7} {'target':>7}")
    print(
        f"{'Analyze, per resource':<36} {statistics.median(times['dra-guard']) * 1000:>10.3f}ms "
        f"{base:>10.3f}ms {ratio:>6.2f}x {1.5:>6.1f}x  {verdict}"
    )
    print(
        f"{'Analyze, per resource, without shim':<36} {statistics.median(times['without shim']) * 1000:>10.3f}ms "
        f"{base:>10.3f}ms {statistics.median(ratios['without shim']):>6.2f}x {'-':>7}"
    )
    return 0 if ratio <= 1.5 else 1


if __name__ == "__main__":
    sys.exit(main())
