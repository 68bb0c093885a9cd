"""Deterministic benchmark corpora.

* `mixed`: plain Deployments, legacy GPU CronJobs, compliant claim templates and workloads.
* `dra-heavy`: mostly what the cross-object rules index -- ResourceClaims and claim
  templates, pods naming a claim, workloads and JobSets wiring a template -- besides
  legacy GPU workloads and plain Deployments.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import yaml

from dra_guard import AcceleratorSlice, isolated_workload, isolation_tag
from dra_guard.contract.mig_profiles import max_per_gpu

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
    profile = PROFILES[index % len(PROFILES)]
    # One or two slices of one GPU, as many as one GPU holds of the profile (one 7g.80gb).
    accelerator = AcceleratorSlice.nvidia_mig(profile, count=min(1 + index % 2, max_per_gpu(profile)[0]))
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


# --- The realistic mix: what `kubectl apply -f`, Helm and kustomize users keep in a repository.
#
# Written as text, not dumped, so that it carries what real manifests carry and a
# dumper never writes: comments, Helm's `# Source:` headers and empty documents, flow
# style, quoted numbers and booleans, block scalars, Lists, an anchor for shared labels
# (where hand-written manifests use them), and CronJobs on varied schedules (`*/15`,
# ranges, `@hourly`), whose asterisks are text, not aliases.

SCHEDULES = ('"*/15 * * * *"', "0 */6 * * *", "30 2 * * 1-5", '"@hourly"', "0 0 1 * *", "'5 4 * * sun'")


def _service(index: int) -> str:
    return f"""\
# Source: svc-{index % 23}/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: svc-{index}
  namespace: team-{index % 7}
  labels: {{app.kubernetes.io/name: svc-{index}, app.kubernetes.io/part-of: shop}}
  annotations:
    prometheus.io/scrape: "true"
    prometheus.io/port: "9090"
spec:
  type: ClusterIP
  selector:
    app.kubernetes.io/name: svc-{index}
  ports:
    - name: http
      port: 80
      targetPort: 8080   # the container's port
    - {{name: metrics, port: 9090, targetPort: 9090}}
"""


def _config_map(index: int) -> str:
    return f"""\
# Source: svc-{index % 23}/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: svc-{index}-config
  namespace: team-{index % 7}
data:
  LOG_LEVEL: info
  FEATURE_FLAGS: "checkout,search"
  WORKERS: "4"
  ENABLE_CACHE: "false"
  app.properties: |
    # applied at start-up; * matches every tenant
    tenants=*
    cache.ttl=300
    upstream=http://svc-{(index + 1) % 97}.team-{index % 7}.svc:8080/api/*
  nginx.conf: |
    server {{
      listen 8080;
      location /static/ {{ root /srv; expires 1h; }}
      location / {{ proxy_pass http://127.0.0.1:9000; }}
    }}
"""


def _checksum(index: int) -> str:
    """What Helm charts put in `checksum/config`: the SHA-256 of the rendered ConfigMap, in hex."""
    return hashlib.sha256(f"svc-{index}-config".encode()).hexdigest()


def _deployment(index: int) -> str:
    # One in five shares its labels through an anchor, as some hand-written manifests do.
    if index % 5 == 0:
        labels = f"&labels\n      app.kubernetes.io/name: svc-{index}\n      team: team-{index % 7}"
        selector, pod_labels = "*labels", "*labels"
    else:
        labels = f"\n      app.kubernetes.io/name: svc-{index}\n      team: team-{index % 7}"
        selector = f"\n        app.kubernetes.io/name: svc-{index}"
        pod_labels = f"\n        app.kubernetes.io/name: svc-{index}\n        team: team-{index % 7}"
    return f"""\
# Source: svc-{index % 23}/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: svc-{index}
  namespace: team-{index % 7}
  labels: {labels}
spec:
  replicas: {1 + index % 3}
  revisionHistoryLimit: 5
  selector:
    matchLabels: {selector}
  template:
    metadata:
      labels: {pod_labels}
      annotations:
        checksum/config: {_checksum(index)}
    spec:
      serviceAccountName: svc-{index}
      securityContext: {{runAsNonRoot: true, runAsUser: 10001}}
      containers:
        - name: app
          image: "registry.example/team/service-{index % 17}:1.{index % 9}.0"
          imagePullPolicy: IfNotPresent
          args: ["--port=8080", "--log-format=json", "--replica-id={index}"]
          env:
            - name: POD_NAME
              valueFrom: {{fieldRef: {{fieldPath: metadata.name}}}}
            - name: GOMAXPROCS
              value: "2"
            - {{name: CONFIG, value: /etc/app/app.properties}}
          envFrom:
            - configMapRef: {{name: svc-{index}-config}}
          ports:
            - {{name: http, containerPort: 8080}}
            - {{name: metrics, containerPort: 9090}}
          readinessProbe:
            httpGet: {{path: /ready, port: http}}
            periodSeconds: 5
          resources:
            requests: {{cpu: 250m, memory: 256Mi}}
            limits: {{memory: 512Mi}}
          volumeMounts:
            - {{name: config, mountPath: /etc/app, readOnly: true}}
      volumes:
        - name: config
          configMap: {{name: svc-{index}-config}}
"""


def _cronjob(index: int) -> str:
    legacy = index % 3 == 0  # a third still ask for whole GPUs the device-plugin way
    limits = "{nvidia.com/gpu: 1, memory: 8Gi}" if legacy else "{memory: 1Gi}"
    return f"""\
apiVersion: batch/v1
kind: CronJob
metadata:
  name: report-{index}
  namespace: ml-{index % 5}
spec:
  schedule: {SCHEDULES[index % len(SCHEDULES)]}
  concurrencyPolicy: Forbid
  successfulJobsHistoryLimit: 3
  jobTemplate:
    spec:
      backoffLimit: 2
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: report
            image: registry.example/ml/report:2.{index % 4}
            command: [python, -m, report, "--since=24h"]
            resources:
              limits: {limits}
"""


def _list(index: int) -> str:
    return f"""\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ServiceAccount
  metadata:
    name: svc-{index}
    namespace: team-{index % 7}
- apiVersion: rbac.authorization.k8s.io/v1
  kind: RoleBinding
  metadata: {{name: svc-{index}-view, namespace: team-{index % 7}}}
  roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}}
  subjects:
  - {{kind: ServiceAccount, name: svc-{index}, namespace: team-{index % 7}}}
