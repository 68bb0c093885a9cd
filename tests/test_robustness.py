"""The engine never raises, whatever JSON-like document it is given."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dra_guard.engine import check_objects
from dra_guard.manifest import POD_SPEC_PATHS

SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8)
KEYS = st.sampled_from(
    [
        "spec",
        "template",
        "containers",
        "resources",
        "limits",
        "requests",
        "claims",
        "resourceClaims",
        "devices",
        "exactly",
        "firstAvailable",
        "selectors",
        "cel",
        "expression",
        "count",
        "allocationMode",
        "adminAccess",
        "deviceClassName",
        "name",
        "metadata",
        "annotations",
        "namespace",
        "items",
        "config",
        "opaque",
        "parameters",
        "sharing",
        "strategy",
        "constraints",
        "matchAttribute",
        "jobTemplate",
        "nvidia.com/gpu",
        "initContainers",
    ]
) | st.text(max_size=6)
JSON_LIKE = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=5),
    max_leaves=40,
)
KINDS = st.sampled_from([*POD_SPEC_PATHS, "ResourceClaim", "ResourceClaimTemplate", "List", "PodGroup", "DeviceClass"])
API_VERSIONS = st.sampled_from(
    ["v1", "apps/v1", "resource.k8s.io/v1", "resource.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha2"]
)


@st.composite
def documents(draw: Any) -> Any:
    body = draw(st.dictionaries(KEYS, JSON_LIKE, max_size=6))
    if draw(st.booleans()):
        body.update(kind=draw(KINDS), apiVersion=draw(API_VERSIONS))
    return body


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(documents(), max_size=4))
def test_engine_never_raises(objects: list[dict[str, Any]]) -> None:
    report = check_objects(objects)
    for finding in report.findings:
        assert finding.rule.startswith("DRA") and finding.path.startswith(("/", "")) and finding.message
