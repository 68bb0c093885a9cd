"""The admission policies within the API server's CEL cost limits.

The cost model (`dra_guard.admission.cost`) is checked twice: its charges against the
expectations of cel-go's own runtime cost test, its values against the emulator's
cel-python on every object the parity test knows.  Then it measures the generated policies
on the largest objects the API lets through and finds where the budget runs out, which
docs/admission.md ("The CEL cost budget") states.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dra_guard.admission.cost import PER_CALL_LIMIT, evaluate
from dra_guard.admission.emulate import admit, costs
from dra_guard.admission.policy import admission_objects
from dra_guard.read.config_file import parse_config
from dra_guard.ruleapi.admission_form import AdmissionTarget
from dra_guard.rules import RULES
from testkit.paths import REPO_ROOT
from tests.admission_strategies import admitted_objects
from tests.test_admission_parity import CONFIGURATIONS, IN_SCOPE, _policies

# --- the model against cel-go ------------------------------------------------------------------

LONG = "a" * 500
#: Expressions, inputs and costs of `TestRuntimeCost` in google/cel-go
#: interpreter/runtimecost_test.go @ 14f6746a286f198c2a976749331b7bf4aa2d4bd2, which runs
#: without constant folding (`optimize=False` here); proto messages are written as maps.
CEL_GO_CASES: list[tuple[str, dict[str, Any], int]] = [
    ('"Hello World!"', {}, 0),
    ("input", {"input": 1}, 1),
    ("input['key']", {"input": {"key": 1}}, 2),
    ("input[0]", {"input": [1]}, 2),
    ("input.single_int32", {"input": {"single_int32": 1}}, 2),
    ("input['ke' + 'y']", {"input": {"key": 1}}, 3),
    ("input[3-3]", {"input": [1]}, 3),
    ("has(input.single_int32)", {"input": {"single_int32": 1}}, 1),  # PresenceTestHasCost(false)
    ("has(input.testAttr.nestedAttr)", {"input": {"testAttr": {"nestedAttr": 1}}}, 2),
    ("[1, 2, 3]", {}, 10),
    ('{"a": 1, "b": 2, "c": 3}', {}, 30),
    ("input.all(x, true)", {"input": []}, 2),
    ("[1, 2, 3].all(x, true)", {}, 20),
    ("input.matches('[0-9]')", {"input": LONG}, 103),
    ("'123'.matches('[0-9]')", {}, 2),
    ("false || false", {}, 0),
    ("true || false", {}, 0),
    ("a || b || c || d", {"a": False, "b": False, "c": False, "d": False}, 4),
    ("a && b && c && d", {"a": True, "b": True, "c": True, "d": True}, 4),
    ("1 < 2", {}, 1),
    ("1 == 2", {}, 1),
    ("2 in [1, 2, 3]", {}, 13),
    ("1 + 1", {}, 1),
    ("true ? 1 : 2", {}, 0),
    ('size("123")', {}, 1),
    ("'12345678901234567890' == '123456789012345678901234567890'", {}, 2),
    ("input.contains(arg1)", {"input": LONG, "arg1": LONG}, 2502),
    ("input.matches('\\\\d+a\\\\d+b')", {"input": LONG}, 103),
    ("input.startsWith(arg1)", {"input": "idc", "arg1": LONG}, 3),
    ("input.endsWith(arg1)", {"input": "idc", "arg1": LONG}, 3),
    ("input.size()", {"input": "500"}, 2),
    ("size(input)", {"input": "500"}, 2),
    ("(x > 2 ? input1 : input2).all(y, true)", {"input1": [{}], "input2": [{}], "x": 1}, 6),
    ("true ? false : 1 > 3", {}, 0),
    ("false ? false : 1 > 3", {}, 1),
    ("input.all(k, input[k].single_int32 > 3)", {"input": {"val": {"single_int32": 0}}}, 9),
    ("(list1 + list2).all(x, true)", {"list1": [], "list2": []}, 4),
    ('"abcdefg".contains(str1 + str2)', {"str1": "val1", "str2": "val2222222"}, 6),
    ("(1 > 2 ? 5 : 3) > 1", {}, 2),
    ("[1,2,3,4,5].filter(x, x % 2 == 0)", {}, 62),
    ("[1,2,3,4,5].map(x, x)", {}, 86),
    ("[1,2,3,4,5].map(x, x).filter(x, x % 2 == 0)", {}, 138),
    ("[1,2,3,4,5].map(x, x).exists(x, x == 5) == true", {}, 118),
    ("[1,2,3,4,5].map(x, x).map(x, x)", {}, 162),
    ("[1,2,3,4,5].map(x, [x, x]).filter(z, z.size() == 2)", {}, 232),
    ("[1,2,3,4,5].map(x, [x, x]).all(y, y.all(y, y == 1))", {}, 171),
    ("[1,2,3,4,5].map(x, x).map(x, x) + [1]", {}, 173),
    ("[1,2,3].all(i, i in [1,2,3].map(j, j + j))", {}, 86),
]


@pytest.mark.parametrize(("expression", "activation", "want"), CEL_GO_CASES, ids=[case[0] for case in CEL_GO_CASES])
def test_the_model_charges_what_cel_go_charges(expression: str, activation: dict[str, Any], want: int) -> None:
    assert evaluate(expression, activation, optimize=False).cost == want


@pytest.mark.parametrize(
    ("expression", "activation", "want"),
    [
        ("'a' in ['a', 'b']", {}, 0),  # a constant list is a set lookup
        ("x in l", {"x": 1, "l": [1, 2, 3]}, 2 + 3),  # a list that is not: its size
        ("[1, 2, 3].all(x, true)", {}, 3 * 3 + 1),  # the list literal is folded
        ("l.map(x, x)", {"l": [1, 2]}, 1 + 2 * 13 + 1),  # the accumulator's [] is folded
        ("has(a.b.c)", {"a": {"b": {"c": 1}}}, 2),
    ],
)
def test_the_model_folds_constants_as_the_api_server_does(
    expression: str, activation: dict[str, Any], want: int
) -> None:
    """The API server evaluates with OptOptimize (k8s.io/apiserver pkg/cel/environment/base.go)."""
    assert evaluate(expression, activation).cost == want


def test_the_model_decides_as_the_emulator_and_every_known_object_is_within_budget() -> None:
    """The values the model computes are cel-python's: the same policies deny the same
    objects.  And no object the tests know comes near a limit."""
    compared = 0
    for name, obj, config_text in IN_SCOPE:
        policies, _ = _policies(config_text)
        for policy in (policy for policy in policies if policy["kind"] == "ValidatingAdmissionPolicy"):
            counted = costs([policy], obj)
            if not counted:
                continue
            (cost,) = counted
            assert cost.denied == bool(admit([policy], obj)), f"{name}: {policy['metadata']['name']}"
            assert not cost.problems() and cost.largest.cost < PER_CALL_LIMIT / 10, (name, cost.largest)
            compared += 1
    assert compared > 1000


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(obj=admitted_objects(), configuration=st.sampled_from(CONFIGURATIONS))
def test_the_model_decides_as_the_emulator_on_generated_objects(
    obj: dict[str, Any], configuration: tuple[str, tuple[str, str] | None]
) -> None:
    """The same on the strategy's objects: odd opaque parameters, nulls, waivers, labels."""
    policies, _ = _policies(*configuration)
    for policy in (policy for policy in policies if policy["kind"] == "ValidatingAdmissionPolicy"):
        for cost in costs([policy], obj):
            assert cost.denied == bool(admit([policy], obj)), policy["metadata"]["name"]
            assert not cost.problems()


