"""An oracle of what a Kubernetes cluster creates from an object set, and who writes it.

The tests give it the objects a user applies (plain dicts) and get back every object the
control plane then creates -- the ReplicaSet of a Deployment, the Job of a CronJob, the Pods of
each workload, the ResourceClaims the resource-claim controller makes from a pod's
ResourceClaimTemplates, and the claim kube-scheduler makes for DRA-backed extended resources
(KEP-5004) -- each as a `Created` naming the identity whose request writes it, so a test can
put every object through a front end as the API server would hand it over.

This module is an independent model of upstream Kubernetes, written from its source; it
imports nothing of dra-guard, so a misreading in dra-guard cannot hide here. Every behaviour
below cites the file and commit it was read from (repository kubernetes/kubernetes unless
another is named; the index held some files only at older commits, said where it matters).

Pods from pod templates (``pkg/controller/controller_utils.go``, ``GetPodFromTemplate`` and
``getPodsPrefix``, commit 1f8996f8cec98af38ab4cba237421b28c1cef9a3; ``CreatePodsWithGenerateName``
as job_controller.go below calls it): a pod copies the template's labels, annotations and
finalizers and its spec, gets ``generateName: <controller name>-`` and one ownerReference to its
controller with ``controller: true`` and ``blockOwnerDeletion: true`` (``validateControllerRef``
refuses anything else); the namespace is the controller's (the client creates in it). That
commit also added the legacy ``kubernetes.io/created-by`` annotation; current excerpts of the
same function (not pinnable to a commit) copy the template's annotations only, as modelled.

* Deployment (``pkg/controller/deployment/sync.go`` ``getNewReplicaSet``, commit
  737067c1d67d6118c3c3abf58b4f00e67a2409df; its current form, read in an excerpt the index could
  not pin, also gives the ReplicaSet the template's labels and a controller reference): a
  ReplicaSet ``<deployment>-<pod-template-hash>`` whose template and selector gain the
  ``pod-template-hash`` label (``DefaultDeploymentUniqueLabelKey``, kubernetes/api
  apps/v1/types.go, commit 10b39a39bcee995dfe7cd5e8e7b922be5e46f1e2), owned by the Deployment,
  with the Deployment's annotations less the skipped ones and the revision, desired-replicas and
  max-replicas annotations (``pkg/controller/deployment/util/deployment_util.go``
  ``SetNewReplicaSetAnnotations``, commit 277391ee713412cf75e4b46ad5d6e5ae9844abf1). Written by
  the deployment controller; its pods by the replicaset controller.
* StatefulSet (``pkg/controller/statefulset/stateful_set_utils.go`` ``newStatefulSetPod``,
  ``updateIdentity``, ``updateStorage``, ``setPodRevision``, commit
  0fe831c3e98b5dc6de63a86eb3822acbf7d3c761): pod ``<set>-<ordinal>``, ``spec.hostname`` the pod
  name, ``spec.subdomain`` the service name, a volume per volumeClaimTemplate naming claim
  ``<template>-<set>-<ordinal>``, the ``controller-revision-hash`` label (the revision's name,
  ``<set>-<hash>``; ``history.ControllerRevisionName`` was not read). Current releases add
  the ``statefulset.kubernetes.io/pod-name`` and (PodIndexLabel) ``apps.kubernetes.io/pod-index``
  labels in ``updateIdentity``; their keys are in kubernetes/api apps/v1/types.go at the commit
  above, the code that sets them was read only in an excerpt the index could not pin to a commit.
* Job (``pkg/controller/job/job_controller.go`` ``manageJob``, commit
  6ae037f1db843e99547258d7dd292301a74ba0eb; ``pkg/controller/job/indexed_job_utils.go``, commit
  78fc8e44052f699bf598f84b697b41e5a328c9c5): the template gains the
  ``batch.kubernetes.io/job-tracking`` finalizer; an Indexed job's pods get the
  ``batch.kubernetes.io/job-completion-index`` annotation and label, ``spec.hostname
  <job>-<index>``, the ``JOB_COMPLETION_INDEX`` environment variable and ``generateName
  <job>-<index>-`` (``podGenerateNameWithIndex``); other jobs' pods ``generateName <job>-``.
  Before that the API server has added the ``job-name``/``controller-uid`` labels (legacy and
  ``batch.kubernetes.io/`` ones) to the template unless ``manualSelector`` is set
  (``pkg/registry/batch/job/strategy.go`` ``generateSelector``, commit
  36f36813ae40015c94d2df1493447edaa145dd5a).
* CronJob (``pkg/controller/cronjob/utils.go`` ``getJobFromTemplate2``, read in an excerpt the
  index could not pin; the stored file, commit 77dee9bb4e18d643fe3d1f04eb319c325307d57e, is the
  pre-v2 form with the same name scheme in seconds): a Job ``<cronjob>-<scheduled time in
  minutes since the epoch>`` with the job template's labels and annotations plus
  ``batch.kubernetes.io/cronjob-scheduled-timestamp``, owned by the CronJob.
* DaemonSet (``pkg/controller/daemon/util/daemonset_util.go`` ``CreatePodTemplate`` and
  ``ReplaceDaemonSetPodNodeNameNodeAffinity``, commit cfe46b753cd0c9dc8a2cb88f20a9bef33be21d82):
  one pod per node with the ``controller-revision-hash`` label, the daemon tolerations listed at
  that commit (later releases add more) and a node affinity on ``metadata.name``.

Claims from templates (``pkg/controller/resourceclaim/controller.go`` ``handleClaim``, commit
003e86297d18a8538c9da3619871393f9703bf70): for each ``pod.spec.resourceClaims`` entry naming a
template in the pod's namespace, a ResourceClaim with ``generateName <pod>-<pod claim name>-``
(when longer than 57 characters both parts are cut in proportion and joined by one ``-``, with
no trailing dash), the annotations of ``template.spec.metadata`` plus
``resource.kubernetes.io/pod-claim-name: <pod claim name>``, the labels of
``template.spec.metadata``, one ownerReference to the Pod (``controller`` and
``blockOwnerDeletion`` true) and ``spec = template.spec.spec``. Nothing else of the template is
copied. That commit writes ``resource.k8s.io/v1alpha3`` (``ResourceV1alpha3()``); the
controller's current tests (``controller_test.go`` in its ``resource/v1`` form, which the index
held without a commit) run it on ``resource/v1`` informers and expect claims of this same shape,
so current releases write ``resource.k8s.io/v1``. Claims are read back in whatever version a
client asks for, hence the ``api_version`` parameters (`convert_claim_spec`).

Claims for DRA-backed extended resources
(``pkg/scheduler/framework/plugins/dynamicresources/extendeddynamicresources.go``,
``preFilterExtendedResources``, ``createRequestsAndMappings``, ``createExtendedResourceClaimInAPI``,
commits 16913111deb1a4c4ff76f4ba7ffd9ebef397a303 and 7dbde21cc771ce3dd0b48eab0c90d3a07b3c4da8):
when a pod's containers request an extended resource that a DeviceClass maps -- its
``spec.extendedResourceName`` or, always, ``deviceclass.resource.kubernetes.io/<class>``
(``extended/cache.go`` ``OnDeviceClassEvent``, commit 60c1ddcbd272093cc953d7ad75fadd1a51aa641c) --
the scheduler creates in PreBind one ``resource.k8s.io/v1`` claim with ``generateName
<pod>-extended-resources-``, the annotation ``resource.kubernetes.io/extended-resource-claim:
"true"``, one ownerReference to the Pod with ``controller: true`` (no ``blockOwnerDeletion`` at
those commits) and one ExactCount request per (container, resource) named
``container-<i>-request-<j>`` (``i`` over initContainers then containers, ``j`` the resource's
index among the container's sorted request names), init containers reusing what later
long-lived containers request, sorted by name. The oracle assumes no node offers the resource
through a device plugin (then the scheduler asks DRA for it). Requests default to limits
(``SetDefaults_Pod``, pkg/apis/core/v1/defaults.go, commit
e34b0935e09e39e5e7fb74b8f6ad141107d3b90e).

Writers. kube-controller-manager gives each controller a client for a service account in
kube-system named as in ``cmd/kube-controller-manager/app/apps.go``, ``batch.go`` and
``core.go`` (``ClientOrDie(logger, "<name>")``, commit 00115d34eb4e8cdc58f902189cfafc95e369e9ba)
when run with ``--use-service-account-credentials`` (``createClientBuilders`` in
``controllermanager.go``, same commit); otherwise every controller uses the manager's own
kubeconfig, ``system:kube-controller-manager`` as kubeadm provisions it. The RBAC roles of the
same names are in ``plugin/pkg/auth/authorizer/rbac/bootstrappolicy/controller_policy.go``
(commit 003e3121c8bd85960c626aca0031f3ac1a32dd24). The scheduler writes with its own client,
the user the bootstrap policy binds the ``system:kube-scheduler`` role to (``policy.go``
``clusterRoleBindings``, read at commit 53f1b9d6f8de259644c05a25aa7ac8c6a67258e2).

Names. A real API server fills ``name`` from ``generateName`` by keeping at most 58 characters
and appending 5 random characters from ``bcdfghjklmnpqrstvwxz2456789``
(``staging/src/k8s.io/apiserver/pkg/storage/names/generate.go``, commit
18b46af2bc28de9f6f15b9359c8789735bef1b7e). The oracle appends 5 characters of that alphabet
taken from a SHA-256 of the generateName and a seed (the replica's index), so names are
deterministic and look like ``kubectl get`` shows them. Hashes the controllers compute
(pod-template-hash, controller revisions) are FNV-32a over canonical JSON here, not over
upstream's spew printing: same shape, not the same value. UIDs are UUID5s of the object's
identity.

Not modelled: API-server defaulting of what controllers write, status and later updates
(finalizers the scheduler adds when it allocates, pod status), PersistentVolumeClaims of
StatefulSets, PodGroup claims (WorkloadResourceClaims), per-index backoff annotations, and
the created-by annotation above.
"""

