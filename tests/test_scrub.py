"""`dra-guard scrub` on a machine without an accelerator: its refusals, arguments and report.

The real CUDA path runs only on a GPU (bench/gpu/scrub_check.sh).  What runs here is
everything around it: which device nodes a container's /dev holds (an empty folder, or one
with the names drivers inject), the refusal of every vendor the scrubber cannot scrub, the
refusal without cuda-python, the verdict on a device's counts, the driver's scrub-on-free
parameter, the one-line JSON, and the command line's errors; and, through a fake CUDA driver
module (`FakeCuda`, the cuda-python calls the scrubber makes, over host memory) and a fake
NVML (`fake_nvml`), the comparison of the devices a container was given with those CUDA
scrubbed.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from dra_guard.cli.main import main
from dra_guard.scrub import apart, nvml
from dra_guard.scrub.devices import VisibleDevice, visible_devices
from dra_guard.scrub.driver_params import scrub_on_free
from dra_guard.scrub.given import GivenDevice, NamedDevice, given_devices
from dra_guard.scrub.nvidia import MIB, DeviceScrub, ScrubError, load_driver
from dra_guard.scrub.run import Settings, _verdicts
from testkit.paths import REPO_ROOT
from tests.fake_cuda import SETTING, FakeCuda, FakeDevice, child_site, node_setting, visible

SUMMARY_KEYS = {
    "ok",
    "reason",
    "problems",
    "visible",
    "unscrubbed",
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
        # A VFIO group: a TPU v5e's or a passthrough GPU's, it does not say (it was named "tpu").
        (("vfio/0",), "vfio"),
        # A GPU bound to vfio-pci, through iommufd (NVIDIA's passthrough devices): it was not seen,
        # so a scrubber holding it beside a GPU it scrubbed passed.
        (("vfio/devices/vfio0", "vfio/vfio"), "vfio"),
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
    return DeviceScrub(0, "NVIDIA H200", seconds=0.5, multiprocessors=132, **values)


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
    ("multiprocessors", "reserved_mib", "tolerance_mib", "problem"),
    [
        (132, 792, None, None),  # 6 MiB per SM: an H100's 132 SMs
        (132, 793, None, "device 0: 793 MiB was in use before the scrub, more than a CUDA context takes (792 MiB)"),
        (16, 128, None, None),  # a MIG slice's 16 SMs: the floor, 128 MiB
        (16, 129, None, "device 0: 129 MiB was in use before the scrub, more than a CUDA context takes (128 MiB)"),
        (132, 900, 1024, None),  # --reserved-mib 1024
        (None, 300, None, "device 0: CUDA does not say how many multiprocessors it has, so the 300 MiB in use"),
        (None, 300, 1024, None),
    ],
)
def test_memory_in_use_before_the_scrub_is_bounded(
    multiprocessors: int | None, reserved_mib: int, tolerance_mib: int | None, problem: str | None
) -> None:
    result = dataclasses.replace(scrubbed(reserved_bytes=reserved_mib * MIB), multiprocessors=multiprocessors)
    settings = Settings(reserved_tolerance_bytes=None if tolerance_mib is None else tolerance_mib * MIB)
    problems = _verdicts([result], settings)
    assert len(problems) == (problem is not None)
    assert problem is None or problems[0].startswith(problem)


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
        (["--device-timeout-s", "0"], "0 s: must be at least 1"),
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


# --- A fake CUDA driver module, and a fake NVML ----------------------------------------------


GPU0 = "GPU-00000000-0000-0000-0000-000000000000"
GPU1 = "GPU-11111111-1111-1111-1111-111111111111"
MIG_A = "MIG-aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
MIG_B = "MIG-bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb"
#: What NVML names on the fake node: GPU 0 whole, GPU 1 in MIG mode with two MIG devices.
NAMED = [
    NamedDevice(GPU0, 0),
    NamedDevice(GPU1, 1),
    NamedDevice(MIG_A, 1, 1, 0),
    NamedDevice(MIG_B, 1, 2, 0),
]
#: /proc/driver/nvidia-caps/mig-minors, as the driver lists it (config, monitor, then per GPU).
MIG_MINORS = (
    "config 1\nmonitor 2\ngpu1/gi1/access 12\ngpu1/gi1/ci0/access 13\ngpu1/gi2/access 21\ngpu1/gi2/ci0/access 22\n"
)
#: The nodes a MIG device's claim injects: its GPU and its two capabilities.
MIG_A_NODES = ("nvidia1", "nvidia-caps/nvidia-cap12", "nvidia-caps/nvidia-cap13")
MIG_B_NODES = ("nvidia1", "nvidia-caps/nvidia-cap21", "nvidia-caps/nvidia-cap22")


def fake_cuda(monkeypatch: pytest.MonkeyPatch, *node: FakeDevice, named: list[NamedDevice] = NAMED) -> FakeCuda:
    """The container's devices are `node`, shown by CUDA to this process and to those the
    scrubber starts as real CUDA would (tests/fake_cuda.py); NVML names `named`."""
    fake = FakeCuda(list(node))
    monkeypatch.setitem(sys.modules, "cuda", types.ModuleType("cuda"))
    monkeypatch.setitem(sys.modules, "cuda.bindings", types.ModuleType("cuda.bindings"))
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", fake)
    monkeypatch.setattr(nvml, "nvml_devices", lambda: list(named))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv(SETTING, node_setting(list(node)))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join((child_site(), str(REPO_ROOT))))
    return fake


def scrub_in(
    tmp_path: Path,
    *nodes: str,
    mig_minors: str | None = MIG_MINORS,
    reserved_mib: int | None = None,
    timeout_s: int | None = None,
) -> tuple[int, dict[str, Any], str]:
    tmp_path.mkdir(exist_ok=True)
    minors = tmp_path / "mig-minors"
    if mig_minors is not None:
        minors.write_text(mig_minors)
    dev = dev_with(tmp_path, *dict.fromkeys(nodes))
    reserved = [] if reserved_mib is None else ["--reserved-mib", str(reserved_mib)]
    reserved += [] if timeout_s is None else ["--device-timeout-s", str(timeout_s)]
    return run("--dev", str(dev), "--mig-minors", str(minors), "--chunk-mib", "16", "--min-chunk-mib", "1", *reserved)


def label(uuid: str) -> str:
    """How `unscrubbed` and the reasons name a device of the fake node."""
    return {
        GPU0: f"/dev/nvidia0 ({GPU0})",
        GPU1: f"/dev/nvidia1 ({GPU1})",
        MIG_A: f"/dev/nvidia1 MIG gi1/ci0 ({MIG_A})",
        MIG_B: f"/dev/nvidia1 MIG gi2/ci0 ({MIG_B})",
    }[uuid]


def test_the_fake_shows_devices_as_cuda_does() -> None:
    # A CUDA process enumerates one MIG device, and no whole GPU beside one; CUDA_VISIBLE_DEVICES
    # shows the devices it names, up to the first it cannot match.
    node = [FakeDevice(GPU0), FakeDevice(MIG_A), FakeDevice(MIG_B)]
    assert visible(node, None) == [1]
    assert visible(node, MIG_B) == [2]
    assert visible(node, GPU0) == [0]
    assert visible(node, f"{GPU0},{MIG_B}") == [2]
    assert visible(node, f"{GPU1},{GPU0}") == []
    assert visible([FakeDevice(GPU0), FakeDevice(GPU1)], None) == [0, 1]


def test_every_device_given_and_scrubbed_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_cuda(monkeypatch, FakeDevice(GPU0, residue=3 * MIB), FakeDevice(GPU1))
    code, summary, stderr = scrub_in(tmp_path, "nvidia0", "nvidia1", "nvidiactl")
    assert (code, stderr, summary["problems"], summary["unscrubbed"]) == (0, "", [], [])
    assert [device["uuid"] for device in summary["devices"]] == [GPU0[4:], GPU1[4:]]
    assert summary["bytes_nonzero_before"] == 3 * MIB and summary["bytes_nonzero_after"] == 0
    assert summary["bytes_checked"] == 2 * 60 * MIB


def test_a_passthrough_gpu_beside_a_scrubbed_one_fails_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """NVIDIA's driver hands a vfio GPU over as /dev/vfio/devices/vfioN where iommufd is
    preferred (vfio-cdi.go): unseen, the scrubber exited 0 with that GPU's memory unread."""
    fake_cuda(monkeypatch, FakeDevice(GPU0))
    code, summary, _ = scrub_in(tmp_path, "nvidia0", "nvidiactl", "vfio/devices/vfio0", "iommu")
    vfio = str(tmp_path / "dev" / "vfio" / "devices" / "vfio0")
    assert code == 1 and summary["unscrubbed"] == [vfio]
    assert f"cannot scrub {vfio} (vfio)" in summary["reason"]