# --- the largest objects -----------------------------------------------------------------------

#: k8s.io/api resource/v1/types.go @ 10b39a39bcee995dfe7cd5e8e7b922be5e46f1e2:
#: DeviceRequestsMaxSize, FirstAvailableDeviceRequestMaxSize, DeviceConstraintsMaxSize,
#: DeviceConfigMaxSize, CELSelectorExpressionMaxLength, OpaqueParametersMaxLength.
REQUESTS_MAX, ALTERNATIVES_MAX, CONSTRAINTS_MAX, CONFIGS_MAX = 32, 8, 32, 32
SELECTOR_MAX_LENGTH = PARAMETERS_MAX_LENGTH = 10 * 1024
#: etcd's default --max-request-bytes: no stored object is larger.
OBJECT_MAX_BYTES = 1_572_864
#: apimachinery ValidateAnnotations: TotalAnnotationSizeLimitB, per metadata.
ANNOTATIONS_MAX_BYTES = 256 * 1024
#: What the dra-guard builders write: pin, driver and exclusivity guard, 137 characters.
BUILDER_SELECTOR = (
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].profile == '1g.10gb' "
    "&& device.allowMultipleAllocations == false"
)
TAGGED = {
    "dra-guard.io/sanitization": "WipeOnDeallocate",
    "dra-guard.io/allow-multiple-allocations": "false",
    "dra-guard.io/isolation-tag": "sha256:" + "a" * 64,
}


