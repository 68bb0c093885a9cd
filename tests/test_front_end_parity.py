"""One verdict per object, from every front end (issue 19, point 4).

Every rule's EXAMPLES, the vendored corpus, the builders' outputs (and, once
`testkit.lifecycle` exists, what the cluster creates from them) and the cases below go
through the five front ends: `dra-guard check --format json`, cdk8s `enforce()`, the Pulumi
pack over gRPC (resource and stack policies), the ValidatingAdmissionPolicies (emulated)
and the webhook (in-process, and once over HTTPS). The rule IDs each reports on each object
must be the CLI's, except where the front end declares, per rule, what it cannot see
(`testkit.front_ends.FRONT_ENDS`); each front end must also report exactly what the engine
gives for what it sees (`testkit.front_ends.view_*`), and every declared blind spot must be
needed by some input, so the declarations cannot outgrow what is real.
"""

from __future__ import annotations

import copy
import http.client
import json
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi.runtime.proto import analyzer_pb2_grpc

from dra_guard import AcceleratorSlice, claim_template, isolated_workload, isolation_tag
from dra_guard.admission.policy import WEBHOOK_KINDS
from dra_guard.contract.catalog import ISOLATION_TAG_ANNOTATION as ISOLATION_TAG
from testkit.front_ends import (
    CLUSTER,
    ENFORCE,
    FRONT_ENDS,
    PULUMI,
    Compared,
    Difference,
    ObjectKey,
    Source,
    Verdicts,
    Views,
    accepted_by_api_server,
    admission_request,
    builder_sources,
    corpus_sources,
    differences,
    example_sources,
    key_of,
    lifecycle_sources,
    rules_of,
    run_cli,
    run_enforce,
    run_policies,
    run_pulumi,
    run_webhook,
    view_policies,
    view_pulumi,
    view_webhook,
    views,
    webhook_for,
    webhook_rules,
)
from testkit.lifecycle import cluster_creates
from testkit.pack_process import running_pack
from testkit.pulumi_props import shared_claim
from tests.webhook_apiserver import write_certificates

# --- the cases the issue names ----------------------------------------------------------


def _deployment(claim: dict[str, Any], replicas: int = 3) -> dict[str, Any]:
    """A Deployment whose pod template names ResourceClaim `claim` by resourceClaimName."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "inference", "namespace": claim["metadata"]["namespace"]},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "inference"}},
            "template": {
                "metadata": {"labels": {"app": "inference"}},
                "spec": {
                    "containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}],
                    "resourceClaims": [{"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}],
                },
            },
        },
    }


def _nic_claim() -> dict[str, Any]:
    """A claim for a NIC only (sharing it is none of DRA005's business)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "uplink", "namespace": "ns"},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "nic", "exactly": {"deviceClassName": "net.example.com", "allocationMode": "ExactCount"}}
                ]
            }
        },
    }


#: A tenant's file: the cluster-scoped DeviceClass gpu.nvidia.com redefined with a pin, and
#: a template that relies on it (RBAC refuses the class at apply; the template lands unpinned).
REDEFINED_CLASS = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.nvidia.com}
spec:
  selectors:
  - cel:
      expression: >-
        device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100'
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: whole-gpu, namespace: tenant-a}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com, allocationMode: ExactCount, count: 1}
"""


#: A class dra-guard does not know (NVIDIA's per-profile demo class, unconfigured), pinned by
#: its DeviceClass in the same file: only what sees both objects can clear the template.
CLASS_IN_THE_INPUT = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: mig-1g-12gb.gpu.nvidia.com}
spec:
  selectors:
  - cel:
      expression: >-
        device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig' &&
        device.attributes['gpu.nvidia.com'].profile == '1g.12gb'
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: slice, namespace: tenant-a}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: mig-1g-12gb.gpu.nvidia.com, allocationMode: ExactCount, count: 1}
"""


#: Issue 20, point 6: a NIC class dra-guard does not know, which its DeviceClass in the input
#: shows to select DRANET's devices (dra.net); a GPU + NIC template on it (DRANET's EKS
#: example, class renamed); and a Deployment whose pod-level NIC claim no container names.
NIC_CLASS_IN_THE_INPUT = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: team-efa}
spec:
  selectors:
  - cel:
      expression: device.driver == "dra.net"
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: gpu-efa, namespace: tenant-a}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com, count: 1}
      - name: efa
        exactly: {deviceClassName: team-efa, count: 1}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: nic, namespace: tenant-a}
