"""`IsolatedAcceleratorWorkload`, `IsolatedClaimTemplate` and `use_claim_template`."""

from __future__ import annotations

import copy
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import jsii
from cdk8s import ApiObject, JsonPatch
from constructs import Construct, IValidation

from constructs_dra.enforce import self_checked_chart, validate_self
from constructs_dra.registry import BuiltApiObject, join_path, record_wiring
from dra_guard.builders import (
    DEFAULT_SCRUB_IMAGE,
    POD_CLAIM_NAME,
    build_claim_template,
    build_isolated_workload,
    require_scrub_image,
    with_claim_template,
    with_scrubber,
)
from dra_guard.catalog import POD_SPEC_PATHS, SCRUB_BEFORE_USE
from dra_guard.spec import ClaimOptions, ClaimSpec, WorkloadOptions, WorkloadSpec, claim_template_name, name_from_id

if sys.version_info >= (3, 11):
    from typing import Unpack
else:
    from typing_extensions import Unpack


#: Where a construct's namespace comes from, for the error when it has none.
CHART_NAMESPACE_HINT = "give the chart or the construct a namespace"


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
        chart, scope_path = self_checked_chart(scope)
        # The spec first: a bad argument raises before this construct joins the tree.
        spec = ClaimSpec.from_options(
            "IsolatedClaimTemplate",
            name=name if name is not None else name_from_id(id),
            namespace=namespace if namespace is not None else chart.namespace,
            options=options,
            takes=("name", "namespace"),
            namespace_hint=CHART_NAMESPACE_HINT,
        )
        super().__init__(scope, id)
        path = join_path(scope_path, id)
        self.spec = spec
        self.manifest = build_claim_template(self.spec)
        self.api_object: ApiObject = BuiltApiObject(self, "Resource", self.manifest, chart, path)
        validate_self(
            self,
            chart,
            path,
            [self.api_object],
            self.spec.hmac_key,
            kubernetes_version=self.spec.kubernetes_version,
            consumable_capacity=self.spec.consumable_capacity,
        )

    @property
    def name(self) -> str:
        """The template's `metadata.name`, for `resourceClaimTemplateName`."""
        return self.spec.name


