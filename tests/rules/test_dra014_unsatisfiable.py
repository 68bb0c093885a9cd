"""DRA014 `unsatisfiable`: claims against the drivers' ResourceSlices (tests/fixtures/slices, written
from each driver's source), through the engine, the CLI (`--slices`), the configuration, cdk8s
`enforce()` and the Pulumi pack.

The allocation model itself is tested in tests/test_allocation.py; here it is the rule: which
verdicts become findings, with what message, and how the slices reach it.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cdk8s import ApiObject, ApiObjectMetadata, Chart, JsonPatch
from cdk8s import Testing as Cdk8sTesting
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from constructs_dra import enforce
from dra_guard import claim_template
from dra_guard.contract.findings import Finding, Severity
from dra_guard.engine.run import check_objects
from dra_guard.read.config_file import load_config_file, parse_policy_config
from dra_guard.ruleapi.config import Config
from dra_guard.rules import RULES
from dra_guard.rules.dra014_unsatisfiable import RESOURCE_SLICES
from pulumi_dra.policies import CROSS_OBJECT_SUFFIX, build_policies
from testkit.pack_process import configure, running_pack, struct
from testkit.pulumi_props import type_token
from testkit.rulecases import config
from tests.test_allocation import exactly, raw_claim
from tests.test_builders_allocate import VENDORS
from tests.test_cli import run

SLICES = Path(__file__).parent.parent / "fixtures" / "slices"
DEVICE_CLASSES = Path(__file__).parent.parent / "fixtures" / "deviceclasses"
FIXTURES = sorted(path.stem for path in SLICES.glob("*.yaml"))
#: For each vendor constructor (tests/test_builders_allocate.py), the fixtures whose node can give
#: it devices, and how many at most (with the alignment the builders emit by default).
FITS: dict[str, dict[str, int]] = {
    "mig.nvidia.com": {"nvidia-a100-mig": 7},  # 7 x 1g.5gb on one parent GPU
    # H100 80GB HBM3; the other GPU node has A100s; the DynamicMIG node publishes its 2 whole GPUs too.
    "gpu.nvidia.com": {"nvidia-8gpu-pcieroot": 8, "nvidia-h100-dynamic-mig": 2},
    "tpu.google.com": {"tpu-v6e-2x4": 8, "tpu-v6e-2x2": 4},
    "gpu.amd.com": {"amd-mi300x-partitioned": 8},  # 8 cpx_nps4 partitions
}
BUILDER_CASES = [
    (device_class, count, fixture)
    for (device_class, count), fixture in itertools.product(
        [
            (device_class, count)
            for device_class in VENDORS
            # 8: a whole 2x4 TPU host (more MIG devices than one GPU holds never build)
            for count in (1, 4, 7, *((8,) if device_class == "tpu.google.com" else ()))
        ],
        FIXTURES,
    )
]


@functools.cache
def with_slices(*fixtures: str) -> Config:
    return config({"resource-slices": [str(SLICES / f"{fixture}.yaml") for fixture in fixtures]})


def dra014(*objects: dict[str, Any], slices: Config | None = None) -> list[Finding]:
    report = check_objects(list(objects), slices or Config())
    assert report.errors == []
    return [finding for finding in report.findings if finding.rule == "DRA014"]


@pytest.mark.parametrize(
    ("device_class", "count", "fixture"), BUILDER_CASES, ids=[f"{c}-x{n}-{f}" for c, n, f in BUILDER_CASES]
)
def test_dra014_every_builder_output_against_every_driver_fixture(device_class: str, count: int, fixture: str) -> None:
    make, _ = VENDORS[device_class]
    template = claim_template(name="t", slice=make(count), namespace="ns")
    found = dra014(template, slices=with_slices(fixture))
    fits = count <= FITS[device_class].get(fixture, 0)
    if device_class == "tpu.google.com":
        # The builders' TPU claim takes a whole host (chipCount == count, DRA017): only a
        # host of exactly that many chips allocates it.
        fits = count == FITS[device_class].get(fixture, 0)
    assert [finding.path for finding in found] == ([] if fits else ["/spec/spec/devices"]), [f.message for f in found]
    for finding in found:
        assert finding.message.startswith("no node can allocate this claim (1 node in the ResourceSlices given)")
        assert finding.severity == Severity.HIGH and finding.cross_object


def _standard_example() -> dict[str, Any]:
    """The standard's own example: a MIG profile selector on the whole-GPU class."""
    request = {
        "name": "dedicated-slice",
        "deviceClassName": "gpu.nvidia.com",
        "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}],
        "allocationMode": "ExactCount",
        "count": 1,
    }
    return {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "dedicated", "namespace": "ns"},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


