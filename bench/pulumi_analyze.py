"""Analyze latency per resource over gRPC: the dra-guard pack against a one-policy no-op pack.

    .venv/bin/python -m bench.pulumi_analyze        # or: make bench

The packs run as `pulumi preview --policy-pack` runs them (`python -u -m pulumi.policy`)
and get the same Kubernetes resources (compliant claim templates and workloads, plain
Deployments, legacy GPU CronJobs), each with its provider reference, as Analyze calls,
1,000 and then 5,000 of them.  Each round sends every resource to each pack, in batches
interleaved in a rotating order so machine noise hits them alike; a round's ratio is the
dra-guard pack's time over the no-op pack's.  Target, at both sizes: within 1.3x of the
no-op pack, as the median of the per-round ratios (their min-max is shown).  Then, in
two rounds of their own at the first size, the dra-guard pack without
`pulumi_dra.analyze_once` (what the pack costs if that shim cannot install on some
future SDK).

Start-up: the time from starting each pack to its port on stdout, as the Pulumi CLI
waits for it, interleaved over rounds.  Target: within 1.2x of the no-op pack.
AnalyzeStack: one call with the first size's resources (the cross-object rules), ours
only (the no-op pack has no stack policy), shown for reference.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pulumi.runtime.proto import analyzer_pb2

from bench.corpus import compliant_pair, legacy_gpu_cronjob, plain_deployment
from testkit.pack_process import ENGINE_ADDRESS, PACK_DIR, configure, running_pack, struct

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
    # Each resource names its provider, as `pulumi preview` sends it: the SDK converts the
    # provider reference too, once per policy (what the pack's memo must survive).
    provider = analyzer_pb2.AnalyzerProviderResource(
        type="pulumi:providers:kubernetes",
        properties=struct({"version": "4.18.0"}),
        urn="urn:pulumi:b::p::pulumi:providers:kubernetes::default",
        name="default",
    )
    requests = []
    for number, obj in enumerate(objects[:count]):
        group, _, version = obj["apiVersion"].rpartition("/")
        token = f"kubernetes:{group or 'core'}/{version}:{obj['kind']}"
        request = analyzer_pb2.AnalyzeRequest(
            type=token, properties=struct(obj), urn=f"urn:pulumi:b::p::{token}::r{number}", name=f"r{number}"
        )
        request.provider.CopyFrom(provider)
        requests.append(request)
    return requests


def timed_batch(stub: Any, batch: Sequence[analyzer_pb2.AnalyzeRequest]) -> float:
    start = time.perf_counter()
    for request in batch:
        stub.Analyze(request, timeout=60)
    return (time.perf_counter() - start) / len(batch)


def start_up_seconds(pack_dir: Path) -> float:
    """From starting the pack to its port on stdout, as `pulumi preview` waits for it."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-u", "-m", "pulumi.policy", ENGINE_ADDRESS, str(pack_dir)],
        cwd=pack_dir,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        # With their .pyc files, as installed packs have them (the warm-up run writes them).
        env={key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"},
    )
    try:
        assert process.stdout is not None
        port = process.stdout.readline()
        elapsed = time.perf_counter() - start
        if not port.strip().isdigit():
            raise SystemExit(f"the pack in {pack_dir} did not start: {port!r}")
    finally:
        process.kill()
        process.wait(timeout=30)
    return elapsed


def start_up(noop_dir: Path, rounds: int) -> tuple[list[float], list[float]]:
    ours_times: list[float] = []
    noop_times: list[float] = []
    start_up_seconds(PACK_DIR), start_up_seconds(noop_dir)  # warm the page cache and .pyc files
    for round_index in range(rounds):
        if round_index % 2:
            noop_times.append(start_up_seconds(noop_dir))
            ours_times.append(start_up_seconds(PACK_DIR))
        else:
            ours_times.append(start_up_seconds(PACK_DIR))
            noop_times.append(start_up_seconds(noop_dir))
    return ours_times, noop_times


def spread(values: Sequence[float], scale: float = 1.0, unit: str = "", digits: int = 2) -> str:
    """median [min-max]"""
    low, middle, high = min(values) * scale, statistics.median(values) * scale, max(values) * scale
    return f"{middle:.{digits}f}{unit} [{low:.{digits}f}-{high:.{digits}f}]"


def write_pack(directory: Path, main_source: str) -> Path:
    directory.mkdir()
    (directory / "PulumiPolicy.yaml").write_text("runtime: python\n")
    (directory / "__main__.py").write_text(main_source)
    return directory


#: Analyze per resource: the dra-guard pack within this much of the no-op pack's time.
ANALYZE_TARGET = 1.3
START_TARGET = 1.2


