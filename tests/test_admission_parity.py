"""The generated admission policies deny exactly what the engine reports, rule by rule.

For every object the tests know — each rule's EXAMPLES, the vendored corpus, the CRD and
driver fixtures, the builders' outputs and a Hypothesis-generated set of claims — the
policies are evaluated as the API server evaluates them (`dra_guard.admission.emulate`)
and the rule IDs they deny are compared with the engine's findings for the rules the
policies cover (per-object findings the rule's ADMISSION says it decides). Objects the API
server would reject before admission (strict schema of the target release) are out of
scope and counted, so the comparison cannot silently shrink.
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
from dra_guard.celkit import Admission, AdmissionTarget, decides
from dra_guard.config import Config, parse_config
from dra_guard.engine import check_objects
from dra_guard.rules import RULES
from dra_guard.selectors import analyse
from testkit.paths import REPO_ROOT

TARGET_RELEASE = "1.36.0"


def target(config: Config | None = None) -> AdmissionTarget:
    return AdmissionTarget(config or Config())


@functools.lru_cache(maxsize=16)
def _policies(config_key: str) -> tuple[list[dict[str, Any]], dict[str, Admission]]:
    config = parse_config(yaml.safe_load(config_key) or {}, RULES, "test", environ={"KEY": "k"})
    chosen = target(config)
    admissions = {covered.rule.id: covered.admission for covered in covered_rules(RULES, chosen)}
    return admission_objects(RULES, chosen), admissions


def engine_rules(obj: Mapping[str, Any], config: Config, admissions: Mapping[str, Admission]) -> set[str]:
    report = check_objects([obj], config, complete=False)
    return {
        finding.rule
        for finding in report.findings
        if finding.rule in admissions and decides(admissions[finding.rule], finding)
    }


def accepted_by_api_server(obj: Mapping[str, Any]) -> bool:
    """What the API server refuses never reaches admission: the strict schema of the target
    release, and device selectors that are not CEL (it compiles them when it validates)."""
    if not isinstance(obj.get("apiVersion"), str) or not isinstance(obj.get("kind"), str):
        return False
    try:
        kubernetes_validate.validate(dict(obj), TARGET_RELEASE, strict=True)
    except (kubernetes_validate.ValidationError, kubernetes_validate.SchemaNotFoundError):
        return False
    return all(analyse(expression).error is None for expression in _selector_expressions(obj))


def _selector_expressions(value: Any) -> Iterator[str]:
    if isinstance(value, Mapping):
        cel = value.get("cel")
        if isinstance(cel, Mapping) and isinstance(cel.get("expression"), str):
            yield cel["expression"]
        for item in value.values():
            yield from _selector_expressions(item)
    elif isinstance(value, list):
        for item in value:
            yield from _selector_expressions(item)


def assert_parity(obj: Mapping[str, Any], config_text: str = "") -> None:
    policies, admissions = _policies(config_text)
    config = parse_config(yaml.safe_load(config_text) or {}, RULES, "test", environ={"KEY": "k"})
    engine = engine_rules(obj, config, admissions)
    denials = admit(policies, obj)
    assert denied_rules(denials) == engine, (
        f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}: engine reports {sorted(engine)}, "
        f"the policies deny {[denial.message for denial in denials]}"
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
            pair = isolated_workload("w", image="i", slice=accelerator, namespace="ns", api_version=version)
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


# --- generated claims --------------------------------------------------------------------

_ANNOTATION_VALUES = st.sampled_from(
    ["WipeOnDeallocate", "ZeroFillMemoryOnRelease", "Wipe", "", " ", "\u200b", "false", "true"]
)
_TAGS = st.one_of(
    st.just("sha256:" + "a" * 64),
    st.just("hmac-sha256:" + "0" * 64),
    st.just("sha256:" + "A" * 64),
    st.just("md5:abc"),
    st.text(max_size=8),
)


_SELECTORS = st.sampled_from(
    [
        "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'",
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].profile == '1g.10gb' "
        "&& device.allowMultipleAllocations == false",
        "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100-SXM4-40GB'",
        "device.attributes['tpu.google.com'].tpuGen == 'v6e' && device.allowMultipleAllocations == false",
        "device.attributes['gpu.nvidia.com'].profile == '1g.10gb' || true",
        "device.allowMultipleAllocations == false",
        "(device.attributes['nic.example.com'].model == 'x' && device.allowMultipleAllocations == false)",
        "device.attributes['gpu.nvidia.com'].profile.startsWith('1g')",
        "!(device.allowMultipleAllocations == false)",
    ]
)


@st.composite
def generated_claims(draw: st.DrawFn) -> dict[str, Any]:
    api_version = draw(st.sampled_from(["resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1"]))
    kind = draw(st.sampled_from(["ResourceClaim", "ResourceClaimTemplate"]))
    classes = st.sampled_from(["mig.nvidia.com", "gpu.nvidia.com", "nic.example.com", "tpu.google.com"])
    requests = []
    for index in range(draw(st.integers(0, 3))):
        body: dict[str, Any] = {"deviceClassName": draw(classes)}
        selectors = draw(st.lists(_SELECTORS, max_size=2))
        if selectors:
            body["selectors"] = [{"cel": {"expression": expression}} for expression in selectors]
        if draw(st.booleans()) and draw(st.booleans()):
            body["capacity"] = {"requests": draw(st.sampled_from([{}, {"memory": "10Gi"}]))}
        if draw(st.booleans()):
            body["allocationMode"] = draw(st.sampled_from(["ExactCount", "All"]))
        if body.get("allocationMode", "ExactCount") == "ExactCount" and draw(st.booleans()):
            body["count"] = draw(st.integers(1, 4))
        if api_version == "resource.k8s.io/v1beta1":
            requests.append({"name": f"r{index}", **body})
        elif draw(st.booleans()):
            requests.append({"name": f"r{index}", "exactly": body})
        else:
            requests.append({"name": f"r{index}", "firstAvailable": [{"name": "a", **body}]})
    annotations: dict[str, str] = {}
    for key, values in (
        ("dra-guard.io/sanitization", _ANNOTATION_VALUES),
        ("dra-guard.io/isolation-tag", _TAGS),
        ("dra-guard.io/ignore-DRA012", st.sampled_from(["", " ", "reviewed by ops", "\u200b"])),
        ("dra-guard.io/ignore-DRA004", st.sampled_from(["", "reason"])),
    ):
        if draw(st.booleans()):
            annotations[key] = draw(values)
    metadata: dict[str, Any] = {"name": "c", "namespace": "ns"}
    if annotations:
        metadata["annotations"] = annotations
    devices = {"devices": {"requests": requests}}
    spec = {"spec": devices} if kind == "ResourceClaimTemplate" else devices
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": spec}


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(obj=generated_claims(), keyed=st.booleans(), nic_is_not_accelerator=st.booleans())
def test_policies_deny_what_the_engine_reports_on_generated_claims(
    obj: dict[str, Any], keyed: bool, nic_is_not_accelerator: bool
) -> None:
    config: dict[str, Any] = {}
    if keyed:
        config["hmac-key-env"] = "KEY"
    if nic_is_not_accelerator:
        config["non-accelerator-classes"] = ["nic.example.com"]
    assert_parity(obj, yaml.safe_dump(config) if config else "")
