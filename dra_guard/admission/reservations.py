"""The scheduler's reservation of a claim for a pod, which the webhook checks against that pod.

A pod is admitted against the templates and claims it names at that moment.  A template or
claim deleted and created again under the same name afterwards gives the pod what the new
one holds: a pending pod whose NIC claim `c` a tenant replaces with a GPU claim `c` is given
the GPU.  Devices reach a pod only through a claim reserved for it: kube-scheduler's
DynamicResources plugin writes the pod into the claim's `status.reservedFor` (with the
allocation) through the status subresource before it binds the pod (kubernetes
`pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go`, `bindClaim`), and the
kubelet starts no pod whose claims are not reserved for it.  So the webhook reviews that
update, for every pod it adds, against the claim being reserved, whoever writes it (another
scheduler's binder too): DRA016, the scrubber, as at the pod's admission.

A claim reserved for a pod group (a PodGroup, KEP-5729) gives its devices to every pod of
the group, which the claim does not name.  When the claim is one DRA016 requires the
scrubber for, such a reservation is refused: each pod's scrubber would wipe the memory the
others are using, and which pods hold it cannot be read from the update.  Any other claim
may be reserved for a group (DRA005 reports accelerator claims shared by a group at the
group's admission).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from dra_guard.model.manifest import items, mapping, text

#: The scheduler's claims for DRA-backed extended resources (KEP-5004), which no pod claim
#: names (the pod's containers ask for the resource: DRA001 decides them at its admission).
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"


class Consumer(NamedTuple):
    name: str
    uid: str


class GroupConsumer(NamedTuple):
    """A consumer in `reservedFor` that is not a pod: a PodGroup (DRAWorkloadResourceClaims,
    KEP-5729: a claim a pod group declares "is reserved for the PodGroup in
    ResourceClaimStatus.ReservedFor rather than for individual Pods", kubernetes/api @ 10b39a39
    core/v1/types.go `PodResourceClaim`), or any other resource a controller names."""

    api_group: str
    resource: str
    name: str
    uid: str

    def __str__(self) -> str:
        return f"{self.resource}.{self.api_group}/{self.name}" if self.api_group else f"{self.resource}/{self.name}"


def is_reservation(request: Mapping[str, Any]) -> bool:
    """Whether the request updates a ResourceClaim's status (where reservations are written)."""
    kind = request.get("kind")
    return (
        request.get("subResource") == "status"
        and request.get("operation") == "UPDATE"
        and isinstance(kind, Mapping)
        and kind.get("group") == "resource.k8s.io"
        and kind.get("kind") == "ResourceClaim"
    )


def _pods_reserved_for(claim: Any) -> set[Consumer]:
    found: set[Consumer] = set()
    for raw in items(mapping(mapping(claim).get("status")).get("reservedFor")):
        entry = mapping(raw)
        if entry.get("resource") == "pods" and not entry.get("apiGroup"):
            found.add(Consumer(str(entry.get("name") or ""), str(entry.get("uid") or "")))
    return found


def reserved_pods(claim: Any) -> list[Consumer]:
    """Every pod the claim is reserved for."""
    return sorted(_pods_reserved_for(claim))


def new_pods(claim: Any, old_claim: Any) -> list[Consumer]:
    """The pods the update reserves the claim for that the old claim was not reserved for."""
    return sorted(_pods_reserved_for(claim) - _pods_reserved_for(old_claim))


def _groups_reserved_for(claim: Any) -> set[GroupConsumer]:
    found: set[GroupConsumer] = set()
    for raw in items(mapping(mapping(claim).get("status")).get("reservedFor")):
        entry = mapping(raw)
        if not (entry.get("resource") == "pods" and not entry.get("apiGroup")):
            found.add(GroupConsumer(*(str(entry.get(key) or "") for key in ("apiGroup", "resource", "name", "uid"))))
    return found


def reserved_groups(claim: Any) -> list[GroupConsumer]:
    """Every consumer other than a pod the claim is reserved for."""
    return sorted(_groups_reserved_for(claim))


def new_groups(claim: Any, old_claim: Any) -> list[GroupConsumer]:
    """The consumers other than pods the update newly reserves the claim for: every pod of
    such a group gets the claim's devices, and the pods are not named in the claim."""
    return sorted(_groups_reserved_for(claim) - _groups_reserved_for(old_claim))


