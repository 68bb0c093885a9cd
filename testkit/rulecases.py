"""Helpers for rule tests: compliant objects from the builders, and ways to break them."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from dra_guard import (
    AcceleratorSlice,
    IsolatedWorkload,
    claim_isolation_tag,
    claim_template,
    isolated_workload,
    isolation_tag,
)
from dra_guard.contract.catalog import DEVICE_CLASSES, RESOURCE_API_VERSIONS
from dra_guard.contract.findings import Finding
from dra_guard.contract.scrubber import scrubbed
from dra_guard.engine.run import check_objects
from dra_guard.read.config_file import parse_config
from dra_guard.ruleapi.config import KUBERNETES_VERSION, Config
from dra_guard.rules import RULES
from testkit.targets import LEGACY_TARGET, runtime_config_for, target_for

MIG = AcceleratorSlice.nvidia_mig("1g.10gb")
MIG_PAIR = AcceleratorSlice.nvidia_mig("3g.40gb", count=2)
#: Run a test for every resource.k8s.io version, and for a template and a claim.
ALL_VERSIONS = pytest.mark.parametrize("api_version", RESOURCE_API_VERSIONS)


def pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": spec}


def template(
    api_version: str = "resource.k8s.io/v1", accelerator: AcceleratorSlice = MIG, **kwargs: Any
) -> dict[str, Any]:
    kwargs.setdefault("kubernetes_version", target_for(api_version))
    kwargs.setdefault("runtime_config", runtime_config_for(api_version))
    return claim_template(name="slice", slice=accelerator, namespace="ns", api_version=api_version, **kwargs)


def claim(api_version: str = "resource.k8s.io/v1", accelerator: AcceleratorSlice = MIG) -> dict[str, Any]:
    """A ResourceClaim with the same content as the template, tagged as a claim."""
    source = template(api_version, accelerator)
    result = {
        "apiVersion": api_version,
        "kind": "ResourceClaim",
        "metadata": copy.deepcopy(source["metadata"]),
        "spec": copy.deepcopy(source["spec"]["spec"]),
    }
    return retag(result)


def workload(kind: str = "Deployment", **kwargs: Any) -> IsolatedWorkload:
    if "api_version" in kwargs:
        kwargs.setdefault("kubernetes_version", target_for(kwargs["api_version"]))
        kwargs.setdefault("runtime_config", runtime_config_for(kwargs["api_version"]))
    return isolated_workload("app", image="i", slice=MIG, namespace="ns", workload_kind=kind, **kwargs)


def devices(obj: Mapping[str, Any]) -> Any:
    return obj["spec"]["spec"]["devices"] if obj["kind"] == "ResourceClaimTemplate" else obj["spec"]["devices"]


def request_body(obj: Mapping[str, Any], index: int = 0) -> Any:
    request = devices(obj)["requests"][index]
    return request.get("exactly", request)


def retag(obj: dict[str, Any], key: str | None = None) -> dict[str, Any]:
    """Recompute the tags after a deliberate edit, so only the rule under test fires: a
    template's claim tag (spec.metadata) first, then its own."""
    claim_metadata = obj.get("spec", {}).get("metadata") if obj.get("kind") == "ResourceClaimTemplate" else None
    if isinstance(claim_metadata, dict) and "dra-guard.io/isolation-tag" in claim_metadata.get("annotations", {}):
        claim_metadata["annotations"]["dra-guard.io/isolation-tag"] = claim_isolation_tag(obj, key)
    obj["metadata"]["annotations"]["dra-guard.io/isolation-tag"] = isolation_tag(obj, key)
    return obj


#: Every catalog class the scrubber cannot scrub, accepted with a reason: the builders emit
#: no scrubber for them, so DRA016 reports their pods unless the configuration accepts the
#: class (tests/rules/test_dra016_scrub_before_use.py shows both).
UNSCRUBBED_ACCEPTED: Mapping[str, Any] = {
    "unscrubbed-classes": {
        name: "test fixture: a single-tenant node pool (the scrubber cannot scrub this class)"
        for name in sorted(DEVICE_CLASSES)
        if not scrubbed(name)
    }
}


def config(values: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Config:
    """Options as .dra-guard.yaml writes them, through the one parser."""
    return parse_config(values, RULES, "test config", environ=environ or {})


def findings(*objects: Mapping[str, Any], config: Config | None = None) -> list[Finding]:
    """The findings on `objects`, checked for the release their builder targeted (`target_for`)
    unless `config` names one."""
    config = config or Config()
    if KUBERNETES_VERSION.key not in config.values:
        versions = {target_for(str(obj.get("apiVersion"))) for obj in objects}
        if versions == {LEGACY_TARGET}:
            config = config.with_value(KUBERNETES_VERSION, LEGACY_TARGET)
    report = check_objects(objects, config)
    assert not report.errors, report.errors
    return report.findings


def rule_ids(*objects: Mapping[str, Any], config: Config | None = None) -> set[str]:
    return {finding.rule for finding in findings(*objects, config=config)}


CLAIM_MAKERS = pytest.mark.parametrize("make", [template, claim], ids=["template", "claim"])
