"""DRA001 `legacy-extended-resource`: cases beyond its EXAMPLES, across resource.k8s.io versions."""

from __future__ import annotations

import pytest

from dra_guard.findings import Severity
from dra_guard.rules import dra001_legacy_extended_resource as dra001
from testkit.rulecases import (
    config,
    findings,
    pod,
    rule_ids,
)


@pytest.mark.parametrize(
    "name",
    [
        "nvidia.com/gpu",
        "nvidia.com/gpu.shared",
        "nvidia.com/mig-1g.10gb",
        "google.com/tpu",
        "amd.com/gpu",
        "gpu.intel.com/i915",
        "gpu.intel.com/xe",
        "habana.ai/gaudi",
        "aws.amazon.com/neuroncore",
        "deviceclass.resource.kubernetes.io/gpu.nvidia.com",
    ],
)
@pytest.mark.parametrize("section", ["limits", "requests"])
def test_dra001_legacy_names(name: str, section: str) -> None:
    obj = pod(containers=[{"name": "c", "image": "i", "resources": {section: {name: 1}}}])
    (finding,) = findings(obj)
    assert (finding.rule, finding.severity) == ("DRA001", Severity.CRITICAL)
    assert finding.path == f"/spec/containers/0/resources/{section}/{name.replace('/', '~1')}"


def test_dra001_compliant_and_configurable() -> None:
    cpu_only = pod(
        containers=[{"name": "c", "image": "i", "resources": {"limits": {"cpu": "1", "example.com/gpu": 1}}}]
    )
    assert findings(cpu_only) == []
    assert rule_ids(cpu_only, config=config({"extra-legacy-resources": ["example.com/gpu"]})) == {"DRA001"}
    implicit = pod(
        containers=[
            {"name": "c", "image": "i", "resources": {"limits": {dra001.IMPLICIT_DRA_PREFIX + "net.example.com": 1}}}
        ]
    )
    assert rule_ids(implicit, config=config({"non-accelerator-classes": ["net.example.com"]})) == set()
