"""cdk8s synth: N `IsolatedAcceleratorWorkload`s against the same objects as raw ApiObjects.

    .venv/bin/python -m bench.cdk8s_synth          # or: make bench

In one process (jsii starts Node once, before anything is timed), interleaved: building
an App with N of our workloads and synthesizing it (`App.synth_yaml`, which runs every
validation), against building the same manifests (`dra_guard.building.builders`) as plain
`ApiObject`s and synthesizing those; and `enforce()` alone, the time its validation adds
to the raw objects' synth.  Targets: ours within 1.2x of the raw objects at N = 200,
`enforce()` within 0.2 s for 200 workloads.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence

os.environ.setdefault("CDK8S_CHECK_UPGRADE", "false")
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from cdk8s import App, Chart

from constructs_dra import AcceleratorSlice, IsolatedAcceleratorWorkload, enforce
from constructs_dra.plain_objects import plain_api_object
from dra_guard.building.builders import build_isolated_workload
from dra_guard.building.spec import WorkloadSpec

PROFILES = ("1g.10gb", "2g.20gb", "3g.40gb")


def _options(index: int) -> dict[str, object]:
    return {
        "image": f"registry.example/llm:{index % 5}",
        "slice": AcceleratorSlice.nvidia_mig(PROFILES[index % 3]),
        "tenant": f"tenant-{index % 4}",
    }


def ours(count: int) -> None:
    app = App()
    chart = Chart(app, "bench", namespace="ml")
    for index in range(count):
        IsolatedAcceleratorWorkload(chart, f"infer-{index}", **_options(index))  # type: ignore[arg-type]
    app.synth_yaml()


def _raw_chart(count: int) -> tuple[App, Chart]:
    app = App()
    chart = Chart(app, "bench", namespace="ml")
    for index in range(count):
        spec = WorkloadSpec.from_options(
            "bench", name=f"infer-{index}", namespace="ml", options=_options(index), takes=("namespace",)
        )
        manifests = build_isolated_workload(spec)
        for number, manifest in enumerate((manifests.claim_template, manifests.workload)):
            plain_api_object(chart, f"infer-{index}-{number}", manifest, "ml")
    return app, chart


def raw(count: int) -> None:
    app, _ = _raw_chart(count)
    app.synth_yaml()


def raw_enforced(count: int) -> None:
    app, chart = _raw_chart(count)
    enforce(chart)
    app.synth_yaml()


def _seconds(function: Callable[[int], None], count: int) -> float:
    # The previous round's garbage (hundreds of jsii proxies) is collected before the
    # clock starts, not charged to whichever side the collector happens to run in.
    gc.collect()
    start = time.perf_counter()
    function(count)
    return time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 50, 200])
    arguments = parser.parse_args(argv)
    ours(1), raw(1), raw_enforced(1)  # start Node, load the jsii modules
    missed = False
    print(f"{'cdk8s synth':<24} {'ours':>20} {'raw ApiObjects':>20} {'ratio':>20} {'target':>7}")
    for count in arguments.sizes:
        times: dict[str, list[float]] = {"ours": [], "raw": [], "enforced": []}
        for round_index in range(arguments.rounds):
            order = [("ours", ours), ("raw", raw), ("enforced", raw_enforced)]
            if round_index % 2:
                order.reverse()
            for name, function in order:
                times[name].append(_seconds(function, count))
        ratios = [mine / base for mine, base in zip(times["ours"], times["raw"], strict=True)]
        enforce_cost = [max(e - r, 0.0) for e, r in zip(times["enforced"], times["raw"], strict=True)]
        target = 1.2 if count == 200 else None
        verdict = "" if target is None else ("ok" if statistics.median(ratios) <= target else "MISSED")
        missed = missed or verdict == "MISSED"
        print(
            f"{f'N={count} workloads':<24} {_spread(times['ours'], 's'):>20} {_spread(times['raw'], 's'):>20} "
            f"{_spread(ratios, 'x'):>20} {target or '-':>7}  {verdict}"
        )
        enforce_target = 0.2 if count == 200 else None
        verdict = "" if enforce_target is None else ("ok" if statistics.median(enforce_cost) <= 0.2 else "MISSED")
        missed = missed or verdict == "MISSED"
        print(
            f"{f'  enforce() alone, N={count}':<24} {_spread(enforce_cost, 's'):>20} {'':>20} {'':>20} "
            f"{enforce_target or '-':>7}  {verdict}"
        )
    return 1 if missed else 0


def _spread(values: Sequence[float], unit: str) -> str:
    """median [min-max]"""
    return f"{statistics.median(values):.3f}{unit} [{min(values):.2f}-{max(values):.2f}]"


if __name__ == "__main__":
    sys.exit(main())
