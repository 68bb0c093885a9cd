"""The webhook's lookups of claim templates fail closed, with its real client.

`KubernetesTemplates.in_cluster()` is the `kubernetes` client configured as in a pod (the
service-account token and CA files, `KUBERNETES_SERVICE_HOST` and `_PORT`), pointed at a
stand-in API server on 127.0.0.1 over HTTPS (`tests/webhook_apiserver.py`) that answers as
each test says. A 404 is "no such template"; a refusal, a server error, a timeout, a body
that is not the template, a refused connection or a certificate the CA did not sign makes the
review deny, saying which template and what failed. The token is read again when the kubelet
rotates it.
"""

from __future__ import annotations

import datetime
import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dra_guard import AcceleratorSlice, claim_template
from dra_guard.admission.reservations import pod_using, sharing_view
from dra_guard.admission.webhook import KubernetesTemplates, TemplateLookupError, Webhook
from dra_guard.building.builders import scrub_container
from dra_guard.contract.scrubber import DEFAULT_SCRUB_IMAGE
from dra_guard.ruleapi.config import Config
from dra_guard.rules import RULES
from testkit.rulecases import config
from tests.webhook_apiserver import LOOPBACK, Answer, api_server, in_cluster_templates, pod_files, write_certificates

TEMPLATE = claim_template(name="slice", slice=AcceleratorSlice.nvidia_mig("1g.10gb"), namespace="tenant-a")
TEMPLATE_PATH = "/apis/resource.k8s.io/v1/namespaces/tenant-a/resourceclaimtemplates/slice"
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "tenant-a"},
    "spec": {
        # The builders' scrubber, first, holding the claim (DRA016).
        "initContainers": [scrub_container(DEFAULT_SCRUB_IMAGE, ["accelerator"])],
        "containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "accelerator"}]}}],
        "resourceClaims": [{"name": "accelerator", "resourceClaimTemplateName": "slice"}],
    },
}


def review(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "uid": str(uuid.uuid4()),
        "kind": {"group": "", "version": "v1", "kind": obj["kind"]},
        "operation": "CREATE",
        "namespace": "tenant-a",
        "name": obj["metadata"]["name"],
        "userInfo": {"username": "alice"},
        "object": obj,
    }


def test_a_template_is_read_with_the_service_account_token(tmp_path: Path) -> None:
    with api_server(tmp_path) as server:
        server.answer = lambda path: Answer(200, TEMPLATE) if path == TEMPLATE_PATH else Answer(404, {})
        templates = in_cluster_templates(tmp_path, server)
        assert templates.get("tenant-a", "slice") == TEMPLATE
        assert templates.get("tenant-a", "other") is None
        assert Webhook(RULES, Config(), templates=templates).review(review(POD))["allowed"] is True
    assert [authorization.lower() for _, authorization in server.requests] == ["bearer token-1"] * 3


def test_the_templates_and_claims_a_group_shares_are_looked_up() -> None:
    """A Workload's nested templates and a Job's scheduling claims name templates and claims
    as a pod spec does: the webhook reads them (a NIC's may be shared)."""
    from dra_guard.admission.webhook import claim_names, template_names

    nested = {"name": "w", "resourceClaims": [{"name": "a", "resourceClaimTemplateName": "deep"}]}
    workload = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "spec": {"compositePodGroupTemplates": [{"name": "c", "podGroupTemplates": [nested]}]},
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "spec": {
            "scheduling": {"resourceClaims": [{"name": "g", "resourceClaimName": "shared"}]},
            "template": {"spec": {"resourceClaims": [{"name": "p", "resourceClaimTemplateName": "own"}]}},
        },
    }
    assert list(template_names(workload)) == ["deep"]
    assert list(template_names(job)) == ["own"] and list(claim_names(job)) == ["shared"]


def test_a_pod_naming_a_template_that_does_not_exist_is_denied_and_a_controller_is_not(tmp_path: Path) -> None:
    """404: the template does not exist (yet).  Admitting the Pod would let a template created
    afterwards give it devices nothing checked against it (DRA016's scrubber); so the Pod is
    denied, naming the template.  A Deployment is admitted (a Helm release may create it before
    its template): its pods are made, and checked, by the controller, which retries them."""
    with api_server(tmp_path) as server:
        templates = in_cluster_templates(tmp_path, server)
        assert templates.get("tenant-a", "slice") is None
        webhook = Webhook(RULES, Config(), templates=templates)
        response = webhook.review(review(POD))
        assert response["allowed"] is False
        assert "names ResourceClaimTemplate tenant-a/slice, which does not exist (yet)" in response["status"]["message"]
        deployment = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "tenant-a"},
            "spec": {
                "selector": {"matchLabels": {"app": "d"}},
                "template": {"metadata": {"labels": {"app": "d"}}, "spec": POD["spec"]},
            },
        }
        assert webhook.review(review(deployment))["allowed"] is True
    # Without a template source nothing is looked up, so nothing is known to be missing.
    assert Webhook(RULES, Config()).review(review(POD))["allowed"] is True


