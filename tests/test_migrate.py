"""`dra-guard migrate` without files: legacy names, the plan, whole documents, text splices.

File handling, the corpus and the command line are in tests/test_migrate_cli.py.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from dra_guard import verify_isolation_tag
from dra_guard.contract.catalog import DEVICE_CLASSES, DeviceClass
from dra_guard.engine.run import check_objects
from dra_guard.migrate import MigrationSettings, TemplateNames, migrate_documents, migrate_file
from dra_guard.migrate.edits import Edit
from dra_guard.migrate.legacy import Replacement, Unmigratable, resolve
from dra_guard.migrate.sites import site_label
from dra_guard.migrate.yaml_text import Unrealizable, compose_documents, detect_style, text_edits
from dra_guard.ruleapi.config import EXTRA_CLASSES
from testkit.rulecases import UNSCRUBBED_ACCEPTED, config

PINS = {"gpu.nvidia.com": "NVIDIA H100 80GB HBM3", "tpu.google.com": "v6e", "gpu.amd.com": "cpx_nps4"}
#: `--namespace team`: where an object that names no namespace is applied (the texts below
#: name none); a template's isolation tag binds its namespace, so migrate needs one.
SETTINGS = MigrationSettings(pins=PINS, namespace="team")


def compliant(documents: list[Any]) -> list[Any]:
    """The findings on migrated documents, the classes the scrubber cannot scrub accepted (as a
    platform running them must; migrate adds no scrubber for them, and DRA016 says so)."""
    return check_objects(documents, config(UNSCRUBBED_ACCEPTED)).findings


def pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = (), **meta: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init:
        spec = {"initContainers": list(init), **spec}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team", **meta},
        "spec": spec,
    }


def container(name: str = "main", **resources: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "image": "registry.example/app:1", "resources": resources}


def by_kind(documents: list[Any], kind: str) -> list[dict[str, Any]]:
    return [document for document in documents if isinstance(document, dict) and document.get("kind") == kind]


# --- which class and pin replace a legacy name -----------------------------------------


@pytest.mark.parametrize(
    ("name", "device_class", "pin"),
    [
        ("nvidia.com/mig-1g.10gb", "mig.nvidia.com", "1g.10gb"),
        # The device plugin writes `+` as `.` (k8s-device-plugin internal/rm/rm.go).
        ("nvidia.com/mig-3g.40gb.me", "mig.nvidia.com", "3g.40gb+me"),
        ("nvidia.com/mig-1g.24gb.me.all", "mig.nvidia.com", "1g.24gb+me.all"),
        ("nvidia.com/mig-1g.24gb-me", "mig.nvidia.com", "1g.24gb-me"),
        ("nvidia.com/mig-4g.96gb.gfx", "mig.nvidia.com", "4g.96gb+gfx"),
        ("nvidia.com/mig-1g.10gb.shared", "mig.nvidia.com", "1g.10gb"),
        ("nvidia.com/gpu", "gpu.nvidia.com", PINS["gpu.nvidia.com"]),
        ("nvidia.com/gpu.shared", "gpu.nvidia.com", PINS["gpu.nvidia.com"]),
        ("google.com/tpu", "tpu.google.com", "v6e"),
        ("amd.com/gpu", "gpu.amd.com", "cpx_nps4"),
        ("gpu.intel.com/i915", "gpu.intel.com", None),
        ("habana.ai/gaudi", "gaudi.intel.com", None),
        ("deviceclass.resource.kubernetes.io/mig.nvidia.com", "mig.nvidia.com", None),
    ],
)
def test_each_legacy_name_gets_its_class_and_pin(name: str, device_class: str, pin: str | None) -> None:
    found = resolve(name, PINS)
    assert isinstance(found, Replacement)
    assert (found.device_class.name, found.pin_value) == (device_class, pin)
    assert (found.note is not None) == name.endswith(".shared")


@pytest.mark.parametrize(
    "name", ["aws.amazon.com/neuroncore", "nvidia.com/mig-big", "deviceclass.resource.kubernetes.io/fpga.example.org"]
)
def test_names_without_a_class_cannot_be_migrated(name: str) -> None:
    assert isinstance(resolve(name, PINS), Unmigratable)


def test_a_class_from_the_configuration_is_found() -> None:
    fpga = DeviceClass("fpga.example.org", "fpga.example.org", "bitstream", "resource.kubernetes.io/pcieRoot")
    found = resolve(
        "deviceclass.resource.kubernetes.io/fpga.example.org", {"fpga.example.org": "v2"}, {fpga.name: fpga}.get
    )
    assert isinstance(found, Replacement) and found.make_slice(1).pin_attribute == "fpga.example.org/bitstream"


# --- objects in, objects out ------------------------------------------------------------


def test_a_pod_gets_a_tagged_template_and_its_wiring_and_keeps_everything_else() -> None:
    original = pod(container(limits={"nvidia.com/mig-1g.5gb": 1, "memory": "1Gi"}, requests={"cpu": "1"}))
    original["spec"]["containers"][0]["resources"]["claims"] = [{"name": "existing"}]
    result = migrate_documents([copy.deepcopy(original)], SETTINGS)
    workload, template = result.documents
    assert template["metadata"]["name"] == "p-mig-1g-5gb"
    assert template["metadata"]["namespace"] == "team"
    assert verify_isolation_tag(template)
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1
    resources = workload["spec"]["containers"][0]["resources"]
    assert resources == {
        "limits": {"memory": "1Gi"},
        "requests": {"cpu": "1"},
        "claims": [{"name": "existing"}, {"name": "accelerator"}],
    }
    assert workload["spec"]["resourceClaims"] == [{"name": "accelerator", "resourceClaimTemplateName": "p-mig-1g-5gb"}]
    assert workload["metadata"] == original["metadata"]
    [report] = result.reports
    assert report.status == "migrated" and not report.errors
    assert [(request.container, request.resource, request.count) for request in report.requests] == [
        ("main", "nvidia.com/mig-1g.5gb", 1)
    ]


def test_the_output_passes_every_rule() -> None:
    documents = [
        pod(container(limits={"nvidia.com/gpu": 2})),
        pod(container(limits={"google.com/tpu": 1}), name="tpu"),
        pod(container(limits={"amd.com/gpu": 1}), name="amd"),
    ]
    result = migrate_documents(documents, MigrationSettings(pins=PINS, tenant_from_namespace=True))
    assert compliant(result.documents) == []
    # Not accepted, the pods of classes the scrubber cannot scrub are reported, and only they.
    unaccepted = check_objects(result.documents).findings
    assert {(f.rule, f.facet) for f in unaccepted} == {("DRA016", "unscrubbable-class")}
    scrubbed_pods = [doc for doc in result.documents if doc["kind"] == "Pod" and "initContainers" in doc["spec"]]
    assert scrubbed_pods and all(doc["spec"]["initContainers"][0]["name"] == "dra-guard-scrub" for doc in scrubbed_pods)
    assert all(
        template["metadata"]["annotations"]["dra-guard.io/tenant"] == "team"
        for template in by_kind(result.documents, "ResourceClaimTemplate")
    )


def test_an_emptied_limits_or_requests_is_dropped_and_equal_requests_are_one_request() -> None:
    both = {"nvidia.com/mig-2g.10gb": "2"}
    result = migrate_documents([pod(container(limits=dict(both), requests=dict(both)))], SETTINGS)
    workload, template = result.documents
    assert workload["spec"]["containers"][0]["resources"] == {"claims": [{"name": "accelerator"}]}
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    assert len(result.reports[0].requests) == 1


def test_counts_follow_the_kubelet_init_containers_hand_devices_on_sidecars_add() -> None:
    mig = {"nvidia.com/mig-1g.5gb": 1}
    sidecar = {**container("sidecar", limits=dict(mig)), "restartPolicy": "Always"}
    init = container("init", limits={"nvidia.com/mig-1g.5gb": 4})
    one_init = migrate_documents([pod(container(limits=dict(mig)), init=(init,))], SETTINGS)
    assert one_init.reports[0].templates[0].count == 4  # max(init 4, main 1)
    with_sidecar = migrate_documents(
        [pod(container(limits={"nvidia.com/mig-1g.5gb": 2}), init=(container("init", limits=dict(mig)), sidecar))],
        SETTINGS,
    )
    [template] = with_sidecar.reports[0].templates
    assert template.count == 3 and template.containers == ("init", "sidecar", "main")
    assert "share one claim" in with_sidecar.reports[0].notes[0].text


def test_two_profiles_make_two_templates_and_two_pod_claims() -> None:
    result = migrate_documents(
        [
            pod(
                container("a", limits={"nvidia.com/mig-2g.10gb": 1}),
                container("b", limits={"nvidia.com/mig-1g.5gb": 1}),
            )
        ],
        SETTINGS,
    )
    workload = result.documents[0]
    assert [claim["name"] for claim in workload["spec"]["resourceClaims"]] == ["mig-1g-5gb", "mig-2g-10gb"]
    assert [c["resources"]["claims"] for c in workload["spec"]["containers"]] == [
        [{"name": "mig-2g-10gb"}],
        [{"name": "mig-1g-5gb"}],
    ]
    assert compliant(result.documents) == []


def test_names_never_collide_with_templates_in_the_input_and_are_deterministic() -> None:
    existing = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "p-mig-1g-5gb", "namespace": "team"},
    }
    documents = [existing, pod(container(limits={"nvidia.com/mig-1g.5gb": 1}))]
    first = migrate_documents(copy.deepcopy(documents), SETTINGS)
    assert by_kind(first.documents, "ResourceClaimTemplate")[1]["metadata"]["name"] == "p-mig-1g-5gb-2"
    assert migrate_documents(copy.deepcopy(documents), SETTINGS).documents == first.documents
    # Another namespace is another name space.
    elsewhere = migrate_documents(
        [existing, pod(container(limits={"nvidia.com/mig-1g.5gb": 1}), namespace="b")], SETTINGS
    )
    assert by_kind(elsewhere.documents, "ResourceClaimTemplate")[1]["metadata"]["name"] == "p-mig-1g-5gb"


def test_migrating_the_output_again_changes_nothing() -> None:
    first = migrate_documents([pod(container(limits={"nvidia.com/gpu": 1}))], SETTINGS)
    again = migrate_documents(copy.deepcopy(first.documents), SETTINGS)
    assert again.documents == first.documents and again.reports == []


def test_cronjobs_and_list_items_are_migrated() -> None:
    cronjob = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "team"},
        "spec": {"jobTemplate": {"spec": {"template": {"spec": pod(container(limits={"google.com/tpu": 1}))["spec"]}}}},
    }
    listed = {"apiVersion": "v1", "kind": "List", "items": [pod(container(limits={"amd.com/gpu": 1}), name="x")]}
    result = migrate_documents([cronjob, listed], SETTINGS)
    assert [document["kind"] for document in result.documents] == [
        "CronJob",
        "ResourceClaimTemplate",
        "List",
        "ResourceClaimTemplate",
    ]
    assert compliant(result.documents) == []


@pytest.mark.parametrize(
    ("resources", "settings", "message"),
    [
        ({"limits": {"nvidia.com/gpu": 1}}, MigrationSettings(), "pass --gpu-product VALUE"),
        ({"limits": {"google.com/tpu": 1}}, MigrationSettings(), "pass --tpu-gen VALUE"),
        ({"limits": {"gpu.intel.com/i915": 1}}, MigrationSettings(), "pass --pin gpu.intel.com=VALUE"),
        ({"limits": {"aws.amazon.com/neuron": 1}}, SETTINGS, "knows no DRA device class"),
        ({"limits": {"nvidia.com/mig-1g.5gb": 2}, "requests": {"nvidia.com/mig-1g.5gb": 1}}, SETTINGS, "differ"),
        ({"limits": {"nvidia.com/mig-1g.5gb": "1.5"}}, SETTINGS, "not a whole number"),
        ({"limits": {"nvidia.com/mig-1g.5gb": True}}, SETTINGS, "not a whole number"),
        # The builders' own validation reaches the report: a product name with a newline.
        ({"limits": {"nvidia.com/gpu": 1}}, MigrationSettings(pins={"gpu.nvidia.com": "A\nB"}), "product_name"),
        (
            {"limits": {"example.com/gpu": 1}},
            MigrationSettings(extra_legacy_resources=frozenset({"example.com/gpu"})),
            "knows no DRA device class",
        ),
    ],
)
def test_what_cannot_be_migrated_is_reported_and_left_alone(
    resources: dict[str, Any], settings: MigrationSettings, message: str
) -> None:
    original = pod(container(**resources), container("other", limits={"nvidia.com/mig-1g.5gb": 1}))
    result = migrate_documents([copy.deepcopy(original)], settings)
    assert result.documents == [original]  # the whole object, the migratable container too
    [report] = result.reports
    assert report.status == "refused" and message in report.errors[0].text
    assert report.templates == []


def test_unknown_kinds_with_a_legacy_request_are_refused_with_the_path() -> None:
    crd = {
        "apiVersion": "example.com/v1",
        "kind": "Trainer",
        "metadata": {"name": "t"},
        "spec": {"worker": {"containers": [container(limits={"nvidia.com/mig-1g.5gb": 1})]}},
    }
    result = migrate_documents([copy.deepcopy(crd)], SETTINGS)
    assert result.documents == [crd]
    [error] = result.reports[0].errors
    assert error.path == ("spec", "worker", "containers", 0, "resources", "limits", "nvidia.com/mig-1g.5gb")
    assert "kind Trainer (example.com) is no workload migrate knows: a pod spec found there only by its shape" in (
        error.text
    )


def test_an_accelerator_asked_through_an_operators_field_is_refused_not_passed_over() -> None:
    """A SparkApplication's executor.gpu and a KubeAI Model's resourceProfile become pod limits
    (check reports DRA001 on them); migrate said "0 refused" and exited 0."""
    spark = {
        "apiVersion": "sparkoperator.k8s.io/v1beta2",
        "kind": "SparkApplication",
        "metadata": {"name": "s", "namespace": "team"},
        "spec": {"executor": {"gpu": {"name": "nvidia.com/gpu", "quantity": 1}}},
    }
    model = {
        "apiVersion": "kubeai.org/v1",
        "kind": "Model",
        "metadata": {"name": "m", "namespace": "team"},
        "spec": {"url": "hf://x/y", "engine": "VLLM", "resourceProfile": "nvidia-gpu-l4:1"},
    }
    result = migrate_documents([copy.deepcopy(spark), copy.deepcopy(model)], SETTINGS)
    assert result.documents == [spark, model]
    [spark_error], [model_error] = (report.errors for report in result.reports)
    assert spark_error.path == ("spec", "executor", "gpu", "name")
    assert model_error.path == ("spec", "resourceProfile")
    assert all(report.status == "refused" for report in result.reports)
    assert "migrate rewrites pod specs, not an operator's fields" in model_error.text
    own_profile = {**model, "spec": {**model["spec"], "resourceProfile": "team-a100:2"}}
    [report] = migrate_documents([copy.deepcopy(own_profile)], SETTINGS).reports
    assert report.status == "refused" and "cannot verify" in report.errors[0].text
    cpu = {**model, "spec": {**model["spec"], "resourceProfile": "cpu:1"}}
    assert migrate_documents([copy.deepcopy(cpu)], SETTINGS).reports == []


def test_an_object_without_a_name_is_refused_and_generate_name_is_used() -> None:
    nameless = pod(container(limits={"nvidia.com/mig-1g.5gb": 1}))
    del nameless["metadata"]["name"]
    assert "metadata.name" in migrate_documents([nameless], SETTINGS).reports[0].errors[0].text
    nameless["metadata"]["generateName"] = "run-"
    result = migrate_documents([nameless], SETTINGS)
    assert result.documents[1]["metadata"]["name"] == "run-mig-1g-5gb"


def test_non_accelerator_classes_of_the_configuration_are_left_alone() -> None:
    nic = pod(container(limits={"deviceclass.resource.kubernetes.io/nic.example.com": 1}))
    settings = MigrationSettings(non_accelerator_classes=frozenset({"nic.example.com"}))
    assert migrate_documents([copy.deepcopy(nic)], settings).documents == [nic]


def test_a_request_for_zero_devices_is_removed_with_a_note() -> None:
    result = migrate_documents([pod(container(limits={"nvidia.com/gpu": 0}))], SETTINGS)
    assert result.documents == [
        {**pod(container()), "spec": {"containers": [{"name": "main", "image": "registry.example/app:1"}]}}
    ]
    assert "asked for 0 devices" in result.reports[0].notes[0].text


def test_limit_range_defaults_are_removed_with_a_note() -> None:
    limit_range = {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "l", "namespace": "team"},
        "spec": {
            "limits": [
                {"type": "Container", "default": {"nvidia.com/gpu": 1, "memory": "1Gi"}, "max": {"nvidia.com/gpu": 2}}
            ]
        },
    }
    result = migrate_documents([limit_range], MigrationSettings())
    assert result.documents[0]["spec"]["limits"] == [{"type": "Container", "default": {"memory": "1Gi"}}]
    assert [note.path for note in result.reports[0].notes] == [
        ("spec", "limits", 0, "default"),
        ("spec", "limits", 0, "max"),
    ]
    assert compliant(result.documents) == []


def test_hmac_tags_verify_with_the_key_only() -> None:
    result = migrate_documents([pod(container(limits={"nvidia.com/mig-1g.5gb": 1}))], MigrationSettings(hmac_key="k"))
    template = result.documents[1]
    assert template["metadata"]["annotations"]["dra-guard.io/isolation-tag"].startswith("hmac-sha256:")
    assert verify_isolation_tag(template, "k") and not verify_isolation_tag(template, "other")


@pytest.mark.parametrize("api_version", ["resource.k8s.io/v1beta1", "resource.k8s.io/v1beta2"])
def test_the_api_version_is_the_templates(api_version: str) -> None:
    result = migrate_documents(
        [pod(container(limits={"nvidia.com/mig-1g.5gb": 1}))],
        MigrationSettings(api_version=api_version, runtime_config=(f"{api_version}=true",)),
    )
    assert result.documents[1]["apiVersion"] == api_version
    assert compliant(result.documents) == []


def test_a_beta_api_version_needs_the_runtime_config_and_a_namespace_is_needed() -> None:
    legacy = pod(container(limits={"nvidia.com/mig-1g.5gb": 1}))
    result = migrate_documents([legacy], MigrationSettings(api_version="resource.k8s.io/v1beta2"))
    assert len(result.documents) == 1
    [report] = result.reports
    assert [error.text for error in report.errors] == [
        "api_version: resource.k8s.io/v1beta2 is not served by a default Kubernetes 1.36 cluster; pass "
        'runtime_config=["resource.k8s.io/v1beta2=true"] if your API server enables it (--runtime-config)'
    ]
    legacy["metadata"].pop("namespace")
    [report] = migrate_documents([legacy], MigrationSettings()).reports
    assert [error.text for error in report.errors] == [
        "has no namespace, and its claim template needs one (the isolation tag binds the namespace the claim "
        "lands in): pass --namespace NS, the namespace you apply it to"
    ]


# --- text --------------------------------------------------------------------------------


def migrate_text(text: str, settings: MigrationSettings = SETTINGS) -> tuple[str, Any]:
    result = migrate_file(text.encode(), "in.yaml", settings, TemplateNames())
    return result.output.decode(), result


def test_only_the_changed_lines_differ_and_the_template_follows_its_document() -> None:
    text = """\
