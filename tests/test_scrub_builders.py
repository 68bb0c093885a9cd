"""The builders put the scrubber first in every pod of a class it scrubs, and nowhere else.

`isolated_workload` (behind `IsolatedAcceleratorWorkload` in cdk8s and Pulumi alike),
`with_claim_template` and cdk8s `use_claim_template`: the scrubber is the pod's first init
container, holds every accelerator claim of the pod, runs the configured image (pinned) and
the scrub command, and is not restartable; for TPU, AMD, Intel and passthrough classes there
is none (README, "Memory erasure").
"""

from __future__ import annotations

from typing import Any

import cdk8s_plus_34 as kplus
import pytest
from cdk8s import ApiObject, ApiObjectMetadata, App, Chart, JsonPatch
from cdk8s import Testing as Cdk8sTesting  # not `Testing`: pytest would collect it

import constructs_dra
from dra_guard import AcceleratorSlice, claim_template, isolated_workload
from dra_guard.builders import DEFAULT_SCRUB_IMAGE, SCRUB_CONTAINER_NAME, with_claim_template
from dra_guard.engine import check_objects

DIGEST = "registry.example/scrub@sha256:" + "ab" * 32
SCRUBBED = {
    "mig": AcceleratorSlice.nvidia_mig("1g.10gb"),
    "gpu": AcceleratorSlice.nvidia_gpu("NVIDIA H100 80GB HBM3"),
}
NOT_SCRUBBED = {
    "tpu": AcceleratorSlice.google_tpu("v6e", count=4),
    "amd": AcceleratorSlice.amd_gpu("cpx_nps4"),
}


def pod_of(workload: dict[str, Any]) -> dict[str, Any]:
    pod: dict[str, Any] = workload["spec"]["template"]["spec"]
    return pod


def claims_of(container: dict[str, Any]) -> list[str]:
    return [claim["name"] for claim in container.get("resources", {}).get("claims", [])]


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "Job"])
@pytest.mark.parametrize("accelerator", list(SCRUBBED), ids=str)
def test_the_scrubber_runs_first_holding_every_claim(kind: str, accelerator: str) -> None:
    built = isolated_workload(
        "trainer", namespace="t", image="trainer:1", slice=SCRUBBED[accelerator], workload_kind=kind
    )
    pod = pod_of(built.workload)
    first = pod["initContainers"][0]
    assert first == {
        "name": SCRUB_CONTAINER_NAME,
        "image": DEFAULT_SCRUB_IMAGE,
        "command": ["dra-guard", "scrub"],
        "resources": {"claims": [{"name": "accelerator"}]},
    }
    assert set(claims_of(first)) == {claim["name"] for claim in pod["resourceClaims"]}
    assert "restartPolicy" not in first
    objects = [built.claim_template, built.workload] + ([built.service] if built.service else [])
    assert check_objects(objects).findings == []


@pytest.mark.parametrize("accelerator", list(NOT_SCRUBBED), ids=str)
def test_no_scrubber_for_a_class_it_cannot_scrub(accelerator: str) -> None:
    built = isolated_workload("trainer", namespace="t", image="trainer:1", slice=NOT_SCRUBBED[accelerator])
    assert "initContainers" not in pod_of(built.workload)


def test_the_configured_image_is_used_and_must_be_pinned() -> None:
    built = isolated_workload("t", namespace="t", image="i:1", slice=SCRUBBED["mig"], scrub_image=DIGEST)
    assert pod_of(built.workload)["initContainers"][0]["image"] == DIGEST
    for image, why in (
        ("registry.example/scrub", "has no tag or digest"),
        ("registry.example:5000/scrub", "has no tag or digest"),
        ("registry.example/scrub:latest", "pinned to :latest"),
        ("", "must be a container image reference"),
    ):
        with pytest.raises(ValueError, match=f"scrub_image: .*{why}"):
            isolated_workload("t", namespace="t", image="i:1", slice=SCRUBBED["mig"], scrub_image=image)


