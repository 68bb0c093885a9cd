"""cdk8s synth: N `IsolatedAcceleratorWorkload`s against the same objects as raw ApiObjects.

    .venv/bin/python -m bench.cdk8s_synth          # or: make bench

In one process (jsii starts Node once, before anything is timed), interleaved: building
an App with N of our workloads and synthesizing it (`App.synth_yaml`, which runs every
validation), against building the same manifests (`dra_guard.building.builders`) as plain
`ApiObject`s and synthesizing those; and `enforce()` alone on the raw objects (built
before the clock starts), measured two ways: the time cdk8s spends in its validation (every
ask of it, timed inside, as cdk8s calls it: reading the charts back from Node and the
rules), and the synth's time with it less the synth's without it in the same round, shown
beside it.  The targets take the first: the second is the difference of two whole synths,
each of which moves by a tenth with the machine, and it flaps by more than the target's
margin (0.08-0.44 s at 200 workloads in one run).  Targets: ours within 1.2x of the raw
objects at N = 200, `enforce()` within 0.2 s for 200 workloads.

Then how `enforce()` grows: the raw objects' synth with and without `enforce()` at 200,
1,000 and 5,000 workloads, the sizes in a rotating order in each round, both measures of
`enforce()` as above.  Target: `enforce()`'s validation at 1,000 workloads within 5x its
time at 200 (linear, with headroom when its cost per workload does not grow), as the
median of the per-round ratios.
"""

from __future__ import annotations

import argparse
import functools
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
from constructs_dra.enforce import DraGuardValidation
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


class _Asked:
    """The time cdk8s spends in `enforce()`'s validation: every ask, as cdk8s makes it."""

    seconds = 0.0


def _timed_validation(validation: DraGuardValidation) -> None:
    validate = validation.validate

    def timed() -> list[str]:
        start = time.perf_counter()
        try:
            return validate()
        finally:
            _Asked.seconds += time.perf_counter() - start

    validation.validate = timed  # type: ignore[method-assign]  # jsii looks it up on the object


def _synth_seconds(count: int, enforced: bool) -> float:
    """The raw objects' synth alone, with `enforce()` called first when `enforced`: the
    chart is built before the clock starts (a third of the time at 200 workloads, and
    the noisiest part), so that the two differ by what `enforce()` costs and nothing else."""
    app, chart = _raw_chart(count)
    gc.collect()
    start = time.perf_counter()
    if enforced:
        _timed_validation(enforce(chart))
    app.synth_yaml()
    return time.perf_counter() - start


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
    parser.add_argument("--growth-rounds", type=int, default=9, help="rounds of the enforce() growth runs")
    parser.add_argument("--growth-sizes", type=int, nargs=3, default=[200, 1000, 5000])
    arguments = parser.parse_args(argv)
    ours(1), raw(1), _synth_seconds(1, True)  # start Node, load the jsii modules
    missed = False
    print(f"{'cdk8s synth':<24} {'ours':>20} {'raw ApiObjects':>20} {'ratio':>20} {'target':>7}")
    for count in arguments.sizes:
        times: dict[str, list[float]] = {"ours": [], "raw": [], "enforced": [], "synth": []}
        validation: list[float] = []
        for round_index in range(arguments.rounds):
            _Asked.seconds = 0.0
            order: list[tuple[str, Callable[[int], float]]] = [
                ("ours", functools.partial(_seconds, ours)),
                ("raw", functools.partial(_seconds, raw)),
                ("enforced", functools.partial(_synth_seconds, enforced=True)),
                ("synth", functools.partial(_synth_seconds, enforced=False)),
            ]
            if round_index % 2:
                order.reverse()
            for name, measure in order:
                times[name].append(measure(count))
            validation.append(_Asked.seconds)
        ratios = [mine / base for mine, base in zip(times["ours"], times["raw"], strict=True)]
        enforce_cost = [max(e - r, 0.0) for e, r in zip(times["enforced"], times["synth"], strict=True)]
        target = 1.2 if count == 200 else None
        verdict = "" if target is None else ("ok" if statistics.median(ratios) <= target else "MISSED")
        missed = missed or verdict == "MISSED"
        print(
            f"{f'N={count} workloads':<24} {_spread(times['ours'], 's'):>20} {_spread(times['raw'], 's'):>20} "
            f"{_spread(ratios, 'x'):>20} {target or '-':>7}  {verdict}"
        )
        enforce_target = 0.2 if count == 200 else None
        verdict = "" if enforce_target is None else ("ok" if statistics.median(validation) <= 0.2 else "MISSED")
        missed = missed or verdict == "MISSED"
        print(
            f"{f'  enforce() alone, N={count}':<24} {_spread(validation, 's'):>20} {'':>20} {'':>20} "
            f"{enforce_target or '-':>7}  {verdict}"
        )
        print(f"{'    with less without':<24} {_spread(enforce_cost, 's'):>20}")
    return 1 if _growth(arguments.growth_sizes, arguments.growth_rounds) or missed else 0


def _growth(sizes: Sequence[int], rounds: int) -> bool:
    """enforce() at three sizes, interleaved; True when the growth target is missed."""
    cost: dict[int, list[float]] = {count: [] for count in sizes}
    asked: dict[int, list[float]] = {count: [] for count in sizes}
    synth: dict[int, list[float]] = {count: [] for count in sizes}
    for round_index in range(rounds):
        for count in [*sizes[round_index % 3 :], *sizes[: round_index % 3]]:
            _Asked.seconds = 0.0
            if round_index % 2:
                enforced, plain = _synth_seconds(count, True), _synth_seconds(count, False)
            else:
                plain, enforced = _synth_seconds(count, False), _synth_seconds(count, True)
            cost[count].append(max(enforced - plain, 0.0))
            asked[count].append(_Asked.seconds)
            synth[count].append(plain)
    small, middle, large = sizes
    print()
    print(f"{'enforce() growth':<28} {'raw synth':>20} {'with less without':>20} {'its validation':>20}")
    for count in sizes:
        print(
            f"{f'N={count:,} workloads':<28} {_spread(synth[count], 's'):>20} {_spread(cost[count], 's'):>20} "
            f"{_spread(asked[count], 's'):>20}"
        )
    missed = False
    for (low, high), target in (((small, middle), 5.0), ((middle, large), None)):
        ratios = [b / a for a, b in zip(cost[low], cost[high], strict=True) if a > 0]
        validation_ratios = [b / a for a, b in zip(asked[low], asked[high], strict=True)]
        verdict = ""
        if target is not None:
            verdict = "ok" if statistics.median(validation_ratios) <= target else "MISSED"
        missed = missed or verdict == "MISSED"
        print(
            f"{f'  N={high:,} / N={low:,} (x{high // low})':<28} {'':>20} {_spread(ratios, 'x'):>20} "
            f"{_spread(validation_ratios, 'x'):>20} {target or '-':>7}  {verdict}"
        )
    return missed


def _spread(values: Sequence[float], unit: str) -> str:
    """median [min-max]"""
    return f"{statistics.median(values):.3f}{unit} [{min(values):.2f}-{max(values):.2f}]"


if __name__ == "__main__":
    sys.exit(main())