from __future__ import annotations

import copy
import datetime
import hashlib
import json
import math
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

Obj = dict[str, Any]

# ---------------------------------------------------------------- identities

#: Service-account usernames kube-controller-manager's controllers use with
#: --use-service-account-credentials (cmd/kube-controller-manager/app, commit 00115d34).
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:kube-system:"
#: Without --use-service-account-credentials every controller writes as the manager itself.
KUBE_CONTROLLER_MANAGER = "system:kube-controller-manager"
#: The scheduler's user (bootstrappolicy policy.go binds system:kube-scheduler to it).
KUBE_SCHEDULER = "system:kube-scheduler"
#: The user the tests' own objects are written by, unless they name another.
DEFAULT_TENANT = "alice"

#: The client name (= service account) of the controller that creates each kind's children.
CONTROLLER_CLIENTS: Mapping[str, str] = {
    "Deployment": "deployment-controller",
    "ReplicaSet": "replicaset-controller",
    "StatefulSet": "statefulset-controller",
    "Job": "job-controller",
    "CronJob": "cronjob-controller",
    "DaemonSet": "daemon-set-controller",
    "ResourceClaimTemplate": "resource-claim-controller",
}


def controller_identity(client: str, *, use_service_account_credentials: bool = True) -> str:
    """The username in `request.userInfo` when the controller named `client` writes."""
    if use_service_account_credentials:
        return SERVICE_ACCOUNT_PREFIX + client
    return KUBE_CONTROLLER_MANAGER


