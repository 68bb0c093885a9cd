"""Spec -> plain manifest dicts.  Pure functions: new dicts every call, no hidden state.

`build_claim_template`, `build_workload` and `build_isolated_workload` take a validated
spec (`dra_guard.building.spec`).  `claim_template`, `workload` and `isolated_workload` are their
keyword forms for plain Python, with the same arguments as the cdk8s constructs and the
Pulumi components, which emit exactly what the builders return: a rule or a shape is never
re-implemented in a front end.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dra_guard.building.spec import (
    AcceleratorSlice,
    ClaimOptions,
    ClaimSpec,
    WorkloadOptions,
    WorkloadSpec,
    claim_template_name,
)
from dra_guard.contract.catalog import (
    ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION,
    DEFAULT_RESOURCE_API_VERSION,
    DEVICE_CLASSES,
    EXCLUSIVITY_GUARD,
    FLAT_REQUEST_API_VERSIONS,
    ISOLATION_TAG_ANNOTATION,
    SANITIZATION_ANNOTATION,
    TENANT_ANNOTATION,
    TENANT_LABEL,
)
from dra_guard.contract.scrubber import SCRUB_COMMAND, SCRUB_CONTAINER_NAME, not_the_scrubber
from dra_guard.contract.tags import claim_isolation_tag, isolation_tag
from dra_guard.contract.validators import (
    plain_copy,
    require_api_version,
    require_dns_label,
    require_dns_subdomain,
    require_scrub_image,
    require_string_list,
)

if sys.version_info >= (3, 11):
    from typing import Unpack
else:
    from typing_extensions import Unpack

#: Name of the device request inside every template we build.
REQUEST_NAME = "slice"
#: Name of the pod-level claim (and of the container claim that uses it).
POD_CLAIM_NAME = "accelerator"
MANAGED_BY_LABELS = {"app.kubernetes.io/managed-by": "dra-guard"}

_WORKLOAD_API_VERSIONS = {"Deployment": "apps/v1", "StatefulSet": "apps/v1", "Job": "batch/v1"}


@dataclass(frozen=True)
class IsolatedWorkload:
    """The objects that make one isolated accelerator workload.

    Iterating gives them in the order they are applied: the claim template, the workload,
    and, for a StatefulSet whose Service we emit, its headless Service.
    """

    claim_template: dict[str, Any]
    workload: dict[str, Any]
    service: dict[str, Any] | None = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        yield self.claim_template
        yield self.workload
        if self.service is not None:
            yield self.service

    def __len__(self) -> int:
        return 2 if self.service is None else 3


def cel_string_literal(value: str) -> str:
    """`value` as a single-quoted CEL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def selector_expression(accelerator: AcceleratorSlice, *, exclusivity_guard: bool = False) -> str:
    """A CEL selector that matches only devices of the slice's driver and pinned profile.

    With `exclusivity_guard`, also only devices that cannot be allocated to another claim
    (`EXCLUSIVITY_GUARD`); one expression, so the scheduler evaluates one selector.
    """
    domain = cel_string_literal(accelerator.domain)
    expression = (
        f"device.driver == {domain} && "
        f"device.attributes[{domain}].{accelerator.attribute} == {cel_string_literal(accelerator.pin_value)}"
    )
    known = DEVICE_CLASSES.get(accelerator.device_class)
    if known is not None and known.whole_host_attribute is not None:
        # Only hosts with exactly `count` devices: the claim takes the whole host (DRA017).
        expression += f" && device.attributes[{domain}].{known.whole_host_attribute} == {accelerator.count}"
    return f"{expression} && {EXCLUSIVITY_GUARD}" if exclusivity_guard else expression


