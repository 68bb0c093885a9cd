"""Issue 20, point 6: what a DeviceClass selects decides whether it is an accelerator.

DRANET's NIC classes, AWS's EFA class and dra-driver-cpu's class are in the catalog; a class
dra-guard does not know whose DeviceClass in the input fixes `device.driver` to a NIC or CPU
driver is no accelerator either, in whatever order the objects come, and the GPU request of
a GPU + NIC template is still judged.  DRA009 asks no container to name a pod-level NIC
claim, and knows the template an NVIDIA ComputeDomain makes.  The upstream files are in
tests/fixtures/upstream (SOURCES.md: repository, path, commit, blob).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_guard.contract.catalog import NON_ACCELERATOR_CLASSES
from dra_guard.contract.findings import Finding
from dra_guard.engine.run import check_objects
from dra_guard.ruleapi.config import Config
from testkit.paths import REPO_ROOT
from tests.test_admission_parity import assert_parity

UPSTREAM = REPO_ROOT / "tests" / "fixtures" / "upstream"
#: Rules that judge accelerator requests.
ACCELERATOR_RULES = {"DRA002", "DRA003", "DRA004", "DRA008", "DRA011", "DRA012", "DRA015"}


def load(*names: str) -> list[dict[str, Any]]:
    return [obj for name in names for obj in yaml.safe_load_all((UPSTREAM / name).read_text()) if obj]


def check(objects: list[dict[str, Any]]) -> list[Finding]:
    report = check_objects(objects, Config())
    assert report.errors == []
    return report.findings


def on_request(findings: list[Finding], index: int) -> set[str]:
    return {f.rule for f in findings if f.path.startswith(f"/spec/spec/devices/requests/{index}")}


def _renamed(objects: list[dict[str, Any]], old: str, new: str) -> list[dict[str, Any]]:
    return yaml.safe_load_all(yaml.safe_dump_all(objects).replace(old, new))  # type: ignore[no-any-return]


AWS = ("dranet/aws-gpu-efa-device-class.yaml", "dranet/aws-gpu-efa-resource-claim-template.yaml")


def test_point6_the_catalog_knows_the_nic_and_cpu_classes_upstream_ships() -> None:
    for name in ("dranet", "dranet.net", "dra.net", "multinic", "rdma", "dranet-rdma-for-mpi"):
        assert NON_ACCELERATOR_CLASSES[name].driver == "dra.net" and NON_ACCELERATOR_CLASSES[name].pod_level
    assert NON_ACCELERATOR_CLASSES["efa.networking.k8s.aws"].driver == "dra.net"
    assert NON_ACCELERATOR_CLASSES["dra.cpu"].driver == "dra.cpu" and not NON_ACCELERATOR_CLASSES["dra.cpu"].pod_level
    assert not any(Config().is_accelerator(name) for name in NON_ACCELERATOR_CLASSES)


def test_point6_aws_gpu_efa_template_judges_the_gpu_request_only() -> None:
    """DRANET's EKS example: one template, a GPU request (index 0) and an EFA request (1)."""
    found = check(load(*AWS))
    templates = {f.object.name for f in found}
    assert templates == {"gpu-efa-aligned", "gpu-efa-unaligned"}
    for name in templates:
        mine = [f for f in found if f.object.name == name]
        assert on_request(mine, 0) >= {"DRA002", "DRA003"}
        assert on_request(mine, 1) == set()


@pytest.mark.parametrize("order", ["class-first", "class-last"])
def test_point6_an_unknown_class_selecting_dra_net_in_the_input_is_no_accelerator(order: str) -> None:
    """The same files with the class renamed to one dra-guard does not know: its DeviceClass,
    before or after the template, shows it selects dra.net devices."""
    objects = list(_renamed(load(*AWS), "efa.networking.k8s.aws", "team-efa"))
    device_class, templates = objects[0], objects[1:]
    alone = check(templates)
    assert on_request(alone, 1) >= {"DRA003", "DRA008"}  # fail closed without the class
    found = check([device_class, *templates] if order == "class-first" else [*templates, device_class])
    assert on_request(found, 1) == set()
    assert on_request(found, 0) >= {"DRA002", "DRA003"}
    assert {f.rule for f in found} == {f.rule for f in alone}  # the GPU request keeps the rest


def test_point6_a_nic_only_template_on_an_input_class_gets_no_accelerator_finding() -> None:
    objects = list(_renamed(load("dranet/gke-multinetwork-deviceclass.yaml"), "multinic", "team-nic"))
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "nic", "namespace": "ns"},
        "spec": {"spec": {"devices": {"requests": [{"name": "nic", "exactly": {"deviceClassName": "team-nic"}}]}}},
    }
    assert {f.rule for f in check([template])} & ACCELERATOR_RULES
    assert {f.rule for f in check([template, *objects])} & ACCELERATOR_RULES == set()


