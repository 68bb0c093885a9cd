"""dra-guard benchmarks, as ratios measured in one interleaved run (these machines are noisy).

    .venv/bin/python -m bench.run            # or: make bench

1. Throughput: `dra-guard check --format json` over a generated corpus of 6,000 documents
   against parsing the same files with `yaml.load_all(..., Loader=yaml.CSafeLoader)`.
   Target: within 1.5x.
2. Cold start: `dra-guard check` on one small file against `python -c "import yaml"`.
   Target: within 3x.

Each round runs both commands as fresh processes, alternating which goes first; the
ratio reported is the median of the per-round ratios.  Exits 1 if a target is missed.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.corpus import write_corpus

BARE_PARSE = (
    "import sys, yaml\n"
    "for path in sys.argv[1:]:\n"
    "    with open(path, 'rb') as handle:\n"
    "        list(yaml.load_all(handle.read(), Loader=yaml.CSafeLoader))\n"
)
SMALL_MANIFEST = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: fast\n"


def _seconds(command: Sequence[str]) -> float:
    start = time.perf_counter()
    # Exit 1 (findings) is expected for the corpus; anything else is a broken benchmark.
    result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    if result.returncode not in (0, 1):
        raise SystemExit(
            f"benchmark command failed ({result.returncode}): {' '.join(command)}\n{result.stderr.decode()}"
        )
    return elapsed


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
    parser.add_argument("--files", type=int, default=60, help="files of 100 documents each (default 60)")
    arguments = parser.parse_args(argv)

    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="dra-guard-bench-") as scratch:
        corpus = Path(scratch) / "corpus"
        documents = write_corpus(corpus, files=arguments.files)
        files = sorted(str(path) for path in corpus.glob("*.yaml"))
        small = Path(scratch) / "small.yaml"
        small.write_text(SMALL_MANIFEST)

        check = [python, "-m", "dra_guard.cli", "check", "--format", "json", "--output", "/dev/null"]
        throughput = interleaved_ratio([*check, str(corpus)], [python, "-c", BARE_PARSE, *files], arguments.rounds)
        cold = interleaved_ratio([*check, str(small)], [python, "-c", "import yaml"], arguments.rounds * 2)

    rows = [
        ("throughput", f"{documents} documents", throughput, 1.5),
        ("cold start", "1 small file", cold, 3.0),
    ]
    print(f"{'benchmark':<12} {'input':<16} {'dra-guard':>10} {'baseline':>10} {'ratio':>7} {'target':>7}")
    missed = False
    for name, what, (mine, base, ratio), target in rows:
        verdict = "ok" if ratio <= target else "MISSED"
        missed = missed or ratio > target
        print(f"{name:<12} {what:<16} {mine:>9.3f}s {base:>9.3f}s {ratio:>6.2f}x {target:>6.1f}x  {verdict}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