# header comment
apiVersion: v1
kind: Pod
metadata:
  name: p   # trailing comment
  namespace: team
spec:
  containers:
      -   name: main       # odd indentation is kept
          image: 'quoted'
          resources:
            limits:
              memory: 1Gi
              nvidia.com/mig-1g.5gb: 1 # the slice
            requests: {cpu: "1"}
  restartPolicy: Never
# trailing comment of the pod
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
"""
    output, result = migrate_text(text)
    assert not result.refused
    template = output.split("---\n")[1]
    assert output == text.replace("              nvidia.com/mig-1g.5gb: 1 # the slice\n", "").replace(
        '            requests: {cpu: "1"}\n  restartPolicy: Never\n# trailing comment of the pod\n',
        '            requests: {cpu: "1"}\n'
        "            claims:\n"
        "                -   name: accelerator\n"
        "  restartPolicy: Never\n"
        "  resourceClaims:\n"
        "      -   name: accelerator\n"
        "          resourceClaimTemplateName: p-mig-1g-5gb\n"
        "  initContainers:\n"
        "      -   name: dra-guard-scrub\n"
        "          image: ghcr.io/dra-guard/scrub:0.1.0\n"
        "          command:\n"
        "              -   dra-guard\n"
        "              -   scrub\n"
        "          resources:\n"
        "            claims:\n"
        "                -   name: accelerator\n"
        "# trailing comment of the pod\n",
    ).replace("---\n", "---\n" + template + "---\n", 1)
    assert yaml.safe_load(template)["kind"] == "ResourceClaimTemplate"


def test_a_file_without_a_final_newline_gets_one_before_new_lines() -> None:
    head = "kind: Pod\napiVersion: v1\nmetadata: {name: p}\nspec:\n  containers:\n  - name: m\n    resources:\n"
    output, _ = migrate_text(head + "      limits:\n        nvidia.com/gpu: 1")
    assert output.startswith(head + "      claims:\n      - name: accelerator\n  resourceClaims:\n")


def test_flow_collections_are_edited_inside_their_brackets() -> None:
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        'spec: {containers: [{name: m, resources: {limits: {cpu: "1", nvidia.com/gpu: 1, memory: 1Gi}}}]}\n'
    )
    output, _ = migrate_text(text)
    first_document = output.split("---\n")[0]
    assert first_document == (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        'spec: {containers: [{name: m, resources: {limits: {cpu: "1", memory: 1Gi}, claims: [{name: accelerator}]}}], '
        "resourceClaims: [{name: accelerator, resourceClaimTemplateName: p-gpu-nvidia-h100-80gb-hbm3}], "
        'initContainers: [{name: dra-guard-scrub, image: "ghcr.io/dra-guard/scrub:0.1.0", command: [dra-guard, '
        "scrub], resources: {claims: [{name: accelerator}]}}]}\n"
    )


SCRUBBER_BLOCK = (
    "  - name: dra-guard-scrub\n    image: ghcr.io/dra-guard/scrub:0.1.0\n    command:\n    - dra-guard\n"
    "    - scrub\n    resources:\n      claims:\n      - name: accelerator\n"
)


def test_the_scrubber_goes_before_the_init_containers_already_there() -> None:
    block = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team}\nspec:\n  initContainers:\n"
        "  - name: fetch\n    image: busybox:1.36\n  containers:\n  - name: main\n"
        "    resources: {limits: {nvidia.com/gpu: 1}}\n"
    )
    output, result = migrate_text(block)
    assert not result.refused
    assert output.split("---\n")[0].startswith(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team}\nspec:\n  initContainers:\n"
        + SCRUBBER_BLOCK
        + "  - name: fetch\n"
    )
    flow = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: t}\n"
        "spec: {initContainers: [{name: f, image: b}], "
        "containers: [{name: m, resources: {limits: {nvidia.com/gpu: 1}}}]}\n"
    )
    output, _ = migrate_text(flow)
    assert 'spec: {initContainers: [{name: dra-guard-scrub, image: "ghcr.io/dra-guard/scrub:0.1.0", command: ' in output
    assert "scrub], resources: {claims: [{name: accelerator}]}}, {name: f, image: b}]" in output


def test_a_scrubber_already_first_takes_the_new_claim_and_one_elsewhere_is_refused() -> None:
    first = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team}\nspec:\n  initContainers:\n"
        "  - name: dra-guard-scrub\n    image: ghcr.io/dra-guard/scrub:0.1.0\n    command: [dra-guard, scrub]\n"
        "  containers:\n  - name: main\n    resources: {limits: {nvidia.com/gpu: 1}}\n"
    )
    output, result = migrate_text(first)
    assert not result.refused
    (pod_object, _) = yaml.safe_load_all(output)
    assert pod_object["spec"]["initContainers"][0]["resources"] == {"claims": [{"name": "accelerator"}]}
    assert len(pod_object["spec"]["initContainers"]) == 1
    second = first.replace("  initContainers:\n", "  initContainers:\n  - name: fetch\n    image: busybox:1.36\n")
    output, result = migrate_text(second)
    assert result.refused and output == second


def test_no_scrubber_when_told_and_the_image_given() -> None:
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team}\nspec:\n  containers:\n"
        "  - name: main\n    resources: {limits: {nvidia.com/gpu: 1}}\n"
    )
    output, _ = migrate_text(text, MigrationSettings(pins=SETTINGS.pins, scrub_image=None))
    assert "initContainers" not in output
    image = "registry.example/scrub@sha256:" + "b" * 64
    output, _ = migrate_text(text, MigrationSettings(pins=SETTINGS.pins, scrub_image=image))
    assert f"image: {image}" in output


@pytest.mark.parametrize(
    "look_alike",
    [
        {"command": ["true"]},
        {"command": ["dra-guard", "scrub"], "restartPolicy": "Always"},
        {"image": "registry.example/other:1", "command": ["dra-guard", "scrub"]},
        {"command": ["dra-guard", "scrub"], "securityContext": {"privileged": True}},
    ],
    ids=["command", "sidecar", "image", "privileged"],
)
def test_a_look_alike_scrubber_is_not_given_the_claims(look_alike: dict[str, Any]) -> None:
    """A first init container of the scrubber's name that would not scrub first was handed the
    new claims, and the object reported migrated."""
    scrubber = {"name": "dra-guard-scrub", "image": "ghcr.io/dra-guard/scrub:0.1.0", **look_alike}
    legacy = pod(container(limits={"nvidia.com/gpu": 1}))
    legacy["spec"]["initContainers"] = [scrubber]
    result = migrate_documents([copy.deepcopy(legacy)], MigrationSettings(pins=PINS, namespace="team"))
    (report,) = result.reports
    assert report.status != "migrated" and result.documents == [legacy]
    assert "is named 'dra-guard-scrub' but is not the scrubber" in report.errors[0].text


def test_scrub_before_use_without_a_scrubber_is_refused_as_the_command_line_refuses_it() -> None:
    """Every template would declare an erasure no pod performs (DRA004, DRA016): migrate_documents
    wrote them, while `dra-guard migrate --sanitization ScrubBeforeUse --no-scrubber` was refused."""
    with pytest.raises(ValueError, match=r"^sanitization: ScrubBeforeUse declares that the scrubber runs first"):
        MigrationSettings(pins=PINS, sanitization="ScrubBeforeUse", scrub_image=None)


def test_scrub_before_use_is_refused_for_an_object_whose_class_nothing_scrubs() -> None:
    """ScrubBeforeUse on a TPU's template would declare an erasure nothing performs (the pod
    gets no scrubber): that object is refused, with the builders' reason; an NVIDIA one is
    migrated, with the scrubber that performs it."""
    settings = MigrationSettings(pins=PINS, namespace="team", sanitization="ScrubBeforeUse")
    tpu = pod(container(limits={"google.com/tpu": 4}), name="tpu")
    gpu = pod(container(limits={"nvidia.com/gpu": 1}), name="gpu")
    result = migrate_documents([copy.deepcopy(tpu), copy.deepcopy(gpu)], settings)
    refused, migrated = result.reports
    assert refused.status != "migrated" and result.documents[0] == tpu
    assert "sanitization: ScrubBeforeUse declares that the scrubber erases the devices" in refused.errors[0].text
    assert "tpu.google.com" in refused.errors[0].text
    assert migrated.status == "migrated"
    (template,) = by_kind(result.documents, "ResourceClaimTemplate")
    assert template["metadata"]["annotations"]["dra-guard.io/sanitization"] == "ScrubBeforeUse"
    assert check_objects(result.documents[1:]).findings == []


def test_a_configured_class_of_nvidias_driver_gets_the_scrubber_and_passes() -> None:
    """NVIDIA's per-profile class (README, KEP-5004), declared under extra-classes: its devices
    are NVIDIA's, so the pod runs the scrubber, and `check` with the same configuration passes."""
    selector = (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig' && "
        "device.attributes['gpu.nvidia.com'].profile == '1g.12gb'"
    )
    options = {
        "extra-classes": {
            "mig-1g-12gb.gpu.nvidia.com": {"pin-attribute": "gpu.nvidia.com/profile", "selector": selector}
        }
    }
    configured = config(options)
    settings = MigrationSettings(
        pins={"mig-1g-12gb.gpu.nvidia.com": "1g.12gb"},
        namespace="team",
        extra_classes=configured.get(EXTRA_CLASSES),
    )
    legacy = pod(container(limits={"deviceclass.resource.kubernetes.io/mig-1g-12gb.gpu.nvidia.com": 1}))
    result = migrate_documents([legacy], settings)
    (migrated,) = by_kind(result.documents, "Pod")
    assert migrated["spec"]["initContainers"][0]["name"] == "dra-guard-scrub"
    assert check_objects(result.documents, configured).findings == []


