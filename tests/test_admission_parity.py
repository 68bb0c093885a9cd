"""The generated admission policies deny exactly what the engine reports, rule by rule.

For every object the tests know — each rule's EXAMPLES, the vendored corpus, the CRD and
driver fixtures, the builders' outputs — and a Hypothesis-generated set of claims,
DeviceClasses, pods, workloads and LimitRanges (`tests/admission_strategies.py`) under
several configurations, the policies are evaluated as the API server evaluates them
(`dra_guard.admission.emulate`) and the rule IDs they deny are compared with the engine's
findings that the policies decide (`dra_guard.ruleapi.admission_form.decides`). Objects the API server
would reject before admission (strict schema of the target release) are out of scope and
counted, so the comparison cannot silently shrink; a difference prints both verdicts.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dra_guard import AcceleratorSlice, isolated_workload
from dra_guard.admission.emulate import admit, denied_rules
from dra_guard.admission.policy import admission_objects, covered_rules
from dra_guard.engine.run import check_objects
from dra_guard.model.selectors import analyse
from dra_guard.read.config_file import parse_config
from dra_guard.ruleapi.admission_form import Admission, AdmissionTarget, decides
from dra_guard.rules import RULES
from dra_guard.rules.dra006_admin_access import ADMIN_NAMESPACES
from testkit.front_ends import selector_expressions
from testkit.paths import REPO_ROOT
from testkit.targets import runtime_config_for
from tests.admission_strategies import admitted_objects

TARGET_RELEASE = "1.36.0"


@functools.lru_cache(maxsize=16)
def _policies(
    config_key: str, label: tuple[str, str] | None = None
) -> tuple[list[dict[str, Any]], dict[str, Admission]]:
    config = parse_config(yaml.safe_load(config_key) or {}, RULES, "test", environ={"KEY": "k"})
    chosen = AdmissionTarget(config, label)
    admissions = {covered.rule.id: covered.admission for covered in covered_rules(RULES, chosen)}
    return admission_objects(RULES, chosen), admissions


def accepted_by_api_server(obj: Mapping[str, Any], release: str = TARGET_RELEASE) -> bool:
    """What the API server refuses never reaches admission: the strict schema of the target
    release, and device selectors that are not CEL (it compiles them when it validates)."""
    if not isinstance(obj.get("apiVersion"), str) or not isinstance(obj.get("kind"), str):
        return False
    try:
        kubernetes_validate.validate(dict(obj), release, strict=True)
    except (kubernetes_validate.ValidationError, kubernetes_validate.SchemaNotFoundError):
        return False
    return all(analyse(expression).error is None for expression in selector_expressions(obj))


def assert_parity(
    obj: Mapping[str, Any],
    config_text: str = "",
    label: tuple[str, str] | None = None,
    namespace: Mapping[str, Any] | None = None,
) -> None:
    """The rule IDs the policies deny are the engine's covered findings; a namespace the
    label marks is one of the engine's admin namespaces (it has no other way to know)."""
    policies, admissions = _policies(config_text, label)
    config = parse_config(yaml.safe_load(config_text) or {}, RULES, "test", environ={"KEY": "k"})
    labels = namespace.get("metadata", {}).get("labels", {}) if namespace is not None else {}
    if label is not None and labels.get(label[0]) == label[1]:
        config = config.with_value(ADMIN_NAMESPACES, config.get(ADMIN_NAMESPACES) | {namespace["metadata"]["name"]})  # type: ignore[index]
    report = check_objects([obj], config, complete=False)
    engine = {
        finding.rule
        for finding in report.findings
        if finding.rule in admissions and decides(admissions[finding.rule], finding)
    }
    denials = admit(policies, obj, namespace)
    assert denied_rules(denials) == engine, (
        f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}: the engine reports "
        f"{[f'{finding.rule} {finding.path}: {finding.message}' for finding in report.findings]} "
        f"(the policies decide {sorted(engine)}); the policies deny {[denial.message for denial in denials]}"
    )


def _objects_in(paths: list[Path]) -> Iterator[tuple[str, dict[str, Any]]]:
    for path in paths:
        try:
            documents = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        except yaml.YAMLError:
            continue  # unreadable input is the loader's concern, not admission's
        for index, document in enumerate(documents):
            if not isinstance(document, dict):
                continue
            items = document.get("items") if str(document.get("kind", "")).endswith("List") else None
            for position, obj in enumerate(items if isinstance(items, list) else [document]):
                if isinstance(obj, dict):
                    yield f"{path.relative_to(REPO_ROOT)}#{index}.{position}", obj


