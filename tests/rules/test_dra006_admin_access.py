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


#: NVIDIA/gpu-operator internal/state/testdata/golden/gpucluster-dcgm.yaml @ a22dbf6, cut down:
#: the DCGM exporter's template asks for every GPU with adminAccess, and its DaemonSet's pods
#: use it without the scrubber (which would take the free memory of GPUs other tenants use).
MONITORING = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: nvidia-dcgm-admin, namespace: gpu-operator}
spec:
  spec:
    devices:
      requests:
      - name: admin-gpus
        exactly: {deviceClassName: gpu.nvidia.com, allocationMode: All, adminAccess: true}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: nvidia-dcgm, namespace: gpu-operator}
spec:
  selector: {matchLabels: {app: dcgm}}
  template:
    metadata: {labels: {app: dcgm}}
    spec:
      resourceClaims: [{name: gpus, resourceClaimTemplateName: nvidia-dcgm-admin}]
      containers:
      - name: dcgm
        image: nvcr.io/nvidia/cloud-native/dcgm:4.2.3-1-ubuntu22.04
        resources: {claims: [{name: gpus}]}
"""


def test_an_admin_access_claim_is_judged_by_dra006_alone() -> None:
    """Monitoring reaches devices other claims hold: pinning (DRA002), exclusivity (DRA003),
    sanitization (DRA004), allocation mode (DRA008), tags (DRA012) and the scrubber (DRA016)
    are not asked of it; outside an admin namespace DRA006 reports it."""
    import yaml

    from tests.test_admission_parity import assert_parity

    objects = list(yaml.safe_load_all(MONITORING))
    assert rule_ids(*objects, config=config({"admin-namespaces": ["gpu-operator"]})) == set()
    assert rule_ids(*objects) == {"DRA006"}
    for obj in objects:
        assert_parity(obj)
        assert_parity(obj, "admin-namespaces: [gpu-operator]\n")
    # A request beside it without adminAccess is judged as ever.
    objects[0]["spec"]["spec"]["devices"]["requests"].append(
        {"name": "own", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 1}}
    )
    assert rule_ids(*objects) >= {"DRA002", "DRA004", "DRA012", "DRA016"}


def test_an_admin_access_mig_claim_is_let_alone_by_every_front_end_and_only_where_honoured() -> None:
    """DRA011's policy counted the adminAccess request as several MIG devices (the engine did
    not); on 1.33, where DRAAdminAccess is off by default and the API server drops the field,
    and in a firstAvailable entry, which has no such field, the request is an ordinary one."""
    import yaml

    from tests.test_admission_parity import assert_parity

    claim = yaml.safe_load(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: dcgm, namespace: gpu-ops}\n"
        "spec:\n  devices:\n    requests:\n    - name: mig\n"
        "      exactly: {deviceClassName: mig.nvidia.com, allocationMode: All, adminAccess: true}\n"
    )
    admin = "admin-namespaces: [gpu-ops]\n"
    assert rule_ids(claim, config=config({"admin-namespaces": ["gpu-ops"]})) == set()
    assert_parity(claim, admin)
    on_133 = config({"admin-namespaces": ["gpu-ops"], "kubernetes-version": "1.33"})
    beta = {**claim, "apiVersion": "resource.k8s.io/v1beta2"}
    assert rule_ids(beta, config=on_133) >= {"DRA002", "DRA004", "DRA012"}
    entry = {"name": "a", "deviceClassName": "mig.nvidia.com", "adminAccess": True}
    offered = {**claim, "spec": {"devices": {"requests": [{"name": "mig", "firstAvailable": [entry]}]}}}
    assert "DRA002" in rule_ids(offered, config=config({"admin-namespaces": ["gpu-ops"]}))
