"""dra-guard's throughput, memory and start-up, as ratios measured in one interleaved run.

    .venv/bin/python -m bench.run            # or: make bench (which adds --checkov)

1. Throughput on the realistic mix (bench/corpus.py: Deployments, Services, ConfigMaps,
   Lists, comments, Helm headers and empty documents, anchors, CronJobs on varied
   schedules, accelerator apps, legacy GPU workloads) at 600, 6,000 and 60,000
   documents: `dra-guard check --format json` against the floor, parsing the same files
   with `yaml.load_all(..., Loader=yaml.CSafeLoader)`.  Each round runs both as fresh
   processes, alternating which goes first; CPU time (user + system), wall time and
   peak RSS come from the process's own rusage (wait4).  Reported: the median and the
   min-max of each, and of the per-round CPU and wall ratios.  Target: at 6,000
   documents, CPU within 1.0x of the floor (faster than the parse it replaces).
   The same check with the PyYAML reader alone (DRA_GUARD_YAML_PARSER=pyyaml) and on
   the `dra-heavy` corpus (mostly claims, templates and accelerator workloads) are shown.
2. Memory: the peak RSS of the 60,000-document check within 1.5x of the 6,000 one.
3. Checkov (`--checkov PATH`, `make bench` installs it into its own virtualenv): its
   Kubernetes scan of the 6,000 documents, interleaved with ours.  Target: 50x slower.
4. Cold start from a normal (non-editable) install: a wheel built from this checkout,
   installed into a fresh virtualenv, `dra-guard check` on one small file against
   `python -c "import yaml"`.  Target: within 3x.

Exits 1 if a target is missed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from bench.corpus import write_corpus, write_realistic

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("dra_guard", "constructs_dra", "pulumi_dra")
BARE_PARSE = (
    "import sys, yaml\n"
    "for path in sys.argv[1:]:\n"
    "    with open(path, 'rb') as handle:\n"
    "        list(yaml.load_all(handle.read(), Loader=yaml.CSafeLoader))\n"
)
NO_BYTECODE = "PYTHONDONTWRITEBYTECODE"
SMALL_MANIFEST = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: fast\n"


class Run:
    __slots__ = ("cpu", "rss", "wall")

    def __init__(self, wall: float, cpu: float, rss: float) -> None:
        self.wall, self.cpu, self.rss = wall, cpu, rss


def _with_bytecode(env: Mapping[str, str] | None) -> dict[str, str]:
    """The environment, minus PYTHONDONTWRITEBYTECODE: an installed package has its .pyc
    files, and a run that compiles every module would measure the compiler."""
    return {key: value for key, value in (env if env is not None else os.environ).items() if key != NO_BYTECODE}


def run(command: Sequence[str], env: Mapping[str, str] | None = None, ok: Sequence[int] = (0, 1)) -> Run:
    """One fresh process: wall time, its own CPU time and peak RSS (MiB)."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors, env=_with_bytecode(env))
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        if code not in ok:  # exit 1 (findings) is expected of a check
            errors.seek(0)
            raise SystemExit(f"benchmark command failed ({code}): {' '.join(command)}\n{errors.read().decode()}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def interleaved(
    commands: Mapping[str, tuple[Sequence[str], Mapping[str, str] | None]], rounds: int
) -> dict[str, list[Run]]:
    """Each command once per round, in a rotating order, after one warm-up run each."""
    names = list(commands)
    for name in names:
        run(*commands[name])  # the page cache and .pyc files
    runs: dict[str, list[Run]] = {name: [] for name in names}
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            runs[name].append(run(*commands[name]))
    return runs


def spread(values: Sequence[float], unit: str = "", digits: int = 2) -> str:
    """median [min-max]"""
    return f"{statistics.median(values):.{digits}f}{unit} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def ratios(mine: Sequence[Run], base: Sequence[Run], field: str) -> list[float]:
    return [getattr(a, field) / getattr(b, field) for a, b in zip(mine, base, strict=True)]


