"""The Pulumi component under the official unit-test harness (pulumi.runtime mocks).

What the component registers must be what the cdk8s construct synthesizes and what the
builders return for the same spec: one set of builders, three authoring paths (README.md,
"Pulumi").
"""

from __future__ import annotations

import itertools
from typing import Any

import pulumi
import pytest
from cdk8s import Chart
from cdk8s import Testing as Cdk8sTesting  # not `Testing`: pytest would collect it

import constructs_dra
import pulumi_dra
from dra_guard import WorkloadSpec, build_isolated_workload
from dra_guard.contract.catalog import RESOURCE_API_VERSIONS, WORKLOAD_KINDS
from dra_guard.contract.scrubber import scrubbed
from dra_guard.contract.tags import normalise_numbers, verify_isolation_tag
from testkit.rulecases import UNSCRUBBED_ACCEPTED
from testkit.targets import runtime_config_for, target_for
from tests.slices import VENDOR_SLICES, with_count


class RecordingMocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.registered: list[tuple[str, str, dict[str, Any]]] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.registered.append((args.typ, args.name, args.inputs))
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        return {}


@pytest.fixture
def mocks() -> RecordingMocks:
    recording = RecordingMocks()
    pulumi.runtime.set_mocks(recording, preview=False)
    return recording


# Every option set, in both of its input forms where it has two (env, ports).
ARGUMENTS: dict[str, Any] = {
    "image": "registry.example/llm:2",
    "tenant": "tenant-a",
    "replicas": 2,
    "sanitization": "ZeroFillMemoryOnRelease",
    "container_name": "server",
    "command": ["serve"],
    "args": ["--port", "8000"],
    "ports": [8000, {"containerPort": 9090, "name": "metrics"}],
    "labels": {"team": "ml"},
    "resources": {"requests": {"cpu": "1", "memory": "4Gi"}},
}
ENV_FORMS = [{"MODE": "prod"}, [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "t"}}}]]
# One set of arguments per (api_version, kind), cycling through the vendors' slices, key
# or no key, each env form: as a user writes them, for all three paths.
CASES: list[dict[str, Any]] = [
    dict(
        ARGUMENTS,
        namespace="tenant-a",
        slice=with_count(VENDOR_SLICES[index % len(VENDOR_SLICES)][1], 1 + index % 3),
        workload_kind=kind,
        api_version=api_version,
        kubernetes_version=target_for(api_version),
        runtime_config=runtime_config_for(api_version),
        hmac_key="k" if index % 2 else None,
        env=ENV_FORMS[index % 2],
    )
    for index, (api_version, kind) in enumerate(itertools.product(RESOURCE_API_VERSIONS, WORKLOAD_KINDS))
]


@pytest.mark.parametrize("arguments", CASES, ids=[f"{case['api_version']}-{case['workload_kind']}" for case in CASES])
def test_three_authoring_paths_emit_identical_objects(mocks: RecordingMocks, arguments: dict[str, Any]) -> None:
    outputs: list[list[str]] = []

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def program() -> pulumi.Output[Any]:
        component = pulumi_dra.IsolatedAcceleratorWorkload("inference", **arguments)
        return pulumi.Output.all(component.template_name, component.workload_name, component.workload.urn).apply(
            outputs.append
        )

    program()
    chart = Chart(Cdk8sTesting.app(), "chart", namespace="elsewhere")  # the explicit namespace wins
    if not scrubbed(arguments["slice"].device_class):
        constructs_dra.enforce(chart, UNSCRUBBED_ACCEPTED)  # no scrubber is emitted for it (DRA016)
    constructs_dra.IsolatedAcceleratorWorkload(chart, "inference", **arguments)
    synthesized = Cdk8sTesting.synth(chart)
    spec = WorkloadSpec(name="inference", **arguments)
    built = build_isolated_workload(spec)

    # Pulumi registers a child once its dependencies are: the workload waits for the template,
    # a StatefulSet's Service waits for nothing.  Compare in the builders' order.
    order = ["ResourceClaimTemplate", spec.workload_kind, "Service"]
    registered = sorted(
        ((typ, inputs) for typ, _, inputs in mocks.registered if typ.startswith("kubernetes:")),
        key=lambda entry: order.index(entry[0].rpartition(":")[2]),
    )
    group, version = spec.api_version.split("/")
    workload_group = "batch/v1" if spec.workload_kind == "Job" else "apps/v1"
    service = ["kubernetes:core/v1:Service"] if spec.workload_kind == "StatefulSet" else []
    assert [typ for typ, _ in registered] == [
        f"kubernetes:{group}/{version}:ResourceClaimTemplate",
        f"kubernetes:{workload_group}:{spec.workload_kind}",
        *service,
    ]
    assert [normalise_numbers(inputs) for _, inputs in registered] == synthesized == list(built)
    assert mocks.registered[0][:2] == ("dra-guard:index:IsolatedAcceleratorWorkload", "inference")
    ((template_name, workload_name, workload_urn),) = outputs
    assert (template_name, workload_name) == ("inference-accelerator", "inference")
    # The workload is a child of the component, so `pulumi preview` groups them.
    assert "dra-guard:index:IsolatedAcceleratorWorkload$kubernetes:" in workload_urn
    # Numbers arrive as floats (count: 2.0) and the tag still verifies.
    assert verify_isolation_tag(registered[0][1], spec.hmac_key)