def test_with_claim_template_puts_the_scrubber_before_existing_init_containers() -> None:
    pod = {"initContainers": [{"name": "fetch", "image": "f:1"}], "containers": [{"name": "main", "image": "m:1"}]}
    wired = with_claim_template(pod, "a", claim_name="a", scrub_image=DEFAULT_SCRUB_IMAGE)
    wired = with_claim_template(wired, "b", claim_name="b", scrub_image=DEFAULT_SCRUB_IMAGE)
    assert [container["name"] for container in wired["initContainers"]] == [SCRUB_CONTAINER_NAME, "fetch"]
    assert claims_of(wired["initContainers"][0]) == ["a", "b"]
    assert claims_of(wired["initContainers"][1]) == []
    assert "initContainers" not in with_claim_template({"containers": [{"name": "m", "image": "m:1"}]}, "a")
    with pytest.raises(ValueError, match="already runs"):
        with_claim_template(wired, "c", claim_name="c", scrub_image=DIGEST)
    late = {"initContainers": [{"name": "fetch", "image": "f:1"}, {"name": SCRUB_CONTAINER_NAME, "image": "x:1"}]}
    with pytest.raises(ValueError, match="that is not its first"):
        with_claim_template({**late, "containers": [{"name": "m", "image": "m:1"}]}, "a", scrub_image=DIGEST)


def test_use_claim_template_runs_the_scrubber_first_even_before_init_containers_added_later() -> None:
    app = App(outdir=Cdk8sTesting.app().outdir)
    chart = Chart(app, "chart", namespace="ns")
    template = constructs_dra.IsolatedClaimTemplate(chart, "slice", slice=SCRUBBED["mig"])
    deployment = kplus.Deployment(chart, "web", containers=[kplus.ContainerProps(image="server")])
    constructs_dra.use_claim_template(deployment, template)
    deployment.add_init_container(image="fetch", name="fetch")
    for _ in range(2):  # a second synth finds the scrubber in place and adds nothing
        (synthesized,) = [obj for obj in Cdk8sTesting.synth(chart) if obj["kind"] == "Deployment"]
        init_containers = pod_of(synthesized)["initContainers"]
        assert [container["name"] for container in init_containers] == [SCRUB_CONTAINER_NAME, "fetch"]
        assert claims_of(init_containers[0]) == ["accelerator"]
    app.synth()


def test_use_claim_template_by_name_scrubs_unless_told_not_to_and_a_tpu_template_never() -> None:
    chart = Chart(Cdk8sTesting.app(), "chart", namespace="ns")
    pods = []
    for name in ("named", "opted-out", "tpu"):
        pod = ApiObject(chart, name, api_version="v1", kind="Pod", metadata=ApiObjectMetadata(name=name))
        pod.add_json_patch(JsonPatch.add("/spec", {"containers": [{"name": "main", "image": "i:1"}]}))
        pods.append(pod)
    tpu = constructs_dra.IsolatedClaimTemplate(chart, "tpu-slice", slice=NOT_SCRUBBED["tpu"])
    constructs_dra.use_claim_template(pods[0], "slice", scrub_image=DIGEST)
    constructs_dra.use_claim_template(pods[1], "slice", scrub_image=None)
    constructs_dra.use_claim_template(pods[2], tpu)
    by_name = {obj["metadata"]["name"]: obj for obj in Cdk8sTesting.synth(chart) if obj["kind"] == "Pod"}
    assert by_name["named"]["spec"]["initContainers"][0]["image"] == DIGEST
    assert "initContainers" not in by_name["opted-out"]["spec"]
    assert "initContainers" not in by_name["tpu"]["spec"]
    with pytest.raises(ValueError, match="pinned to :latest"):
        constructs_dra.use_claim_template(pods[1], "other", claim_name="other", scrub_image="scrub:latest")


@pytest.mark.parametrize("enforced", ["before", "after"])
@pytest.mark.parametrize("scope", ["app", "chart"])
def test_use_claim_template_passes_enforce_with_the_scrubber_in_place(enforced: str, scope: str) -> None:
    """enforce() reads the objects before cdk8s runs the object's own validations (a parent
    is validated first), so the scrubber and the late container's claim must be in place
    by then, whichever of the two calls came first."""
    app = App(outdir=Cdk8sTesting.app().outdir)
    chart = Chart(app, "chart", namespace="ns")
    enforced_scope = app if scope == "app" else chart
    if enforced == "before":
        constructs_dra.enforce(enforced_scope)
    template = constructs_dra.IsolatedClaimTemplate(chart, "slice", slice=SCRUBBED["mig"])
    web = kplus.Deployment(chart, "web", containers=[kplus.ContainerProps(image="server:1")])
    constructs_dra.use_claim_template(web, template)
    web.add_container(image="sidecar:1", name="late")
    if enforced == "after":
        constructs_dra.enforce(enforced_scope)
    app.synth()  # no RuntimeError: DRA016 no-scrubber, DRA009 for the late container
    (synthesized,) = [obj for obj in Cdk8sTesting.synth(chart) if obj["kind"] == "Deployment"]
    pod = pod_of(synthesized)
    assert [container["name"] for container in pod["initContainers"]] == [SCRUB_CONTAINER_NAME]
    assert [claims_of(container) for container in pod["containers"]] == [["accelerator"], ["accelerator"]]