#: The resource-claim controller, as kube-controller-manager runs it by default in kubeadm.
RESOURCE_CLAIM_CONTROLLER = controller_identity("resource-claim-controller")

# ---------------------------------------------------------------- upstream names

POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
DEVICE_CLASS_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"
POD_TEMPLATE_HASH_LABEL = "pod-template-hash"
CONTROLLER_REVISION_HASH_LABEL = "controller-revision-hash"
STATEFULSET_POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")
CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")
CRONJOB_SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
DESIRED_REPLICAS_ANNOTATION = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS_ANNOTATION = "deployment.kubernetes.io/max-replicas"
#: annotationsToSkip in deployment_util.go (commit 277391ee): never copied to a ReplicaSet.
_SKIPPED_DEPLOYMENT_ANNOTATIONS = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        REVISION_ANNOTATION,
        "deployment.kubernetes.io/revision-history",
        DESIRED_REPLICAS_ANNOTATION,
        MAX_REPLICAS_ANNOTATION,
        "deprecated.deployment.rollback.to",
    }
)
#: The claim API the controllers write with on current releases.
CURRENT_RESOURCE_API = "resource.k8s.io/v1"
#: Versions whose device requests are flat (no `exactly`).
_FLAT_RESOURCE_APIS = frozenset({"resource.k8s.io/v1alpha3", "resource.k8s.io/v1beta1"})

#: names.SimpleNameGenerator: 63-character names, 5 random characters.
MAX_GENERATED_NAME_LENGTH = 58
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
#: handleClaim's maxBaseLen.
_CLAIM_BASE_LENGTH = 57
_DNS_SUBDOMAIN_LENGTH = 253
#: The namespace `kubectl apply` without -n lands an object in.
DEFAULT_NAMESPACE = "default"
#: The nominal start time of the Job a CronJob creates (any fixed minute will do).
DEFAULT_SCHEDULED_TIME = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
_UID_NAMESPACE = uuid.UUID("5b1f4a8e-6f0e-4d0e-9a57-3c1e2f0b7d11")


@dataclass(frozen=True)
class Created:
    """An object as it reaches the API server, and the username that writes it."""

    obj: Obj
    writer: str

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind", ""))


# ---------------------------------------------------------------- naming helpers


def generated_name(generate_name: str, seed: str = "") -> str:
    """The name a server gives `generate_name`: at most 58 characters of it and 5 more
    (deterministic here: from a SHA-256 of the generateName and `seed`)."""
    digest = hashlib.sha256(f"{generate_name}\0{seed}".encode()).digest()
    return generate_name[:MAX_GENERATED_NAME_LENGTH] + "".join(_ALPHANUMS[b % len(_ALPHANUMS)] for b in digest[:5])