FAILURES = {
    "forbidden": (Answer(403, {"kind": "Status", "code": 403, "reason": "Forbidden"}), "HTTP 403"),
    "server-error": (Answer(500, {"kind": "Status", "code": 500}), "HTTP 500"),
    "unavailable": (Answer(503, b"upstream connect error", content_type="text/plain"), "HTTP 503"),
    "garbage": (Answer(200, b"<html>not json</html>", content_type="text/html"), "not JSON"),
    "truncated-json": (Answer(200, b'{"kind": "ResourceClaimTemplate", '), "not JSON"),
    "not-a-template": (Answer(200, {"kind": "Status", "code": 200}), "not that ResourceClaimTemplate"),
    "another-template": (
        Answer(200, {**TEMPLATE, "metadata": {**TEMPLATE["metadata"], "name": "other"}}),
        "not that ResourceClaimTemplate",
    ),
    "a-list": (Answer(200, [TEMPLATE]), "not that ResourceClaimTemplate"),
    "slow": (Answer(200, TEMPLATE, delay=3.0), "timed out"),
    # Each byte well within the client's timeout, the whole far past it.
    "dribbled": (Answer(200, TEMPLATE, dribble=0.02), "the answer did not arrive within 1 s"),
}


@pytest.mark.parametrize("failure", list(FAILURES))
def test_a_failed_lookup_denies_the_review(tmp_path: Path, failure: str) -> None:
    answer, expected = FAILURES[failure]
    with api_server(tmp_path) as server:
        server.answer = lambda path: answer
        # Only the slow and the dribbled answers are meant to time out: a loaded machine may take more than
        # half a second to answer the others, which must then still fail as they do.
        templates = in_cluster_templates(tmp_path, server, timeout=1.0 if failure in ("slow", "dribbled") else 2.0)
        with pytest.raises(TemplateLookupError, match=r"^ResourceClaimTemplate tenant-a/slice: ") as raised:
            templates.get("tenant-a", "slice")
        assert expected in str(raised.value)
        started = time.monotonic()
        response = Webhook(RULES, Config(), templates=templates).review(review(POD))
        assert time.monotonic() - started < 2.5  # within the review's deadline (4 s)
    assert response["allowed"] is False
    message = response["status"]["message"]
    assert message.startswith("dra-guard webhook: cannot read ResourceClaimTemplate tenant-a/slice: ")
    assert expected in message and message.endswith("so the claim rules cannot be checked; denied")


def test_a_refused_connection_denies_the_review(tmp_path: Path) -> None:
    with api_server(tmp_path) as server:
        templates = in_cluster_templates(tmp_path, server)
    # The server is gone: nothing listens on its port any more.
    response = Webhook(RULES, Config(), templates=templates).review(review(POD))
    assert response["allowed"] is False
    assert "cannot read ResourceClaimTemplate tenant-a/slice: " in response["status"]["message"]
    assert (
        "Connection refused" in response["status"]["message"] or "NewConnectionError" in response["status"]["message"]
    )


def test_an_api_server_the_ca_did_not_sign_denies_the_review(tmp_path: Path) -> None:
    other_ca, _, _ = write_certificates(tmp_path / "other")
    with api_server(tmp_path) as server:
        server.answer = lambda path: Answer(200, TEMPLATE)
        token_file, environ = pod_files(tmp_path, server)
        templates = KubernetesTemplates.in_cluster(token_file=str(token_file), ca_file=str(other_ca), environ=environ)
        response = Webhook(RULES, Config(), templates=templates).review(review(POD))
    assert response["allowed"] is False and "CERTIFICATE_VERIFY_FAILED" in response["status"]["message"]
    assert server.requests == []  # nothing was sent to a server it cannot trust


