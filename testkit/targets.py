"""Which Kubernetes release tests build and check objects of each resource.k8s.io version for."""

from __future__ import annotations

from dra_guard.contract.catalog import DEFAULT_KUBERNETES_VERSION, GA_API_VERSION

#: v1alpha3 claims are served only up to Kubernetes 1.33; every other version by the default target.
LEGACY_TARGET = "1.33"


def target_for(api_version: str) -> str:
    """The Kubernetes release a test builds (and checks) objects of `api_version` for."""
    return LEGACY_TARGET if api_version == "resource.k8s.io/v1alpha3" else DEFAULT_KUBERNETES_VERSION


def runtime_config_for(api_version: str) -> tuple[str, ...] | None:
    """The `--runtime-config` entries a cluster needs to serve `api_version` (None: a default
    cluster serves it; only GA versions are on by default)."""
    return None if GA_API_VERSION.fullmatch(api_version) else (f"{api_version}=true",)