def claim_generate_name(pod_name: str, pod_claim_name: str) -> str:
    """handleClaim's generateName: ``<pod>-<claim>-``, or both parts cut in proportion (and no
    trailing dash) when that is longer than 57 characters."""
    generate_name = f"{pod_name}-{pod_claim_name}-"
    if len(generate_name) > _CLAIM_BASE_LENGTH:
        full = len(generate_name)
        generate_name = (
            pod_name[: len(pod_name) * _CLAIM_BASE_LENGTH // full]
            + "-"
            + pod_claim_name[: len(pod_claim_name) * _CLAIM_BASE_LENGTH // full]
        )
    return generate_name


def _pods_prefix(controller_name: str) -> str:
    """getPodsPrefix: ``<name>-`` unless that is no valid pod-name prefix (too long)."""
    prefix = f"{controller_name}-"
    return prefix if len(prefix) <= _DNS_SUBDOMAIN_LENGTH else controller_name


def _safe_encode(text: str) -> str:
    """rand.SafeEncodeString: each byte to the alphabet, so no vowels or look-alikes."""
    return "".join(_ALPHANUMS[byte % len(_ALPHANUMS)] for byte in text.encode())


def template_hash(template: Any) -> str:
    """A stand-in for controller.ComputeHash: FNV-32a of canonical JSON, safe-encoded."""
    value = 0x811C9DC5
    for byte in json.dumps(template, sort_keys=True, separators=(",", ":")).encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return _safe_encode(str(value))


def uid_of(obj: Mapping[str, Any]) -> str:
    """The object's uid, or a UUID5 of its identity (the oracle's objects are never stored)."""
    metadata = _metadata(obj)
    if isinstance(metadata.get("uid"), str):
        return str(metadata["uid"])
    key = "/".join(
        str(part) for part in (obj.get("apiVersion"), obj.get("kind"), metadata.get("namespace"), _name(obj))
    )
    return str(uuid.uuid5(_UID_NAMESPACE, key))


def controller_ref(owner: Mapping[str, Any], *, block_owner_deletion: bool = True) -> Obj:
    """metav1.NewControllerRef (controller and blockOwnerDeletion true)."""
    ref: Obj = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": _name(owner),
        "uid": uid_of(owner),
        "controller": True,
    }
    if block_owner_deletion:
        ref["blockOwnerDeletion"] = True
    return ref


# ---------------------------------------------------------------- small accessors


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


def _name(obj: Mapping[str, Any]) -> str:
    return str(_metadata(obj).get("name", ""))


def namespace_of(obj: Mapping[str, Any], default: str = DEFAULT_NAMESPACE) -> str:
    namespace = _metadata(obj).get("namespace")
    return str(namespace) if namespace else default


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _string_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


def _set_map(metadata: Obj, key: str, value: Mapping[str, str]) -> None:
    """Go's omitempty: an empty map is not written."""
    if value:
        metadata[key] = dict(value)
    else:
        metadata.pop(key, None)


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


# ---------------------------------------------------------------- pods from templates


def pod_from_template(
    template: Mapping[str, Any], parent: Mapping[str, Any], namespace: str, *, generate_name: str | None = None
) -> Obj:
    """GetPodFromTemplate + CreatePodsWithGenerateName: the pod a controller asks for."""
    template_metadata = _metadata(template)
    metadata: Obj = {"generateName": generate_name or _pods_prefix(_name(parent)), "namespace": namespace}
    _set_map(metadata, "labels", _string_map(template_metadata.get("labels")))
    _set_map(metadata, "annotations", _string_map(template_metadata.get("annotations")))
    finalizers = template_metadata.get("finalizers")
    if isinstance(finalizers, list) and finalizers:
        metadata["finalizers"] = list(finalizers)
    metadata["ownerReferences"] = [controller_ref(parent)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": copy.deepcopy(template.get("spec", {}))}


_METADATA_ORDER = ("name", "generateName", "namespace", "uid", "labels", "annotations", "finalizers", "ownerReferences")


def _tidy(obj: Obj) -> Obj:
    """Give `obj` its uid and its metadata in the order `kubectl get -o yaml` shows."""
    metadata = obj["metadata"]
    metadata["uid"] = uid_of(obj)
    ordered = {key: metadata[key] for key in _METADATA_ORDER if key in metadata}
    obj["metadata"] = {**ordered, **{k: v for k, v in metadata.items() if k not in ordered}}
    return obj


def _named(pod: Obj, seed: str) -> Obj:
    pod["metadata"]["name"] = generated_name(pod["metadata"]["generateName"], seed)
    return _tidy(pod)


def _max_surge(deployment: Mapping[str, Any], replicas: int) -> int:
    """deployment_util MaxSurge: 0 for Recreate; the rolling update's maxSurge (default 25%),
    a percentage rounded up."""
    strategy = _spec(deployment).get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return 0
    surge = (strategy.get("rollingUpdate") or {}).get("maxSurge", "25%")
    if isinstance(surge, str) and surge.endswith("%"):
        return math.ceil(replicas * int(surge[:-1]) / 100)
    return _int(surge, 0)


def replica_set_of(deployment: Mapping[str, Any], namespace: str) -> Obj:
    """getNewReplicaSet: the ReplicaSet a new Deployment gets."""
    spec = _spec(deployment)
    replicas = _int(spec.get("replicas"), 1)
    template: Obj = copy.deepcopy(dict(spec.get("template") or {}))
    pod_hash = template_hash(template)
    template_metadata = template.setdefault("metadata", {})
    template_metadata["labels"] = {**_string_map(template_metadata.get("labels")), POD_TEMPLATE_HASH_LABEL: pod_hash}
    selector: Obj = copy.deepcopy(dict(spec.get("selector") or {}))
    selector["matchLabels"] = {**_string_map(selector.get("matchLabels")), POD_TEMPLATE_HASH_LABEL: pod_hash}
    annotations = {
        key: value
        for key, value in _string_map(_metadata(deployment).get("annotations")).items()
        if key not in _SKIPPED_DEPLOYMENT_ANNOTATIONS
    }
    annotations[REVISION_ANNOTATION] = "1"
    annotations[DESIRED_REPLICAS_ANNOTATION] = str(replicas)
    annotations[MAX_REPLICAS_ANNOTATION] = str(replicas + _max_surge(deployment, replicas))
    rs_spec: Obj = {"replicas": replicas, "selector": selector, "template": template}
    if _int(spec.get("minReadySeconds"), 0):
        rs_spec["minReadySeconds"] = spec["minReadySeconds"]
    rs: Obj = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{_name(deployment)}-{pod_hash}",
            "namespace": namespace,
            "labels": dict(template_metadata["labels"]),
            "annotations": annotations,
            "ownerReferences": [controller_ref(deployment)],
        },
        "spec": rs_spec,
    }
    return _tidy(rs)


