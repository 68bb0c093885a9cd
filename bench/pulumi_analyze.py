"""Analyze latency per resource over gRPC: the dra-guard pack against a one-policy no-op pack.

    .venv/bin/python -m bench.pulumi_analyze        # or: make bench

Both packs run as `pulumi preview --policy-pack` runs them (`python -u -m pulumi.policy`)
and get the same 1,000 Kubernetes resources (compliant claim templates and workloads,
plain Deployments, legacy GPU CronJobs) as Analyze calls, interleaved in batches so
machine noise hits both alike.  Target: within 1.5x.
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
from tests.pack_process import configure, running_pack, struct

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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--resources", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=50)
    arguments = parser.parse_args(argv)
    requests = resources(arguments.resources)
    batches = [requests[i : i + arguments.batch] for i in range(0, len(requests), arguments.batch)]
    with tempfile.TemporaryDirectory(prefix="dra-guard-noop-pack-") as scratch:
        noop_dir = Path(scratch)
        (noop_dir / "PulumiPolicy.yaml").write_text("runtime: python\n")
        (noop_dir / "__main__.py").write_text(NOOP_PACK)
        with running_pack() as ours, running_pack(noop_dir) as noop:
            configure(ours, {})
            configure(noop, {})
            timed_batch(ours, batches[0]), timed_batch(noop, batches[0])  # warm up both
            ours_times, noop_times, ratios = [], [], []
            for number, batch in enumerate(batches):
                if number % 2:
                    base, mine = timed_batch(noop, batch), timed_batch(ours, batch)
                else:
                    mine, base = timed_batch(ours, batch), timed_batch(noop, batch)
                ours_times.append(mine)
                noop_times.append(base)
                ratios.append(mine / base)
    ratio = statistics.median(ratios)
    verdict = "ok" if ratio <= 1.5 else "MISSED"
    print(f"{'benchmark':<22} {'dra-guard':>12} {'no-op pack':>12} {'ratio':>7} {'target':>7}")
    print(
        f"{'Analyze, per resource':<22} {statistics.median(ours_times) * 1000:>10.3f}ms "
        f"{statistics.median(noop_times) * 1000:>10.3f}ms {ratio:>6.2f}x {1.5:>6.1f}x  {verdict}"
    )
    return 0 if ratio <= 1.5 else 1


if __name__ == "__main__":
    sys.exit(main())
