"""A multi-tenant cdk8s app: three tenants, three kinds of isolated accelerator workload.

Run it with `npx cdk8s synth` (see cdk8s.yaml) or `python examples/cdk8s_app.py`; the
manifests land in `dist/` (or `$CDK8S_OUTDIR`), one file per tenant chart.
"""

from __future__ import annotations

from cdk8s import App, Chart
from constructs import Construct

from constructs_dra import AcceleratorSlice, IsolatedAcceleratorWorkload


class TenantA(Chart):
    """Online inference: each replica gets its own 1g.10gb MIG slice."""

    def __init__(self, scope: Construct, id: str) -> None:  # noqa: A002 - cdk8s' own parameter name
        super().__init__(scope, id, namespace="tenant-a")
        IsolatedAcceleratorWorkload(
            self,
            "llm-inference",
            image="nvcr.io/nvidia/tritonserver:25.10-trtllm-python-py3",
            slice=AcceleratorSlice.nvidia_mig("1g.10gb"),
            tenant="tenant-a",
            replicas=3,
            args=["tritonserver", "--model-repository=/models"],
            ports=[8000, 8001, 8002],
            resources={"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"memory": "8Gi"}},
        )


class TenantB(Chart):
    """Batch training: two 3g.40gb slices per pod, aligned on one parent GPU."""

    def __init__(self, scope: Construct, id: str) -> None:  # noqa: A002 - cdk8s' own parameter name
        super().__init__(scope, id, namespace="tenant-b")
        IsolatedAcceleratorWorkload(
            self,
            "finetune",
            image="nvcr.io/nvidia/pytorch:25.10-py3",
            slice=AcceleratorSlice.nvidia_mig("3g.40gb", count=2),
            tenant="tenant-b",
            workload_kind="Job",
            replicas=2,
            command=["torchrun", "--nproc-per-node=2", "train.py"],
            env={"NCCL_DEBUG": "WARN", "EPOCHS": "3"},
            resources={"requests": {"cpu": "8", "memory": "64Gi"}},
        )


class TenantC(Chart):
    """A stateful vector store on whole H100s, for clusters whose API server also serves
    resource.k8s.io/v1beta2 (`--runtime-config=resource.k8s.io/v1beta2=true`: a default cluster
    serves v1 only)."""

    def __init__(self, scope: Construct, id: str) -> None:  # noqa: A002 - cdk8s' own parameter name
        super().__init__(scope, id, namespace="tenant-c")
        IsolatedAcceleratorWorkload(
            self,
            "vector-store",
            image="milvusdb/milvus:v2.6.4-gpu",
            slice=AcceleratorSlice.nvidia_gpu("NVIDIA H100 80GB HBM3"),
            tenant="tenant-c",
            workload_kind="StatefulSet",
            api_version="resource.k8s.io/v1beta2",
            runtime_config=["resource.k8s.io/v1beta2=true"],
            sanitization="ZeroFillMemoryOnRelease",
            replicas=2,
            args=["milvus", "run", "standalone"],
            ports=[19530],
        )


def build_app() -> App:
    app = App()
    TenantA(app, "tenant-a")
    TenantB(app, "tenant-b")
    TenantC(app, "tenant-c")
    return app


if __name__ == "__main__":
    build_app().synth()
