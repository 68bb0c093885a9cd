"""DRA016 `scrub-before-use`: cases beyond its EXAMPLES -- builder output, a tenant's look-alikes,
accepted classes, the configured images, and the fields the policy names."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from dra_guard import AcceleratorSlice, isolated_workload
from dra_guard.admission.emulate import admit, denied_rules
from dra_guard.admission.policy import admission_objects
from dra_guard.admission.webhook import Webhook
from dra_guard.contract.scrubber import DEFAULT_SCRUB_IMAGE
from dra_guard.engine.run import check_objects
from dra_guard.present.report import renderer
from dra_guard.read.config_file import parse_config
from dra_guard.ruleapi.admission_form import AdmissionTarget
from dra_guard.ruleapi.config import Config
from dra_guard.ruleapi.options import ConfigError
from dra_guard.rules import RULES
from dra_guard.rules.dra016_scrub_before_use import _ALLOWED_FIELDS, CHANGED_FIELDS
from testkit.lifecycle import cluster_creates
from testkit.rulecases import config, findings, workload

SCRUBBER_PATH = ("spec", "template", "spec", "initContainers", 0)


def _dra016(*objects: Any, options: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    return [
        (finding.facet, finding.path)
        for finding in findings(*objects, config=config(options or {}))
        if finding.rule == "DRA016"
    ]


def _scrubber(objects: Any) -> dict[str, Any]:
    spec = objects.workload["spec"]["template"]["spec"]
    scrubber: dict[str, Any] = spec["initContainers"][0]
    return scrubber


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "Job"])
def test_builder_output_runs_the_scrubber_first_and_passes(kind: str) -> None:
    objects = workload(kind)
    assert _scrubber(objects)["name"] == "dra-guard-scrub"
    assert _dra016(objects.claim_template, objects.workload) == []


#: A tenant's look-alikes of the builders' scrubber: what each changes, and the facet and
#: pointer (under the scrubber) the rule reports.
LOOK_ALIKES = [
    ("command true", lambda c: c.update(command=["true"]), "scrubber-changed", "/command"),
    ("no command", lambda c: c.pop("command"), "scrubber-changed", "/command"),
    ("args", lambda c: c.update(args=["--help"]), "scrubber-changed", "/args"),
    ("env", lambda c: c.update(env=[{"name": "CUDA_VISIBLE_DEVICES", "value": ""}]), "scrubber-changed", "/env"),
    (
        "mount over it",
        lambda c: c.update(volumeMounts=[{"name": "x", "mountPath": "/usr"}]),
        "scrubber-changed",
        "/volumeMounts",
    ),
    ("other image", lambda c: c.update(image="busybox:1.36"), "scrubber-image", "/image"),
    ("sidecar", lambda c: c.update(restartPolicy="Always"), "scrubber-restartable", "/restartPolicy"),
    (
        "privileged",
        lambda c: c.update(securityContext={"privileged": True}),
        "scrubber-changed",
        "/securityContext/privileged",
    ),
]


@pytest.mark.parametrize(
    ("change", "facet", "pointer"), [case[1:] for case in LOOK_ALIKES], ids=[c[0] for c in LOOK_ALIKES]
)
def test_a_changed_scrubber_is_reported(change: Any, facet: str, pointer: str) -> None:
    objects = workload()
    change(_scrubber(objects))
    found = _dra016(objects.claim_template, objects.workload)
    assert found == [(facet, "/spec/template/spec/initContainers/0" + pointer)]


#: securityContexts that leave the scrubber the devices it was given (`dra_guard.contract.scrubber.privileged`
#: says why each field does): the restricted Pod Security Standard's, which platform teams require, and others.
UNCHANGED_REACH = {
    "restricted": {
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    },
    "not privileged": {"privileged": False, "readOnlyRootFilesystem": True},
    "root": {"runAsUser": 0, "runAsGroup": 0},
    "capabilities": {"capabilities": {"add": ["SYS_ADMIN"]}, "allowPrivilegeEscalation": True},
    "labels": {"seLinuxOptions": {"type": "spc_t"}, "appArmorProfile": {"type": "Unconfined"}},
}


@pytest.mark.parametrize("security", list(UNCHANGED_REACH.values()), ids=list(UNCHANGED_REACH))
def test_a_security_context_that_leaves_its_devices_as_given_passes(security: dict[str, Any]) -> None:
    objects = workload()
    _scrubber(objects)["securityContext"] = security
    assert _dra016(objects.claim_template, objects.workload) == []
    denied = admit(admission_objects(RULES, AdmissionTarget(config({}))), objects.workload)
    assert "DRA016" not in denied_rules(denied)


def test_a_privileged_scrubber_is_denied_by_the_policy_too() -> None:
    """Shown every device of the node, it would fill and zero other pods' GPUs and count them as given."""
    objects = workload()
    _scrubber(objects)["securityContext"] = {"privileged": True, "runAsNonRoot": True}
    denied = admit(admission_objects(RULES, AdmissionTarget(config({}))), objects.workload)
    assert [denial.message for denial in denied if "privileged" in denial.message] == [
        "DRA016: the scrubber dra-guard-scrub must not be privileged: it would be shown every device of the node, "
        "and fill "
        "and zero the memory of other pods' GPUs"
    ]


