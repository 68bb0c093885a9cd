"""The ValidatingWebhookConfiguration sends the webhook only what can hold an accelerator
request or a dra-guard declaration, from the namespaces its mode selects, at a CEL cost the
API server's limits bound whatever the object: its matchConditions compiled and evaluated
with cel-python as the emulator does, their cost counted as cel-go counts it
(`dra_guard.admission.cost`), and the objects valid under the strict schemas."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from dra_guard import AcceleratorSlice, claim_template, isolated_workload
from dra_guard.admission.cost import PER_CALL_LIMIT, RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS, evaluate
from dra_guard.admission.deploy import AdmissionGuardSpec, WebhookDeployment, admission_guard_objects
from dra_guard.admission.emulate import CALL, REJECT, SKIP, admission_request, webhook_decision
from dra_guard.admission.policy import (
    ACCELERATOR_CONDITION,
    CLAIM_WRITER_CONDITION,
    MAX_SCANNED_ANNOTATIONS,
    MAX_SCANNED_CONTAINERS,
    MAX_SCANNED_RESOURCE_NAMES,
    RESERVATION_CONDITION,
    RESERVATION_WEBHOOK,
    webhook_configuration,
)
from dra_guard.admission.updates import UPDATE_CONDITION
from dra_guard.ruleapi.config import CLAIM_WRITERS

RELEASES = ("1.34.0", "1.35.0", "1.36.0", "1.37.0")
DRA_GUARD = str(Path(sys.executable).parent / "dra-guard")
CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIBconf\n-----END CERTIFICATE-----\n"
URL = {"url": "https://dra-guard.example/validate"}


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def pod(containers: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "tenant-a"},
        "spec": {"containers": containers or [{"name": "c", "image": "i"}], **spec},
    }


def container(
    requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None, **more: Any
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "c", "image": "i", "resources": resources, **more}


def deployment(
    pod_spec: dict[str, Any], object_annotations: dict[str, str] | None = None, **template_metadata: Any
) -> dict[str, Any]:
    """A Deployment; `template_metadata` goes to its pod template's metadata."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "tenant-a", "annotations": object_annotations or {}},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}, **template_metadata}, "spec": pod_spec},
        },
    }


def cronjob(pod_spec: dict[str, Any], template_annotations: dict[str, str] | None = None) -> dict[str, Any]:
    template: dict[str, Any] = {"spec": pod_spec}
    if template_annotations:
        template["metadata"] = {"annotations": template_annotations}
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "cj", "namespace": "tenant-a"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template}}},
    }


PLAIN = {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi", "hugepages-2Mi": "64Mi"}
GPU_POD_SPEC = {"containers": [container(limits={"nvidia.com/gpu": 1})]}
PLAIN_POD_SPEC = {"containers": [container(requests=PLAIN, limits=PLAIN)], "restartPolicy": "Never"}
TEMPLATE = claim_template(name="slice", slice=AcceleratorSlice.nvidia_mig("1g.10gb"), namespace="tenant-a")
CLAIM = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "c", "namespace": "tenant-a"},
    "spec": TEMPLATE["spec"]["spec"],
}
WORKLOAD = isolated_workload(
    name="infer", image="i", slice=AcceleratorSlice.nvidia_mig("1g.10gb"), namespace="tenant-a"
)

