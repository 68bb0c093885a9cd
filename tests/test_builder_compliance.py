"""Builder output passes every rule, for every resource.k8s.io version and workload kind."""

from __future__ import annotations

import pytest

from dra_guard import AcceleratorSlice
from testkit.rulecases import (
    ALL_VERSIONS,
    MIG,
    MIG_PAIR,
    claim,
    findings,
)


@ALL_VERSIONS
@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "Job"])
@pytest.mark.parametrize(
    "accelerator", [MIG, MIG_PAIR, AcceleratorSlice.google_tpu("v6e", 4)], ids=["mig", "mig2", "tpu4"]
)
def test_builder_output_is_compliant(api_version: str, kind: str, accelerator: AcceleratorSlice) -> None:
    from dra_guard import isolated_workload

    objects = isolated_workload(
        "app", image="i", slice=accelerator, namespace="ns", workload_kind=kind, api_version=api_version
    )
    assert findings(*objects) == []


@ALL_VERSIONS
def test_claims_are_compliant(api_version: str) -> None:
    assert findings(claim(api_version), claim(api_version, MIG_PAIR)) == []
