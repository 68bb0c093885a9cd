"""dra-guard's throughput, memory, parallelism and start-up, as ratios measured in one run.

    .venv/bin/python -m bench.run            # or: make bench (which adds --checkov)

1. Throughput on the realistic mix (bench/corpus.py: Deployments with Helm's hex
   checksums, Services, ConfigMaps, Lists, comments, Helm headers and empty documents,
   anchors, CronJobs on varied schedules, accelerator apps, legacy GPU workloads) at 600,
   6,000 and 60,000 documents in files of 100: `dra-guard check --format json`, with
   `--jobs 1` and as it runs by default (every core), against two floors: the same files
   parsed with `yaml.load_all(..., Loader=yaml.CSafeLoader)`, and with rapidyaml (each
   file one stream, every document emitted as JSON and read with json.loads: the least
   the fast reader does).  Each round runs every command as a fresh process, in a
   rotating order; CPU time (user + system, workers included), wall time and peak RSS
   come from the process's own rusage (wait4).  Reported: the median and min-max of
   each, and of the per-round ratios.  Targets: at 6,000 documents, `--jobs 1` CPU
   within 1.0x of the CSafeLoader parse; at 60,000, within 3.0x of the rapidyaml floor
   (where the reader alone, without rules or report, is shown against that floor too).
   The same check with the PyYAML reader alone, and on the `dra-heavy` corpus (mostly
   claims, templates and accelerator workloads), are shown.
2. Memory: peak RSS at 60,000 documents within 1.5x of 6,000; and one file of 220,000
   documents (about 175 MB, a large chart's `helm template`) within 1.5x of the same
   documents in 100-document files.
3. The same mix one object per file, in a folder per service (6,000 files).
4. Parallelism at 60,000 documents: `--jobs` 1, 2 and every core, the speed-up per
   round (target: 2 jobs at least 1.7x one, on a machine of 2 cores or more), and the
   reports of every N and of two shards merged compared byte for byte.
5. Checkov (`--checkov PATH`, `make bench` installs it into its own virtualenv): its
   Kubernetes scan of the 6,000 documents in 100-document files and one per file,
   interleaved with ours.  Target: 50x slower on both.
6. Cold start from a normal (non-editable) install: a wheel built from this checkout,
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

from bench.corpus import write_corpus, write_realistic, write_single, write_tree
from dra_guard.distribute.cores import available_cores

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("dra_guard", "constructs_dra", "pulumi_dra")
BARE_PARSE = (
    "import sys, yaml\n"
    "for path in sys.argv[1:]:\n"
    "    with open(path, 'rb') as handle:\n"
    "        list(yaml.load_all(handle.read(), Loader=yaml.CSafeLoader))\n"
)
#: rapidyaml's own floor: each file parsed as one stream, every document written as JSON
#: by its emitter and read back with json.loads (what the fast reader does at the least).
RAPIDYAML_PARSE = (
    "import json, sys, ryml\n"
    "buffer = bytearray(1 << 20)\n"
    "for path in sys.argv[1:]:\n"
    "    with open(path, 'rb') as handle:\n"
    "        tree = ryml.parse_in_arena(handle.read())\n"
    "    root = tree.root_id()\n"
    "    for node in ryml.children(tree, root) if tree.is_stream(root) else [root]:\n"
    "        failed, size = ryml.emit_json_to_substr(tree, node, buffer)\n"
    "        if failed:\n"
    "            buffer = bytearray(2 * size)\n"
    "            failed, size = ryml.emit_json_to_substr(tree, node, buffer)\n"
    "        json.loads(bytes(memoryview(buffer)[:size]))\n"
)
#: dra-guard's reader alone, as a check reads (rapidyaml from the first document, one swap
#: of descriptor 2): what of a check's time is reading, and what is the rules and report.
READER_ALONE = (
    "import sys\n"
    "from dra_guard.kubectl_yaml.fast import holding_stderr, read_fast_from_start\n"
    "from dra_guard.read.loader import iter_bytes\n"
    "read_fast_from_start()\n"
    "with holding_stderr():\n"
    "    for path in sys.argv[1:]:\n"
    "        with open(path, 'rb') as handle:\n"
    "            for _ in iter_bytes(handle.read(), path):\n"
    "                pass\n"
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


def _check(*arguments: str, output: str = os.devnull) -> list[str]:
    return [sys.executable, "-m", "dra_guard.cli", "check", "--format", "json", "--output", output, *arguments]


def _floors(files: Sequence[str]) -> dict[str, tuple[Sequence[str], Mapping[str, str] | None]]:
    return {
        "libyaml": ([sys.executable, "-c", BARE_PARSE, *files], None),
        "rapidyaml": ([sys.executable, "-c", RAPIDYAML_PARSE, *files], None),
    }


def throughput(table: Table, scratch: Path, sizes: Sequence[int], rounds: int, checkov: str | None) -> None:
    """`check` on the realistic mix in 100-document files, against both parsers' floors."""
    pyyaml_only = {**os.environ, "DRA_GUARD_YAML_PARSER": "pyyaml"}
    rss: dict[int, float] = {}
    for size in sizes:
        corpus = scratch / f"realistic-{size}"
        documents = write_realistic(corpus, size)
        files = sorted(str(path) for path in corpus.glob("*.yaml"))
        commands: dict[str, tuple[Sequence[str], Mapping[str, str] | None]] = {
            "check": (_check(str(corpus)), None),
            "check -j1": (_check("--jobs", "1", str(corpus)), None),
            **_floors(files),
        }
        if size == 6000:
            commands["pyyaml"] = (_check("--jobs", "1", str(corpus)), pyyaml_only)
        if size == 60000:
            commands["reader"] = ([sys.executable, "-c", READER_ALONE, *files], None)
        many = max(3, rounds * 6000 // max(size, 6000)) if size > 600 else rounds * 2
        runs = interleaved(commands, many if size != 6000 else rounds)
        one, floor, fast_floor = runs["check -j1"], runs["libyaml"], runs["rapidyaml"]
        cpu_ratios = ratios(one, floor, "cpu")
        table.add(
            f"check --jobs 1, {documents:,} realistic documents, CPU, vs CSafeLoader parse",
            spread([r.cpu for r in one], "s"),
            spread([r.cpu for r in floor], "s"),
            spread(cpu_ratios, "x"),
            target="<= 1.0x" if size == 6000 else "-",
            met=statistics.median(cpu_ratios) <= 1.0 if size == 6000 else None,
        )
        fast_ratios = ratios(one, fast_floor, "cpu")
        table.add(
            "  the same, CPU, vs rapidyaml parse + JSON emit + json.loads",
            spread([r.cpu for r in one], "s"),
            spread([r.cpu for r in fast_floor], "s"),
            spread(fast_ratios, "x"),
            target="<= 3.0x" if size == 60000 else "-",
            met=statistics.median(fast_ratios) <= 3.0 if size == 60000 else None,
        )
        if "reader" in runs:
            table.add(
                "  of which reading: the reader alone, CPU, vs rapidyaml parse",
                spread([r.cpu for r in runs["reader"]], "s"),
                spread([r.cpu for r in fast_floor], "s"),
                spread(ratios(runs["reader"], fast_floor, "cpu"), "x"),
            )
        table.add(
            f"  check (--jobs: {available_cores()} cores), wall, vs rapidyaml parse",
            spread([r.wall for r in runs["check"]], "s"),
            spread([r.wall for r in fast_floor], "s"),
            spread(ratios(runs["check"], fast_floor, "wall"), "x"),
        )
        rss[size] = max(r.rss for r in one)
        table.add(
            "  check --jobs 1, peak RSS",
            f"{max(r.rss for r in one):.1f}MiB",
            f"{max(r.rss for r in floor):.1f}MiB",
            f"{max(r.rss for r in one) / max(r.rss for r in floor):.2f}x",
        )
        if "pyyaml" in runs:
            table.add(
                "  with the PyYAML reader alone, CPU, vs CSafeLoader parse",
                spread([r.cpu for r in runs["pyyaml"]], "s"),
                spread([r.cpu for r in floor], "s"),
                spread(ratios(runs["pyyaml"], floor, "cpu"), "x"),
            )
        if size == 6000 and checkov:
            _versus_checkov(table, corpus, "100-document files")
    if 6000 in rss and 60000 in rss:
        growth = rss[60000] / rss[6000]
        table.add(
            "peak RSS, 60,000 vs 6,000 documents (--jobs 1)",
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
        {
            "check": (_check("--jobs", "1", str(heavy)), None),
            "floor": ([sys.executable, "-c", BARE_PARSE, *files], None),
        },
        rounds,
    )
    table.add(
        "check --jobs 1, 6,000 dra-heavy documents, CPU, vs CSafeLoader parse",
        spread([r.cpu for r in runs["check"]], "s"),
        spread([r.cpu for r in runs["floor"]], "s"),
        spread(ratios(runs["check"], runs["floor"], "cpu"), "x"),
    )


def _versus_checkov(table: Table, corpus: Path, layout: str) -> None:
    theirs = [CHECKOV[0], "--quiet", "--compact", "--framework", "kubernetes", "-d", str(corpus)]
    versus = interleaved({"checkov": (theirs, None), "check": (_check(str(corpus)), None)}, 3)
    slower = ratios(versus["checkov"], versus["check"], "wall")
    table.add(
        f"  Checkov on the same {layout}, wall",
        spread([r.wall for r in versus["check"]], "s"),
        spread([r.wall for r in versus["checkov"]], "s"),
        spread(slower, "x") + " slower",
        target=">= 50x",
        met=statistics.median(slower) >= 50,
    )


#: The Checkov executable (`--checkov`), once main() has found it.
CHECKOV: list[str] = []


def tree(table: Table, scratch: Path, rounds: int) -> None:
    """One object per file, in a folder per service, as repositories keep manifests."""
    corpus = scratch / "tree-6000"
    documents = write_tree(corpus, 6000)
    files = sorted(str(path) for path in corpus.rglob("*.yaml"))
    runs = interleaved(
        {
            "check": (_check(str(corpus)), None),
            "check -j1": (_check("--jobs", "1", str(corpus)), None),
            **_floors(files),
        },
        rounds,
    )
    table.add(
        f"check --jobs 1, {documents:,} documents one per file, CPU, vs CSafeLoader parse",
        spread([r.cpu for r in runs["check -j1"]], "s"),
        spread([r.cpu for r in runs["libyaml"]], "s"),
        spread(ratios(runs["check -j1"], runs["libyaml"], "cpu"), "x"),
    )
    table.add(
        f"  check (--jobs: {available_cores()} cores), wall, vs CSafeLoader parse",
        spread([r.wall for r in runs["check"]], "s"),
        spread([r.wall for r in runs["libyaml"]], "s"),
        spread(ratios(runs["check"], runs["libyaml"], "wall"), "x"),
    )
    if CHECKOV:
        _versus_checkov(table, corpus, "one-object files")


def scaling(table: Table, scratch: Path, rounds: int) -> None:
    """`--jobs` 1, 2 and every core on 60,000 documents: the speed-up per round, and the
    reports of every N, and of two shards merged, byte for byte the same."""
    corpus = scratch / "realistic-60000"
    if not corpus.exists():
        write_realistic(corpus, 60000)
    cores = available_cores()
    levels = sorted({1, 2, cores})
    # Every round, not the fewer of the 60,000-document throughput rows: a speed-up sits near
    # its target, and the median of three rounds moved by 0.3x with the machine's hour.
    runs = interleaved({f"-j{n}": (_check("--jobs", str(n), str(corpus)), None) for n in levels}, rounds)
    for n in levels[1:]:
        speedup = ratios(runs["-j1"], runs[f"-j{n}"], "wall")
        target = n == 2 and cores >= 2
        table.add(
            f"check --jobs {n} vs --jobs 1, 60,000 documents, wall ({cores} cores)",
            spread([r.wall for r in runs[f"-j{n}"]], "s"),
            spread([r.wall for r in runs["-j1"]], "s"),
            spread(speedup, "x") + " faster",
            target=">= 1.7x" if target else "-",
            met=statistics.median(speedup) >= 1.7 if target else None,
        )
    reports = {}
    for n in levels:
        output = scratch / f"report-j{n}.json"
        run(_check("--jobs", str(n), str(corpus), output=str(output)))
        reports[f"--jobs {n}"] = output.read_bytes()
    facts = [str(scratch / f"facts-{index}") for index in (1, 2)]
    for index, path in enumerate(facts, 1):
        shard = [sys.executable, "-m", "dra_guard.cli", "check", "--shard", f"{index}/2", "--facts-out", path]
        run([*shard, str(corpus)], ok=(0,))
    merged = scratch / "report-merged.json"
    merge = [sys.executable, "-m", "dra_guard.cli", "merge", "--format", "json", "--output", str(merged), *facts]
    run(merge)
    reports["2 shards merged"] = merged.read_bytes()
    same = len(set(reports.values())) == 1
    table.add(
        "  reports of " + ", ".join(reports),
        f"{len(reports[next(iter(reports))]):,} bytes",
        "-",
        "identical" if same else "DIFFERENT",
        target="identical",
        met=same,
    )


def single_file(table: Table, scratch: Path, documents: int) -> None:
    """One file of `documents` documents (a large chart's `helm template`) against the same
    documents in 100-document files: peak RSS, one run each (RSS does not wobble as time does)."""
    single = scratch / "single" / "rendered.yaml"
    write_single(single, documents)
    spread_out = scratch / f"realistic-{documents}"
    if not spread_out.exists():
        write_realistic(spread_out, documents)
    config = scratch / "large-files.yaml"
    config.write_text("max-file-bytes: 4294967296\n")
    size = single.stat().st_size
    one = run(_check("--jobs", "1", "--config", str(config), str(single)))
    many = run(_check("--jobs", "1", "--config", str(config), str(spread_out)))
    growth = one.rss / many.rss
    table.add(
        f"peak RSS, {documents:,} documents in one {size / 1e6:.0f} MB file vs in 100-document files",
        f"{one.rss:.1f}MiB",
        f"{many.rss:.1f}MiB",
        f"{growth:.2f}x",
        target="<= 1.5x",
        met=growth <= 1.5,
    )
    table.add(
        "  the same, CPU",
        f"{one.cpu:.1f}s",
        f"{many.cpu:.1f}s",
        f"{one.cpu / many.cpu:.2f}x",
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
    parser.add_argument(
        "--single-file-documents",
        type=int,
        default=220_000,
        help="documents in the one large file (220,000: about 175 MB); 0 leaves it out",
    )
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
        if checkov:
            CHECKOV.append(checkov)
        throughput(table, Path(scratch), arguments.sizes, arguments.rounds, checkov)
        tree(table, Path(scratch), arguments.rounds)
        if 60000 in arguments.sizes:
            scaling(table, Path(scratch), arguments.rounds)
        if arguments.single_file_documents:
            single_file(table, Path(scratch), arguments.single_file_documents)
        cold_start(table, Path(scratch), arguments.rounds * 3)
    os.chdir(REPO)
    table.print()
    if not checkov:
        print("(Checkov not compared: pass --checkov PATH, as `make bench` does)")
    return 1 if table.missed else 0


if __name__ == "__main__":
    sys.exit(main())