#: (object, whether it is sent to the webhook).
CASES: dict[str, tuple[dict[str, Any], bool]] = {
    "claim": (CLAIM, True),
    "claim-template": (TEMPLATE, True),
    "builder-workload": (next(obj for obj in WORKLOAD if obj["kind"] == "Deployment"), True),
    "plain-pod": (pod([container(requests=PLAIN, limits=PLAIN)]), False),
    "bare-pod": (pod(), False),
    "pod-device-plugin-gpu": (pod([container(limits={"nvidia.com/gpu": 1})]), True),
    "pod-extended-resource-request": (pod([container(requests={"cpu": "1", "example.com/fpga": 1})]), True),
    "pod-init-container-gpu": (
        pod(initContainers=[container(limits={"amd.com/gpu": 1})], containers=[container(requests=PLAIN)]),
        True,
    ),
    "pod-level-resources-gpu": (pod(resources={"limits": {"nvidia.com/gpu": 1}}), True),
    "pod-level-resources-plain": (pod(resources={"limits": {"cpu": "2", "memory": "2Gi"}}), False),
    "pod-resource-claims": (
        pod(resourceClaims=[{"name": "gpu", "resourceClaimName": "shared"}], containers=[container()]),
        True,
    ),
    "pod-container-resources-claims": (
        pod([{"name": "c", "image": "i", "resources": {"claims": [{"name": "x"}]}}]),
        True,
    ),
    "pod-dra-guard-annotation": (
        {**pod(), "metadata": {"name": "p", "namespace": "tenant-a", "annotations": {"dra-guard.io/x": "1"}}},
        True,
    ),
    "pod-other-annotation": (
        {**pod(), "metadata": {"name": "p", "namespace": "tenant-a", "annotations": {"example.com/dra-guard.io": "1"}}},
        False,
    ),
    "plain-deployment": (deployment(PLAIN_POD_SPEC), False),
    "gpu-deployment": (deployment(GPU_POD_SPEC), True),
    "deployment-object-annotation": (deployment(PLAIN_POD_SPEC, {"dra-guard.io/ignore-DRA001": "ok"}), True),
    "plain-cronjob": (cronjob(PLAIN_POD_SPEC), False),
    "gpu-cronjob": (cronjob(GPU_POD_SPEC), True),
    "cronjob-template-annotation": (cronjob(PLAIN_POD_SPEC, {"dra-guard.io/sanitization": "x"}), True),
    "plain-pod-template": (
        {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}, "template": {"spec": PLAIN_POD_SPEC}},
        False,
    ),
    "gpu-pod-template": (
        {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}, "template": {"spec": GPU_POD_SPEC}},
        True,
    ),
    # Workload-aware scheduling (alpha): a group's claims are shared by every pod of it (DRA005).
    "pod-group": (
        {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {"name": "workers", "namespace": "tenant-a"},
            "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "slice"}]},
        },
        True,
    ),
    # Of scheduling.k8s.io only the groups: the rules name no PriorityClass.
    "priority-class": (
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1},
        False,
    ),
    # Past the scanned sizes the object is sent unexamined: the cost stays bounded.
    "many-resource-names": (
        pod([container(requests={f"hugepages-{n}Mi": "2Mi" for n in range(MAX_SCANNED_RESOURCE_NAMES + 1)})]),
        True,
    ),
    "many-containers": (
        pod([{**container(requests=PLAIN), "name": f"c{n}"} for n in range(MAX_SCANNED_CONTAINERS + 1)]),
        True,
    ),
    "many-annotations": (
        {
            **pod(),
            "metadata": {
                "name": "p",
                "namespace": "tenant-a",
                "annotations": {f"a{n}": "" for n in range(MAX_SCANNED_ANNOTATIONS + 1)},
            },
        },
        True,
    ),
}
CASES["deployment-template-annotation"] = (
    deployment(PLAIN_POD_SPEC, annotations={"dra-guard.io/tenant": "a"}),
    True,
)


GPU_POD = CASES["pod-device-plugin-gpu"][0]


def configuration(**options: Any) -> dict[str, Any]:
    return webhook_configuration(URL, CA_PEM.encode(), **options)


def test_every_match_condition_compiles_with_cel_python() -> None:
    import celpy

    environment = celpy.Environment()
    entry, _ = configuration()["webhooks"]  # the objects' entry, then the reservations'
    names = [condition["name"] for condition in entry["matchConditions"]]
    assert names == [ACCELERATOR_CONDITION, UPDATE_CONDITION, CLAIM_WRITER_CONDITION]
    for condition in entry["matchConditions"]:
        environment.compile(condition["expression"])


@pytest.mark.parametrize("case", list(CASES))
def test_the_webhook_gets_only_what_can_request_accelerators(case: str) -> None:
    obj, sent = CASES[case]
    assert webhook_decision(configuration(), obj) == (CALL if sent else SKIP)


@pytest.mark.parametrize("case", list(CASES))
def test_the_cost_model_agrees_and_stays_within_the_api_servers_limits(case: str) -> None:
    obj, sent = CASES[case]
    entry, _ = configuration()["webhooks"]  # the objects' entry, then the reservations'
    activation = {"object": obj, "oldObject": None, "request": admission_request(obj)}
    costs = []
    for condition in entry["matchConditions"]:
        result = evaluate(condition["expression"], activation)
        costs.append(result.cost)
        if condition["name"] == ACCELERATOR_CONDITION:
            assert result.value is sent
    assert max(costs) <= PER_CALL_LIMIT and sum(costs) <= RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS


