"""Intent -> plain manifest dicts.  Pure functions: new dicts every call, no hidden state.

The cdk8s construct and the Pulumi component both emit exactly what these return, so a
rule or a shape is never re-implemented in a front end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from dra_guard.catalog import (
    ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION,
    DEFAULT_RESOURCE_API_VERSION,
    DEFAULT_SANITIZATION,
    FLAT_REQUEST_API_VERSIONS,
    ISOLATION_TAG_ANNOTATION,
    SANITIZATION_ANNOTATION,
    TENANT_ANNOTATION,
)
from dra_guard.spec import (
    AcceleratorSlice,
    EnvInput,
    PortsInput,
    ResourcesInput,
    plain_copy,
    require_api_version,
    require_dns_label,
    require_dns_subdomain,
    require_env,
    require_hmac_key,
    require_labels,
    require_ports,
    require_positive_int,
    require_resources,
    require_sanitization,
    require_string_list,
    require_workload_kind,
)
from dra_guard.tags import isolation_tag

#: Name of the device request inside every template we build.
REQUEST_NAME = "slice"
#: Name of the pod-level claim (and of the container claim that uses it).
POD_CLAIM_NAME = "accelerator"
MANAGED_BY_LABELS = {"app.kubernetes.io/managed-by": "dra-guard"}

_WORKLOAD_API_VERSIONS = {"Deployment": "apps/v1", "StatefulSet": "apps/v1", "Job": "batch/v1"}


class IsolatedWorkload(NamedTuple):
    """The two objects that make one isolated accelerator workload."""

    claim_template: dict[str, Any]
    workload: dict[str, Any]


def claim_template_name(workload_name: str) -> str:
    """The template name derived from a workload name."""
    return f"{workload_name}-accelerator"


def cel_string_literal(value: str) -> str:
    """`value` as a single-quoted CEL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def selector_expression(accelerator: AcceleratorSlice) -> str:
    """A CEL selector that matches only devices of the slice's driver and pinned profile."""
    return (
        f"device.driver == {cel_string_literal(accelerator.domain)} && "
        f"device.attributes[{cel_string_literal(accelerator.domain)}].{accelerator.attribute} == "
        f"{cel_string_literal(accelerator.pin_value)}"
    )


def device_request(accelerator: AcceleratorSlice, api_version: str = DEFAULT_RESOURCE_API_VERSION) -> dict[str, Any]:
    """One device request, flat (v1alpha3/v1beta1) or under `exactly` (v1beta2/v1)."""
    require_api_version(api_version)
    body = {
        "deviceClassName": accelerator.device_class,
        "selectors": [{"cel": {"expression": selector_expression(accelerator)}}],
        "allocationMode": "ExactCount",
        "count": accelerator.count,
    }
    if api_version in FLAT_REQUEST_API_VERSIONS:
        return {"name": REQUEST_NAME, **body}
    return {"name": REQUEST_NAME, "exactly": body}


def claim_devices(accelerator: AcceleratorSlice, api_version: str = DEFAULT_RESOURCE_API_VERSION) -> dict[str, Any]:
    """The `devices` section: the request and, for several devices, their alignment."""
    devices: dict[str, Any] = {"requests": [device_request(accelerator, api_version)]}
    if accelerator.count > 1:
        # Several slices of one claim must sit on one parent GPU / PCIe root, or the
        # isolation boundary (and NUMA locality) the standard asks for is lost.
        devices["constraints"] = [{"requests": [REQUEST_NAME], "matchAttribute": accelerator.topology_attribute}]
    return devices