def test_the_rotated_token_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kubelet rewrites the projected token; the client reads it again once its copy is
    a minute old (kubernetes.config.incluster_config), so a review after that sends the new one."""
    import kubernetes.config.incluster_config as incluster

    with api_server(tmp_path) as server:
        server.answer = lambda path: Answer(200, TEMPLATE)
        templates = in_cluster_templates(tmp_path, server)
        templates.get("tenant-a", "slice")
        (tmp_path / "token").write_text("token-2")
        templates.get("tenant-a", "slice")  # within the minute: the token read at start

        class TwoMinutesLater:
            """The loader's clock (its module's `datetime`), two minutes on."""

            timedelta = datetime.timedelta

            class datetime:  # the name the loader calls
                @staticmethod
                def now() -> datetime.datetime:
                    return datetime.datetime.now() + datetime.timedelta(minutes=2)

        monkeypatch.setattr(incluster, "datetime", TwoMinutesLater)
        templates.get("tenant-a", "slice")
    tokens = [authorization.lower() for _, authorization in server.requests]
    assert tokens == ["bearer token-1", "bearer token-1", "bearer token-2"]


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({}, "Service host/port is not set"),
        ({"KUBERNETES_SERVICE_HOST": LOOPBACK, "KUBERNETES_SERVICE_PORT": "443"}, "token file does not exist"),
    ],
)
def test_outside_a_pod_the_client_says_what_is_missing(tmp_path: Path, environ: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KubernetesTemplates.in_cluster(
            token_file=str(tmp_path / "missing"), ca_file=str(tmp_path / "missing.crt"), environ=environ
        )


def test_a_source_that_raises_anything_else_denies_too() -> None:
    class Broken:
        def get(self, namespace: str, name: str) -> dict[str, Any] | None:
            raise RuntimeError("boom")

    response = Webhook(RULES, Config(), templates=Broken()).review(review(POD))
    assert response["allowed"] is False
    assert "cannot read ResourceClaimTemplate tenant-a/slice: RuntimeError: boom" in response["status"]["message"]


# --- Kubernetes 1.33: a beta version the cluster enables ------------------------------


CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"


def _deployment_release(runtime_config: list[str]) -> tuple[str, str]:
    """The release and template version the generated Deployment's own arguments make the
    webhook read in (its command line, parsed by the real CLI parser)."""
    from dra_guard.admission.deploy import AdmissionGuardSpec, WebhookDeployment, admission_guard_objects
    from dra_guard.cli.admission import template_api_version
    from dra_guard.cli.main import build_parser

    deployment = WebhookDeployment(
        image="i", namespace="dra-guard", tls_secret="t", ca_bundle=CA_PEM, runtime_config=runtime_config
    )
    objects = admission_guard_objects(AdmissionGuardSpec(kubernetes_version="1.33", webhook=deployment))
    (workload,) = [obj for obj in objects if obj["kind"] == "Deployment"]
    (container,) = workload["spec"]["template"]["spec"]["containers"]
    arguments = build_parser().parse_args(container["args"])
    assert arguments.in_cluster and arguments.runtime_config == runtime_config
    return arguments.kubernetes_version, template_api_version(arguments.kubernetes_version, arguments.runtime_config)


# The same MIG template in each version 1.33 can serve: flat requests in v1beta1 (and
# v1alpha3), `exactly` in v1beta2 (k8s.io/api v0.33.0, 82c0029e, resource/*/types.go
# DeviceRequest), as the builders write them for that version.
BETA_TEMPLATES = {
    version: claim_template(
        name="slice",
        slice=AcceleratorSlice.nvidia_mig("1g.10gb"),
        namespace="tenant-a",
        api_version=version,
        kubernetes_version="1.33",
        runtime_config=[f"{version}=true"],
    )
    for version in ("resource.k8s.io/v1beta1", "resource.k8s.io/v1beta2")
}


@pytest.mark.parametrize("api_version", list(BETA_TEMPLATES))
def test_a_133_cluster_with_a_beta_version_enabled(tmp_path: Path, api_version: str) -> None:
    """The generated Deployment for 1.33 with the version the cluster enables reads templates
    in that version, and the engine reads their requests in that version's shape: the pod
    with the scrubber holding the claim is admitted, one without it (DRA016) or naming a
    request the template lacks (DRA009) is denied."""
    release, chosen = _deployment_release([f"{api_version}=true"])
    assert (release, chosen) == ("1.33", api_version)
    template = BETA_TEMPLATES[api_version]
    shape = template["spec"]["spec"]["devices"]["requests"][0]
    assert ("exactly" in shape) == (api_version == "resource.k8s.io/v1beta2")
    expected_path = f"/apis/{api_version}/namespaces/tenant-a/resourceclaimtemplates/slice"
    unscrubbed = {**POD, "spec": {key: value for key, value in POD["spec"].items() if key != "initContainers"}}
    wrong_request = json.loads(json.dumps(POD))
    wrong_request["spec"]["containers"][0]["resources"]["claims"][0]["request"] = "no-such-request"
    with api_server(tmp_path) as server:
        server.answer = lambda path: Answer(200, template) if path == expected_path else Answer(404, {})
        templates = in_cluster_templates(tmp_path, server)
        webhook = Webhook(
            RULES,
            Config({"kubernetes-version": release}),
            templates=KubernetesTemplates(templates.api_client, api_version=chosen),
            cache_seconds=0,
        )
        admitted = webhook.review(review(POD))
        without_scrubber = webhook.review(review(unscrubbed))
        unknown_request = webhook.review(review(wrong_request))
    assert admitted == {"uid": admitted["uid"], "allowed": True}
    assert without_scrubber["allowed"] is False and without_scrubber["status"]["message"].startswith("DRA016: ")
    assert unknown_request["allowed"] is False and "DRA009: " in unknown_request["status"]["message"]
    assert "no-such-request" in unknown_request["status"]["message"]
    assert {path for path, _ in server.requests} == {expected_path}


def test_a_133_deployment_needs_the_runtime_config_that_serves_a_version() -> None:
    """1.33 serves no resource.k8s.io version by default: the Deployment is refused without a
    runtime_config, or with one that enables none, saying what to pass."""
    from dra_guard.admission.deploy import AdmissionGuardSpec, WebhookDeployment

    def spec(runtime_config: list[str] | None) -> AdmissionGuardSpec:
        deployment = WebhookDeployment(
            image="i", namespace="dra-guard", tls_secret="t", ca_bundle=CA_PEM, runtime_config=runtime_config
        )
        return AdmissionGuardSpec(kubernetes_version="1.33", webhook=deployment)

    for runtime_config, how in ((None, "by default"), (["api/beta=false"], "with --runtime-config=api/beta=false")):
        with pytest.raises(ValueError, match=r"^webhook\.runtime_config: a Kubernetes 1\.33 cluster") as raised:
            spec(runtime_config)
        assert f"serves no ResourceClaimTemplate version {how}" in str(raised.value)
        assert "e.g. resource.k8s.io/v1beta2=true" in str(raised.value)
    assert _deployment_release(["api/beta=true"]) == ("1.33", "resource.k8s.io/v1beta2")
    with pytest.raises(ValueError, match=r"^runtime_config\[0\]: api/beta takes true or false"):
        spec(["api/beta=maybe"])


CLAIM = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "mine", "namespace": "tenant-a", **TEMPLATE["spec"].get("metadata", {})},
    "spec": TEMPLATE["spec"]["spec"],
}
CLAIM_PATH = "/apis/resource.k8s.io/v1/namespaces/tenant-a/resourceclaims/mine"
POD_NAMING_A_CLAIM = {
    **POD,
    "spec": {**POD["spec"], "resourceClaims": [{"name": "accelerator", "resourceClaimName": "mine"}]},
}
WITHOUT_SCRUBBER = {
    **POD_NAMING_A_CLAIM,
    "spec": {key: value for key, value in POD_NAMING_A_CLAIM["spec"].items() if key != "initContainers"},
}


def test_a_claim_a_pod_names_is_read_and_the_pod_held_to_it(tmp_path: Path) -> None:
    """`resourceClaimName`: the webhook reads the ResourceClaim as it reads a template, so a
    Pod that uses a MIG claim without the scrubber is denied (DRA016), as `dra-guard check`
    reports it with the claim in its input.  It used to read templates only, and admit it."""
    with api_server(tmp_path) as server:
        server.answer = lambda path: Answer(200, CLAIM) if path == CLAIM_PATH else Answer(404, {})
        claims = in_cluster_templates(tmp_path, server)
        assert claims.get_claim("tenant-a", "mine") == CLAIM and claims.get_claim("tenant-a", "other") is None
        webhook = Webhook(RULES, Config(), templates=claims)
        assert webhook.review(review(POD_NAMING_A_CLAIM))["allowed"] is True
        response = Webhook(RULES, Config(), templates=claims).review(review(WITHOUT_SCRUBBER))
        assert response["allowed"] is False
        assert response["status"]["message"].startswith(
            "DRA016: Pod/tenant-a/p: pod claim 'accelerator' (ResourceClaim 'mine')"
        )
    assert {path for path, _ in server.requests} == {
        CLAIM_PATH,
        "/apis/resource.k8s.io/v1/namespaces/tenant-a/resourceclaims/other",
    }


def _reviewed_against(
    tmp_path: Path, answer: Answer | Callable[[str], Answer], request: dict[str, Any]
) -> dict[str, Any]:
    """The webhook's answer to `request`, the stand-in API server answering every lookup so
    (or as `answer` says for each path)."""
    with api_server(tmp_path) as server:
        server.answer = answer if callable(answer) else lambda path: answer
        return Webhook(RULES, Config(), templates=in_cluster_templates(tmp_path, server)).review(request)


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (Answer(404, {}), "the Pod names ResourceClaim tenant-a/mine, which does not exist (yet)"),
        (
            Answer(403, {"kind": "Status", "code": 403, "reason": "Forbidden"}),
            "cannot read ResourceClaim tenant-a/mine: ",
        ),
        (Answer(200, TEMPLATE), "not that ResourceClaim"),
    ],
)
def test_a_claim_that_is_missing_or_cannot_be_read_denies_the_pod(tmp_path: Path, answer: Answer, said: str) -> None:
    response = _reviewed_against(tmp_path, answer, review(POD_NAMING_A_CLAIM))
    assert response["allowed"] is False and said in response["status"]["message"]


def test_a_claim_is_read_afresh_for_every_review(tmp_path: Path) -> None:
    """A NIC claim deleted and created again as a GPU claim under its name: the next Pod
    naming it is held to the GPU claim, within the templates' cache time (found by the final
    review: a cached claim let a scrubber-less pod in for 5 s after the swap)."""
    nic_claim = {
        **CLAIM,
        "spec": {"devices": {"requests": [{"name": "nic", "exactly": {"deviceClassName": "dranet"}}]}},
    }
    swapped = [nic_claim]
    with api_server(tmp_path) as server:
        server.answer = lambda path: Answer(200, swapped[0]) if path == CLAIM_PATH else Answer(404, {})
        webhook = Webhook(RULES, Config(), templates=in_cluster_templates(tmp_path, server))
        nic_pod = {
            **WITHOUT_SCRUBBER,
            "spec": {
                **WITHOUT_SCRUBBER["spec"],
                "containers": [{"name": "c", "image": "i"}],
                "resourceClaims": [{"name": "nic", "resourceClaimName": "mine"}],
            },
        }
        assert webhook.review(review(nic_pod))["allowed"] is True
        swapped[0] = CLAIM
        response = webhook.review(review(WITHOUT_SCRUBBER))
    assert response["allowed"] is False and "DRA016" in response["status"]["message"]
    assert [path for path, _ in server.requests] == [CLAIM_PATH, CLAIM_PATH]


# --- the scheduler's reservation of a claim for a pod (dra_guard.admission.reservations) ----

POD_UID = "0b8f2f6e-1111-4222-8333-944455556666"
POD_PATH = "/api/v1/namespaces/tenant-a/pods/p"
#: The claim kube-controller-manager makes for POD from TEMPLATE (testkit/lifecycle.py
#: models it: the template's spec.metadata, the pod-claim-name annotation, the owner pod).
MADE_FOR_POD = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {
        "name": "p-accelerator-x7k2q",
        "namespace": "tenant-a",
        "annotations": {
            **TEMPLATE["spec"].get("metadata", {}).get("annotations", {}),
            "resource.kubernetes.io/pod-claim-name": "accelerator",
        },
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": POD_UID, "controller": True}],
    },
    "spec": TEMPLATE["spec"]["spec"],
}


def reservation(claim: dict[str, Any], user: str = "system:kube-scheduler") -> dict[str, Any]:
    """The scheduler's status update reserving `claim` for the pod p (bindClaim)."""
    reserved = {**claim, "status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": POD_UID}]}}
    return {
        "uid": str(uuid.uuid4()),
        "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceClaim"},
        "resource": {"group": "resource.k8s.io", "version": "v1", "resource": "resourceclaims"},
        "subResource": "status",
        "operation": "UPDATE",
        "namespace": "tenant-a",
        "name": claim["metadata"]["name"],
        "userInfo": {"username": user},
        "object": reserved,
        "oldObject": claim,
    }