def test_dra014_the_standards_example_is_unsatisfiable() -> None:
    (on_gpus,) = dra014(_standard_example(), slices=with_slices("nvidia-8gpu-pcieroot"))
    assert "allocation aborts: selector" in on_gpus.message and "no such member" in on_gpus.message
    (on_migs,) = dra014(_standard_example(), slices=with_slices("nvidia-a100-mig"))
    assert "class 'gpu.nvidia.com' matching its selectors, 0 match" in on_migs.message


def test_dra014_an_ambiguous_pin() -> None:
    claim = raw_claim(exactly("slice", "mig.nvidia.com", "device.attributes['gpu.nvidia.com'].profile != '3g.20gb'"))
    (finding,) = dra014(claim, slices=with_slices("nvidia-a100-mig"))
    assert finding.path == "/spec/devices/requests/0/exactly"
    assert "tries to pin gpu.nvidia.com/profile" in finding.message and "(1g.5gb, 2g.10gb)" in finding.message
    pinned = raw_claim(exactly("slice", "mig.nvidia.com", "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"))
    assert dra014(pinned, slices=with_slices("nvidia-a100-mig")) == []
    # A request that does not even try to pin is DRA002's, not this rule's.
    assert dra014(raw_claim(exactly("slice", "mig.nvidia.com")), slices=with_slices("nvidia-a100-mig")) == []


