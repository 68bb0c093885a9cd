"""DRA004 `sanitization-undeclared`: cases beyond its EXAMPLES, across resource.k8s.io versions."""

from __future__ import annotations

from typing import Any

import pytest

from dra_guard import AcceleratorSlice
from testkit.rulecases import (
    ALL_VERSIONS,
    CLAIM_MAKERS,
    retag,
    rule_ids,
)


@ALL_VERSIONS
@CLAIM_MAKERS
@pytest.mark.parametrize("value", [None, "", "Wipe", "wipeondeallocate"])
def test_dra004_sanitization(api_version: str, make: Any, value: str | None) -> None:
    obj = make(api_version)
    annotations = obj["metadata"]["annotations"]
    if value is None:
        del annotations["dra-guard.io/sanitization"]
    else:
        annotations["dra-guard.io/sanitization"] = value
    # The tag covers the sanitization value, so DRA012 fires too unless re-tagged.
    assert rule_ids(retag(obj)) == {"DRA004"}
    assert rule_ids(make(api_version, AcceleratorSlice.nvidia_mig("2g.20gb"))) == set()