spec:
  spec:
    devices:
      requests:
      - name: nic
        exactly: {deviceClassName: team-efa, allocationMode: All}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: server, namespace: tenant-a}
spec:
  replicas: 2
  selector: {matchLabels: {app: server}}
  template:
    metadata: {labels: {app: server}}
    spec:
      resourceClaims:
      - {name: nic, resourceClaimTemplateName: nic}
      containers:
      - {name: c, image: i}
"""

#: Issue 20, point 3: a Pod with generateName naming one ResourceClaim.
GENERATED_POD = """\
apiVersion: v1
kind: Pod
metadata: {generateName: worker-, namespace: tenant-a}
spec:
  containers:
  - name: c
    image: i
    resources:
      claims: [{name: gpu}]
  resourceClaims:
  - {name: gpu, resourceClaimName: shared-slice}
"""


def _namespace_less_template() -> dict[str, Any]:
    """A template written without a namespace and tagged as it stands (over namespace ""):
    `kubectl apply -n tenant-a` places it, and its tag no longer matches."""
    template = claim_template(name="slice", slice=AcceleratorSlice.nvidia_mig("1g.10gb"), namespace="tenant-a")
    del template["metadata"]["namespace"]
    template["metadata"]["annotations"][ISOLATION_TAG] = isolation_tag(template)
    return template


MIG = AcceleratorSlice.nvidia_mig("1g.10gb")


def _claim_of_another_pod() -> Source:
    """A builder Job's pod, the claim the resource-claim controller made for it (written by
    that controller), and pod `thief` naming that claim by resourceClaimName: DRA005 on the
    thief from every front end that sees the claim (the webhook reads it)."""
    objects = [
        obj for obj in isolated_workload("w", image="i", slice=MIG, namespace="tenant-a", workload_kind="Job") if obj
    ]
    created = [made for made in cluster_creates(objects) if made.kind in ("Pod", "ResourceClaim")]
    (owner,) = [made.obj for made in created if made.kind == "Pod"]
    (claim,) = [made.obj for made in created if made.kind == "ResourceClaim"]
    thief = copy.deepcopy(owner)
    thief["metadata"] = {"name": "thief", "namespace": "tenant-a"}
    thief["spec"]["resourceClaims"] = [
        {"name": entry["name"], "resourceClaimName": claim["metadata"]["name"]}
        for entry in owner["spec"]["resourceClaims"]
    ]
    writers = (None,) * len(objects) + tuple({"username": made.writer} for made in created) + (None,)
    return Source(
        "case-pod-names-the-claim-made-for-another-pod",
        (*objects, *(made.obj for made in created), thief),
        writers=writers,
    )


def _scrubber_written(name: str, **fields: Any) -> Source:
    """A builder Job whose scrubber has `fields` written on it (a chart's `env: []`)."""
    objects = [
        obj for obj in isolated_workload("w", image="i", slice=MIG, namespace="tenant-a", workload_kind="Job") if obj
    ]
    (job,) = [obj for obj in objects if obj["kind"] == "Job"]
    job["spec"]["template"]["spec"]["initContainers"][0].update(fields)
    return Source(name, tuple(objects))


#: Fields the API server leaves out of a container when written empty (`omitempty`), and one
#: it keeps (`lifecycle: {}`, a pointer to an empty struct).
SCRUBBER_WRITTEN_EMPTY = _scrubber_written(
    "case-scrubber-fields-written-empty", args=[], env=[], stdin=False, workingDir="", restartPolicy=None
)
SCRUBBER_EMPTY_LIFECYCLE = _scrubber_written("case-scrubber-empty-lifecycle", lifecycle={})
#: The kubelet mounts a file at the termination message path: over a device node it hides the
#: device from the scrubber alone. The default, written out, is the API server's own.
SCRUBBER_TERMINATION_MESSAGE = _scrubber_written(
    "case-scrubber-termination-message-over-a-device", terminationMessagePath="/dev/nvidia-caps/nvidia-cap12"
)
SCRUBBER_DEFAULT_TERMINATION_MESSAGE = _scrubber_written(
    "case-scrubber-default-termination-message", terminationMessagePath="/dev/termination-log"
)

CASES = [
    Source("case-shared-claim-after-the-deployment", (_deployment(shared_claim()), shared_claim())),
    Source("case-shared-claim-before-the-deployment", (shared_claim(), _deployment(shared_claim()))),
    Source("case-nic-claim-shared-by-replicas", (_nic_claim(), _deployment(_nic_claim()))),
    Source("case-tenant-redefines-a-catalog-class", tuple(yaml.safe_load_all(REDEFINED_CLASS)), {}, REDEFINED_CLASS),
    Source(
        "case-unknown-class-pinned-in-the-input", tuple(yaml.safe_load_all(CLASS_IN_THE_INPUT)), {}, CLASS_IN_THE_INPUT
    ),
    Source(
        "case-point6-nic-class-in-the-input",
        tuple(yaml.safe_load_all(NIC_CLASS_IN_THE_INPUT)),
        {},
        NIC_CLASS_IN_THE_INPUT,
    ),
    Source("case-point3-pod-with-generate-name", tuple(yaml.safe_load_all(GENERATED_POD)), {}, GENERATED_POD),
    _claim_of_another_pod(),
    # Appended: the tests below pick the cases above by their place.
    SCRUBBER_WRITTEN_EMPTY,
    SCRUBBER_EMPTY_LIFECYCLE,
    SCRUBBER_TERMINATION_MESSAGE,
    SCRUBBER_DEFAULT_TERMINATION_MESSAGE,
]
NAMESPACE_LESS = Source("case-namespace-less-template", (_namespace_less_template(),))

BUILDERS = builder_sources()
LIFECYCLE = lifecycle_sources(BUILDERS)
SOURCES = [*example_sources(), *corpus_sources(), *BUILDERS, *CASES, *(LIFECYCLE or [])]


# --- the front ends that run as processes ------------------------------------------------


@pytest.fixture(scope="module")
def pack() -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    with running_pack() as stub:
        yield stub


@dataclass
class HttpsWebhook:
    port: int
    context: ssl.SSLContext

    def review(self, request: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
        connection = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=30)
        try:
            connection.request("POST", "/validate", body=body, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            payload = json.loads(response.read())
        finally:
            connection.close()
        assert response.status == 200, payload
        answer: dict[str, Any] = payload["response"]
        assert answer["uid"] == request["uid"]
        return answer


@pytest.fixture(scope="module")
def https_webhook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpsWebhook]:
    """`dra-guard webhook --fail-on low` serving HTTPS on loopback (uvicorn), default configuration."""
    directory = tmp_path_factory.mktemp("webhook")
    ca_file, cert_file, key_file = write_certificates(directory)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    command = [str(Path(sys.executable).parent / "dra-guard"), "webhook", "--tls-cert", str(cert_file)]
    command += ["--tls-key", str(key_file), "--host", "127.0.0.1", "--port", str(port), "--fail-on", "low"]
    log = directory / "webhook.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
    context = ssl.create_default_context(cafile=str(ca_file))
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"webhook did not start: {log.read_text()}") from None
                time.sleep(0.05)
        yield HttpsWebhook(port, context)
    finally:
        process.terminate()
        process.wait(timeout=10)