def test_a_container_with_the_claim_ahead_of_the_scrubber_is_reported() -> None:
    objects = workload()
    spec = objects.workload["spec"]["template"]["spec"]
    spec["initContainers"].insert(0, {"name": "warm", "image": "i", "resources": {"claims": [{"name": "gpu"}]}})
    (finding,) = [f for f in findings(objects.claim_template, objects.workload) if f.rule == "DRA016"]
    assert (finding.facet, finding.path) == ("scrubber-not-first", "/spec/template/spec/initContainers/1")
    assert "'warm' holds claims before it" in finding.message


def test_a_scrubber_among_the_regular_containers_is_not_first() -> None:
    objects = workload()
    spec = objects.workload["spec"]["template"]["spec"]
    spec["containers"].append(spec.pop("initContainers")[0])
    facets = {facet for facet, _ in _dra016(objects.claim_template, objects.workload)}
    assert facets == {"scrubber-not-first"}


def test_a_scrubber_without_the_claim_leaves_the_claim_unscrubbed() -> None:
    objects = workload()
    del _scrubber(objects)["resources"]
    assert _dra016(objects.claim_template, objects.workload) == [
        ("claim-not-scrubbed", "/spec/template/spec/resourceClaims/0")
    ]


def test_a_scrubber_holding_one_request_holds_the_claim_only_in_part() -> None:
    objects = workload()
    _scrubber(objects)["resources"]["claims"][0]["request"] = "gpu"
    assert [facet for facet, _ in _dra016(objects.claim_template, objects.workload)] == ["claim-not-scrubbed"]


def test_no_scrubber_at_all_is_reported_in_either_order() -> None:
    objects = workload()
    del objects.workload["spec"]["template"]["spec"]["initContainers"]
    expected = [("no-scrubber", "/spec/template/spec/resourceClaims/0")]
    assert _dra016(objects.claim_template, objects.workload) == expected
    assert _dra016(objects.workload, objects.claim_template) == expected


def test_a_template_not_among_the_objects_is_a_low_finding_unless_the_scrubber_holds_it() -> None:
    objects = workload()
    assert _dra016(objects.workload) == []  # the scrubber holds it: nothing is missing either way
    del objects.workload["spec"]["template"]["spec"]["initContainers"]
    (finding,) = [f for f in findings(objects.workload) if f.rule == "DRA016"]
    assert (finding.facet, finding.severity.label) == ("unknown-claim", "low")


