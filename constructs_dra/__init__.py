"""cdk8s constructs that synthesize compliant DRA claim templates and workloads, and
`AdmissionGuard`, which installs the rules' in-cluster enforcement.

The constructs only adapt :mod:`dra_guard.builders` output into plain ``ApiObject`` s; the
cdk8s-plus L1 classes are avoided because they drop fields they do not model.
"""

from constructs_dra.admission import AdmissionGuard
from constructs_dra.enforce import DraGuardValidation, enforce
from constructs_dra.workload import (
    IsolatedAcceleratorWorkload,
    IsolatedClaimTemplate,
    use_claim_template,
)
from dra_guard.admission.deploy import WebhookDeployment
from dra_guard.spec import AcceleratorSlice, name_from_id

__all__ = [
    "AcceleratorSlice",
    "AdmissionGuard",
    "DraGuardValidation",
    "IsolatedAcceleratorWorkload",
    "IsolatedClaimTemplate",
    "WebhookDeployment",
    "enforce",
    "name_from_id",
    "use_claim_template",
]
