"""The engine never raises, whatever JSON-like document it is given."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dra_guard.engine.run import check_objects
from dra_guard.model.manifest import POD_SPEC_PATHS
from dra_guard.ruleapi.context import Resource
from dra_guard.rules import RULES

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
        # Where the pod-template finder and DRA001 look in other kinds.
        "replicatedJobs",
        "templates",
        "container",
        "podSpecPatch",
        "resourcesPerNode",
        "predictor",
        "model",
        "gpus",
        "hostDevices",
        "deviceName",
        "patches",
        "patch",
        "default",
        "max",
        "type",
        "extendedResourceName",
        "resourceClaimName",
    ]
) | st.text(max_size=6)
JSON_LIKE = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=5),
    max_leaves=40,
)
KINDS = st.sampled_from(
    [
        *POD_SPEC_PATHS,
        "ResourceClaim",
        "ResourceClaimTemplate",
        "List",
        "PodGroup",
        "DeviceClass",
        "LimitRange",
        "JobSet",
        "Workflow",
        "InferenceService",
        "VirtualMachine",
        "Kustomization",
        "Anything",
    ]
)
API_VERSIONS = st.sampled_from(
    [
        "v1",
        "apps/v1",
        "resource.k8s.io/v1",
        "resource.k8s.io/v1beta1",
        "scheduling.k8s.io/v1alpha2",
        "jobset.x-k8s.io/v1alpha2",
        "argoproj.io/v1alpha1",
        "serving.kserve.io/v1beta1",
        "kubevirt.io/v1",
        "kustomize.config.k8s.io/v1beta1",
        "example.com/v1",
    ]
)


@st.composite
def documents(draw: Any) -> Any:
    body = draw(st.dictionaries(KEYS, JSON_LIKE, max_size=6))
    if draw(st.booleans()):
        body.update(kind=draw(KINDS), apiVersion=draw(API_VERSIONS))
    return body


def resolve(obj: Any, pointer: str) -> list[Any]:
    """The nodes along a JSON pointer (RFC 6901), as far as they exist."""
    nodes = [obj]
    for token in pointer.split("/")[1:] if pointer else []:
        key = token.replace("~1", "/").replace("~0", "~")
        current = nodes[-1]
        if isinstance(current, dict) and key in current:
            nodes.append(current[key])
        elif isinstance(current, list) and key.isdigit() and int(key) < len(current):
            nodes.append(current[int(key)])
        else:
            break
    return nodes


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(documents(), max_size=4))
def test_engine_never_raises(objects: list[dict[str, Any]]) -> None:
    report = check_objects(objects)
    # Each finding points into its object, where the pointer's root is known: objects whose
    # kind/namespace/name is unique among the top-level ones.  Only a last `metadata` may
    # be missing (where an absent annotation belongs).
    refs = [Resource(obj).ref for obj in objects]
    by_ref = {ref: obj for ref, obj in zip(refs, objects, strict=True) if refs.count(ref) == 1}
    for finding in report.findings:
        assert finding.rule in RULES and finding.message and finding.remediation == RULES[finding.rule].remediation
        obj = by_ref.get(finding.object)
        if obj is None or finding.path.startswith("/items/"):
            continue  # another object with the same name, or an item of a List
        tokens = finding.path.split("/")[1:] if finding.path else []
        reached = len(resolve(obj, finding.path)) - 1
        assert reached == len(tokens) or (tokens[-1:] == ["metadata"] and reached == len(tokens) - 1), finding


def test_resolve_follows_json_pointers() -> None:
    pod = {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": 1}}}]}, "kind": "Pod"}
    pod["apiVersion"] = "v1"
    (finding,) = check_objects([pod]).findings
    assert finding.path == "/spec/containers/0/resources/limits/nvidia.com~1gpu"
    assert resolve(pod, finding.path)[-1] == 1 and len(resolve(pod, "/spec/containers/1/x")) == 3
