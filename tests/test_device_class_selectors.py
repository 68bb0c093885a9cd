"""Whether a DeviceClass is an accelerator is decided by what its selector fixes, for
every rule and every front end.

A NIC or CPU class with a name dra-guard does not know (DRANET's classes are the user's to
name; AWS's EFA class as DRANET's EKS example writes it) is no accelerator when its own
selector fixes `device.driver` to a NIC's or a CPU's driver in a top-level `&&` conjunct:
DRA013 leaves its extendedResourceName alone, and DRA001 its implicit
`deviceclass.resource.kubernetes.io/<class>` name.  The admission policies decide one object
as the engine does (`assert_parity`).
"""

from __future__ import annotations

from typing import Any

from dra_guard.engine.run import check_objects
from dra_guard.ruleapi.config import Config
from tests.test_admission_parity import assert_parity

#: AWS's EFA class as DRANET's EKS example selects (kubernetes-sigs/dranet @ f258477c,
#: examples/aws_eks_examples/gpu-efa/device-class.yaml), under a name of the user's.
EFA = 'device.driver == "dra.net" && device.attributes["dra.net"].pciDevice == "Elastic Fabric Adapter (EFA)"'


def device_class(name: str, *expressions: str, mapped: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": expression}} for expression in expressions]}
    if mapped:
        spec["extendedResourceName"] = mapped
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def pod(resource: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team-a"},
        "spec": {"containers": [{"name": "main", "image": "i", "resources": {"limits": {resource: 1}}}]},
    }


def rules(objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    report = check_objects(objects, Config())
    assert report.errors == []
    return sorted((f.rule, f.object.kind) for f in report.findings)


# --- DRA013 -----------------------------------------------------------------------------


def test_dra013_leaves_a_custom_named_nic_class_that_maps_a_name_alone() -> None:
    efa = device_class("efa-nics", EFA, mapped="vpc.amazonaws.com/efa")
    assert rules([efa]) == []
    assert rules([device_class("my-cpus", "device.driver == 'dra.cpu'", mapped="example.com/cpus")]) == []
    assert_parity(efa)


def test_dra013_still_reports_a_class_whose_driver_is_not_certain_or_whose_name_is_known() -> None:
    either = device_class("either", 'device.driver == "dra.net" || true', mapped="example.com/x")
    gpu = device_class("shared-gpu", "device.driver == 'gpu.nvidia.com'", mapped="example.com/gpu")
    # A catalog class is the driver's, whatever a tenant's file redefines it as.
    known = device_class("gpu.nvidia.com", 'device.driver == "dra.net"', mapped="nvidia.com/gpu")
    for obj in (either, gpu, known):
        assert rules([obj]) == [("DRA013", "DeviceClass")]
        assert_parity(obj)


# --- DRA001 -----------------------------------------------------------------------------


def test_dra001_implicit_name_of_a_custom_named_nic_class_in_the_input_asks_no_accelerator() -> None:
    nics = device_class("rdma-nics", 'device.driver == "dra.net"')
    asking = pod("deviceclass.resource.kubernetes.io/rdma-nics")
    assert rules([nics, asking]) == []
    assert rules([asking, nics]) == []
    # Alone, the pod may ask for anything (fail closed), and its policy denies it alike.
    assert rules([asking]) == [("DRA001", "Pod")]
    assert_parity(asking)


def test_dra001_implicit_name_of_an_accelerator_class_in_the_input_is_still_reported() -> None:
    gpus = device_class("team-gpus", "device.driver == 'gpu.nvidia.com'")
    unsure = device_class("rdma-nics", 'device.driver == "dra.net" || true')
    assert rules([gpus, pod("deviceclass.resource.kubernetes.io/team-gpus")]) == [("DRA001", "Pod")]
    assert rules([unsure, pod("deviceclass.resource.kubernetes.io/rdma-nics")]) == [("DRA001", "Pod")]
