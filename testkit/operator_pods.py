"""What two operators make of their objects, written from their source as testkit/lifecycle.py
is for Kubernetes' own controllers: the built-in workloads they create, which `lifecycle`
then turns into pods, so a test can put the pods an operator makes through admission.

Like `lifecycle`, it imports nothing of dra-guard, so a misreading there cannot hide here.
Only what decides a pod's annotations and spec is modelled.

* JobSet (kubernetes-sigs/jobset @ 08dfbdfd682714a9ab929633eca8dc95315187e7,
  pkg/controllers/jobset_controller.go `constructJob` and `labelAndAnnotateObject`): for each
  replicated job, `replicas` Jobs `<jobset>-<replicated job>-<index>` in the JobSet's
  namespace, with the replicated job's Job template (metadata and spec); the Job and its pod
  template gain the `jobset.sigs.k8s.io/` labels and annotations (the jobset name and
  replicated job name here). The JobSet's own annotations are not copied, but for the
  exclusive-placement keys (not modelled).
* InferenceService in RawDeployment mode (kserve/kserve @
  aaac4e294dae2c7b1aa1886447793f3aa1c30912, pkg/controller/v1beta1/inferenceservice/components/
  predictor.go `buildPredictorResources`, `buildObjectMeta`;
  reconcilers/deployment/deployment_reconciler.go `createRawDefaultDeployment`): a Deployment
  `<isvc>-predictor` whose pod template's annotations are the union of the InferenceService's
  own (the default `serviceAnnotationDisallowedList` names no dra-guard key) and the
  predictor's, and whose pod spec is the predictor's pod fields (a custom predictor: its
  `containers`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

Obj = dict[str, Any]

JOBSET_NAME_KEY = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_NAME_KEY = "jobset.sigs.k8s.io/replicatedjob-name"
#: The predictor's fields that are a PodSpec's (v1beta1 PredictorSpec inlines corev1.PodSpec).
_POD_SPEC_FIELDS = ("containers", "initContainers", "volumes", "resourceClaims", "nodeSelector", "tolerations")


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


def jobset_jobs(jobset: Mapping[str, Any]) -> list[Obj]:
    """The Jobs a JobSet's controller creates."""
    name = str(_metadata(jobset).get("name"))
    namespace = _metadata(jobset).get("namespace")
    jobs = []
    for replicated in jobset["spec"]["replicatedJobs"]:
        for index in range(int(replicated.get("replicas", 1))):
            template = copy.deepcopy(replicated["template"])
            keys = {JOBSET_NAME_KEY: name, REPLICATED_JOB_NAME_KEY: replicated["name"]}
            job_metadata = template.get("metadata", {})
            pod_template = template["spec"]["template"]
            for metadata in (job_metadata, pod_template.setdefault("metadata", {})):
                metadata["labels"] = {**metadata.get("labels", {}), **keys}
                metadata["annotations"] = {**metadata.get("annotations", {}), **keys}
            job_metadata.update({"name": f"{name}-{replicated['name']}-{index}", "namespace": namespace})
            jobs.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": job_metadata, "spec": template["spec"]})
    return jobs


def inference_service_deployments(isvc: Mapping[str, Any]) -> list[Obj]:
    """The predictor's Deployment of an InferenceService in RawDeployment mode."""
    name = str(_metadata(isvc).get("name"))
    predictor = isvc["spec"]["predictor"]
    labels = {"app": f"isvc.{name}-predictor", "serving.kserve.io/inferenceservice": name}
    annotations = {**_metadata(isvc).get("annotations", {}), **predictor.get("annotations", {})}
    spec = {field: copy.deepcopy(predictor[field]) for field in _POD_SPEC_FIELDS if field in predictor}
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": f"{name}-predictor", "namespace": _metadata(isvc).get("namespace")},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels, "annotations": annotations}, "spec": spec},
            },
        }
    ]
