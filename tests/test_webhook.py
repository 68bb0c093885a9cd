"""`dra-guard webhook`, for real: the CLI serving HTTPS on loopback with a certificate the
test makes, answering AdmissionReview requests as the API server sends them."""

from __future__ import annotations

import datetime
import http.client
import ipaddress
import json
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from dra_guard import AcceleratorSlice, claim_template
from tests.webhook_apiserver import free_port

pytestmark = pytest.mark.e2e  # every test here starts a process (tests/conftest.py)

KEY = "webhook-test-key-9f83b1"
MAX_BODY = 64 * 1024


def _certificates(directory: Path) -> tuple[Path, Path, Path]:
    """A CA and a serving certificate for 127.0.0.1 signed by it (PEM files)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dra-guard test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dra-guard-webhook")]))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_file, cert_file, key_file = directory / "ca.pem", directory / "tls.crt", directory / "tls.key"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(server.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return ca_file, cert_file, key_file


@dataclass
class Server:
    port: int
    context: ssl.SSLContext
    log: Path

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, Any]:
        connection = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=10)
        try:
            connection.request(method, path, body=body, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            payload = response.read()
            return response.status, json.loads(payload) if payload else None
        finally:
            connection.close()

    def review(self, obj: dict[str, Any] | None, operation: str = "CREATE", username: str = "alice") -> dict[str, Any]:
        body = json.dumps(admission_review(obj, operation, username)).encode()
        status, payload = self.request("POST", "/validate", body)
        assert status == 200, payload
        assert payload["apiVersion"] == "admission.k8s.io/v1" and payload["kind"] == "AdmissionReview"
        response: dict[str, Any] = payload["response"]
        return response


def admission_review(obj: dict[str, Any] | None, operation: str = "CREATE", username: str = "alice") -> dict[str, Any]:
    """An AdmissionReview as the API server sends it (`request.kind` from the object's
    apiVersion and kind, `request.userInfo` the writer's)."""
    metadata = (obj or {}).get("metadata", {})
    group, _, version = str((obj or {}).get("apiVersion", "v1")).rpartition("/")
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": group, "version": version, "kind": (obj or {}).get("kind", "Pod")},
        "operation": operation,
        "namespace": metadata.get("namespace", "tenant-a"),
        "name": metadata.get("name", "x"),
        "userInfo": {"username": username, "groups": ["system:authenticated"]},
    }
    if obj is not None:
        request["object"] = obj
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    directory = tmp_path_factory.mktemp("webhook")
    ca_file, cert_file, key_file = _certificates(directory)
    (directory / "hmac.key").write_text(KEY + "\n")
    port = free_port()
    log = directory / "webhook.log"
    command = [
        str(Path(sys.executable).parent / "dra-guard"),
        "webhook",
        "--tls-cert",
        str(cert_file),
        "--tls-key",
        str(key_file),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--hmac-key-file",
        str(directory / "hmac.key"),
        "--max-body",
        str(MAX_BODY),
        "--probe-port",
        str(free_port()),
    ]
    with log.open("w") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
    context = ssl.create_default_context(cafile=str(ca_file))
    running = Server(port, context, log)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if running.request("GET", "/healthz")[0] == 200:
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"webhook did not start: {log.read_text()}") from None
                time.sleep(0.1)
        yield running
    finally:
        process.terminate()
        process.wait(timeout=10)


def tagged_template(key: str | None, namespace: str = "tenant-a") -> dict[str, Any]:
    return claim_template(name="slice", slice=AcceleratorSlice.nvidia_mig("1g.10gb"), namespace=namespace, hmac_key=key)


def test_health_and_readiness(server: Server) -> None:
    assert server.request("GET", "/healthz") == (200, {"status": "ok"})
    assert server.request("GET", "/readyz") == (200, {"status": "ok"})
    assert server.request("GET", "/nope")[0] == 404
    assert server.request("GET", "/validate")[0] == 405


def test_a_template_tagged_with_the_key_is_allowed(server: Server) -> None:
    response = server.review(tagged_template(KEY))
    assert response["allowed"] is True, response


def test_a_forged_hmac_tag_is_denied(server: Server) -> None:
    forged = tagged_template("somebody-elses-key")
    response = server.review(forged)
    assert response["allowed"] is False
    assert response["status"]["code"] == 403
    assert response["status"]["message"].startswith("DRA012: ResourceClaimTemplate/tenant-a/slice:")
    assert "edited after tagging" in response["status"]["message"]


