"""Synth at the cost of the objects: our constructs' objects go to Node and to the
self-check as the builders' dicts, read back through jsii only once edited
(constructs_dra/registry.py), and one self-check per chart covers them all."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cdk8s import ApiObject, App, Chart, IResolver, JsonPatch, ResolutionContext
from cdk8s import Testing as Cdk8sTesting  # not `Testing`: pytest would collect it
from jsii import implements

from constructs_dra import AcceleratorSlice, IsolatedAcceleratorWorkload, IsolatedClaimTemplate, enforce
from constructs_dra.registry import BuiltApiObject, chart_of
from dra_guard.contract.catalog import SANITIZATION_ANNOTATION, TENANT_ANNOTATION, WORKLOAD_KINDS

MIG = AcceleratorSlice.nvidia_mig("1g.10gb")


def _ours(chart: Chart, kind: str) -> list[BuiltApiObject]:
    # A chart without a namespace needs one on the construct: the isolation tag binds it.
    own_namespace = {} if chart.namespace else {"namespace": "own"}
    workload = IsolatedAcceleratorWorkload(
        chart, "w", image="i", slice=MIG, workload_kind=kind, labels={"b": "2"}, **own_namespace
    )
    template = IsolatedClaimTemplate(chart, "t", slice=MIG, namespace="elsewhere")
    objects = [workload.claim_template, workload.workload, workload.service, template.api_object]
    return [api_object for api_object in objects if isinstance(api_object, BuiltApiObject)]


@pytest.mark.parametrize("kind", WORKLOAD_KINDS)
@pytest.mark.parametrize(
    "chart_options", [{"namespace": "ns"}, {}, {"namespace": "ns", "labels": {"z": "1", "a": "0", "b": "1"}}]
)
def test_unedited_objects_render_exactly_as_cdk8s_would(kind: str, chart_options: dict[str, Any]) -> None:
    ours = _ours(Chart(Cdk8sTesting.app(), "c", **chart_options), kind)
    rendered_by_node = _ours(Chart(Cdk8sTesting.app(), "c", **chart_options), kind)
    for api_object in rendered_by_node:
        api_object.add_json_patch()  # an edit that changes nothing hands rendering to cdk8s
    assert all(not api_object.edited for api_object in ours)
    assert all(api_object.edited for api_object in rendered_by_node)
    for mine, node in zip(ours, rendered_by_node, strict=True):
        # Key order too: it is the order of the YAML cdk8s writes.
        assert json.dumps(mine.to_json()) == json.dumps(node.to_json())
        assert json.dumps(mine.current()) == json.dumps(ApiObject.to_json(node))
    assert Cdk8sTesting.synth(ours[0].chart) == Cdk8sTesting.synth(rendered_by_node[0].chart)


def test_only_edited_objects_are_read_back_through_jsii(monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[str] = []
    node_to_json = ApiObject.to_json

    def counting(self: ApiObject) -> Any:
        read.append(self.node.path)
        return node_to_json(self)

    monkeypatch.setattr(ApiObject, "to_json", counting)
    app = App()
    chart = Chart(app, "c", namespace="ns")
    workloads = [IsolatedAcceleratorWorkload(chart, f"w{index}", image="i", slice=MIG) for index in range(3)]
    workloads[1].workload.add_json_patch(JsonPatch.add("/spec/replicas", 2))
    enforce(chart)
    app.synth_yaml()
    assert read and set(read) == {"c/w1/Workload"}


def test_a_metadata_edit_is_caught() -> None:
    chart = Chart(Cdk8sTesting.app(), "c", namespace="ns")
    workload = IsolatedAcceleratorWorkload(chart, "w", image="i", slice=MIG)
    workload.claim_template.metadata.add_annotation(TENANT_ANNOTATION, "someone-else")  # outside the tag
    with pytest.raises(RuntimeError, match=r"DRA012 .*construct c/w/ClaimTemplate"):
        Cdk8sTesting.synth(chart)


def test_the_edit_is_in_the_output_and_after_the_spec() -> None:
    chart = Chart(Cdk8sTesting.app(), "c", namespace="ns")
    workload = IsolatedAcceleratorWorkload(chart, "w", image="i", slice=MIG)
    workload.workload.add_json_patch(JsonPatch.replace("/spec/replicas", 3))
    workload.claim_template.metadata.add_label("extra", "yes")
    template, deployment = Cdk8sTesting.synth(chart)
    assert deployment["spec"]["replicas"] == 3
    assert template["metadata"]["labels"]["extra"] == "yes"
    assert template["metadata"]["annotations"][SANITIZATION_ANNOTATION]


def test_one_self_check_per_chart_reports_each_construct() -> None:
    chart = Chart(Cdk8sTesting.app(), "c", namespace="ns")
    workloads = [IsolatedAcceleratorWorkload(chart, f"w{index}", image="i", slice=MIG) for index in range(2)]
    workloads[1].claim_template.add_json_patch(JsonPatch.remove("/metadata/annotations/dra-guard.io~1sanitization"))
    assert workloads[1].node.validate() == []  # nothing on the construct itself
    messages = chart.node.validate()
    assert {message[:6] for message in messages} == {"DRA004", "DRA012"}  # the tag covers sanitization
    assert all("(construct c/w1/ClaimTemplate" in message for message in messages)


def test_constructs_with_their_own_keys_are_each_verified_with_theirs() -> None:
    chart = Chart(Cdk8sTesting.app(), "c", namespace="ns")
    IsolatedAcceleratorWorkload(chart, "a", image="i", slice=MIG, hmac_key="key-a")
    IsolatedAcceleratorWorkload(chart, "b", image="i", slice=MIG, hmac_key="key-b")
    IsolatedAcceleratorWorkload(chart, "c", image="i", slice=MIG)
    assert len(Cdk8sTesting.synth(chart)) == 6


def test_repeated_validation_reuses_the_messages_only_for_the_same_objects() -> None:
    chart = Chart(Cdk8sTesting.app(), "c", namespace="ns")
    workload = IsolatedAcceleratorWorkload(chart, "w", image="i", slice=MIG)
    assert chart.node.validate() == []
    workload.claim_template.add_json_patch(JsonPatch.replace("/metadata/annotations/dra-guard.io~1sanitization", "x"))
    assert any(message.startswith("DRA004") for message in chart.node.validate())
    workload.claim_template.add_json_patch(JsonPatch.remove("/metadata/annotations/dra-guard.io~1sanitization"))
    assert any(message.startswith("DRA004") for message in chart.node.validate())


@implements(IResolver)
class _Upper:
    """A resolver of the app's own: it changes values, so cdk8s must render our objects."""

    def resolve(self, context: ResolutionContext) -> None:
        if context.key == ["metadata", "labels", "team"] and context.value == "ml":
            context.replace_value("ML")  # cdk8s resolves the new value again