def device_request(
    accelerator: AcceleratorSlice,
    api_version: str = DEFAULT_RESOURCE_API_VERSION,
    *,
    exclusivity_guard: bool = True,
) -> dict[str, Any]:
    """One device request, flat (v1alpha3/v1beta1) or under `exactly` (v1beta2/v1).

    `exclusivity_guard` defaults to what the default Kubernetes version wants (on); a spec
    decides it from its `kubernetes_version` (`ClaimSpec.exclusivity_guard`).
    """
    require_api_version(api_version)
    body = {
        "deviceClassName": accelerator.device_class,
        "selectors": [{"cel": {"expression": selector_expression(accelerator, exclusivity_guard=exclusivity_guard)}}],
        "allocationMode": "ExactCount",
        "count": accelerator.count,
    }
    if api_version in FLAT_REQUEST_API_VERSIONS:
        return {"name": REQUEST_NAME, **body}
    return {"name": REQUEST_NAME, "exactly": body}


def claim_devices(
    accelerator: AcceleratorSlice,
    api_version: str = DEFAULT_RESOURCE_API_VERSION,
    *,
    exclusivity_guard: bool = True,
) -> dict[str, Any]:
    """The `devices` section: the request and, for several devices, their alignment if any.

    Only the slice's `alignment` is emitted (the parent GPU for MIG by default): a
    `matchAttribute` on an attribute some device lacks makes the claim unallocatable there,
    so nothing is added where the driver does not publish one on every device.
    """
    devices: dict[str, Any] = {
        "requests": [device_request(accelerator, api_version, exclusivity_guard=exclusivity_guard)]
    }
    if accelerator.count > 1 and accelerator.alignment is not None:
        devices["constraints"] = [{"requests": [REQUEST_NAME], "matchAttribute": accelerator.alignment}]
    return devices


def build_claim_template(spec: ClaimSpec) -> dict[str, Any]:
    """A ResourceClaimTemplate for one exclusive, pinned, sanitized, tagged slice.

    The declarations stand twice: on the template, with the template's own tag, and in
    `spec.metadata`, with the claim tag, because kube-controller-manager copies only
    `spec.metadata` onto the claims it creates from the template (docs/admission.md, "What
    the cluster creates"): the claim a driver or node agent reads carries the policy too.
    """
    metadata: dict[str, Any] = {"name": spec.name}
    if spec.namespace is not None:
        metadata["namespace"] = spec.namespace
    metadata["labels"] = dict(sorted({**MANAGED_BY_LABELS, **(spec.labels or {})}.items()))
    declarations = {
        SANITIZATION_ANNOTATION: spec.sanitization,
        ALLOW_MULTIPLE_ALLOCATIONS_ANNOTATION: "false",
    }
    if spec.tenant is not None:
        declarations[TENANT_ANNOTATION] = spec.tenant
    annotations = dict(declarations)
    metadata["annotations"] = annotations
    claim_labels = {**MANAGED_BY_LABELS, **(spec.labels or {})}
    if spec.tenant is not None:
        # The tenant as a label on every generated claim, so claims can be selected by tenant.
        claim_labels[TENANT_LABEL] = spec.tenant
    claim_annotations = dict(declarations)
    template = {
        "apiVersion": spec.api_version,
        "kind": "ResourceClaimTemplate",
        "metadata": metadata,
        "spec": {
            "metadata": {"labels": dict(sorted(claim_labels.items())), "annotations": claim_annotations},
            "spec": {"devices": claim_devices(spec.slice, spec.api_version, exclusivity_guard=spec.exclusivity_guard)},
        },
    }
    claim_annotations[ISOLATION_TAG_ANNOTATION] = claim_isolation_tag(template, spec.hmac_key)
    annotations[ISOLATION_TAG_ANNOTATION] = isolation_tag(template, spec.hmac_key)
    return template


def scrub_container(image: str, claim_names: Sequence[str]) -> dict[str, Any]:
    """The scrubber's init container, holding the pod claims `claim_names` (README, "Memory
    erasure"): not restartable (a sidecar would let the others start before it finishes)."""
    return {
        "name": SCRUB_CONTAINER_NAME,
        "image": image,
        "command": list(SCRUB_COMMAND),
        "resources": {"claims": [{"name": name} for name in claim_names]},
    }


