"""Updates that change nothing a rule reads: admitted unchecked, by the policies and the webhook.

The control plane cleans objects up with UPDATEs, and admission sees them like any other
(kubernetes/kubernetes):

* the job controller removes its `batch.kubernetes.io/job-tracking` finalizer from every pod
  of a Job, finished or deleted, with a strategic merge patch (@ 6ae037f1db843e99547258d7dd292301a74ba0eb
  pkg/controller/job/job_controller.go `removeTrackingFinalizerPatch`, sent through
  `podControl.PatchPod`; `cleanupPodFinalizers` for the pods of a deleted Job);
* the garbage collector removes the `foregroundDeletion` and `orphan` finalizers from the
  objects it has finished with (@ 729007a86b89e2fb907db113e0715bd47520d718
  pkg/controller/garbagecollector/operations.go `removeFinalizer`), removes the owner
  references of deleted owners from their dependents, and sets `blockOwnerDeletion: false`
  on references that block a foreground deletion (@ abd60651f20b906e54ce2c89ad6d2b7790dba8a1
  pkg/controller/garbagecollector/patch.go `deleteOwnerRefJSONMergePatch`,
  `unblockOwnerReferencesStrategicMergePatch`);
* the resource-claim controller removes `resource.kubernetes.io/delete-protection` from a
  claim it has deallocated (@ 3de376ecf6955ccd1b2ae31ffb310ae082b11cb1
  pkg/controller/resourceclaim/controller.go `syncClaim`: `Update` with the finalizer
  deleted; the name is kubernetes/api @ 10b39a39bcee995dfe7cd5e8e7b922be5e46f1e2
  resource/v1/types.go `Finalizer`).

Reviewed in full, such an update is denied whenever the object would be denied now: its
claim template deleted (`kubectl delete -f`, `helm uninstall`), a rule enabled or a key
rotated since it was admitted.  The controller retries forever and the object never goes:
a pod stays Terminating, a Job keeps its `foregroundDeletion` finalizer.  Yet such an update
cannot make the object any worse, since every field a rule reads is as it was.

So an UPDATE is admitted without a lookup when the new object differs from the old one only
in `CLEANUP_METADATA`, in `status`, and in owner references taken away or unblocked
(`blockOwnerDeletion` changed; none added, none otherwise changed; at most
`MAX_COMPARED_OWNER_REFERENCES` a side, none holding a string longer than
`MAX_COMPARED_REFERENCE_CHARACTERS`, which keeps the CEL's cost bounded).  No rule reads those
fields, and what reads owner references (a claim's controller pod, DRA005 and the
reservation check) only loses a reference.  `status` cannot change through the object
itself: the API server copies the stored status over it before admission (e.g.
@ 2dd1588c490775be7cd90d0afc59c6dcef07032a pkg/registry/resource/resourceclaim/strategy.go
`PrepareForUpdate`), and the status subresource, where the scheduler reserves a claim for a
pod, is reviewed apart (`dra_guard.admission.reservations`).  Everything else, the spec
(an image, a toleration), labels and annotations (waivers, isolation tags), a new or altered
owner reference, is reviewed as before, whether or not the object is being deleted.

Rollouts.  A policy tightened after a Deployment exists (or a claim template deleted) makes
its ReplicaSet non-compliant, and the Deployment controller must still scale that old
ReplicaSet down once the user has fixed the Deployment: `scaleReplicaSet` sends an `Update`
of the ReplicaSet itself with `spec.replicas` and `SetReplicasAnnotations`'s
`deployment.kubernetes.io/desired-replicas` and `max-replicas` changed; rolling back to an
old ReplicaSet, `getNewReplicaSet` bumps its `deployment.kubernetes.io/revision` and
`revision-history` (@ 729007a86b89e2fb907db113e0715bd47520d718
pkg/controller/deployment/sync.go; the names and `SetNewReplicaSetAnnotations`:
@ 277391ee713412cf75e4b46ad5d6e5ae9844abf1 pkg/controller/deployment/util/deployment_util.go).
Denied, the old pods never go and the rollout stalls.  So on an apps/v1 ReplicaSet or
Deployment (`SCALED_KINDS`) an UPDATE may also change `spec.replicas` and those four
annotations (`ROLLOUT_ANNOTATIONS`, exactly: every other annotation, `dra-guard.io/` waivers
and declarations, KAI Scheduler's `gpu-fraction`, anything `getNewReplicaSet` copies from
the Deployment, is compared as before; so is the rest of `spec`, the pod template above all).

No rule reads those annotations nor `replicas`, but `replicas` decides how many pods the
template makes, so the exemption rests on those pods being checked when they are made.
Every rule whose policy judges a pod template judges the Pod too (their admission kinds:
DRA001 and DRA009 `POD_KINDS`, DRA005 and DRA016 `CONTROLLER_KINDS` and `Pod`; every other
rule judges claims, claim templates or DeviceClasses), with the same expressions over the
pod spec and its metadata, which the pod copies from the template; the webhook reviews the
Pod's CREATE as well, and it denies a Pod, never a controller, for a claim template that
does not exist.  DRA005 alone judges a Pod apart from its template: its policy denies a
Pod naming a ResourceClaim only when the Pod was made from a generateName.  The ReplicaSet
controller makes every pod from `GetPodFromTemplate` with `generateName: <replicaset>-`
(@ 1f8996f8cec98af38ab4cba237421b28c1cef9a3 pkg/controller/controller_utils.go), and a
Deployment's pods are its ReplicaSets'; the StatefulSet controller names its pods
`<set>-<ordinal>` (@ 0fe831c3e98b5dc6de63a86eb3822acbf7d3c761
pkg/controller/statefulset/stateful_set_utils.go `newStatefulSetPod`), which DRA005 does not
take for generated, so a StatefulSet scaled up could share a claim its template names with
no policy seeing it.  Hence ReplicaSets and Deployments only: a StatefulSet's (and every
other kind's) `replicas` is reviewed as before.

`unchanged_for_rules` is the webhook's form, `unchanged_for_rules_cel` the policies' and the
webhook configuration's: the same comparison, field by field (CEL's equality: values of
different types differ, but numbers compare by value).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dra_guard.ruleapi.admission_form import string, string_list

#: Metadata the API server and the controllers write while they clean up, and no rule reads.
CLEANUP_METADATA = (
    "deletionGracePeriodSeconds",
    "deletionTimestamp",
    "finalizers",
    "generation",
    "managedFields",
    "resourceVersion",
)
#: Top-level fields no rule reads (besides `metadata`, compared field by field).
UNREAD_FIELDS = ("status",)
#: The one field of an owner reference the garbage collector changes in place.
UNBLOCKED = "blockOwnerDeletion"
#: Owner references compared, at most, on each side: past these, the update is reviewed.
#: Real objects carry one or two; the bound keeps the policies' CEL within the API server's
#: cost limit whatever a tenant writes there (an error there would, under the webhook's
#: `Ignore`, skip the webhook).
MAX_COMPARED_OWNER_REFERENCES = 32
#: The longest string of an owner reference compared (its apiVersion, kind, name or uid):
#: past it, the update is reviewed.  The API server bounds none of them (kubernetes/apimachinery
#: @ eed236ceee2c19c2753a3d93ac0631dc20750454 pkg/api/validation/objectmeta.go
#: `validateOwnerReference` asks only that they are not empty), and comparing two costs a
#: tenth of the shorter's length, once for every pair of references: 32 of 40,000-character
#: kinds cost the condition twice the API server's limit.  A real one is far shorter (an
#: apiVersion of a 253-character group, a 253-character name, a 36-character uid).
MAX_COMPARED_REFERENCE_CHARACTERS = 512
#: The kinds whose scaling is admitted too (see above): `apiVersion` and `kind`.
SCALED_API_VERSION = "apps/v1"
SCALED_KINDS = ("Deployment", "ReplicaSet")
#: The field of their `spec` that may change: how many pods the template makes.
SCALE_FIELDS = ("replicas",)
#: The annotations the Deployment controller writes on a ReplicaSet as it scales it
#: (`SetReplicasAnnotations`) and as it rolls back to it (`SetNewReplicaSetAnnotations`);
#: exactly these, not the rest of `deployment.kubernetes.io/`.
ROLLOUT_ANNOTATIONS = (
    "deployment.kubernetes.io/desired-replicas",
    "deployment.kubernetes.io/max-replicas",
    "deployment.kubernetes.io/revision",
    "deployment.kubernetes.io/revision-history",
)
#: Annotations compared key by key, at most, on each side of a scaling: past these, it is
#: reviewed.  A ReplicaSet carries its Deployment's few; the bound keeps the CEL's cost
#: (about 30 units a key) far from its limit, which 256 KiB of one-letter keys would pass.
MAX_COMPARED_ANNOTATIONS = 256
#: The name of the matchCondition (true: the request is reviewed).
UPDATE_CONDITION = "changes-what-rules-read"


def same(left: Any, right: Any) -> bool:
    """CEL's equality on JSON values: values of different types differ (`true` is not `1`),
    except numbers, which compare by value.  Iterative, as `_cel_to_parse` is: a review's
    object may nest as deep as the JSON parser allows."""
    pending = [(left, right)]
    while pending:
        left, right = pending.pop()
        if isinstance(left, Mapping) and isinstance(right, Mapping):
            if left.keys() != right.keys():
                return False
            pending.extend((left[key], right[key]) for key in left)
        elif isinstance(left, list) and isinstance(right, list):
            if len(left) != len(right):
                return False
            pending.extend(zip(left, right, strict=True))
        elif not _same_scalar(left, right):
            return False
    return True


def _same_scalar(left: Any, right: Any) -> bool:
    """`same` of two values that are not both maps nor both lists."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, int | float) or isinstance(right, int | float):
        return isinstance(left, int | float) and isinstance(right, int | float) and left == right
    return not isinstance(left, Mapping | list) and type(left) is type(right) and bool(left == right)


