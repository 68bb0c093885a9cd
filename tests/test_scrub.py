"""`dra-guard scrub` on a machine without an accelerator: its refusals, arguments and report.

No device is faked: the CUDA path runs only on a GPU (bench/gpu/scrub_check.sh).  What runs
here is everything around it: which device nodes a container's /dev holds (an empty folder,
or one with the names drivers inject), the refusal of every vendor the scrubber cannot scrub,
the refusal without cuda-python, the verdict on a device's counts, the driver's scrub-on-free
parameter, the one-line JSON, and the command line's errors.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dra_guard.cli.main import main
from dra_guard.scrub.devices import VisibleDevice, visible_devices
from dra_guard.scrub.driver_params import scrub_on_free
from dra_guard.scrub.nvidia import MIB, DeviceScrub, ScrubError, load_driver
from dra_guard.scrub.run import Settings, _verdicts

SUMMARY_KEYS = {
    "ok",
    "reason",
    "problems",
    "visible",
    "devices",
    "bytes_checked",
    "bytes_nonzero_before",
    "bytes_nonzero_after",
    "bytes_reserved",
    "bytes_unreachable",
    "seconds",
    "gb_per_s",
    "driver_scrub_on_free",
}


def run(*arguments: str) -> tuple[int, dict[str, Any], str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(["scrub", *arguments], stdout, stderr)
    lines = stdout.getvalue().splitlines()
    assert len(lines) == 1, lines  # one JSON line, whatever happened
    return code, json.loads(lines[0]), stderr.getvalue()


def dev_with(tmp_path: Path, *nodes: str) -> Path:
    dev = tmp_path / "dev"
    dev.mkdir()
    for node in nodes:
        (dev / node).parent.mkdir(parents=True, exist_ok=True)
        (dev / node).write_bytes(b"")
    return dev


def test_no_visible_device_is_a_failure_never_a_pass(tmp_path: Path) -> None:
    code, summary, stderr = run("--dev", str(dev_with(tmp_path)), "--sys-class", str(tmp_path / "none"))
    assert code == 1
    assert set(summary) == SUMMARY_KEYS
    assert summary["ok"] is False and summary["bytes_checked"] == 0
    assert "no accelerator device is visible" in summary["reason"]
    assert stderr.startswith("dra-guard scrub: no accelerator device is visible") and stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("nodes", "vendor"),
    [
        (("accel0", "accel1"), "tpu"),
        (("vfio/0",), "tpu"),
        (("kfd", "dri/renderD128"), "amd"),
        (("accel/accel0",), "intel-gaudi"),
        (("dri/renderD128",), "unknown"),
    ],
)
def test_a_device_it_cannot_scrub_is_refused_by_name(tmp_path: Path, nodes: tuple[str, ...], vendor: str) -> None:
    code, summary, _ = run("--dev", str(dev_with(tmp_path, *nodes)), "--sys-class", str(tmp_path / "none"))
    assert code == 1
    assert {device["vendor"] for device in summary["visible"]} == {vendor}
    assert f"({vendor})" in summary["reason"] and "NVIDIA GPUs and MIG instances only" in summary["reason"]
    assert summary["devices"] == [] and summary["driver_scrub_on_free"] == "unknown"  # CUDA never tried


def test_a_render_node_is_placed_by_its_pci_vendor(tmp_path: Path) -> None:
    dev = dev_with(tmp_path, "dri/renderD128", "dri/renderD129", "nvidia0")
    sys_class = tmp_path / "drm"
    for name, vendor in (("renderD128", "0x8086"), ("renderD129", "0x10de")):
        (sys_class / name / "device").mkdir(parents=True)
        (sys_class / name / "device" / "vendor").write_text(vendor + "\n")
    assert visible_devices(str(dev), str(sys_class)) == [
        VisibleDevice("nvidia", str(dev / "nvidia0")),
        VisibleDevice("intel", str(dev / "dri" / "renderD128")),  # NVIDIA's render node is its GPU's
    ]


def test_without_cuda_python_an_nvidia_gpu_is_not_scrubbed_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "cuda", None)
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)
    with pytest.raises(ScrubError, match=r"cuda-python is not installed \(install dra-guard\[scrub\]\)"):
        load_driver()
    code, summary, stderr = run("--dev", str(dev_with(tmp_path, "nvidia0", "nvidiactl")))
    assert code == 1
    assert summary["visible"] == [{"vendor": "nvidia", "node": str(tmp_path / "dev" / "nvidia0")}]
    assert summary["reason"] == "cuda-python is not installed (install dra-guard[scrub])"
    assert stderr == "dra-guard scrub: cuda-python is not installed (install dra-guard[scrub])\n"


def test_nvidia_and_a_device_it_cannot_scrub_report_both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cuda", None)
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)
    code, summary, stderr = run("--dev", str(dev_with(tmp_path, "nvidia0", "accel0")))
    assert code == 1
    assert len(summary["problems"]) == 2
    assert stderr.endswith("(and 1 more)\n")


def scrubbed(**counts: int) -> DeviceScrub:
    values = {
        "total_bytes": 1024 * MIB,
        "reserved_bytes": 300 * MIB,
        "checked_bytes": 720 * MIB,
        "nonzero_before_bytes": 0,
        "nonzero_after_bytes": 0,
        "unreachable_bytes": 4 * MIB,
        **counts,
    }
    return DeviceScrub(0, "NVIDIA H200", seconds=0.5, **values)


def test_residue_before_zeroing_is_evidence_not_a_failure() -> None:
    assert _verdicts([scrubbed(nonzero_before_bytes=123 * MIB)], Settings()) == []


@pytest.mark.parametrize(
    ("counts", "problem"),
    [
        ({"nonzero_after_bytes": 1}, "device 0: 1 bytes are not zero after zeroing"),
        ({"unreachable_bytes": 65 * MIB}, "device 0: 65 MiB reported free could not be allocated"),
        ({"checked_bytes": 0}, "device 0: no memory could be allocated"),
    ],
)
def test_what_a_scrub_fails_on(counts: dict[str, int], problem: str) -> None:
    assert _verdicts([scrubbed(**counts)], Settings()) == [problem]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('RegistryDwords: "RMDisableScrubOnFree=1"\n', "disabled"),
        ('RegistryDwords: "RmMsg=x;RMDisableScrubOnFree = 0x1"\n', "disabled"),
        ('RegistryDwords: "RMDisableScrubOnFree=0"\n', "not-disabled"),
        ('RegistryDwords: ""\nEnableMSI: 1\n', "not-disabled"),
    ],
)
def test_the_drivers_scrub_on_free_parameter(tmp_path: Path, text: str, expected: str) -> None:
    params = tmp_path / "params"
    params.write_text(text)
    assert scrub_on_free((str(params), str(tmp_path / "absent"))) == expected


def test_scrub_on_free_is_unknown_when_nothing_can_be_read(tmp_path: Path) -> None:
    assert scrub_on_free((str(tmp_path / "absent"),)) == "unknown"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--chunk-mib", "x"], "'x' is not a whole number of MiB"),
        (["--chunk-mib", "0"], "0 MiB: must be at least 1"),
    ],
)
def test_a_wrong_argument_is_a_usage_error(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["scrub", *arguments])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_a_minimum_above_the_chunk_is_refused() -> None:
    stderr = io.StringIO()
    assert main(["scrub", "--chunk-mib", "4", "--min-chunk-mib", "8"], io.StringIO(), stderr) == 2
    assert stderr.getvalue() == "dra-guard scrub: --min-chunk-mib is larger than --chunk-mib\n"


@pytest.mark.e2e
def test_python_m_dra_guard_scrub_is_the_same_command(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "dra_guard.scrub", "--dev", str(dev_with(tmp_path))],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert json.loads(result.stdout)["ok"] is False
    assert "Traceback" not in result.stderr