def test_use_claim_template_on_our_own_workload_passes_its_self_check() -> None:
    """The chart's self-check of our constructs reads them before the wiring ran too."""
    app = App(outdir=Cdk8sTesting.app().outdir)
    chart = Chart(app, "chart", namespace="ns")
    template = constructs_dra.IsolatedClaimTemplate(chart, "slice", slice=SCRUBBED["mig"])
    workload = constructs_dra.IsolatedAcceleratorWorkload(chart, "w", image="i:1", slice=SCRUBBED["gpu"])
    constructs_dra.use_claim_template(workload.workload, template, claim_name="extra")
    app.synth()  # no RuntimeError: DRA016 claim-not-scrubbed
    (synthesized,) = [obj for obj in Cdk8sTesting.synth(chart) if obj["kind"] == "Deployment"]
    assert claims_of(pod_of(synthesized)["initContainers"][0]) == ["accelerator", "extra"]


def test_use_claim_template_scrubs_a_template_of_nvidias_driver_whatever_its_class_name() -> None:
    """NVIDIA's per-profile class is NVIDIA's driver's: its MIG devices are scrubbed too."""
    chart = Chart(Cdk8sTesting.app(), "chart", namespace="ns")
    per_profile = AcceleratorSlice("mig-1g-12gb.gpu.nvidia.com", "gpu.nvidia.com/profile", "1g.12gb")
    template = constructs_dra.IsolatedClaimTemplate(chart, "slice", slice=per_profile)
    pod = ApiObject(chart, "p", api_version="v1", kind="Pod", metadata=ApiObjectMetadata(name="p"))
    pod.add_json_patch(JsonPatch.add("/spec", {"containers": [{"name": "main", "image": "i:1"}]}))
    constructs_dra.use_claim_template(pod, template)
    (synthesized,) = [obj for obj in Cdk8sTesting.synth(chart) if obj["kind"] == "Pod"]
    assert synthesized["spec"]["initContainers"][0]["name"] == SCRUB_CONTAINER_NAME


# --- ScrubBeforeUse is declared only where the scrubber runs -------------------------------

SCRUB_REFUSED = r"^sanitization: ScrubBeforeUse declares that the scrubber erases the devices .* cannot scrub those of "


@pytest.mark.parametrize("accelerator", list(NOT_SCRUBBED), ids=str)
def test_scrub_before_use_is_refused_for_a_class_the_scrubber_cannot_scrub(accelerator: str) -> None:
    """It would declare an erasure nothing performs (no scrubber is emitted for the class),
    whatever unscrubbed-classes later accepts."""
    chosen = NOT_SCRUBBED[accelerator]
    options: dict[str, Any] = {"slice": chosen, "sanitization": "ScrubBeforeUse"}
    refused = SCRUB_REFUSED + chosen.device_class.replace(".", r"\.")
    with pytest.raises(ValueError, match=refused):
        isolated_workload("trainer", namespace="t", image="trainer:1", **options)
    with pytest.raises(ValueError, match=refused):
        claim_template(name="slice", namespace="t", **options)
    chart = Chart(Cdk8sTesting.app(), "chart", namespace="ns")
    with pytest.raises(ValueError, match=refused):
        constructs_dra.IsolatedAcceleratorWorkload(chart, "w", image="i:1", **options)
    with pytest.raises(ValueError, match=refused):
        constructs_dra.IsolatedClaimTemplate(chart, "t", **options)
    assert chart.node.children == []  # refused before joining the tree


@pytest.mark.parametrize("accelerator", list(SCRUBBED), ids=str)
def test_scrub_before_use_on_a_class_it_scrubs_builds_and_passes(accelerator: str) -> None:
    built = isolated_workload(
        "trainer", namespace="t", image="trainer:1", slice=SCRUBBED[accelerator], sanitization="ScrubBeforeUse"
    )
    assert built.claim_template["metadata"]["annotations"]["dra-guard.io/sanitization"] == "ScrubBeforeUse"
    assert pod_of(built.workload)["initContainers"][0]["name"] == SCRUB_CONTAINER_NAME
    assert check_objects(list(built)).findings == []