def _stored(pod: dict[str, Any]) -> dict[str, Any]:
    """`pod` as the API server has it once the resource-claim controller has made its claims:
    its uid, and the status that names MADE_FOR_POD as its template claim's (unless it has one)."""
    made = [{"name": "accelerator", "resourceClaimName": MADE_FOR_POD["metadata"]["name"]}]
    return {"status": {"resourceClaimStatuses": made}, **pod, "metadata": {**pod["metadata"], "uid": POD_UID}}


def _served_pod(pod: dict[str, Any]) -> Any:
    stored = _stored(pod)
    return lambda path: Answer(200, stored) if path == POD_PATH else Answer(404, {})


@pytest.mark.parametrize("claim", [MADE_FOR_POD, CLAIM], ids=["made-from-a-template", "named-by-the-pod"])
def test_a_claim_reserved_for_a_pod_without_the_scrubber_is_refused(tmp_path: Path, claim: dict[str, Any]) -> None:
    """A pod admitted against what it named then: its template or claim replaced since (a NIC
    claim `mine` deleted and created again as a GPU claim) gives it a GPU only through the
    scheduler's reservation, which the webhook now checks against the pod, whoever writes it."""
    pod = POD if claim is MADE_FOR_POD else POD_NAMING_A_CLAIM
    bare = {**pod, "spec": {key: value for key, value in pod["spec"].items() if key != "initContainers"}}
    with api_server(tmp_path) as server:
        server.answer = _served_pod(pod)
        webhook = Webhook(RULES, Config(), templates=in_cluster_templates(tmp_path, server))
        assert webhook.review(reservation(claim))["allowed"] is True
        assert webhook.review(reservation(claim, user="kai-binder"))["allowed"] is True
        server.answer = _served_pod(bare)
        response = webhook.review(reservation(claim))
    assert response["allowed"] is False
    message = response["status"]["message"]
    assert message.startswith(
        f"dra-guard webhook: reserving ResourceClaim tenant-a/{claim['metadata']['name']}: DRA016"
    )
    assert {path for path, _ in server.requests} == {POD_PATH}


