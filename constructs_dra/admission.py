"""`AdmissionGuard`: in-cluster enforcement as cdk8s objects.

The objects are `dra_guard.admission.deploy.admission_guard_objects()`'s dicts, each one
a plain ``ApiObject``, so `cdk8s synth` writes what `dra-guard admission-policy` prints
for the same arguments (docs/admission.md).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from cdk8s import ApiObject, ApiObjectMetadata, Chart, JsonPatch
from constructs import Construct

from dra_guard.admission.deploy import AdmissionGuardOptions, AdmissionGuardSpec, admission_guard_objects

if sys.version_info >= (3, 11):
    from typing import Unpack
else:
    from typing_extensions import Unpack

#: What ApiObject takes as arguments; every other top-level key goes in as a patch.
_HEADER = ("apiVersion", "kind", "metadata")


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
            _api_object(self, f"{manifest['kind']}-{manifest['metadata']['name']}", manifest, chart_namespace)
            for manifest in self.manifests
        ]


def _api_object(
    scope: Construct, construct_id: str, manifest: Mapping[str, Any], chart_namespace: str | None
) -> ApiObject:
    metadata = manifest["metadata"]
    api_object = ApiObject(
        scope,
        construct_id,
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=ApiObjectMetadata(
            name=metadata["name"],
            namespace=metadata.get("namespace"),
            labels=metadata.get("labels"),
            annotations=metadata.get("annotations"),
        ),
    )
    if "namespace" not in metadata and chart_namespace is not None:
        # The dicts name the namespace of every namespaced object; the others are
        # cluster-scoped (policies, RBAC, the webhook configuration), and the chart's
        # default namespace, which cdk8s gives every ApiObject, does not belong on them.
        api_object.add_json_patch(JsonPatch.remove("/metadata/namespace"))
    # ApiObject takes no body in Python; each part goes in as one patch, verbatim.
    for key, value in manifest.items():
        if key not in _HEADER:
            api_object.add_json_patch(JsonPatch.add(f"/{key}", value))
    return api_object