@pytest.mark.e2e
def test_a_gpu_given_that_no_process_can_reach_fails_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two GPUs injected, CUDA shows one, and a process of its own cannot reach the other either:
    # the scrubber used to say ok with "visible" 2 and "devices" 1.
    fake_cuda(monkeypatch, FakeDevice(GPU0))
    code, summary, stderr = scrub_in(tmp_path, "nvidia0", "nvidia1")
    assert code == 1 and summary["ok"] is False
    assert summary["unscrubbed"] == [label(GPU1)]
    assert summary["reason"] == (
        f"not scrubbed: {label(GPU1)}: its scrubbing process could not scrub it: cuInit failed: CUDA_ERROR_NO_DEVICE"
    )
    assert stderr == f"dra-guard scrub: {summary['reason']}\n"
    assert [device["uuid"] for device in summary["devices"]] == [GPU0[4:]]


@pytest.mark.e2e
def test_a_gpu_cuda_visible_devices_hides_is_scrubbed_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_cuda(monkeypatch, FakeDevice(GPU0), FakeDevice(GPU1, residue=MIB))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", GPU0)
    code, summary, stderr = scrub_in(tmp_path, "nvidia0", "nvidia1")
    assert (code, stderr, summary["unscrubbed"]) == (0, "", [])
    assert [(device["index"], device["uuid"]) for device in summary["devices"]] == [(0, GPU0[4:]), (1, GPU1[4:])]
    assert summary["bytes_nonzero_before"] == MIB


