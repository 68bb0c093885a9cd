"""DRA001 `legacy-extended-resource`: cases beyond its EXAMPLES, across resource.k8s.io versions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_guard.contract.findings import Severity
from dra_guard.engine.run import check_objects
from dra_guard.rules import dra001_legacy_extended_resource as dra001
from testkit.rulecases import (
    config,
    findings,
    pod,
    rule_ids,
)


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


def _limit_range(limit_type: str, field: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "limits", "namespace": "ns"},
        "spec": {"limits": [{"type": limit_type, field: {"nvidia.com/gpu": "1"}}]},
    }


@pytest.mark.parametrize(
    ("limit_type", "field", "reported"),
    [
        ("Container", "default", True),
        ("Container", "defaultRequest", True),
        ("Container", "max", True),  # the API server defaults `default` from `max`
        ("Container", "min", True),  # ... and `defaultRequest` from `min`
        ("Container", "maxLimitRequestRatio", True),
        ("Pod", "max", False),  # a cap on the pod's sum, like a quota
        ("PersistentVolumeClaim", "min", False),
    ],
)
def test_dra001_limit_ranges(limit_type: str, field: str, reported: bool) -> None:
    located = [(f.rule, f.path) for f in findings(_limit_range(limit_type, field))]
    assert located == ([("DRA001", f"/spec/limits/0/{field}/nvidia.com~1gpu")] if reported else [])


def test_dra001_quotas_cap_and_request_nothing() -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q", "namespace": "ns"},
        "spec": {"hard": {"requests.nvidia.com/gpu": "4", "nvidia.com/gpu": "4"}},
    }
    cluster_queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "q"},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [{"name": "a100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}],
                }
            ]
        },
    }
    assert findings(quota, cluster_queue) == []


def test_dra001_any_requirements_shaped_mapping_of_a_crd() -> None:
    train_job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "t", "namespace": "ns"},
        "spec": {"trainer": {"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 1}}}},
    }
    assert [f.path for f in findings(train_job)] == ["/spec/trainer/resourcesPerNode/limits/nvidia.com~1gpu"]
    # Ray's logical resources are no ResourceRequirements: no finding.
    train_job["spec"]["trainer"] = {"resources": {"GPU": "1", "nvidia.com/gpu": 1}}
    assert findings(train_job) == []


def _vm(devices: dict[str, Any], api_version: str = "kubevirt.io/v1", kind: str = "VirtualMachineInstance") -> Any:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "vm", "namespace": "ns"},
        "spec": {"domain": {"devices": devices}},
    }


def test_dra001_kubevirt_device_names() -> None:
    gpu = _vm({"gpus": [{"name": "g", "deviceName": "nvidia.com/GRID_T4-1Q"}]})
    assert [f.path for f in findings(gpu)] == ["/spec/domain/devices/gpus/0/deviceName"]
    host = _vm(
        {"hostDevices": [{"name": "a", "deviceName": "intel.com/qat"}, {"name": "b", "deviceName": "amd.com/gpu"}]}
    )
    assert [f.path for f in findings(host)] == ["/spec/domain/devices/hostDevices/1/deviceName"]
    instancetype = {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineInstancetype",
        "metadata": {"name": "gpu-large", "namespace": "ns"},
        "spec": {"gpus": [{"name": "g", "deviceName": "nvidia.com/TU104GL_Tesla_T4"}]},
    }
    assert [f.path for f in findings(instancetype)] == ["/spec/gpus/0/deviceName"]
    # Only KubeVirt's own kinds pass devices through: elsewhere a `gpus` list is just data.
    assert findings(_vm(gpu["spec"]["domain"]["devices"], api_version="example.com/v1", kind="Inventory")) == []


def _device_class(name: str, extended_resource: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"extendedResourceName": extended_resource},
    }


def dra001_findings(*objects: dict[str, Any], config: Any = None) -> list[Any]:
    """This rule's findings (a DeviceClass that maps a name is DRA013's too)."""
    return [finding for finding in findings(*objects, config=config) if finding.rule == "DRA001"]


def _asks(name: str) -> dict[str, Any]:
    return pod(containers=[{"name": "c", "image": "i", "resources": {"limits": {name: 1}}}])


def test_dra001_names_a_device_class_maps_before_or_after_the_pod() -> None:
    before = dra001_findings(_device_class("example-gpu", "example.com/gpu"), _asks("example.com/gpu"))
    after = dra001_findings(_asks("example.com/gpu"), _device_class("example-gpu", "example.com/gpu"))
    assert [(f.rule, f.path) for f in before] == [("DRA001", "/spec/containers/0/resources/limits/example.com~1gpu")]
    assert [(f.rule, f.path, f.message) for f in after] == [(f.rule, f.path, f.message) for f in before]
    assert "DeviceClass 'example-gpu'" in before[0].message and before[0].cross_object
    assert dra001_findings(_asks("example.com/gpu"), _device_class("example-gpu", "example.com/other")) == []
    # A class that is no accelerator (a NIC) maps nothing that matters here.
    nic = config({"non-accelerator-classes": ["nic"]})
    assert dra001_findings(_asks("example.com/nic"), _device_class("nic", "example.com/nic"), config=nic) == []


def test_dra001_names_the_configuration_maps() -> None:
    mapped = config({"extended-resource-classes": {"example.com/gpu": "gpu.nvidia.com"}})
    (finding,) = dra001_findings(_asks("example.com/gpu"), config=mapped)
    assert "DeviceClass 'gpu.nvidia.com'" in finding.message


def _workflow(template: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"entrypoint": "main", "templates": [{"name": "main", **template}]},
    }


def test_dra001_argo_pod_spec_patches_are_read() -> None:
    patch = '{"containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}'
    (finding,) = dra001_findings(_workflow({"container": {"image": "i"}, "podSpecPatch": patch}))
    assert finding.path == "/spec/templates/0/podSpecPatch" and finding.severity == Severity.CRITICAL
    assert "/containers/0/resources/limits/nvidia.com~1gpu" in finding.message


@pytest.mark.parametrize(
    ("template", "pointer"),
    [
        ({"container": {"image": "i"}, "podSpecPatch": "{{workflow.parameters.patch}}"}, "/podSpecPatch"),
        ({"container": {"image": "i"}, "podSpecPatch": "containers: [{name: main"}, "/podSpecPatch"),
        (
            {"container": {"image": "i", "resources": {"limits": {"{{inputs.parameters.resource}}": 1}}}},
            "/container/resources/limits/{{inputs.parameters.resource}}",
        ),
    ],
    ids=["placeholder", "invalid-yaml", "placeholder-name"],
)
def test_dra001_what_argo_fills_in_at_run_time_cannot_be_verified(template: dict[str, Any], pointer: str) -> None:
    (finding,) = dra001_findings(_workflow(template))
    assert finding.path == "/spec/templates/0" + pointer and finding.severity == Severity.MEDIUM
    assert finding.message.startswith("cannot verify")


def test_dra001_a_list_inside_a_list_is_refused_as_kubectl_refuses_it() -> None:
    inner = {"apiVersion": "v1", "kind": "List", "items": [_asks("nvidia.com/gpu")]}
    report = check_objects([{"apiVersion": "v1", "kind": "List", "items": [_asks("cpu"), inner]}])
    assert report.findings == []
    (error,) = report.errors
    assert "List inside a List" in error.message


def test_dra001_pod_spec_patches_are_read_as_kubectl_reads_yaml() -> None:
    """The same reader as files: a !!binary key is the name it encodes (PyYAML: bytes)."""
    patch = "containers:\n- name: main\n  resources:\n    limits:\n      ? !!binary bnZpZGlhLmNvbS9ncHU=\n      : 1\n"
    (finding,) = dra001_findings(_workflow({"container": {"image": "i"}, "podSpecPatch": patch}))
    assert "'nvidia.com/gpu'" in finding.message and finding.severity == Severity.CRITICAL


# --- DRA-backed extended resources (KEP-5004), on the drivers' own DeviceClasses ----------

_FIXTURES = Path(__file__).parent.parent / "fixtures" / "deviceclasses"
_CORPUS = Path(__file__).parent.parent / "corpus"


def _objects(path: Path) -> list[dict[str, Any]]:
    return [obj for obj in yaml.safe_load_all(path.read_text(encoding="utf-8")) if obj]


def test_dra001_nvidia_gpu_served_by_the_charts_device_class() -> None:
    """NVIDIA's deviceclass-gpu.yaml (v25.12.0+) maps nvidia.com/gpu; gpu-full.yaml asks for it."""
    pod_only = _objects(_CORPUS / "nvidia-dra-driver" / "gpu-full.yaml")
    (alone,) = dra001_findings(*pod_only)
    assert "legacy accelerator resource 'nvidia.com/gpu'" in alone.message
    assert "or by DeviceClass 'gpu.nvidia.com' where its driver's chart maps it, by default since v25.12.0" in (
        alone.message
    )
    assert not alone.cross_object
    (served,) = dra001_findings(*_objects(_FIXTURES / "gpu.nvidia.com.yaml"), *pod_only)
    assert "'nvidia.com/gpu', which DeviceClass 'gpu.nvidia.com' maps (extendedResourceName)" in served.message
    assert dra001.LOST in served.message and "no profile pin (the class pins none)" in served.message
    # The pod alone is a finding: a per-object front end reports it, whatever the class says.
    assert served.severity == Severity.CRITICAL and not served.cross_object