"""


def _dumped(objects: list[dict[str, Any]]) -> list[str]:
    return [yaml.dump(obj, Dumper=_NoAliasDumper, sort_keys=False) for obj in objects]


def realistic_group(index: int) -> list[str]:
    """Ten documents: a Helm-rendered service (Service, ConfigMap, Deployment), a List of
    its account and binding, two CronJobs, an accelerator app (claim template and
    workload), a legacy GPU Deployment, and an empty document as `helm template` leaves."""
    legacy = plain_deployment(index)
    legacy["metadata"]["name"] = f"gpu-{index}"
    legacy["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 1
    return [
        _service(index),
        _config_map(index),
        _deployment(index),
        _list(index),
        _cronjob(2 * index),
        _cronjob(2 * index + 1),
        *_dumped(compliant_pair(index)),
        *_dumped([legacy]),
        "# Source: svc/templates/hpa.yaml (disabled in these values)\n",
    ]


REALISTIC_GROUP_SIZE = 10


def write_realistic(directory: Path, documents: int = 6000, documents_per_file: int = 100) -> int:
    """Writes `documents` documents (a List is one) of the realistic mix, about 100 to a
    file, as `helm template` output is separated: every document after a `---` line."""
    directory.mkdir(parents=True, exist_ok=True)
    groups = max(documents // REALISTIC_GROUP_SIZE, 1)
    per_file = max(documents_per_file // REALISTIC_GROUP_SIZE, 1)
    written = 0
    for file_index, first in enumerate(range(0, groups, per_file)):
        texts: list[str] = []
        for index in range(first, min(first + per_file, groups)):
            texts += realistic_group(index)
        (directory / f"rendered-{file_index:04d}.yaml").write_text("".join("---\n" + text for text in texts))
        written += len(texts)
    return written


def write_tree(directory: Path, documents: int = 6000) -> int:
    """The realistic mix one object per file, as repositories keep manifests: a folder per
    team and service (`team-3/svc-17/deployment.yaml`); the empty documents Helm leaves are
    not files.  Returns the number of documents written."""
    written = 0
    for index in range(max(documents // REALISTIC_GROUP_SIZE, 1)):
        folder = directory / f"team-{index % 7}" / f"svc-{index}"
        folder.mkdir(parents=True, exist_ok=True)
        for position, text in enumerate(realistic_group(index)):
            kind = next((line[6:].strip().lower() for line in text.splitlines() if line.startswith("kind: ")), "")
            if kind:
                (folder / f"{position:02d}-{kind}.yaml").write_text(text)
                written += 1
    return written


def write_single(path: Path, documents: int) -> int:
    """The realistic mix in one file, as `helm template` of a large chart writes it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with path.open("w") as out:
        for index in range(max(documents // REALISTIC_GROUP_SIZE, 1)):
            for text in realistic_group(index):
                out.write("---\n" + text)
                written += 1
    return written