def test_claim_template_component_and_outputs(mocks: RecordingMocks) -> None:
    names: list[str] = []

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def program() -> pulumi.Output[Any]:
        template = pulumi_dra.IsolatedClaimTemplate(
            "tpu-slice", namespace="tenant-b", slice=pulumi_dra.AcceleratorSlice.google_tpu("v6e", 4)
        )
        return template.template_name.apply(names.append)

    program()
    assert names == ["tpu-slice"]
    (typ, _name, inputs) = next(entry for entry in mocks.registered if entry[0].startswith("kubernetes:"))
    assert typ == "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
    assert inputs["metadata"]["namespace"] == "tenant-b" and verify_isolation_tag(inputs)


def test_runtime_config_reaches_the_components(mocks: RecordingMocks) -> None:
    beta = "resource.k8s.io/v1beta2"
    mig = pulumi_dra.AcceleratorSlice.nvidia_mig("1g.10gb")
    # Refused before anything is registered, with the runtime-config the version needs.
    with pytest.raises(
        ValueError,
        match=r"^api_version: resource.k8s.io/v1beta2 is not served by a default Kubernetes 1.36 cluster; pass "
        r'runtime_config=\["resource.k8s.io/v1beta2=true"\] if your API server enables it \(--runtime-config\)$',
    ):
        pulumi_dra.IsolatedAcceleratorWorkload("w", namespace="ns", image="i", slice=mig, api_version=beta)
    with pytest.raises(ValueError, match=r"^api_version: resource.k8s.io/v1beta2 is not served by a default"):
        pulumi_dra.IsolatedClaimTemplate("t", namespace="ns", slice=mig, api_version=beta)
    assert mocks.registered == []

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def program() -> pulumi.Output[Any]:
        workload = pulumi_dra.IsolatedAcceleratorWorkload(
            "w", namespace="ns", image="i", slice=mig, api_version=beta, runtime_config=[f"{beta}=true"]
        )
        template = pulumi_dra.IsolatedClaimTemplate(
            "t", namespace="ns", slice=mig, api_version=beta, runtime_config=["api/beta=true"]
        )
        assert workload.spec.runtime_config == (f"{beta}=true",)
        assert template.spec.runtime_config == ("api/beta=true",)
        return pulumi.Output.all(workload.template_name, template.template_name)

    program()
    templates = [typ for typ, _, _ in mocks.registered if typ.endswith(":ResourceClaimTemplate")]
    assert templates == [f"kubernetes:{beta}:ResourceClaimTemplate"] * 2


def test_a_namespace_is_required(mocks: RecordingMocks) -> None:
    mig = pulumi_dra.AcceleratorSlice.nvidia_mig("1g.10gb")
    with pytest.raises(ValueError, match=r"^namespace: required: the isolation tag binds the namespace"):
        pulumi_dra.IsolatedClaimTemplate("t", namespace=None, slice=mig)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^namespace: required: a workload shares its claim template's namespace"):
        pulumi_dra.IsolatedAcceleratorWorkload("w", namespace=None, image="i", slice=mig)  # type: ignore[arg-type]
    assert mocks.registered == []


def test_scrub_before_use_is_refused_where_nothing_scrubs(mocks: RecordingMocks) -> None:
    """The same refusal as the builders': a TPU is not scrubbed, so ScrubBeforeUse would be untrue."""
    tpu = pulumi_dra.AcceleratorSlice.google_tpu("v6e", count=4)
    refused = r"^sanitization: ScrubBeforeUse declares that the scrubber erases the devices"
    with pytest.raises(ValueError, match=refused):
        pulumi_dra.IsolatedAcceleratorWorkload("w", namespace="ns", image="i", slice=tpu, sanitization="ScrubBeforeUse")
    with pytest.raises(ValueError, match=refused):
        pulumi_dra.IsolatedClaimTemplate("t", namespace="ns", slice=tpu, sanitization="ScrubBeforeUse")
    assert mocks.registered == []


def test_example_program_registers_compliant_resources(mocks: RecordingMocks) -> None:
    import runpy

    from dra_guard.engine.run import check_objects
    from tests.conftest import REPO_ROOT

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def program() -> pulumi.Output[Any]:
        runpy.run_path(str(REPO_ROOT / "examples" / "pulumi" / "__main__.py"))
        return pulumi.Output.from_input(None)

    program()
    objects = [inputs for typ, _, inputs in mocks.registered if typ.startswith("kubernetes:")]
    assert sorted(obj["kind"] for obj in objects) == [
        "Deployment",
        "Job",
        "ResourceClaimTemplate",
        "ResourceClaimTemplate",
    ]
    assert check_objects(objects).findings == []