def _stored_bytes(obj: dict[str, Any]) -> int:
    """The object's size as compact JSON (the API server stores it as protobuf, smaller still)."""
    return len(json.dumps(obj, separators=(",", ":")))


def _policies_for(config: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    chosen = AdmissionTarget(parse_config(config or {}, RULES, "test"), ("dra-guard.io/admin", "true"))
    return [obj for obj in admission_objects(RULES, chosen) if obj["kind"] == "ValidatingAdmissionPolicy"]


POLICIES = _policies_for()


def _namespace() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {}}}


def _claim(bodies: list[list[dict[str, Any]]], **devices: Any) -> dict[str, Any]:
    """A ResourceClaim whose requests have these bodies (one: `exactly`; more: `firstAvailable`)."""
    requests = []
    for index, alternatives in enumerate(bodies):
        if len(alternatives) == 1:
            requests.append({"name": f"r{index}", "exactly": alternatives[0]})
        else:
            requests.append(
                {
                    "name": f"r{index}",
                    "firstAvailable": [{"name": f"a{n}", **body} for n, body in enumerate(alternatives)],
                }
            )
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "team-a", "annotations": dict(TAGGED)},
        "spec": {"devices": {"requests": requests, **devices}},
    }


def _body(selector: str = BUILDER_SELECTOR, count: int = 1) -> dict[str, Any]:
    return {
        "deviceClassName": "mig.nvidia.com",
        "selectors": [{"cel": {"expression": selector}}],
        "allocationMode": "ExactCount",
        "count": count,
    }


def _nvidia_parameters() -> dict[str, Any]:
    """A GpuConfig of nearly 10 KiB that the driver decodes: a long per-device limit map."""
    limits = {str(device): "1Gi" for device in range(600)}
    parameters = {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "GpuConfig",
        "sharing": {"strategy": "MPS", "mpsConfig": {"defaultPerDevicePinnedMemoryLimit": limits}},
    }
    assert len(json.dumps(parameters)) <= PARAMETERS_MAX_LENGTH
    return parameters


def _largest_claim() -> dict[str, Any]:
    names = [f"r{index}" for index in range(REQUESTS_MAX)]
    return _claim(
        [[_body(count=2)] for _ in range(REQUESTS_MAX)],
        constraints=[{"requests": names, "matchAttribute": "gpu.nvidia.com/parentUUID"}] * CONSTRAINTS_MAX,
        config=[{"requests": names, "opaque": {"driver": "gpu.nvidia.com", "parameters": _nvidia_parameters()}}]
        * CONFIGS_MAX,
    )


def _pod_spec(containers: int, names_per_container: int, claims: int) -> dict[str, Any]:
    pod_claims = [{"name": f"claim{index}", "resourceClaimTemplateName": "slice"} for index in range(claims)]
    resources = {f"a.b/{index}": "1" for index in range(names_per_container)}
    return {
        "resourceClaims": pod_claims,
        "containers": [
            {
                "name": f"c{index}",
                "image": "i",
                "resources": {"limits": dict(resources), "claims": [{"name": claim["name"]} for claim in pod_claims]},
            }
            for index in range(containers)
        ],
    }


def _largest_workloads() -> list[dict[str, Any]]:
    spec = _pod_spec(containers=200, names_per_container=20, claims=32)
    template = {"metadata": {"annotations": {"dra-guard.io/ignore-DRA009": "x" * 200_000}}, "spec": spec}
    limit_range = {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "l", "namespace": "team-a"},
        "spec": {"limits": [{"type": "Container", "max": {f"example.com/r{n}": "1" for n in range(10)}}] * 1000},
    }
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "shared"},
        "spec": {"config": [{"opaque": {"driver": "gpu.nvidia.com", "parameters": _nvidia_parameters()}}] * 32},
    }
    # The largest waiver reasons annotations allow (256 KiB each, apimachinery's
    # TotalAnnotationSizeLimitB), blank so that the condition reads both to the end.
    blank = " " * (ANNOTATIONS_MAX_BYTES - len("dra-guard.io/ignore-DRA001"))
    blank_waivers = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "w", "namespace": "team-a", "annotations": {"dra-guard.io/ignore-DRA001": blank}},
        "spec": {
            "selector": {},
            "template": {"metadata": {"annotations": {"dra-guard.io/ignore-DRA001": blank}}, "spec": spec},
        },
    }
    return [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-a"}, "spec": spec},
        blank_waivers,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "team-a"},
            "spec": {"selector": {}, "template": template},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "j", "namespace": "team-a"},
            "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": template}}},
        },
        limit_range,
        device_class,
    ]