@pytest.mark.parametrize(
    ("accelerator", "device_class"),
    [
        (AcceleratorSlice.google_tpu("v6e", count=4), "tpu.google.com"),
        (AcceleratorSlice.amd_gpu("cpx_nps4"), "gpu.amd.com"),
    ],
)
def test_a_class_the_scrubber_cannot_scrub_is_reported_or_accepted_with_its_reason(
    accelerator: AcceleratorSlice, device_class: str
) -> None:
    objects = isolated_workload("app", image="i", slice=accelerator, namespace="ns")
    assert "initContainers" not in objects.workload["spec"]["template"]["spec"]  # builders emit none for it
    assert _dra016(objects.claim_template, objects.workload) == [
        ("unscrubbable-class", "/spec/template/spec/resourceClaims/0")
    ]
    reason = "single-tenant node pool, nodes recycled between tenants"
    accepted = config({"unscrubbed-classes": {device_class: reason}})
    report = check_objects([objects.claim_template, objects.workload], accepted)
    assert [f.rule for f in report.findings if f.rule == "DRA016"] == []
    (waived,) = [f for f in report.waived if f.rule == "DRA016"]
    assert reason in (waived.waiver or "") and device_class in (waived.waiver or "")
    # The report shows the acceptance: never a silent pass.
    shown = json.loads(renderer("json")(report))
    assert any(reason in entry.get("waiver", "") for entry in shown["waived"])


def test_a_nic_claim_needs_no_scrubber() -> None:
    objects = workload()
    del objects.workload["spec"]["template"]["spec"]["initContainers"]
    options = {"non-accelerator-classes": ["mig.nvidia.com"]}
    assert _dra016(objects.claim_template, objects.workload, options=options) == []


def test_the_annotation_cannot_waive_it() -> None:
    objects = workload()
    del objects.workload["spec"]["template"]["spec"]["initContainers"]
    objects.workload["metadata"].setdefault("annotations", {})["dra-guard.io/ignore-DRA016"] = "trust me"
    (finding,) = [f for f in findings(objects.claim_template, objects.workload) if f.rule == "DRA016"]
    assert "cannot be waived" in finding.message


def test_a_configured_image_is_accepted_and_an_unpinned_one_refused() -> None:
    objects = workload(scrub_image="registry.example/scrub@sha256:" + "a" * 64)
    assert [facet for facet, _ in _dra016(objects.claim_template, objects.workload)] == ["scrubber-image"]
    options = {"scrub-images": ["registry.example/scrub@sha256:" + "a" * 64, DEFAULT_SCRUB_IMAGE]}
    assert _dra016(objects.claim_template, objects.workload, options=options) == []
    with pytest.raises(ConfigError, match=r"scrub-images: 'registry\.example/scrub' has no tag or digest"):
        parse_config({"scrub-images": ["registry.example/scrub"]}, RULES, "test")
    with pytest.raises(ConfigError, match=":latest"):
        parse_config({"scrub-images": ["scrub:latest"]}, RULES, "test")


def test_the_policy_names_every_container_field_but_the_allowed_ones() -> None:
    """CEL cannot list a typed object's keys: the policy names the forbidden fields, which
    must be every field of core/v1 Container that the scrubber may not set, in every release."""
    schemas = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    for release in ("1.32", "1.33", "1.34", "1.35", "1.36", "1.37"):
        schema = json.loads((schemas / f"v{release}.0-local-strict" / "container-v1.json").read_text())
        fields = set(schema["properties"])
        assert fields - _ALLOWED_FIELDS <= set(CHANGED_FIELDS), release
    assert set(CHANGED_FIELDS) & _ALLOWED_FIELDS == set()


def test_the_scrubber_claim_wiring_survives_a_deep_copy_of_the_pod() -> None:
    """What a ReplicaSet stamps out of the template is the template: same verdict."""
    objects = workload()
    stamped = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "app-7d9f-x2x", "namespace": "ns"},
        "spec": copy.deepcopy(objects.workload["spec"]["template"]["spec"]),
    }
    assert _dra016(objects.claim_template, stamped) == []
    del stamped["spec"]["initContainers"]
    assert _dra016(objects.claim_template, stamped) == [("no-scrubber", "/spec/resourceClaims/0")]


# --- in the cluster: the policies and the webhook on what the controllers make --------------


class _ClusterTemplates:
    """The namespace's claim templates, as the webhook reads them from the API server."""

    def __init__(self, *templates: dict[str, Any]) -> None:
        self._templates = {(t["metadata"]["namespace"], t["metadata"]["name"]): t for t in templates}

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._templates.get((namespace, name))