def _largest_unsent_pod_spec() -> dict[str, Any]:
    """Everything the condition looks at, each at the largest size it still examines, and
    nothing that would send it (so every element is visited)."""
    names = {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"}
    names |= {f"hugepages-{n}Mi": "2Mi" for n in range(MAX_SCANNED_RESOURCE_NAMES - len(names))}
    half = MAX_SCANNED_CONTAINERS // 2
    return {
        "initContainers": [{**container(requests=names, limits=names), "name": f"i{n}"} for n in range(half)],
        "containers": [{**container(requests=names, limits=names), "name": f"c{n}"} for n in range(half)],
        "resources": {"requests": names, "limits": names},
    }


def test_the_worst_case_costs_a_bounded_amount() -> None:
    """The most expensive object the condition examines in full, and a huge one: both well
    within the per-expression limit, so no object can make the API server fail the call
    (which would refuse it under Fail, or skip the webhook under Ignore)."""
    annotations = {f"example.com/a{n}": "x" * 200 for n in range(MAX_SCANNED_ANNOTATIONS)}
    worst = deployment(_largest_unsent_pod_spec(), annotations)
    worst["spec"]["template"]["metadata"]["annotations"] = dict(annotations)
    entry, _ = configuration()["webhooks"]  # the objects' entry, then the reservations'
    (condition,) = (c for c in entry["matchConditions"] if c["name"] == ACCELERATOR_CONDITION)
    result = evaluate(condition["expression"], {"object": worst, "request": admission_request(worst)})
    assert result.value is False
    assert result.cost < PER_CALL_LIMIT // 10, result.cost
    huge = copy.deepcopy(worst)
    huge["metadata"]["annotations"] = {f"k{n}": "" for n in range(50_000)}
    huge["spec"]["template"]["spec"]["containers"] *= 100
    result = evaluate(condition["expression"], {"object": huge, "request": admission_request(huge)})
    assert result.value is True and result.cost < PER_CALL_LIMIT // 10, result.cost


def test_the_control_planes_claims_skip_the_webhook_and_templates_do_not() -> None:
    for writer in CLAIM_WRITERS:
        user = {"username": writer}
        assert webhook_decision(configuration(), CLAIM, user_info=user) == SKIP
        assert webhook_decision(configuration(), CLAIM, user_info=user, operation="UPDATE") == SKIP
        assert webhook_decision(configuration(), TEMPLATE, user_info=user) == CALL
        assert webhook_decision(configuration(), CASES["gpu-deployment"][0], user_info=user) == CALL
    assert webhook_decision(configuration(), CLAIM, user_info={"username": "alice"}) == CALL
    assert webhook_decision(configuration(claim_writers=()), CLAIM, user_info={"username": CLAIM_WRITERS[0]}) == CALL


def test_deletes_and_connects_are_never_sent() -> None:
    assert webhook_decision(configuration(), CLAIM, operation="DELETE") == SKIP


def test_a_match_condition_error_follows_the_failure_policy() -> None:
    """What the emulator does when a matchCondition errs (here one added that reads a field
    the pod lacks): Fail refuses the request, Ignore skips the webhook; a false condition
    skips it under either."""
    for policy, errs in (("Fail", REJECT), ("Ignore", SKIP)):
        chosen = configuration(failure_policy=policy)
        chosen["webhooks"][0]["matchConditions"].append({"name": "errs", "expression": "object.spec.missing == 1"})
        assert webhook_decision(chosen, GPU_POD) == errs
        assert webhook_decision(chosen, CASES["plain-pod"][0]) == SKIP


# --- namespaces --------------------------------------------------------------------------


def in_namespace(obj: dict[str, Any], name: str) -> dict[str, Any]:
    moved = copy.deepcopy(obj)
    moved["metadata"]["namespace"] = name
    return moved


def test_all_namespaces_but_kube_system_and_the_webhooks_own() -> None:
    chosen = configuration(exempt_namespaces=("dra-guard",))
    entry, _ = chosen["webhooks"]  # the objects' entry, then the reservations'
    assert "matchLabels" not in entry["namespaceSelector"]
    assert webhook_decision(chosen, in_namespace(GPU_POD, "tenant-a"), namespace("tenant-a")) == CALL
    assert webhook_decision(chosen, in_namespace(GPU_POD, "kube-system"), namespace("kube-system")) == SKIP
    assert webhook_decision(chosen, in_namespace(GPU_POD, "dra-guard"), namespace("dra-guard")) == SKIP


def test_opt_in_namespaces_only_with_the_label_and_never_the_exempt_ones() -> None:
    chosen = configuration(namespaces="opt-in", exempt_namespaces=("dra-guard",))
    entry, _ = chosen["webhooks"]  # the objects' entry, then the reservations'
    assert entry["namespaceSelector"]["matchLabels"] == {"dra-guard.io/enforce": "true"}
    opted = {"dra-guard.io/enforce": "true"}
    assert webhook_decision(chosen, GPU_POD, namespace("tenant-a")) == SKIP
    assert webhook_decision(chosen, GPU_POD, namespace("tenant-a", **{"dra-guard.io/enforce": "false"})) == SKIP
    assert webhook_decision(chosen, GPU_POD, namespace("tenant-a", **opted)) == CALL
    assert webhook_decision(chosen, in_namespace(GPU_POD, "kube-system"), namespace("kube-system", **opted)) == SKIP
    assert webhook_decision(chosen, in_namespace(GPU_POD, "dra-guard"), namespace("dra-guard", **opted)) == SKIP
    custom = configuration(namespaces="opt-in", namespace_label=("tenants.example.com/gpu", "yes"))
    assert webhook_decision(custom, GPU_POD, namespace("tenant-a", **{"tenants.example.com/gpu": "yes"})) == CALL
    assert webhook_decision(custom, GPU_POD, namespace("tenant-a", **opted)) == SKIP


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"namespaces": "some"}, r"^namespaces: must be one of all, opt-in"),
        ({"failure_policy": "Retry"}, r"^failure_policy: must be one of Fail, Ignore"),
    ],
)
def test_bad_modes_are_refused_by_name(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        configuration(**options)


# --- the deployed configuration ----------------------------------------------------------

DEPLOYMENTS = {
    "default": {},
    "opt-in": {"namespaces": "opt-in"},
    "opt-in-custom-label-ignore": {
        "namespaces": "opt-in",
        "namespace_label": "tenants.example.com/gpu=yes",
        "failure_policy": "Ignore",
    },
}


def deployed(**settings: Any) -> dict[str, Any]:
    webhook = WebhookDeployment(image="i", namespace="dra-guard", tls_secret="t", ca_bundle=CA_PEM, **settings)
    objects = admission_guard_objects(AdmissionGuardSpec(webhook=webhook))
    (found,) = (obj for obj in objects if obj["kind"] == "ValidatingWebhookConfiguration")
    return found


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("name", list(DEPLOYMENTS))
def test_the_configuration_is_valid_in_strict_mode(name: str, release: str) -> None:
    kubernetes_validate.validate(deployed(**DEPLOYMENTS[name]), release, strict=True)
    for options in ({}, {"namespaces": "opt-in", "failure_policy": "Ignore"}, {"claim_writers": ()}):
        kubernetes_validate.validate(configuration(**options), release, strict=True)


def test_the_deployed_configuration_follows_its_settings() -> None:
    default, _ = deployed()["webhooks"]  # the objects' entry, then the reservations'
    assert default["failurePolicy"] == "Fail"
    assert default["namespaceSelector"] == {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["dra-guard", "kube-system"]}
        ]
    }
    custom, _ = deployed(**DEPLOYMENTS["opt-in-custom-label-ignore"])[
        "webhooks"
    ]  # the objects' entry, then the reservations'
    assert custom["failurePolicy"] == "Ignore"
    assert custom["namespaceSelector"]["matchLabels"] == {"tenants.example.com/gpu": "yes"}
    assert custom["namespaceSelector"]["matchExpressions"] == default["namespaceSelector"]["matchExpressions"]
    assert custom["matchConditions"] == default["matchConditions"] == configuration()["webhooks"][0]["matchConditions"]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"namespaces": "optin"}, r"^namespaces: must be one of all, opt-in; got 'optin'"),
        ({"namespace_label": "enforce"}, r"^namespace_label: 'enforce' is not KEY=VALUE"),
        ({"namespace_label": "bad key!=true"}, r"^namespace_label: "),
        (
            {"namespace_label": "dra-guard.io/enforce=no_"},
            r"^namespace_label\['dra-guard.io/enforce'\]: 'no_' \(str\) is not a valid label value",
        ),
        ({"failure_policy": "fail"}, r"^failure_policy: must be one of Fail, Ignore; got 'fail'"),
    ],
)
def test_bad_webhook_settings_are_refused_by_name(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        WebhookDeployment(image="i", namespace="dra-guard", tls_secret="t", ca_bundle=CA_PEM, **settings)


def run(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    (cwd / "ca.pem").write_text(CA_PEM)
    command = [DRA_GUARD, "admission-policy", *arguments]
    return subprocess.run(command, capture_output=True, text=True, check=False, cwd=cwd)


@pytest.mark.e2e
def test_the_cli_flags_reach_a_webhook_given_by_url(tmp_path: Path) -> None:
    flags = ["--webhook", URL["url"], "--ca-bundle", "ca.pem", "--webhook-namespaces", "opt-in"]
    flags += ["--webhook-namespace-label", "tenants.example.com/gpu=yes", "--webhook-failure-policy", "Ignore"]
    result = run(*flags, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    found = list(yaml.safe_load_all(result.stdout))[-1]
    assert found == configuration(
        namespaces="opt-in", namespace_label=("tenants.example.com/gpu", "yes"), failure_policy="Ignore"
    )


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--webhook-namespaces", "opt-in"], "--webhook-namespaces: only used with --webhook or --deploy-webhook"),
        (
            ["--webhook", URL["url"], "--ca-bundle", "ca.pem", "--webhook-namespace-label", "x"],
            "--webhook-namespace-label: 'x' is not KEY=VALUE",
        ),
        (["--webhook-failure-policy", "Never"], "invalid choice"),
    ],
)
def test_the_cli_refuses_bad_webhook_modes(tmp_path: Path, arguments: list[str], message: str) -> None:
    result = run(*arguments, cwd=tmp_path)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr, result.stderr


def _reserved_for(*uids: str) -> dict[str, Any]:
    return {"status": {"reservedFor": [{"resource": "pods", "name": f"p-{uid}", "uid": uid} for uid in uids]}}


@pytest.mark.parametrize(
    ("old", "new", "sent"),
    [
        ({}, _reserved_for("a"), True),  # the first reservation (with the allocation)
        (_reserved_for("a"), _reserved_for("a", "b"), True),  # another pod shares the claim
        (_reserved_for("a"), _reserved_for("a"), False),  # a driver's device status, say
        (_reserved_for("a", "b"), _reserved_for("a"), False),  # a pod is done with it
        ({}, {"status": {"allocation": {}}}, False),
        # A PodGroup (KEP-5729): every pod of the group gets the claim.
        (
            {},
            {"status": {"reservedFor": [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "uid": "g"}]}},
            True,
        ),
    ],
)
def test_the_reservations_entry_gets_only_updates_that_reserve_for_another_consumer(
    old: dict[str, Any], new: dict[str, Any], sent: bool
) -> None:
    import celpy

    _, entry = configuration()["webhooks"]
    assert entry["name"] == RESERVATION_WEBHOOK and entry["rules"][0]["resources"] == ["resourceclaims/status"]
    assert entry["rules"][0]["operations"] == ["UPDATE"]
    ((condition),) = entry["matchConditions"]
    assert condition["name"] == RESERVATION_CONDITION
    environment = celpy.Environment()
    program = environment.program(environment.compile(condition["expression"]))
    assert bool(program.evaluate({"object": celpy.json_to_cel(new), "oldObject": celpy.json_to_cel(old)})) is sent
    # The API allows 256 reservations: comparing 256 with 256 stays within a call's cost.
    worst = evaluate(
        condition["expression"],
        {"object": _reserved_for(*map(str, range(256))), "oldObject": _reserved_for(*map(str, range(1, 257)))},
    )
    assert worst.cost < PER_CALL_LIMIT / 2
