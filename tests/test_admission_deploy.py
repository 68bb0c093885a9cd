"""The in-cluster webhook's objects (`dra_guard.admission.deploy`) and
`dra-guard admission-policy --deploy-webhook`: valid for every target release, consistent
with each other, deterministic, and running the real `dra-guard webhook` as the
Deployment says to."""

from __future__ import annotations

import base64
import datetime
import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from dra_guard import AcceleratorSlice, claim_template
from dra_guard.admission.deploy import (
    HMAC_SECRET_KEY,
    AdmissionGuardSpec,
    WebhookDeployment,
    admission_guard_objects,
    webhook_config_text,
)
from dra_guard.admission.emulate import admit, denied_rules
from dra_guard.admission.policy import admission_objects
from dra_guard.read.config_file import load_config_file, parse_config
from dra_guard.ruleapi.config import Config
from dra_guard.rules import RULES
from tests.webhook_apiserver import api_server, free_port, in_cluster_templates

RELEASES = ("1.34.0", "1.35.0", "1.36.0", "1.37.0")
DRA_GUARD = str(Path(sys.executable).parent / "dra-guard")
CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"
CONFIG = {"disable": ["DRA011", "DRA009"], "admin-namespaces": ["ops", "gpu-ops"], "non-accelerator-classes": ["nic"]}


def webhook(**changes: Any) -> WebhookDeployment:
    settings: dict[str, Any] = {
        "image": "registry.example/dra-guard:0.1.0",
        "namespace": "dra-guard",
        "tls_secret": "dra-guard-tls",
        "ca_bundle": CA_PEM,
        **changes,
    }
    return WebhookDeployment(**settings)


SPECS = {
    "policies-only": AdmissionGuardSpec(),
    "webhook": AdmissionGuardSpec(webhook=webhook()),
    "webhook-keyed-one-replica": AdmissionGuardSpec(
        enforcement="Audit",
        kubernetes_version="1.34",
        name_prefix="acme",
        config=CONFIG,
        webhook=webhook(hmac_key_secret="tag-key", replicas=1),
    ),
}