def with_scrubber(pod_spec: dict[str, Any], image: str, claim_name: str) -> None:
    """Make the scrubber the pod's first init container and give it `claim_name`, in place:
    a scrubber already first (another claim's) takes this claim too; one that holds it
    already is left as it is.  A container of its name that is not the scrubber's shape
    (`not_the_scrubber`), or not first, is refused."""
    init_containers = pod_spec.setdefault("initContainers", [])
    first = init_containers[0] if init_containers else None
    if isinstance(first, dict) and first.get("name") == SCRUB_CONTAINER_NAME:
        if first.get("image") != image:
            raise ValueError(f"scrub_image: the pod's scrubber already runs {first.get('image')!r}, not {image!r}")
        problem = not_the_scrubber(first)
        if problem is not None:
            # A look-alike would be handed the claim and the pod pass for scrubbed (DRA016).
            raise ValueError(
                f"the pod's first init container {SCRUB_CONTAINER_NAME!r} is not the scrubber: it {problem}"
            )
        claims = first.setdefault("resources", {}).setdefault("claims", [])
        if not any(isinstance(claim, Mapping) and claim.get("name") == claim_name for claim in claims):
            claims.append({"name": claim_name})
        return
    if any(
        isinstance(container, Mapping) and container.get("name") == SCRUB_CONTAINER_NAME
        for container in init_containers
    ):
        raise ValueError(f"the pod has an init container named {SCRUB_CONTAINER_NAME!r} that is not its first")
    init_containers.insert(0, scrub_container(image, [claim_name]))