# --- every front end on every source -----------------------------------------------------


@dataclass
class Outcome:
    source: Source
    seen: Views
    cli: Verdicts
    enforce: Verdicts
    pulumi: Verdicts
    policies: Verdicts
    webhook: Verdicts
    problems: list[str]
    differences: list[Difference]


_OUTCOMES: dict[str, Outcome] = {}


def outcome(source: Source, pack: analyzer_pb2_grpc.AnalyzerStub, directory: Path) -> Outcome:
    """Every front end's verdicts on the source (once per source and test session)."""
    if source.name in _OUTCOMES:
        return _OUTCOMES[source.name]
    seen = views(source)
    keys = sorted({key_of(obj) for obj in source.objects})
    cli, cli_errors = run_cli(source, directory / source.name.replace("/", "_"))
    enforced, enforce_other = run_enforce(source)
    resource, stack, pulumi_other = run_pulumi(pack, source)
    pulumi = {key: resource.get(key, frozenset()) | stack.get(key, frozenset()) for key in keys}
    policies, webhook = run_policies(source), run_webhook(source)
    cluster = {key: policies[key] | webhook.get(key, frozenset()) for key in policies}

    problems = []
    whole = {key: rules_of(seen.whole.get(key, [])) for key in keys}
    # Each front end reports what the engine gives for what it sees.
    for name, actual, expected in (
        ("cli", cli, whole),
        ("pulumi", pulumi, {key: view_pulumi(seen, key) for key in keys}),
        ("policies", policies, {key: view_policies(source, seen, key) for key in policies}),
        ("webhook", webhook, {key: view_webhook(source, seen, key) for key in webhook}),
    ):
        for key in sorted(set(actual) | set(expected)):
            if actual.get(key, frozenset()) != expected.get(key, frozenset()):
                problems.append(
                    f"{name} reports {sorted(actual.get(key, ()))} on {'/'.join(key)}, "
                    f"its view is {sorted(expected.get(key, ()))}"
                )
    if cli_errors or enforce_other or pulumi_other:
        problems.append(f"input errors: cli {cli_errors}, enforce {enforce_other}, pulumi {pulumi_other}")
    found = differences(Compared(ENFORCE, source, seen, cli, enforced), keys)
    found += differences(Compared(PULUMI, source, seen, cli, pulumi), keys)
    found += differences(Compared(CLUSTER, source, seen, cli, cluster), sorted(cluster))
    result = Outcome(source, seen, cli, enforced, pulumi, policies, webhook, problems, found)
    _OUTCOMES[source.name] = result
    return result


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("parity")


