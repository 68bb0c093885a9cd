"""enforce() on a chart or an app reads the objects through `Chart.to_json`, one call per
chart, instead of one `to_json` per object; what it reports must not change."""

from __future__ import annotations

from typing import Any

import jsii
import pytest
from cdk8s import ApiObject, ApiObjectMetadata, App, Chart, JsonPatch
from cdk8s import Testing as Cdk8sTesting  # not `Testing`: pytest would collect it
from constructs import Construct, IValidation

from constructs_dra import AcceleratorSlice, IsolatedAcceleratorWorkload, enforce

# More other objects than the margin above which a chart is read whole.
FILLERS = 12


def _raw(scope: Construct, construct_id: str, kind: str, spec: dict[str, Any], api_version: str) -> ApiObject:
    obj = ApiObject(
        scope, construct_id, api_version=api_version, kind=kind, metadata=ApiObjectMetadata(name=construct_id)
    )
    obj.add_json_patch(JsonPatch.add("/spec", spec))
    return obj


def _fill(scope: Construct, prefix: str) -> None:
    for index in range(FILLERS):
        _raw(scope, f"{prefix}-{index}", "Service", {"ports": [{"port": 80}]}, "v1")


def _legacy(scope: Construct) -> ApiObject:
    container = {"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}
    spec = {"selector": {}, "template": {"spec": {"containers": [container]}}}
    return _raw(scope, "legacy", "Deployment", spec, "apps/v1")


class _ReadsPerObject:
    """Counts the reads of single objects (`ApiObject.to_json`), still doing them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        original = ApiObject.to_json

        def counted(api_object: ApiObject) -> Any:
            self.count += 1
            return original(api_object)

        monkeypatch.setattr(ApiObject, "to_json", counted)


def test_a_compliant_app_is_read_chart_by_chart(monkeypatch: pytest.MonkeyPatch) -> None:
    app = Cdk8sTesting.app()
    outer = Chart(app, "outer", namespace="a")
    _fill(outer, "svc")
    _fill(Chart(outer, "inner", namespace="b"), "svc")  # a nested chart renders its own objects
    IsolatedAcceleratorWorkload(outer, "w", image="i", slice=AcceleratorSlice.nvidia_mig("1g.10gb"))
    enforce(app)
    reads = _ReadsPerObject(monkeypatch)
    assert len(app.synth_yaml().split("\n---\n")) == 2 * FILLERS + 2
    assert reads.count == 0


@pytest.mark.parametrize("scope", ["app", "outer", "inner"])
def test_a_bad_object_among_many_is_reported_with_its_construct_path(scope: str) -> None:
    app = Cdk8sTesting.app()
    outer = Chart(app, "outer", namespace="a")
    inner = Chart(outer, "inner", namespace="b")
    _fill(outer, "svc")
    _fill(inner, "svc")
    _legacy(inner)
    validation = enforce({"app": app, "outer": outer, "inner": inner}[scope])
    (message,) = validation.validate()
    assert message.startswith("DRA001 [critical] Deployment/b/legacy (construct outer/inner/legacy, ")
    with pytest.raises(RuntimeError, match="construct outer/inner/legacy"):
        app.synth_yaml()


def test_a_chart_outside_the_scope_is_not_checked() -> None:
    app = Cdk8sTesting.app()
    _legacy(Chart(app, "other", namespace="o"))
    checked = Chart(app, "checked", namespace="c")
    _fill(checked, "svc")
    assert enforce(checked).validate() == []


def test_our_edited_object_among_many_is_reported_once() -> None:
    chart = Chart(Cdk8sTesting.app(), "c", namespace="ns")
    _fill(chart, "svc")
    workload = IsolatedAcceleratorWorkload(chart, "w", image="i", slice=AcceleratorSlice.nvidia_mig("1g.10gb"))
    workload.claim_template.add_json_patch(JsonPatch.remove("/metadata/annotations/dra-guard.io~1sanitization"))
    enforce(chart)
    with pytest.raises(RuntimeError) as failure:
        Cdk8sTesting.synth(chart)
    assert str(failure.value).count("DRA004") == 1


@jsii.implements(IValidation)
class _Fails:
    def validate(self) -> list[str]:
        return ["not today"]


def test_another_validations_errors_leave_ours_as_they_were() -> None:
    """Reading a chart whole validates the app, which fails here: enforce() then reads
    the objects one by one, and synth reports both validations."""
    app = App(outdir=Cdk8sTesting.app().outdir)
    chart = Chart(app, "c", namespace="ns")
    _fill(chart, "svc")
    chart.node.add_validation(_Fails())
    validation = enforce(chart)
    assert validation.validate() == []
    _legacy(chart)
    with pytest.raises(RuntimeError) as failure:
        app.synth_yaml()
    assert "not today" in str(failure.value)
    assert "DRA001 [critical] Deployment/ns/legacy (construct c/legacy" in str(failure.value)
