"""The cdk8s front end, through real cdk8s on jsii/Node: it emits exactly the builders' dicts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import cdk8s_plus_34 as kplus
import pytest
from cdk8s import ApiObject, ApiObjectMetadata, Chart, JsonPatch
from cdk8s import Testing as Cdk8sTesting  # not `Testing`: pytest would collect it

from constructs_dra import (
    AcceleratorSlice,
    IsolatedAcceleratorWorkload,
    IsolatedClaimTemplate,
    enforce,
    name_from_id,
    use_claim_template,
)
from dra_guard import claim_template, isolated_workload, verify_isolation_tag
from dra_guard.contract.catalog import RESOURCE_API_VERSIONS, WORKLOAD_KINDS
from dra_guard.contract.scrubber import scrubbed
from testkit.rulecases import UNSCRUBBED_ACCEPTED
from testkit.targets import runtime_config_for, target_for
from tests.conftest import REPO_ROOT
from tests.slices import VENDOR_SLICES, with_count

GOLDEN = REPO_ROOT / "tests" / "golden" / "cdk8s_app"
EXAMPLE = REPO_ROOT / "examples" / "cdk8s_app.py"

FULL_ARGUMENTS: dict[str, Any] = {
    "image": "registry.example/llm:2",
    "tenant": "tenant-a",
    "replicas": 3,
    "hmac_key": "k",
    "container_name": "server",
    "command": ["python", "-m", "serve"],
    "args": ["--port", "8000"],
    "env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "t"}}}],
    "ports": [8000, {"containerPort": 9090, "name": "metrics"}],
    "labels": {"team": "ml"},
    "resources": {"limits": {"memory": "4Gi"}, "requests": {"cpu": "500m", "memory": "4Gi"}},
}


@pytest.mark.parametrize("api_version", RESOURCE_API_VERSIONS)
@pytest.mark.parametrize("kind", WORKLOAD_KINDS)
@pytest.mark.parametrize(("slice_id", "accelerator"), [(s[0], s[1]) for s in VENDOR_SLICES[::2]])
def test_construct_synth_equals_builders(api_version: str, kind: str, slice_id: str, accelerator: Any) -> None:
    chart = Chart(Cdk8sTesting.app(), "chart", namespace="tenant-a")
    accelerator = with_count(accelerator, 2)
    arguments = dict(
        FULL_ARGUMENTS,
        slice=accelerator,
        workload_kind=kind,
        api_version=api_version,
        kubernetes_version=target_for(api_version),
        runtime_config=runtime_config_for(api_version),
    )
    if not scrubbed(accelerator.device_class):
        # The builders emit no scrubber for it, so its pods pass only where the class is
        # accepted unscrubbed (DRA016); without that, synth refuses them.
        enforce(chart, UNSCRUBBED_ACCEPTED)
    IsolatedAcceleratorWorkload(chart, "Inference", **arguments)
    expected = isolated_workload("inference", namespace="tenant-a", **arguments)
    assert Cdk8sTesting.synth(chart) == list(expected)
    assert (expected.service is not None) is (kind == "StatefulSet")


def test_namespace_defaults_to_the_chart_and_can_be_overridden() -> None:
    chart = Chart(Cdk8sTesting.app(), "chart", namespace="from-chart")
    IsolatedAcceleratorWorkload(chart, "a", image="i", slice=VENDOR_SLICES[0][1])
    IsolatedAcceleratorWorkload(chart, "b", image="i", slice=VENDOR_SLICES[0][1], namespace="explicit")
    namespaces = [obj["metadata"]["namespace"] for obj in Cdk8sTesting.synth(chart)]
    assert namespaces == ["from-chart", "from-chart", "explicit", "explicit"]
    for obj in Cdk8sTesting.synth(chart)[::2]:
        assert verify_isolation_tag(obj), "the tag must cover the namespace actually emitted"


def test_no_namespace_anywhere_is_refused_before_anything_joins_the_tree() -> None:
    # The isolation tag binds the namespace; without one, `kubectl apply -n` would decide it.
    chart = Chart(Cdk8sTesting.app(), "chart")
    with pytest.raises(
        ValueError,
        match=r"^namespace: required: a workload shares its claim template's namespace, .*; "
        r"give the chart or the construct a namespace$",
    ):
        IsolatedAcceleratorWorkload(chart, "a", image="i", slice=VENDOR_SLICES[0][1])
    with pytest.raises(
        ValueError,
        match=r"^namespace: required: the isolation tag binds the namespace the claim lands in, and a template "
        r"without one lands wherever kubectl apply -n puts it; give the chart or the construct a namespace$",
    ):
        IsolatedClaimTemplate(chart, "t", slice=VENDOR_SLICES[0][1])
    assert chart.node.children == []
    # The construct's own namespace is enough.
    IsolatedAcceleratorWorkload(chart, "b", image="i", slice=VENDOR_SLICES[0][1], namespace="explicit")
    assert [obj["metadata"]["namespace"] for obj in Cdk8sTesting.synth(chart)] == ["explicit", "explicit"]


def test_runtime_config_reaches_the_constructs() -> None:
    chart = Chart(Cdk8sTesting.app(), "chart", namespace="tenant-a")
    beta = "resource.k8s.io/v1beta2"
    with pytest.raises(
        ValueError,
        match=r"^api_version: resource.k8s.io/v1beta2 is not served by a default Kubernetes 1.36 cluster; pass "
        r'runtime_config=\["resource.k8s.io/v1beta2=true"\] if your API server enables it \(--runtime-config\)$',
    ):
        IsolatedAcceleratorWorkload(chart, "a", image="i", slice=VENDOR_SLICES[0][1], api_version=beta)
    with pytest.raises(ValueError, match=r"^api_version: resource.k8s.io/v1beta2 is not served by a default"):
        IsolatedClaimTemplate(chart, "t", slice=VENDOR_SLICES[0][1], api_version=beta)
    assert chart.node.children == []
    workload = IsolatedAcceleratorWorkload(
        chart, "b", image="i", slice=VENDOR_SLICES[0][1], api_version=beta, runtime_config=[f"{beta}=true"]
    )
    template = IsolatedClaimTemplate(
        chart, "t", slice=VENDOR_SLICES[0][1], api_version=beta, runtime_config=["api/beta=true"]
    )
    assert workload.spec.runtime_config == (f"{beta}=true",) and template.spec.runtime_config == ("api/beta=true",)
    assert [obj["apiVersion"] for obj in Cdk8sTesting.synth(chart)] == [beta, "apps/v1", beta]


def test_bad_arguments_raise_value_error_at_construction() -> None:
    chart = Chart(Cdk8sTesting.app(), "chart", namespace="ns")
    with pytest.raises(ValueError, match=r"^replicas"):
        IsolatedAcceleratorWorkload(chart, "a", image="i", slice=VENDOR_SLICES[0][1], replicas=0)
    with pytest.raises(ValueError, match=r"^id"):
        IsolatedAcceleratorWorkload(chart, "---", image="i", slice=VENDOR_SLICES[0][1])


@pytest.mark.parametrize(
    ("construct_id", "name"), [("Inference", "inference"), ("TenantA_LLM Server", "tenanta-llm-server")]
)
def test_names_come_from_the_construct_id(construct_id: str, name: str) -> None:
    assert name_from_id(construct_id) == name


def test_claim_template_construct_equals_builder() -> None:
    chart = Chart(Cdk8sTesting.app(), "chart", namespace="tenant-b")
    accelerator = AcceleratorSlice.google_tpu("v6e", count=4)
    beta = {"api_version": "resource.k8s.io/v1beta1", "runtime_config": ["resource.k8s.io/v1beta1=true"]}
    template = IsolatedClaimTemplate(chart, "Tpu", slice=accelerator, tenant="tenant-b", **beta)
    assert template.name == "tpu"
    expected = claim_template(name="tpu", slice=accelerator, namespace="tenant-b", tenant="tenant-b", **beta)
    assert Cdk8sTesting.synth(chart) == [expected]


def _pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj["spec"]
    if obj["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return spec["template"]["spec"] if "template" in spec else spec


@pytest.mark.parametrize(
    ("kind", "body"),
    [
        (
            "Pod",
            {
                "containers": [
                    {"name": "a", "image": "i"},
                    {"name": "b", "image": "i", "resources": {"limits": {"cpu": "1"}}},
                ]
            },
        ),
        ("Deployment", {"selector": {}, "template": {"spec": {"containers": [{"name": "a", "image": "i"}]}}}),
        (
            "CronJob",
            {
                "schedule": "@daily",
                "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "i"}]}}}},
            },
        ),
    ],
)
def test_use_claim_template_wires_raw_api_objects(kind: str, body: dict[str, Any]) -> None:
    chart = Chart(Cdk8sTesting.app(), "chart", namespace="ns")
    template = IsolatedClaimTemplate(chart, "gpu", slice=VENDOR_SLICES[0][1])
    raw = ApiObject(chart, "raw", api_version="v1", kind=kind, metadata=ApiObjectMetadata(name="raw"))
    raw.add_json_patch(JsonPatch.add("/spec", body))
    use_claim_template(raw, template)
    pod = _pod_spec(Cdk8sTesting.synth(chart)[1])
    assert pod["resourceClaims"] == [{"name": "accelerator", "resourceClaimTemplateName": "gpu"}]
    for container in pod["containers"]:
        assert container["resources"]["claims"] == [{"name": "accelerator"}]
    if kind == "Pod":
        assert pod["containers"][1]["resources"]["limits"] == {"cpu": "1"}


def test_use_claim_template_appends_to_existing_claims_and_selects_containers() -> None:
    chart = Chart(Cdk8sTesting.app(), "chart")
    raw = ApiObject(chart, "raw", api_version="v1", kind="Pod", metadata=ApiObjectMetadata(name="p"))
    raw.add_json_patch(
        JsonPatch.add(
            "/spec",
            {
                "resourceClaims": [{"name": "nic", "resourceClaimTemplateName": "nic"}],
                "containers": [
                    {"name": "main", "image": "i", "resources": {"claims": [{"name": "nic"}]}},
                    {"name": "sidecar", "image": "i"},
                ],
            },
        )
    )
    use_claim_template(raw, "gpu", claim_name="gpu", containers=["main"])
    (pod,) = Cdk8sTesting.synth(chart)
    assert [claim["name"] for claim in pod["spec"]["resourceClaims"]] == ["nic", "gpu"]
    assert pod["spec"]["containers"][0]["resources"]["claims"] == [{"name": "nic"}, {"name": "gpu"}]
    assert "resources" not in pod["spec"]["containers"][1]


def test_use_claim_template_wires_a_cdk8s_plus_deployment() -> None:
    chart = Chart(Cdk8sTesting.app(), "chart", namespace="ns")
    template = IsolatedClaimTemplate(chart, "slice", slice=VENDOR_SLICES[0][1])
    deployment = kplus.Deployment(chart, "web", containers=[kplus.ContainerProps(image="nginx", port_number=80)])
    use_claim_template(deployment, template)
    synthesized = next(obj for obj in Cdk8sTesting.synth(chart) if obj["kind"] == "Deployment")
    pod = synthesized["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [{"name": "accelerator", "resourceClaimTemplateName": "slice"}]
    resources = pod["containers"][0]["resources"]
    assert resources["claims"] == [{"name": "accelerator"}]
    assert resources["limits"]["cpu"], "cdk8s-plus' own resources must survive the patch"
    assert pod["securityContext"], "fields cdk8s-plus sets must survive the patch"


def test_use_claim_template_refuses_kinds_without_pods() -> None:
    chart = Chart(Cdk8sTesting.app(), "chart")
    raw = ApiObject(chart, "cm", api_version="v1", kind="ConfigMap", metadata=ApiObjectMetadata(name="c"))
    with pytest.raises(ValueError, match="ConfigMap"):
        use_claim_template(raw, "t")


def _synth_example(outdir: Path, hash_seed: str) -> dict[str, bytes]:
    environment = dict(os.environ, CDK8S_OUTDIR=str(outdir), PYTHONHASHSEED=hash_seed)
    subprocess.run([sys.executable, str(EXAMPLE)], check=True, env=environment, cwd=REPO_ROOT, timeout=120)
    return {path.name: path.read_bytes() for path in sorted(outdir.glob("*.yaml"))}


@pytest.mark.e2e
def test_example_synth_is_byte_identical_across_hash_seeds_and_matches_golden(tmp_path: Path) -> None:
    runs = [_synth_example(tmp_path / f"run-{seed}", seed) for seed in ("0", "1", "4242")]
    assert runs[0] == runs[1] == runs[2]
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(parents=True, exist_ok=True)
        for name, content in runs[0].items():
            (GOLDEN / name).write_bytes(content)
    golden = {path.name: path.read_bytes() for path in sorted(GOLDEN.glob("*.yaml"))}
    assert golden, "no golden files; run UPDATE_GOLDEN=1 pytest tests/test_cdk8s.py once and review them"
    assert runs[0] == golden, "synth output changed; review it and refresh with UPDATE_GOLDEN=1"


def test_example_app_has_a_template_and_workload_per_tenant() -> None:
    sys.path.insert(0, str(EXAMPLE.parent))
    try:
        from cdk8s_app import build_app  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(EXAMPLE.parent))
    app = build_app()
    kinds = {chart.node.id: [obj["kind"] for obj in chart.to_json()] for chart in app.charts}
    assert kinds == {
        "tenant-a": ["ResourceClaimTemplate", "Deployment"],
        "tenant-b": ["ResourceClaimTemplate", "Job"],
        "tenant-c": ["ResourceClaimTemplate", "StatefulSet", "Service"],
    }