def _template_of(name: str, device_class: str, **request: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "team"},
        "spec": {
            "spec": {
                "devices": {"requests": [{"name": "dev", "exactly": {"deviceClassName": device_class, **request}}]}
            }
        },
    }


def _with_old_claim(legacy: dict[str, Any], **target: str) -> dict[str, Any]:
    """`legacy` with a pod claim `old` it had before migrate, used by its container."""
    legacy["spec"]["resourceClaims"] = [{"name": "old", **target}]
    legacy["spec"]["containers"][0]["resources"]["claims"] = [{"name": "old"}]
    return legacy


def _scrubber_claims(documents: list[Any]) -> list[str]:
    (migrated,) = by_kind(documents, "Pod")
    scrubber = migrated["spec"]["initContainers"][0]
    return [claim["name"] for claim in scrubber["resources"]["claims"]]


def test_the_scrubber_holds_the_claims_the_pod_already_had_and_check_passes() -> None:
    """The scrubber migrate added held only the claims it created: a MIG claim the pod already
    had went unscrubbed, and `check` on migrate's output reported DRA016 claim-not-scrubbed."""
    legacy = _with_old_claim(pod(container(limits={"nvidia.com/gpu": 1})), resourceClaimTemplateName="old-slice")
    result = migrate_documents([_template_of("old-slice", "mig.nvidia.com"), legacy], SETTINGS)
    assert _scrubber_claims(result.documents) == ["old", "accelerator"]
    assert [f.facet for f in compliant(result.documents) if f.rule == "DRA016"] == []
    (report,) = result.reports
    assert report.status == "migrated" and report.notes == []