@pytest.mark.e2e
@pytest.mark.parametrize("source", SOURCES, ids=[source.name for source in SOURCES])
def test_one_verdict_per_object(source: Source, pack: analyzer_pb2_grpc.AnalyzerStub, workdir: Path) -> None:
    result = outcome(source, pack, workdir)
    unexplained = [str(difference) for difference in result.differences if difference.explained_by is None]
    assert not result.problems and not unexplained, "\n".join([*result.problems, *unexplained])


@pytest.mark.e2e
def test_every_declared_blind_spot_is_needed(pack: analyzer_pb2_grpc.AnalyzerStub, workdir: Path) -> None:
    """A declaration no input needs is one that could hide a bug: each (front end, rule,
    reason) explains at least one difference."""
    used = {
        (difference.front_end, difference.rule, difference.explained_by)
        for source in SOURCES
        for difference in outcome(source, pack, workdir).differences
    }
    declared = {
        (front_end.name, rule, reason)
        for front_end in FRONT_ENDS
        for rule, reasons in front_end.blind.items()
        for reason in reasons
    }
    assert declared - used == set()


@pytest.mark.e2e
def test_what_the_comparison_covers(pack: analyzer_pb2_grpc.AnalyzerStub, workdir: Path) -> None:
    """The comparison must not quietly shrink: most objects reach admission, every source
    has objects, and the webhook is sent a good share of them."""
    objects = sum(len(source.objects) for source in SOURCES)
    admitted = sum(accepted_by_api_server(obj) for source in SOURCES for obj in source.objects)
    reviewed = sum(
        accepted_by_api_server(obj) and obj.get("kind") in WEBHOOK_KINDS for source in SOURCES for obj in source.objects
    )
    assert all(source.objects for source in SOURCES)
    assert objects >= 230 and admitted >= 0.6 * objects and reviewed >= 0.4 * objects, (objects, admitted, reviewed)


@pytest.mark.e2e
def test_the_webhook_over_https_answers_as_in_process(https_webhook: HttpsWebhook) -> None:
    """One round over TLS: every object the webhook is sent, of every source without a
    configuration, reviewed by the served webhook and by the in-process one (without the
    namespace's templates, as the served one runs without --in-cluster)."""
    requests = [
        (source, admission_request(obj, source.writer(index)))
        for source in SOURCES
        if not source.config
        for index, obj in enumerate(source.objects)
        if obj.get("kind") in WEBHOOK_KINDS and accepted_by_api_server(obj)
    ]
    assert len(requests) > 80
    with ThreadPoolExecutor(max_workers=8) as pool:
        served = list(pool.map(lambda item: https_webhook.review(item[1]), requests))
    for (source, request), response in zip(requests, served, strict=True):
        expected = webhook_for(source).review(request)
        assert (response["allowed"], webhook_rules(response)) == (expected["allowed"], webhook_rules(expected)), (
            source.name,
            request["kind"],
            request["name"],
            response,
        )
    assert any(not response["allowed"] for response in served) and any(response["allowed"] for response in served)


# --- the bugs the issue names, each through the front end that had it ---------------------


def _cli_rules(source: Source, pack: analyzer_pb2_grpc.AnalyzerStub, workdir: Path, key: ObjectKey) -> set[str]:
    return set(outcome(source, pack, workdir).cli.get(key, frozenset()))