def test_a_plain_digest_under_a_key_is_left_to_the_policy_which_denies_it(server: Server) -> None:
    """The division of labour: the policy checks the tag's form, the webhook its digest."""
    from dra_guard.admission.emulate import admit
    from dra_guard.admission.policy import admission_objects
    from dra_guard.read.config_file import parse_config
    from dra_guard.ruleapi.admission_form import AdmissionTarget
    from dra_guard.rules import RULES

    template = tagged_template(None)  # re-tagged with a plain sha256 after an edit
    assert server.review(template)["allowed"] is True
    keyed = parse_config({"hmac-key-env": "K"}, RULES, "test", environ={"K": KEY})
    denials = admit(admission_objects(RULES, AdmissionTarget(keyed)), template)
    assert {denial.rule for denial in denials} == {"DRA012"}  # the template tag, and the claim tag


def test_what_only_the_engine_decides_is_denied_with_its_rule_id(server: Server) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "tenant-a"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "missing"}]}}]},
    }
    response = server.review(pod)
    assert response["allowed"] is False
    assert response["status"]["message"].startswith("DRA009: Pod/tenant-a/p:")


def test_a_delete_carries_no_object_and_is_allowed(server: Server) -> None:
    assert server.review(None, operation="DELETE")["allowed"] is True
    assert server.review(None, operation="CONNECT")["allowed"] is True


@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
def test_a_write_without_an_object_is_denied(server: Server, operation: str) -> None:
    """Only DELETE and CONNECT may come without an object: anything else is not reviewable."""
    response = server.review(None, operation=operation)
    assert response["allowed"] is False
    assert f"the {operation} carries no object to review" in response["status"]["message"]


def test_the_control_planes_claim_writers_are_admitted_and_a_tenant_is_not(server: Server) -> None:
    """Over HTTPS: a claim with a forged HMAC tag (and a forged owner reference) is denied
    when a tenant writes it, admitted when the scheduler or the resource-claim controller
    does (dra_guard.admission.policy says why, from upstream source)."""
    claim = tagged_template("somebody-elses-key")
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": "p-slice-x7k2q",
            "namespace": "tenant-a",
            "annotations": {**claim["metadata"]["annotations"], "resource.kubernetes.io/pod-claim-name": "slice"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "1", "controller": True}],
        },
        "spec": claim["spec"]["spec"],
    }
    denied = server.review(claim, username="system:serviceaccount:tenant-a:default")
    assert denied["allowed"] is False and denied["status"]["message"].startswith("DRA012: ")
    for writer in ("system:serviceaccount:kube-system:resource-claim-controller", "system:kube-scheduler"):
        assert server.review(claim, username=writer)["allowed"] is True
        assert server.review(claim, operation="UPDATE", username=writer)["allowed"] is True


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"[]",
        b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}',
        b'{"kind": "Pod", "apiVersion": "v1"}',
        b'{"kind": "AdmissionReview", "apiVersion": "v1beta1", "request": {}}',
    ],
    ids=["not-json", "a-list", "no-request", "not-a-review", "old-version"],
)
def test_a_malformed_review_is_answered_400(server: Server, body: bytes) -> None:
    status, payload = server.request("POST", "/validate", body)
    assert status == 400 and payload["error"]


def test_an_oversized_body_is_refused(server: Server) -> None:
    template = tagged_template(KEY)
    template["metadata"]["annotations"]["padding"] = "x" * (MAX_BODY + 1)
    status, payload = server.request("POST", "/validate", json.dumps(admission_review(template)).encode())
    assert status == 413 and str(MAX_BODY) in payload["error"]


def test_two_hundred_concurrent_reviews(server: Server) -> None:
    good, forged = tagged_template(KEY), tagged_template("other")

    def one(index: int) -> bool:
        response = server.review(good if index % 2 else forged)
        return bool(response["allowed"]) == bool(index % 2)

    with ThreadPoolExecutor(max_workers=32) as pool:
        results = list(pool.map(one, range(200)))
    assert all(results)


def test_logs_are_json_lines_without_the_key(server: Server) -> None:
    server.review(tagged_template("other"))
    lines = [line for line in server.log.read_text().splitlines() if line.strip()]
    events = [json.loads(line) for line in lines]
    assert any(event.get("event") == "review" and event.get("allowed") is False for event in events)
    assert KEY not in server.log.read_text()
