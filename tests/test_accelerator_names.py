"""Issue 20, points 2, 7 and 9: every accelerator name, fail closed; caps are not requests;
Argo placeholders in names do not hide what a manifest requests.

Point 2: the names other device plugins register (`dra_guard.contract.accelerator_names`, each family
with its source) are legacy requests as nvidia.com/gpu is, in pods as in the admission policy;
KAI Scheduler's sharing annotations ask for a GPU with no resource; the Spark operator's GPU
fields become limits; a name under an accelerator vendor's domain that dra-guard does not know
is unverifiable (medium) unless allowed.  Point 7: Karpenter's NodePool limits and KAI's Queue
quota cap, and a CRD's limits beside other fields may cap.  Point 9: an Argo manifest whose
names hold placeholders is read as Argo reads it, after filling them in.  The real files are in
tests/precision (SOURCES.md) and tests/fixtures/upstream.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from dra_guard.admission.emulate import admit
from dra_guard.contract.accelerator_names import FAMILIES, family_of, vendor_domain
from dra_guard.contract.findings import Finding, Severity
from dra_guard.engine.run import check_objects
from dra_guard.read.config_file import parse_config
from dra_guard.ruleapi.config import Config
from dra_guard.rules import RULES
from testkit.paths import REPO_ROOT
from tests.test_admission_parity import _policies, assert_parity

PRECISION = REPO_ROOT / "tests" / "precision"


def pod(*names: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "p", "namespace": "team-a"}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": dict.fromkeys(names, "1")}}]},
    }


def dra001(objects: list[dict[str, Any]], config: dict[str, Any] | None = None) -> list[Finding]:
    report = check_objects(objects, parse_config(config or {}, RULES) if config else Config())
    assert report.errors == []
    return [finding for finding in report.findings if finding.rule == "DRA001"]


def load(path: str) -> list[dict[str, Any]]:
    return [obj for obj in yaml.safe_load_all((PRECISION / path).read_text(encoding="utf-8")) if obj]


# --- point 2 ------------------------------------------------------------------------------------

#: Names each family registers, as their sources write them (accelerator_names cites them).
KNOWN = [
    "amd.com/cpx_nps4",
    "amd.com/spx_nps1",
    "amd.com/dpx_nps2",
    "gpu.intel.com/i915_monitoring",
    "gpu.intel.com/xe_monitoring",
    "gpu.intel.com/millicores",
    "gpu.intel.com/memory.max",
    "gpu.intel.com/tiles",
    "nvidia.com/GA102GL_A10",
    "nvidia.com/NVIDIA_A10-12Q",
    "nvidia.com/gpumem",
    "nvidia.com/gpumem-percentage",
    "nvidia.com/gpucores",
    "huawei.com/Ascend910B3",
    "metax-tech.com/sgpu",
    "mthreads.com/vgpu",
    "volcano.sh/vgpu-number",
    "volcano.sh/vgpu-memory",
    "volcano.sh/gpu-memory",
    "aliyun.com/gpu-mem",
    "tencent.com/vcuda-core",
    "tencent.com/vcuda-memory",
    "k8s.amazonaws.com/vgpu",
    "cloud-tpus.google.com/v2",
    "cloud-tpus.google.com/preemptible-v2",
    "cloud-tpus.google.com/v3",
    "cloud-tpus.google.com/preemptible-v3",
    "npu.intel.com/accel",
    # Koordinator's device share (koordinator-sh/koordinator apis/extension/device_share.go @ a7a1b76b).
    "koordinator.sh/gpu-core",
    "koordinator.sh/gpu-memory-ratio",
    "koordinator.sh/gpu.shared",
    "kubernetes.io/gpu-memory",
]


@pytest.mark.parametrize("name", KNOWN)
def test_point2_every_known_accelerator_name_is_a_critical_legacy_request(name: str) -> None:
    assert family_of(name) is not None
    (finding,) = dra001([pod(name)])
    assert finding.severity is Severity.CRITICAL and finding.path.endswith(name.replace("/", "~1"))
    assert family_of(name).what.split(" ")[0] in finding.message  # type: ignore[union-attr]
    assert_parity(pod(name))  # the admission policy denies it too


def test_point2_every_family_cites_its_source_and_says_what_it_is() -> None:
    for family in FAMILIES:
        assert " @ " in family.source and family.what
        assert family.names or family.prefixes or family.pattern is not None


@pytest.mark.parametrize(
    "name",
    [
        "nvidia.com/gpu-new",
        "amd.com/npu",
        "habana.ai/gaudi3",
        "google.com/tpu-v7",
        "huawei.com/npu",
        # A subdomain of google.com: its own domain (a name's domain ends at the slash).
        "cloud-tpus.google.com/v4",
        # Intel's FPGA plugin: accelerator functions and the mode names its webhook maps.
        "fpga.intel.com/af-d8424dc4a4a3c413f89e433683f9040b",
        "fpga.intel.com/arria10.dcp1.2-nlb3-orchestrated",
    ],
)
def test_point2_an_unknown_name_under_a_vendor_domain_is_unverifiable_not_passed(name: str) -> None:
    (finding,) = dra001([pod(name)])
    assert finding.severity is Severity.MEDIUM and "cannot verify" in finding.message and finding.cross_object
    # Tunable both ways: allowed (exactly or by pattern), or declared an accelerator.
    assert dra001([pod(name)], {"allowed-extended-resources": [name]}) == []
    assert dra001([pod(name)], {"allowed-extended-resources": [name.split("/", maxsplit=1)[0] + "/*"]}) == []
    (declared,) = dra001([pod(name)], {"extra-legacy-resources": [name]})
    assert declared.severity is Severity.CRITICAL


def test_point2_nic_names_and_other_domains_are_not_accelerators() -> None:
    names = ("nvidia.com/hostdev", "nvidia.com/rdma_shared_device_a", "nvidia.com/sriov_rdma", "example.com/widget")
    # Koordinator's colocation tiers and RDMA share the prefixes of its GPU shares.
    names += ("kubernetes.io/batch-cpu", "koordinator.sh/mid-memory", "koordinator.sh/rdma")
    for name in names:
        assert vendor_domain(name) is None or name.startswith("example.com")
    assert dra001([pod(*names)]) == []


def test_point2_a_device_class_mapping_an_unknown_vendor_name_decides_it() -> None:
    nic_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "nic"},
        "spec": {
            "extendedResourceName": "nvidia.com/nic",
            "selectors": [{"cel": {"expression": "device.driver == 'dra.net'"}}],
        },
    }
    assert dra001([pod("nvidia.com/nic"), nic_class]) == []


def test_point2_kubevirt_names_in_pods_are_caught_as_in_virtual_machines() -> None:
    (finding,) = dra001([pod("nvidia.com/TU104GL_Tesla_T4")])
    assert "KubeVirt" in finding.message and finding.severity is Severity.CRITICAL


@pytest.mark.parametrize(
    ("path", "annotation"),
    [
        ("kai-scheduler/gpu-sharing.yaml", "gpu-fraction"),
        ("kai-scheduler/gpu-memory.yaml", "gpu-memory"),
        ("kai-scheduler/gpu-sharing-with-mps.yaml", "gpu-fraction"),
        ("kai-scheduler/gpu-sharing-non-default-container.yaml", "gpu-fraction"),
    ],
)
def test_point2_kai_scheduler_sharing_annotations_ask_for_a_gpu(path: str, annotation: str) -> None:
    objects = load(path)
    (finding,) = dra001(objects)
    assert finding.path == f"/metadata/annotations/{annotation}" and "share of a GPU" in finding.message
    for obj in objects:
        assert_parity(obj)


def test_point2_sharing_annotations_on_a_pod_template_are_denied_in_admission() -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "team-a"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}, "annotations": {"gpu-memory": "2000"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
    }
    (finding,) = dra001([deployment])
    assert finding.path == "/spec/template/metadata/annotations/gpu-memory"
    policies, _ = _policies("")
    assert admit(policies, deployment)
    assert_parity(deployment)


def test_point2_spark_gpu_fields_become_limits() -> None:
    objects = load("data-on-eks/spark-rapids-app-gpus.yaml")
    paths = {finding.path for finding in dra001(objects)}
    assert "/spec/executor/gpu/name" in paths
    (finding,) = [f for f in dra001(objects) if f.path == "/spec/executor/gpu/name"]
    assert "Spark operator" in finding.message and finding.severity is Severity.CRITICAL


def test_point2_vllm_runtime_gpu_becomes_limits() -> None:
    """The operator's own sample: `resources.gpu: "1"` with `gpuType: nvidia.com/gpu`; without
    gpuType the operator uses nvidia.com/gpu, and the quantity's field is reported."""
    (sample,) = load("vllm-production-stack/vllmruntime-sample.yaml")
    (finding,) = dra001([sample])
    assert finding.path == "/spec/deploymentConfig/resources/gpuType" and finding.severity is Severity.CRITICAL
    assert "vLLM production-stack operator" in finding.message and "nvidia.com/gpu" in finding.message
    resources = sample["spec"]["deploymentConfig"]["resources"]
    del resources["gpuType"]
    (finding,) = dra001([sample])
    assert finding.path == "/spec/deploymentConfig/resources/gpu" and "nvidia.com/gpu" in finding.message
    del resources["gpu"]
    assert dra001([sample]) == []
    sample["spec"]["deploymentConfig"]["sidecarConfig"]["resources"].update(gpu="1", gpuType="nvidia.com/gpumem")
    (finding,) = dra001([sample])
    assert finding.path == "/spec/deploymentConfig/sidecarConfig/resources/gpuType" and "sidecar" in finding.message