def test_dra001_nvidia_per_profile_class_pins_but_still_has_no_template() -> None:
    """NVIDIA's mig-1g-12gb demo: the class pins the profile, the rest is lost all the same."""
    (finding,) = dra001_findings(*_objects(_CORPUS / "nvidia-dra-driver" / "mig-1g-12gb.yaml"))
    assert "DeviceClass 'mig-1g-12gb.gpu.nvidia.com' maps" in finding.message
    assert "only the class's own pin, gpu.nvidia.com/profile == '1g.12gb'" in finding.message
    # nvidia.com/mig-* is a device-plugin name too: the pod alone is a finding.
    assert dra001.LOST in finding.message and not finding.cross_object


@pytest.mark.parametrize(
    ("name", "device_class", "fixture"),
    [
        ("intel.com/gpu", "gpu.intel.com", "gpu.intel.com-extended-resources.yaml"),
        ("intel.com/gaudi", "gaudi.intel.com", "gaudi.intel.com-extended-resources.yaml"),
    ],
)
def test_dra001_intel_chart_names_are_reported_with_or_without_the_class(
    name: str, device_class: str, fixture: str
) -> None:
    """Intel's charts map intel.com/gpu and intel.com/gaudi when enableDRAExtendedResources is set;
    no device plugin serves those names, so a request for one is DRA's or pends (fail closed)."""
    (alone,) = dra001_findings(_asks(name))
    assert f"the {device_class} driver's chart maps to DeviceClass {device_class!r}" in alone.message
    assert "enableDRAExtendedResources" in alone.message and not alone.cross_object
    (mapped,) = dra001_findings(*_objects(_FIXTURES / fixture), _asks(name))
    assert f"which DeviceClass {device_class!r} maps (extendedResourceName)" in mapped.message


