"""`AdmissionGuard`: in-cluster enforcement as a Pulumi component.

Its children are typed pulumi-kubernetes resources whose inputs are exactly
`dra_guard.admission.deploy.admission_guard_objects()`'s dicts, so `pulumi up` creates
what `dra-guard admission-policy` prints for the same arguments (docs/admission.md).
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Mapping

import pulumi
import pulumi_kubernetes as k8s

from dra_guard.admission.deploy import AdmissionGuardOptions, AdmissionGuardSpec, admission_guard_objects

if sys.version_info >= (3, 11):
    from typing import Unpack
else:
    from typing_extensions import Unpack


@functools.cache
def resource_classes() -> Mapping[tuple[str, str], type[pulumi.CustomResource]]:
    """(apiVersion, kind) -> the pulumi-kubernetes class of every object the spec can give.

    Built on first use: these pulumi-kubernetes modules take a while to import, and the
    policy pack, which imports this package, never needs them.
    """
    return {
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"): (
            k8s.admissionregistration.v1.ValidatingAdmissionPolicy
        ),
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"): (
            k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding
        ),
        ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"): (
            k8s.admissionregistration.v1.ValidatingWebhookConfiguration
        ),
        ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
        ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
        ("v1", "Service"): k8s.core.v1.Service,
        ("rbac.authorization.k8s.io/v1", "ClusterRole"): k8s.rbac.v1.ClusterRole,
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.rbac.v1.ClusterRoleBinding,
        ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
        ("policy/v1", "PodDisruptionBudget"): k8s.policy.v1.PodDisruptionBudget,
    }


_CAMEL_HUMP = re.compile(r"(?<!^)(?=[A-Z])")


def _keyword(key: str) -> str:
    """A manifest's top-level key as the class's argument: `roleRef` -> `role_ref`."""
    return _CAMEL_HUMP.sub("_", key).lower()


class AdmissionGuard(pulumi.ComponentResource):
    """The rules' ValidatingAdmissionPolicies and bindings, and optionally the webhook
    (its Deployment, Service, RBAC and ValidatingWebhookConfiguration).

    The keyword arguments are those of :class:`dra_guard.admission.deploy.AdmissionGuardSpec`,
    as for the cdk8s construct, plus Pulumi's `opts`.
    """

    policy_names: pulumi.Output[list[str]]

    def __init__(
        self,
        name: str,
        *,
        opts: pulumi.ResourceOptions | None = None,
        **options: Unpack[AdmissionGuardOptions],
    ) -> None:
        # The spec first: a bad argument raises before anything is registered.
        spec = AdmissionGuardSpec.from_options("AdmissionGuard", options, takes=("opts",))
        super().__init__("dra-guard:index:AdmissionGuard", name, None, opts)
        self.spec = spec
        self.manifests = admission_guard_objects(spec)
        self.resources: list[pulumi.CustomResource] = []
        policies: dict[str, pulumi.CustomResource] = {}
        webhook_parts: list[pulumi.Resource] = []
        for manifest in self.manifests:
            kind, object_name = manifest["kind"], manifest["metadata"]["name"]
            depends_on: list[pulumi.Resource] = []
            if kind == "ValidatingAdmissionPolicyBinding":
                depends_on = [policies[manifest["spec"]["policyName"]]]
            elif kind == "ValidatingWebhookConfiguration":
                # Pulumi waits for the Deployment to be ready before the API server starts
                # sending it reviews: until then every matching request would be refused.
                depends_on = list(webhook_parts)
            resource = resource_classes()[manifest["apiVersion"], kind](
                f"{name}-{object_name}",
                **{_keyword(key): value for key, value in manifest.items() if key not in ("apiVersion", "kind")},
                opts=pulumi.ResourceOptions(parent=self, depends_on=depends_on),
            )
            if kind == "ValidatingAdmissionPolicy":
                policies[object_name] = resource
            elif kind != "ValidatingAdmissionPolicyBinding":
                webhook_parts.append(resource)
            self.resources.append(resource)
        self.policy_names = pulumi.Output.from_input(list(policies))
        self.register_outputs({"policyNames": self.policy_names})
