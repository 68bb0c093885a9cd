"""Whether a DeviceClass is an accelerator is decided by what its selector fixes, for
every rule and every front end.

A NIC or CPU class with a name dra-guard does not know (DRANET's classes are the user's to
name; AWS's EFA class as DRANET's EKS example writes it) is no accelerator when its own
selector fixes `device.driver` to a NIC's or a CPU's driver in a top-level `&&` conjunct:
DRA013 leaves its extendedResourceName alone, and DRA001 its implicit
`deviceclass.resource.kubernetes.io/<class>` name.  The other way round, a NIC class the
catalog knows only by the name DRANET's examples give it (`rdma`) is an accelerator when the
input's DeviceClass of that name fixes a GPU driver: its claims, the pods using them, its
implicit name and its extendedResourceName are judged; the findings on claims and pods are
cross-object, since their policies see no DeviceClass.  The admission policies decide one
object as the engine does (`assert_parity`).
"""

from __future__ import annotations

from typing import Any

import yaml

from dra_guard.contract.findings import Finding
from dra_guard.engine.run import check_objects
from dra_guard.read.config_file import parse_config
from dra_guard.ruleapi.config import Config
from dra_guard.rules import RULES
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


def findings(objects: list[dict[str, Any]], config: Config | None = None) -> list[Finding]:
    report = check_objects(objects, config or Config())
    assert report.errors == []
    return report.findings


def rules(objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted({(f.rule, f.object.kind) for f in findings(objects)})


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


# --- a NIC class by name whose DeviceClass selects GPUs ----------------------------------

MIG = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"
TEMPLATE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "slice", "namespace": "team-a"},
    "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "rdma"}}]}}},
}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "team-a"},
    "spec": {
        "resourceClaims": [{"name": "g", "resourceClaimTemplateName": "slice"}],
        "containers": [{"name": "main", "image": "i", "resources": {"claims": [{"name": "g"}]}}],
    },
}


def test_a_nic_class_by_name_that_selects_gpus_is_judged_as_an_accelerator() -> None:
    gpus = device_class("rdma", MIG)
    for objects in ([gpus, TEMPLATE, POD], [TEMPLATE, POD, gpus]):
        found = findings(objects)
        on_template = {f.rule for f in found if f.object.kind == "ResourceClaimTemplate"}
        assert on_template >= {"DRA002", "DRA003", "DRA004", "DRA012"}
        assert "DRA016" in {f.rule for f in found if f.object.kind == "Pod"}  # no scrubber
        # The claim's and the pod's policies see no DeviceClass: they cannot decide these.
        assert all(f.cross_object for f in found if f.object.kind != "DeviceClass")
    # Without the DeviceClass, or with DRANET's own (kubernetes-sigs/dranet @ f258477c,
    # examples/demo_gke_rdma/rdma-perftest.yaml), rdma is a NIC class.
    nics = device_class("rdma", 'device.driver == "dra.net"', 'device.attributes["dra.net"].rdma')
    assert findings([TEMPLATE, POD]) == [] and findings([nics, TEMPLATE, POD]) == []
    # A GPU driver named outside a top-level conjunct proves nothing.
    assert findings([device_class("rdma", "device.driver == 'gpu.nvidia.com' || true"), TEMPLATE, POD]) == []
    assert_parity(TEMPLATE)
    assert_parity(POD)


def test_a_nic_class_by_name_that_selects_gpus_is_judged_beside_a_gpu_request_too() -> None:
    """A GPU + `rdma` claim: the `rdma` request is judged by the input's DeviceClass as it is
    alone (it was judged on its GPU request alone, so the second GPU went unpinned, unseen)."""
    mixed = yaml.safe_load(yaml.safe_dump(TEMPLATE))
    requests = mixed["spec"]["spec"]["devices"]["requests"]
    requests[0]["name"] = "nic"
    requests.insert(0, {"name": "gpu", "exactly": {"deviceClassName": "mig.nvidia.com"}})

    def on_nic(objects: list[dict[str, object]]) -> set[str]:
        return {f.rule for f in findings(objects) if "request 'nic'" in f.message}

    found = on_nic([device_class("rdma", MIG), mixed])
    assert found >= {"DRA002", "DRA003"}
    assert all(f.cross_object for f in findings([device_class("rdma", MIG), mixed]) if "request 'nic'" in f.message)
    nics = device_class("rdma", 'device.driver == "dra.net"', 'device.attributes["dra.net"].rdma')
    assert on_nic([mixed]) == set() and on_nic([nics, mixed]) == set()
    assert_parity(mixed)


def test_a_nic_class_the_configuration_lists_or_a_driver_class_stays_no_accelerator() -> None:
    listed = parse_config(yaml.safe_load("non-accelerator-classes: [rdma]"), RULES, "test")
    assert findings([device_class("rdma", MIG), TEMPLATE, POD], listed) == []
    # NVIDIA's IMEX channel class selects gpu.nvidia.com devices, of type imex-channel: the
    # catalog knows it by its driver's chart, not by a name users give.
    imex = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'imex-channel'"
    template = yaml.safe_load(yaml.safe_dump(TEMPLATE).replace("rdma", "imex.nvidia.com"))
    assert findings([device_class("imex.nvidia.com", imex), template]) == []


def test_dra013_reports_a_nic_class_by_name_that_maps_a_name_onto_gpus() -> None:
    gpus = device_class("rdma", MIG, mapped="example.com/gpu")
    nics = device_class("rdma", 'device.driver == "dra.net"', mapped="example.com/rdma")
    assert rules([gpus]) == [("DRA013", "DeviceClass")] and rules([nics]) == []
    assert_parity(gpus)
    assert_parity(nics)
    # Found by the final review: selectors fixing both a NIC's and a GPU's driver (the class
    # selects nothing) made the engine report it and the policy exempt it by the NIC pattern.
    both = device_class("rdma", 'device.driver == "dra.net"', MIG, mapped="example.com/gpu")
    assert rules([both]) == [("DRA013", "DeviceClass")]
    assert_parity(both)


def test_dra001_implicit_name_of_a_nic_class_by_name_that_selects_gpus() -> None:
    asking = pod("deviceclass.resource.kubernetes.io/rdma")
    (finding,) = findings([device_class("rdma", MIG), asking])
    assert finding.rule == "DRA001" and finding.cross_object
    assert findings([asking]) == [] and findings([device_class("rdma", 'device.driver == "dra.net"'), asking]) == []
    assert_parity(asking)