def test_dra001_example_driver_mapping() -> None:
    """dra-example-driver with deviceClass.extendedResourceName=example.com/gpu (its pod1)."""
    objects = _objects(_CORPUS / "dra-example-driver" / "extended-resource-request.yaml")
    (implicit,) = dra001_findings(*objects)  # pod0's deviceclass.resource.kubernetes.io/gpu.example.com
    assert implicit.object.name == "pod0" and "here 'gpu.example.com'" in implicit.message
    assert "no profile pin" in implicit.message and not implicit.cross_object
    both = dra001_findings(*_objects(_FIXTURES / "gpu.example.com-extended-resource.yaml"), *objects)
    assert sorted(f.object.name for f in both) == ["pod0", "pod1"]


def test_dra001_implicit_name_on_a_configured_per_profile_class() -> None:
    per_profile = config(
        {
            "extra-classes": {
                "mig-1g-12gb.gpu.nvidia.com": {
                    "pin-attribute": "gpu.nvidia.com/profile",
                    "selector": "device.driver == 'gpu.nvidia.com' && "
                    "device.attributes['gpu.nvidia.com'].profile == '1g.12gb'",
                }
            }
        }
    )
    (finding,) = dra001_findings(_asks(dra001.IMPLICIT_DRA_PREFIX + "mig-1g-12gb.gpu.nvidia.com"), config=per_profile)
    assert "only the class's own pin, gpu.nvidia.com/profile == '1g.12gb'" in finding.message


@pytest.mark.parametrize("quantity", [0, 0.0, "0", "0.0", "+0", "-0", "0Gi", "0m", "0e3", ".0", None])
def test_dra001_a_zero_quantity_asks_for_nothing(quantity: object) -> None:
    """The scheduler and the kubelet's device manager skip a zero request (and Go decodes a
    null Quantity as zero): no device is allocated, so nothing is legacy."""
    container = {"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": quantity, "cpu": 1}}}
    assert findings(pod(containers=[container])) == []
    forbidding = _limit_range("Container", "max")
    forbidding["spec"]["limits"][0]["max"] = {"nvidia.com/gpu": quantity}  # how a namespace forbids GPUs
    assert findings(forbidding) == []
    crd = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "t", "namespace": "ns"},
        "spec": {"trainer": {"resourcesPerNode": {"limits": {"amd.com/gpu": quantity}}}},
    }
    assert findings(crd) == []


@pytest.mark.parametrize("quantity", [1, "1", "2", "0.5", "1e0", "00001", "zero", True, [0], {"a": 0}])
def test_dra001_any_other_quantity_asks(quantity: object) -> None:
    """Only a zero is nothing; what the API server would refuse (0.5, a word) still counts."""
    container = {"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": quantity}}}
    assert rule_ids(pod(containers=[container])) == {"DRA001"}


def test_dra001_a_karpenter_node_claim_sizes_a_node_and_asks_for_nothing() -> None:
    node_claim = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "static-gpu"},
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
            "resources": {"requests": {"nvidia.com/gpu": 8}},
        },
    }
    assert findings(node_claim) == []


def test_dra001_a_template_placeholder_as_a_resource_name_cannot_be_verified() -> None:
    """A Helm template read unrendered (named on the command line, or outside a chart): the
    name is decided at render time, and could be nvidia.com/gpu."""
    placeholder = "{{ .Values.accelerator.resourceName }}"
    container = {"name": "c", "image": "i", "resources": {"limits": {placeholder: "{{ .Values.count }}"}}}
    limit_range = _limit_range("Container", "default")
    limit_range["spec"]["limits"][0]["default"] = {placeholder: "1"}
    crd = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "t", "namespace": "ns"},
        "spec": {"trainer": {"resourcesPerNode": {"limits": {placeholder: 1}}}},
    }
    for obj in (pod(containers=[container]), limit_range, crd):
        (finding,) = findings(obj)
        assert (finding.rule, finding.severity) == ("DRA001", Severity.MEDIUM)
        assert "is a template placeholder" in finding.message and "cannot verify" in finding.message