def by_kind(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {obj["kind"]: obj for obj in objects}


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("name", list(SPECS))
def test_every_object_is_valid_in_strict_mode(name: str, release: str) -> None:
    objects = admission_guard_objects(SPECS[name])
    assert objects
    for obj in objects:
        kubernetes_validate.validate(obj, release, strict=True)


def test_the_policies_are_the_generators_and_the_webhook_objects_follow() -> None:
    spec = SPECS["webhook-keyed-one-replica"]
    objects = admission_guard_objects(spec)
    policies = admission_objects(RULES, spec.target(), enforcement="Audit", prefix="acme")
    assert objects[: len(policies)] == policies
    assert [obj["kind"] for obj in objects[len(policies) :]] == [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Service",
        "Deployment",
        "PodDisruptionBudget",
        "ValidatingWebhookConfiguration",
    ]
    assert admission_guard_objects(SPECS["policies-only"]) == admission_objects(RULES, SPECS["policies-only"].target())


def test_the_webhook_objects_refer_to_each_other() -> None:
    """What the API server, the kubelet and the scheduler join by name and label."""
    spec = SPECS["webhook-keyed-one-replica"]
    kinds = by_kind(admission_guard_objects(spec))
    deployment, service, configuration = kinds["Deployment"], kinds["Service"], kinds["ValidatingWebhookConfiguration"]
    pod = deployment["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    pod_labels = pod["metadata"]["labels"]
    for selector in (
        deployment["spec"]["selector"]["matchLabels"],
        service["spec"]["selector"],
        kinds["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"],
    ):
        assert selector.items() <= pod_labels.items()
    webhook_entry, _ = configuration["webhooks"]  # the objects' entry, then the reservations'
    target = webhook_entry["clientConfig"]["service"]
    assert (target["name"], target["namespace"]) == (service["metadata"]["name"], service["metadata"]["namespace"])
    (port,) = service["spec"]["ports"]
    assert target["port"] == port["port"]
    assert port["targetPort"] in {named["name"] for named in container["ports"]}
    assert base64.b64decode(webhook_entry["clientConfig"]["caBundle"]).decode() == CA_PEM
    # The webhook never reviews its own namespace (it could not restart), nor kube-system.
    (exempt,) = webhook_entry["namespaceSelector"]["matchExpressions"]
    assert exempt["operator"] == "NotIn" and set(exempt["values"]) == {"dra-guard", "kube-system"}
    # RBAC: the pod's service account is the one the role is bound to.
    account = kinds["ServiceAccount"]["metadata"]
    assert pod["spec"]["serviceAccountName"] == account["name"]
    assert kinds["ClusterRoleBinding"]["subjects"] == [
        {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    ]
    assert kinds["ClusterRoleBinding"]["roleRef"]["name"] == kinds["ClusterRole"]["metadata"]["name"]
    # Every volume is mounted read-only, and every file an argument names is in a mount.
    volumes = {volume["name"]: volume for volume in pod["spec"]["volumes"]}
    mounts = {mount["name"]: mount for mount in container["volumeMounts"]}
    assert set(volumes) == set(mounts) and all(mount["readOnly"] for mount in mounts.values())
    assert volumes["config"]["configMap"]["name"] == kinds["ConfigMap"]["metadata"]["name"]
    assert {volumes["tls"]["secret"]["secretName"], volumes["hmac-key"]["secret"]["secretName"]} == {
        "dra-guard-tls",
        "tag-key",
    }
    files = [argument for argument in container["args"] if argument.startswith("/")]
    assert len(files) == 4  # certificate, key, configuration, HMAC key
    assert all(any(file.startswith(mount["mountPath"] + "/") for mount in mounts.values()) for file in files)
    namespaced = [obj for obj in kinds.values() if "namespace" in obj["metadata"]]
    assert {obj["metadata"]["namespace"] for obj in namespaced} == {"dra-guard"}


def test_the_deployment_is_hardened() -> None:
    deployment = by_kind(admission_guard_objects(SPECS["webhook"]))["Deployment"]
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    # The probes have a port of their own, answered while the review port is at its caps.
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "probes", "scheme": "HTTP"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "probes", "scheme": "HTTP"}
    assert {port["name"] for port in container["ports"]} == {"https", "probes"}
    # The webhook sizes its caps from the container's own memory limit.
    (env,) = container["env"]
    assert env["valueFrom"]["resourceFieldRef"] == {
        "containerName": container["name"],
        "resource": "limits.memory",
        "divisor": "1Mi",
    }
    assert container["resources"]["limits"]["memory"] == "256Mi"
    assert set(container["resources"]["requests"]) == {"cpu", "memory"}
    assert container["command"] == ["dra-guard"] and container["args"][0] == "webhook"
    assert "--in-cluster" in container["args"] and "--hmac-key-file" not in container["args"]


def _rbac_allows(rules: list[dict[str, Any]], method: str, path: str) -> bool:
    """The RBAC decision for a request on a named object, as the API server makes it."""
    parts = urllib.parse.urlsplit(path).path.strip("/").split("/")
    if parts[0] == "api":  # the core group: /api/v1/namespaces/NS/RESOURCE/NAME
        parts = ["apis", "", *parts[1:]]
    assert parts[0] == "apis" and parts[3] == "namespaces" and len(parts) == 7, path
    group, resource = parts[1], parts[5]
    verb = {"GET": "get"}[method]
    return any(group in rule["apiGroups"] and resource in rule["resources"] and verb in rule["verbs"] for rule in rules)


def test_the_cluster_role_allows_exactly_what_the_webhook_asks_the_api_server(tmp_path: Path) -> None:
    """The webhook's real client, configured as in the pod, against a recording server:
    its every request is allowed."""
    with api_server(tmp_path) as server:
        templates = in_cluster_templates(tmp_path, server)
        assert templates.get("tenant-a", "slice") is None  # the server answers 404
        assert templates.get_claim("tenant-a", "shared") is None
        assert templates.get_pod("tenant-a", "p") is None  # a reservation's pod
    assert len(server.requests) == 3
    role = by_kind(admission_guard_objects(SPECS["webhook"]))["ClusterRole"]
    for path, authorization in server.requests:
        assert authorization.lower() == "bearer token-1"  # the service account's token
        assert _rbac_allows(role["rules"], "GET", path), path
    assert {verb for rule in role["rules"] for verb in rule["verbs"]} == {"get"}  # nothing more


def test_the_config_map_is_the_configuration_the_policies_were_made_with(tmp_path: Path) -> None:
    spec = SPECS["webhook-keyed-one-replica"]
    kinds = by_kind(admission_guard_objects(spec))
    (text,) = kinds["ConfigMap"]["data"].values()
    (tmp_path / "dra-guard.yaml").write_text(text)
    assert load_config_file(tmp_path / "dra-guard.yaml", RULES).values == parse_config(CONFIG, RULES).values
    # A new configuration rolls the pods (a mounted ConfigMap is not re-read).
    other = by_kind(admission_guard_objects(AdmissionGuardSpec(webhook=webhook())))
    annotations = [obj["Deployment"]["spec"]["template"]["metadata"]["annotations"] for obj in (kinds, other)]
    assert annotations[0] != annotations[1]


def test_the_hmac_key_is_never_written_into_the_config_map() -> None:
    keyed = parse_config({"hmac-key-env": "KEY", "disable": ["DRA011"]}, RULES, environ={"KEY": "s3cret-value"})
    text = webhook_config_text(keyed)
    assert yaml.safe_load(text) == {"disable": ["DRA011"]}
    assert "s3cret" not in text and "KEY" not in text


def tagged(key: str | None) -> dict[str, Any]:
    return claim_template(
        name="slice", namespace="tenant-a", slice=AcceleratorSlice.nvidia_mig("1g.10gb"), hmac_key=key
    )


def test_with_an_hmac_key_secret_the_policies_accept_only_hmac_tags() -> None:
    """Otherwise a plain SHA-256 tag, which anyone can recompute, would pass both the
    policies (right form) and the webhook (it leaves the form to the policies)."""
    plain, keyed = tagged(None), tagged("k")
    unkeyed_policies = admission_guard_objects(AdmissionGuardSpec(webhook=webhook()))
    keyed_policies = admission_guard_objects(AdmissionGuardSpec(webhook=webhook(hmac_key_secret="tag-key")))
    assert denied_rules(admit(unkeyed_policies, plain)) == set()
    assert denied_rules(admit(keyed_policies, plain)) == {"DRA012"}
    assert denied_rules(admit(keyed_policies, keyed)) == set()


def test_a_keyed_configuration_needs_the_webhook_to_hold_the_key() -> None:
    keyed = parse_config({"hmac-key-env": "KEY"}, RULES, environ={"KEY": "k"})
    AdmissionGuardSpec(config=keyed)  # policies alone: the user's choice
    AdmissionGuardSpec(config=keyed, webhook=webhook(hmac_key_secret="tag-key"))
    with pytest.raises(ValueError, match=r"^webhook\.hmac_key_secret: the config's hmac-key-env"):
        AdmissionGuardSpec(config=keyed, webhook=webhook())


GOOD_WEBHOOK = {"image": "i", "namespace": "x", "tls_secret": "t", "ca_bundle": CA_PEM}


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"enforcement": "Block"}, ValueError, r"^enforcement: must be one of Deny, Warn, Audit, got 'Block'"),
        ({"kubernetes_version": "latest"}, ValueError, r"^kubernetes_version: 'latest' is not a version"),
        ({"admin_namespace_label": "ops"}, ValueError, r"^admin_namespace_label: 'ops' is not KEY=VALUE"),
        ({"name_prefix": "Acme"}, ValueError, r"^name_prefix: must be lower-case"),
        ({"name_prefix": "a" * 49}, ValueError, r"^name_prefix: .* at most 48 characters"),
        ({"config": {"disabel": ["DRA001"]}}, ValueError, r"^config: unknown option 'disabel'"),
        ({"webhook": {**GOOD_WEBHOOK, "image": None}}, ValueError, r"^webhook\.image: .*dra-guard publishes none"),
        ({"webhook": {k: v for k, v in GOOD_WEBHOOK.items() if k != "image"}}, ValueError, r"^webhook: needs image"),
        ({"webhook": {**GOOD_WEBHOOK, "ca_bundle": "ca.pem"}}, ValueError, r"^webhook\.ca_bundle: .* got 'ca.pem'"),
        ({"webhook": {**GOOD_WEBHOOK, "replica": 3}}, TypeError, r"^webhook\.replica: .*\(did you mean replicas\?\)"),
        ({"webhook": "registry.example/x:1"}, ValueError, r"^webhook: must be a WebhookDeployment or a mapping"),
        ({"enforcment": "Audit"}, TypeError, r"^enforcment: not an argument of AdmissionGuard \(did you mean enf"),
    ],
)
def test_bad_arguments_are_refused_by_name(arguments: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        AdmissionGuardSpec.from_options("AdmissionGuard", arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"namespace": "Dra Guard"}, r"^namespace: must be a DNS-1123 label"),
        ({"tls_secret": "tls_secret"}, r"^tls_secret: must be the name of a Secret"),
        ({"hmac_key_secret": ""}, r"^hmac_key_secret: must be the name of a Secret"),
        ({"replicas": 0}, r"^replicas: must be an integer >= 1, got 0"),
        ({"replicas": True}, r"^replicas: must be an integer >= 1, got True"),
        ({"ca_bundle": b""}, r"^ca_bundle: must be the PEM text"),
    ],
)
def test_bad_webhook_settings_are_refused_by_name(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        webhook(**settings)


# --- the CLI -----------------------------------------------------------------------


def run(*arguments: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DRA_GUARD, "admission-policy", *arguments],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=env,
        timeout=120,  # a command that blocks (reading a FIFO) fails instead of hanging the run
    )