def test_which_pod_claim_a_claim_is_for_is_read_from_the_pods_status_not_the_claims_annotation(
    tmp_path: Path,
) -> None:
    """The scheduler and the kubelet find a template's claim through the pod's
    status.resourceClaimStatuses (kubernetes/dynamic-resource-allocation
    @ 3d036712930cdac0b0d46c4c21316a78147c551f resourceclaim/resourceclaim.go `Name`); the
    claim's pod-claim-name annotation is the tenant's to rewrite. A GPU claim made for the pod
    claim `other`, which the scrubber does not hold (its template swapped since the pod's
    admission), relabelled `accelerator`: the reservation passed for the scrubber's claim."""
    pod = {
        **POD,
        "spec": {
            **POD["spec"],
            "containers": [
                {"name": "c", "image": "i", "resources": {"claims": [{"name": "accelerator"}, {"name": "other"}]}}
            ],
            "resourceClaims": [
                *POD["spec"]["resourceClaims"],
                {"name": "other", "resourceClaimTemplateName": "was-a-nic"},
            ],
        },
        "status": {
            "resourceClaimStatuses": [
                {"name": "accelerator", "resourceClaimName": MADE_FOR_POD["metadata"]["name"]},
                {"name": "other", "resourceClaimName": "p-other-k3j8d"},
            ]
        },
    }
    for_other = {
        **MADE_FOR_POD,
        "metadata": {
            **MADE_FOR_POD["metadata"],
            "name": "p-other-k3j8d",
            "annotations": {
                **MADE_FOR_POD["metadata"]["annotations"],
                "resource.kubernetes.io/pod-claim-name": "accelerator",  # rewritten by the tenant
            },
        },
    }
    with api_server(tmp_path) as server:
        server.answer = _served_pod(pod)
        webhook = Webhook(RULES, Config(), templates=in_cluster_templates(tmp_path, server))
        assert webhook.review(reservation(MADE_FOR_POD))["allowed"] is True
        response = webhook.review(reservation(for_other))
    assert response["allowed"] is False, response
    assert "DRA016: " in response["status"]["message"] and "pod claim 'other'" in response["status"]["message"]


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (Answer(404, {}), "which the API server does not have"),
        (Answer(403, {"kind": "Status", "code": 403, "reason": "Forbidden"}), "cannot read Pod tenant-a/p: "),
        (Answer(200, {**POD, "metadata": {**POD["metadata"], "uid": "another"}}), "which the API server does not have"),
        (
            Answer(
                200,
                {**POD, "metadata": {**POD["metadata"], "uid": POD_UID}, "spec": {**POD["spec"], "resourceClaims": []}},
            ),
            "no pod claim of which gets it",
        ),
    ],
)
def test_a_reservation_for_a_pod_that_cannot_be_read_or_does_not_use_the_claim_is_refused(
    tmp_path: Path, answer: Answer, said: str
) -> None:
    response = _reviewed_against(tmp_path, answer, reservation(MADE_FOR_POD))
    assert response["allowed"] is False and said in response["status"]["message"]


