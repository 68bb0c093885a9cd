"""The five front ends the rules run in, run side by side, and what each declares it cannot see.

dra-guard gives one verdict (the rule IDs reported on an object) through `dra-guard check`,
cdk8s `enforce()`, the Pulumi policy pack, the ValidatingAdmissionPolicies and the webhook.
Each front end sees a different part of the object set:

* the CLI and `enforce()` see the whole set at once;
* the Pulumi pack sees each resource alone (its resource policies), then the whole stack
  (the stack policies, which report only cross-object findings);
* the policies see one object as the API server holds it at admission (its namespace set
  from the request, nulls dropped, DRA defaults applied), and decide what
  `dra_guard.ruleapi.admission_form.decides` says;
* the webhook is sent the kinds of `WEBHOOK_KINDS`, sees the object at admission and the
  claim templates of its namespace it names, and decides what the policies leave.

`FRONT_ENDS` declares, per front end and per rule, where its verdict may differ from the
CLI's and why (`Unseen`); `tests/test_front_end_parity.py` requires every other difference
to be absent, and every declaration to be needed by at least one input.  The `view_*`
functions say, from the engine, what each front end should report given what it sees; the
test also requires each front end to report exactly its view.
"""

from __future__ import annotations

import enum
import functools
import importlib
import io
import json
import re
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import yaml

from dra_guard import AcceleratorSlice, isolated_workload
from dra_guard.admission.emulate import admit, denied_rules
from dra_guard.admission.policy import WEBHOOK_KINDS, admission_objects, covered_rules
from dra_guard.admission.webhook import TemplateSource, Webhook
from dra_guard.contract.findings import Finding, Severity
from dra_guard.engine.run import check_objects
from dra_guard.model.selectors import analyse
from dra_guard.read.config_file import parse_config
from dra_guard.ruleapi.admission_form import KIND_RESOURCES, Admission, AdmissionTarget, decides
from dra_guard.ruleapi.config import Config
from dra_guard.rules import RULES
from testkit.paths import REPO_ROOT

#: (kind, namespace or "", name or generateName): one object of a source.
ObjectKey = tuple[str, str, str]
Verdicts = dict[ObjectKey, frozenset[str]]

#: The namespace `kubectl apply -n` puts a namespace-less object in, for admission.
APPLY_NAMESPACE = "tenant-a"
#: Who applies the inputs, in the admission requests (a tenant, not a controller).
TENANT_USER = {"username": "alice", "groups": ["system:authenticated"]}
#: Kinds without a namespace among the inputs (the API server sets none on them).
CLUSTER_SCOPED_KINDS = frozenset(
    {
        "DeviceClass",
        "DeviceTaintRule",
        "ResourceSlice",
        "Namespace",
        "Node",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "PriorityClass",
        "RuntimeClass",
        "StorageClass",
        "PersistentVolume",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    }
)
#: The release whose schema decides what the API server accepts (the default target).
ADMISSION_RELEASE = "1.36.0"


# --- what goes in ------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """Objects checked together (one rule example, one corpus file, one builder output)."""

    name: str
    objects: tuple[dict[str, Any], ...]
    #: Options as .dra-guard.yaml writes them.
    config: Mapping[str, Any] = field(default_factory=dict)
    #: The manifests as written, for the CLI (None: the objects, dumped).
    text: str | None = None
    #: Who writes each object in a cluster (None: the tenant), by index.
    writers: tuple[Mapping[str, Any] | None, ...] = ()

    def writer(self, index: int) -> Mapping[str, Any]:
        found = self.writers[index] if index < len(self.writers) else None
        return found if found is not None else TENANT_USER

    def manifests(self) -> str:
        return self.text if self.text is not None else yaml.safe_dump_all(list(self.objects), sort_keys=False)


def key_of(obj: Mapping[str, Any]) -> ObjectKey:
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    assert isinstance(metadata, Mapping)
    name = metadata.get("name") or metadata.get("generateName") or ""
    return str(obj.get("kind", "")), str(metadata.get("namespace") or ""), str(name)