def test_point2_dynamo_component_gpu_becomes_limits() -> None:
    """Dynamo's own example: `resources.limits.gpu: "1"` on a service becomes an
    nvidia.com/gpu limit (or one of `gpuType`); the `custom` names become limits and
    requests as written."""
    (graph,) = load("dynamo/vllm-agg.yaml")
    (finding,) = dra001([graph])
    assert finding.path == "/spec/services/VllmDecodeWorker/resources/limits/gpu"
    assert "nvidia.com/gpu" in finding.message and "Dynamo operator" in finding.message
    component = {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoComponentDeployment",
        "metadata": {"name": "c"},
        "spec": {
            "resources": {
                "limits": {"cpu": "2", "gpu": "1", "gpuType": "amd.com/gpu", "custom": {"nvidia.com/gpumem": "1"}},
                "requests": {"gpu": "1", "custom": {"volcano.sh/vgpu-number": "1"}},
            }
        },
    }
    assert sorted(f.path for f in dra001([component])) == [
        "/spec/resources/limits/custom/nvidia.com~1gpumem",
        "/spec/resources/limits/gpuType",
        "/spec/resources/requests/custom/volcano.sh~1vgpu-number",
    ]
    component["spec"]["resources"] = {"limits": {"cpu": "2"}, "requests": {"gpu": "1"}}
    assert dra001([component]) == []  # the operator does not use requests.gpu
    # Dynamo's disagg_hami.yaml (@ b5fa9e64): HAMi shares through a service's `device` field.
    graph["spec"]["services"]["VllmDecodeWorker"]["device"] = {
        "resources": {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "3000", "nvidia.com/gpucores": "50"},
        "schedulerName": "hami-scheduler",
    }
    device = "/spec/services/VllmDecodeWorker/device/resources/"
    assert {f.path for f in dra001([graph])} >= {f"{device}nvidia.com~1gpumem", f"{device}nvidia.com~1gpucores"}