def _reserved_for_a_group(claim: dict[str, Any]) -> dict[str, Any]:
    """The scheduler's reservation of a claim a PodGroup declares: for the group, not a pod."""
    request = reservation(claim)
    group = {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "workers", "uid": "g-1"}
    request["object"] = {**claim, "status": {"reservedFor": [group]}}
    return request


def test_a_claim_the_scrubber_must_wipe_is_not_reserved_for_a_pod_group(tmp_path: Path) -> None:
    """Every pod of the group would get the MIG claim at once, and no pod is named: refused
    without reading anything. A NIC's claim may be reserved for a group."""
    with api_server(tmp_path) as server:
        webhook = Webhook(RULES, Config(), templates=in_cluster_templates(tmp_path, server))
        response = webhook.review(_reserved_for_a_group(CLAIM))
        nic = {**CLAIM, "spec": {"devices": {"requests": [{"name": "nic", "exactly": {"deviceClassName": "rdma"}}]}}}
        assert webhook.review(_reserved_for_a_group(nic))["allowed"] is True
    assert response["allowed"] is False and server.requests == []
    assert "for podgroups.scheduling.k8s.io/workers: DRA016" in response["status"]["message"]


@pytest.mark.parametrize(("device_class", "allowed"), [("mig.nvidia.com", False), ("rdma", True)])
def test_the_schedulers_extended_resource_claim_of_a_class_to_scrub_is_refused(
    tmp_path: Path, device_class: str, allowed: bool
) -> None:
    """A pod asking for `example.com/gpu`, which nothing dra-guard saw maps (DRA001 passed it),
    gets the scheduler's claim (KEP-5004) of the class the cluster's DeviceClass maps it to: for
    MIG, no pod claim, so no scrubber, can hold it. testkit/lifecycle.py models the claim."""
    from testkit.lifecycle import extended_resource_claims

    asking = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "tenant-a"},
        "spec": {"containers": [{"name": "main", "image": "i", "resources": {"limits": {"example.com/gpu": 1}}}]},
    }
    mapping_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": device_class},
        "spec": {"extendedResourceName": "example.com/gpu"},
    }
    (made,) = extended_resource_claims(asking, [mapping_class])
    response = _reviewed_against(tmp_path, _served_pod(asking), reservation(dict(made.obj)))
    assert response["allowed"] is allowed
    if not allowed:
        assert (
            "DRA016: the scheduler's claim for the extended resources of Pod tenant-a/p"
            in (response["status"]["message"])
        )


@pytest.mark.parametrize(("device_class", "allowed"), [("mig.nvidia.com", False), ("rdma", True)])
def test_a_claim_in_use_by_one_pod_is_not_reserved_for_a_second(
    tmp_path: Path, device_class: str, allowed: bool
) -> None:
    """The claim made for pod `owner`, its ownerReference taken away by a tenant's UPDATE
    (which DRA005 then cannot see at the thief pod's admission: it names an unowned claim),
    then reserved by the scheduler for pod p too: two pods on one device. Refused before any
    pod is read; a NIC's claim may be shared."""
    claim = {
        **MADE_FOR_POD,
        "metadata": {key: value for key, value in MADE_FOR_POD["metadata"].items() if key != "ownerReferences"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class}}]}},
    }
    held = {"resource": "pods", "name": "owner", "uid": "1d2e3f40-5555-4666-8777-988899990000"}
    request = reservation({**claim, "status": {"reservedFor": [held]}})
    request["object"]["status"]["reservedFor"].insert(0, held)
    thief = {
        **POD_NAMING_A_CLAIM,
        "spec": {
            **POD_NAMING_A_CLAIM["spec"],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}],
        },
    }
    with api_server(tmp_path) as server:
        server.answer = _served_pod(thief)
        response = Webhook(RULES, Config(), templates=in_cluster_templates(tmp_path, server)).review(request)
    assert response["allowed"] is allowed, response
    if not allowed:
        # The pods are read for their waivers: `owner`, which the API server does not have, leaves
        # the finding standing.
        assert "DRA005" in response["status"]["message"]