def test_one_mig_device_given_and_scrubbed_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_cuda(monkeypatch, FakeDevice(MIG_A))
    code, summary, _ = scrub_in(tmp_path, *MIG_A_NODES)
    assert (code, summary["unscrubbed"]) == (0, [])


@pytest.mark.e2e
def test_a_gpu_hidden_from_this_process_is_scrubbed_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # CUDA_VISIBLE_DEVICES hides every device: cuInit finds none (CUDA_ERROR_NO_DEVICE).
    fake_cuda(monkeypatch, FakeDevice(GPU0, residue=MIB))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    code, summary, stderr = scrub_in(tmp_path, "nvidia0")
    assert (code, stderr, summary["unscrubbed"]) == (0, "", [])
    assert [device["uuid"] for device in summary["devices"]] == [GPU0[4:]]
    assert summary["bytes_nonzero_before"] == MIB


@pytest.mark.e2e
def test_two_mig_devices_are_each_scrubbed_in_a_process_of_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both MIG devices share /dev/nvidia1; a CUDA process enumerates one of them, so this one
    # used to fail (exit 1, MIG_B unscrubbed) whatever was in their memory.
    fake = fake_cuda(monkeypatch, FakeDevice(MIG_A, residue=2 * MIB), FakeDevice(MIG_B, residue=5 * MIB))
    code, summary, stderr = scrub_in(tmp_path, *MIG_A_NODES, *MIG_B_NODES)
    assert (code, stderr, summary["problems"], summary["unscrubbed"]) == (0, "", [], [])
    assert [(device["index"], device["uuid"]) for device in summary["devices"]] == [(0, MIG_A[4:]), (1, MIG_B[4:])]
    assert summary["bytes_nonzero_before"] == 7 * MIB and summary["bytes_nonzero_after"] == 0
    assert summary["bytes_checked"] == 2 * 60 * MIB
    assert fake.memory == {}  # this process made no context and read nothing itself


@pytest.mark.e2e
def test_a_gpu_and_a_mig_device_are_each_scrubbed_in_a_process_of_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "CUDA will not enumerate non-MIG GPU if any compute instance is enumerated on any other GPU".
    fake_cuda(monkeypatch, FakeDevice(GPU0, residue=MIB), FakeDevice(MIG_A))
    code, summary, stderr = scrub_in(tmp_path, "nvidia0", *MIG_A_NODES)
    assert (code, stderr, summary["unscrubbed"]) == (0, "", [])
    assert [device["uuid"] for device in summary["devices"]] == [GPU0[4:], MIG_A[4:]]  # as given: GPUs first
    assert summary["bytes_nonzero_before"] == MIB


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("fails", "why"),
    [
        ("crash", "its scrubbing process was killed by signal 9"),
        ("hang", "its scrubbing process did not finish within 5 s and was killed"),
        ("silent", "its scrubbing process printed no result it can be judged by (exit 0)"),
        (
            "raise",
            "its scrubbing process printed no result it can be judged by (exit 1): RuntimeError: the fake driver broke",
        ),
    ],
)
def test_a_device_whose_process_fails_is_not_scrubbed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: str, why: str
) -> None:
    fake_cuda(monkeypatch, FakeDevice(MIG_A), FakeDevice(MIG_B, fails=fails))
    code, summary, stderr = scrub_in(tmp_path, *MIG_A_NODES, *MIG_B_NODES, timeout_s=5 if fails == "hang" else None)
    assert code == 1 and summary["unscrubbed"] == [label(MIG_B)]
    assert summary["problems"] == [f"not scrubbed: {label(MIG_B)}: {why}"]
    assert stderr == f"dra-guard scrub: {summary['reason']}\n"
    assert [device["uuid"] for device in summary["devices"]] == [MIG_A[4:]]


