"""Pulumi front end: the IsolatedAcceleratorWorkload and AdmissionGuard components and the
dra-guard policy pack.

The policy pack lives in `pulumi_dra/policy/` (`pulumi preview --policy-pack <that dir>`
in a checkout; `dra-guard init pulumi` writes a project-local pack that serves the same
one from the installed package); its policies are defined in `pulumi_dra.policies`,
importable without starting a server.

The components are imported on first use: the policy pack imports `pulumi_dra.policies`,
which imports this package first, and it must not pay for `pulumi` and
`pulumi_kubernetes` at every start (README, "Performance").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOMES = {
    "AcceleratorSlice": "dra_guard.spec",
    "AdmissionGuard": "pulumi_dra.admission",
    "IsolatedAcceleratorWorkload": "pulumi_dra.component",
    "IsolatedClaimTemplate": "pulumi_dra.component",
    "WebhookDeployment": "dra_guard.admission.deploy",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'pulumi_dra' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