_WAIVED = {"dra-guard.io/ignore-DRA005": "one model server's two replicas share the GPU on purpose"}


@pytest.mark.parametrize(
    ("waived", "allowed"),
    [(("owner", "p"), True), (("p",), False), ((), False), (("claim",), False)],
    ids=["both-pods", "the-second-pod-only", "neither", "the-claim-only"],
)
def test_a_claim_two_pods_share_is_reserved_for_both_only_where_each_pod_waives_dra005(
    waived: tuple[str, ...], allowed: bool
) -> None:
    """`check` reports each of two pods naming one accelerator claim, and each pod's own
    `ignore-DRA005` waives its finding (the claim's waives none of them): the reservation for
    the second is judged so, with the pods the API server has. Before, two stand-in pods
    without annotations were checked, so pods `check` and the admission passed stayed pending
    forever; the second pod's waiver alone (a tenant taking another's claim) still does not do."""
    claim = {**CLAIM, "metadata": {**CLAIM["metadata"]}}
    if "claim" in waived:
        claim["metadata"]["annotations"] = {**claim["metadata"].get("annotations", {}), **_WAIVED}
    held = {"resource": "pods", "name": "owner", "uid": "u-owner"}
    request = reservation({**claim, "status": {"reservedFor": [held]}})
    request["object"]["status"]["reservedFor"].insert(0, held)
    pods = {}
    for name, uid in (("owner", "u-owner"), ("p", POD_UID)):
        pod = {**POD_NAMING_A_CLAIM, "metadata": {**POD_NAMING_A_CLAIM["metadata"], "name": name, "uid": uid}}
        if name in waived:
            pod["metadata"]["annotations"] = _WAIVED
        pods[name] = pod
    source = _NamedPods(pods)
    response = Webhook(RULES, Config(), templates=source).review(request)
    assert response["allowed"] is allowed, response
    assert sorted(set(source.asked)) == ["owner", "p"]
    if not allowed:
        assert "DRA005" in response["status"]["message"]


@pytest.mark.parametrize(("entry_kind", "allowed"), [("Deployment", False), ("Pod", True)])
def test_the_pods_a_reservation_reads_back_are_known_by_their_own_kind_and_name_only(
    entry_kind: str, allowed: bool
) -> None:
    """README "Configuration and waivers": a `waivers` entry matches an object as the
    controllers its owner reference names only on the workload controllers' own writes. The
    pods read back for DRA005 when the scheduler reserves a claim were written by someone the
    webhook does not know (a tenant may have named ReplicaSet w-abc and its hash label in a pod
    of its own), so an entry for Deployment w does not waive them there; an entry for the pods
    by their own kind and name does."""
    claim = {**CLAIM, "metadata": {**CLAIM["metadata"]}}
    held = {"resource": "pods", "name": "w-abc-1", "uid": "u-1"}
    request = reservation({**claim, "status": {"reservedFor": [held]}})
    request["object"]["status"]["reservedFor"].insert(0, held)
    replica_set = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "w-abc", "uid": "rs", "controller": True}
    pods = {}
    for name, uid in (("w-abc-1", "u-1"), ("p", POD_UID)):
        metadata = {
            **POD_NAMING_A_CLAIM["metadata"],
            "name": name,
            "uid": uid,
            "labels": {"pod-template-hash": "abc"},
            "ownerReferences": [replica_set],
        }
        pods[name] = {**POD_NAMING_A_CLAIM, "metadata": metadata}
    names = ["w"] if entry_kind == "Deployment" else list(pods)
    entries = [{"rule": "DRA005", "kind": entry_kind, "name": name, "reason": "replicas share it"} for name in names]
    source = _NamedPods(pods)
    response = Webhook(RULES, config({"waivers": entries}), templates=source).review(request)
    assert response["allowed"] is allowed, response
    assert sorted(set(source.asked)) == ["p", "w-abc-1"]