@pytest.mark.e2e
def test_a_process_that_reaches_another_device_scrubs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # CUDA_VISIBLE_DEVICES=MIG_B shows the process a device whose UUID is MIG_A's.
    fake_cuda(monkeypatch, FakeDevice(MIG_A), FakeDevice(MIG_B, cuda_uuid=MIG_A))
    code, summary, _ = scrub_in(tmp_path, *MIG_A_NODES, *MIG_B_NODES)
    assert code == 1 and summary["unscrubbed"] == [label(MIG_B)]
    assert summary["reason"] == (
        f"not scrubbed: {label(MIG_B)}: its scrubbing process could not scrub it: "
        f"CUDA shows {MIG_A[4:]}, not {MIG_B[4:]} alone"
    )
    assert [device["uuid"] for device in summary["devices"]] == [MIG_A[4:]]


#: A stand-in for the child process, as apart.CHILD: it prints `reply` whatever it was asked.
LIAR = """
import json, sys
uuid = sys.argv[1][4:]
device = dict(index=0, name="x", total_bytes=64, reserved_bytes=4, checked_bytes=60, nonzero_before_bytes=0,
              nonzero_after_bytes=0, unreachable_bytes=0, seconds=0.1, multiprocessors=8, uuid=uuid)
{lie}
print(json.dumps(dict(device=device)))
sys.exit(code if "code" in dir() else 0)
"""


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("lie", "why"),
    [
        (f"device['uuid'] = {MIG_A[4:]!r}", f"its scrubbing process reached {MIG_A[4:]}, not it"),
        ("device['uuid'] = None", "its scrubbing process reached a device without a UUID, not it"),
        ("code = 3", "its scrubbing process exited 3"),
        ("del device['seconds']", "its scrubbing process printed no result it can be judged by (exit 0)"),
        ("device['checked_bytes'] = -1", "its scrubbing process printed no result it can be judged by (exit 0)"),
        ("device['checked_bytes'] = True", "its scrubbing process printed no result it can be judged by (exit 0)"),
    ],
)
def test_the_parent_checks_what_a_process_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lie: str, why: str
) -> None:
    fake_cuda(monkeypatch, FakeDevice(MIG_A), FakeDevice(MIG_B))
    monkeypatch.setattr(apart, "CHILD", ("-c", LIAR.replace("{lie}", f"if uuid == {MIG_B[4:]!r}: {lie}")))
    code, summary, _ = scrub_in(tmp_path, *MIG_A_NODES, *MIG_B_NODES)
    assert code == 1 and summary["unscrubbed"] == [label(MIG_B)]
    assert summary["problems"] == [f"not scrubbed: {label(MIG_B)}: {why}"]
    assert [device["uuid"] for device in summary["devices"]] == [MIG_A[4:]]


@pytest.mark.e2e
def test_a_whole_gpu_is_no_stand_in_for_its_mig_device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # cuDeviceGetUuid naming a MIG device by its parent GPU: the GPU was not given, the MIG was.
    fake_cuda(monkeypatch, FakeDevice(MIG_A, cuda_uuid=GPU1))
    code, summary, _ = scrub_in(tmp_path, *MIG_A_NODES)
    assert code == 1 and summary["unscrubbed"] == [label(MIG_A)]
    assert summary["devices"] == []


