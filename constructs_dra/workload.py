"""`IsolatedAcceleratorWorkload`, `IsolatedClaimTemplate` and `use_claim_template`."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from cdk8s import ApiObject, ApiObjectMetadata, Chart, JsonPatch
from constructs import Construct

from constructs_dra.enforce import validate_self
from dra_guard.builders import POD_CLAIM_NAME, build_claim_template, build_isolated_workload, with_claim_template
from dra_guard.catalog import POD_SPEC_PATHS
from dra_guard.spec import ClaimOptions, ClaimSpec, WorkloadOptions, WorkloadSpec, claim_template_name, name_from_id

if sys.version_info >= (3, 11):
    from typing import Unpack
else:
    from typing_extensions import Unpack


def _api_object(scope: Construct, construct_id: str, manifest: Mapping[str, Any]) -> ApiObject:
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
    # ApiObject takes no body in Python; the spec goes in as one patch, verbatim.
    api_object.add_json_patch(JsonPatch.add("/spec", manifest["spec"]))
    return api_object


def _chart_namespace(scope: Construct, namespace: str | None) -> str | None:
    return namespace if namespace is not None else Chart.of(scope).namespace


class IsolatedClaimTemplate(Construct):
    """A ResourceClaimTemplate for one exclusive, pinned, sanitized and tagged slice.

    For workloads you build yourself; wire it in with :func:`use_claim_template`.  The
    keyword arguments are those of :class:`dra_guard.ClaimSpec`: `name` defaults to one
    derived from the construct id, `namespace` to the chart's.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,  # noqa: A002 - cdk8s' own parameter name
        *,
        name: str | None = None,
        namespace: str | None = None,
        **options: Unpack[ClaimOptions],
    ) -> None:
        # The spec first: a bad argument raises before this construct joins the tree.
        spec = ClaimSpec.from_options(
            "IsolatedClaimTemplate",
            name=name if name is not None else name_from_id(id),
            namespace=_chart_namespace(scope, namespace),
            options=options,
            takes=("name", "namespace"),
        )
        super().__init__(scope, id)
        self.spec = spec
        self.manifest = build_claim_template(self.spec)
        self.api_object = _api_object(self, "Resource", self.manifest)
        validate_self(self, self.spec.hmac_key)

    @property
    def name(self) -> str:
        """The template's `metadata.name`, for `resourceClaimTemplateName`."""
        return self.spec.name


class IsolatedAcceleratorWorkload(Construct):
    """A workload whose every pod gets its own isolated accelerator slice.

    Synthesizes one ResourceClaimTemplate and one Deployment, StatefulSet or Job, both
    named after the construct id and both compliant with the standard by construction.
    The keyword arguments are those of :class:`dra_guard.WorkloadSpec`; the name comes
    from the construct id and `namespace` defaults to the chart's.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,  # noqa: A002 - cdk8s' own parameter name
        *,
        namespace: str | None = None,
        **options: Unpack[WorkloadOptions],
    ) -> None:
        # The spec first: a bad argument raises before this construct joins the tree.
        spec = WorkloadSpec.from_options(
            "IsolatedAcceleratorWorkload",
            name=name_from_id(id),
            namespace=_chart_namespace(scope, namespace),
            options=options,
            takes=("namespace",),
        )
        super().__init__(scope, id)
        self.spec = spec
        self.manifests = build_isolated_workload(self.spec)
        self.claim_template = _api_object(self, "ClaimTemplate", self.manifests.claim_template)
        self.workload = _api_object(self, "Workload", self.manifests.workload)
        self.workload.add_dependency(self.claim_template)
        validate_self(self, self.spec.hmac_key)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def claim_template_name(self) -> str:
        return claim_template_name(self.spec.name)


def use_claim_template(
    workload: Construct,
    template: IsolatedClaimTemplate | str,
    *,
    claim_name: str = POD_CLAIM_NAME,
    containers: Sequence[str] | None = None,
) -> None:
    """Give every pod of `workload` its own claim from `template`.

    `workload` is a cdk8s ``ApiObject`` (Pod, Deployment, StatefulSet, DaemonSet,
    ReplicaSet, Job, CronJob) or a cdk8s-plus workload.
    Call it after the workload's containers are defined: the claim is added to the
    containers that exist now (or to those named in `containers`).
    """
    if isinstance(workload, ApiObject):
        api_object = workload
    elif isinstance(workload, Construct):
        # cdk8s-plus keeps its ApiObject as the default child; this is cdk8s' own accessor.
        try:
            api_object = ApiObject.of(workload)
        except Exception as error:  # jsii surfaces the JavaScript error as a plain Exception
            raise ValueError(f"workload: {workload.node.path} has no ApiObject to wire a claim into") from error
    else:
        raise ValueError(f"workload: must be a cdk8s ApiObject or a cdk8s-plus workload, got {type(workload).__name__}")
    kind = api_object.kind
    pointer = POD_SPEC_PATHS.get(kind)
    if pointer is None:
        kinds = ", ".join(POD_SPEC_PATHS)
        raise ValueError(f"workload: cannot wire a claim into kind {kind!r}; use one of {kinds}")
    current: Any = api_object.to_json()
    for key in pointer:
        current = current.get(key, {}) if isinstance(current, Mapping) else {}
    template_name = template.name if isinstance(template, IsolatedClaimTemplate) else template
    wired = with_claim_template(current, template_name, claim_name=claim_name, containers=containers)
    # Additive patches, not a replacement of the pod spec: whatever cdk8s-plus adds to the
    # pod later (volumes, security context) must survive.
    base = "/" + "/".join(str(part) for part in pointer)
    claim = wired["resourceClaims"][-1]
    if current.get("resourceClaims"):
        api_object.add_json_patch(JsonPatch.add(f"{base}/resourceClaims/-", claim))
    else:
        api_object.add_json_patch(JsonPatch.add(f"{base}/resourceClaims", [claim]))
    for index, (before, after) in enumerate(zip(current.get("containers", []), wired["containers"], strict=True)):
        if before == after:
            continue
        container_pointer = f"{base}/containers/{index}/resources"
        container_claim = after["resources"]["claims"][-1]
        if "resources" not in before:
            api_object.add_json_patch(JsonPatch.add(container_pointer, {"claims": [container_claim]}))
        elif "claims" not in before["resources"]:
            api_object.add_json_patch(JsonPatch.add(f"{container_pointer}/claims", [container_claim]))
        else:
            api_object.add_json_patch(JsonPatch.add(f"{container_pointer}/claims/-", container_claim))