class Table:
    def __init__(self) -> None:
        self.rows: list[tuple[str, ...]] = []
        self.missed = False

    def add(self, what: str, ours: str, floor: str, ratio: str, *, target: str = "-", met: bool | None = None) -> None:
        verdict = "" if met is None else ("ok" if met else "MISSED")
        self.missed = self.missed or met is False
        self.rows.append((what, ours, floor, ratio, target, verdict))
        print(" | ".join(self.rows[-1]), file=sys.stderr, flush=True)  # progress; the table comes at the end

    def print(self) -> None:
        header = ("benchmark", "dra-guard", "baseline", "ratio", "target", "")
        widths = [max(len(row[column]) for row in [header, *self.rows]) for column in range(6)]
        for row in [header, *self.rows]:
            print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


def throughput(table: Table, scratch: Path, sizes: Sequence[int], rounds: int, checkov: str | None) -> None:
    python = sys.executable
    check = [python, "-m", "dra_guard.cli", "check", "--format", "json", "--output", os.devnull]
    pyyaml_only = {**os.environ, "DRA_GUARD_YAML_PARSER": "pyyaml"}
    rss: dict[int, float] = {}
    for size in sizes:
        corpus = scratch / f"realistic-{size}"
        documents = write_realistic(corpus, size)
        files = sorted(str(path) for path in corpus.glob("*.yaml"))
        commands: dict[str, tuple[Sequence[str], Mapping[str, str] | None]] = {
            "check": ([*check, str(corpus)], None),
            "floor": ([python, "-c", BARE_PARSE, *files], None),
        }
        if size == 6000:
            commands["pyyaml"] = ([*check, str(corpus)], pyyaml_only)
        many = max(3, rounds * 6000 // max(size, 6000)) if size > 600 else rounds * 2
        runs = interleaved(commands, many if size != 6000 else rounds)
        mine, floor = runs["check"], runs["floor"]
        cpu_ratios = ratios(mine, floor, "cpu")
        target = size == 6000
        table.add(
            f"check, {documents:,} realistic documents, CPU",
            spread([r.cpu for r in mine], "s"),
            spread([r.cpu for r in floor], "s"),
            spread(cpu_ratios, "x"),
            target="<= 1.0x" if target else "-",
            met=statistics.median(cpu_ratios) <= 1.0 if target else None,
        )
        table.add(
            "  the same, wall",
            spread([r.wall for r in mine], "s"),
            spread([r.wall for r in floor], "s"),
            spread(ratios(mine, floor, "wall"), "x"),
        )
        rss[size] = max(r.rss for r in mine)
        table.add(
            "  the same, peak RSS",
            f"{rss[size]:.1f}MiB",
            f"{max(r.rss for r in floor):.1f}MiB",
            f"{rss[size] / max(r.rss for r in floor):.2f}x",
        )
        if "pyyaml" in runs:
            table.add(
                "  with the PyYAML reader alone, CPU",
                spread([r.cpu for r in runs["pyyaml"]], "s"),
                spread([r.cpu for r in floor], "s"),
                spread(ratios(runs["pyyaml"], floor, "cpu"), "x"),
            )
        if size == 6000 and checkov:
            theirs = [checkov, "--quiet", "--compact", "--framework", "kubernetes", "-d", str(corpus)]
            versus = interleaved({"checkov": (theirs, None), "check": ([*check, str(corpus)], None)}, 3)
            slower = ratios(versus["checkov"], versus["check"], "wall")
            table.add(
                "  Checkov on the same files, wall",
                spread([r.wall for r in versus["check"]], "s"),
                spread([r.wall for r in versus["checkov"]], "s"),
                spread(slower, "x") + " slower",
                target=">= 50x",
                met=statistics.median(slower) >= 50,
            )
    if 6000 in rss and 60000 in rss:
        growth = rss[60000] / rss[6000]
        table.add(
            "peak RSS, 60,000 vs 6,000 documents",
            f"{rss[60000]:.1f}MiB",
            f"{rss[6000]:.1f}MiB",
            f"{growth:.2f}x",
            target="<= 1.5x",
            met=growth <= 1.5,
        )
    heavy = scratch / "dra-heavy"
    write_corpus(heavy, 6000, "dra-heavy")
    files = sorted(str(path) for path in heavy.glob("*.yaml"))
    runs = interleaved(
        {"check": ([*check, str(heavy)], None), "floor": ([python, "-c", BARE_PARSE, *files], None)}, rounds
    )
    table.add(
        "check, 6,000 dra-heavy documents, CPU",
        spread([r.cpu for r in runs["check"]], "s"),
        spread([r.cpu for r in runs["floor"]], "s"),
        spread(ratios(runs["check"], runs["floor"], "cpu"), "x"),
    )


def installed_python(scratch: Path) -> str:
    """A fresh virtualenv with dra-guard installed from a wheel of this checkout (not
    editable); its dependencies are this environment's, reached through a .pth file."""
    wheels = scratch / "wheel"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(wheels), str(REPO)],
        stdout=subprocess.DEVNULL,
        check=True,
    )
    environment = scratch / "installed"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(environment)], check=True)
    python = str(environment / "bin" / "python")
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # A plain path line: this environment's packages, but not its editable dra-guard finder.
    (Path(site) / "bench_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    wheel = next(wheels.glob("dra_guard-*.whl"))
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", site, str(wheel)], check=True
    )
    subprocess.run([python, "-m", "compileall", "-q", site], check=False)
    return python


