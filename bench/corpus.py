"""Deterministic benchmark corpora.

* `mixed`: plain Deployments, legacy GPU CronJobs, compliant claim templates and workloads.
* `dra-heavy`: mostly what the cross-object rules index -- ResourceClaims and claim
  templates, pods naming a claim, workloads and JobSets wiring a template -- besides
  legacy GPU workloads and plain Deployments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dra_guard import AcceleratorSlice, isolated_workload, isolation_tag

PROFILES = ("1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb")


class _NoAliasDumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _container(index: int) -> dict[str, Any]:
    return {
        "name": "app",
        "image": f"registry.example/team/service-{index % 17}:1.{index % 9}",
        "args": ["--port=8080", f"--replica-id={index}"],
        "env": [{"name": f"VAR_{n}", "value": f"value-{index}-{n}"} for n in range(6)],
        "ports": [{"containerPort": 8080, "name": "http"}, {"containerPort": 9090, "name": "metrics"}],
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 5},
        "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
    }


def plain_deployment(index: int) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": f"svc-{index}", "team": f"team-{index % 7}"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": f"svc-{index}", "namespace": f"team-{index % 7}", "labels": dict(labels)},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app.kubernetes.io/name": f"svc-{index}"}},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [_container(index)]}},
        },
    }


def legacy_gpu_cronjob(index: int) -> dict[str, Any]:
    container = _container(index)
    container["resources"]["limits"]["nvidia.com/gpu"] = 1
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": f"nightly-{index}", "namespace": f"ml-{index % 5}"},
        "spec": {
            "schedule": "0 3 * * *",
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container]}}}},
        },
    }


def compliant_pair(index: int) -> list[dict[str, Any]]:
    accelerator = AcceleratorSlice.nvidia_mig(PROFILES[index % len(PROFILES)], count=1 + index % 2)
    return list(
        isolated_workload(
            f"infer-{index}",
            image=f"registry.example/llm:{index % 5}",
            slice=accelerator,
            namespace=f"tenant-{index % 9}",
            tenant=f"tenant-{index % 9}",
            env={f"VAR_{n}": f"value-{n}" for n in range(6)},
            ports=[8000],
            resources={"requests": {"cpu": "2", "memory": "8Gi"}},
        )
    )


def mixed_group(index: int) -> list[dict[str, Any]]:
    return [plain_deployment(index), legacy_gpu_cronjob(index), *compliant_pair(index)]


def shared_claim(template: dict[str, Any]) -> dict[str, Any]:
    """A tagged ResourceClaim with the template's devices, named after it."""
    claim = {
        "apiVersion": template["apiVersion"],
        "kind": "ResourceClaim",
        "metadata": {**template["metadata"], "name": template["metadata"]["name"] + "-shared"},
        "spec": template["spec"]["spec"],
    }
    claim["metadata"]["annotations"] = {**template["metadata"]["annotations"]}
    claim["metadata"]["annotations"]["dra-guard.io/isolation-tag"] = isolation_tag(claim)
    return claim


def claim_pod(index: int, claim_name: str, namespace: str) -> dict[str, Any]:
    container = _container(index)
    container["resources"]["claims"] = [{"name": "accelerator"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pinned-{index}", "namespace": namespace},
        "spec": {
            "containers": [container],
            "resourceClaims": [{"name": "accelerator", "resourceClaimName": claim_name}],
        },
    }


def jobset(index: int, template_name: str, namespace: str) -> dict[str, Any]:
    container = _container(index)
    container["resources"]["claims"] = [{"name": "accelerator"}]
    pod_spec = {
        "restartPolicy": "Never",
        "containers": [container],
        "resourceClaims": [{"name": "accelerator", "resourceClaimTemplateName": template_name}],
    }
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": f"sweep-{index}", "namespace": namespace},
        "spec": {
            "replicatedJobs": [
                {"name": "workers", "replicas": 2, "template": {"spec": {"template": {"spec": pod_spec}}}}
            ]
        },
    }


def dra_heavy_group(index: int) -> list[dict[str, Any]]:
    """Six documents, five of them claims, templates or accelerator workloads."""
    template, workload = compliant_pair(index)
    claim = shared_claim(template)
    namespace = template["metadata"]["namespace"]
    return [
        template,
        claim,
        workload,
        claim_pod(index, claim["metadata"]["name"], namespace),
        jobset(index, template["metadata"]["name"], namespace),
        legacy_gpu_cronjob(index) if index % 2 else plain_deployment(index),
    ]


CORPORA = {"mixed": (mixed_group, 4), "dra-heavy": (dra_heavy_group, 6)}


def write_corpus(directory: Path, documents: int = 6000, kind: str = "mixed", documents_per_file: int = 100) -> int:
    """Writes about `documents` documents of one corpus, in files of about 100 documents,
    each object named uniquely; returns the number written."""
    directory.mkdir(parents=True, exist_ok=True)
    group_of, size = CORPORA[kind]
    groups_per_file = max(documents_per_file // size, 1)
    groups = documents // size
    written = 0
    for file_index, first in enumerate(range(0, groups, groups_per_file)):
        objects: list[dict[str, Any]] = []
        for index in range(first, min(first + groups_per_file, groups)):
            objects += group_of(index)
        # Real manifests (kubectl, Helm) carry no YAML anchors; a dumper that never emits them keeps it so.
        text = yaml.dump_all(objects, Dumper=_NoAliasDumper, sort_keys=False)
        (directory / f"manifests-{file_index:04d}.yaml").write_text(text)
        written += len(objects)
    return written