def test_the_catalogs_scrubbed_classes_are_those_whose_selector_fixes_a_type_it_reaches() -> None:
    """The builders take SCRUBBED_CLASSES as data (they read no selector); `check` decides the
    same classes from the catalog's selectors: NVIDIA's gpu and mig classes, not its vfio one."""
    from dra_guard.contract.catalog import DEVICE_CLASSES
    from dra_guard.contract.scrubber import SCRUBBED_CLASSES
    from dra_guard.ruleapi.config import Config
    from dra_guard.ruleapi.device_classes import scrubbed_class, scrubbed_classes

    derived = {name for name in DEVICE_CLASSES if scrubbed_class(name, Config(), None)}
    assert derived == SCRUBBED_CLASSES == {"gpu.nvidia.com", "mig.nvidia.com"}
    assert scrubbed_classes(Config()) == sorted(SCRUBBED_CLASSES)


@pytest.mark.parametrize("sanitization", ["WipeOnDeallocate", "ScrubBeforeUse"])
def test_use_claim_template_refuses_no_scrubber_for_a_template_of_a_class_it_scrubs(sanitization: str) -> None:
    """scrub_image=None would leave the pod holding a claim DRA016 (not waivable) requires the
    scrubber for, and a ScrubBeforeUse template promising an erasure nothing performs: without
    enforce(), synth passed with no scrubber in the pod."""
    chart = Chart(Cdk8sTesting.app(), "chart", namespace="ns")
    template = constructs_dra.IsolatedClaimTemplate(chart, "slice", slice=SCRUBBED["mig"], sanitization=sanitization)
    tpu = constructs_dra.IsolatedClaimTemplate(chart, "tpu-slice", slice=NOT_SCRUBBED["tpu"])
    pod = ApiObject(chart, "p", api_version="v1", kind="Pod", metadata=ApiObjectMetadata(name="p"))
    pod.add_json_patch(JsonPatch.add("/spec", {"containers": [{"name": "main", "image": "i:1"}]}))
    declared = ".*declares sanitization ScrubBeforeUse" if sanitization == "ScrubBeforeUse" else ""
    with pytest.raises(
        ValueError, match=f"^scrub_image: the scrubber scrubs the devices of template 'slice'{declared}"
    ):
        constructs_dra.use_claim_template(pod, template, scrub_image=None)
    constructs_dra.use_claim_template(pod, tpu, scrub_image=None)  # nothing to scrub: accepted
    (synthesized,) = [obj for obj in Cdk8sTesting.synth(chart) if obj["kind"] == "Pod"]
    assert [claim["resourceClaimTemplateName"] for claim in synthesized["spec"]["resourceClaims"]] == ["tpu-slice"]


LOOK_ALIKES = {
    "command": {"command": ["true"]},
    "sidecar": {"command": ["dra-guard", "scrub"], "restartPolicy": "Always"},
    "args": {"command": ["dra-guard", "scrub"], "args": ["--reserved-mib", "999999"]},
    "privileged": {"command": ["dra-guard", "scrub"], "securityContext": {"privileged": True}},
    "termination-message": {"command": ["dra-guard", "scrub"], "terminationMessagePath": "/dev/nvidia0"},
}


@pytest.mark.parametrize("changed", list(LOOK_ALIKES), ids=str)
def test_the_builders_never_hand_a_claim_to_a_look_alike_scrubber(changed: str) -> None:
    """A first init container of the scrubber's name that would not scrub first (another
    command, a sidecar, arguments) was given the claim, and the pod passed for scrubbed."""
    look_alike = {"name": SCRUB_CONTAINER_NAME, "image": DEFAULT_SCRUB_IMAGE, **LOOK_ALIKES[changed]}
    pod = {"initContainers": [look_alike], "containers": [{"name": "main", "image": "m:1"}]}
    with pytest.raises(
        ValueError, match=f"^the pod's first init container '{SCRUB_CONTAINER_NAME}' is not the scrubber"
    ):
        with_claim_template(pod, "a", scrub_image=DEFAULT_SCRUB_IMAGE)
    chart = Chart(Cdk8sTesting.app(), "chart", namespace="ns")
    template = constructs_dra.IsolatedClaimTemplate(chart, "slice", slice=SCRUBBED["mig"])
    api_object = ApiObject(chart, "p", api_version="v1", kind="Pod", metadata=ApiObjectMetadata(name="p"))
    api_object.add_json_patch(JsonPatch.add("/spec", pod))
    constructs_dra.use_claim_template(api_object, template)
    with pytest.raises(Exception, match="is not the scrubber"):
        Cdk8sTesting.synth(chart)
