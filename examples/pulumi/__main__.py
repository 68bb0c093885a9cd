"""Two tenants on one cluster, each with isolated MIG slices, deployed with Pulumi.

    pulumi preview --policy-pack ../../pulumi_dra/policy

The component builds the same objects as the cdk8s construct; the policy pack checks
every Kubernetes resource in the stack (ours, raw ones, Helm and YAML children).
"""

import pulumi

from pulumi_dra import AcceleratorSlice, IsolatedAcceleratorWorkload

inference = IsolatedAcceleratorWorkload(
    "llm-inference",
    namespace="tenant-a",
    tenant="tenant-a",
    image="nvcr.io/nvidia/tritonserver:25.10-trtllm-python-py3",
    slice=AcceleratorSlice.nvidia_mig("1g.10gb"),
    replicas=3,
    ports=[8000],
    resources={"requests": {"cpu": "2", "memory": "8Gi"}},
)

training = IsolatedAcceleratorWorkload(
    "finetune",
    namespace="tenant-b",
    tenant="tenant-b",
    image="nvcr.io/nvidia/pytorch:25.10-py3",
    slice=AcceleratorSlice.nvidia_mig("3g.40gb", count=2),
    workload_kind="Job",
    replicas=2,
    command=["torchrun", "--nproc-per-node=2", "train.py"],
)

pulumi.export("tenant_a_workload", inference.workload_name)
pulumi.export("tenant_b_claim_template", training.template_name)