def _replica_set_pods(rs: Mapping[str, Any], namespace: str) -> list[Obj]:
    spec = _spec(rs)
    template = spec.get("template") or {}
    return [_named(pod_from_template(template, rs, namespace), str(i)) for i in range(_int(spec.get("replicas"), 1))]


def _stateful_set_pods(sts: Mapping[str, Any], namespace: str, *, pod_index_label: bool) -> list[Obj]:
    spec = _spec(sts)
    template = spec.get("template") or {}
    name = _name(sts)
    revision = f"{name}-{template_hash(template)}"
    start = _int((spec.get("ordinals") or {}).get("start"), 0)
    claim_templates = sorted((t for t in spec.get("volumeClaimTemplates") or [] if isinstance(t, Mapping)), key=_name)
    pods = []
    for ordinal in range(start, start + _int(spec.get("replicas"), 1)):
        pod = pod_from_template(template, sts, namespace)
        pod_name = f"{name}-{ordinal}"
        pod["metadata"]["name"] = pod_name
        labels = pod["metadata"].setdefault("labels", {})
        labels[STATEFULSET_POD_NAME_LABEL] = pod_name
        if pod_index_label:
            labels[POD_INDEX_LABEL] = str(ordinal)
        labels[CONTROLLER_REVISION_HASH_LABEL] = revision
        pod_spec = pod["spec"]
        pod_spec["hostname"] = pod_name
        if spec.get("serviceName"):
            pod_spec["subdomain"] = spec["serviceName"]
        if claim_templates:
            claimed = {_name(t) for t in claim_templates}
            volumes = [
                {"name": _name(t), "persistentVolumeClaim": {"claimName": f"{_name(t)}-{name}-{ordinal}"}}
                for t in claim_templates
            ]
            pod_spec["volumes"] = volumes + [v for v in pod_spec.get("volumes", []) if v.get("name") not in claimed]
        pods.append(_tidy(pod))
    return pods


def job_template_as_stored(job: Mapping[str, Any]) -> Obj:
    """The Job's pod template after the API server's generateSelector (unless manualSelector)."""
    spec = _spec(job)
    template: Obj = copy.deepcopy(dict(spec.get("template") or {}))
    if not spec.get("manualSelector"):
        labels = _string_map((template.get("metadata") or {}).get("labels"))
        for key in JOB_NAME_LABELS:
            labels.setdefault(key, _name(job))
        for key in CONTROLLER_UID_LABELS:
            labels.setdefault(key, uid_of(job))
        template.setdefault("metadata", {})["labels"] = labels
    return template


def _index_generate_name(job_name: str, index: int) -> str:
    """podGenerateNameWithIndex."""
    append = f"-{index}-"
    prefix = job_name + append
    if len(prefix) > MAX_GENERATED_NAME_LENGTH:
        prefix = prefix[: MAX_GENERATED_NAME_LENGTH - len(append)] + append
    return prefix


def _add_completion_index_env(pod_spec: Obj, *, pod_index_label: bool) -> None:
    where = "labels" if pod_index_label else "annotations"
    env_var = {
        "name": COMPLETION_INDEX_ENV,
        "valueFrom": {"fieldRef": {"fieldPath": f"metadata.{where}['{JOB_COMPLETION_INDEX}']"}},
    }
    for key in ("initContainers", "containers"):
        for container in pod_spec.get(key) or []:
            env = container.setdefault("env", [])
            if not any(item.get("name") == COMPLETION_INDEX_ENV for item in env):
                env.append(copy.deepcopy(env_var))


def _job_pods(job: Mapping[str, Any], namespace: str, *, pod_index_label: bool) -> list[Obj]:
    spec = _spec(job)
    if spec.get("suspend"):
        return []
    parallelism = _int(spec.get("parallelism"), 1)
    completions = spec.get("completions")
    indexed = spec.get("completionMode") == "Indexed"
    template = job_template_as_stored(job)
    metadata = template.setdefault("metadata", {})
    finalizers = list(metadata.get("finalizers") or [])
    if JOB_TRACKING_FINALIZER not in finalizers:
        finalizers.append(JOB_TRACKING_FINALIZER)
    metadata["finalizers"] = finalizers
    if indexed:
        _add_completion_index_env(template.setdefault("spec", {}), pod_index_label=pod_index_label)
        count = min(parallelism, _int(completions, parallelism))
        pods = []
        for index in range(count):
            indexed_template = copy.deepcopy(template)
            index_metadata = indexed_template["metadata"]
            index_metadata["annotations"] = {
                **_string_map(index_metadata.get("annotations")),
                JOB_COMPLETION_INDEX: str(index),
            }
            if pod_index_label:
                index_metadata["labels"] = {
                    **_string_map(index_metadata.get("labels")),
                    JOB_COMPLETION_INDEX: str(index),
                }
            indexed_template["spec"]["hostname"] = f"{_name(job)}-{index}"
            pod = pod_from_template(
                indexed_template, job, namespace, generate_name=_index_generate_name(_name(job), index)
            )
            pods.append(_named(pod, str(index)))
        return pods
    count = parallelism if completions is None else min(parallelism, _int(completions, parallelism))
    return [_named(pod_from_template(template, job, namespace), str(i)) for i in range(count)]