def test_a_claim_the_scrubber_does_not_scrub_or_cannot_see_is_left_out_and_the_unseen_one_said() -> None:
    """A claim of a class it cannot scrub stays out (it would exit 1 on it); one whose template
    is not among migrate's input stays out too, with a note, never silently."""
    tpu = _with_old_claim(pod(container(limits={"nvidia.com/gpu": 1})), resourceClaimTemplateName="tpus")
    result = migrate_documents([_template_of("tpus", "tpu.google.com"), tpu], SETTINGS)
    assert _scrubber_claims(result.documents) == ["accelerator"]
    assert result.reports[0].notes == []
    unseen = _with_old_claim(pod(container(limits={"nvidia.com/gpu": 1})), resourceClaimName="shared-gpus")
    result = migrate_documents([unseen], SETTINGS)
    assert _scrubber_claims(result.documents) == ["accelerator"]
    (note,) = result.reports[0].notes
    assert note.path == ("spec", "resourceClaims", 0)
    assert note.text.startswith(
        "pod claim 'old' (ResourceClaim 'shared-gpus') is not among the objects migrate was given"
    )


def test_a_class_the_inputs_device_class_shows_to_be_mig_is_held_as_check_requires() -> None:
    """A class neither the catalog nor the configuration knows is decided by the input's
    DeviceClass, as `check` decides it."""
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "mig-1g.example.com"},
        "spec": {
            "selectors": [
                {
                    "cel": {
                        "expression": "device.driver == 'gpu.nvidia.com' && "
                        "device.attributes['gpu.nvidia.com'].type == 'mig'"
                    }
                }
            ]
        },
    }
    legacy = _with_old_claim(pod(container(limits={"nvidia.com/gpu": 1})), resourceClaimTemplateName="old-slice")
    result = migrate_documents([device_class, _template_of("old-slice", "mig-1g.example.com"), legacy], SETTINGS)
    assert _scrubber_claims(result.documents) == ["old", "accelerator"]
    assert [f for f in check_objects(result.documents, config({})).findings if f.rule == "DRA016"] == []


