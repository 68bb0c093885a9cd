"""Facets: a rule's distinct checks, by code.

Which findings an admission policy answers for (and so which the webhook leaves to it) is a
set of facets (`Admission.covers`), never a message's words: rewording a finding cannot move
it between the policy and the webhook.  Every declared facet is reached by some manifest
here or in the rule's EXAMPLES, every finding carries one of its rule's facets, and JSON
and SARIF show it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from dra_guard.admission.policy import covered_rules
from dra_guard.contract.findings import Finding, Report
from dra_guard.engine import run as engine
from dra_guard.engine.run import check_objects
from dra_guard.present.report import renderer
from dra_guard.ruleapi.admission_form import AdmissionTarget, decides
from dra_guard.ruleapi.config import Config
from dra_guard.ruleapi.context import Violation
from dra_guard.ruleapi.declarations import RuleModuleError
from dra_guard.rules import RULES, build_registry
from testkit.rulecases import config, devices, findings, pod, request_body, template
from tests.test_registry import module

MIG_PIN = "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"


def _selector(expression: str) -> dict[str, Any]:
    obj = template()
    request_body(obj)["selectors"] = [{"cel": {"expression": expression}}]
    return obj


def _no_class() -> dict[str, Any]:
    obj = template()
    del request_body(obj)["deviceClassName"]
    return obj


def _unknown_request() -> dict[str, Any]:
    obj = template()
    devices(obj)["constraints"] = [{"requests": ["nope"], "matchAttribute": "gpu.nvidia.com/parentUUID"}]
    return obj


def _config_kind() -> dict[str, Any]:
    obj = template()
    parameters = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig"}
    devices(obj)["config"] = [{"opaque": {"driver": "gpu.nvidia.com", "parameters": parameters}}]
    return obj


def _tag(value: str) -> dict[str, Any]:
    obj = template()
    obj["metadata"]["annotations"]["dra-guard.io/isolation-tag"] = value
    return obj


def _disagreeing() -> dict[str, Any]:
    obj = template()
    obj["spec"]["metadata"]["annotations"]["dra-guard.io/sanitization"] = "None"
    return obj


def _generated_pod() -> dict[str, Any]:
    obj = pod(containers=[{"name": "c", "image": "i"}], resourceClaims=[{"name": "c", "resourceClaimName": "shared"}])
    del obj["metadata"]["name"]
    obj["metadata"]["generateName"] = "job-"
    return obj


def _unused_claim() -> dict[str, Any]:
    return pod(containers=[{"name": "c", "image": "i"}], resourceClaims=[{"name": "c", "resourceClaimName": "x"}])


def _mode(value: object, field: str = "allocationMode") -> dict[str, Any]:
    obj = template()
    request_body(obj)[field] = value
    return obj


def _group_and_member() -> list[dict[str, Any]]:
    group = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "group-1", "namespace": "ns"},
        "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]},
    }
    member = pod(
        containers=[{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}],
        schedulingGroup={"podGroupName": "group-1"},
        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
    )
    return [group, member]


def _scrubbed_pod(**scrubber: Any) -> list[dict[str, Any]]:
    """A MIG template and a pod whose scrubber is `scrubber` (over the builders' one)."""
    container = {
        "name": "dra-guard-scrub",
        "image": "ghcr.io/dra-guard/scrub:0.1.0",
        "command": ["dra-guard", "scrub"],
        "resources": {"claims": [{"name": "gpu"}]},
        **scrubber,
    }
    member = pod(
        initContainers=[container],
        containers=[{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}, {"name": "more"}]}}],
        resourceClaims=[
            {"name": "gpu", "resourceClaimTemplateName": "slice"},
            {"name": "more", "resourceClaimTemplateName": "elsewhere"},
        ],
    )
    slice_template = template()
    slice_template["metadata"]["name"] = "slice"
    return [slice_template, member]


def _second_claim_unscrubbed() -> list[dict[str, Any]]:
    objects = _scrubbed_pod(resources={"claims": [{"name": "more"}]})
    other = template()
    other["metadata"]["name"] = "elsewhere"
    return [*objects, other]


_KEYED = {"hmac-key-env": "KEY"}