def _known_objects() -> list[tuple[str, dict[str, Any], str]]:
    found: list[tuple[str, dict[str, Any], str]] = []
    for rule in RULES.values():
        for number, example in enumerate(rule.examples):
            config_text = yaml.safe_dump(dict(example.config)) if example.config else ""
            for index, document in enumerate(yaml.safe_load_all(example.manifests)):
                if isinstance(document, dict):
                    found.append((f"{rule.id}-example{number}.{index}", document, config_text))
    files = sorted((REPO_ROOT / "tests" / "corpus").rglob("*.yaml"))
    files += sorted((REPO_ROOT / "tests" / "fixtures").rglob("*.yaml"))
    files += sorted((REPO_ROOT / "tests" / "golden").rglob("*.yaml"))
    found += [(name, obj, "") for name, obj in _objects_in(files)]
    for version in ("resource.k8s.io/v1", "resource.k8s.io/v1beta2"):
        for accelerator in (AcceleratorSlice.nvidia_mig("1g.10gb", 2), AcceleratorSlice.google_tpu("v6e")):
            pair = isolated_workload(
                "w",
                image="i",
                slice=accelerator,
                namespace="ns",
                api_version=version,
                runtime_config=runtime_config_for(version),
            )
            found += [(f"builder-{version}-{accelerator.device_class}", obj, "") for obj in pair]
    return found


KNOWN = _known_objects()
IN_SCOPE = [(name, obj, config) for name, obj, config in KNOWN if accepted_by_api_server(obj)]


def test_most_known_objects_reach_admission() -> None:
    """The comparison covers what the API server accepts; it must not quietly shrink."""
    assert len(IN_SCOPE) >= 0.6 * len(KNOWN), f"only {len(IN_SCOPE)} of {len(KNOWN)} objects are schema-valid"


@pytest.mark.parametrize(("name", "obj", "config_text"), IN_SCOPE, ids=[name for name, _, _ in IN_SCOPE])
def test_policies_deny_what_the_engine_reports(name: str, obj: dict[str, Any], config_text: str) -> None:
    assert_parity(obj, config_text)


# --- generated objects, under several configurations -------------------------------------

#: Configurations the generated objects are checked under: each release with its own CEL
#: (the exclusivity guard compiles from 1.36), admin namespaces by name and by label, extra
#: legacy names and names the configuration maps, non-accelerator classes, a class of the
#: configuration with an alignment, an HMAC key, and every rule waivable.
CONFIGURATIONS: tuple[tuple[str, tuple[str, str] | None], ...] = (
    ("", None),
    ("kubernetes-version: '1.34'\nadmin-namespaces: [gpu-ops]\n", None),
    (
        "kubernetes-version: '1.35'\nextra-legacy-resources: [example.com/gpu]\n"
        "non-accelerator-classes: [nic.example.com]\n",
        ("dra-guard.io/admin", "true"),
    ),
    (
        "hmac-key-env: KEY\nextended-resource-classes: {example.com/accel: gpu.nvidia.com, "
        "example.com/nic: nic.example.com}\nnon-accelerator-classes: [nic.example.com]\n"
        "extra-classes: {fpga.example.org: {pin-attribute: fpga.example.org/bitstream, "
        "topology-attribute: fpga.example.org/board, selector: \"device.attributes['fpga.example.org']"
        ".bitstream == 'b2'\"}}\n",
        None,
    ),
    ("kubernetes-version: '1.36'\nnon-waivable: []\nadmin-namespaces: [team-a]\n", ("dra-guard.io/admin", "true")),
)


def _release(config_text: str) -> str:
    config = parse_config(yaml.safe_load(config_text) or {}, RULES, "test", environ={"KEY": "k"})
    return f"{config.kubernetes_release.version}.0"


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    obj=admitted_objects(),
    configuration=st.sampled_from(CONFIGURATIONS),
    labelled=st.booleans(),
)
def test_policies_deny_what_the_engine_reports_on_generated_objects(
    obj: dict[str, Any], configuration: tuple[str, tuple[str, str] | None], labelled: bool
) -> None:
    config_text, label = configuration
    release = _release(config_text)
    assert accepted_by_api_server(obj, release), f"the strategy drew an object the API server refuses: {obj}"
    namespace = None
    if obj["kind"] != "DeviceClass":
        labels = {label[0]: label[1]} if label is not None and labelled else {"team": "x"}
        namespace = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": obj["metadata"]["namespace"], "labels": labels},
        }
    assert_parity(obj, config_text, label, namespace)


def test_every_message_expression_renders() -> None:
    """A messageExpression that fails falls back to the static message, silently in the API
    server: every denial of a validation that has one must carry what it rendered."""
    fallbacks: dict[str, str] = {}
    for policy in _policies("")[0]:
        for validation in policy["spec"].get("validations", []):
            if "messageExpression" in validation:
                fallbacks[validation["message"]] = policy["metadata"]["name"]
    rendered = 0
    for name, obj, config_text in IN_SCOPE:
        for denial in admit(_policies(config_text)[0], obj):
            assert denial.message not in fallbacks, f"{name}: {fallbacks[denial.message]}'s messageExpression failed"
            rendered += 1
    assert rendered > 300