def test_point6_a_driver_named_outside_a_top_level_conjunct_proves_nothing() -> None:
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "either"},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "dra.net" || device.driver == "gpu.x"'}}]},
    }
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": "ns"},
        "spec": {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "either"}}]}}},
    }
    assert {f.rule for f in check([template, device_class])} & ACCELERATOR_RULES


def test_point6_a_catalog_class_is_not_redefined_by_the_input() -> None:
    """A tenant's DeviceClass `gpu.nvidia.com` selecting dra.net does not make GPUs NICs."""
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "dra.net"'}}]},
    }
    found = check([*load(*AWS)[1:], device_class])
    assert on_request([f for f in found if f.object.kind != "DeviceClass"], 0) >= {"DRA003"}


def test_point6_dra009_asks_no_container_to_name_a_pod_level_nic_claim() -> None:
    """DRANET's GKE multi-network demo: a Deployment's template claim and a Pod's claim for
    `multinic` NICs, named by no container (DRANET moves them into the pod's network
    namespace: kubernetes-sigs/dranet pkg/driver/nri_hooks.go RunPodSandbox)."""
    objects = load(
        "dranet/gke-multinetwork-deviceclass.yaml",
        "dranet/gke-multinetwork-resourceclaimtemplate.yaml",
        "dranet/gke-multinetwork-resourceclaim.yaml",
    )
    assert check(objects) == []
    # A NIC class the input defines (dra.net) counts as well, in either order.
    renamed = list(_renamed(objects, "multinic", "team-nic"))
    assert check(renamed) == [] and check(renamed[::-1]) == []
    # Without the claim or template, the pod claim is reported (fail closed).
    alone = [obj for obj in objects if obj["kind"] in {"Pod", "Deployment"}]
    assert {(f.rule, f.object.kind) for f in check(alone)} >= {("DRA009", "Pod"), ("DRA009", "Deployment")}


def test_point6_dra009_still_asks_for_a_cpu_claim_and_a_gpu_claim_to_be_named() -> None:
    """CPU claims are per container (dra-driver-cpu's example names each in its container)."""
    objects = load("dra-driver-cpu/pod_with_resource_claim_individual_mode.yaml")
    assert [f.rule for f in check(objects)] == []
    pod = next(obj for obj in objects if obj["kind"] == "Pod")
    del pod["spec"]["containers"][1]["resources"]["claims"]
    assert [f.rule for f in check(objects)] == ["DRA009"]


def test_point6_dra009_knows_the_template_a_compute_domain_makes() -> None:
    """NVIDIA's IMEX channel demo: the ComputeDomain makes ResourceClaimTemplate
    imex-channel-0 (request `channel`), which the Pod names."""
    objects = load("nvidia-dra-driver/imex-channel-injection.yaml")
    assert check(objects) == []
    pod = next(obj for obj in objects if obj["kind"] == "Pod")
    # Without it the template is not among the objects: DRA009 says so, and DRA016 cannot
    # tell whether the claim is an accelerator's (low, as the pod runs no scrubber).
    assert [(f.rule, f.severity.label) for f in check([pod])] == [("DRA009", "low"), ("DRA016", "low")]
    pod["spec"]["containers"][0]["resources"]["claims"][0]["request"] = "gpu"
    assert [f.message for f in check(objects)] == [
        "container 'ctr' asks for request 'gpu', which ResourceClaimTemplate 'imex-channel-0' does not have"
    ]


@pytest.mark.parametrize(
    "name", ["dranet/gke-multinetwork-resourceclaimtemplate.yaml", "dranet/gke-multinetwork-resourceclaim.yaml"]
)
def test_point6_admission_decides_one_object_as_the_engine_does(name: str) -> None:
    """Each object alone, as a policy sees it: the policies deny what the engine covers (a
    template claim no container names is the webhook's, which reads the template)."""
    for obj in load(name):
        assert_parity(obj)


def test_point6_the_webhook_reads_the_nic_template_and_admits_the_deployment() -> None:
    from dra_guard.admission.webhook import Webhook
    from dra_guard.contract.findings import Severity
    from dra_guard.rules import RULES
    from testkit.front_ends import Source, SourceTemplates, admission_request, as_admitted, webhook_rules

    objects = [as_admitted(obj) for obj in load("dranet/gke-multinetwork-resourceclaimtemplate.yaml")]
    source = Source("nic", tuple(objects))
    webhook = Webhook(RULES, Config(), templates=SourceTemplates(source), fail_on=Severity.LOW)
    deployment = next(obj for obj in objects if obj["kind"] == "Deployment")
    assert webhook_rules(webhook.review(admission_request(deployment, source.writer(1)))) == frozenset()
    assert Path(UPSTREAM / "SOURCES.md").is_file()