def test_dra014_match_attribute_on_an_attribute_the_fixture_lacks() -> None:
    pair = raw_claim(
        exactly("gpu", "gpu.nvidia.com", count=2),
        constraints=[{"requests": ["gpu"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}],
    )
    (finding,) = dra014(pair, slices=with_slices("nvidia-4gpu-no-pcieroot"))
    assert "0 of its 4 candidate(s) publish it" in finding.message
    assert dra014(pair, slices=with_slices("nvidia-8gpu-pcieroot")) == []  # 4 per root complex there


def test_dra014_all_mode() -> None:
    everything = raw_claim(exactly("all", "gpu.nvidia.com", allocationMode="All"))
    assert dra014(everything, slices=with_slices("nvidia-8gpu-pcieroot")) == []
    (finding,) = dra014(everything, slices=with_slices("nvidia-a100-mig"))  # MIG mode: no whole GPU
    assert "needs 1 device(s) of class 'gpu.nvidia.com'" in finding.message


def test_dra014_several_nodes_each_say_why() -> None:
    nine = raw_claim(exactly("gpu", "gpu.nvidia.com", count=9))
    (finding,) = dra014(nine, slices=with_slices("nvidia-8gpu-pcieroot", "nvidia-4gpu-no-pcieroot", "tpu-v6e-2x2"))
    assert "(3 nodes in the ResourceSlices given)" in finding.message
    assert "8 match" in finding.message and "4 match" in finding.message and "0 match" in finding.message


def test_dra014_undecided_is_no_finding() -> None:
    unknown_class = raw_claim(exactly("x", "fpga.example.org"))
    semver = raw_claim(
        exactly(
            "x", "gpu.nvidia.com", "device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('1.0.0'))"
        )
    )
    assert dra014(unknown_class, semver, slices=with_slices("nvidia-8gpu-pcieroot")) == []


def test_dra014_nothing_without_slices_and_nothing_for_non_accelerators() -> None:
    assert dra014(_standard_example()) == []
    nic_only = raw_claim(exactly("nic", "net.example.com", count=99))
    assert dra014(nic_only, slices=with_slices("example-net")) == []


def _slice_objects(fixture: str) -> list[dict[str, Any]]:
    return list(yaml.safe_load((SLICES / f"{fixture}.yaml").read_text(encoding="utf-8"))["items"])


def test_dra014_resource_slices_among_the_objects_count_once() -> None:
    nine = raw_claim(exactly("gpu", "gpu.nvidia.com", count=9))
    eight = raw_claim(exactly("gpu", "gpu.nvidia.com", count=8))
    objects = _slice_objects("nvidia-8gpu-pcieroot")
    assert [f.object.name for f in dra014(nine, eight, *objects)] == ["c"]
    # Also given as a file: still eight GPUs, not sixteen.
    (finding,) = dra014(nine, *objects, slices=with_slices("nvidia-8gpu-pcieroot"))
    assert "8 match" in finding.message


def test_dra014_objects_given_at_once_wait_for_slices_only_when_one_may_be_among_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`check_objects` sees every object first: without a ResourceSlice (or a List, which may
    hold some) among them, DRA014 leaves no pending finding that would resolve to nothing
    (enforce(), the pack); with one, in a List too, it finds what it finds on the slices alone."""
    from dra_guard.engine import run

    left: list[int] = []
    finish = run.Checker.finish

    def counting(checker: run.Checker) -> Any:
        left.append(sum(deferred.kind.rule.id == "DRA014" for deferred in checker._deferred))
        return finish(checker)

    monkeypatch.setattr(run.Checker, "finish", counting)
    nine = raw_claim(exactly("gpu", "gpu.nvidia.com", count=9))
    assert dra014(nine, _standard_example()) == [] and left == [0]
    assert dra014(nine, slices=with_slices("nvidia-8gpu-pcieroot")) != [] and left[-1] > 0
    slices = _slice_objects("nvidia-8gpu-pcieroot")
    as_list = {"apiVersion": "v1", "kind": "List", "items": slices}
    assert [f.object.name for f in dra014(nine, as_list)] == [f.object.name for f in dra014(nine, *slices)] == ["c"]


def test_dra014_device_classes_among_the_objects_give_the_class_selectors() -> None:
    """NVIDIA's per-profile class: its selector pins 1g.12gb, a profile the A100 node does not have."""
    per_profile = yaml.safe_load((DEVICE_CLASSES / "mig-1g-12gb.gpu.nvidia.com.yaml").read_text(encoding="utf-8"))
    claim = raw_claim(exactly("slice", "mig-1g-12gb.gpu.nvidia.com"))
    assert dra014(claim, slices=with_slices("nvidia-a100-mig")) == []  # class unknown: undecided
    (finding,) = dra014(claim, per_profile, slices=with_slices("nvidia-a100-mig"))
    assert "class 'mig-1g-12gb.gpu.nvidia.com' matching its selectors, 0 match" in finding.message


# --- how the slices reach the rule ------------------------------------------------------


def _claims_file(tmp_path: Path) -> Path:
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump_all([_standard_example()]), encoding="utf-8")
    return path


@pytest.mark.e2e
def test_dra014_cli_slices_option(tmp_path: Path) -> None:
    claims = _claims_file(tmp_path)
    without = run("check", str(claims))
    assert "DRA014" not in without.stdout
    result = run("check", str(claims), "--slices", str(SLICES / "nvidia-8gpu-pcieroot.yaml"))
    assert result.returncode == 1, result.stderr
    (line,) = [line for line in result.stdout.splitlines() if "DRA014" in line]
    assert line.startswith(f"{claims}:") and "allocation aborts" in line
    # The file is read before anything is checked: what cannot be read is a usage error.
    for bad, why in (
        (tmp_path / "missing.yaml", "no such file or directory"),
        (claims, "holds no ResourceSlice"),
        (Path("-"), "standard input holds the manifests"),
    ):
        refused = run("check", str(claims), "--slices", str(bad))
        assert refused.returncode == 2 and why in refused.stderr and "Traceback" not in refused.stderr


@pytest.mark.e2e
def test_dra014_configuration_file_paths_are_relative_to_it(tmp_path: Path) -> None:
    (tmp_path / "cluster").mkdir()
    (tmp_path / "cluster" / "slices.yaml").write_bytes((SLICES / "nvidia-8gpu-pcieroot.yaml").read_bytes())
    (tmp_path / ".dra-guard.yaml").write_text("resource-slices: [cluster/slices.yaml]\n", encoding="utf-8")
    loaded = load_config_file(tmp_path / ".dra-guard.yaml", RULES)
    assert loaded.get(RESOURCE_SLICES).paths == (str(tmp_path / "cluster" / "slices.yaml"),)
    assert [f.rule for f in dra014(_standard_example(), slices=loaded)] == ["DRA014"]
    result = run("check", str(_claims_file(tmp_path)), cwd=tmp_path)
    assert "DRA014" in result.stdout