def _same_except(new: Mapping[str, Any], old: Mapping[str, Any], ignored: tuple[str, ...]) -> bool:
    """Both maps hold the same keys with the same values, but for `ignored`."""
    return all(key in ignored or (key in old and same(value, old[key])) for key, value in new.items()) and all(
        key in ignored or key in new for key in old
    )


def _owners_only_released(new: Any, old: Any) -> bool:
    """Every owner reference of `new` is one of `old`'s, `blockOwnerDeletion` aside."""
    if new is None:
        return True
    if not isinstance(new, list) or not isinstance(old, list):
        return False
    if len(new) > MAX_COMPARED_OWNER_REFERENCES or len(old) > MAX_COMPARED_OWNER_REFERENCES:
        return False
    if not all(_comparable_reference(reference) for reference in (*new, *old)):
        return False
    return all(
        isinstance(reference, Mapping)
        and any(isinstance(was, Mapping) and _same_except(reference, was, (UNBLOCKED,)) for was in old)
        for reference in new
    )


def _comparable_reference(reference: Any) -> bool:
    """An owner reference none of whose strings is longer than `MAX_COMPARED_REFERENCE_CHARACTERS`."""
    return isinstance(reference, Mapping) and all(
        not isinstance(value, str) or len(value) <= MAX_COMPARED_REFERENCE_CHARACTERS for value in reference.values()
    )


