"""A deterministic benchmark corpus: plain workloads, legacy GPU CronJobs, compliant DRA apps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dra_guard import AcceleratorSlice, isolated_workload

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


def write_corpus(directory: Path, files: int = 60, groups_per_file: int = 25) -> int:
    """Writes `files` multi-document YAML files; returns the number of documents."""
    directory.mkdir(parents=True, exist_ok=True)
    documents = 0
    for file_index in range(files):
        objects: list[dict[str, Any]] = []
        for group in range(groups_per_file):
            index = file_index * groups_per_file + group
            objects += [plain_deployment(index), legacy_gpu_cronjob(index), *compliant_pair(index)]
        # Real manifests (kubectl, Helm) carry no YAML anchors; a dumper that never emits them keeps it so.
        text = yaml.dump_all(objects, Dumper=_NoAliasDumper, sort_keys=False)
        (directory / f"manifests-{file_index:03d}.yaml").write_text(text)
        documents += len(objects)
    return documents