def cold_start(table: Table, scratch: Path, rounds: int) -> None:
    python = installed_python(scratch)
    small = scratch / "small.yaml"
    small.write_text(SMALL_MANIFEST)
    where = subprocess.run(
        [python, "-c", "import dra_guard; print(dra_guard.__file__)"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert not where.startswith(str(REPO)), f"the benchmark's install is the checkout: {where}"
    script = "import sys; from dra_guard.cli.main import main; sys.exit(main())"
    runs = interleaved(
        {"check": ([python, "-c", script, "check", str(small)], None), "yaml": ([python, "-c", "import yaml"], None)},
        rounds,
    )
    found = ratios(runs["check"], runs["yaml"], "wall")
    table.add(
        "cold start, one small file (installed wheel), wall",
        spread([r.wall for r in runs["check"]], "s", 3),
        spread([r.wall for r in runs["yaml"]], "s", 3),
        spread(found, "x"),
        target="<= 3.0x",
        met=statistics.median(found) <= 3.0,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7, help="rounds at 6,000 documents")
    parser.add_argument("--sizes", type=int, nargs="+", default=[600, 6000, 60000])
    parser.add_argument("--checkov", help="a checkov executable to compare with")
    arguments = parser.parse_args(argv)
    # Resolved now: the measurements run from a scratch directory.
    checkov = arguments.checkov and (
        str(Path(arguments.checkov).resolve()) if os.sep in arguments.checkov else shutil.which(arguments.checkov)
    )
    table = Table()
    # The checkout's own .pyc files, as an install has them (pip compiles what it installs).
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", *(str(REPO / package) for package in PACKAGES)],
        env=_with_bytecode(None),
        stdout=subprocess.DEVNULL,
        check=True,
    )
    with tempfile.TemporaryDirectory(prefix="dra-guard-bench-") as scratch:
        os.chdir(scratch)  # so that no command imports dra_guard from the checkout by accident
        throughput(table, Path(scratch), arguments.sizes, arguments.rounds, checkov)
        cold_start(table, Path(scratch), arguments.rounds * 3)
    os.chdir(REPO)
    table.print()
    if not checkov:
        print("(Checkov not compared: pass --checkov PATH, as `make bench` does)")
    return 1 if table.missed else 0


if __name__ == "__main__":
    sys.exit(main())
