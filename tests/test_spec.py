"""The workload spec is the one list of arguments: the keyword types, the entry points and
the README follow it, and a spec, once made, stays valid."""

from __future__ import annotations

import dataclasses
import os
import re
import textwrap
import typing
from collections.abc import Callable
from typing import Any

import pytest
from cdk8s import Chart
from cdk8s import Testing as Cdk8sTesting  # not `Testing`: pytest would collect it

import constructs_dra
import pulumi_dra
from dra_guard import (
    AcceleratorSlice,
    ClaimOptions,
    ClaimSpec,
    WorkloadOptions,
    WorkloadSpec,
    build_isolated_workload,
    claim_template,
    isolated_workload,
    workload,
)
from dra_guard.contract.served import served_claim_api_versions
from tests.conftest import REPO_ROOT

MIG = AcceleratorSlice.nvidia_mig("1g.10gb")
# What the entry points take besides the options: where name and namespace come from.
IDENTITY = {"name", "namespace"}


@pytest.mark.parametrize(("options", "spec"), [(ClaimOptions, ClaimSpec), (WorkloadOptions, WorkloadSpec)])
def test_keyword_types_list_every_spec_field_with_its_type(options: Any, spec: Any) -> None:
    # mypy checks each key against the spec's constructor; this checks the other way round.
    spec_fields = [field for field in dataclasses.fields(spec) if field.name not in IDENTITY]
    spec_types = typing.get_type_hints(spec)
    option_types = typing.get_type_hints(options)
    assert list(option_types) == [field.name for field in spec_fields]
    assert {name: spec_types[name] for name in option_types} == option_types
    required = {field.name for field in spec_fields if field.default is dataclasses.MISSING}
    assert options.__required_keys__ == required


def _spec_default(field: dataclasses.Field[Any]) -> str:
    """The default as Python source: `None`, `1`, `"Deployment"`."""
    return f'"{field.default}"' if isinstance(field.default, str) else repr(field.default)


def _default_cell(field: dataclasses.Field[Any]) -> str:
    return "required" if field.default is dataclasses.MISSING else f"`{_spec_default(field)}`"


def render_workload_arguments() -> str:
    """The README's block for `IsolatedAcceleratorWorkload`, from `WorkloadSpec`."""
    fields = [field for field in dataclasses.fields(WorkloadSpec) if field.name != "name"]
    # Required ones first, as a reader expects; otherwise in the spec's order.
    fields.sort(key=lambda field: field.default is not dataclasses.MISSING)
    arguments = ", ".join(
        field.name if field.default is dataclasses.MISSING else f"{field.name}={_spec_default(field)}"
        for field in fields
    )
    signature = textwrap.fill(
        f"IsolatedAcceleratorWorkload(scope, id, *, {arguments})", width=88, subsequent_indent="    "
    )
    rows = [f"| `{field.name}` | {_default_cell(field)} | {field.metadata['doc']} |" for field in fields]
    return "\n".join(["```python", signature, "```", "", "| argument | default | meaning |", "|---|---|---|", *rows])


README_BLOCK = re.compile(
    r"<!-- workload-arguments: generated from dra_guard.WorkloadSpec by tests/test_spec.py -->\n"
    r"(.*?)<!-- /workload-arguments -->",
    re.DOTALL,
)


def test_readme_signature_is_the_specs() -> None:
    readme_path = REPO_ROOT / "README.md"
    readme = readme_path.read_text(encoding="utf-8")
    match = README_BLOCK.search(readme)
    assert match, "README.md lost its workload-arguments markers"
    expected = render_workload_arguments() + "\n"
    if os.environ.get("UPDATE_README") == "1":
        readme_path.write_text(readme[: match.start(1)] + expected + readme[match.end(1) :], encoding="utf-8")
        return
    assert match.group(1) == expected, (
        "README.md's IsolatedAcceleratorWorkload arguments differ from WorkloadSpec; "
        "refresh them with UPDATE_README=1 pytest tests/test_spec.py"
    )


