"""Which of Kubernetes' own controllers made an object, as its owner references and names say.

A configuration `waivers` entry names the object it waives (`kind`, `namespace`, `name`): a
Deployment, a DaemonSet.  Admission judges what the controllers make of it, the ReplicaSet and
the Pods, under other kinds and names, and an entry that waives the Deployment in `check`
would leave every pod it makes to be denied.  So an object is also known by the controllers
that made it: its controller owner reference (`controller: true`; the controllers write one,
`validateControllerRef` refuses anything else), and above that where Kubernetes' naming makes
it certain (testkit/lifecycle.py cites the controllers' source for each):

* a Pod of ReplicaSet `<deployment>-<hash>` that carries `pod-template-hash: <hash>` is the
  Deployment's (the deployment controller names its ReplicaSets so and adds the label to their
  template: pkg/controller/deployment/sync.go `getNewReplicaSet`);
* a Pod of Job `<cronjob>-<minutes>` is the CronJob's (pkg/controller/cronjob/utils.go
  `getJobFromTemplate2`: the scheduled time in minutes since the epoch).

Owner references are written by whoever creates the object, so a tenant may give a Pod one
of its own choosing.  That widens nothing a `waivers` entry allows: its globs match by kind,
namespace and name, and a tenant who may create Pods in a namespace the entry matches may
create them as the Deployment or Job the entry names would (and a Pod whose owner does not
exist is deleted by the garbage collector).  Only Kubernetes' own controllers are followed:
an operator's owner reference names a kind whose pods are named its own way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dra_guard.model.manifest import items, mapping, text

#: The controllers whose owner references are followed, by apiVersion and kind.
_CONTROLLERS = frozenset(
    {
        ("apps/v1", "Deployment"),
        ("apps/v1", "ReplicaSet"),
        ("apps/v1", "StatefulSet"),
        ("apps/v1", "DaemonSet"),
        ("batch/v1", "Job"),
        ("batch/v1", "CronJob"),
        ("v1", "ReplicationController"),
    }
)
#: DefaultDeploymentUniqueLabelKey (kubernetes/api apps/v1/types.go).
POD_TEMPLATE_HASH = "pod-template-hash"
#: A CronJob's Job: its name, a dash and the scheduled minute.
_SCHEDULED_JOB = re.compile(r"(.+)-[0-9]+")


def made_by(obj: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The (kind, name) of each of Kubernetes' controllers that made the object, nearest first
    (in the object's namespace); none for an object without a controller owner reference of
    one of them."""
    metadata = mapping(obj.get("metadata"))
    owner = next(
        (mapping(each) for each in items(metadata.get("ownerReferences")) if mapping(each).get("controller") is True),
        None,
    )
    if owner is None:
        return ()
    kind, name = text(owner.get("kind")), text(owner.get("name"))
    if (text(owner.get("apiVersion")), kind) not in _CONTROLLERS or not name:
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