def test_a_scrubber_already_first_gets_the_old_claims_it_lacks_once() -> None:
    scrubber = {"name": "dra-guard-scrub", "image": "ghcr.io/dra-guard/scrub:0.1.0", "command": ["dra-guard", "scrub"]}
    legacy = _with_old_claim(pod(container(limits={"nvidia.com/gpu": 1})), resourceClaimTemplateName="old-slice")
    legacy["spec"]["initContainers"] = [scrubber]
    template = _template_of("old-slice", "mig.nvidia.com")
    result = migrate_documents([template, copy.deepcopy(legacy)], SETTINGS)
    assert _scrubber_claims(result.documents) == ["old", "accelerator"]
    scrubber["resources"] = {"claims": [{"name": "old"}]}
    result = migrate_documents([template, legacy], SETTINGS)
    assert _scrubber_claims(result.documents) == ["old", "accelerator"]


@pytest.mark.parametrize(
    "selector",
    [
        None,  # a pin attribute says the driver, not which of its devices
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'",
    ],
    ids=["no-selector", "vfio"],
)
def test_a_configured_class_not_shown_to_be_gpus_or_mig_gets_no_scrubber_and_no_scrub_before_use(
    selector: str | None,
) -> None:
    """As `check` decides it with the same configuration: a class of NVIDIA's driver whose
    selector does not fix type gpu or mig (its passthrough devices, or none given) is not one
    the scrubber scrubs, so migrate neither adds it nor declares ScrubBeforeUse for it."""
    declared: dict[str, Any] = {"pin-attribute": "gpu.nvidia.com/productName"}
    if selector is not None:
        declared["selector"] = selector
    configured = config({"extra-classes": {"passthrough.example.com": declared}})
    legacy = pod(container(limits={"deviceclass.resource.kubernetes.io/passthrough.example.com": 1}))
    options: dict[str, Any] = {
        "pins": {"passthrough.example.com": "GH100"},
        "namespace": "team",
        "extra_classes": configured.get(EXTRA_CLASSES),
    }
    result = migrate_documents([copy.deepcopy(legacy)], MigrationSettings(**options))
    (migrated,) = by_kind(result.documents, "Pod")
    assert "initContainers" not in migrated["spec"]
    refused = migrate_documents([copy.deepcopy(legacy)], MigrationSettings(**options, sanitization="ScrubBeforeUse"))
    (report,) = refused.reports
    assert report.status != "migrated" and refused.documents == [legacy]
    assert "sanitization: ScrubBeforeUse declares that the scrubber erases the devices" in report.errors[0].text