def shares_a_pod_claim(claim: Any, old_claim: Any) -> bool:
    """Whether the update leaves the claim reserved for more than one consumer while reserving
    it for a new one: a claim made for one pod (the ownerReference a tenant may take away) or
    a claim two pods name, in use by two pods at once; or a pod group's claim (every pod of
    the group uses it) reserved for a pod or another group too, or a pod's for a group."""
    pods, groups = _pods_reserved_for(claim), _groups_reserved_for(claim)
    added = pods - _pods_reserved_for(old_claim) or groups - _groups_reserved_for(old_claim)
    return bool(added) and len(pods) + len(groups) > 1


def group_member(claim: Mapping[str, Any], name: str = "pod-group-member") -> dict[str, Any]:
    """A pod that uses `claim` by name and runs nothing else: what DRA016 asks of any pod of a
    group the claim is reserved for, before that pod's own init containers are known (and,
    two of them, what DRA005 says of two pods using the claim)."""
    metadata = mapping(claim.get("metadata"))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": text(metadata.get("namespace"))},
        "spec": {
            "containers": [{"name": "member", "image": "any", "resources": {"claims": [{"name": "claim"}]}}],
            "resourceClaims": [{"name": "claim", "resourceClaimName": text(metadata.get("name"))}],
        },
    }


def pod_using(pod: Mapping[str, Any], claim: Mapping[str, Any]) -> dict[str, Any] | None:
    """The pod as the check sees it with this claim: its pod claims that get the claim (naming
    it, or made from a template for this pod claim), each naming the claim itself; None when
    no pod claim gets it.

    A template's claim is the one the pod's `status.resourceClaimStatuses` names for the pod
    claim, and the pod must own it, as the scheduler and the kubelet find it
    (kubernetes/dynamic-resource-allocation @ 3d036712930cdac0b0d46c4c21316a78147c551f
    resourceclaim/resourceclaim.go `Name`, `IsForPod`); the controller writes that status
    (`pods/status`, which tenants are not given).  The claim's
    `resource.kubernetes.io/pod-claim-name` annotation is no evidence: a tenant may rewrite it
    to the pod claim the scrubber holds."""
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return None
    metadata = mapping(claim.get("metadata"))
    name = text(metadata.get("name"))
    pod_uid = mapping(pod.get("metadata")).get("uid")
    owned = any(
        mapping(owner).get("kind") == "Pod" and mapping(owner).get("uid") == pod_uid
        for owner in items(metadata.get("ownerReferences"))
    )
    made_for = {
        mapping(status).get("name")
        for status in items(mapping(pod.get("status")).get("resourceClaimStatuses"))
        if mapping(status).get("resourceClaimName") == name
    }
    using = []
    for raw in items(spec.get("resourceClaims")):
        entry = mapping(raw)
        by_name = entry.get("resourceClaimName") == name
        from_template = bool(entry.get("resourceClaimTemplateName")) and owned and entry.get("name") in made_for
        if by_name or from_template:
            using.append({"name": entry.get("name"), "resourceClaimName": name})
    if not using:
        return None
    return {**pod, "spec": {**spec, "resourceClaims": using}}


#: The pod spec fields that hold containers: most of a large pod's JSON (their env, args).
_CONTAINER_FIELDS = ("containers", "initContainers", "ephemeralContainers")


def sharing_view(pod: Mapping[str, Any]) -> dict[str, Any]:
    """What DRA005 reads of a pod `pod_using` gave, to check it beside other pods of one claim:
    the pod as it is but for its containers, in whose place one container uses each of its
    claims.  A review that holds several pods at once holds little of each: a pod may be
    1.5 MiB of JSON (etcd's limit), many times that once parsed, and its containers' fields
    say nothing of which claims it shares."""
    spec = mapping(pod.get("spec"))
    claims = items(spec.get("resourceClaims"))
    user = {
        "name": "member",
        "image": "any",
        "resources": {"claims": [{"name": mapping(c).get("name")} for c in claims]},
    }
    return {
        **{key: value for key, value in pod.items() if key not in ("spec", "status")},
        "spec": {**{key: value for key, value in spec.items() if key not in _CONTAINER_FIELDS}, "containers": [user]},
    }


def is_extended_resource_claim(claim: Mapping[str, Any]) -> bool:
    annotations = mapping(mapping(claim.get("metadata")).get("annotations"))
    return annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true"
