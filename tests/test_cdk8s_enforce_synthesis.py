"""One synthesis reads the app once, however many times cdk8s asks enforce()'s validation;
a later synthesis, or a validation asked from Python, reads it again (issue 25, point 5)."""

from __future__ import annotations

from typing import Any

import pytest
from cdk8s import ApiObject, App, Chart, JsonPatch
from cdk8s import Testing as Cdk8sTesting  # not `Testing`: pytest would collect it

from constructs_dra import enforce
from tests.test_cdk8s_enforce_batch import _fill, _legacy


class _ChartReads:
    """Counts the reads of whole charts (`Chart.to_json`), still doing them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        original = Chart.to_json

        def counted(chart: Chart) -> Any:
            self.count += 1
            return original(chart)

        monkeypatch.setattr(Chart, "to_json", counted)


def _two_charts() -> tuple[App, Chart, Chart]:
    app = Cdk8sTesting.app()
    first, second = Chart(app, "first", namespace="a"), Chart(app, "second", namespace="b")
    _fill(first, "svc")
    _fill(second, "svc")
    return app, first, second


def test_one_synthesis_reads_each_chart_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """cdk8s asks every validation again for each chart `synth_yaml` renders; the objects
    were read and checked at the first ask, so the others are answered without reading."""
    app, _, _ = _two_charts()
    enforce(app)
    reads = _ChartReads(monkeypatch)
    app.synth_yaml()
    assert reads.count == 2  # each chart once (it was 2 x 3: once per ask)
    app.synth_yaml()
    assert reads.count == 4  # a later synthesis reads again


def test_a_later_synthesis_sees_what_changed_since() -> None:
    app, first, second = _two_charts()
    enforce(app)
    app.synth_yaml()
    Cdk8sTesting.synth(first)
    edited = ApiObject.of(second.node.find_child("svc-0"))
    edited.add_json_patch(
        JsonPatch.add(
            "/spec/template",
            {"spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}},
        )
    )
    edited.add_json_patch(JsonPatch.replace("/kind", "Deployment"))
    with pytest.raises(RuntimeError, match=r"DRA001 .*construct second/svc-0"):
        app.synth_yaml()
    with pytest.raises(RuntimeError, match=r"DRA001 .*construct second/svc-0"):
        Cdk8sTesting.synth(second)
    _legacy(first)
    with pytest.raises(RuntimeError, match="construct first/legacy"):
        Cdk8sTesting.synth(first)


def test_a_validation_asked_from_python_reads_each_time() -> None:
    app, first, _ = _two_charts()
    validation = enforce(app)
    assert validation.validate() == []
    _legacy(first)
    (message,) = validation.validate()
    assert "construct first/legacy" in message


def test_the_collector_is_as_the_caller_left_it() -> None:
    import gc

    app, _, _ = _two_charts()
    validation = enforce(app)
    assert validation.validate() == [] and gc.isenabled()
    gc.disable()
    try:
        assert validation.validate() == [] and not gc.isenabled()
    finally:
        gc.enable()
