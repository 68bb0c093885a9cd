"""DRA006 `admin-access`: cases beyond its EXAMPLES, across resource.k8s.io versions."""

from __future__ import annotations

from typing import Any

from testkit.rulecases import (
    ALL_VERSIONS,
    CLAIM_MAKERS,
    config,
    request_body,
    retag,
    rule_ids,
)


@ALL_VERSIONS
@CLAIM_MAKERS
def test_dra006_admin_access(api_version: str, make: Any) -> None:
    obj = make(api_version)
    request_body(obj)["adminAccess"] = True
    retag(obj)
    assert rule_ids(obj) == {"DRA006"}
    assert rule_ids(obj, config=config({"admin-namespaces": ["ns"]})) == set()
    request_body(obj)["adminAccess"] = False
    assert rule_ids(retag(obj)) == set()