#: (rule, facet) -> the objects that reach it and the options to check them with: the facets
#: no EXAMPLE of the rule reaches.
Objects = dict[str, Any] | list[dict[str, Any]]
REACHED: dict[tuple[str, str], tuple[Callable[[], Objects], dict[str, Any]]] = {
    ("DRA002", "no-class"): (_no_class, {}),
    ("DRA002", "invalid-cel"): (lambda: _selector("device.attributes[ &&"), {}),
    ("DRA002", "unread-pin"): (lambda: _selector("(" * 40 + MIG_PIN + ")" * 40), {}),
    ("DRA005", "generated-pod-claim"): (_generated_pod, {}),
    ("DRA005", "group-claim"): (_group_and_member, {}),
    ("DRA005", "group-template"): (_group_and_member, {}),
    ("DRA008", "unknown-mode"): (lambda: _mode("Some"), {}),
    ("DRA008", "fractional-count"): (lambda: _mode(1.5, "count"), {}),
    ("DRA010", "unserved-version"): (template, {"kubernetes-version": "1.33"}),
    ("DRA009", "unused-claim"): (_unused_claim, {}),
    ("DRA010", "unknown-request"): (_unknown_request, {}),
    ("DRA010", "guard-without-gate"): (
        lambda: _selector(f"{MIG_PIN} && device.allowMultipleAllocations == false"),
        {"kubernetes-version": "1.34"},
    ),
    ("DRA010", "nvidia-config-kind"): (_config_kind, {}),
    ("DRA012", "malformed"): (lambda: _tag("sha256:xyz"), {}),
    ("DRA012", "not-hmac"): (template, _KEYED),
    ("DRA012", "declarations-disagree"): (_disagreeing, {}),
    ("DRA016", "scrubber-image"): (lambda: _scrubbed_pod(image="scrub:latest"), {}),
    ("DRA016", "unknown-claim"): (_scrubbed_pod, {}),
    ("DRA016", "claim-not-scrubbed"): (_second_claim_unscrubbed, {}),
}


def _config(options: dict[str, Any]) -> Config:
    return config(options, environ={"KEY": "k"})


def _reached(rule_id: str, facet: str) -> list[Finding]:
    make, options = REACHED[(rule_id, facet)]
    made = make()
    objects = made if isinstance(made, list) else [made]
    return [f for f in findings(*objects, config=_config(options)) if (f.rule, f.facet) == (rule_id, facet)]


def _example_findings() -> Iterator[Finding]:
    for rule in RULES.values():
        for example in rule.examples:
            objects = [obj for obj in yaml.safe_load_all(example.manifests) if obj]
            report = check_objects(objects, config(dict(example.config)))
            yield from (f for f in [*report.findings, *report.waived] if f.rule == rule.id)


@pytest.mark.parametrize(
    ("pod_claim", "said"),
    [
        ({"name": "gpu", "source": {"resourceClaimTemplateName": "slice"}}, "uses `source`"),
        ({"name": "gpu", "resourceClaimName": "c", "resourceClaimTemplateName": "slice"}, "names both"),
        ({"name": "gpu"}, "names neither"),
        ({"name": "gpu", "resourceClaimTemplateName": "slice"}, None),
    ],
    ids=["pre-1.31-source", "both", "neither", "one"],
)
def test_a_pod_claim_the_api_server_refuses_for_what_it_names_is_reported(
    pod_claim: dict[str, Any], said: str | None
) -> None:
    """Exactly one of resourceClaimName and resourceClaimTemplateName (kubernetes/api core/v1
    `PodResourceClaim`); a manifest kept from before 1.31 was judged clean, its claim unseen."""
    slice_template = template()
    slice_template["metadata"]["name"] = "slice"
    member = pod(
        containers=[{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}],
        resourceClaims=[pod_claim],
    )
    reported = [f.message for f in findings(slice_template, member) if f.facet == "claim-source"]
    assert len(reported) == (0 if said is None else 1)
    assert all(said is not None and said in message for message in reported)