@pytest.mark.parametrize(
    ("mig_minors", "why"),
    [
        (None, "cannot be read (FileNotFoundError)"),
        ("config 1\nmonitor 2\n", "does not list them as MIG instances"),
    ],
)
@pytest.mark.e2e
def test_a_capability_node_that_cannot_be_placed_fails_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mig_minors: str | None, why: str
) -> None:
    fake_cuda(monkeypatch, FakeDevice(MIG_A))
    code, summary, _ = scrub_in(tmp_path, *MIG_A_NODES, mig_minors=mig_minors)
    caps = [str(tmp_path / "dev" / node) for node in MIG_A_NODES[1:]]
    assert code == 1
    assert summary["reason"] == f"cannot tell which MIG devices {', '.join(caps)} give: {tmp_path / 'mig-minors'} {why}"
    # Unplaced, the nodes name no MIG device: /dev/nvidia1 reads as a whole GPU, which CUDA
    # shows no process (it is in MIG mode).
    assert summary["unscrubbed"] == [label(GPU1), *caps]
    assert summary["problems"][1:] == [
        f"not scrubbed: {label(GPU1)}: its scrubbing process could not scrub it: cuInit failed: CUDA_ERROR_NO_DEVICE"
    ]


def test_without_nvml_nothing_counts_as_scrubbed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_cuda(monkeypatch, FakeDevice(GPU0))

    def no_nvml() -> list[NamedDevice]:
        raise ScrubError("NVML (libnvidia-ml.so.1) cannot be loaded: not here")

    monkeypatch.setattr(nvml, "nvml_devices", no_nvml)
    code, summary, _ = scrub_in(tmp_path, "nvidia0")
    assert code == 1 and summary["unscrubbed"] == ["/dev/nvidia0"]
    assert (
        summary["reason"]
        == "cannot tell which devices CUDA scrubbed: NVML (libnvidia-ml.so.1) cannot be loaded: not here"
    )


@pytest.mark.e2e
def test_a_device_cuda_gives_no_uuid_for_is_not_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_cuda(monkeypatch, FakeDevice(GPU0, cuda_uuid=None))
    code, summary, _ = scrub_in(tmp_path, "nvidia0")
    assert code == 1 and summary["unscrubbed"] == [label(GPU0)]
    assert summary["reason"] == (
        f"not scrubbed: {label(GPU0)}: its scrubbing process could not scrub it: "
        f"CUDA shows a device without a UUID, not {GPU0[4:]} alone"
    )
    assert summary["devices"] == []


def test_a_gpu_node_nvml_does_not_name_is_not_scrubbed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # /dev/nvidia5 given, no such GPU: nothing to point a process at, so none is started.
    fake_cuda(monkeypatch, FakeDevice(GPU0))
    code, summary, _ = scrub_in(tmp_path, "nvidia0", "nvidia5")
    assert code == 1 and summary["unscrubbed"] == ["/dev/nvidia5"]
    assert summary["reason"] == (
        "not scrubbed: /dev/nvidia5: CUDA reached 1 of the 2 NVIDIA devices this container was given (NVML names "
        "none of the others, so none could be scrubbed in a process of its own)"
    )


@pytest.mark.e2e
def test_beside_devices_scrubbed_apart_a_gpu_node_nvml_does_not_name_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_cuda(monkeypatch, FakeDevice(GPU0), FakeDevice(MIG_A))
    code, summary, _ = scrub_in(tmp_path, "nvidia0", "nvidia5", *MIG_A_NODES)
    assert code == 1 and summary["unscrubbed"] == ["/dev/nvidia5"]
    assert summary["problems"] == [
        "not scrubbed: /dev/nvidia5: NVML names no such device, so no process could be given it alone"
    ]
    assert [device["uuid"] for device in summary["devices"]] == [GPU0[4:], MIG_A[4:]]


def test_which_devices_the_nodes_give(tmp_path: Path) -> None:
    dev = dev_with(
        tmp_path,
        "nvidia0",
        "nvidiactl",
        "nvidia-uvm",
        *MIG_A_NODES,
        "nvidia-caps/nvidia-cap1",
        "nvidia-caps/nvidia-cap21",
    )
    (tmp_path / "mig-minors").write_text(MIG_MINORS)
    given, problems = given_devices(str(dev), str(tmp_path / "mig-minors"))
    caps = dev / "nvidia-caps"
    assert problems == []
    assert given == [
        GivenDevice((0, None, None), (str(dev / "nvidia0"),)),  # a whole GPU
        GivenDevice((1, 1, 0), (str(caps / "nvidia-cap12"), str(caps / "nvidia-cap13"))),  # /dev/nvidia1 is its parent
        GivenDevice((1, 2, None), (str(caps / "nvidia-cap21"),)),  # a GPU instance alone: nothing can use it
    ]  # nvidia-cap1 (config) is no device
    assert [device.label() for device in given] == [
        "/dev/nvidia0",
        "/dev/nvidia1 MIG gi1/ci0",
        "/dev/nvidia1 MIG gi2 (no compute instance)",
    ]


