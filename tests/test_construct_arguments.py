"""Construct arguments Kubernetes would refuse are refused when the
construct is made (cdk8s and Pulumi alike), and what the constructs used to leave to the user
(a StatefulSet's headless Service, containers added after `use_claim_template`) they now do."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import cdk8s_plus_34 as kplus
import kubernetes_validate
import pytest
from cdk8s import ApiObject, ApiObjectMetadata, App, Chart, JsonPatch
from cdk8s import Testing as Cdk8sTesting  # not `Testing`: pytest would collect it

import constructs_dra
import pulumi_dra
from dra_guard import AcceleratorSlice, isolated_workload
from dra_guard.engine.run import check_objects

MIG = AcceleratorSlice.nvidia_mig("1g.10gb")


def _cdk8s(name: str, namespace: str | None, **arguments: Any) -> object:
    chart = Chart(Cdk8sTesting.app(), "chart", namespace=namespace)
    return constructs_dra.IsolatedAcceleratorWorkload(chart, name, **arguments)


def _pulumi(name: str, namespace: str | None, **arguments: Any) -> object:
    # The arguments are checked before anything is registered, so no Pulumi mocks are needed.
    return pulumi_dra.IsolatedAcceleratorWorkload(name, namespace=namespace or "tenant-a", **arguments)


FRONT_ENDS: list[Callable[..., object]] = [_cdk8s, _pulumi]
STATEFUL = {"image": "i", "slice": MIG, "workload_kind": "StatefulSet"}


@pytest.mark.parametrize("front_end", FRONT_ENDS, ids=["cdk8s", "pulumi"])
@pytest.mark.parametrize(
    ("name", "namespace", "arguments", "message"),
    [
        # int32 fields: replicas, a Job's completions and parallelism.
        ("app", "tenant-a", {"replicas": 2**31}, r"^replicas: must be at most 2147483647 \(an int32"),
        ("app", "tenant-a", {"replicas": 2**31, "workload_kind": "Job"}, r"^replicas: must be at most 2147483647"),
        # The StatefulSet controller's label controller-revision-hash: <name>-<10 characters>.
        ("a" * 53, "tenant-a", STATEFUL, r"^name: a StatefulSet name may have at most 52 characters"),
        # The headless Service takes the name, and Service names are DNS-1035 labels.
        ("1-store", "tenant-a", STATEFUL, r"^name \(also the name of the StatefulSet's headless Service\)"),
        ("store", "tenant-a", {**STATEFUL, "service_name": "9svc"}, r"^service_name: must be a DNS-1035 label"),
        ("app", "Tenant_A", {}, r"^namespace: must be a DNS-1123 label"),
        ("app", "a" * 64, {}, r"^namespace: must be a DNS-1123 label"),
    ],
    ids=["replicas", "job-replicas", "statefulset-name", "service-name", "own-service", "namespace", "long-ns"],
)
def test_issue14_6_construct_arguments_kubernetes_would_refuse(
    front_end: Callable[..., object], name: str, namespace: str, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        front_end(name, namespace, **{"image": "i", "slice": MIG, **arguments})


def test_issue14_6_the_limits_are_the_ones_kubernetes_enforces() -> None:
    """52 characters is accepted and its revision label fits; 2**31 - 1 replicas is valid."""
    name = "s" * 52
    objects = isolated_workload(name, namespace="tenant-a", image="i", slice=MIG, workload_kind="StatefulSet")
    revision_label = f"{name}-{'9' * 10}"  # the longest hash the controller writes
    assert len(revision_label) == 63
    for obj in objects:
        kubernetes_validate.validate(obj, "1.36.0", strict=True)
    objects = isolated_workload("app", namespace="tenant-a", image="i", slice=MIG, replicas=2**31 - 1)
    kubernetes_validate.validate(objects.workload, "1.36.0", strict=True)


def test_issue14_7_a_statefulset_gets_its_headless_service() -> None:
    chart = Chart(Cdk8sTesting.app(), "chart", namespace="tenant-a")
    store = constructs_dra.IsolatedAcceleratorWorkload(
        chart, "store", image="i", slice=MIG, workload_kind="StatefulSet", ports=[8080, 9090]
    )
    synthesized = Cdk8sTesting.synth(chart)
    (statefulset,) = [obj for obj in synthesized if obj["kind"] == "StatefulSet"]
    (service,) = [obj for obj in synthesized if obj["kind"] == "Service"]
    assert store.service is not None
    assert statefulset["spec"]["serviceName"] == service["metadata"]["name"] == "store"
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == statefulset["spec"]["selector"]["matchLabels"]
    assert service["spec"]["ports"] == [{"port": 8080, "name": "port-8080"}, {"port": 9090, "name": "port-9090"}]
    kubernetes_validate.validate(service, "1.36.0", strict=True)
    assert check_objects(synthesized).findings == []


def test_issue14_7_bring_your_own_service() -> None:
    objects = isolated_workload(
        "store", namespace="tenant-a", image="i", slice=MIG, workload_kind="StatefulSet", service_name="shared-dns"
    )
    assert objects.service is None and len(objects) == 2
    assert objects.workload["spec"]["serviceName"] == "shared-dns"
    chart = Chart(Cdk8sTesting.app(), "chart", namespace="tenant-a")
    constructs_dra.IsolatedAcceleratorWorkload(
        chart, "store", image="i", slice=MIG, workload_kind="StatefulSet", service_name="shared-dns"
    )
    assert [obj["kind"] for obj in Cdk8sTesting.synth(chart)] == ["ResourceClaimTemplate", "StatefulSet"]


def _claims_of(pod_spec: dict[str, Any]) -> list[list[str]]:
    return [[claim["name"] for claim in c.get("resources", {}).get("claims", [])] for c in pod_spec["containers"]]


def test_issue14_7_containers_added_after_use_claim_template_are_wired_at_synth() -> None:
    app = App(outdir=Cdk8sTesting.app().outdir)
    chart = Chart(app, "chart", namespace="ns")
    template = constructs_dra.IsolatedClaimTemplate(chart, "slice", slice=MIG)
    deployment = kplus.Deployment(chart, "web", containers=[kplus.ContainerProps(image="server")])
    constructs_dra.use_claim_template(deployment, template)
    deployment.add_container(image="sidecar", name="late")
    for _ in range(2):  # a second synth finds them wired and adds nothing
        (synthesized,) = [obj for obj in Cdk8sTesting.synth(chart) if obj["kind"] == "Deployment"]
        pod = synthesized["spec"]["template"]["spec"]
        assert _claims_of(pod) == [["accelerator"], ["accelerator"]]
        assert pod["resourceClaims"] == [{"name": "accelerator", "resourceClaimTemplateName": "slice"}]
    assert pod["containers"][1]["resources"]["limits"], "cdk8s-plus' own resources must survive the patch"
    app.synth()  # App.synth validates (and wires) the same way


def test_issue14_7_late_containers_of_a_raw_object_and_named_containers() -> None:
    chart = Chart(Cdk8sTesting.app(), "chart")
    raw = ApiObject(chart, "pod", api_version="v1", kind="Pod", metadata=ApiObjectMetadata(name="p"))
    raw.add_json_patch(JsonPatch.add("/spec", {"containers": [{"name": "main", "image": "i"}]}))
    constructs_dra.use_claim_template(raw, "slice")
    raw.add_json_patch(JsonPatch.add("/spec/containers/-", {"name": "late", "image": "i"}))
    assert _claims_of(Cdk8sTesting.synth(chart)[0]["spec"]) == [["accelerator"], ["accelerator"]]
    # Naming the containers wires those only, now and at synth.
    named = ApiObject(chart, "named", api_version="v1", kind="Pod", metadata=ApiObjectMetadata(name="n"))
    named.add_json_patch(JsonPatch.add("/spec", {"containers": [{"name": "main", "image": "i"}]}))
    constructs_dra.use_claim_template(named, "slice", containers=["main"])
    named.add_json_patch(JsonPatch.add("/spec/containers/-", {"name": "late", "image": "i"}))
    assert _claims_of(Cdk8sTesting.synth(chart)[1]["spec"]) == [["accelerator"], []]
