"""DRA007 `temporal-sharing`: cases beyond its EXAMPLES, across resource.k8s.io versions."""

from __future__ import annotations

from typing import Any

import pytest

from testkit.rulecases import (
    ALL_VERSIONS,
    CLAIM_MAKERS,
    devices,
    retag,
    rule_ids,
)


@ALL_VERSIONS
@CLAIM_MAKERS
@pytest.mark.parametrize("strategy", ["TimeSlicing", "MPS", "mps"])
def test_dra007_temporal_sharing(api_version: str, make: Any, strategy: str) -> None:
    obj = make(api_version)
    config = {
        "requests": ["slice"],
        "opaque": {
            "driver": "gpu.nvidia.com",
            "parameters": {
                "apiVersion": "resource.nvidia.com/v1beta1",
                "kind": "MigDeviceConfig",
                "sharing": {"strategy": strategy},
            },
        },
    }
    devices(obj)["config"] = [config]
    # The driver decodes strategies exactly (DRA010 reports `mps`); DRA007 reads them in any case.
    refused = set() if strategy in ("TimeSlicing", "MPS") else {"DRA010"}
    assert rule_ids(retag(obj)) == {"DRA007"} | refused
    config["opaque"]["parameters"]["sharing"] = {"strategy": "None"}  # type: ignore[index]
    assert rule_ids(retag(obj)) == {"DRA010"}  # not a strategy the driver knows, and no sharing