@pytest.mark.parametrize(
    ("path", "resource", "profile"),
    [
        ("kubeai/deepseek-r1-distill-llama-8b-l4.yaml", "nvidia.com/gpu", "nvidia-gpu-l4"),
        ("kubeai/deepseek-r1-mi300x.yaml", "amd.com/gpu", "amd-gpu-mi300x"),
        ("kubeai/gemma-2b-it-tpu.yaml", "google.com/tpu", "google-tpu-v5e-1x1"),
    ],
)
def test_kubeai_chart_profiles_become_limits(path: str, resource: str, profile: str) -> None:
    """KubeAI's own Models: the operator multiplies the named profile's limits into the model
    server container (substratusai/kubeai model_controller.go getModelConfig @ 2f32ef49), and
    the chart's profiles name device-plugin accelerators; they passed with 0 findings."""
    (model,) = load(path)
    (finding,) = dra001([model])
    assert finding.path == "/spec/resourceProfile" and finding.severity is Severity.CRITICAL
    assert repr(resource) in finding.message and f"KubeAI's chart profile {profile!r}" in finding.message


def test_kubeai_profiles_that_give_nothing_and_profiles_that_cannot_be_verified() -> None:
    (model,) = load("kubeai/deepseek-r1-distill-llama-8b-l4.yaml")
    spec = model["spec"]
    # The chart's cpu profile (requests of cpu and memory), a multiple of zero, no profile.
    for value in ("cpu:2", "cpu-large:1", "nvidia-gpu-l4:0", "nvidia-gpu-l4:+00"):
        spec["resourceProfile"] = value
        assert dra001([model]) == [], value
    del spec["resourceProfile"]
    assert dra001([model]) == []
    # A profile of the cluster's own Helm values: what it holds no manifest shows.
    for value in ("nvidia-gpu-b200:1", "CPU:1", "team-profile"):
        spec["resourceProfile"] = value
        (finding,) = dra001([model])
        assert finding.path == "/spec/resourceProfile" and finding.severity is Severity.MEDIUM, value
        assert finding.message.startswith("cannot verify") and "Helm values" in finding.message
    # A Model of another API group is no KubeAI Model.
    model["apiVersion"] = "example.com/v1"
    assert dra001([model]) == []