def test_readme_rows_and_signature_are_the_spec_fields() -> None:
    # Read back from the README itself, independently of the renderer above.
    match = README_BLOCK.search((REPO_ROOT / "README.md").read_text(encoding="utf-8"))
    assert match
    block = match.group(1)
    rows = re.findall(r"^\| `(\w+)` \| (.+?) \| (.+) \|$", block, re.MULTILINE)
    signature = re.search(r"IsolatedAcceleratorWorkload\(scope, id, \*, (.*?)\)\n", block, re.DOTALL)
    assert signature
    parameters = [part.strip() for part in signature.group(1).split(",")]
    spec_fields = {field.name: field for field in dataclasses.fields(WorkloadSpec) if field.name != "name"}
    assert sorted(name for name, _, _ in rows) == sorted(spec_fields)
    for name, default, doc in rows:
        field = spec_fields[name]
        assert doc == field.metadata["doc"]
        if field.default is dataclasses.MISSING:
            assert default == "required" and name in parameters
        else:
            assert default.strip("`") == _spec_default(field) and f"{name}={_spec_default(field)}" in parameters
    assert len(parameters) == len(spec_fields)


def _cdk8s_workload(**arguments: Any) -> object:
    return constructs_dra.IsolatedAcceleratorWorkload(Chart(Cdk8sTesting.app(), "c"), "w", **arguments)


def _cdk8s_template(**arguments: Any) -> object:
    return constructs_dra.IsolatedClaimTemplate(Chart(Cdk8sTesting.app(), "c"), "t", **arguments)


ENTRY_POINTS: list[tuple[str, Callable[..., object], dict[str, Any]]] = [
    ("isolated_workload", lambda **a: isolated_workload("w", **a), {"image": "i"}),
    ("workload", lambda **a: workload("w", **a), {"image": "i"}),
    ("claim_template", lambda **a: claim_template(name="t", **a), {}),
    ("IsolatedAcceleratorWorkload", _cdk8s_workload, {"image": "i"}),
    ("IsolatedClaimTemplate", _cdk8s_template, {}),
    # The check runs before Pulumi is touched, so no mocks are needed for these two.
    (
        "IsolatedAcceleratorWorkload",
        lambda **a: pulumi_dra.IsolatedAcceleratorWorkload("w", namespace="ns", **a),
        {"image": "i"},
    ),
    ("IsolatedClaimTemplate", lambda **a: pulumi_dra.IsolatedClaimTemplate("t", namespace="ns", **a), {}),
]


@pytest.mark.parametrize(
    ("entry_point", "build", "required"),
    ENTRY_POINTS,
    ids=[
        "builders-workload",
        "builders-workload-only",
        "builders-template",
        "cdk8s",
        "cdk8s-template",
        "pulumi",
        "pulumi-template",
    ],
)
def test_unknown_keywords_are_refused_by_name(
    entry_point: str, build: Callable[..., object], required: dict[str, Any]
) -> None:
    with pytest.raises(
        TypeError, match=rf"^tennant: not an argument of {entry_point} \(did you mean tenant\?\); it takes "
    ):
        build(slice=MIG, tennant="a", **required)
    with pytest.raises(
        TypeError,
        match=rf"^sanitisation, labls: not arguments of {entry_point} \(did you mean sanitization, labels\?\)",
    ):
        build(slice=MIG, sanitisation="WipeOnDeallocate", labls={}, **required)


def test_the_cdk8s_workload_name_comes_from_the_id_only() -> None:
    with pytest.raises(
        TypeError, match=r"^name: not an argument of IsolatedAcceleratorWorkload; it takes namespace, slice"
    ):
        _cdk8s_workload(name="other", image="i", slice=MIG)