@pytest.mark.parametrize(
    ("text", "why"),
    [
        # An anchor shared by two containers: editing it once would change both.
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: a\n    resources: &r\n"
            "      limits: {nvidia.com/gpu: 1}\n  - name: b\n    resources: *r\n",
            "cannot edit this object",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nbase: &b {nvidia.com/gpu: 1}\nspec:\n  containers:\n"
            "  - name: a\n    resources:\n      limits:\n        <<: *b\n        memory: 1Gi\n",
            "merge key",
        ),
    ],
)
def test_what_cannot_be_spliced_faithfully_is_refused_untouched(text: str, why: str) -> None:
    output, result = migrate_text(text)
    assert output == text and result.refused
    assert any(why in error.text for entry in result.reports for error in entry.report.errors)


def test_unrealizable_edits_are_named() -> None:
    text = "a:\n  b: 1\n"
    [root] = compose_documents(text)
    with pytest.raises(Unrealizable, match="every key"):
        text_edits(text, root, [Edit("delete", ("a", "b"))], detect_style(root))
    with pytest.raises(Unrealizable, match="already there"):
        text_edits(text, root, [Edit("add", ("a", "b"), 2)], detect_style(root))


def test_every_catalog_class_with_a_legacy_name_is_migratable_with_a_pin() -> None:
    # A value each driver publishes (the catalog lists some), or any for open-ended ones.
    pins = {name: (known.known_pin_values or ("value",))[0] for name, known in DEVICE_CLASSES.items()}
    pins["gpu.amd.com"] = "cpx_nps4"
    for device_class in DEVICE_CLASSES.values():
        for name in device_class.legacy_resources:
            found = resolve(name, pins)
            assert isinstance(found, Replacement), name
            assert found.make_slice(1).device_class == device_class.name


def test_crlf_files_stay_crlf_and_a_bom_stays() -> None:
    text = (
        "\ufeffapiVersion: v1\r\nkind: Pod\r\nmetadata: {name: p}\r\nspec:\r\n  containers:\r\n  - name: m\r\n"
        "    resources:\r\n      limits: {nvidia.com/gpu: 1}\r\n"
    )
    output, result = migrate_text(text)
    assert not result.refused and output.startswith("\ufeffapiVersion: v1\r\n")
    assert "\n" not in output.replace("\r\n", "")
    assert "kind: ResourceClaimTemplate\r\n" in output


def test_a_shape_the_plan_did_not_foresee_is_refused_not_crashed() -> None:
    original = pod(container(limits={"nvidia.com/gpu": 1}))
    original["spec"]["resourceClaims"] = None
    result = migrate_documents([copy.deepcopy(original)], SETTINGS)
    assert result.documents == [original]
    assert "cannot edit this object" in result.reports[0].errors[0].text


@pytest.mark.parametrize(
    ("obj", "path", "label"),
    [
        (
            {"spec": {"replicatedJobs": [{"name": "workers"}]}},
            ("spec", "replicatedJobs", 0, "template", "spec"),
            "workers",
        ),
        (
            {"spec": {"workerGroupSpecs": [{"groupName": "GPU_Group"}]}},
            ("spec", "workerGroupSpecs", 0, "template", "spec"),
            "gpu-group",
        ),
        ({"spec": {"workerGroupSpecs": [{}]}}, ("spec", "workerGroupSpecs", 0, "template", "spec"), "0"),
        ({}, ("spec", "leaderWorkerTemplate", "leaderTemplate", "spec"), "leader"),
        ({}, ("spec", "pytorchReplicaSpecs", "Worker", "template", "spec"), "worker"),
        ({}, ("spec", "headGroupSpec", "template", "spec"), "head"),
        ({}, ("spec", "submitterPodTemplate", "spec"), "submitter"),
        ({}, ("spec", "template", "spec"), "pod"),
    ],
)
def test_pod_sites_are_labelled_for_template_names(obj: dict[str, Any], path: tuple[Any, ...], label: str) -> None:
    assert site_label(obj, path) == label


def test_empty_documents_and_separators_as_helm_prints_them() -> None:
    pod_text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: m\n"
        "    resources:\n      limits: {nvidia.com/gpu: 1}\n"
    )
    text = (
        "---\n# Source: chart/templates/cm.yaml\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n"
        + pod_text
        + "---\n"
    )
    output, result = migrate_text(text)
    assert not result.refused, [error for entry in result.reports for error in entry.report.errors] + result.errors
    assert output.startswith(text[: text.index("spec:")])
    assert output.endswith("count: 1\n---\n")


# --- pod templates inside workload CRDs (rules in dra_guard/migrate/operators.py) ----------------


def crd(api_version: str, kind: str, spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "w", "namespace": "team", **metadata},
        "spec": spec,
    }


def template_spec(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"template": {"spec": {"containers": list(containers), **spec}}}


GPU = {"nvidia.com/gpu": 2}
MIG = {"nvidia.com/mig-1g.5gb": 1}