def with_claim_template(
    pod_spec: Mapping[str, Any],
    template_name: str,
    *,
    claim_name: str = POD_CLAIM_NAME,
    containers: Sequence[str] | None = None,
    scrub_image: str | None = None,
) -> dict[str, Any]:
    """A copy of `pod_spec` whose pod claims the template and whose containers use it.

    `containers` names the containers that get the device (default: all regular ones);
    init containers are left alone, as a slice is usually for the main process.  With
    `scrub_image`, the scrubber runs first, holding the claim (`with_scrubber`): give it for
    a template of a slice the scrubber scrubs (`AcceleratorSlice.scrubbed`).
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
    if scrub_image is not None:
        with_scrubber(spec, require_scrub_image(scrub_image), claim_name)
    return spec


def build_workload(spec: WorkloadSpec) -> dict[str, Any]:
    """A Deployment, StatefulSet or Job whose every pod gets its own claim from the template."""
    container: dict[str, Any] = {
        "name": spec.container_name if spec.container_name is not None else spec.name,
        "image": spec.image,
    }
    # The spec holds read-only copies; the manifest gets plain ones of its own.
    if spec.command is not None:
        container["command"] = list(spec.command)
    if spec.args is not None:
        container["args"] = list(spec.args)
    if spec.env is not None:
        container["env"] = plain_copy(spec.env)
    if spec.ports is not None:
        container["ports"] = plain_copy(spec.ports)
    container["resources"] = plain_copy(spec.resources or {})

    labels = dict(spec.labels or {})
    if spec.tenant is not None:
        # Tenant as a label too, so NetworkPolicies and quotas can select on it.
        labels[TENANT_LABEL] = spec.tenant
    selector = {"app.kubernetes.io/name": spec.name}
    all_labels = dict(sorted({**MANAGED_BY_LABELS, **labels, **selector}.items()))
    pod_spec: dict[str, Any] = {"containers": [container]}
    if spec.workload_kind == "Job":
        # A Job's pods may not restart in place; Never keeps a failed pod for inspection.
        pod_spec["restartPolicy"] = "Never"
    pod_template = {
        "metadata": {"labels": dict(all_labels)},
        "spec": with_claim_template(
            pod_spec,
            claim_template_name(spec.name),
            scrub_image=spec.scrub_image if spec.slice.scrubbed else None,
        ),
    }
    metadata: dict[str, Any] = {"name": spec.name}
    if spec.namespace is not None:
        metadata["namespace"] = spec.namespace
    metadata["labels"] = dict(all_labels)

    body: dict[str, Any]
    if spec.workload_kind == "Job":
        body = {"completions": spec.replicas, "parallelism": spec.replicas, "template": pod_template}
    else:
        body = {"replicas": spec.replicas, "selector": {"matchLabels": selector}, "template": pod_template}
        if spec.workload_kind == "StatefulSet":
            # Required by the API before 1.35; names the governing headless Service.
            body = {"serviceName": spec.service_name or spec.name, **body}
    return {
        "apiVersion": _WORKLOAD_API_VERSIONS[spec.workload_kind],
        "kind": spec.workload_kind,
        "metadata": metadata,
        "spec": body,
    }


def build_headless_service(spec: WorkloadSpec) -> dict[str, Any]:
    """The headless Service that governs a StatefulSet: stable DNS names for its pods.

    Selects the workload's pods by the same label as the StatefulSet and publishes their
    container ports, as cdk8s-plus' StatefulSet does for its default Service.
    """
    metadata: dict[str, Any] = {"name": spec.name}
    if spec.namespace is not None:
        metadata["namespace"] = spec.namespace
    labels = dict(spec.labels or {})
    if spec.tenant is not None:
        labels[TENANT_LABEL] = spec.tenant
    metadata["labels"] = dict(sorted({**MANAGED_BY_LABELS, **labels, "app.kubernetes.io/name": spec.name}.items()))
    body: dict[str, Any] = {"clusterIP": "None", "selector": {"app.kubernetes.io/name": spec.name}}
    ports = [_service_port(port, named=len(spec.ports or ()) > 1) for port in spec.ports or ()]
    if ports:
        body["ports"] = ports
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": body}


def _service_port(container_port: int | Mapping[str, Any], *, named: bool) -> dict[str, Any]:
    # A spec holds ports as ContainerPort mappings already; a bare number is read the same way.
    if not isinstance(container_port, Mapping):
        container_port = {"containerPort": container_port}
    number = container_port["containerPort"]
    port: dict[str, Any] = {"port": number}
    if "name" in container_port:
        port["name"] = container_port["name"]
    elif named:
        # The API requires a name on every port of a Service with several.
        port["name"] = f"port-{number}"
    if "protocol" in container_port:
        port["protocol"] = container_port["protocol"]
    return port


def build_isolated_workload(spec: WorkloadSpec) -> IsolatedWorkload:
    """The claim template and the workload that uses it, named after `spec.name`; for a
    StatefulSet without a `service_name`, also its headless Service."""
    service = (
        build_headless_service(spec) if spec.workload_kind == "StatefulSet" and spec.service_name is None else None
    )
    return IsolatedWorkload(build_claim_template(spec.claim), build_workload(spec), service)


# --- Keyword forms, with the arguments of the cdk8s constructs and Pulumi components ----

#: The parameters the keyword forms take besides the options.
_IDENTITY = ("name", "namespace")


def claim_template(*, name: str, namespace: str | None = None, **options: Unpack[ClaimOptions]) -> dict[str, Any]:
    """`build_claim_template` for keyword arguments; see `ClaimSpec` for each of them."""
    spec = ClaimSpec.from_options("claim_template", name=name, namespace=namespace, options=options, takes=_IDENTITY)
    return build_claim_template(spec)


def workload(name: str, *, namespace: str | None = None, **options: Unpack[WorkloadOptions]) -> dict[str, Any]:
    """`build_workload` for keyword arguments; see `WorkloadSpec` for each of them."""
    spec = WorkloadSpec.from_options("workload", name=name, namespace=namespace, options=options, takes=_IDENTITY)
    return build_workload(spec)


def isolated_workload(
    name: str, *, namespace: str | None = None, **options: Unpack[WorkloadOptions]
) -> IsolatedWorkload:
    """`build_isolated_workload` for keyword arguments; see `WorkloadSpec` for each of them."""
    spec = WorkloadSpec.from_options(
        "isolated_workload", name=name, namespace=namespace, options=options, takes=_IDENTITY
    )
    return build_isolated_workload(spec)