def test_kaito_presets_ask_for_the_gpus_kaito_gives_their_pods() -> None:
    """KAITO's own examples: a preset model runs on nvidia.com/gpu that no field names
    (kaito-project/kaito preset_inferences.go GenerateInferencePodSpec, preset_tuning.go
    GenerateBasicTuningPodSpec @ 056b8280); under a mig partition with a profile, on
    nvidia.com/mig-<profile>. They passed with 0 findings."""
    cases = [
        ("kaito/kaito_workspace_phi_4_mini.yaml", "/inference/preset", "'nvidia.com/gpu'"),
        ("kaito/kaito_workspace_accelerator.yaml", "/inference/preset", "'nvidia.com/gpu'"),
        ("kaito/kaito_workspace_tuning_phi_3.yaml", "/tuning/preset", "'nvidia.com/gpu'"),
        (
            "kaito/kaito_inferenceset_mig_mixed_strategy.yaml",
            "/spec/template/inference/preset",
            "'nvidia.com/mig-2g.24gb'",
        ),
        ("kaito/kaito_multiroleinference_phi4_4.yaml", "/spec/model", "'nvidia.com/gpu'"),
    ]
    for path, pointer, resource in cases:
        (finding,) = dra001(load(path))
        assert finding.path == pointer and finding.severity is Severity.CRITICAL, path
        assert resource in finding.message and "KAITO" in finding.message, path
    (workspace,) = load("kaito/kaito_workspace_phi_4_mini.yaml")
    # A mig partition without a profile keeps nvidia.com/gpu (the single strategy).
    workspace["resource"]["partition"] = {"mode": "mig"}
    (finding,) = dra001([workspace])
    assert "'nvidia.com/gpu'" in finding.message
    workspace["resource"]["partition"]["profile"] = "1g.10gb"
    (finding,) = dra001([workspace])
    assert "'nvidia.com/mig-1g.10gb'" in finding.message
    # No preset: nothing asked (a Workspace of another API group is no KAITO Workspace).
    workspace["inference"]["preset"] = None
    assert dra001([workspace]) == []
    workspace["inference"]["preset"] = {"name": "phi-4-mini-instruct"}
    workspace["apiVersion"] = "example.com/v1"
    assert dra001([workspace]) == []
    # A Workspace's own pod template is read as a pod template, once.
    (custom,) = load("kaito/custom-model-deployment.yaml")
    assert {f.path for f in dra001([custom])} == {
        "/inference/template/spec/containers/0/resources/requests/nvidia.com~1gpu",
        "/inference/template/spec/containers/0/resources/limits/nvidia.com~1gpu",
    }


# --- point 7 ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "data-on-eks/nodepool-gpu-g6.yaml",
        "karpenter-provider-aws/100-cpu-limit.yaml",
        "kai-scheduler/default-queues.yaml",
    ],
)
def test_point7_karpenter_nodepool_limits_and_kai_queue_quotas_are_caps(path: str) -> None:
    assert dra001(load(path)) == []