def scaled_kind(obj: Mapping[str, Any]) -> bool:
    """Whether `obj` is a ReplicaSet or a Deployment, whose scaling is admitted (see above)."""
    return obj.get("apiVersion") == SCALED_API_VERSION and obj.get("kind") in SCALED_KINDS


def _annotations(metadata: Mapping[str, Any]) -> Any:
    """The annotations, `{}` where there are none (the Deployment controller adds the map)."""
    return metadata.get("annotations", {})


def unchanged_for_rules(new: Any, old: Any) -> bool:
    """Whether the update from `old` to `new` changes nothing any rule reads (see above)."""
    if not isinstance(new, Mapping) or not isinstance(old, Mapping):
        return False
    scaled = scaled_kind(new)
    if not _same_except(new, old, ("metadata", *UNREAD_FIELDS, *(("spec",) if scaled else ()))):
        return False
    if scaled:
        new_spec, old_spec = new.get("spec"), old.get("spec")
        if not isinstance(new_spec, Mapping) or not isinstance(old_spec, Mapping):
            return False
        if not _same_except(new_spec, old_spec, SCALE_FIELDS):
            return False
    new_metadata, old_metadata = new.get("metadata"), old.get("metadata")
    if not isinstance(new_metadata, Mapping) or not isinstance(old_metadata, Mapping):
        return False
    unread = (*CLEANUP_METADATA, "ownerReferences", *(("annotations",) if scaled else ()))
    if not _same_except(new_metadata, old_metadata, unread):
        return False
    if scaled:
        new_annotations, old_annotations = _annotations(new_metadata), _annotations(old_metadata)
        if not isinstance(new_annotations, Mapping) or not isinstance(old_annotations, Mapping):
            return False
        if len(new_annotations) > MAX_COMPARED_ANNOTATIONS or len(old_annotations) > MAX_COMPARED_ANNOTATIONS:
            return False
        if not _same_except(new_annotations, old_annotations, ROLLOUT_ANNOTATIONS):
            return False
    return _owners_only_released(new_metadata.get("ownerReferences"), old_metadata.get("ownerReferences"))