def cli_arguments(directory: Path) -> list[str]:
    (directory / "ca.pem").write_text(CA_PEM)
    (directory / "guard.yaml").write_text(yaml.safe_dump(CONFIG))
    return [
        "--enforcement",
        "Audit",
        "--kubernetes-version",
        "1.34",
        "--name",
        "acme",
        "--config",
        "guard.yaml",
        "--deploy-webhook",
        "--webhook-image",
        "registry.example/dra-guard:0.1.0",
        "--webhook-namespace",
        "dra-guard",
        "--tls-secret",
        "dra-guard-tls",
        "--ca-bundle",
        "ca.pem",
        "--hmac-key-secret",
        "tag-key",
        "--webhook-replicas",
        "1",
    ]


@pytest.mark.e2e
def test_the_cli_prints_the_specs_objects(tmp_path: Path) -> None:
    result = run(*cli_arguments(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert list(yaml.safe_load_all(result.stdout)) == admission_guard_objects(SPECS["webhook-keyed-one-replica"])


@pytest.mark.e2e
def test_the_cli_output_does_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    outputs = {
        run(*cli_arguments(tmp_path), cwd=tmp_path, env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        for seed in ("1", "2", "3")
    }
    assert len(outputs) == 1 and "kind: Deployment" in outputs.pop()


@pytest.mark.e2e
def test_the_hmac_secret_key_named_in_the_help_is_the_one_mounted(tmp_path: Path) -> None:
    result = subprocess.run([DRA_GUARD, "admission-policy", "--help"], capture_output=True, text=True, check=True)
    assert f"'{HMAC_SECRET_KEY}'" in result.stdout


DEPLOY = ["--deploy-webhook", "--webhook-image", "i", "--tls-secret", "t"]


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--deploy-webhook"],
            "--deploy-webhook needs --webhook-image, --webhook-namespace, --tls-secret, --ca-bundle",
        ),
        (["--webhook-image", "i"], "--webhook-image: only used with --deploy-webhook"),
        (["--deploy-webhook", "--webhook", "https://x"], "--webhook URL and --deploy-webhook both say where"),
        (["--name", "ACME"], "--name: must be lower-case letters"),
        ([*DEPLOY, "--webhook-namespace", "NS", "--ca-bundle", "ca.pem"], "--webhook-namespace: must be a DNS-1123"),
        ([*DEPLOY, "--webhook-namespace", "ns", "--ca-bundle", "empty.pem"], "--ca-bundle: must be the PEM text"),
        # With --webhook URL the bundle was not looked at: garbage was accepted, and a FIFO
        # blocked the command for good.
        (["--webhook", "https://x.example", "--ca-bundle", "empty.pem"], "--ca-bundle: must be the PEM text"),
        (["--webhook", "https://x.example", "--ca-bundle", "fifo.pem"], "fifo.pem: not a regular file (a FIFO)"),
        (
            [*DEPLOY, "--webhook-namespace", "ns", "--ca-bundle", "ca.pem", "--webhook-replicas", "0"],
            "--webhook-replicas: must be an integer >= 1",
        ),
    ],
)
def test_the_cli_refuses_bad_webhook_arguments_clearly(tmp_path: Path, arguments: list[str], message: str) -> None:
    (tmp_path / "ca.pem").write_text(CA_PEM)
    (tmp_path / "empty.pem").write_text("")
    os.mkfifo(tmp_path / "fifo.pem")
    result = run(*arguments, cwd=tmp_path)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr, result.stderr