def analyze_rounds(
    stubs: dict[str, Any], requests: Sequence[analyzer_pb2.AnalyzeRequest], batch: int, rounds: int
) -> dict[str, list[float]]:
    """Per round, each pack's time per resource over all the requests, in interleaved batches."""
    batches = [requests[i : i + batch] for i in range(0, len(requests), batch)]
    names = list(stubs)
    per_round: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(rounds):
        totals = dict.fromkeys(names, 0.0)
        for number, requests_of_batch in enumerate(batches):
            turn = (number + round_index) % len(names)
            for name in names[turn:] + names[:turn]:
                totals[name] += timed_batch(stubs[name], requests_of_batch) * len(requests_of_batch)
        for name in names:
            per_round[name].append(totals[name] / len(requests))
    return per_round


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--analyze-rounds", type=int, default=5, help="rounds of Analyze calls, at each size")
    parser.add_argument("--rounds", type=int, default=9, help="pack start-ups")
    parser.add_argument("--stack-rounds", type=int, default=3, help="AnalyzeStack calls")
    arguments = parser.parse_args(argv)
    rows: list[tuple[str, str, str, str, str, str]] = []
    missed = False
    with tempfile.TemporaryDirectory(prefix="dra-guard-bench-packs-") as scratch:
        noop_dir = write_pack(Path(scratch) / "noop", NOOP_PACK)
        unshimmed_dir = write_pack(Path(scratch) / "unshimmed", WITHOUT_SHIM_PACK)
        started_ours, started_noop = start_up(noop_dir, arguments.rounds)
        start_ratios = [mine / base for mine, base in zip(started_ours, started_noop, strict=True)]
        start_ok = statistics.median(start_ratios) <= START_TARGET
        missed = not start_ok
        rows.append(
            (
                "pack start-up (to its port)",
                spread(started_ours, 1, "s"),
                spread(started_noop, 1, "s"),
                spread(start_ratios, 1, "x"),
                f"<= {START_TARGET}x",
                "ok" if start_ok else "MISSED",
            )
        )
        with running_pack() as ours, running_pack(unshimmed_dir) as unshimmed, running_pack(noop_dir) as noop:
            for stub in (ours, unshimmed, noop):
                configure(stub, {})
                timed_batch(stub, resources(arguments.batch))  # warm up
            for count in arguments.sizes:
                times = analyze_rounds(
                    {"dra-guard": ours, "no-op pack": noop}, resources(count), arguments.batch, arguments.analyze_rounds
                )
                ratios = [mine / base for mine, base in zip(times["dra-guard"], times["no-op pack"], strict=True)]
                analyze_ok = statistics.median(ratios) <= ANALYZE_TARGET
                missed = missed or not analyze_ok
                rows.append(
                    (
                        f"Analyze, per resource ({count:,})",
                        spread(times["dra-guard"], 1000, "ms", 3),
                        spread(times["no-op pack"], 1000, "ms", 3),
                        spread(ratios, 1, "x"),
                        f"<= {ANALYZE_TARGET}x",
                        "ok" if analyze_ok else "MISSED",
                    )
                )
            # Apart from the rounds above (ten times slower, it would weigh on them), at the
            # first size, for two rounds.
            times = analyze_rounds(
                {"without shim": unshimmed, "no-op pack": noop}, resources(arguments.sizes[0]), arguments.batch, 2
            )
            unshimmed_ratios = [
                mine / base for mine, base in zip(times["without shim"], times["no-op pack"], strict=True)
            ]
            rows.append(
                (
                    "  the same, without analyze_once",
                    spread(times["without shim"], 1000, "ms", 3),
                    spread(times["no-op pack"], 1000, "ms", 3),
                    spread(unshimmed_ratios, 1, "x"),
                    "-",
                    "",
                )
            )
            requests = resources(arguments.sizes[0])
            stack_request = analyzer_pb2.AnalyzeStackRequest(
                resources=[
                    analyzer_pb2.AnalyzerResource(
                        type=request.type, properties=request.properties, urn=request.urn, name=request.name
                    )
                    for request in requests
                ]
            )
            stack_times = []
            for _ in range(arguments.stack_rounds):
                start = time.perf_counter()
                ours.AnalyzeStack(stack_request, timeout=120)
                stack_times.append(time.perf_counter() - start)
    rows.append((f"AnalyzeStack, {len(requests):,} resources", spread(stack_times, 1, "s"), "-", "-", "-", ""))
    header = ("Pulumi benchmark", "dra-guard", "no-op pack", "ratio", "target", "")
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(6)]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