def test_an_app_with_its_own_resolvers_renders_our_objects_itself() -> None:
    app = App(resolvers=[_Upper()])
    chart = Chart(app, "c", namespace="ns")
    workload = IsolatedAcceleratorWorkload(chart, "w", image="i", slice=MIG, labels={"team": "ml"})
    assert isinstance(workload.workload, BuiltApiObject) and workload.workload.edited
    deployment = workload.workload.to_json()
    assert deployment["metadata"]["labels"]["team"] == "ML"
    assert deployment["spec"]["replicas"] == 1


def test_a_wrongly_typed_value_is_refused_by_node_without_the_bindings_checks() -> None:
    """Our objects skip the Python binding's runtime type checks; Node's jsii kernel still
    refuses props of the wrong type, so a builder bug cannot reach the output."""
    chart = Chart(Cdk8sTesting.app(), "c", namespace="ns")
    entry, path = chart_of(chart, lambda _: None)

    def manifest(labels: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "labels": labels}, "spec": {}}

    with pytest.raises(RuntimeError, match=r"cdk8s\.ApiObjectProps"):
        BuiltApiObject(chart, "o", manifest({"a": 1}), entry, path)
    assert BuiltApiObject(chart, "p", manifest({"a": "1"}), entry, path).to_json()["metadata"]["labels"] == {"a": "1"}
