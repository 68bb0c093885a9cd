"""dra-guard benchmarks, as ratios measured in one interleaved run (these machines are noisy).

    .venv/bin/python -m bench.run            # or: make bench

1. Throughput: `dra-guard check --format json` over a generated corpus of 6,000 documents
   against parsing the same files with `yaml.load_all(..., Loader=yaml.CSafeLoader)`.
   Target: within 1.5x.  Run on two corpora (bench/corpus.py): `mixed` (plain
   Deployments, legacy GPU CronJobs, compliant DRA apps) and `dra-heavy` (five documents
   in six are claims, claim templates or accelerator workloads, which the cross-object
   rules index).
2. Memory: peak RSS of the same check over 6,000 and 60,000 documents of each corpus.
   Target: the 60,000-document run within 1.5x of the 6,000-document run (memory must
   not grow with the input: only findings and the cross-object rules' small facts do).
3. Cold start: `dra-guard check` on one small file against `python -c "import yaml"`.
   Target: within 3x.

Each round runs both commands as fresh processes, alternating which goes first; the
ratio reported is the median of the per-round ratios.  Exits 1 if a target is missed.
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

from bench.corpus import CORPORA, write_corpus

BARE_PARSE = (
    "import sys, yaml\n"
    "for path in sys.argv[1:]:\n"
    "    with open(path, 'rb') as handle:\n"
    "        list(yaml.load_all(handle.read(), Loader=yaml.CSafeLoader))\n"
)
SMALL_MANIFEST = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: fast\n"


def _check_status(command: Sequence[str], status: int, stderr: bytes) -> None:
    # Exit 1 (findings) is expected for the corpus; anything else is a broken benchmark.
    if status not in (0, 1):
        raise SystemExit(f"benchmark command failed ({status}): {' '.join(command)}\n{stderr.decode()}")


def _seconds(command: Sequence[str]) -> float:
    start = time.perf_counter()
    result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    _check_status(command, result.returncode, result.stderr)
    return elapsed


def peak_rss_mib(command: Sequence[str]) -> float:
    """Peak resident memory of `command`, a fresh process (its own rusage, from wait4)."""
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        errors.seek(0)
        _check_status(command, process.returncode, errors.read())
    return usage.ru_maxrss / 1024  # KiB on Linux


def interleaved_ratio(ours: Sequence[str], baseline: Sequence[str], rounds: int) -> tuple[float, float, float]:
    """(median ours, median baseline, median of per-round ratios)."""
    _seconds(ours), _seconds(baseline)  # warm the page cache and .pyc files
    ours_times, baseline_times, ratios = [], [], []
    for round_index in range(rounds):
        if round_index % 2:
            base, mine = _seconds(baseline), _seconds(ours)
        else:
            mine, base = _seconds(ours), _seconds(baseline)
        ours_times.append(mine)
        baseline_times.append(base)
        ratios.append(mine / base)
    return statistics.median(ours_times), statistics.median(baseline_times), statistics.median(ratios)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--documents", type=int, default=6000, help="documents per corpus (default 6,000)")
    parser.add_argument("--scale", type=int, default=10, help="the memory run's large corpus, in --documents (10)")
    parser.add_argument("--corpus", choices=sorted(CORPORA), action="append", help="only these corpora")
    arguments = parser.parse_args(argv)

    python = sys.executable
    check = [python, "-m", "dra_guard.cli", "check", "--format", "json", "--output", os.devnull]
    rows: list[tuple[str, str, str, float, float, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="dra-guard-bench-") as scratch:
        for kind in arguments.corpus or sorted(CORPORA):
            corpus = Path(scratch) / kind
            documents = write_corpus(corpus, arguments.documents, kind)
            files = sorted(str(path) for path in corpus.glob("*.yaml"))
            mine, base, ratio = interleaved_ratio(
                [*check, str(corpus)], [python, "-c", BARE_PARSE, *files], arguments.rounds
            )
            rows.append(("throughput", kind, f"{documents} documents", mine, base, ratio, 1.5))
            large = Path(scratch) / f"{kind}-large"
            many = write_corpus(large, arguments.documents * arguments.scale, kind)
            small_rss = statistics.median(peak_rss_mib([*check, str(corpus)]) for _ in range(3))
            large_rss = peak_rss_mib([*check, str(large)])
            rows.append(("peak RSS", kind, f"{many} vs {documents}", large_rss, small_rss, large_rss / small_rss, 1.5))
        small = Path(scratch) / "small.yaml"
        small.write_text(SMALL_MANIFEST)
        mine, base, ratio = interleaved_ratio([*check, str(small)], [python, "-c", "import yaml"], arguments.rounds * 2)
        rows.append(("cold start", "-", "1 small file", mine, base, ratio, 3.0))

    print(
        f"{'benchmark':<11} {'corpus':<10} {'input':<18} {'dra-guard':>11} {'baseline':>11} {'ratio':>7} {'target':>7}"
    )
    missed = False
    for name, kind, what, mine, base, ratio, target in rows:
        verdict = "ok" if ratio <= target else "MISSED"
        missed = missed or ratio > target
        unit = "MiB" if name == "peak RSS" else "s"
        print(
            f"{name:<11} {kind:<10} {what:<18} {mine:>8.2f}{unit:<3} {base:>8.2f}{unit:<3} "
            f"{ratio:>6.2f}x {target:>6.1f}x  {verdict}"
        )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