@pytest.mark.parametrize(
    "obj",
    [_largest_claim(), _claim([[_body()] * 2] * REQUESTS_MAX), *_largest_workloads()],
    ids=[
        "claim-32-requests-constraints-configs",
        "claim-64-alternatives",
        "pod",
        "deployment-blank-waivers",
        "deployment",
        "cronjob",
        "limitrange",
        "deviceclass",
    ],
)
def test_large_objects_stay_within_budget(obj: dict[str, Any]) -> None:
    """Claims with every list at its API maximum (requests, constraints, configs of 10 KiB
    parameters), up to 64 request bodies of the builders' selectors; pods and workloads of
    200 containers with 20 resource names and 32 claims each, a 200 KB waiver, blank waiver
    reasons of 256 KiB on the object and its pod template; a LimitRange of 1,000 items; a
    DeviceClass with 32 configs of 10 KiB."""
    assert _stored_bytes(obj) <= OBJECT_MAX_BYTES
    counted = costs(POLICIES, obj, _namespace() if obj["kind"] != "DeviceClass" else None)
    assert counted
    problems = [problem for cost in counted for problem in cost.problems()]
    assert not problems


# --- where the budget runs out ---------------------------------------------------------------


def _pinned_selector(length: int) -> str:
    """The builders' selector, padded with a true conjunct to `length` characters."""
    padding = " && 'x' == '" + "x" * (length - len(BUILDER_SELECTOR) - 13) + "'"
    selector = BUILDER_SELECTOR + padding
    assert len(selector) == length <= SELECTOR_MAX_LENGTH
    return selector


def _pod_with_names(names: int) -> dict[str, Any]:
    spec = _pod_spec(containers=100, names_per_container=names // 100, claims=0)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-a"}, "spec": spec}


def _pod_with_claims(claims: int, containers: int = 1) -> dict[str, Any]:
    spec = _pod_spec(containers=containers, names_per_container=0, claims=claims)
    # Claims named by resourceClaimName: the DRA009 policy leaves template claims to the webhook.
    spec["resourceClaims"] = [{"name": claim["name"], "resourceClaimName": "slice"} for claim in spec["resourceClaims"]]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-a"}, "spec": spec}


def _waived(obj: dict[str, Any], rule: str) -> dict[str, Any]:
    """A waiver is a matchCondition: a waived policy's validations cost nothing."""
    obj["metadata"]["annotations"][f"dra-guard.io/ignore-{rule}"] = "reviewed: a claim of many alternatives"
    return obj


#: (rule, an object just within the per-expression limit, one just beyond), as
#: docs/admission.md states them.
LIMITS = [
    ("DRA002", _claim([[_body(_pinned_selector(9_500))]]), _claim([[_body(_pinned_selector(10_240))]])),
    ("DRA002", _claim([[_body()] * 6] * 11), _claim([[_body()] * 8] * 9)),
    ("DRA003", _waived(_claim([[_body()] * 8] * 14), "DRA002"), _waived(_claim([[_body()] * 8] * 15), "DRA002")),
    ("DRA001", _pod_with_names(45_000), _pod_with_names(50_000)),
    ("DRA009", _pod_with_claims(950), _pod_with_claims(1_050)),
    ("DRA009", _pod_with_claims(100, containers=650), _pod_with_claims(100, containers=750)),
]


@pytest.mark.parametrize(
    ("rule", "within", "beyond"), LIMITS, ids=[f"{rule}-{n}" for n, (rule, _, _) in enumerate(LIMITS)]
)
def test_where_the_budget_runs_out(rule: str, within: dict[str, Any], beyond: dict[str, Any]) -> None:
    """Only these policies can exceed a limit, and only on objects this large; then the API
    server stops the evaluation, and failurePolicy Fail denies the object."""
    for obj, exceeds in ((within, False), (beyond, True)):
        assert _stored_bytes(obj) <= OBJECT_MAX_BYTES
        over = {cost.policy.split("-")[2].upper() for cost in costs(POLICIES, obj, _namespace()) if cost.problems()}
        assert over == ({rule} if exceeds else set()), over


def test_the_documented_limits_are_the_measured_ones() -> None:
    section = (REPO_ROOT / "docs" / "admission.md").read_text(encoding="utf-8").partition("## The CEL cost budget")[2]
    figures = ("9,550", "70 request bodies", "16,000", "115 request bodies", "45,000", "1,000 pod claims", "70,000")
    for figure in figures:
        assert figure in section, figure