def _documents(text: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for document in yaml.safe_load_all(text):
        if not isinstance(document, dict):
            continue
        items = document.get("items") if str(document.get("kind", "")).endswith("List") else None
        found += [item for item in items if isinstance(item, dict)] if isinstance(items, list) else [document]
    return found


def example_sources() -> list[Source]:
    """Every rule's EXAMPLES, each one source (with its configuration)."""
    return [
        Source(f"{rule.id}-example{index}", tuple(_documents(example.manifests)), example.config, example.manifests)
        for rule in RULES.values()
        for index, example in enumerate(rule.examples)
    ]


CORPUS = REPO_ROOT / "tests" / "corpus"


def corpus_sources() -> list[Source]:
    """Each vendored corpus file, as the CLI would be run on it."""
    sources = []
    for path in sorted(CORPUS.rglob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        sources.append(Source(str(path.relative_to(CORPUS)), tuple(_documents(text)), {}, text))
    return sources


#: One of each vendor's constructors, for every workload kind the builders make.
BUILDER_SLICES = (
    AcceleratorSlice.nvidia_mig("1g.10gb"),
    AcceleratorSlice.nvidia_mig("3g.40gb", count=2),
    AcceleratorSlice.nvidia_gpu("NVIDIA A100-SXM4-40GB"),
    AcceleratorSlice.google_tpu("v6e"),
    AcceleratorSlice.amd_gpu("cpx_nps4"),
)
BUILDER_KINDS = ("Deployment", "StatefulSet", "Job")


def builder_sources() -> list[Source]:
    """The builders' outputs (template, workload, Service): what the constructs emit."""
    sources = []
    for accelerator in BUILDER_SLICES:
        for kind in BUILDER_KINDS:
            if kind in ("Deployment", "StatefulSet"):
                built = isolated_workload(
                    "w", image="i", slice=accelerator, namespace="tenant-a", workload_kind=kind, replicas=2
                )
            else:
                built = isolated_workload("w", image="i", slice=accelerator, namespace="tenant-a", workload_kind=kind)
            objects = tuple(obj for obj in built if obj is not None)
            name = f"builder-{kind}-{accelerator.device_class}-{accelerator.pin_value}x{accelerator.count}"
            sources.append(Source(name, objects))
    return sources


def lifecycle_sources(builders: Sequence[Source]) -> list[Source] | None:
    """The builders' objects with what the cluster creates from them (`testkit.lifecycle`),
    each created object written by the identity that writes it; None until that exists."""
    try:
        lifecycle = importlib.import_module("testkit.lifecycle")
    except ModuleNotFoundError:
        return None
    cluster_creates: Callable[[Sequence[Mapping[str, Any]]], Sequence[Any]] = lifecycle.cluster_creates
    sources = []
    for source in builders:
        created = list(cluster_creates(source.objects))
        writers: list[Mapping[str, Any] | None] = [None] * len(source.objects)
        writers += [_user_info(item.writer) for item in created]
        objects = (*source.objects, *(dict(item.obj) for item in created))
        sources.append(Source(f"lifecycle-{source.name}", objects, source.config, None, tuple(writers)))
    return sources


def _user_info(writer: Any) -> Mapping[str, Any]:
    if isinstance(writer, str):
        return {"username": writer}
    if isinstance(writer, Mapping):
        return writer
    username = getattr(writer, "username", None)
    groups = getattr(writer, "groups", ())
    return {"username": str(username or writer), "groups": list(groups)}


# --- the engine's views: what each front end should report, given what it sees ----------


def config_of(source: Source) -> Config:
    return _config(_config_key(source))


@functools.lru_cache(maxsize=64)
def _config(values: str) -> Config:
    return parse_config(json.loads(values), RULES, "parity", environ={})


def _by_object(findings: Iterable[Finding]) -> dict[ObjectKey, list[Finding]]:
    found: dict[ObjectKey, list[Finding]] = {}
    for finding in findings:
        ref = finding.object
        key = (ref.kind, ref.namespace or "", ref.name or ref.generate_name or "")
        found.setdefault(key, []).append(finding)
    return found


@dataclass
class Views:
    """The engine's findings on one source, as each front end can see it."""

    #: On the whole set (the CLI, enforce(), the stack policies).
    whole: dict[ObjectKey, list[Finding]]
    #: On each object alone, not the whole picture (the Pulumi resource policies).
    alone: dict[ObjectKey, list[Finding]]
    #: On each object as admitted, alone (the policies); absent: refused before admission.
    admitted: dict[ObjectKey, list[Finding]]
    #: On each object as admitted with the claim templates of its namespace it names (the webhook).
    reviewed: dict[ObjectKey, list[Finding]]


def views(source: Source) -> Views:
    config = config_of(source)
    whole = _by_object(check_objects(list(source.objects), config).findings)
    alone: dict[ObjectKey, list[Finding]] = {}
    admitted: dict[ObjectKey, list[Finding]] = {}
    reviewed: dict[ObjectKey, list[Finding]] = {}
    templates = SourceTemplates(source)
    for obj in source.objects:
        key = key_of(obj)
        alone[key] = check_objects([obj], config, complete=False).findings
        if not accepted_by_api_server(obj):
            continue
        stored = as_admitted(obj)
        admitted[key] = check_objects([stored], config, complete=False).findings
        namespace = str(stored["metadata"].get("namespace") or "")
        named = [t for name in sorted(set(_template_names(stored))) if (t := templates.get(namespace, name))]
        named += [t for name in sorted(set(_claim_names(stored))) if (t := templates.get_claim(namespace, name))]
        reviewed[key] = [
            finding
            for finding in check_objects(
                [stored, *named], config, origins=["review"] + ["cluster"] * len(named), complete=bool(named)
            ).findings
            if finding.origin == "review"
        ]
    return Views(whole, alone, admitted, reviewed)


def rules_of(findings: Iterable[Finding]) -> frozenset[str]:
    return frozenset(finding.rule for finding in findings)


def view_pulumi(views: Views, key: ObjectKey) -> frozenset[str]:
    """Resource policies: the object's own findings; stack policies: the cross-object ones."""
    own = {f.rule for f in views.alone.get(key, []) if not f.cross_object}
    return frozenset(own | {f.rule for f in views.whole.get(key, []) if f.cross_object})


def _config_key(source: Source) -> str:
    # Config holds dicts (it is not hashable): the caches below are keyed by the options.
    return json.dumps(dict(source.config), sort_keys=True)


@functools.lru_cache(maxsize=64)
def _admissions(values: str) -> dict[str, Admission]:
    target = AdmissionTarget(_config(values))
    return {covered.rule.id: covered.admission for covered in covered_rules(RULES, target)}


def decided_by_policy(source: Source, finding: Finding) -> bool:
    admission = _admissions(_config_key(source)).get(finding.rule)
    return admission is not None and decides(admission, finding)


def view_policies(source: Source, views: Views, key: ObjectKey) -> frozenset[str]:
    return frozenset(f.rule for f in views.admitted.get(key, []) if decided_by_policy(source, f))


def view_webhook(source: Source, views: Views, key: ObjectKey) -> frozenset[str]:
    if key[0] not in WEBHOOK_KINDS:
        return frozenset()
    return frozenset(f.rule for f in views.reviewed.get(key, []) if not decided_by_policy(source, f))


# --- admission as the API server does it -------------------------------------------------


def accepted_by_api_server(obj: Mapping[str, Any], release: str = ADMISSION_RELEASE) -> bool:
    """What the API server refuses never reaches admission: the strict schema of the release,
    and device selectors that are not CEL (it compiles them when it validates)."""
    return _accepted(json.dumps(obj, sort_keys=True), release)


@functools.lru_cache(maxsize=4096)
def _accepted(text: str, release: str) -> bool:
    obj = json.loads(text)
    if not isinstance(obj.get("apiVersion"), str) or not isinstance(obj.get("kind"), str):
        return False
    try:
        kubernetes_validate.validate(as_admitted(obj), release, strict=True)
    except (kubernetes_validate.ValidationError, kubernetes_validate.SchemaNotFoundError):
        return False
    return all(analyse(expression).error is None for expression in selector_expressions(obj))


def selector_expressions(value: Any) -> Iterator[str]:
    """Every CEL device selector expression in `value`, wherever it stands."""
    if isinstance(value, Mapping):
        cel = value.get("cel")
        if isinstance(cel, Mapping) and isinstance(cel.get("expression"), str):
            yield cel["expression"]
        for item in value.values():
            yield from selector_expressions(item)
    elif isinstance(value, list):
        for item in value:
            yield from selector_expressions(item)


def as_admitted(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object as the API server hands it to admission for `kubectl apply -n APPLY_NAMESPACE`:
    a namespaced object without a namespace gets the request's
    (`rest.EnsureObjectNamespaceMatchesRequestNamespace`, before any admission plugin runs)."""
    result = dict(obj)
    metadata = dict(result.get("metadata") or {})
    if result.get("kind") not in CLUSTER_SCOPED_KINDS and not metadata.get("namespace"):
        metadata["namespace"] = APPLY_NAMESPACE
    result["metadata"] = metadata
    return result


def _template_names(obj: Any, field_name: str = "resourceClaimTemplateName") -> Iterator[str]:
    if isinstance(obj, Mapping):
        name = obj.get(field_name)
        if isinstance(name, str):
            yield name
        for value in obj.values():
            yield from _template_names(value, field_name)
    elif isinstance(obj, list):
        for value in obj:
            yield from _template_names(value, field_name)


def _claim_names(obj: Any) -> Iterator[str]:
    return _template_names(obj, "resourceClaimName")


class SourceTemplates(TemplateSource):
    """The cluster's claim templates and claims: those of the source the API server accepts."""

    def __init__(self, source: Source) -> None:
        self._objects = {
            (str(obj.get("kind")), stored["metadata"]["namespace"], stored["metadata"].get("name")): stored
            for obj in source.objects
            if obj.get("kind") in ("ResourceClaimTemplate", "ResourceClaim") and accepted_by_api_server(obj)
            for stored in [as_admitted(obj)]
        }

    def get(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self._objects.get(("ResourceClaimTemplate", namespace, name))

    def get_claim(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self._objects.get(("ResourceClaim", namespace, name))


def admission_request(obj: Mapping[str, Any], user: Mapping[str, Any] = TENANT_USER) -> dict[str, Any]:
    """The AdmissionReview request the API server sends for a CREATE of `obj`."""
    stored = as_admitted(obj)
    kind = str(stored.get("kind", ""))
    group, _, version = str(stored.get("apiVersion", "")).rpartition("/")
    resource = KIND_RESOURCES.get(kind, (group, kind.lower() + "s"))[1]
    request: dict[str, Any] = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": resource},
        "operation": "CREATE",
        "name": str(stored["metadata"].get("name") or ""),
        "userInfo": dict(user),
        "object": stored,
    }
    if kind not in CLUSTER_SCOPED_KINDS:
        request["namespace"] = stored["metadata"]["namespace"]
    return request


_WEBHOOK_RULE = re.compile(r"(?:^|; )(DRA\d{3}): ")


def webhook_rules(response: Mapping[str, Any]) -> frozenset[str]:
    """The rule IDs a webhook's response denies with."""
    if response.get("allowed"):
        return frozenset()
    return frozenset(_WEBHOOK_RULE.findall(str(response.get("status", {}).get("message", ""))))


# --- the front ends, run -----------------------------------------------------------------


def run_cli(source: Source, directory: Path) -> tuple[Verdicts, list[str]]:
    """`dra-guard check --format json --fail-on low` on the source's manifests (in-process
    `main`, as tests/test_golden_corpus.py runs it): verdicts and input errors."""
    from dra_guard.cli.main import main

    directory.mkdir(parents=True, exist_ok=True)
    manifests = directory / "manifests.yaml"
    manifests.write_text(source.manifests(), encoding="utf-8")
    config_file = directory / "dra-guard.yaml"
    config_file.write_text(yaml.safe_dump(dict(source.config)) if source.config else "", encoding="utf-8")
    stdout, stderr = io.StringIO(), io.StringIO()
    arguments = ["check", "--format", "json", "--fail-on", "low", "--config", str(config_file), str(manifests)]
    code = main(arguments, stdout, stderr)
    assert code in (0, 1, 2), stderr.getvalue()
    report = json.loads(stdout.getvalue())
    found: dict[ObjectKey, set[str]] = {}
    for finding in report["findings"]:
        ref = finding["object"]
        key = (ref["kind"] or "", ref["namespace"] or "", ref["name"] or ref.get("generateName") or "")
        found.setdefault(key, set()).add(finding["rule"])
    return {key: frozenset(rules) for key, rules in found.items()}, [e["message"] for e in report["errors"]]


_ENFORCED = re.compile(r"^(DRA\d{3}) \[\w+\] .*? \(construct \S*?/o(\d+), at ")


def run_enforce(source: Source) -> tuple[Verdicts, list[str]]:
    """cdk8s `enforce()` on a chart of the source's objects as raw ApiObjects."""
    from cdk8s import ApiObject, ApiObjectMetadata, Chart, JsonPatch
    from cdk8s import Testing as Cdk8sTesting

    from constructs_dra import enforce

    chart = Chart(Cdk8sTesting.app(), "parity")
    for index, obj in enumerate(source.objects):
        api_object = ApiObject(
            chart,
            f"o{index}",
            api_version=str(obj.get("apiVersion")),
            kind=str(obj.get("kind")),
            metadata=ApiObjectMetadata(name=f"o{index}"),
        )
        for key, value in obj.items():
            if key not in ("apiVersion", "kind"):
                api_object.add_json_patch(JsonPatch.add(f"/{key}", value))
        if "metadata" not in obj:
            api_object.add_json_patch(JsonPatch.remove("/metadata"))
    found: dict[ObjectKey, set[str]] = {}
    others = []
    for message in enforce(chart, dict(source.config), fail_on="low").validate():
        match = _ENFORCED.match(message)
        if match is None:
            others.append(message)
            continue
        found.setdefault(key_of(source.objects[int(match.group(2))]), set()).add(match.group(1))
    return {key: frozenset(rules) for key, rules in found.items()}, others


_RULE_OF_POLICY = {rule.slug: rule.id for rule in RULES.values()}


def run_pulumi(stub: Any, source: Source) -> tuple[Verdicts, Verdicts, list[str]]:
    """The policy pack over gRPC: each resource (Analyze), then the stack (AnalyzeStack).
    Returns the resource policies' verdicts, the stack policies' and the other diagnostics."""
    from pulumi.runtime.proto import analyzer_pb2

    from pulumi_dra.policies import CROSS_OBJECT_SUFFIX, build_policies
    from testkit.pack_process import configure, struct
    from testkit.pulumi_props import type_token

    policy_config = {RULES.options[key].camel_key: value for key, value in source.config.items()}
    configure(stub, {policy.name: policy_config for policy in build_policies()} if policy_config else {})
    per_resource: dict[ObjectKey, set[str]] = {}
    stack: dict[ObjectKey, set[str]] = {}
    others: list[str] = []
    resources = []
    by_urn: dict[str, ObjectKey] = {}
    for index, obj in enumerate(source.objects):
        token = type_token(obj)
        urn = f"urn:pulumi:dev::parity::{token}::o{index}"
        by_urn[urn] = key_of(obj)
        resource = analyzer_pb2.AnalyzerResource(type=token, properties=struct(obj), urn=urn, name=f"o{index}")
        resources.append(resource)
        request = analyzer_pb2.AnalyzeRequest(type=token, properties=struct(obj), urn=urn, name=f"o{index}")
        for diagnostic in stub.Analyze(request, timeout=60).diagnostics:
            rule = _RULE_OF_POLICY.get(diagnostic.policyName)
            if rule is None:
                others.append(f"{diagnostic.policyName}: {diagnostic.message}")
            else:
                per_resource.setdefault(key_of(obj), set()).add(rule)
    response = stub.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=resources), timeout=60)
    for diagnostic in response.diagnostics:
        rule = _RULE_OF_POLICY.get(diagnostic.policyName.removesuffix(CROSS_OBJECT_SUFFIX))
        if rule is None or diagnostic.urn not in by_urn:
            others.append(f"{diagnostic.policyName}: {diagnostic.message}")
        else:
            stack.setdefault(by_urn[diagnostic.urn], set()).add(rule)
    return (
        {key: frozenset(rules) for key, rules in per_resource.items()},
        {key: frozenset(rules) for key, rules in stack.items()},
        others,
    )


@functools.lru_cache(maxsize=64)
def _policies(values: str) -> list[dict[str, Any]]:
    return admission_objects(RULES, AdmissionTarget(_config(values)))


def run_policies(source: Source) -> Verdicts:
    """The ValidatingAdmissionPolicies, emulated, on each object the API server accepts,
    as the identity that writes it."""
    policies = _policies(_config_key(source))
    found: Verdicts = {}
    for index, obj in enumerate(source.objects):
        if accepted_by_api_server(obj):
            denials = admit(policies, as_admitted(obj), user_info=source.writer(index))
            found[key_of(obj)] = frozenset(denied_rules(denials))
    return found


def webhook_for(source: Source, templates: TemplateSource | None = None) -> Webhook:
    """The webhook as `dra-guard webhook --fail-on low` runs it, with the source's configuration."""
    if templates is None:
        return Webhook(RULES, config_of(source), fail_on=Severity.LOW)
    return Webhook(RULES, config_of(source), templates=templates, fail_on=Severity.LOW)


def run_webhook(source: Source) -> Verdicts:
    """The webhook in-process (`Webhook.review`), for the kinds its configuration sends it,
    with the source's accepted claim templates as the cluster's."""
    webhook = webhook_for(source, SourceTemplates(source))
    found: Verdicts = {}
    for index, obj in enumerate(source.objects):
        if obj.get("kind") in WEBHOOK_KINDS and accepted_by_api_server(obj):
            found[key_of(obj)] = webhook_rules(webhook.review(admission_request(obj, source.writer(index))))
    return found


# --- what each front end declares it cannot see ------------------------------------------


class Unseen(enum.Enum):
    """Why a front end's verdict on an object may differ from the CLI's."""

    #: A finding that needs other objects of the set is missed; one they would clear is
    #: still reported (fail closed).  Shown when the front end's engine view of the object
    #: differs from the engine's view of the whole set.
    OTHER_OBJECTS = "sees the object alone (with at most its namespace's claim templates), not the rest of the set"
    #: A resource policy reports a finding the resource alone gives, which another resource
    #: of the stack clears; the stack policy cannot take it back.
    REPORTED_BEFORE_THE_STACK = "reports each resource's own findings before it sees the stack"
    #: The kind is neither matched by the rule's policy nor sent to the webhook.
    NOT_SENT = "is not sent the object's kind"


@dataclass(frozen=True)
class FrontEnd:
    name: str
    #: What it sees, in words.
    sees: str
    #: Per rule, what of that rule's verdict it cannot see.
    blind: Mapping[str, frozenset[Unseen]] = field(default_factory=dict)


def _rules(*ids: str, unseen: Iterable[Unseen]) -> dict[str, frozenset[Unseen]]:
    assert set(ids) <= set(RULES), set(ids) - set(RULES)
    return {rule: frozenset(unseen) for rule in ids}


CLI = FrontEnd("cli", "the whole set of files given (the reference verdict)")
ENFORCE = FrontEnd("enforce", "every ApiObject under the scope at once")
PULUMI = FrontEnd(
    "pulumi",
    "each resource alone (resource policies: its own findings), then the stack (stack policies: "
    "the cross-object findings)",
    # DRA002: a claim on a class dra-guard does not know is unpinned until the stack's
    # DeviceClass of that name is seen to pin it.  DRA005: a controller's pod template naming
    # a claim shares it, unless the stack's claim asks for no accelerator.  DRA004, DRA008,
    # DRA009, DRA012 (and the other accelerator rules, DRA003 too): a request of a class
    # dra-guard does not know is an accelerator's until the stack's DeviceClass of that name
    # is seen to select a NIC or CPU driver (issue 20, point 6); DRA009: a pod claim no
    # container names until the stack's template is seen to ask only for pod-level NICs.
    _rules(
        "DRA002", "DRA003", "DRA004", "DRA005", "DRA008", "DRA009", "DRA012", unseen=[Unseen.REPORTED_BEFORE_THE_STACK]
    ),
)
#: The policies and the webhook together: what the cluster admits.
CLUSTER = FrontEnd(
    "cluster",
    "one object as admitted; the webhook also the claim templates of its namespace that it names",
    {
        # A DeviceClass mapping an extended resource (DRA001: the names `extended-resource-
        # classes` maps are compiled in, the others are issue 20's), pods sharing a claim, a
        # template missing from the namespace, a PodGroup's claims, ...
        **_rules("DRA001", "DRA005", "DRA009", "DRA014", unseen=[Unseen.OTHER_OBJECTS]),
        # DRA016: whether a pod claim is an accelerator's is in its template or claim; the
        # webhook reads the templates and claims a pod names, but not one the namespace does
        # not have (the low "not among the checked objects" of `check`; a Pod is then denied).
        **_rules("DRA016", unseen=[Unseen.OTHER_OBJECTS]),
        # DRA003, DRA004, DRA008, DRA012 (the accelerator rules): a class dra-guard does not
        # know that the input's DeviceClass shows to select a NIC or CPU driver (issue 20,
        # point 6); the policies see the claim alone and count it as an accelerator (fail
        # closed). Listing the class in `non-accelerator-classes` compiles it into the policies.
        **_rules("DRA003", "DRA004", "DRA008", "DRA012", unseen=[Unseen.OTHER_OBJECTS]),
        # DRA002: a class dra-guard does not know pinned by a DeviceClass of the input; and
        # DeviceClasses (cluster-scoped, written by admins) are neither matched nor sent, so
        # a redefinition of a known class is reported offline only.
        **_rules("DRA002", unseen=[Unseen.OTHER_OBJECTS, Unseen.NOT_SENT]),
    },
)
FRONT_ENDS = (CLI, ENFORCE, PULUMI, CLUSTER)


@dataclass
class Difference:
    """One rule on one object on which a front end and the CLI disagree."""

    front_end: str
    source: str
    key: ObjectKey
    rule: str
    #: True: the front end reports it and the CLI does not.
    extra: bool
    #: The declaration that explains it, or None.
    explained_by: Unseen | None

    def __str__(self) -> str:
        side = "reports" if self.extra else "misses"
        why = f" ({self.explained_by.name})" if self.explained_by else " (no declared blind spot explains it)"
        return f"{self.front_end} {side} {self.rule} on {'/'.join(self.key)} in {self.source}{why}"


def explain(
    front_end: FrontEnd, source: Source, seen: Views, key: ObjectKey, rule: str, *, extra: bool
) -> Unseen | None:
    """The declared blind spot that explains a difference with the CLI, if one does."""
    declared = front_end.blind.get(rule, frozenset())
    whole = rules_of(seen.whole.get(key, []))
    if Unseen.REPORTED_BEFORE_THE_STACK in declared and extra:
        own = {f.rule for f in seen.alone.get(key, []) if not f.cross_object}
        if rule in own and rule not in whole:
            return Unseen.REPORTED_BEFORE_THE_STACK
    if Unseen.OTHER_OBJECTS in declared:
        admitted = rules_of(seen.admitted.get(key, [])) | rules_of(seen.reviewed.get(key, []))
        if extra and rule in admitted and rule not in whole:
            return Unseen.OTHER_OBJECTS
        if not extra and rule in whole and rule not in admitted:
            return Unseen.OTHER_OBJECTS
    if Unseen.NOT_SENT in declared and not extra:
        admission = _admissions(_config_key(source)).get(rule)
        if key[0] not in WEBHOOK_KINDS and (admission is None or key[0] not in admission.kinds):
            return Unseen.NOT_SENT
    return None


@dataclass(frozen=True)
class Compared:
    """One front end's verdicts on one source, next to the CLI's."""

    front_end: FrontEnd
    source: Source
    seen: Views
    reference: Verdicts
    verdicts: Verdicts


def differences(compared: Compared, keys: Iterable[ObjectKey]) -> list[Difference]:
    found = []
    front_end, source = compared.front_end, compared.source
    for key in keys:
        mine, theirs = compared.verdicts.get(key, frozenset()), compared.reference.get(key, frozenset())
        for rule in sorted(mine ^ theirs):
            extra = rule in mine
            why = explain(front_end, source, compared.seen, key, rule, extra=extra)
            found.append(Difference(front_end.name, source.name, key, rule, extra, why))
    return found