def job_of(cron_job: Mapping[str, Any], namespace: str, scheduled_time: datetime.datetime) -> Obj:
    """getJobFromTemplate2: the Job a CronJob starts at `scheduled_time`."""
    job_template = _spec(cron_job).get("jobTemplate") or {}
    template_metadata = job_template.get("metadata") or {}
    zone = _spec(cron_job).get("timeZone")
    local = scheduled_time.astimezone(ZoneInfo(zone) if zone else datetime.timezone.utc)
    annotations = _string_map(template_metadata.get("annotations"))
    annotations[CRONJOB_SCHEDULED_TIMESTAMP] = local.isoformat().replace("+00:00", "Z")
    metadata: Obj = {
        "name": f"{_name(cron_job)}-{int(scheduled_time.timestamp()) // 60}",
        "namespace": namespace,
        "annotations": annotations,
        "ownerReferences": [controller_ref(cron_job)],
    }
    _set_map(metadata, "labels", _string_map(template_metadata.get("labels")))
    job: Obj = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": copy.deepcopy(job_template.get("spec", {})),
    }
    return _tidy(job)


#: AddOrUpdateDaemonPodTolerations at commit cfe46b75 (less the removed OutOfDisk ones).
_DAEMON_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)


def _daemon_set_pods(ds: Mapping[str, Any], namespace: str, nodes: Sequence[str]) -> list[Obj]:
    template: Obj = copy.deepcopy(dict(_spec(ds).get("template") or {}))
    revision = template_hash(template)
    pod_spec = template.setdefault("spec", {})
    tolerations = pod_spec.setdefault("tolerations", [])
    wanted = list(_DAEMON_TOLERATIONS)
    if pod_spec.get("hostNetwork"):
        wanted.append(("node.kubernetes.io/network-unavailable", "NoSchedule"))
    for key, effect in wanted:
        if not any(t.get("key") == key and t.get("effect") == effect for t in tolerations):
            tolerations.append({"key": key, "operator": "Exists", "effect": effect})
    metadata = template.setdefault("metadata", {})
    metadata["labels"] = {**_string_map(metadata.get("labels")), CONTROLLER_REVISION_HASH_LABEL: revision}
    pods = []
    for node in nodes:
        pod = pod_from_template(template, ds, namespace)
        affinity = pod["spec"].setdefault("affinity", {})
        node_affinity = affinity.setdefault("nodeAffinity", {})
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
        }
        pods.append(_named(pod, node))
    return pods


# ---------------------------------------------------------------- workloads


@dataclass(frozen=True)
class Cluster:
    """How the modelled cluster runs: who its controllers write as, and what it schedules on."""

    use_service_account_credentials: bool = True
    default_namespace: str = DEFAULT_NAMESPACE
    nodes: tuple[str, ...] = ("node-0",)
    scheduled_time: datetime.datetime = DEFAULT_SCHEDULED_TIME
    #: PodIndexLabel (on by default since it went beta): the pod-index / completion-index labels.
    pod_index_label: bool = True

    def controller(self, kind: str) -> str:
        return controller_identity(
            CONTROLLER_CLIENTS[kind], use_service_account_credentials=self.use_service_account_credentials
        )


DEFAULT_CLUSTER = Cluster()


def children_of(obj: Mapping[str, Any], cluster: Cluster = DEFAULT_CLUSTER) -> list[Created]:
    """The objects the controller of `obj` creates directly (ReplicaSet, Job or Pods)."""
    kind = obj.get("kind")
    namespace = namespace_of(obj, cluster.default_namespace)
    if kind == "Deployment":
        made = [replica_set_of(obj, namespace)]
    elif kind == "ReplicaSet":
        made = _replica_set_pods(obj, namespace)
    elif kind == "StatefulSet":
        made = _stateful_set_pods(obj, namespace, pod_index_label=cluster.pod_index_label)
    elif kind == "Job":
        made = _job_pods(obj, namespace, pod_index_label=cluster.pod_index_label)
    elif kind == "CronJob":
        made = [job_of(obj, namespace, cluster.scheduled_time)]
    elif kind == "DaemonSet":
        made = _daemon_set_pods(obj, namespace, cluster.nodes)
    else:
        return []
    return [Created(child, cluster.controller(str(kind))) for child in made]


def descendants_of(obj: Mapping[str, Any], cluster: Cluster = DEFAULT_CLUSTER) -> list[Created]:
    """Everything the workload controllers create from `obj`, parents before children."""
    made = []
    for child in children_of(obj, cluster):
        made.append(child)
        made.extend(descendants_of(child.obj, cluster))
    return made


def pods_of(obj: Mapping[str, Any], cluster: Cluster = DEFAULT_CLUSTER) -> list[Obj]:
    """The Pods a workload makes (through its ReplicaSet or Job); a Pod is itself (with the
    namespace it lands in and its uid)."""
    if obj.get("kind") == "Pod":
        pod: Obj = copy.deepcopy(dict(obj))
        metadata = pod.setdefault("metadata", {})
        metadata.setdefault("namespace", cluster.default_namespace)
        return [_tidy(pod)]
    return [made.obj for made in descendants_of(obj, cluster) if made.kind == "Pod"]


