"""Pulumi components over the same builders as the cdk8s constructs.

The children are typed pulumi-kubernetes resources (the ResourceClaimTemplate of the
chosen resource.k8s.io version, and the workload) whose inputs are exactly the builders'
dicts, so Pulumi and cdk8s users deploy identical objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from dra_guard.builders import claim_template, isolated_workload
from dra_guard.catalog import DEFAULT_RESOURCE_API_VERSION, DEFAULT_SANITIZATION
from dra_guard.spec import AcceleratorSlice, EnvInput, PortsInput, ResourcesInput, name_from_id

CLAIM_TEMPLATE_CLASSES: Mapping[str, type[pulumi.CustomResource]] = {
    "resource.k8s.io/v1": k8s.resource.v1.ResourceClaimTemplate,
    "resource.k8s.io/v1beta2": k8s.resource.v1beta2.ResourceClaimTemplate,
    "resource.k8s.io/v1beta1": k8s.resource.v1beta1.ResourceClaimTemplate,
    "resource.k8s.io/v1alpha3": k8s.resource.v1alpha3.ResourceClaimTemplate,
}
WORKLOAD_CLASSES: Mapping[str, type[pulumi.CustomResource]] = {
    "Deployment": k8s.apps.v1.Deployment,
    "StatefulSet": k8s.apps.v1.StatefulSet,
    "Job": k8s.batch.v1.Job,
}


def _child(
    resource_class: type[pulumi.CustomResource], name: str, manifest: Mapping[str, Any], opts: pulumi.ResourceOptions
) -> pulumi.CustomResource:
    # apiVersion and kind come from the class; metadata and spec are the builder's dicts.
    return resource_class(name, metadata=manifest["metadata"], spec=manifest["spec"], opts=opts)  # type: ignore[call-arg]


class IsolatedClaimTemplate(pulumi.ComponentResource):
    """A ResourceClaimTemplate for one exclusive, pinned, sanitized and tagged slice."""

    template_name: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        namespace: str,
        slice: AcceleratorSlice,  # noqa: A002 - the public argument name used across front ends
        tenant: str | None = None,
        api_version: str = DEFAULT_RESOURCE_API_VERSION,
        sanitization: str = DEFAULT_SANITIZATION,
        hmac_key: str | bytes | None = None,
        labels: Mapping[str, str] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("dra-guard:index:IsolatedClaimTemplate", name, None, opts)
        self.manifest = claim_template(
            name=name_from_id(name, "name"),
            slice=slice,
            namespace=namespace,
            tenant=tenant,
            api_version=api_version,
            sanitization=sanitization,
            hmac_key=hmac_key,
            labels=labels,
        )
        self.claim_template = _child(
            CLAIM_TEMPLATE_CLASSES[api_version], name, self.manifest, pulumi.ResourceOptions(parent=self)
        )
        self.template_name = pulumi.Output.from_input(self.manifest["metadata"]["name"])
        self.register_outputs({"templateName": self.template_name})


class IsolatedAcceleratorWorkload(pulumi.ComponentResource):
    """A Deployment, StatefulSet or Job whose every pod gets its own isolated slice.

    Same arguments as the cdk8s construct, with `namespace` required (there is no chart
    to inherit it from) and the Pulumi resource name in place of the construct id.
    """

    template_name: pulumi.Output[str]
    workload_name: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        namespace: str,
        image: str,
        slice: AcceleratorSlice,  # noqa: A002 - the public argument name used across front ends
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
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("dra-guard:index:IsolatedAcceleratorWorkload", name, None, opts)
        self.manifests = isolated_workload(
            name_from_id(name, "name"),
            image=image,
            slice=slice,
            namespace=namespace,
            tenant=tenant,
            replicas=replicas,
            workload_kind=workload_kind,
            api_version=api_version,
            sanitization=sanitization,
            hmac_key=hmac_key,
            container_name=container_name,
            command=command,
            args=args,
            env=env,
            ports=ports,
            labels=labels,
            resources=resources,
        )
        child = pulumi.ResourceOptions(parent=self)
        self.claim_template = _child(
            CLAIM_TEMPLATE_CLASSES[api_version], f"{name}-claim-template", self.manifests.claim_template, child
        )
        self.workload = _child(
            WORKLOAD_CLASSES[workload_kind],
            name,
            self.manifests.workload,
            pulumi.ResourceOptions(parent=self, depends_on=[self.claim_template]),
        )
        self.template_name = pulumi.Output.from_input(self.manifests.claim_template["metadata"]["name"])
        self.workload_name = pulumi.Output.from_input(self.manifests.workload["metadata"]["name"])
        self.register_outputs({"templateName": self.template_name, "workloadName": self.workload_name})