def test_a_spec_cannot_be_edited_into_an_invalid_one() -> None:
    spec = WorkloadSpec(
        name="app",
        namespace="ns",
        image="i",
        slice=MIG,
        labels={"team": "ml"},
        env={"A": "1"},
        ports=[80],
        command=["serve"],
        runtime_config=["resource.k8s.io/v1beta2=true"],
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.replicas = 0  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.labels["team"] = "not valid!"  # type: ignore[index]
    with pytest.raises(TypeError):
        spec.env[0]["value"] = "changed"  # type: ignore[index]
    with pytest.raises(AttributeError):
        spec.command.append("--debug")  # type: ignore[union-attr]
    with pytest.raises(AttributeError):
        spec.runtime_config.append("api/all=false")  # type: ignore[union-attr]
    # replace() makes a new spec and validates it like any other.
    with pytest.raises(ValueError, match=r"^replicas"):
        dataclasses.replace(spec, replicas=0)
    assert dataclasses.replace(spec, replicas=2).replicas == 2


def test_a_spec_keeps_its_own_copies_and_hides_the_key() -> None:
    labels = {"team": "ml"}
    env = [{"name": "A", "value": "1"}]
    spec = WorkloadSpec(name="app", namespace="ns", image="i", slice=MIG, labels=labels, env=env, hmac_key="secret-key")
    labels["team"] = "changed"
    env[0]["value"] = "changed"
    objects = build_isolated_workload(spec)
    assert objects.workload["metadata"]["labels"]["team"] == "ml"
    assert objects.workload["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]
    # The manifests are plain dicts of their own: editing one leaves the spec as it was.
    objects.workload["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = "edited"
    assert build_isolated_workload(spec) != objects
    assert "secret-key" not in repr(spec) and "secret-key" not in repr(spec.claim)


def test_the_claim_spec_of_a_workload_shares_its_fields() -> None:
    beta = {"api_version": "resource.k8s.io/v1beta2", "runtime_config": ("resource.k8s.io/v1beta2=true",)}
    spec = WorkloadSpec(
        name="app", namespace="ns", image="i", slice=MIG, tenant="t", hmac_key=b"k", labels={"a": "b"}, **beta
    )
    assert spec.claim == ClaimSpec(
        name="app-accelerator", namespace="ns", slice=MIG, tenant="t", hmac_key=b"k", labels={"a": "b"}, **beta
    )


# --- A namespace is required: the isolation tag binds it ---------------------------------

TEMPLATE_WITHOUT_NAMESPACE = (
    r"^namespace: required: the isolation tag binds the namespace the claim lands in, and a template without one "
    r"lands wherever kubectl apply -n puts it"
)
WORKLOAD_WITHOUT_NAMESPACE = (
    r"^namespace: required: a workload shares its claim template's namespace, which the template's isolation tag "
    r"binds, and objects without one land wherever kubectl apply -n puts them"
)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ClaimSpec(name="t", slice=MIG), TEMPLATE_WITHOUT_NAMESPACE + "$"),
        (lambda: claim_template(name="t", slice=MIG), TEMPLATE_WITHOUT_NAMESPACE + "$"),
        (lambda: WorkloadSpec(name="w", image="i", slice=MIG), WORKLOAD_WITHOUT_NAMESPACE + "$"),
        (lambda: isolated_workload("w", image="i", slice=MIG), WORKLOAD_WITHOUT_NAMESPACE + "$"),
        (lambda: workload("w", image="i", slice=MIG), WORKLOAD_WITHOUT_NAMESPACE + "$"),
        # cdk8s: the namespace comes from the chart unless the construct names one.
        (
            lambda: _cdk8s_template(slice=MIG),
            TEMPLATE_WITHOUT_NAMESPACE + "; give the chart or the construct a namespace$",
        ),
        (
            lambda: _cdk8s_workload(slice=MIG, image="i"),
            WORKLOAD_WITHOUT_NAMESPACE + "; give the chart or the construct a namespace$",
        ),
    ],
    ids=["ClaimSpec", "claim_template", "WorkloadSpec", "isolated_workload", "workload", "cdk8s-template", "cdk8s"],
)
def test_a_claim_template_or_workload_without_a_namespace_is_refused(build: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()


def test_the_namespace_lands_on_every_object() -> None:
    objects = isolated_workload("w", image="i", slice=MIG, namespace="tenant-a", workload_kind="StatefulSet")
    assert [obj["metadata"]["namespace"] for obj in objects] == ["tenant-a"] * 3
    assert claim_template(name="t", slice=MIG, namespace="tenant-a")["metadata"]["namespace"] == "tenant-a"
    with pytest.raises(ValueError, match=r"^namespace: must be a DNS-1123 label"):
        claim_template(name="t", slice=MIG, namespace="")


# --- Beta and alpha versions need the runtime-config that serves them ----------------------

BETA2 = "resource.k8s.io/v1beta2"


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36", "1.37"])
def test_the_default_is_v1_wherever_it_is_served(version: str) -> None:
    template = claim_template(name="t", slice=MIG, namespace="ns", kubernetes_version=version)
    assert template["apiVersion"] == "resource.k8s.io/v1"
    assert served_claim_api_versions(version) == ("resource.k8s.io/v1",)


@pytest.mark.parametrize(
    ("version", "api_version", "message"),
    [
        (
            "1.36",
            BETA2,
            r"api_version: resource.k8s.io/v1beta2 is not served by a default Kubernetes 1.36 cluster; pass "
            r'runtime_config=\["resource.k8s.io/v1beta2=true"\] if your API server enables it \(--runtime-config\)$',
        ),
        (
            "1.34",
            "resource.k8s.io/v1beta1",
            r"api_version: resource.k8s.io/v1beta1 is not served by a default Kubernetes 1.34 cluster; pass "
            r'runtime_config=\["resource.k8s.io/v1beta1=true"\] if your API server enables it \(--runtime-config\)$',
        ),
        # DRA itself is beta and off by default before 1.34: the feature gate is needed too.
        (
            "1.33",
            BETA2,
            r"api_version: resource.k8s.io/v1beta2 is not served by a default Kubernetes 1.33 cluster; pass "
            r'runtime_config=\["resource.k8s.io/v1beta2=true"\] if your API server enables it \(--runtime-config\), '
            r"and run the DynamicResourceAllocation feature gate \(beta and off by default in 1.33\)$",
        ),
        (
            "1.33",
            "resource.k8s.io/v1alpha3",
            r"api_version: resource.k8s.io/v1alpha3 is not served by a default Kubernetes 1.33 cluster; pass "
            r'runtime_config=\["resource.k8s.io/v1alpha3=true"\]',
        ),
    ],
)
def test_a_version_a_default_cluster_does_not_serve_needs_the_opt_in(
    version: str, api_version: str, message: str
) -> None:
    for build in (
        lambda: claim_template(
            name="t", slice=MIG, namespace="ns", api_version=api_version, kubernetes_version=version
        ),
        lambda: isolated_workload(
            "w", image="i", slice=MIG, namespace="ns", api_version=api_version, kubernetes_version=version
        ),
    ):
        with pytest.raises(ValueError, match="^" + message):
            build()
    opted_in = claim_template(
        name="t",
        slice=MIG,
        namespace="ns",
        api_version=api_version,
        kubernetes_version=version,
        runtime_config=[f"{api_version}=true"],
    )
    assert opted_in["apiVersion"] == api_version


def test_1_33_serves_no_version_by_default_and_says_so() -> None:
    assert served_claim_api_versions("1.33") == ()
    with pytest.raises(
        ValueError,
        match=r"^api_version: Kubernetes 1.33 does not serve ResourceClaimTemplates in resource.k8s.io/v1; it serves "
        r"resource.k8s.io/v1beta2, resource.k8s.io/v1beta1, resource.k8s.io/v1alpha3, none by default: pass "
        r'runtime_config=\["<that version>=true"\] with it$',
    ):
        claim_template(name="t", slice=MIG, namespace="ns", kubernetes_version="1.33")


@pytest.mark.parametrize(
    ("runtime_config", "served"),
    [
        # A flag value holds several entries; an entry without a value enables.
        (["resource.k8s.io/v1beta2"], ("resource.k8s.io/v1", BETA2)),
        (
            ["resource.k8s.io/v1beta2=true,resource.k8s.io/v1beta1=1"],
            ("resource.k8s.io/v1", BETA2, "resource.k8s.io/v1beta1"),
        ),
        (["api/beta=true"], ("resource.k8s.io/v1", BETA2, "resource.k8s.io/v1beta1")),
        # Each key keeps its last value; group/version overrides api/*, a resource its version.
        (["resource.k8s.io/v1beta2=true", "resource.k8s.io/v1beta2=false"], ("resource.k8s.io/v1",)),
        (["api/all=true", "resource.k8s.io/v1beta1=false"], ("resource.k8s.io/v1", BETA2)),
        (["resource.k8s.io/v1beta2/resourceclaimtemplates=true"], ("resource.k8s.io/v1", BETA2)),
        (
            ["resource.k8s.io/v1beta2=true", "resource.k8s.io/v1beta2/resourceclaims=false"],
            ("resource.k8s.io/v1", BETA2),
        ),
        (
            ["resource.k8s.io/v1beta2=true", "resource.k8s.io/v1beta2/resourceclaimtemplates=false"],
            ("resource.k8s.io/v1",),
        ),
        (["api/ga=false", "api/beta=true"], (BETA2, "resource.k8s.io/v1beta1")),
        # Other groups are the cluster's business.
        (["batch/v2alpha1=true", "api/alpha=true"], ("resource.k8s.io/v1",)),
        ([], ("resource.k8s.io/v1",)),
    ],
)
def test_runtime_config_is_read_as_kube_apiserver_reads_it(runtime_config: list[str], served: tuple[str, ...]) -> None:
    assert served_claim_api_versions("1.36", runtime_config) == served


def test_a_runtime_config_that_does_not_serve_the_version_says_what_it_serves() -> None:
    with pytest.raises(
        ValueError,
        match=r"^api_version: resource.k8s.io/v1beta2 is not served by a Kubernetes 1.36 cluster with "
        r"--runtime-config=api/beta=true,resource.k8s.io/v1beta2=false \(it serves resource.k8s.io/v1, "
        r'resource.k8s.io/v1beta1\); add "resource.k8s.io/v1beta2=true" to runtime_config if your API server '
        r"enables it$",
    ):
        claim_template(
            name="t",
            slice=MIG,
            namespace="ns",
            api_version=BETA2,
            runtime_config=["api/beta=true", "resource.k8s.io/v1beta2=false"],
        )
    # Turning v1 off is refused for the default version too.
    with pytest.raises(ValueError, match=r"^api_version: resource.k8s.io/v1 is not served by a Kubernetes 1.36"):
        claim_template(name="t", slice=MIG, namespace="ns", runtime_config=["resource.k8s.io/v1=false"])


@pytest.mark.parametrize(
    ("runtime_config", "message"),
    [
        (
            "resource.k8s.io/v1beta2=true",
            r"^runtime_config: must be a list of strings, got 'resource.k8s.io/v1beta2=true'",
        ),
        ([True], r"^runtime_config\[0\]: must be a string, got True"),
        (["api/beta"], r"^runtime_config\[0\]: api/beta takes true or false, got ''"),
        (["api/beta=1"], r"^runtime_config\[0\]: api/beta takes true or false, got '1'"),
        (
            ["a/v1=true", "resource.k8s.io/v1beta2=yes"],
            r"^runtime_config\[1\]: resource.k8s.io/v1beta2 takes true or false",
        ),
        (["resource.k8s.io=true"], r"^runtime_config\[0\]: 'resource.k8s.io' is not resource.k8s.io/<version>"),
        (["resource.k8s.io/v1beta2/ResourceClaimTemplates"], r"^runtime_config\[0\]: .*always lower-case plural"),
        (["=true"], r"^runtime_config\[0\]: '=true' names no API"),
    ],
)
def test_a_runtime_config_kube_apiserver_would_refuse_is_refused(runtime_config: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        claim_template(name="t", slice=MIG, namespace="ns", runtime_config=runtime_config)  # type: ignore[arg-type]


def test_runtime_config_is_read_never_emitted() -> None:
    beta = {"api_version": BETA2, "runtime_config": [f"{BETA2}=true"]}
    assert "runtime_config" in ClaimOptions.__annotations__
    opted_in = isolated_workload("w", image="i", slice=MIG, namespace="ns", **beta)
    assert opted_in.claim_template["apiVersion"] == BETA2
    assert "runtime" not in repr(list(opted_in)).lower()
    # The same objects as without the option, wherever a default cluster serves the version.
    assert isolated_workload("w", image="i", slice=MIG, namespace="ns", runtime_config=["api/beta=true"]) == (
        isolated_workload("w", image="i", slice=MIG, namespace="ns")
    )


# --- Issue 20, point 5: what one GPU holds ----------------------------------------------

#: H100 80GB (NVIDIA mig-parted all-<profile>, deployments/systemd/config-default.yaml), and one
#: profile of every other family the table covers.
POINT5_PER_GPU = [
    ("1g.10gb", 7),
    ("1g.20gb", 4),
    ("2g.20gb", 3),
    ("3g.40gb", 2),
    ("4g.40gb", 1),
    ("7g.80gb", 1),
    ("1g.10gb+me", 1),
    ("1g.5gb", 7),  # A100 40GB
    ("3g.20gb", 2),
    ("1g.6gb", 4),  # A30: 4 compute and 4 memory slices
    ("2g.12gb", 2),
    ("1g.12gb", 7),  # H100 NVL / H100 96GB / GH200 96GB
    ("1g.24gb", 4),
    ("3g.47gb", 2),
    ("3g.48gb", 2),
    ("1g.18gb", 7),  # H200 141GB
    ("2g.35gb", 3),
    ("3g.71gb", 2),
    ("7g.141gb", 1),
    ("1g.36gb", 4),  # GH200 144GB
    ("1g.23gb", 7),  # B200
    ("1g.45gb", 4),
    ("3g.90gb", 2),
    ("7g.180gb", 1),
    ("1g.47gb", 4),  # GB200
    ("2g.48gb", 2),  # RTX PRO 6000 Blackwell: 4 compute slices
    ("1g.24gb+gfx", 4),
    ("2g.48gb+me.all", 1),
]


@pytest.mark.parametrize(("profile", "per_gpu"), POINT5_PER_GPU)
def test_point5_mig_count_aligned_on_one_gpu_is_refused_beyond_what_one_gpu_holds(profile: str, per_gpu: int) -> None:
    assert AcceleratorSlice.nvidia_mig(profile, per_gpu).count == per_gpu
    with pytest.raises(ValueError, match=rf"^count: .*one GPU holds at most {per_gpu} MIG devices? of profile"):
        AcceleratorSlice.nvidia_mig(profile, per_gpu + 1)
    # Naming the parent GPU explicitly is the same alignment, and the same refusal.
    with pytest.raises(ValueError, match=r"^count: "):
        AcceleratorSlice.nvidia_mig(profile, per_gpu + 1, topology="gpu.nvidia.com/parentUUID")
    # The generic constructor is refused the same way: the class, not the helper, decides.
    with pytest.raises(ValueError, match=r"^count: "):
        AcceleratorSlice("mig.nvidia.com", "gpu.nvidia.com/profile", profile, per_gpu + 1)


@pytest.mark.parametrize("topology", [None, "resource.kubernetes.io/pcieRoot"])
def test_point5_mig_counts_are_not_bounded_when_the_devices_may_come_from_several_gpus(topology: str | None) -> None:
    """Without the parentUUID constraint, nothing puts the devices on one GPU: 8 x 3g.40gb
    is 4 GPUs' worth, which an 8-GPU node holds; only what no node could hold is impossible,
    and that the builder cannot know."""
    accelerator = AcceleratorSlice.nvidia_mig("3g.40gb", 8, topology=topology)
    assert accelerator.alignment == topology
    devices = claim_template(name="t", slice=accelerator, namespace="ns")["spec"]["spec"]["devices"]
    if topology is None:
        assert "constraints" not in devices
    else:
        assert devices["constraints"] == [{"requests": ["slice"], "matchAttribute": topology}]


def test_point5_mig_profiles_the_table_does_not_know_get_the_bound_every_mig_gpu_obeys() -> None:
    # A well-formed profile of a GPU newer than the table: 7 compute slices, 1 with media engines.
    assert AcceleratorSlice.nvidia_mig("2g.99gb", 3).count == 3
    with pytest.raises(ValueError, match=r"at most 3 MIG devices of profile 2g.99gb \(a MIG GPU has at most 7"):
        AcceleratorSlice.nvidia_mig("2g.99gb", 4)
    with pytest.raises(ValueError, match=r"at most 1 MIG device of profile 1g.99gb\+me \(a GPU has one set of media"):
        AcceleratorSlice.nvidia_mig("1g.99gb+me", 2)
    # Whether a profile exists at all is the pin value's question: one device is never refused here.
    assert AcceleratorSlice.nvidia_mig("9g.99gb", 1).count == 1


def test_point5_the_mig_table_agrees_with_the_slice_geometry() -> None:
    """Every entry is at most min(7 // g, 8 // memory slices) can give: 7 // g, and 1 with +me."""
    from dra_guard.contract.mig_profiles import PER_GPU

    for profile, (count, _gpus) in PER_GPU.items():
        compute = int(profile.partition("g.")[0])
        bound = 1 if profile.endswith(("+me", "+me.all")) else 7 // compute
        assert 1 <= count <= bound, profile


@pytest.mark.parametrize("count", [1, 2, 8])
@pytest.mark.parametrize("profile", ["spx_nps1", "spx_nps2", "spx_nps4"])
def test_point5_amd_whole_gpus_cannot_align_on_parent_device_id(profile: str, count: int) -> None:
    with pytest.raises(ValueError, match=r"^topology: spx_nps\d devices are whole GPUs .* deviceID, not gpu.amd.com/"):
        AcceleratorSlice.amd_gpu(profile, count, topology="gpu.amd.com/parentDeviceID")
    # Partitions carry it; whole GPUs are fine without it.
    assert AcceleratorSlice.amd_gpu("cpx_nps4", count, topology="gpu.amd.com/parentDeviceID").alignment
    assert AcceleratorSlice.amd_gpu(profile, count).alignment is None


@pytest.mark.parametrize(
    "env",
    [
        {"NVIDIA_VISIBLE_DEVICES": "all"},
        [{"name": "A", "value": "1"}, {"name": "NVIDIA_VISIBLE_DEVICES", "value": "0"}],
        [{"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}],
    ],
    ids=["all", "index", "value-from"],
)
def test_an_env_that_asks_the_nvidia_runtime_for_gpus_is_refused(env: object) -> None:
    """The builders refuse what DRA001 reports (visible-devices), as they refuse nvidia.com/gpu
    in resources: the output passed through would fail the check it was built to pass."""
    with pytest.raises(ValueError, match=r"^env\[\d\]: sets NVIDIA_VISIBLE_DEVICES"):
        isolated_workload("w", image="i", slice=MIG, namespace="ns", env=env)
    with pytest.raises(ValueError, match=r"^env\[\d\]: sets NVIDIA_VISIBLE_DEVICES"):
        WorkloadSpec(name="w", namespace="ns", image="i", slice=MIG, env=env)


def test_an_env_that_names_no_gpu_is_kept() -> None:
    objects = isolated_workload("w", image="i", slice=MIG, namespace="ns", env={"NVIDIA_VISIBLE_DEVICES": "void"})
    assert objects.workload["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}
    ]