class IsolatedAcceleratorWorkload(Construct):
    """A workload whose every pod gets its own isolated accelerator slice.

    Synthesizes one ResourceClaimTemplate and one Deployment, StatefulSet (with its
    headless Service) or Job, named after the construct id and compliant with the standard
    by construction, for the Kubernetes release `kubernetes_version` names.  What locality a
    slice of several devices gets depends on its driver: README.md, "What locality a claim
    for several devices gets".
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
        chart, scope_path = self_checked_chart(scope)
        # The spec first: a bad argument raises before this construct joins the tree.
        spec = WorkloadSpec.from_options(
            "IsolatedAcceleratorWorkload",
            name=name_from_id(id),
            namespace=namespace if namespace is not None else chart.namespace,
            options=options,
            takes=("namespace",),
            namespace_hint=CHART_NAMESPACE_HINT,
        )
        super().__init__(scope, id)
        path = join_path(scope_path, id)
        self.spec = spec
        self.manifests = build_isolated_workload(self.spec)
        claim_template = BuiltApiObject(self, "ClaimTemplate", self.manifests.claim_template, chart, path)
        workload = BuiltApiObject(self, "Workload", self.manifests.workload, chart, path)
        # `add_dependency` without the binding's runtime type check: both objects are ours.
        jsii.invoke(workload, "addDependency", [claim_template])
        objects = [claim_template, workload]
        self.claim_template: ApiObject = claim_template
        self.workload: ApiObject = workload
        #: The StatefulSet's headless Service, when we emit it (no `service_name` given).
        self.service: ApiObject | None = None
        if self.manifests.service is not None:
            service = BuiltApiObject(self, "Service", self.manifests.service, chart, path)
            objects.append(service)
            self.service = service
        validate_self(
            self,
            chart,
            path,
            objects,
            self.spec.hmac_key,
            kubernetes_version=self.spec.kubernetes_version,
            consumable_capacity=self.spec.consumable_capacity,
        )

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
    scrub_image: str | None = DEFAULT_SCRUB_IMAGE,
) -> None:
    """Give every pod of `workload` its own claim from `template`.

    `workload` is a cdk8s ``ApiObject`` (Pod, Deployment, StatefulSet, DaemonSet,
    ReplicaSet, Job, CronJob) or a cdk8s-plus workload.  With `containers` left out, every
    regular container uses the claim, including containers added after this call
    (cdk8s-plus ``add_container``, a later JSON patch): those are wired when the app is
    synthesized.  Name `containers` to wire only those (they must exist now).

    The scrubber (`scrub_image`, README "Memory erasure") becomes the pod's first init
    container, holding the claim, when the app is synthesized (so init containers added
    later stay after it): for an `IsolatedClaimTemplate` of a class it scrubs, and for a
    template named by a string (whose class is not known here: pass `scrub_image=None` for
    one it cannot scrub, or its pods never start).  `scrub_image=None` with an
    `IsolatedClaimTemplate` of a class it scrubs is refused: the rules require the scrubber
    of every pod holding such a claim (README "Memory erasure"; no annotation waives it), and a template that
    declares ScrubBeforeUse would promise an erasure no container performs.
    """
    if scrub_image is None and isinstance(template, IsolatedClaimTemplate) and template.spec.slice.scrubbed:
        raise ValueError(_scrubber_required(template))
    api_object = _workload_api_object(workload)
    pointer = POD_SPEC_PATHS[api_object.kind]
    current = _pod_spec_of(api_object, pointer)
    template_name = template.name if isinstance(template, IsolatedClaimTemplate) else template
    wired = with_claim_template(current, template_name, claim_name=claim_name, containers=containers)
    if scrub_image is not None and (not isinstance(template, IsolatedClaimTemplate) or template.spec.slice.scrubbed):
        require_scrub_image(scrub_image)  # a bad image is refused now, not at synth
        _wire_at_synth(api_object, _RunScrubberFirst(api_object, pointer, claim_name, scrub_image))
    # Additive patches, not a replacement of the pod spec: whatever cdk8s-plus adds to the
    # pod later (volumes, security context) must survive.
    base = "/" + "/".join(str(part) for part in pointer)
    claim = wired["resourceClaims"][-1]
    if current.get("resourceClaims"):
        api_object.add_json_patch(JsonPatch.add(f"{base}/resourceClaims/-", claim))
    else:
        api_object.add_json_patch(JsonPatch.add(f"{base}/resourceClaims", [claim]))
    for index, (before, after) in enumerate(zip(current.get("containers", []), wired["containers"], strict=True)):
        if before != after:
            _add_container_claim(api_object, f"{base}/containers/{index}", before, claim_name)
    if containers is None:
        # cdk8s validates every construct before it renders any object (App.synth,
        # Testing.synth and Chart.to_json alike), so this runs once the containers are final.
        _wire_at_synth(api_object, _WireLateContainers(api_object, pointer, claim_name))


def _scrubber_required(template: IsolatedClaimTemplate) -> str:
    """Why `scrub_image=None` is refused for this template."""
    declared = (
        f" and the template declares sanitization {template.spec.sanitization}, an erasure only the scrubber performs"
        if template.spec.sanitization == SCRUB_BEFORE_USE
        else ""
    )
    return (
        f"scrub_image: the scrubber scrubs the devices of template {template.name!r} "
        f"({template.spec.slice.device_class}), so every pod holding its claim must run it first (README "
        f'"Memory erasure", not waivable){declared}; pass a pinned image (default {DEFAULT_SCRUB_IMAGE}), not None'
    )


def _wire_at_synth(api_object: ApiObject, wiring: Any) -> None:
    """Run `wiring` when the app is synthesized, before any check reads the object: cdk8s
    validates an `enforce()` scope above the object first, so the checks run it themselves
    (`finish_wiring`); run again, it adds nothing."""
    api_object.node.add_validation(wiring)
    record_wiring(api_object, wiring)


def _workload_api_object(workload: Construct) -> ApiObject:
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
    if api_object.kind not in POD_SPEC_PATHS:
        kinds = ", ".join(POD_SPEC_PATHS)
        raise ValueError(f"workload: cannot wire a claim into kind {api_object.kind!r}; use one of {kinds}")
    return api_object


def _pod_spec_of(api_object: ApiObject, pointer: Sequence[str]) -> Mapping[str, Any]:
    current: Any = api_object.to_json()
    for key in pointer:
        current = current.get(key, {}) if isinstance(current, Mapping) else {}
    return current if isinstance(current, Mapping) else {}


def _add_container_claim(api_object: ApiObject, pointer: str, container: Mapping[str, Any], claim_name: str) -> None:
    """Patch one container to use the pod claim `claim_name`, keeping its other resources."""
    claim = {"name": claim_name}
    resources = container.get("resources")
    if not isinstance(resources, Mapping):
        api_object.add_json_patch(JsonPatch.add(f"{pointer}/resources", {"claims": [claim]}))
    elif not resources.get("claims"):
        api_object.add_json_patch(JsonPatch.add(f"{pointer}/resources/claims", [claim]))
    else:
        api_object.add_json_patch(JsonPatch.add(f"{pointer}/resources/claims/-", claim))


@jsii.implements(IValidation)
class _RunScrubberFirst:
    """At synth, makes the scrubber the pod's first init container and gives it the claim.

    At synth, not when `use_claim_template` runs: an init container added later (cdk8s-plus
    ``add_init_container``) must still come after it.  A second synth adds nothing.
    """

    def __init__(self, api_object: ApiObject, pointer: Sequence[str], claim_name: str, image: str) -> None:
        self._api_object = api_object
        self._pointer = tuple(pointer)
        self._claim_name = claim_name
        self._image = image

    def validate(self) -> list[str]:
        base = "/" + "/".join(self._pointer) + "/initContainers"
        before = _pod_spec_of(self._api_object, self._pointer).get("initContainers") or []
        # The builders' rule for where the scrubber goes, applied to a copy; the difference
        # becomes an additive patch, so what cdk8s-plus renders into the pod survives.
        wired: dict[str, Any] = {"initContainers": copy.deepcopy(list(before))}
        try:
            with_scrubber(wired, self._image, self._claim_name)
        except ValueError as error:
            return [str(error)]
        after = wired["initContainers"]
        if after == before:
            return []
        if not before:
            self._api_object.add_json_patch(JsonPatch.add(base, after))
        elif len(after) > len(before):
            self._api_object.add_json_patch(JsonPatch.add(f"{base}/0", after[0]))
        else:
            _add_container_claim(self._api_object, f"{base}/0", before[0], self._claim_name)
        return []


@jsii.implements(IValidation)
class _WireLateContainers:
    """At synth, gives the pod claim to regular containers added after `use_claim_template`.

    A cdk8s validation, because cdk8s runs validations before it renders objects; it reports
    nothing, and a second synth finds every container wired and adds nothing.
    """

    def __init__(self, api_object: ApiObject, pointer: Sequence[str], claim_name: str) -> None:
        self._api_object = api_object
        self._pointer = tuple(pointer)
        self._claim_name = claim_name

    def validate(self) -> list[str]:
        base = "/" + "/".join(self._pointer)
        for index, container in enumerate(_pod_spec_of(self._api_object, self._pointer).get("containers", [])):
            if not isinstance(container, Mapping):
                continue
            claims = (
                container.get("resources", {}).get("claims")
                if isinstance(container.get("resources"), Mapping)
                else None
            )
            if not any(isinstance(claim, Mapping) and claim.get("name") == self._claim_name for claim in claims or ()):
                _add_container_claim(self._api_object, f"{base}/containers/{index}", container, self._claim_name)
        return []