def _same_except_cel(new: str, old: str, ignored: tuple[str, ...]) -> str:
    """CEL: `_same_except` of two maps (iterated by key: the API server hands the policies
    the objects as unstructured JSON, k8s.io/apiserver `objectToResolveVal`)."""
    skip = string_list(ignored)
    return (
        f"{new}.all(k, k in {skip} || (k in {old} && {new}[k] == {old}[k])) && {old}.all(k, k in {skip} || k in {new})"
    )


def unchanged_for_rules_cel() -> str:
    """CEL: the request is an UPDATE that changes nothing any rule reads (`unchanged_for_rules`
    of `object` and `oldObject`).  Total: false where the request has no operation or no old
    object (a CREATE's `oldObject` is null).  One form for the kinds whose scaling is
    admitted, one for the others: a matchCondition has no variables to hold the choice."""
    scaled = (
        f"has(object.apiVersion) && object.apiVersion == {string(SCALED_API_VERSION)} && "
        f"has(object.kind) && object.kind in {string_list(SCALED_KINDS)}"
    )
    # `type(...) == map` rather than `!= null`: the same in cel-go, and total in the
    # emulator's cel-python, which has no `map != null`.
    return _guarded(
        "has(request.operation) && request.operation == 'UPDATE' && type(oldObject) == map",
        _guarded(scaled, _unchanged_cel(scaled=True), _unchanged_cel(scaled=False)),
    )


def _unchanged_cel(*, scaled: bool) -> str:
    """CEL: `unchanged_for_rules` of an UPDATE's objects, whose kind is known to be (or not
    to be) one of `SCALED_KINDS`."""
    new, old = "object.metadata.ownerReferences", "oldObject.metadata.ownerReferences"
    comparable = f"r.all(k, type(r[k]) != string || size(r[k]) <= {MAX_COMPARED_REFERENCE_CHARACTERS})"
    owners = _guarded(
        f"!has({new})",
        "true",
        _guarded(
            f"has({old}) && size({new}) <= {MAX_COMPARED_OWNER_REFERENCES} && "
            f"size({old}) <= {MAX_COMPARED_OWNER_REFERENCES} && "
            f"{new}.all(r, {comparable}) && {old}.all(r, {comparable})",
            f"{new}.all(r, {old}.exists(o, {_same_except_cel('r', 'o', (UNBLOCKED,))}))",
        ),
    )
    unread = (*CLEANUP_METADATA, "ownerReferences", *(("annotations",) if scaled else ()))
    metadata = f"({_same_except_cel('object.metadata', 'oldObject.metadata', unread)}) && ({owners})"
    if scaled:
        new_annotations, old_annotations = (
            f"(has({side}.metadata.annotations) ? {side}.metadata.annotations : {{}})"
            for side in ("object", "oldObject")
        )
        bounded = " && ".join(
            f"type({side}) == map && size({side}) <= {MAX_COMPARED_ANNOTATIONS}"
            for side in (new_annotations, old_annotations)
        )
        annotations = _guarded(bounded, _same_except_cel(new_annotations, old_annotations, ROLLOUT_ANNOTATIONS))
        metadata = f"({metadata}) && ({annotations})"
    metadata = _guarded("has(object.metadata) && has(oldObject.metadata)", metadata)
    unread_fields = ("metadata", *UNREAD_FIELDS, *(("spec",) if scaled else ()))
    top = f"({_same_except_cel('object', 'oldObject', unread_fields)})"
    if scaled:
        spec = _guarded(
            "has(object.spec) && has(oldObject.spec) && type(object.spec) == map && type(oldObject.spec) == map",
            _same_except_cel("object.spec", "oldObject.spec", SCALE_FIELDS),
        )
        top = f"{top} && ({spec})"
    return f"{top} && ({metadata})"


def _guarded(guard: str, then: str, otherwise: str = "false") -> str:
    """CEL: `then` where `guard` holds, else `otherwise`.  A conditional, not `&&`: cel-go's
    `false && error` is false, but cel-python raises on some errors (a comprehension over
    null) before it looks at the other side, and the emulator must see what cel-go sees."""
    return f"({guard}) ? ({then}) : ({otherwise})"


def reviewed_condition() -> dict[str, str]:
    """The matchCondition the policies and the webhook configuration share: false for an
    update that changes nothing any rule reads."""
    return {"name": UPDATE_CONDITION, "expression": f"!({unchanged_for_rules_cel()})"}
