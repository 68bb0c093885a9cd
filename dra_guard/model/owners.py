"""Which of Kubernetes' own controllers made an object, as its owner references and names say.

A configuration `waivers` entry names the object it waives (`kind`, `namespace`, `name`): a
Deployment, a DaemonSet.  Admission judges what the controllers make of it, the ReplicaSet and
the Pods, under other kinds and names, and an entry that waives the Deployment in `check`
would leave every pod it makes to be denied.  So an object is also known by the controllers
that made it: its controller owner reference (`controller: true`; the controllers write one,
`validateControllerRef` refuses anything else), where the object is of the kind that
controller makes (`_MAKES`), and above that where Kubernetes' naming makes it certain
(testkit/lifecycle.py cites the controllers' source for each):

* a Pod of ReplicaSet `<deployment>-<hash>` that carries `pod-template-hash: <hash>` is the
  Deployment's (kubernetes/kubernetes @ 737067c1d67d6118c3c3abf58b4f00e67a2409df
  pkg/controller/deployment/sync.go `getNewReplicaSet` names its ReplicaSets so and adds the
  label, `DefaultDeploymentUniqueLabelKey`, to their template);
* a Pod of Job `<cronjob>-<minutes>` is the CronJob's (kubernetes/kubernetes @
  67a06c20568db0f7b3a3b48ec564929b625e875a pkg/controller/cronjob/cronjob_controllerv2.go
  `getJobName`: `fmt.Sprintf("%s-%d", cj.Name, getTimeHashInMinutes(scheduledTime))`, the
  scheduled time in minutes since the epoch).

Owner references are written by whoever creates the object, and that widens what an entry
allows: an entry for Deployment `w` waives what may be written as Deployment `w`, and a user
allowed to create Pods (or Jobs) in the namespace, but not Deployments, could give a Pod an
owner reference naming `w` (or a ReplicaSet `w-<hash>` and the label) and have it waived too.
So only the engine's callers that know who wrote the object say whether to follow them
(`Checker(owner_references=...)`): `check` and the other front ends read manifests whose
author writes any kind alike, and follow them; the admission webhook follows them only on
the writes of the workload controllers themselves (`admission-workload-controllers`), whose
owner references name the object they made it from, and which make a Pod, ReplicaSet or Job
only from an object admission judged in its turn under its own kind and name (a tenant's
ReplicaSet `w-<hash>` or Job `w-<minutes>` is judged as itself and not as `w`'s).  Operators'
owner references (JobSet, LeaderWorkerSet, ...) are not followed: their objects' names and
references have not been read from their source.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dra_guard.model.manifest import items, mapping, text

#: What each controller followed makes, by its (apiVersion, kind): the (apiVersion, kind) of
#: the objects whose controller owner reference may name it.  A reference of one of them on
#: any other object (a ConfigMap, a Pod naming a Deployment) is not the controller's doing and
#: gives no identity.
_MAKES: Mapping[tuple[str, str], tuple[str, str]] = {
    ("apps/v1", "Deployment"): ("apps/v1", "ReplicaSet"),
    ("apps/v1", "ReplicaSet"): ("v1", "Pod"),
    ("apps/v1", "StatefulSet"): ("v1", "Pod"),
    ("apps/v1", "DaemonSet"): ("v1", "Pod"),
    ("batch/v1", "Job"): ("v1", "Pod"),
    ("batch/v1", "CronJob"): ("batch/v1", "Job"),
    ("v1", "ReplicationController"): ("v1", "Pod"),
}
#: DefaultDeploymentUniqueLabelKey (kubernetes/api apps/v1/types.go).
POD_TEMPLATE_HASH = "pod-template-hash"
#: A CronJob's Job: its name, a dash and the scheduled minute (Go's `%d` of a positive int64).
_SCHEDULED_JOB = re.compile(r"(.+)-[1-9][0-9]*")


def made_by(obj: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The (kind, name) of each of Kubernetes' controllers that made the object, nearest first
    (in the object's namespace); none for an object without a controller owner reference of
    one of them, or not of the kind that controller makes."""
    metadata = mapping(obj.get("metadata"))
    owner = next(
        (mapping(each) for each in items(metadata.get("ownerReferences")) if mapping(each).get("controller") is True),
        None,
    )
    if owner is None:
        return ()
    kind, name = text(owner.get("kind")), text(owner.get("name"))
    made = _MAKES.get((text(owner.get("apiVersion")), kind))
    if made is None or made != (text(obj.get("apiVersion")), text(obj.get("kind"))) or not name:
        return ()
    found = [(kind, name)]
    if kind == "ReplicaSet":
        template_hash = mapping(metadata.get("labels")).get(POD_TEMPLATE_HASH)
        suffix = f"-{template_hash}" if isinstance(template_hash, str) and template_hash else None
        if suffix is not None and name.endswith(suffix) and len(name) > len(suffix):
            found.append(("Deployment", name[: -len(suffix)]))
    elif kind == "Job" and (scheduled := _SCHEDULED_JOB.fullmatch(name)) is not None:
        found.append(("CronJob", scheduled.group(1)))
    return tuple(found)
