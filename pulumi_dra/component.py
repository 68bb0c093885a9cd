"""Pulumi components over the same builders as the cdk8s constructs.

The children are typed pulumi-kubernetes resources (the ResourceClaimTemplate of the
chosen resource.k8s.io version, and the workload) whose inputs are exactly the builders'
dicts, so Pulumi and cdk8s users deploy identical objects.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from dra_guard.builders import build_claim_template, build_isolated_workload
from dra_guard.spec import ClaimOptions, ClaimSpec, WorkloadOptions, WorkloadSpec, name_from_id

if sys.version_info >= (3, 11):
    from typing import Unpack
else:
    from typing_extensions import Unpack

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
    """A ResourceClaimTemplate for one exclusive, pinned, sanitized and tagged slice.

    The keyword arguments are those of :class:`dra_guard.ClaimSpec`; the template is named
    after the Pulumi resource name, and `namespace` is required.
    """

    template_name: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        namespace: str,
        opts: pulumi.ResourceOptions | None = None,
        **options: Unpack[ClaimOptions],
    ) -> None:
        # The spec first: a bad argument raises before anything is registered.
        spec = ClaimSpec.from_options(
            "IsolatedClaimTemplate",
            name=name_from_id(name, "name"),
            namespace=namespace,
            options=options,
            takes=("namespace", "opts"),
        )
        super().__init__("dra-guard:index:IsolatedClaimTemplate", name, None, opts)
        self.spec = spec
        self.manifest = build_claim_template(spec)
        self.claim_template = _child(
            CLAIM_TEMPLATE_CLASSES[spec.api_version], name, self.manifest, pulumi.ResourceOptions(parent=self)
        )
        self.template_name = pulumi.Output.from_input(spec.name)
        self.register_outputs({"templateName": self.template_name})


class IsolatedAcceleratorWorkload(pulumi.ComponentResource):
    """A Deployment, StatefulSet or Job whose every pod gets its own isolated slice.

    The keyword arguments are those of :class:`dra_guard.WorkloadSpec`, as for the cdk8s
    construct, with `namespace` required (there is no chart to inherit it from), the
    Pulumi resource name in place of the construct id, and Pulumi's `opts`.
    """

    template_name: pulumi.Output[str]
    workload_name: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        namespace: str,
        opts: pulumi.ResourceOptions | None = None,
        **options: Unpack[WorkloadOptions],
    ) -> None:
        # The spec first: a bad argument raises before anything is registered.
        spec = WorkloadSpec.from_options(
            "IsolatedAcceleratorWorkload",
            name=name_from_id(name, "name"),
            namespace=namespace,
            options=options,
            takes=("namespace", "opts"),
        )
        super().__init__("dra-guard:index:IsolatedAcceleratorWorkload", name, None, opts)
        self.spec = spec
        self.manifests = build_isolated_workload(spec)
        self.claim_template = _child(
            CLAIM_TEMPLATE_CLASSES[spec.api_version],
            f"{name}-claim-template",
            self.manifests.claim_template,
            pulumi.ResourceOptions(parent=self),
        )
        self.workload = _child(
            WORKLOAD_CLASSES[spec.workload_kind],
            name,
            self.manifests.workload,
            pulumi.ResourceOptions(parent=self, depends_on=[self.claim_template]),
        )
        #: The StatefulSet's headless Service, when we emit it (no `service_name` given).
        self.service: pulumi.CustomResource | None = None
        if self.manifests.service is not None:
            self.service = _child(
                k8s.core.v1.Service, f"{name}-service", self.manifests.service, pulumi.ResourceOptions(parent=self)
            )
        self.template_name = pulumi.Output.from_input(self.manifests.claim_template["metadata"]["name"])
        self.workload_name = pulumi.Output.from_input(self.manifests.workload["metadata"]["name"])
        self.register_outputs({"templateName": self.template_name, "workloadName": self.workload_name})