def _review(obj: dict[str, Any]) -> dict[str, Any]:
    group, _, version = obj["apiVersion"].rpartition("/")
    return {
        "uid": "u",
        "kind": {"group": group, "version": version, "kind": obj["kind"]},
        "operation": "CREATE",
        "namespace": "ns",
        "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
        "object": obj,
    }


def test_the_pods_a_controller_makes_pass_with_the_scrubber_and_are_denied_without_it() -> None:
    """ReplicaSet-made pods copy the template's spec (testkit/lifecycle.py models it from
    kube-controller-manager): the builders' pods are admitted; a tenant's Deployment without
    the scrubber makes pods the webhook denies, having read their template; a look-alike
    scrubber is denied by the generated policy already, on the Deployment and on its pods."""
    objects = workload()
    policies = admission_objects(RULES, AdmissionTarget(Config()))
    webhook = Webhook(RULES, Config(), templates=_ClusterTemplates(objects.claim_template))
    pods = [made.obj for made in cluster_creates(list(objects)) if made.kind == "Pod"]
    assert pods
    for pod in pods:
        assert admit(policies, pod) == [] and webhook.review(_review(pod))["allowed"]

    bare = copy.deepcopy(objects)
    del bare.workload["spec"]["template"]["spec"]["initContainers"]
    for pod in [made.obj for made in cluster_creates(list(bare)) if made.kind == "Pod"]:
        assert "DRA016" not in denied_rules(admit(policies, pod))  # the policy cannot read the template
        response = webhook.review(_review(pod))
        assert response["allowed"] is False and "runs no scrubber" in response["status"]["message"]

    look_alike = copy.deepcopy(objects)
    _scrubber(look_alike)["command"] = ["true"]
    assert "DRA016" in denied_rules(admit(policies, look_alike.workload))
    for pod in [made.obj for made in cluster_creates(list(look_alike)) if made.kind == "Pod"]:
        assert "DRA016" in denied_rules(admit(policies, pod))


# --- a class is scrubbed by its devices' driver, not its name ---------------------------------

#: NVIDIA's per-profile DeviceClass (README, KEP-5004): its devices are the MIG devices of
#: NVIDIA's driver, which the scrubber scrubs whatever class selects them.
PER_PROFILE = "mig-1g-12gb.gpu.nvidia.com"
PER_PROFILE_SELECTOR = (
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig' && "
    "device.attributes['gpu.nvidia.com'].profile == '1g.12gb'"
)
PER_PROFILE_CLASS = {"pin-attribute": "gpu.nvidia.com/profile", "selector": PER_PROFILE_SELECTOR}


def _per_profile(*, scrubber: bool = True) -> Any:
    """A workload of the per-profile class, as the builders make it (scrubber first)."""
    accelerator = AcceleratorSlice(PER_PROFILE, "gpu.nvidia.com/profile", "1g.12gb")
    objects = isolated_workload("app", image="i", slice=accelerator, namespace="ns")
    if not scrubber:
        del objects.workload["spec"]["template"]["spec"]["initContainers"]
    return objects


def _device_class(selector: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": PER_PROFILE},
        "spec": {"selectors": [{"cel": {"expression": selector}}]},
    }


def test_the_builders_scrub_a_class_of_nvidias_driver_whatever_its_name() -> None:
    assert _scrubber(_per_profile())["resources"] == {"claims": [{"name": "accelerator"}]}


def test_a_class_declared_as_nvidias_passes_with_the_scrubber_and_needs_it() -> None:
    options = {"extra-classes": {PER_PROFILE: PER_PROFILE_CLASS}}
    objects = _per_profile()
    assert _dra016(objects.claim_template, objects.workload, options=options) == []
    bare = _per_profile(scrubber=False)
    assert _dra016(bare.claim_template, bare.workload, options=options) == [
        ("no-scrubber", "/spec/template/spec/resourceClaims/0")
    ]


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_class_whose_device_class_fixes_nvidias_driver_passes_with_the_scrubber(where: str) -> None:
    objects = _per_profile()
    device_class = _device_class(PER_PROFILE_SELECTOR)
    ordered = [device_class, *objects] if where == "before" else [*objects, device_class]
    assert _dra016(*ordered) == []