# ---------------------------------------------------------------- claims


def convert_claim_spec(spec: Any, from_version: str, to_version: str) -> Any:
    """A ResourceClaimSpec read back in another resource.k8s.io version: the flat device
    requests of v1alpha3/v1beta1 and the `exactly` of v1beta2/v1 are the same fields."""
    result = copy.deepcopy(spec)
    flat_from, flat_to = from_version in _FLAT_RESOURCE_APIS, to_version in _FLAT_RESOURCE_APIS
    if flat_from == flat_to or not isinstance(result, dict):
        return result
    requests = (result.get("devices") or {}).get("requests")
    if not isinstance(requests, list):
        return result
    converted = []
    for request in requests:
        if not isinstance(request, dict) or "firstAvailable" in request:
            converted.append(request)
        elif flat_to:
            converted.append({"name": request.get("name"), **(request.get("exactly") or {})})
        else:
            body = {key: value for key, value in request.items() if key != "name"}
            converted.append({"name": request.get("name"), "exactly": body})
    result["devices"]["requests"] = converted
    return result


def claim_from_template(
    pod: Mapping[str, Any], pod_claim_name: str, template: Mapping[str, Any], api_version: str | None
) -> Obj:
    """handleClaim: the claim the resource-claim controller creates for one pod claim."""
    template_spec = _spec(template)
    claim_metadata = _metadata(template_spec)
    source_version = str(template.get("apiVersion", CURRENT_RESOURCE_API))
    version = api_version or source_version
    generate_name = claim_generate_name(_name(pod), pod_claim_name)
    metadata: Obj = {
        "name": generated_name(generate_name),
        "generateName": generate_name,
        "namespace": namespace_of(pod),
        "annotations": {**_string_map(claim_metadata.get("annotations")), POD_CLAIM_NAME_ANNOTATION: pod_claim_name},
    }
    _set_map(metadata, "labels", _string_map(claim_metadata.get("labels")))
    metadata["ownerReferences"] = [controller_ref(pod)]
    claim: Obj = {
        "apiVersion": version,
        "kind": "ResourceClaim",
        "metadata": metadata,
        "spec": convert_claim_spec(template_spec.get("spec", {}), source_version, version),
    }
    return _tidy(claim)


def claims_for(
    pod: Mapping[str, Any],
    templates: Mapping[tuple[str, str], Mapping[str, Any]],
    api_version: str | None = CURRENT_RESOURCE_API,
    *,
    writer: str = RESOURCE_CLAIM_CONTROLLER,
) -> list[Created]:
    """The claims the resource-claim controller creates for `pod`'s template claims, read back
    as `api_version` (None: the template's own version). A template missing from `templates`
    (keyed by namespace and name) gets no claim, as upstream retries until it exists."""
    namespace = namespace_of(pod)
    made = []
    for pod_claim in _spec(pod).get("resourceClaims") or []:
        if not isinstance(pod_claim, Mapping) or not pod_claim.get("resourceClaimTemplateName"):
            continue
        template = templates.get((namespace, str(pod_claim["resourceClaimTemplateName"])))
        if template is None:
            continue
        made.append(Created(claim_from_template(pod, str(pod_claim["name"]), template, api_version), writer))
    return made


def template_index(
    objects: Iterable[Mapping[str, Any]], default_namespace: str = DEFAULT_NAMESPACE
) -> dict[tuple[str, str], Mapping[str, Any]]:
    """The ResourceClaimTemplates among `objects`, by (namespace, name)."""
    return {
        (namespace_of(obj, default_namespace), _name(obj)): obj
        for obj in objects
        if obj.get("kind") == "ResourceClaimTemplate"
    }


def extended_resource_classes(device_classes: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Extended resource name -> DeviceClass name, as the scheduler's cache maps them: every
    class's implicit name, and its spec.extendedResourceName. Two classes claiming one explicit
    name is refused (upstream the last event wins, which a test cannot rely on)."""
    mapping: dict[str, str] = {}
    for device_class in device_classes:
        if device_class.get("kind") != "DeviceClass":
            continue
        name = _name(device_class)
        mapping[DEVICE_CLASS_RESOURCE_PREFIX + name] = name
    for device_class in device_classes:
        if device_class.get("kind") != "DeviceClass":
            continue
        explicit = _spec(device_class).get("extendedResourceName")
        if isinstance(explicit, str) and explicit:
            if mapping.get(explicit, _name(device_class)) != _name(device_class):
                raise ValueError(f"{explicit} is mapped by both {mapping[explicit]} and {_name(device_class)}")
            mapping[explicit] = _name(device_class)
    return mapping


_QUANTITY = re.compile(r"([0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?")
_SUFFIX = {
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}


def _as_int64(quantity: Any) -> int | None:
    """resource.Quantity.AsInt64 for the integer forms (None: not an integer)."""
    if isinstance(quantity, int) and not isinstance(quantity, bool):
        return quantity
    match = _QUANTITY.fullmatch(str(quantity).strip())
    if match is None:
        return None
    number, suffix = int(match.group(1)), match.group(2)
    if suffix == "m":
        return number // 1000 if number % 1000 == 0 else None
    return number * _SUFFIX.get(suffix or "", 1)


def _requests(container: Mapping[str, Any]) -> dict[str, Any]:
    """The container's requests as stored: SetDefaults_Pod fills missing ones from limits."""
    resources = container.get("resources") or {}
    return {**(resources.get("limits") or {}), **(resources.get("requests") or {})}


def _container_request(
    index: int,
    container: Mapping[str, Any],
    resource: str,
    class_name: str,
    reusable: Sequence[Obj | None],
) -> Obj | None:
    """createResourceRequestAndMappings (the request; the mappings only go to pod status)."""
    requests = _requests(container)
    if resource not in requests:
        return None
    wanted = _as_int64(requests[resource])
    if not wanted:
        return None
    reused = 0
    for request in reusable:
        if request is not None:
            reused += request["exactly"]["count"]
            if reused >= wanted:
                return None
    position = sorted(requests).index(resource)
    return {
        "name": f"container-{index}-request-{position}",
        "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": wanted - reused},
    }


