"""DRA003 `exclusivity-undeclared`: cases beyond its EXAMPLES, across resource.k8s.io versions."""

from __future__ import annotations

from typing import Any

import pytest

from testkit.rulecases import (
    ALL_VERSIONS,
    CLAIM_MAKERS,
    rule_ids,
)


@ALL_VERSIONS
@CLAIM_MAKERS
@pytest.mark.parametrize("value", [None, "true", "False"])
def test_dra003_exclusivity(api_version: str, make: Any, value: str | None) -> None:
    obj = make(api_version)
    annotations = obj["metadata"]["annotations"]
    if value is None:
        del annotations["dra-guard.io/allow-multiple-allocations"]
    else:
        annotations["dra-guard.io/allow-multiple-allocations"] = value
    assert rule_ids(obj) == {"DRA003"}