def claim_template(
    *,
    name: str,
    slice: AcceleratorSlice,  # noqa: A002 - the public argument name used across front ends
    namespace: str | None = None,
    tenant: str | None = None,
    api_version: str = DEFAULT_RESOURCE_API_VERSION,
    sanitization: str = DEFAULT_SANITIZATION,
    hmac_key: str | bytes | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A ResourceClaimTemplate for one exclusive, pinned, sanitized, tagged slice."""
    if not isinstance(slice, AcceleratorSlice):
        raise ValueError(f"slice: must be an AcceleratorSlice, got {type(slice).__name__}")
    require_dns_subdomain("name", name)
    require_api_version(api_version)
    require_sanitization(sanitization)
    require_hmac_key(hmac_key)
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = require_dns_label("namespace", namespace)
    metadata["labels"] = dict(sorted({**MANAGED_BY_LABELS, **require_labels("labels", labels or {})}.items()))
    annotations = {
        SANITIZATION_ANNOTATION: sanitization,
        ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION: "false",
    }
    if tenant is not None:
        annotations[TENANT_ANNOTATION] = require_dns_label("tenant", tenant)
    metadata["annotations"] = annotations
    template = {
        "apiVersion": api_version,
        "kind": "ResourceClaimTemplate",
        "metadata": metadata,
        "spec": {"spec": {"devices": claim_devices(slice, api_version)}},
    }
    annotations[ISOLATION_TAG_ANNOTATION] = isolation_tag(template, hmac_key)
    return template


def with_claim_template(
    pod_spec: Mapping[str, Any],
    template_name: str,
    *,
    claim_name: str = POD_CLAIM_NAME,
    containers: Sequence[str] | None = None,
) -> dict[str, Any]:
    """A copy of `pod_spec` whose pod claims the template and whose containers use it.

    `containers` names the containers that get the device (default: all regular ones);
    init containers are left alone, as a slice is usually for the main process.
    """
    require_dns_subdomain("template_name", template_name)
    require_dns_label("claim_name", claim_name)
    spec: dict[str, Any] = plain_copy(pod_spec)
    pod_claims = spec.setdefault("resourceClaims", [])
    if any(isinstance(claim, Mapping) and claim.get("name") == claim_name for claim in pod_claims):
        raise ValueError(f"claim_name: the pod already has a resource claim named {claim_name!r}")
    pod_claims.append({"name": claim_name, "resourceClaimTemplateName": template_name})
    wanted = None if containers is None else set(require_string_list("containers", containers))
    found = set()
    for container in spec.get("containers", []):
        if wanted is None or container.get("name") in wanted:
            found.add(container.get("name"))
            resources = container.setdefault("resources", {})
            resources.setdefault("claims", []).append({"name": claim_name})
    if wanted is not None and wanted - found:
        raise ValueError(f"containers: no container named {', '.join(sorted(wanted - found))}")
    if not found:
        raise ValueError("containers: the pod has no container to give the claim to")
    return spec


def workload(
    *,
    kind: str,
    name: str,
    image: str,
    claim_template_name: str,
    namespace: str | None = None,
    replicas: int = 1,
    container_name: str | None = None,
    command: Sequence[str] | None = None,
    args: Sequence[str] | None = None,
    env: EnvInput | None = None,
    ports: PortsInput | None = None,
    labels: Mapping[str, str] | None = None,
    resources: ResourcesInput | None = None,
) -> dict[str, Any]:
    """A Deployment, StatefulSet or Job whose every pod gets its own claim from the template."""
    require_workload_kind(kind)
    require_dns_label("name", name)
    require_positive_int("replicas", replicas)
    if not isinstance(image, str) or not image.strip() or any(c.isspace() for c in image):
        raise ValueError(f"image: must be a container image reference, got {image!r}")
    container: dict[str, Any] = {
        "name": require_dns_label("container_name", container_name if container_name is not None else name),
        "image": image,
    }
    if command is not None:
        container["command"] = require_string_list("command", command)
    if args is not None:
        container["args"] = require_string_list("args", args)
    if env is not None:
        container["env"] = require_env(env)
    if ports is not None:
        container["ports"] = require_ports(ports)
    container["resources"] = require_resources(resources or {})

    selector = {"app.kubernetes.io/name": name}
    all_labels = dict(sorted({**MANAGED_BY_LABELS, **require_labels("labels", labels or {}), **selector}.items()))
    pod_spec: dict[str, Any] = {"containers": [container]}
    if kind == "Job":
        # A Job's pods may not restart in place; Never keeps a failed pod for inspection.
        pod_spec["restartPolicy"] = "Never"
    pod_template = {
        "metadata": {"labels": dict(all_labels)},
        "spec": with_claim_template(pod_spec, claim_template_name),
    }
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = require_dns_label("namespace", namespace)
    metadata["labels"] = dict(all_labels)

    spec: dict[str, Any]
    if kind == "Job":
        spec = {"completions": replicas, "parallelism": replicas, "template": pod_template}
    else:
        spec = {"replicas": replicas, "selector": {"matchLabels": selector}, "template": pod_template}
        if kind == "StatefulSet":
            # Required by the API before 1.35; names the governing headless Service.
            spec = {"serviceName": name, **spec}
    return {"apiVersion": _WORKLOAD_API_VERSIONS[kind], "kind": kind, "metadata": metadata, "spec": spec}


def isolated_workload(
    name: str,
    *,
    image: str,
    slice: AcceleratorSlice,  # noqa: A002 - the public argument name used across front ends
    namespace: str | None = None,
    tenant: str | None = None,
    replicas: int = 1,
    workload_kind: str = "Deployment",
    api_version: str = DEFAULT_RESOURCE_API_VERSION,
    sanitization: str = DEFAULT_SANITIZATION,
    hmac_key: str | bytes | None = None,
    container_name: str | None = None,
    command: Sequence[str] | None = None,
    args: Sequence[str] | None = None,
    env: EnvInput | None = None,
    ports: PortsInput | None = None,
    labels: Mapping[str, str] | None = None,
    resources: ResourcesInput | None = None,
) -> IsolatedWorkload:
    """The claim template and the workload that uses it, named after `name`."""
    require_dns_label("name", name)
    template = claim_template(
        name=claim_template_name(name),
        slice=slice,
        namespace=namespace,
        tenant=tenant,
        api_version=api_version,
        sanitization=sanitization,
        hmac_key=hmac_key,
        labels=labels,
    )
    if tenant is not None:
        # Tenant as a label too, so NetworkPolicies and quotas can select on it.
        labels = {**(labels or {}), "dra-guard.io/tenant": tenant}
    pods = workload(
        kind=workload_kind,
        name=name,
        namespace=namespace,
        image=image,
        claim_template_name=template["metadata"]["name"],
        replicas=replicas,
        container_name=container_name,
        command=command,
        args=args,
        env=env,
        ports=ports,
        labels=labels,
        resources=resources,
    )
    return IsolatedWorkload(template, pods)
