"""dra-guard: isolated sliced accelerators through Kubernetes DRA, by construction and by check.

The core is pure Python (PyYAML, and cel-python only where selectors are analysed); the
cdk8s and Pulumi front ends live in ``constructs_dra`` and ``pulumi_dra``.
"""

from dra_guard.builders import (
    IsolatedWorkload,
    claim_template,
    claim_template_name,
    isolated_workload,
    selector_expression,
    with_claim_template,
    workload,
)
from dra_guard.catalog import DEVICE_CLASSES, DeviceClass
from dra_guard.spec import AcceleratorSlice
from dra_guard.tags import isolation_tag, verify_isolation_tag

__version__ = "0.1.0"

__all__ = [
    "DEVICE_CLASSES",
    "AcceleratorSlice",
    "DeviceClass",
    "IsolatedWorkload",
    "__version__",
    "claim_template",
    "claim_template_name",
    "isolated_workload",
    "isolation_tag",
    "selector_expression",
    "verify_isolation_tag",
    "with_claim_template",
    "workload",
]