def test_point7_limits_beside_other_fields_of_a_crd_may_cap_so_they_are_unverifiable() -> None:
    def crd(limits_owner: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": "example.com/v1", "kind": "Pool", "metadata": {"name": "p"}, "spec": limits_owner}

    (finding,) = dra001([crd({"limits": {"nvidia.com/gpu": 8}, "weight": 10})])
    assert finding.severity is Severity.MEDIUM and "requested or capped" in finding.message
    assert dra001([crd({"limits": {"cpu": 8}, "weight": 10})]) == []  # no accelerator named: nothing to say
    # Shaped as ResourceRequirements, it is a request.
    (request,) = dra001([crd({"resources": {"limits": {"nvidia.com/gpu": 1}, "requests": {"cpu": 1}}})])
    assert request.severity is Severity.CRITICAL


# --- point 9 ------------------------------------------------------------------------------------

MANIFEST = """\
apiVersion: batch/v1
kind: Job
metadata:
  generateName: {{workflow.name}}-train-
  labels: {app: {{workflow.name}}}
spec:
  template:
    spec:
      containers:
      - name: {{inputs.parameters.name}}
        image: {{inputs.parameters.image}}
        resources:
          limits:
            nvidia.com/gpu: {{inputs.parameters.gpus}}
"""


def workflow(manifest: str) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"generateName": "train-"},
        "spec": {
            "entrypoint": "t",
            "templates": [{"name": "t", "resource": {"action": "create", "manifest": manifest}}],
        },
    }


def test_point9_placeholders_in_names_do_not_hide_the_request() -> None:
    (finding,) = dra001([workflow(MANIFEST)])
    assert finding.severity is Severity.CRITICAL and "legacy accelerator resource 'nvidia.com/gpu'" in finding.message
    assert dra001([workflow(MANIFEST.replace("nvidia.com/gpu", "cpu"))]) == []


def test_point9_placeholders_where_they_matter_stay_unverifiable() -> None:
    name = MANIFEST.replace("nvidia.com/gpu", "{{inputs.parameters.resource}}")
    (finding,) = dra001([workflow(name)])
    assert finding.severity is Severity.MEDIUM and "placeholder" in finding.message
    whole = MANIFEST.replace("nvidia.com/gpu", "cpu") + "      nodeSelector: {{inputs.parameters.selector}}\n"
    (finding,) = dra001([workflow(whole)])
    assert finding.severity is Severity.MEDIUM and "/spec/template/spec/nodeSelector" in finding.message


@pytest.mark.parametrize(
    ("env", "reported"),
    [
        ({"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}, True),
        ({"name": "NVIDIA_VISIBLE_DEVICES", "value": "0,1"}, True),
        ({"name": "NVIDIA_VISIBLE_DEVICES", "value": "GPU-9c2f0d5e"}, True),
        ({"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}, True),
        ({"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}, False),
        ({"name": "NVIDIA_VISIBLE_DEVICES", "value": "none"}, False),
        ({"name": "NVIDIA_VISIBLE_DEVICES", "value": ""}, False),
        ({"name": "NVIDIA_VISIBLE_DEVICES"}, False),
        ({"name": "CUDA_VISIBLE_DEVICES", "value": "0"}, False),
    ],
    ids=["all", "indexes", "uuid", "value-from", "void", "none", "empty", "unset", "cuda-variable"],
)
def test_gpus_the_nvidia_runtime_gives_by_environment_are_reported(env: dict[str, Any], reported: bool) -> None:
    """NVIDIA_VISIBLE_DEVICES gives an unprivileged container GPUs with no resource and no
    claim where the node's toolkit honours it (its default: contract.runtime_devices); every
    front end passed such a pod. void, none and empty name nothing; CUDA_VISIBLE_DEVICES only
    picks among the GPUs the container already has."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "image": "i", "env": [env]}]},
    }
    assert bool(dra001([pod])) is reported
    policies, _ = _policies("")
    assert ("DRA001" in {denial.rule for denial in admit(policies, pod)}) is reported
    assert_parity(pod)


@pytest.mark.parametrize(
    ("key", "reported"),
    [
        ("nvidia.cdi.k8s.io/container.c", True),
        ("nvidia.cdi.k8s.io/pod", True),
        ("nvidia.cdi.k8s.io", True),
        ("nvidia.cdi.k8s.io/container.other", False),
    ],
)
def test_gpus_the_nvidia_runtime_injects_by_cdi_annotation_are_reported(key: str, reported: bool) -> None:
    """The toolkit's NRI plugin reads the container's key, then the pod's, then the bare one
    (containerd/nri GetEffectiveAnnotation); a key for a container the pod does not have gives
    nothing."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "annotations": {key: "nvidia.com/gpu=all"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    assert bool(dra001([pod])) is reported
    policies, _ = _policies("")
    assert ("DRA001" in {denial.rule for denial in admit(policies, pod)}) is reported
    assert_parity(pod)