class FakeNvmlLibrary:
    """libnvidia-ml.so.1 as `nvml_devices` calls it through ctypes: GPU handles are 1, 2, …,
    a MIG handle is 100 * its GPU's + 1 + its position.  `gpus`: (UUID, minor, MIG devices as
    {position: (UUID, GI, CI)}, or None where the GPU is not MIG-capable)."""

    NOT_FOUND, NOT_SUPPORTED, NO_PERMISSION = 6, 3, 4

    def __init__(self, gpus: list[tuple[str, int, dict[int, tuple[str, int, int]] | None]]) -> None:
        self.gpus = gpus
        self.shut = False

    def nvmlInit_v2(self) -> int:
        return 0

    def nvmlShutdown(self) -> int:
        self.shut = True
        return 0

    def nvmlDeviceGetCount_v2(self, count: Any) -> int:
        count._obj.value = len(self.gpus) + 1  # one more, which this process may not open
        return 0

    def nvmlDeviceGetHandleByIndex_v2(self, index: Any, handle: Any) -> int:
        if index.value >= len(self.gpus):
            return self.NO_PERMISSION
        handle._obj.value = index.value + 1
        return 0

    def _mig(self, handle: int) -> tuple[str, int, int]:
        migs = self.gpus[handle // 100 - 1][2]
        assert migs is not None
        return migs[handle % 100 - 1]

    def nvmlDeviceGetUUID(self, handle: Any, buffer: Any, size: Any) -> int:
        buffer.value = (self._mig(handle.value)[0] if handle.value >= 100 else self.gpus[handle.value - 1][0]).encode()
        return 0

    def nvmlDeviceGetMinorNumber(self, handle: Any, minor: Any) -> int:
        minor._obj.value = self.gpus[handle.value - 1][1]
        return 0

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: Any, most: Any) -> int:
        migs = self.gpus[handle.value - 1][2]
        if migs is None:
            return self.NOT_SUPPORTED
        most._obj.value = 7
        return 0

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: Any, position: Any, mig: Any) -> int:
        migs = self.gpus[handle.value - 1][2]
        if migs is None or position.value not in migs:
            return self.NOT_FOUND
        mig._obj.value = 100 * handle.value + 1 + position.value
        return 0

    def nvmlDeviceGetGpuInstanceId(self, handle: Any, gi: Any) -> int:
        gi._obj.value = self._mig(handle.value)[1]
        return 0

    def nvmlDeviceGetComputeInstanceId(self, handle: Any, ci: Any) -> int:
        ci._obj.value = self._mig(handle.value)[2]
        return 0


def test_nvml_names_gpus_by_minor_and_mig_devices_by_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    library = FakeNvmlLibrary([(GPU0, 0, None), (GPU1, 1, {0: (MIG_A, 1, 0), 3: (MIG_B, 2, 0)})])
    monkeypatch.setattr(nvml.ctypes, "CDLL", lambda name: library)
    assert nvml.nvml_devices() == NAMED
    assert library.shut


def test_nvml_that_cannot_be_loaded_is_a_scrub_error(tmp_path: Path) -> None:
    with pytest.raises(ScrubError, match=r"^NVML \(.*absent\.so\) cannot be loaded: "):
        nvml.nvml_devices(str(tmp_path / "absent.so"))


def test_memory_another_process_holds_fails_the_scrub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 1 GiB, 904 MiB of it held by another process: the scrubber read the 116 MiB left and said ok.
    fake_cuda(monkeypatch, FakeDevice(GPU0, total=1024 * MIB, held=904 * MIB))
    code, summary, _ = scrub_in(tmp_path, "nvidia0")
    assert code == 1 and summary["bytes_reserved"] == 908 * MIB
    assert summary["reason"] == (
        "device 0: 908 MiB was in use before the scrub, more than a CUDA context takes (128 MiB): "
        "another process's or the driver's, not read"
    )
    assert summary["unscrubbed"] == []  # the device was reached; not all of it could be read
    code, summary, _ = scrub_in(tmp_path / "again", "nvidia0", reserved_mib=1024)
    assert code == 0 and summary["devices"][0]["multiprocessors"] == 8
