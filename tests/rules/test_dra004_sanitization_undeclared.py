"""DRA004 `sanitization-undeclared`: cases beyond its EXAMPLES, across resource.k8s.io versions."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from dra_guard import AcceleratorSlice
from dra_guard.admission.emulate import admit, denied_rules
from dra_guard.admission.policy import admission_objects
from dra_guard.engine.run import check_objects
from dra_guard.ruleapi.admission_form import AdmissionTarget
from dra_guard.rules import RULES
from testkit.rulecases import (
    ALL_VERSIONS,
    CLAIM_MAKERS,
    MIG,
    config,
    findings,
    request_body,
    retag,
    rule_ids,
    template,
)


@ALL_VERSIONS
@CLAIM_MAKERS
@pytest.mark.parametrize("value", [None, "", "Wipe", "wipeondeallocate"])
def test_dra004_sanitization(api_version: str, make: Any, value: str | None) -> None:
    obj = make(api_version)
    # A template declares it twice: for itself and, in spec.metadata, for its claims.
    places = [obj["metadata"]] + ([obj["spec"]["metadata"]] if obj["kind"] == "ResourceClaimTemplate" else [])
    for place in places:
        annotations = place["annotations"]
        if value is None:
            del annotations["dra-guard.io/sanitization"]
        else:
            annotations["dra-guard.io/sanitization"] = value
    # The tag covers the sanitization value, so DRA012 fires too unless re-tagged.
    assert rule_ids(retag(obj)) == {"DRA004"}
    assert len(findings(obj)) == len(places)
    assert rule_ids(make(api_version, AcceleratorSlice.nvidia_mig("2g.20gb"))) == set()


@ALL_VERSIONS
def test_dra004_a_template_whose_claims_carry_no_policy(api_version: str) -> None:
    """The claims kube-controller-manager makes carry only spec.metadata: a policy on the
    template alone reaches no claim."""
    obj = template(api_version)
    del obj["spec"]["metadata"]
    (finding,) = [finding for finding in findings(obj) if finding.rule == "DRA004"]
    assert finding.path == "/spec/metadata" and "all the claims made from it carry" in finding.message


# --- ScrubBeforeUse only where the scrubber scrubs -------------------------------------------

SCRUB = "ScrubBeforeUse"
SANITIZATION_PATH = "/annotations/dra-guard.io~1sanitization"
ACCEPTED = {"unscrubbed-classes": {"tpu.google.com": "single-tenant pool", "gpu.amd.com": "single-tenant pool"}}


def _declaring_scrub(obj: dict[str, Any], device_class: str | None = None) -> dict[str, Any]:
    """`obj` declaring ScrubBeforeUse in every place, its request's class set to `device_class`."""
    for place in [obj["metadata"]] + ([obj["spec"]["metadata"]] if obj["kind"] == "ResourceClaimTemplate" else []):
        place["annotations"]["dra-guard.io/sanitization"] = SCRUB
    if device_class is not None:
        request_body(obj)["deviceClassName"] = device_class
    return retag(obj)