@pytest.mark.parametrize(
    "selector",
    [
        "device.driver == 'gpu.nvidia.com' || device.driver == 'tpu.google.com'",  # not a conjunct: proves nothing
        "device.driver == 'tpu.google.com'",
        # NVIDIA's driver, its passthrough devices (NVIDIA's vfio.gpu.nvidia.com selector):
        # the scrubber's CUDA never reaches a GPU bound to vfio-pci.
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'",
        # NVIDIA's driver, any of its devices (passthrough ones too): it cannot tell, so fails closed.
        "device.driver == 'gpu.nvidia.com'",
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type != 'vfio'",
        # The type alone: another driver may publish the attribute.
        "device.attributes['gpu.nvidia.com'].type == 'mig'",
    ],
)
def test_a_class_not_shown_to_be_nvidias_cannot_be_scrubbed(selector: str) -> None:
    objects = _per_profile()
    assert _dra016(*objects, _device_class(selector)) == [
        ("unscrubbable-class", "/spec/template/spec/resourceClaims/0")
    ]
    declared = {"extra-classes": {PER_PROFILE: {**PER_PROFILE_CLASS, "selector": selector}}}
    assert _dra016(*objects, options=declared) == [("unscrubbable-class", "/spec/template/spec/resourceClaims/0")]


def test_a_class_declared_without_a_selector_cannot_be_told_and_says_to_give_it() -> None:
    """A pin attribute in gpu.nvidia.com says the driver, not which of its devices: the
    passthrough ones publish productName, uuid and pciBusID too."""
    objects = _per_profile()
    declared = {"extra-classes": {PER_PROFILE: {"pin-attribute": "gpu.nvidia.com/profile"}}}
    assert _dra016(*objects, options=declared) == [("unscrubbable-class", "/spec/template/spec/resourceClaims/0")]
    (finding,) = [f for f in check_objects(list(objects), config(declared)).findings if f.rule == "DRA016"]
    assert f"extra-classes declares {PER_PROFILE} without a selector" in finding.message


def test_a_class_of_unknown_driver_is_unscrubbable_and_says_how_to_show_it_is_nvidias() -> None:
    objects = _per_profile()
    (finding,) = [f for f in findings(*objects) if f.rule == "DRA016"]
    assert (finding.facet, finding.severity.label) == ("unscrubbable-class", "critical")
    assert "declare it under extra-classes with a pin-attribute in gpu.nvidia.com" in finding.message


def test_passthrough_gpus_of_nvidias_driver_are_never_scrubbed() -> None:
    """vfio.gpu.nvidia.com hands the GPU to a virtual machine, where no container runs CUDA."""
    accelerator = AcceleratorSlice("vfio.gpu.nvidia.com", "gpu.nvidia.com/productName", "GH100")
    objects = isolated_workload("app", image="i", slice=accelerator, namespace="ns")
    assert "initContainers" not in objects.workload["spec"]["template"]["spec"]
    assert _dra016(*objects) == [("unscrubbable-class", "/spec/template/spec/resourceClaims/0")]


def test_the_webhook_admits_a_pod_of_a_configured_nvidia_class_with_its_scrubber() -> None:
    """The webhook reads the template, not the DeviceClass: the configuration it runs with says
    whose the class is, as it says for the policies and `check`."""
    objects = _per_profile()
    configured = config({"extra-classes": {PER_PROFILE: PER_PROFILE_CLASS}})
    pods = [made.obj for made in cluster_creates(list(objects)) if made.kind == "Pod"]
    assert pods
    for configuration, allowed in ((configured, True), (Config(), False)):
        webhook = Webhook(RULES, configuration, templates=_ClusterTemplates(objects.claim_template))
        for pod in pods:
            response = webhook.review(_review(pod))
            assert response["allowed"] is allowed, response.get("status")
            if not allowed:
                assert "cannot scrub" in response["status"]["message"]
