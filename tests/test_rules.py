"""Each rule: a violating and a compliant case, for every resource.k8s.io version it concerns."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dra_guard import AcceleratorSlice
from dra_guard.catalog import RESOURCE_API_VERSIONS
from dra_guard.findings import Severity
from dra_guard.rules import dra001_legacy_extended_resource as dra001
from testkit.rulecases import (
    MIG,
    MIG_PAIR,
    claim,
    config,
    devices,
    findings,
    request_body,
    retag,
    rule_ids,
    template,
    workload,
)

ALL_VERSIONS = pytest.mark.parametrize("api_version", RESOURCE_API_VERSIONS)
CLAIM_MAKERS = pytest.mark.parametrize("make", [template, claim], ids=["template", "claim"])


def pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": spec}


# --- compliant baselines ---------------------------------------------------------------


@ALL_VERSIONS
@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "Job"])
@pytest.mark.parametrize(
    "accelerator", [MIG, MIG_PAIR, AcceleratorSlice.google_tpu("v6e", 4)], ids=["mig", "mig2", "tpu4"]
)
def test_builder_output_is_compliant(api_version: str, kind: str, accelerator: AcceleratorSlice) -> None:
    from dra_guard import isolated_workload

    objects = isolated_workload(
        "app", image="i", slice=accelerator, namespace="ns", workload_kind=kind, api_version=api_version
    )
    assert findings(*objects) == []


@ALL_VERSIONS
def test_claims_are_compliant(api_version: str) -> None:
    assert findings(claim(api_version), claim(api_version, MIG_PAIR)) == []


# --- DRA001 --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "nvidia.com/gpu",
        "nvidia.com/gpu.shared",
        "nvidia.com/mig-1g.10gb",
        "google.com/tpu",
        "amd.com/gpu",
        "gpu.intel.com/i915",
        "gpu.intel.com/xe",
        "habana.ai/gaudi",
        "aws.amazon.com/neuroncore",
        "deviceclass.resource.kubernetes.io/gpu.nvidia.com",
    ],
)
@pytest.mark.parametrize("section", ["limits", "requests"])
def test_dra001_legacy_names(name: str, section: str) -> None:
    obj = pod(containers=[{"name": "c", "image": "i", "resources": {section: {name: 1}}}])
    (finding,) = findings(obj)
    assert (finding.rule, finding.severity) == ("DRA001", Severity.CRITICAL)
    assert finding.path == f"/spec/containers/0/resources/{section}/{name.replace('/', '~1')}"


def test_dra001_compliant_and_configurable() -> None:
    cpu_only = pod(
        containers=[{"name": "c", "image": "i", "resources": {"limits": {"cpu": "1", "example.com/gpu": 1}}}]
    )
    assert findings(cpu_only) == []
    assert rule_ids(cpu_only, config=config({"extra-legacy-resources": ["example.com/gpu"]})) == {"DRA001"}
    implicit = pod(
        containers=[
            {"name": "c", "image": "i", "resources": {"limits": {dra001.IMPLICIT_DRA_PREFIX + "net.example.com": 1}}}
        ]
    )
    assert rule_ids(implicit, config=config({"non-accelerator-classes": ["net.example.com"]})) == set()


# --- DRA002 --------------------------------------------------------------------------


def _set_selector(obj: dict[str, Any], expression: str) -> dict[str, Any]:
    request_body(obj)["selectors"] = [{"cel": {"expression": expression}}]
    return retag(obj)


@ALL_VERSIONS
@CLAIM_MAKERS
@pytest.mark.parametrize(
    "expression",
    [
        "device.attributes['gpu.nvidia.com'].profile == '1g.10gb' || true",
        "device.attributes['gpu.nvidia.com'].profile in ['1g.10gb', '7g.80gb']",
        "device.attributes['gpu.nvidia.com'].profile != '7g.80gb'",
        "!(device.attributes['gpu.nvidia.com'].profile == '1g.10gb')",
        "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100'",
        "device.attributes['example.com'].profile == '1g.10gb'",
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('10Gi')) >= 0",
        "true ? device.attributes['gpu.nvidia.com'].profile == '1g.10gb' : true",
    ],
)
def test_dra002_selectors_that_do_not_pin(api_version: str, make: Any, expression: str) -> None:
    assert rule_ids(_set_selector(make(api_version), expression)) == {"DRA002"}


@ALL_VERSIONS
@pytest.mark.parametrize(
    "expression",
    [
        "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'",
        "'1g.10gb' == device.attributes['gpu.nvidia.com']['profile']",
        "device.driver == 'gpu.nvidia.com' && (device.attributes['gpu.nvidia.com'].profile == '1g.10gb' && true)",
    ],
)
def test_dra002_pinning_selectors(api_version: str, expression: str) -> None:
    assert rule_ids(_set_selector(template(api_version), expression)) == set()


@ALL_VERSIONS
def test_dra002_broken_missing_and_wrong_class(api_version: str) -> None:
    broken = _set_selector(template(api_version), "device.attributes['gpu.nvidia.com'].profile == ")
    (finding,) = findings(broken)
    assert finding.rule == "DRA002" and "not valid CEL" in finding.message
    missing = template(api_version)
    del request_body(missing)["selectors"]
    assert rule_ids(retag(missing)) == {"DRA002"}
    # The standard's own example: a MIG profile selector on the full-GPU class never matches.
    wrong_class = template(api_version)
    request_body(wrong_class)["deviceClassName"] = "gpu.nvidia.com"
    (finding,) = findings(retag(wrong_class))
    assert finding.rule == "DRA002" and "mig.nvidia.com" in finding.message


def test_dra002_unknown_class_accepts_any_pin_and_config_classes_are_strict() -> None:
    obj = template()
    request_body(obj)["deviceClassName"] = "fpga.example.org"
    _set_selector(obj, "device.attributes['fpga.example.org'].bitstream == 'v2'")
    assert rule_ids(obj) == set()
    strict = config({"extra-classes": {"fpga.example.org": {"pin-attribute": "fpga.example.org/model"}}})
    assert rule_ids(obj, config=strict) == {"DRA002"}


def test_dra002_first_available_entries_are_each_checked() -> None:
    obj = template()
    body = request_body(obj)
    devices(obj)["requests"][0] = {
        "name": "slice",
        "firstAvailable": [
            {"name": "small", **copy.deepcopy(body)},
            {"name": "any", "deviceClassName": "mig.nvidia.com", "allocationMode": "ExactCount", "count": 1},
        ],
    }
    (finding,) = findings(retag(obj))
    assert finding.rule == "DRA002" and "slice/any" in finding.message


def test_dra002_ignores_non_accelerator_classes() -> None:
    obj = template()
    del request_body(obj)["selectors"]
    retag(obj)
    assert rule_ids(obj, config=config({"non-accelerator-classes": ["mig.nvidia.com"]})) == set()


# --- DRA003 / DRA004 -------------------------------------------------------------------


@ALL_VERSIONS
@CLAIM_MAKERS
@pytest.mark.parametrize("value", [None, "true", "False"])
def test_dra003_exclusivity(api_version: str, make: Any, value: str | None) -> None:
    obj = make(api_version)
    annotations = obj["metadata"]["annotations"]
    if value is None:
        del annotations["dra-guard.io/allow-multiple-allocations"]
    else:
        annotations["dra-guard.io/allow-multiple-allocations"] = value
    assert rule_ids(obj) == {"DRA003"}


@ALL_VERSIONS
@CLAIM_MAKERS
@pytest.mark.parametrize("value", [None, "", "Wipe", "wipeondeallocate"])
def test_dra004_sanitization(api_version: str, make: Any, value: str | None) -> None:
    obj = make(api_version)
    annotations = obj["metadata"]["annotations"]
    if value is None:
        del annotations["dra-guard.io/sanitization"]
    else:
        annotations["dra-guard.io/sanitization"] = value
    # The tag covers the sanitization value, so DRA012 fires too unless re-tagged.
    assert rule_ids(retag(obj)) == {"DRA004"}
    assert rule_ids(make(api_version, AcceleratorSlice.nvidia_mig("2g.20gb"))) == set()


# --- DRA005 --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "Job"])
def test_dra005_controllers_must_not_name_a_claim(kind: str) -> None:
    template_obj, workload_obj = workload(kind)
    claims = workload_obj["spec"]["template"]["spec"]["resourceClaims"]
    claims[0] = {"name": "accelerator", "resourceClaimName": "shared"}
    assert rule_ids(template_obj, workload_obj, claim()) >= {"DRA005"}


def test_dra005_claim_used_by_two_pods_and_by_one() -> None:
    def user(name: str) -> dict[str, Any]:
        obj = pod(
            containers=[{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}],
            resourceClaims=[{"name": "gpu", "resourceClaimName": "slice"}],
        )
        obj["metadata"]["name"] = name
        return obj

    shared = findings(claim(), user("a"), user("b"))
    assert [(f.rule, f.object.name) for f in shared] == [("DRA005", "a"), ("DRA005", "b")]
    assert findings(claim(), user("a")) == []


def test_dra005_pod_group_claims_are_shared() -> None:
    group = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ns"},
        "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "slice"}]},
    }
    assert rule_ids(group) == {"DRA005"}
    group["spec"]["resourceClaims"] = []
    assert rule_ids(group) == set()


# --- DRA006 --------------------------------------------------------------------------


@ALL_VERSIONS
@CLAIM_MAKERS
def test_dra006_admin_access(api_version: str, make: Any) -> None:
    obj = make(api_version)
    request_body(obj)["adminAccess"] = True
    retag(obj)
    assert rule_ids(obj) == {"DRA006"}
    assert rule_ids(obj, config=config({"admin-namespaces": ["ns"]})) == set()
    request_body(obj)["adminAccess"] = False
    assert rule_ids(retag(obj)) == set()


# --- DRA007 --------------------------------------------------------------------------


@ALL_VERSIONS
@CLAIM_MAKERS
@pytest.mark.parametrize("strategy", ["TimeSlicing", "MPS", "mps"])
def test_dra007_temporal_sharing(api_version: str, make: Any, strategy: str) -> None:
    obj = make(api_version)
    config = {
        "requests": ["slice"],
        "opaque": {
            "driver": "gpu.nvidia.com",
            "parameters": {
                "apiVersion": "resource.nvidia.com/v1beta1",
                "kind": "MigDeviceConfig",
                "sharing": {"strategy": strategy},
            },
        },
    }
    devices(obj)["config"] = [config]
    assert rule_ids(retag(obj)) == {"DRA007"}
    config["opaque"]["parameters"]["sharing"] = {"strategy": "None"}  # type: ignore[index]
    assert rule_ids(retag(obj)) == set()


# --- DRA008 --------------------------------------------------------------------------


@ALL_VERSIONS
@CLAIM_MAKERS
def test_dra008_allocation(api_version: str, make: Any) -> None:
    obj = make(api_version)
    request_body(obj)["allocationMode"] = "All"
    del request_body(obj)["count"]
    (finding,) = [f for f in findings(retag(obj)) if f.rule == "DRA008"]
    assert finding.severity == Severity.HIGH
    obj = make(api_version)
    del request_body(obj)["count"]
    (finding,) = findings(retag(obj))
    assert (finding.rule, finding.severity) == ("DRA008", Severity.MEDIUM)
    assert "count" in finding.message


# --- DRA009 --------------------------------------------------------------------------


def test_dra009_wiring() -> None:
    template_obj, workload_obj = workload()
    spec = workload_obj["spec"]["template"]["spec"]
    assert findings(template_obj, workload_obj) == []
    # Template missing from the input set: low severity, it may live elsewhere.
    (finding,) = findings(workload_obj)
    assert (finding.rule, finding.severity) == ("DRA009", Severity.LOW)
    broken = copy.deepcopy(workload_obj)
    broken["spec"]["template"]["spec"]["containers"][0]["resources"]["claims"] = [{"name": "typo"}]
    messages = sorted(f.message for f in findings(template_obj, broken))
    assert len(messages) == 2
    assert "does not declare" in messages[0] and "used by no container" in messages[1]
    spec["containers"][0]["resources"]["claims"] = [{"name": "accelerator", "request": "nope"}]
    (finding,) = findings(template_obj, workload_obj)
    assert finding.rule == "DRA009" and "'nope'" in finding.message
    spec["containers"][0]["resources"]["claims"] = [{"name": "accelerator", "request": "slice"}]
    assert findings(template_obj, workload_obj) == []


# --- DRA010 --------------------------------------------------------------------------


@ALL_VERSIONS
@CLAIM_MAKERS
def test_dra010_allow_multiple_allocations_in_a_request(api_version: str, make: Any) -> None:
    obj = make(api_version)
    request_body(obj)["allowMultipleAllocations"] = False
    (finding,) = findings(retag(obj))
    assert finding.rule == "DRA010" and finding.path.endswith("/allowMultipleAllocations")


@pytest.mark.parametrize("api_version", ["resource.k8s.io/v1", "resource.k8s.io/v1beta2"])
def test_dra010_flat_fields_under_wrapped_versions(api_version: str) -> None:
    obj = template(api_version)
    request = devices(obj)["requests"][0]
    request.update(request.pop("exactly"))
    assert "DRA010" in rule_ids(retag(obj))


@pytest.mark.parametrize("api_version", ["resource.k8s.io/v1beta1", "resource.k8s.io/v1alpha3"])
def test_dra010_exactly_under_flat_versions(api_version: str) -> None:
    obj = template(api_version)
    request = devices(obj)["requests"][0]
    devices(obj)["requests"][0] = {"name": request.pop("name"), "exactly": request}
    assert "DRA010" in rule_ids(retag(obj))


def test_dra010_unserved_version() -> None:
    obj = template()
    obj["apiVersion"] = "resource.k8s.io/v1alpha2"
    assert "DRA010" in rule_ids(obj)


# --- DRA011 --------------------------------------------------------------------------


@ALL_VERSIONS
@CLAIM_MAKERS
def test_dra011_topology(api_version: str, make: Any) -> None:
    obj = make(api_version, MIG_PAIR)
    assert rule_ids(obj) == set()
    constraints = devices(obj).pop("constraints")
    assert rule_ids(retag(obj)) == {"DRA011"}
    devices(obj)["constraints"] = [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    assert rule_ids(retag(obj)) == set()
    devices(obj)["constraints"] = [{"requests": ["other"], "matchAttribute": constraints[0]["matchAttribute"]}]
    assert rule_ids(retag(obj)) == {"DRA011"}


def test_dra011_parent_uuid_does_not_align_other_classes() -> None:
    obj = template(accelerator=AcceleratorSlice.google_tpu("v6e", 2))
    devices(obj)["constraints"][0]["matchAttribute"] = "gpu.nvidia.com/parentUUID"
    assert rule_ids(retag(obj)) == {"DRA011"}


# --- DRA012 --------------------------------------------------------------------------


@ALL_VERSIONS
@CLAIM_MAKERS
def test_dra012_tags(api_version: str, make: Any) -> None:
    obj = make(api_version)
    request_body(obj)["count"] = 1.0  # as Pulumi delivers numbers
    assert rule_ids(obj) == set()
    obj["metadata"]["namespace"] = "elsewhere"
    (finding,) = findings(obj)
    assert finding.rule == "DRA012" and "edited" in finding.message
    obj["metadata"]["annotations"]["dra-guard.io/isolation-tag"] = "sha256:xyz"
    assert "malformed" in findings(obj)[0].message
    del obj["metadata"]["annotations"]["dra-guard.io/isolation-tag"]
    assert rule_ids(obj) == {"DRA012"}


def test_dra012_with_a_key_requires_hmac() -> None:
    keyed = config({"hmac-key-env": "KEY"}, environ={"KEY": "k"})
    assert rule_ids(template(), config=keyed) == {"DRA012"}
    assert rule_ids(template(hmac_key="k"), config=keyed) == set()
    assert rule_ids(template(hmac_key="other"), config=keyed) == {"DRA012"}
