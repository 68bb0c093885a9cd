"""A plain cdk8s ``ApiObject`` made from a manifest dict, as a user would write it.

`AdmissionGuard` deploys its objects this way, and `bench/cdk8s_synth.py` measures our
constructs against objects made this way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdk8s import ApiObject, ApiObjectMetadata, JsonPatch
from constructs import Construct

#: What ApiObject takes as arguments; every other top-level key goes in as a patch.
_HEADER = ("apiVersion", "kind", "metadata")


def plain_api_object(
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