# --- the Deployment's command line, run for real -------------------------------------


def _certificates(hostname: str) -> tuple[bytes, bytes, bytes]:
    """A CA, and a serving certificate for `hostname` signed by it: PEM (CA, cert, key)."""
    now = datetime.datetime.now(datetime.timezone.utc)

    def certificate(subject: str, issuer: str, key: Any, signer: Any, ca: bool) -> x509.Certificate:
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(hostname)]), critical=False)
        return builder.sign(signer, hashes.SHA256())

    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = certificate("test CA", "test CA", ca_key, ca_key, ca=True)
    server = certificate(hostname, "test CA", server_key, ca_key, ca=False)
    key = server_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return ca.public_bytes(serialization.Encoding.PEM), server.public_bytes(serialization.Encoding.PEM), key


KEY = "deploy-test-key-51c2"


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, dict[str, Any]], int, int, Path]]:
    """The webhook started with the Deployment's own command line, the volumes it mounts
    laid out as the kubelet would, from the Secrets and the ConfigMap the spec names."""
    directory = tmp_path_factory.mktemp("deployed")
    service_host = "dra-guard-webhook.dra-guard.svc"  # what the API server dials for the Service
    ca, certificate, key = _certificates(service_host)
    spec = AdmissionGuardSpec(config={"disable": ["DRA009"]}, webhook=webhook(ca_bundle=ca, hmac_key_secret="tag-key"))
    kinds = by_kind(admission_guard_objects(spec))
    secrets = {"dra-guard-tls": {"tls.crt": certificate, "tls.key": key}, "tag-key": {HMAC_SECRET_KEY: KEY.encode()}}
    config_maps = {kinds["ConfigMap"]["metadata"]["name"]: kinds["ConfigMap"]["data"]}
    pod = kinds["Deployment"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    arguments = list(container["args"])
    for mount in container["volumeMounts"]:
        volume, local = volumes[mount["name"]], directory / mount["name"]
        local.mkdir()
        if "secret" in volume:
            source = secrets[volume["secret"]["secretName"]]
            for item in volume["secret"]["items"]:
                (local / item["path"]).write_bytes(source[item["key"]])
        else:
            for name, text in config_maps[volume["configMap"]["name"]].items():
                (local / name).write_text(text)
        arguments = [argument.replace(mount["mountPath"], str(local)) for argument in arguments]
    # Outside a pod there is no service-account token: --in-cluster is tested on its own above.
    arguments.remove("--in-cluster")
    port, probe_port = free_port(), free_port()
    arguments[arguments.index("--port") + 1] = str(port)
    arguments[arguments.index("--probe-port") + 1] = str(probe_port)
    log = directory / "webhook.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [str(Path(sys.executable).parent / container["command"][0]), *arguments, "--host", "127.0.0.1"],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        deadline = time.monotonic() + 30
        while not _accepts(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"webhook did not start: {log.read_text()}")
            time.sleep(0.1)
        yield kinds, port, probe_port, log
    finally:
        process.terminate()
        process.wait(timeout=10)


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.mark.e2e
def test_the_probes_answer_as_the_kubelet_asks(deployed: tuple[dict[str, dict[str, Any]], int, int, Path]) -> None:
    kinds, port, probe_port, _ = deployed
    (container,) = kinds["Deployment"]["spec"]["template"]["spec"]["containers"]
    ports = {named["name"]: named["containerPort"] for named in container["ports"]}
    local = {ports["https"]: port, ports["probes"]: probe_port}
    for probe in (container["readinessProbe"], container["livenessProbe"]):
        assert probe["httpGet"]["scheme"] == "HTTP"
        connection = http.client.HTTPConnection("127.0.0.1", local[ports[probe["httpGet"]["port"]]], timeout=5)
        connection.request("GET", probe["httpGet"]["path"])
        assert connection.getresponse().status == 200
    # The review port answers them too, over HTTPS (the kubelet does not verify probe certificates).
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=ssl._create_unverified_context(), timeout=5)
    connection.request("GET", "/readyz")
    assert connection.getresponse().status == 200


