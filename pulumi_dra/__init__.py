"""Pulumi front end: the IsolatedAcceleratorWorkload and AdmissionGuard components and the
dra-guard policy pack.

The policy pack lives in `pulumi_dra/policy/` (`pulumi preview --policy-pack <that dir>`);
its policies are defined in `pulumi_dra.policies`, importable without starting a server.
"""

from dra_guard.admission.deploy import WebhookDeployment
from dra_guard.spec import AcceleratorSlice
from pulumi_dra.admission import AdmissionGuard
from pulumi_dra.component import IsolatedAcceleratorWorkload, IsolatedClaimTemplate

__all__ = [
    "AcceleratorSlice",
    "AdmissionGuard",
    "IsolatedAcceleratorWorkload",
    "IsolatedClaimTemplate",
    "WebhookDeployment",
]