def migrated(obj: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    result = migrate_documents([copy.deepcopy(obj)], SETTINGS)
    [report] = result.reports
    return result.documents[0], report


def refused(obj: dict[str, Any]) -> str:
    result = migrate_documents([copy.deepcopy(obj)], SETTINGS)
    assert result.documents == [obj]
    [report] = result.reports
    assert report.status == "refused"
    return " | ".join(error.text for error in report.errors)


def ray_cluster(group: dict[str, Any], *, head: bool = False) -> dict[str, Any]:
    if head:
        return crd("ray.io/v1", "RayCluster", {"headGroupSpec": group})
    head_group = template_spec(container("ray-head"))
    return crd("ray.io/v1", "RayCluster", {"headGroupSpec": head_group, "workerGroupSpecs": [group]})


@pytest.mark.parametrize(
    ("group", "num_gpus"),
    [
        ({"rayStartParams": {}, **template_spec(container(limits=dict(GPU)))}, "2"),
        ({**template_spec(container(limits=dict(GPU)))}, "2"),  # no rayStartParams: one is added
        ({"rayStartParams": {}, **template_spec(container(limits=dict(MIG)))}, "1"),  # KubeRay counts MIG too
        # The first non-zero GPU name in name order wins, as in KubeRay: amd.com/gpu before nvidia.com/gpu.
        ({"rayStartParams": {}, **template_spec(container(limits={"nvidia.com/gpu": 2, "amd.com/gpu": 3}))}, "3"),
        ({"rayStartParams": {"num-gpus": "1"}, **template_spec(container(limits=dict(GPU)))}, "1"),  # already set
        ({"resources": {"GPU": "2"}, **template_spec(container(limits=dict(GPU)))}, None),  # the group's resources win
        ({"rayStartParams": {}, **template_spec(container(limits={"nvidia.com/gpu": 2}, requests={}))}, "2"),
        # Only limits count, and only the Ray container (the first).
        ({"rayStartParams": {}, **template_spec(container(requests=dict(GPU)))}, None),
        ({"rayStartParams": {}, **template_spec(container("ray"), container("side", limits=dict(GPU)))}, None),
    ],
)
def test_kuberay_keeps_the_num_gpus_it_took_from_the_limit(group: dict[str, Any], num_gpus: str | None) -> None:
    pins = MigrationSettings(pins={**PINS, "gpu.amd.com": "cpx_nps4"})
    for head in (False, True):
        obj = ray_cluster(copy.deepcopy(group), head=head)
        result = migrate_documents([obj], pins)
        migrated_group = result.documents[0]["spec"]["headGroupSpec" if head else "workerGroupSpecs"]
        migrated_group = migrated_group if head else migrated_group[0]
        assert migrated_group.get("rayStartParams", {}).get("num-gpus") == num_gpus
        assert compliant(result.documents) == []


def test_kuberay_tpu_resources_and_submitter_pods() -> None:
    tpu = ray_cluster({"rayStartParams": {}, **template_spec(container(limits={"google.com/tpu": 4}))})
    document, report = migrated(tpu)
    assert document["spec"]["workerGroupSpecs"][0]["rayStartParams"] == {}
    assert any("TPU resource of 4" in note.text for note in report.notes)
    job = crd(
        "ray.io/v1",
        "RayJob",
        {"submitterPodTemplate": {"spec": {"containers": [container(limits=dict(GPU))]}}},
    )
    document, report = migrated(job)
    assert "rayStartParams" not in document["spec"] and report.status == "migrated"


def argo(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return crd("argoproj.io/v1alpha1", kind, spec)


NIC = {"name": "nic", "resourceClaimTemplateName": "rdma"}
ARGO_TRAIN = {"name": "train", "container": {"image": "i", "resources": {"limits": dict(MIG)}}}


def test_argo_templates_get_claims_of_their_own_with_what_they_inherited_copied_in() -> None:
    workflow = argo("Workflow", {"resourceClaims": [dict(NIC)], "templates": [copy.deepcopy(ARGO_TRAIN)]})
    document, report = migrated(workflow)
    [template] = document["spec"]["templates"]
    assert template["resourceClaims"] == [NIC, {"name": "accelerator", "resourceClaimTemplateName": "w-mig-1g-5gb"}]
    assert template["container"]["resources"] == {"claims": [{"name": "accelerator"}]}
    assert document["spec"]["resourceClaims"] == [NIC]  # templates reached by templateRef still get it
    assert [note.path for note in report.notes] == [
        ("spec", "templates", 0),
        ("spec",),
        ("spec", "templates", 0, "resourceClaims"),
    ]
    assert "4.1 or later" in report.notes[1].text and "(nic)" in report.notes[0].text
    # Its template is not among the input: the scrubber does not hold it, and the report says so.
    assert report.notes[2].text.startswith("pod claim 'nic' (ResourceClaimTemplate 'rdma') is not among the objects")
    # templateDefaults' claims come before the workflow's; an empty list of its own is none.
    defaults = {"name": "scratch", "resourceClaimName": "scratch"}
    cron = argo(
        "CronWorkflow",
        {
            "workflowSpec": {
                "resourceClaims": [dict(NIC)],
                "templateDefaults": {"resourceClaims": [dict(defaults)]},
                "templates": [{**copy.deepcopy(ARGO_TRAIN), "resourceClaims": []}],
            }
        },
    )
    document, _ = migrated(cron)
    claims = document["spec"]["workflowSpec"]["templates"][0]["resourceClaims"]
    assert [claim["name"] for claim in claims] == ["scratch", "accelerator"]


def test_argo_claim_names_avoid_the_inherited_ones() -> None:
    taken = {"name": "accelerator", "resourceClaimTemplateName": "rdma"}
    document, _ = migrated(argo("Workflow", {"resourceClaims": [taken], "templates": [copy.deepcopy(ARGO_TRAIN)]}))
    assert [claim["name"] for claim in document["spec"]["templates"][0]["resourceClaims"]] == [
        "accelerator",
        "accelerator-2",
    ]


def test_argo_workflow_templates_whose_fallback_depends_on_the_caller_are_refused() -> None:
    inherited = argo("WorkflowTemplate", {"resourceClaims": [dict(NIC)], "templates": [copy.deepcopy(ARGO_TRAIN)]})
    assert "depends on how it is called" in refused(inherited)
    own = copy.deepcopy(inherited)
    own["spec"]["templates"][0]["resourceClaims"] = [dict(NIC)]
    document, report = migrated(own)
    assert [claim["name"] for claim in document["spec"]["templates"][0]["resourceClaims"]] == ["nic", "accelerator"]
    # Without a fallback in sight, the report says the list replaces what a caller would give.
    plain = argo("ClusterWorkflowTemplate", {"templates": [copy.deepcopy(ARGO_TRAIN)]})
    plain["metadata"].pop("namespace")
    _, report = migrated(plain)
    texts = [note.text for note in report.notes]
    assert any("from a calling workflow" in text for text in texts)
    assert any("ClusterWorkflowTemplate has no namespace" in text for text in texts)
    referencing = argo("Workflow", {"workflowTemplateRef": {"name": "base"}, "templates": [copy.deepcopy(ARGO_TRAIN)]})
    assert any("referenced WorkflowTemplate" in note.text for note in migrated(referencing)[1].notes)


def inference_service(predictor: dict[str, Any], mode: str | None = "Standard", **annotations: str) -> dict[str, Any]:
    if mode is not None:
        annotations["serving.kserve.io/deploymentMode"] = mode
    return crd("serving.kserve.io/v1beta1", "InferenceService", {"predictor": predictor}, annotations=annotations)


def test_kserve_inference_services_run_as_standard_deployments_are_migrated() -> None:
    for mode in ("Standard", "RawDeployment"):
        document, report = migrated(inference_service({"containers": [container(limits=dict(MIG))]}, mode))
        assert document["spec"]["predictor"]["resourceClaims"] == [
            {"name": "accelerator", "resourceClaimTemplateName": "w-mig-1g-5gb"}
        ]
        assert report.notes == []
    gke = inference_service(
        {"containers": [container(limits=dict(GPU))]}, **{"serving.kserve.io/gke-accelerator": "nvidia-l4"}
    )
    assert "gke-accelerator" in migrated(gke)[1].notes[0].text


@pytest.mark.parametrize(
    ("obj", "reason"),
    [
        (inference_service({"containers": [container(limits=dict(MIG))]}, None), "with Knative"),
        (inference_service({"containers": [container(limits=dict(MIG))]}, "Serverless"), "with Knative"),
        (inference_service({"containers": [container(limits=dict(MIG))]}, "ModelMesh"), "ModelMesh serves it"),
        (
            inference_service({"model": {"modelFormat": {"name": "vllm"}, "resources": {"limits": dict(GPU)}}}),
            "picks a model's GPU or CPU image",
        ),
        (
            inference_service(
                {"containers": [container(limits=dict(GPU))], "workerSpec": {"containers": [container("w")]}}
            ),
            "multi-node predictor",
        ),
        (
            crd("serving.kserve.io/v1alpha1", "ServingRuntime", {"containers": [container(limits=dict(GPU))]}),
            "runs under every InferenceService",
        ),
        (
            crd(
                "trainer.kubeflow.org/v1alpha1",
                "TrainingRuntime",
                {
                    "template": {
                        "spec": {
                            "replicatedJobs": [
                                {
                                    "name": "node",
                                    "template": {"spec": template_spec(container("node", limits=dict(GPU)))},
                                }
                            ]
                        }
                    }
                },
            ),
            "Kubeflow Trainer reads the node container's resources",
        ),
        (
            crd(
                "kubeflow.org/v1",
                "MPIJob",
                {"mpiReplicaSpecs": {"Launcher": template_spec(container("mpi", limits=dict(GPU)))}},
            ),
            "makes a launcher with a GPU limit one of the MPI hosts",
        ),
        (
            crd(
                "leaderworkerset.x-k8s.io/v1",
                "LeaderWorkerSet",
                {
                    "leaderWorkerTemplate": {
                        "workerTemplate": template_spec(container(limits={"google.com/tpu": 4}))["template"]
                    }
                },
            ),
            "TPU_WORKER_HOSTNAMES",
        ),
        # A kind of a known group the finder has no paths for is a guess like any other.
        (
            crd("ray.io/v1", "RayFleet", {"pod": {"containers": [container(limits=dict(GPU))]}}),
            "found there only by its shape",
        ),
    ],
    ids=[
        "isvc-unset",
        "isvc-serverless",
        "isvc-modelmesh",
        "isvc-model-container",
        "isvc-multi-node",
        "serving-runtime",
        "training-runtime-node",
        "mpi-launcher-gpu",
        "lws-tpu",
        "unknown-kind-of-a-known-group",
    ],
)
def test_crds_whose_controllers_read_the_request_are_refused(obj: dict[str, Any], reason: str) -> None:
    assert reason in refused(obj)


def test_what_those_controllers_do_not_read_is_migrated() -> None:
    """The MPI launcher's MIG slice (isGPULauncher looks for "gpu"), a training runtime's
    other containers, LeaderWorkerSet GPUs."""
    launcher = crd(
        "kubeflow.org/v1",
        "MPIJob",
        {"mpiReplicaSpecs": {"Launcher": template_spec(container("mpi", limits=dict(MIG)))}},
    )
    assert migrated(launcher)[1].status == "migrated"
    runtime = crd(
        "trainer.kubeflow.org/v1alpha1",
        "ClusterTrainingRuntime",
        {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "model-initializer",
                            "template": {"spec": template_spec(container("init", limits=dict(MIG)))},
                        }
                    ]
                }
            }
        },
    )
    runtime["metadata"].pop("namespace")
    _, report = migrated(runtime)
    assert report.status == "migrated"
    assert any("ClusterTrainingRuntime has no namespace" in note.text for note in report.notes)
    lws = crd(
        "leaderworkerset.x-k8s.io/v1",
        "LeaderWorkerSet",
        {"leaderWorkerTemplate": {"workerTemplate": template_spec(container(limits=dict(GPU)))["template"]}},
    )
    assert migrated(lws)[1].status == "migrated"