def extended_resource_requests(pod: Mapping[str, Any], classes: Mapping[str, str]) -> list[Obj]:
    """createRequestsAndMappings: the device requests of the scheduler's claim for `pod`."""
    spec = _spec(pod)
    init = [c for c in spec.get("initContainers") or [] if isinstance(c, Mapping)]
    containers = init + [c for c in spec.get("containers") or [] if isinstance(c, Mapping)]
    long_lived = [i for i, c in enumerate(containers) if i >= len(init) or c.get("restartPolicy") == "Always"]
    short_lived = [i for i in range(len(init)) if i not in long_lived]
    wanted = sorted(
        {name for c in containers for name, q in _requests(c).items() if name in classes and _as_int64(q) != 0}
    )
    requests: list[Obj] = []
    for resource in wanted:
        long_requests: list[Obj | None] = [None] * len(containers)
        for i in long_lived:
            long_requests[i] = _container_request(i, containers[i], resource, classes[resource], [])
        largest: Obj | None = None
        for i in short_lived:
            request = _container_request(i, containers[i], resource, classes[resource], long_requests[i:])
            if request is not None and (largest is None or largest["exactly"]["count"] < request["exactly"]["count"]):
                largest = request
        if largest is not None:
            requests.append(largest)
        requests.extend(request for request in long_requests if request is not None)
    return sorted(requests, key=lambda request: str(request["name"]))


def extended_resource_claims(
    pod: Mapping[str, Any],
    device_classes: Iterable[Mapping[str, Any]],
    api_version: str = CURRENT_RESOURCE_API,
    *,
    writer: str = KUBE_SCHEDULER,
) -> list[Created]:
    """The claim kube-scheduler creates for `pod`'s DRA-backed extended resources (KEP-5004):
    none when no DeviceClass maps what its containers request."""
    requests = extended_resource_requests(pod, extended_resource_classes(list(device_classes)))
    if not requests:
        return []
    generate_name = f"{_name(pod)}-extended-resources-"
    claim: Obj = {
        "apiVersion": api_version,
        "kind": "ResourceClaim",
        "metadata": {
            "name": generated_name(generate_name),
            "generateName": generate_name,
            "namespace": namespace_of(pod),
            "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
            "ownerReferences": [controller_ref(pod, block_owner_deletion=False)],
        },
        "spec": convert_claim_spec({"devices": {"requests": requests}}, CURRENT_RESOURCE_API, api_version),
    }
    return [Created(_tidy(claim), writer)]


# ---------------------------------------------------------------- everything


def cluster_creates(
    objects: Iterable[Mapping[str, Any]],
    *,
    tenant: str = DEFAULT_TENANT,
    device_classes: Iterable[Mapping[str, Any]] = (),
    claim_api_version: str | None = None,
    extended_claim_api_version: str = CURRENT_RESOURCE_API,
    cluster: Cluster = DEFAULT_CLUSTER,
) -> list[Created]:
    """Everything the API server is asked to write once a user (`tenant`) applies `objects`:
    the objects themselves (as written), then for each what the controllers make of it, then
    for every pod its template claims (read back as `claim_api_version`; None: each template's
    own version) and its extended-resource claim (DeviceClasses from `objects` and
    `device_classes`). Deterministic: the same input gives the same output."""
    inputs = [copy.deepcopy(dict(obj)) for obj in objects]
    templates = template_index(inputs, cluster.default_namespace)
    classes = [obj for obj in inputs if obj.get("kind") == "DeviceClass"] + [dict(c) for c in device_classes]
    claim_controller = cluster.controller("ResourceClaimTemplate")
    made = [Created(obj, tenant) for obj in inputs]
    for obj in inputs:
        if obj.get("kind") == "Pod":
            pods = pods_of(obj, cluster)
        else:
            derived = descendants_of(obj, cluster)
            made.extend(derived)
            pods = [item.obj for item in derived if item.kind == "Pod"]
        for pod in pods:
            made.extend(claims_for(pod, templates, claim_api_version, writer=claim_controller))
            made.extend(extended_resource_claims(pod, classes, extended_claim_api_version))
    return made
