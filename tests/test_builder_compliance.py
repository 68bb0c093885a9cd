"""Builder output passes every rule, for every target release, the resource.k8s.io versions it
serves, and every workload kind."""

from __future__ import annotations

import pytest

from dra_guard import AcceleratorSlice, isolated_workload
from dra_guard.contract.catalog import KUBERNETES_RELEASES, WORKLOAD_KINDS
from testkit.rulecases import MIG, MIG_PAIR, UNSCRUBBED_ACCEPTED, claim, config, findings
from testkit.targets import runtime_config_for

SLICES = [MIG, MIG_PAIR, AcceleratorSlice.google_tpu("v6e", 4), AcceleratorSlice.nvidia_gpu("NVIDIA H100 80GB HBM3", 2)]
TARGETS = [(version, api) for version, release in KUBERNETES_RELEASES.items() for api in release.claim_api_versions]


@pytest.mark.parametrize(("version", "api_version"), TARGETS, ids=[f"{v}-{a.rpartition('/')[2]}" for v, a in TARGETS])
@pytest.mark.parametrize("kind", WORKLOAD_KINDS)
@pytest.mark.parametrize("accelerator", SLICES, ids=["mig", "mig2", "tpu4", "gpu2"])
def test_builder_output_is_compliant(version: str, api_version: str, kind: str, accelerator: AcceleratorSlice) -> None:
    objects = isolated_workload(
        "app",
        image="i",
        slice=accelerator,
        namespace="ns",
        workload_kind=kind,
        api_version=api_version,
        kubernetes_version=version,
        runtime_config=runtime_config_for(api_version),
    )
    assert findings(*objects, config=config({"kubernetes-version": version, **UNSCRUBBED_ACCEPTED})) == []


@pytest.mark.parametrize("api_version", sorted({api for _, api in TARGETS}))
def test_claims_are_compliant(api_version: str) -> None:
    assert findings(claim(api_version), claim(api_version, MIG_PAIR)) == []