@pytest.mark.parametrize(
    ("obj", "templates"),
    [
        (
            crd(
                "jobset.x-k8s.io/v1alpha2",
                "JobSet",
                {
                    "replicatedJobs": [
                        {"name": "workers", "template": {"spec": template_spec(container(limits=dict(MIG)))}},
                        {"name": "driver", "template": {"spec": template_spec(container(limits=dict(GPU)))}},
                    ]
                },
            ),
            ["w-workers-mig-1g-5gb", "w-driver-gpu-nvidia-h100-80gb-hbm3"],
        ),
        (
            crd(
                "serving.kserve.io/v1alpha1",
                "LLMInferenceService",
                {
                    "template": {"containers": [container(limits=dict(MIG))]},
                    "prefill": {"template": {"containers": [container(limits=dict(MIG))]}},
                },
            ),
            ["w-pod-mig-1g-5gb", "w-prefill-mig-1g-5gb"],
        ),
        (
            argo(
                "Workflow",
                {
                    "templates": [
                        {
                            "name": "main",
                            "steps": [
                                [
                                    {
                                        "name": "a",
                                        "inline": {
                                            "script": {"image": "i", "source": "x", "resources": {"limits": dict(MIG)}}
                                        },
                                    }
                                ]
                            ],
                        },
                        {
                            "name": "b",
                            "containerSet": {
                                "containers": [container("c1", limits=dict(MIG)), container("c2", limits=dict(MIG))]
                            },
                        },
                    ]
                },
            ),
            ["w-main-0-a-mig-1g-5gb", "w-b-mig-1g-5gb"],
        ),
    ],
    ids=["jobset", "llm-inference-service", "argo-inline-and-container-set"],
)
def test_each_pod_of_a_crd_gets_its_own_template(obj: dict[str, Any], templates: list[str]) -> None:
    result = migrate_documents([copy.deepcopy(obj)], SETTINGS)
    assert [
        template["metadata"]["name"] for template in by_kind(result.documents, "ResourceClaimTemplate")
    ] == templates
    assert compliant(result.documents) == []
    again = migrate_documents(copy.deepcopy(result.documents), SETTINGS)
    assert again.documents == result.documents and again.reports == []


def test_argo_container_set_containers_and_sidecars_run_together_init_containers_before() -> None:
    obj = argo(
        "Workflow",
        {
            "templates": [
                {
                    "name": "b",
                    "containerSet": {
                        "containers": [container("c1", limits=dict(MIG)), container("c2", limits=dict(MIG))]
                    },
                    "initContainers": [container("i", limits={"nvidia.com/mig-1g.5gb": 2})],
                    "sidecars": [container("s", limits=dict(MIG))],
                }
            ]
        },
    )
    [created] = migrated(obj)[1].templates
    assert (created.count, created.containers) == (3, ("c1", "c2", "i", "s"))  # max(1 + 1 + 1, 2)