@pytest.mark.e2e
@pytest.mark.parametrize("source", CASES[:2], ids=["claim-after", "claim-before"])
def test_the_pack_reports_a_shared_claim_in_either_order(
    source: Source, pack: analyzer_pb2_grpc.AnalyzerStub, workdir: Path
) -> None:
    """A Deployment of 3 replicas naming one ResourceClaim, with that claim in the stack:
    DRA005 from the pack over gRPC as from the CLI, whichever comes first."""
    result = outcome(source, pack, workdir)
    key = ("Deployment", "ns", "inference")
    assert "DRA005" in result.cli[key] and "DRA005" in result.pulumi[key]
    assert "DRA005" in result.policies[key]  # fail closed: the policy cannot read the claim


@pytest.mark.e2e
def test_a_claim_that_asks_for_no_accelerator_may_be_shared(
    pack: analyzer_pb2_grpc.AnalyzerStub, workdir: Path
) -> None:
    result = outcome(CASES[2], pack, workdir)
    key = ("Deployment", "ns", "inference")
    assert "DRA005" not in result.cli[key] if key in result.cli else True
    # Only the front ends that see the claim can clear it; the others fail closed.
    assert "DRA005" in result.pulumi[key] and "DRA005" in result.policies[key]


@pytest.mark.e2e
def test_a_tenants_redefinition_of_a_catalog_class_pins_nothing(
    pack: analyzer_pb2_grpc.AnalyzerStub, workdir: Path
) -> None:
    result = outcome(CASES[3], pack, workdir)
    template = ("ResourceClaimTemplate", "tenant-a", "whole-gpu")
    device_class = ("DeviceClass", "", "gpu.nvidia.com")
    for verdicts in (result.cli, result.enforce, result.pulumi, result.policies):
        assert "DRA002" in verdicts[template]
    (redefinition,) = [f for f in result.seen.whole[device_class] if f.rule == "DRA002"]
    assert "catalog" in redefinition.message and "productName" in redefinition.message
    assert "DRA002" in result.cli[device_class] and "DRA002" in result.enforce[device_class]


@pytest.mark.e2e
def test_a_namespace_less_template_gets_dra012_from_every_front_end(
    pack: analyzer_pb2_grpc.AnalyzerStub, workdir: Path
) -> None:
    """`check` used to pass it and the webhook to deny it after `kubectl apply -n`: the tag
    was computed over namespace ""."""
    result = outcome(NAMESPACE_LESS, pack, workdir)
    (key,) = {key_of(obj) for obj in NAMESPACE_LESS.objects}
    cluster = result.policies[key] | result.webhook.get(key, frozenset())
    for verdict in (result.cli[key], result.enforce[key], result.pulumi[key], cluster):
        assert "DRA012" in verdict
    assert not result.problems and all(d.explained_by for d in result.differences), result.differences


@pytest.mark.parametrize(
    ("source", "refused"),
    [
        (SCRUBBER_WRITTEN_EMPTY, False),
        (SCRUBBER_EMPTY_LIFECYCLE, True),
        (SCRUBBER_TERMINATION_MESSAGE, True),
        (SCRUBBER_DEFAULT_TERMINATION_MESSAGE, False),
    ],
    ids=["empty", "lifecycle", "termination-message-over-a-device", "default-termination-message"],
)
def test_a_scrubber_field_is_judged_as_the_cluster_keeps_it(source: Source, refused: bool) -> None:
    """`args: []`, `env: []`, `stdin: false`, `workingDir: ""` and `restartPolicy: null` are not
    stored (core/v1 Container's `omitempty`: contract.container_fields), so the policies in
    the cluster admit the pod; `check` reported DRA016 scrubber-changed on them, and the
    emulator kept them, so the parity held a verdict the cluster does not give.
    `lifecycle: {}` is kept, and refused by both; so is a termination message path other than
    the default (a file the kubelet mounts over a device node hides it from the scrubber)."""
    (key,) = {key_of(obj) for obj in source.objects if obj["kind"] == "Job"}
    with tempfile.TemporaryDirectory() as directory:
        cli, errors = run_cli(source, Path(directory))
    assert not errors
    assert ("DRA016" in cli.get(key, frozenset())) is refused
    assert ("DRA016" in run_policies(source).get(key, frozenset())) is refused