def _dra004(*objects: dict[str, Any], options: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    found = findings(*objects, config=config(options or {}))
    return [(finding.facet, finding.path) for finding in found if finding.rule == "DRA004"]


def _expected(obj: dict[str, Any]) -> list[tuple[str, str]]:
    places = ["/metadata"] + (["/spec/metadata"] if obj["kind"] == "ResourceClaimTemplate" else [])
    return [("unscrubbable-class", place + SANITIZATION_PATH) for place in places]


@ALL_VERSIONS
@CLAIM_MAKERS
@pytest.mark.parametrize(
    "accelerator",
    [AcceleratorSlice.google_tpu("v6e", count=4), AcceleratorSlice.amd_gpu("cpx_nps4")],
    ids=["tpu", "amd"],
)
def test_dra004_scrub_before_use_where_nothing_scrubs_is_reported_even_when_accepted_unscrubbed(
    api_version: str, make: Any, accelerator: AcceleratorSlice
) -> None:
    obj = _declaring_scrub(make(api_version, accelerator))
    assert _dra004(obj) == _expected(obj)
    # unscrubbed-classes accepts a pod running unscrubbed (DRA016), not a claim saying it is scrubbed.
    assert _dra004(obj, options=ACCEPTED) == _expected(obj)
    (finding,) = [f for f in findings(obj) if f.rule == "DRA004"][:1]
    assert finding.severity.label == "critical" and accelerator.device_class in finding.message


@ALL_VERSIONS
@CLAIM_MAKERS
@pytest.mark.parametrize("accelerator", [MIG, AcceleratorSlice.nvidia_gpu("NVIDIA H100 80GB HBM3")], ids=["mig", "gpu"])
def test_dra004_scrub_before_use_on_nvidia_devices_passes(
    api_version: str, make: Any, accelerator: AcceleratorSlice
) -> None:
    assert _dra004(_declaring_scrub(make(api_version, accelerator))) == []


PER_PROFILE = "mig-1g-12gb.gpu.nvidia.com"
#: NVIDIA's per-profile class (NVIDIA/k8s-dra-driver-gpu @ 22407113, demo/specs/extended-resources/mig-1g-12gb.yaml).
PER_PROFILE_SELECTOR = (
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig' && "
    "device.attributes['gpu.nvidia.com'].profile == '1g.12gb'"
)


def _device_class(name: str, selector: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": selector}}]},
    }


def test_dra004_a_class_of_unknown_driver_is_reported_unless_shown_to_be_nvidias() -> None:
    obj = _declaring_scrub(template(), PER_PROFILE)
    (finding,) = [f for f in findings(obj) if f.rule == "DRA004" and f.path == "/metadata" + SANITIZATION_PATH]
    assert "declare it under extra-classes with a pin-attribute in gpu.nvidia.com" in finding.message
    configured = {
        "extra-classes": {PER_PROFILE: {"pin-attribute": "gpu.nvidia.com/profile", "selector": PER_PROFILE_SELECTOR}}
    }
    assert _dra004(obj, options=configured) == []
    nvidia = _device_class(PER_PROFILE, PER_PROFILE_SELECTOR)
    assert _dra004(nvidia, obj) == [] and _dra004(obj, nvidia) == []
    tpu = _device_class(PER_PROFILE, "device.driver == 'tpu.google.com'")
    assert _dra004(obj, tpu) == _expected(obj)


@pytest.mark.parametrize(
    "selector",
    [
        # NVIDIA's passthrough devices: a GPU bound to vfio-pci, which no container reaches through CUDA.
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'",
        # Every device of the driver, passthrough ones included: it cannot tell, so fail closed.
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].profile == '1g.12gb'",
        "device.driver == 'gpu.nvidia.com'",
        # The type under `||` is no conjunct.
        "device.driver == 'gpu.nvidia.com' && (device.attributes['gpu.nvidia.com'].type == 'mig' || true)",
    ],
)
def test_dra004_a_class_of_nvidias_driver_is_scrubbed_only_where_its_selector_fixes_gpu_or_mig(selector: str) -> None:
    """Decided by what the class's devices are, wherever its selector comes from: the input's
    DeviceClass or extra-classes (a class declared there without a selector cannot be told)."""
    obj = _declaring_scrub(template(), PER_PROFILE)
    assert _dra004(obj, _device_class(PER_PROFILE, selector)) == _expected(obj)
    declared = {"pin-attribute": "gpu.nvidia.com/profile", "selector": selector}
    assert _dra004(obj, options={"extra-classes": {PER_PROFILE: declared}}) == _expected(obj)


def test_dra004_a_class_declared_without_a_selector_is_reported_and_says_to_give_it() -> None:
    obj = _declaring_scrub(template(), PER_PROFILE)
    configured = {"extra-classes": {PER_PROFILE: {"pin-attribute": "gpu.nvidia.com/profile"}}}
    (finding, _) = [f for f in check_objects([obj], config(configured)).findings if f.rule == "DRA004"]
    assert f"extra-classes declares {PER_PROFILE} without a selector" in finding.message


def test_dra004_a_nic_class_by_name_is_judged_by_its_device_class() -> None:
    """`rdma` is a NIC's class by name: no finding, unless its DeviceClass selects an
    accelerator the scrubber cannot scrub (then only `check`, which sees the DeviceClass, can say)."""
    obj = _declaring_scrub(template(), "rdma")
    assert _dra004(obj) == []
    nvidia = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
    assert _dra004(obj, _device_class("rdma", nvidia)) == []
    report = check_objects([obj, _device_class("rdma", "device.driver == 'tpu.google.com'")])
    found = [f for f in report.findings if f.rule == "DRA004"]
    assert [(f.facet, f.cross_object) for f in found] == [("unscrubbable-class", True)] * 2


#: Configurations the policy is compared with the engine under: the catalog alone, and a
#: class of NVIDIA's driver declared under extra-classes (what the policy can know).
POLICY_CONFIGS = [
    "",
    f"extra-classes: {{{PER_PROFILE}: {{pin-attribute: gpu.nvidia.com/profile, "
    f"selector: {PER_PROFILE_SELECTOR!r}}}}}\n",
]


@pytest.mark.parametrize("config_text", POLICY_CONFIGS, ids=["catalog", "configured"])
@pytest.mark.parametrize(
    "device_class",
    ["mig.nvidia.com", "gpu.nvidia.com", "vfio.gpu.nvidia.com", "tpu.google.com", "gpu.amd.com", PER_PROFILE, "rdma"],
)
@CLAIM_MAKERS
def test_dra004_the_policy_denies_what_the_engine_reports(make: Any, device_class: str, config_text: str) -> None:
    obj = _declaring_scrub(make("resource.k8s.io/v1"), device_class)
    options = yaml.safe_load(config_text) or {}
    policies = admission_objects(RULES, AdmissionTarget(config(options)))
    engine = {f.rule for f in check_objects([obj], config(options), complete=False).findings} & {"DRA004"}
    assert engine == (set() if device_class in SCRUBBED_HERE[config_text != ""] else {"DRA004"})
    assert denied_rules(admit(policies, obj)) & {"DRA004"} == engine


#: Which classes the policy and the engine count as scrubbed, by configuration.
SCRUBBED_HERE = {
    False: {"mig.nvidia.com", "gpu.nvidia.com", "rdma"},
    True: {"mig.nvidia.com", "gpu.nvidia.com", "rdma", PER_PROFILE},
}