@pytest.mark.parametrize(("rule_id", "facet"), sorted(REACHED), ids=str)
def test_each_facet_no_example_reaches_is_reached_here(rule_id: str, facet: str) -> None:
    assert _reached(rule_id, facet), f"{rule_id} reports no {facet} finding"


def test_every_declared_facet_is_reached_and_every_finding_has_a_declared_one() -> None:
    examples = list(_example_findings())
    assert all(finding.facet in RULES[finding.rule].facet_codes for finding in examples)
    reached = {(finding.rule, finding.facet) for finding in examples} | set(REACHED)
    declared = {(rule.id, facet) for rule in RULES.values() for facet in rule.facets}
    assert declared - reached == set()
    assert set(REACHED) <= declared
    # DRA010's checks are its facets (issue 21): each its own code.
    assert len(RULES["DRA010"].facets) == 8


@pytest.mark.parametrize("options", [{}, _KEYED, {"kubernetes-version": "1.34"}], ids=["default", "keyed", "1.34"])
def test_what_a_policy_covers_is_declared_facets(options: dict[str, Any]) -> None:
    for entry in covered_rules(RULES, AdmissionTarget(_config(options))):
        if entry.admission.covers is not None:
            assert entry.admission.covers and entry.admission.covers <= set(entry.rule.facets), entry.rule.id


def test_coverage_depends_on_the_facet_not_on_the_words() -> None:
    """Rewording every finding keeps each on the same side; moving its facet moves it."""
    admissions = {entry.rule.id: entry.admission for entry in covered_rules(RULES, AdmissionTarget(_config({})))}
    sample = [*_example_findings(), *(f for key in REACHED for f in _reached(*key))]
    partial = [f for f in sample if f.rule in admissions and admissions[f.rule].covers is not None]
    assert {f.rule for f in partial} == {"DRA002", "DRA005", "DRA008", "DRA009", "DRA010", "DRA012", "DRA016"}
    moved = 0
    for finding in partial:
        admission = admissions[finding.rule]
        verdict = decides(admission, finding)
        assert decides(admission, dataclasses.replace(finding, message="reworded")) == verdict
        other = next(facet for facet in finding_rule_facets(finding) if (facet in admission.covers) != verdict)
        moved += decides(admission, dataclasses.replace(finding, facet=other)) != verdict
    assert moved > 0


def finding_rule_facets(finding: Finding) -> list[str]:
    return list(RULES[finding.rule].facets)


def test_json_and_sarif_show_the_facet() -> None:
    found = _reached("DRA010", "nvidia-config-kind")
    report = Report(findings=found, files=1, objects=1)
    as_json = json.loads(renderer("json")(report))
    assert [entry["facet"] for entry in as_json["findings"]] == ["nvidia-config-kind"]
    sarif = json.loads(renderer("sarif")(report))
    (result,) = sarif["runs"][0]["results"]
    assert result["properties"]["facet"] == "nvidia-config-kind"
    rules = {rule["id"]: rule for rule in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["DRA010"]["properties"]["facets"] == dict(RULES["DRA010"].facets)
    assert "facets" not in rules["DRA001"]["properties"]


def test_a_rule_that_yields_an_undeclared_facet_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def check(resource: Any, context: Any) -> Iterator[Violation]:
        yield Violation(("spec",), "found", facet="invented")

    facets = {"declared": "one check", "other": "another"}
    registry = build_registry([module(check=check, FACETS=facets)])
    monkeypatch.setattr(engine, "RULES", registry)
    report = check_objects([{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}])
    assert not report.findings
    (error,) = report.errors
    assert "rule DRA099 failed" in error.message and "facet 'invented'" in error.message


@pytest.mark.parametrize(
    ("facets", "refusal"),
    [
        (["a", "b"], "FACETS must be a mapping"),
        ({"Not_Kebab": "x", "b": "y"}, "facet 'Not_Kebab' is not kebab-case"),
        ({"a": " ", "b": "y"}, "facet a has no description"),
        ({"only": "x"}, "a rule of one check declares none"),
    ],
)
def test_the_registry_refuses_malformed_facets(facets: object, refusal: str) -> None:
    with pytest.raises(RuleModuleError, match=refusal):
        build_registry([module(FACETS=facets)])
