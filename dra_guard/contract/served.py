"""Which resource.k8s.io versions a Kubernetes release serves ResourceClaimTemplates in,
given its kube-apiserver's `--runtime-config`, and so which one a reader of templates asks
for (the webhook's lookups, the builders' and migrate's apiVersion checks)."""

from __future__ import annotations

from collections.abc import Sequence

from dra_guard.contract.catalog import KUBERNETES_RELEASES, KUBERNETES_VERSIONS
from dra_guard.contract.validators import RUNTIME_CONFIG_MATCHERS, require_one_of, require_runtime_config

#: The one resource of resource.k8s.io the builders write and the webhook reads.
_TEMPLATE_RESOURCE = "resourceclaimtemplates"


def served_claim_api_versions(kubernetes_version: str, runtime_config: Sequence[str] | None = None) -> tuple[str, ...]:
    """The versions in which a Kubernetes `kubernetes_version` API server serves
    ResourceClaimTemplates, newest first, with `--runtime-config` set to `runtime_config`'s
    entries (None: not set).

    As kube-apiserver decides it (k8s.io/apiserver pkg/server/resourceconfig/helpers.go
    MergeAPIResourceConfigs, pkg/server/storage/resource_config.go ResourceEnabled): the
    release's defaults (only GA versions, `KubernetesRelease.claim_api_versions_served_by_default`),
    then `api/all`, `api/ga`, `api/beta`, `api/alpha` in that order, then
    `resource.k8s.io/<version>`, then `resource.k8s.io/<version>/resourceclaimtemplates`,
    each overriding what came before.
    """
    require_one_of("kubernetes_version", kubernetes_version, KUBERNETES_VERSIONS)
    release = KUBERNETES_RELEASES[kubernetes_version]
    entries = require_runtime_config(runtime_config) if runtime_config is not None else {}
    served = []
    for api_version in release.claim_api_versions:
        enabled = api_version in release.claim_api_versions_served_by_default
        version = api_version.rpartition("/")[2]
        for matcher, pattern in RUNTIME_CONFIG_MATCHERS.items():
            if matcher in entries and pattern.fullmatch(version):
                enabled = entries[matcher]
        enabled = entries.get(api_version, enabled)
        enabled = entries.get(f"{api_version}/{_TEMPLATE_RESOURCE}", enabled)
        if enabled:
            served.append(api_version)
    return tuple(served)


def template_api_version(kubernetes_version: str, runtime_config: Sequence[str] | None) -> str:
    """The version to read ResourceClaimTemplates in from a `kubernetes_version` API server
    run with `runtime_config` (None: no `--runtime-config`): the newest it serves.

    Raises `ValueError` when `runtime_config` is malformed (the message starts with
    `runtime_config[N]:`) or when nothing is served, saying what to enable: 1.33 serves no
    resource.k8s.io version by default (its betas need `--runtime-config`, and its
    DynamicResourceAllocation feature gate is off by default)."""
    served = served_claim_api_versions(kubernetes_version, runtime_config)
    if served:
        return served[0]
    release = KUBERNETES_RELEASES[kubernetes_version]
    gate = (
        f" (and the DynamicResourceAllocation feature gate, beta and off by default in {kubernetes_version})"
        if not release.dra_enabled_by_default
        else ""
    )
    how = " by default" if not runtime_config else f" with --runtime-config={','.join(runtime_config)}"
    raise ValueError(
        f"a Kubernetes {kubernetes_version} cluster serves no ResourceClaimTemplate version{how}, so claim "
        f"templates cannot be read; name the --runtime-config your API server has, e.g. "
        f"{release.claim_api_versions[0]}=true{gate}"
    )