def test_dra014_cdk8s_enforce_takes_the_option() -> None:
    chart = Chart(Cdk8sTesting.app(), "slices")
    obj = _standard_example()
    api_object = ApiObject(
        chart, "claim", api_version=obj["apiVersion"], kind=obj["kind"], metadata=ApiObjectMetadata(name="dedicated")
    )
    api_object.add_json_patch(JsonPatch.add("/spec", obj["spec"]))
    options = {"resource-slices": [str(SLICES / "nvidia-8gpu-pcieroot.yaml")]}
    messages = [message for message in enforce(chart, options, fail_on="low").validate() if "DRA014" in message]
    assert len(messages) == 1 and "allocation aborts" in messages[0]


@pytest.fixture(scope="module")
def pack() -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    with running_pack() as stub:
        yield stub


@pytest.mark.e2e
def test_dra014_pulumi_pack_takes_the_option(pack: analyzer_pb2_grpc.AnalyzerStub) -> None:
    policy_config = {"resourceSlices": [str(SLICES / "nvidia-8gpu-pcieroot.yaml")]}
    assert parse_policy_config(policy_config, RULES, "test").get(RESOURCE_SLICES).slices
    configure(pack, {policy.name: policy_config for policy in build_policies()})
    obj = _standard_example()
    resource = analyzer_pb2.AnalyzerResource(
        type=type_token(obj), properties=struct(obj), urn="urn:pulumi:dev::p::t::claim", name="claim"
    )
    stack = pack.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=[resource]), timeout=60)
    found = [d.message for d in stack.diagnostics if d.policyName == "dra014-unsatisfiable" + CROSS_OBJECT_SUFFIX]
    assert len(found) == 1 and "allocation aborts" in found[0]


def test_dra014_in_the_webhook_with_and_without_the_configurations_slices() -> None:
    """The webhook's input is the reviewed object and the templates it reads, never a
    ResourceSlice: without `resource-slices` in its configuration the rule makes no pending
    finding at all (it could only resolve to nothing); with them, an unsatisfiable template
    is denied, an ambiguous pin too, and one that fits is admitted."""
    from dra_guard.admission.webhook import Webhook

    def review(obj: dict[str, Any], slices: Config) -> dict[str, Any]:
        request = {
            "uid": "u",
            "kind": {"group": "resource.k8s.io", "version": "v1", "kind": obj["kind"]},
            "operation": "CREATE",
            "namespace": "ns",
            "userInfo": {"username": "alice"},
            "object": obj,
        }
        return Webhook(RULES, slices, all_rules=True).review(request)

    profile = "device.attributes['gpu.nvidia.com'].profile"
    ambiguous = raw_claim(exactly("slice", "mig.nvidia.com", f"{profile} != '3g.20gb'"))
    fits = raw_claim(exactly("slice", "mig.nvidia.com", f"{profile} == '1g.5gb'"))
    for obj, on_gpus in ((_standard_example(), "nvidia-8gpu-pcieroot"), (ambiguous, "nvidia-a100-mig")):
        denied = review(obj, with_slices(on_gpus))
        assert denied["allowed"] is False and "DRA014: " in denied["status"]["message"], denied
        without = review(obj, Config())
        assert "DRA014" not in without.get("status", {}).get("message", ""), without
    admitted = review(fits, with_slices("nvidia-a100-mig"))
    assert "DRA014" not in admitted.get("status", {}).get("message", ""), admitted
    # What the webhook is spared: the rule's pending findings, when the caller says no slice comes.
    from dra_guard.engine.run import Checker
    from dra_guard.ruleapi.context import Resource

    for told, pending in ((False, 2), (True, 0)):
        checker = Checker(Config(), complete=False)
        checker.context.input_has_no_slices = told
        resource = Resource(ambiguous)
        checker.context.add(resource)
        assert len(list(RULES["DRA014"].check(resource, checker.context))) == pending