def review(kinds: dict[str, dict[str, Any]], port: int, obj: dict[str, Any]) -> dict[str, Any]:
    """An AdmissionReview sent as the API server sends it: to the configuration's Service
    path, trusting only its caBundle, checking the certificate against the Service name."""
    entry, _ = kinds["ValidatingWebhookConfiguration"]["webhooks"]  # the objects' entry, then the reservations'
    service = entry["clientConfig"]["service"]
    context = ssl.create_default_context(cadata=base64.b64decode(entry["clientConfig"]["caBundle"]).decode())
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        hostname = f"{service['name']}.{service['namespace']}.svc"
        with context.wrap_socket(raw, server_hostname=hostname) as tls:
            connection = http.client.HTTPSConnection(hostname, timeout=10)
            connection.sock = tls
            body = {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "request": {
                    "uid": "6b1f",
                    "kind": {"group": "", "version": "v1", "kind": obj["kind"]},
                    "operation": "CREATE",
                    "namespace": "tenant-a",
                    "name": obj["metadata"]["name"],
                    "object": obj,
                },
            }
            connection.request(
                "POST", service["path"], body=json.dumps(body), headers={"Content-Type": "application/json"}
            )
            response = connection.getresponse()
            assert response.status == 200
            answer: dict[str, Any] = json.loads(response.read())["response"]
            return answer


@pytest.mark.e2e
def test_the_api_server_reaches_the_webhook_with_the_configurations_ca_and_path(
    deployed: tuple[dict[str, dict[str, Any]], int, int, Path],
) -> None:
    kinds, port, _, log = deployed
    assert review(kinds, port, tagged(KEY))["allowed"] is True
    forged = review(kinds, port, tagged("somebody-elses-key"))  # the HMAC key Secret is mounted and used
    assert forged["allowed"] is False and forged["status"]["message"].startswith("DRA012: ")
    # The ConfigMap is read: its configuration disables the rule that would deny this pod.
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "tenant-a"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "missing"}]}}]},
    }
    assert review(kinds, port, pod)["allowed"] is True
    assert KEY not in log.read_text()


def test_without_the_config_map_the_same_pod_is_denied() -> None:
    """The control for the test above: the pod is denied under the default configuration."""
    from dra_guard.admission.webhook import Webhook

    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "tenant-a"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "missing"}]}}]},
    }
    assert Webhook(RULES, Config()).review({"uid": "u", "object": pod, "namespace": "tenant-a"})["allowed"] is False
