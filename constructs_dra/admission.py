"""`AdmissionGuard`: in-cluster enforcement as cdk8s objects.

The objects are `dra_guard.admission.deploy.admission_guard_objects()`'s dicts, each one
a plain ``ApiObject``, so `cdk8s synth` writes what `dra-guard admission-policy` prints
for the same arguments (docs/admission.md).
"""

from __future__ import annotations

import sys

from cdk8s import Chart
from constructs import Construct

from constructs_dra.plain_objects import plain_api_object
from dra_guard.admission.deploy import AdmissionGuardOptions, AdmissionGuardSpec, admission_guard_objects

if sys.version_info >= (3, 11):
    from typing import Unpack
else:
    from typing_extensions import Unpack


class AdmissionGuard(Construct):
    """The rules' ValidatingAdmissionPolicies and bindings, and optionally the webhook
    (its Deployment, Service, RBAC and ValidatingWebhookConfiguration).

    The keyword arguments are those of :class:`dra_guard.admission.deploy.AdmissionGuardSpec`,
    the same as `pulumi_dra.AdmissionGuard`'s; a bad one raises before this construct
    joins the tree.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,  # noqa: A002 - cdk8s' own parameter name
        **options: Unpack[AdmissionGuardOptions],
    ) -> None:
        spec = AdmissionGuardSpec.from_options("AdmissionGuard", options)
        super().__init__(scope, id)
        self.spec = spec
        self.manifests = admission_guard_objects(spec)
        chart_namespace = Chart.of(self).namespace
        self.api_objects = [
            plain_api_object(self, f"{manifest['kind']}-{manifest['metadata']['name']}", manifest, chart_namespace)
            for manifest in self.manifests
        ]
