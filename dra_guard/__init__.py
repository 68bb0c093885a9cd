"""dra-guard: isolated sliced accelerators through Kubernetes DRA, by construction and by check.

The core is pure Python (PyYAML, and cel-python only where selectors are analysed); the
cdk8s and Pulumi front ends live in ``constructs_dra`` and ``pulumi_dra``.  Names are
loaded on first use (PEP 562), so `dra-guard check` does not import the builders.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "IsolatedWorkload": "dra_guard.building.builders",
    "build_claim_template": "dra_guard.building.builders",
    "build_isolated_workload": "dra_guard.building.builders",
    "build_workload": "dra_guard.building.builders",
    "claim_template": "dra_guard.building.builders",
    "isolated_workload": "dra_guard.building.builders",
    "selector_expression": "dra_guard.building.builders",
    "with_claim_template": "dra_guard.building.builders",
    "workload": "dra_guard.building.builders",
    "DEVICE_CLASSES": "dra_guard.contract.catalog",
    "DeviceClass": "dra_guard.contract.catalog",
    "AcceleratorSlice": "dra_guard.building.spec",
    "ClaimOptions": "dra_guard.building.spec",
    "ClaimSpec": "dra_guard.building.spec",
    "WorkloadOptions": "dra_guard.building.spec",
    "WorkloadSpec": "dra_guard.building.spec",
    "claim_template_name": "dra_guard.building.spec",
    "claim_isolation_tag": "dra_guard.contract.tags",
    "isolation_tag": "dra_guard.contract.tags",
    "verify_claim_isolation_tag": "dra_guard.contract.tags",
    "verify_isolation_tag": "dra_guard.contract.tags",
}

if TYPE_CHECKING:
    from dra_guard.building.builders import (
        IsolatedWorkload,
        build_claim_template,
        build_isolated_workload,
        build_workload,
        claim_template,
        isolated_workload,
        selector_expression,
        with_claim_template,
        workload,
    )
    from dra_guard.building.spec import (
        AcceleratorSlice,
        ClaimOptions,
        ClaimSpec,
        WorkloadOptions,
        WorkloadSpec,
        claim_template_name,
    )
    from dra_guard.contract.catalog import DEVICE_CLASSES, DeviceClass
    from dra_guard.contract.tags import (
        claim_isolation_tag,
        isolation_tag,
        verify_claim_isolation_tag,
        verify_isolation_tag,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'dra_guard' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "DEVICE_CLASSES",
    "AcceleratorSlice",
    "ClaimOptions",
    "ClaimSpec",
    "DeviceClass",
    "IsolatedWorkload",
    "WorkloadOptions",
    "WorkloadSpec",
    "__version__",
    "build_claim_template",
    "build_isolated_workload",
    "build_workload",
    "claim_isolation_tag",
    "claim_template",
    "claim_template_name",
    "isolated_workload",
    "isolation_tag",
    "selector_expression",
    "verify_claim_isolation_tag",
    "verify_isolation_tag",
    "with_claim_template",
    "workload",
]
