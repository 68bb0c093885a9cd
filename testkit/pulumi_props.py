"""Props as the Pulumi runtime delivers them to policies: numbers as floats, behind proxies."""

from __future__ import annotations

from typing import Any

from pulumi.runtime.rpc import UNKNOWN
from pulumi_policy.proxy import unknown_checking_proxy

from dra_guard import AcceleratorSlice, claim_template, isolated_workload
from testkit.targets import runtime_config_for, target_for

__all__ = ["UNKNOWN", "as_pulumi_props", "claim_user", "compliant_pair", "legacy_pod", "shared_claim", "type_token"]


def floats(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: floats(item) for key, item in value.items()}
    if isinstance(value, list):
        return [floats(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def as_pulumi_props(obj: dict[str, Any]) -> Any:
    return unknown_checking_proxy(floats(obj))


def type_token(obj: dict[str, Any]) -> str:
    group, _, version = obj["apiVersion"].rpartition("/")
    return f"kubernetes:{group or 'core'}/{version}:{obj['kind']}"


def compliant_pair(api_version: str = "resource.k8s.io/v1") -> tuple[dict[str, Any], dict[str, Any]]:
    template, workload = isolated_workload(
        "infer",
        image="i",
        slice=AcceleratorSlice.nvidia_mig("3g.40gb", count=2),
        namespace="ns",
        api_version=api_version,
        kubernetes_version=target_for(api_version),
        runtime_config=runtime_config_for(api_version),
    )
    return template, workload


def legacy_pod(name: str = "legacy") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/mig-1g.10gb": 1}}}]},
    }


def shared_claim() -> dict[str, Any]:
    """A compliant ResourceClaim named `shared` (a claim, so pods can share it)."""
    template, _ = compliant_pair()
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {**template["metadata"], "name": "shared"},
        "spec": template["spec"]["spec"],
    }


def claim_user(name: str) -> dict[str, Any]:
    """A Pod that uses ResourceClaim `shared` directly."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {
            "containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "shared"}],
        },
    }


def unsanitized_template() -> dict[str, Any]:
    template = claim_template(name="t", slice=AcceleratorSlice.nvidia_mig("1g.10gb"), namespace="ns")
    del template["metadata"]["annotations"]["dra-guard.io/sanitization"]
    return template