def test_the_pods_a_shared_claim_is_checked_with_are_held_without_their_containers() -> None:
    """Up to 8 pods are read and held at once for DRA005, each up to 1.5 MiB of JSON (etcd's
    limit), several times that parsed: only what DRA005 reads of each is kept."""
    env = [{"name": f"V{index}", "value": "x"} for index in range(10_000)]
    pod = {
        **POD_NAMING_A_CLAIM,
        "metadata": {**POD_NAMING_A_CLAIM["metadata"], "uid": POD_UID, "annotations": _WAIVED},
        "spec": {**POD_NAMING_A_CLAIM["spec"], "containers": [{"name": "c", "image": "i", "env": env}]},
        "status": {"phase": "Pending"},
    }
    view = sharing_view(pod_using(pod, CLAIM) or {})
    assert "env" not in json.dumps(view) and "status" not in view
    assert view["metadata"] == pod["metadata"]
    assert view["spec"]["resourceClaims"] == [{"name": "accelerator", "resourceClaimName": "mine"}]
    assert view["spec"]["containers"][0]["resources"]["claims"] == [{"name": "accelerator"}]


class _NamedPods:
    """A template source that has no templates and serves pods by name."""

    def __init__(self, pods: dict[str, dict[str, Any]]) -> None:
        self.pods = pods
        self.asked: list[str] = []

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return None

    def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.asked.append(name)
        return self.pods.get(name)


_GROUP = {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "workers", "uid": "g-1"}
_HOLDER = {"resource": "pods", "name": "owner", "uid": "1d2e3f40-5555-4666-8777-988899990000"}
_THIEF = {"resource": "pods", "name": "p", "uid": POD_UID}


@pytest.mark.parametrize(
    ("held_by", "added"),
    [([_GROUP], _THIEF), ([_HOLDER], _GROUP), ([_GROUP], {**_GROUP, "name": "others", "uid": "g-2"})],
    ids=["a-pod-beside-a-group", "a-group-beside-a-pod", "a-group-beside-a-group"],
)
@pytest.mark.parametrize(("device_class", "allowed"), [("tpu.google.com", False), ("rdma", True)])
def test_a_claim_a_pod_group_holds_is_not_reserved_for_anyone_else(
    held_by: list[dict[str, str]], added: dict[str, str], device_class: str, allowed: bool
) -> None:
    """A claim reserved for a PodGroup is used by every pod of the group: a pod outside it (one
    naming the group's claim, which DRA005 does not take for another pod's at its admission),
    another group, or a group added where a pod holds it, shares the device as a second pod
    would. A class the scrubber cannot scrub, accepted unscrubbed, may be reserved for a
    group (DRA016); that it is shared is DRA005's. A NIC's claim may be shared."""
    claim = {
        **CLAIM,
        "spec": {"devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": device_class}}]}},
    }
    request = reservation({**claim, "status": {"reservedFor": held_by}})
    request["object"]["status"]["reservedFor"] = [*held_by, added]
    unscrubbed = config({"unscrubbed-classes": {"tpu.google.com": "a single-tenant TPU pool"}})
    source = _NamedPods({"p": {**POD_NAMING_A_CLAIM, "metadata": {**POD_NAMING_A_CLAIM["metadata"], "uid": POD_UID}}})
    response = Webhook(RULES, unscrubbed, templates=source).review(request)
    assert response["allowed"] is allowed, response
    if not allowed:
        assert "DRA005" in response["status"]["message"] and source.asked == []


def test_a_status_update_that_reserves_for_no_new_pod_is_admitted_unread(tmp_path: Path) -> None:
    already = {**MADE_FOR_POD, "status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": POD_UID}]}}
    with api_server(tmp_path) as server:
        response = Webhook(RULES, Config(), templates=in_cluster_templates(tmp_path, server)).review(
            reservation(already)
        )
    assert response["allowed"] is True and server.requests == []


def test_a_source_of_its_own_is_asked_for_the_reserved_pod_with_get_pod() -> None:
    """A TemplateSource other than the kubernetes client (as tests and embedders give one):
    the pod is asked of `get_pod`, never of the templates' `get`."""

    class Source:
        def __init__(self) -> None:
            self.asked: list[str] = []

        def get(self, namespace: str, name: str) -> dict[str, Any] | None:
            self.asked.append(f"template {name}")
            return None

        def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
            self.asked.append(f"pod {name}")
            return _stored(POD)

    source = Source()
    assert Webhook(RULES, Config(), templates=source).review(reservation(MADE_FOR_POD))["allowed"] is True
    assert source.asked == ["pod p"]


@pytest.mark.parametrize(
    ("where", "field", "most"),
    [
        (("spec", "spec", "devices"), "requests", 32),
        (("spec", "spec", "devices", "requests", 0, "exactly"), "selectors", 32),
    ],
)
def test_a_claim_past_the_apis_list_limits_is_denied_unchecked(where: tuple[Any, ...], field: str, most: int) -> None:
    """The API server validates before any validating webhook and never sends such a claim;
    one sent straight to the Service held a review for seconds (a findings x requests loop)."""
    import copy

    from dra_guard.model.manifest import get_path

    template = copy.deepcopy(TEMPLATE)
    listed = get_path(template, where)[field]
    assert Webhook(RULES, Config()).review(review(template))["allowed"] is True
    listed.extend(copy.deepcopy(listed[0]) for _ in range(most + 1 - len(listed)))
    response = Webhook(RULES, Config()).review(review(template))
    assert response["allowed"] is False
    assert f"has {most + 1} {field}, more than {most}, which the API server refuses" in response["status"]["message"]
