"""DRA008: allocation that is not an explicit, exact count."""

from __future__ import annotations

from collections.abc import Iterator

from dra_guard.contract.findings import Severity
from dra_guard.model.manifest import ALL, CLAIM_KINDS, EXACT_COUNT, count_value, shown
from dra_guard.ruleapi.admission_form import (
    REQUESTS,
    Admission,
    AdmissionTarget,
    Validation,
    failing_requests,
    is_accelerator_body,
)
from dra_guard.ruleapi.context import Context, Resource, Violation
from dra_guard.ruleapi.declarations import Example

ID = "DRA008"
NAME = "nondeterministic-allocation"
SEVERITY = Severity.HIGH
SUMMARY = "Accelerator requests must say allocationMode: ExactCount and an explicit count."
RATIONALE = (
    "allocationMode: All takes every matching device on the node, however many that is today (high). An "
    "implicit mode or count takes the API's defaults, ExactCount and count 1, which are documented and "
    "stable: that is a review policy, not a correctness problem (medium), so that the size of every "
    "allocation is written where reviewers read it."
)
REMEDIATION = "Set allocationMode: ExactCount and count: <n> on every accelerator request."
#: The kinds this rule looks at (the engine runs it on nothing else).
KINDS = frozenset(CLAIM_KINDS)
CROSS_OBJECT = False
WAIVABLE = True
OPTIONS = ()
FACETS = {
    "all": "an accelerator request uses allocationMode: All, which takes every matching device",
    "unknown-mode": "an allocationMode that is neither ExactCount nor All",
    "fractional-count": "a count that is not a whole number of devices",
    "implicit": "allocationMode or count left to the API server's defaults",
}
_CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: slice, namespace: team-a}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: mig.nvidia.com, %s}
"""
EXAMPLES = (
    Example(
        title="allocationMode: All takes every matching device on the node (high)",
        manifests=_CLAIM % "allocationMode: All",
        findings=("ResourceClaim/slice#/spec/devices/requests/0/exactly/allocationMode",),
    ),
    Example(
        title="The count is left to the API default (medium)",
        manifests=_CLAIM % "allocationMode: ExactCount",
        findings=("ResourceClaim/slice#/spec/devices/requests/0/exactly",),
    ),
    Example(
        title="An explicit, exact count",
        manifests=_CLAIM % "allocationMode: ExactCount, count: 1",
    ),
)


def check(resource: Resource, context: Context) -> Iterator[Violation]:
    for request in context.accelerator_requests(resource):
        label = f"request {request.qualified_name!r}"
        mode = request.allocation_mode
        if mode == ALL:
            yield Violation(
                (*request.path, "allocationMode"),
                f"{label} uses allocationMode: All, which takes every matching device",
                facet="all",
            )
            continue
        if mode != EXACT_COUNT:
            yield Violation(
                (*request.path, "allocationMode"),
                f"{label} has allocationMode {shown(mode)}, which is neither ExactCount nor All",
                facet="unknown-mode",
            )
            continue
        if request.count is None:
            yield Violation(
                (*request.path, "count"),
                f"{label} has count {shown(request.raw.get('count'))}, which is not a whole number of devices",
                facet="fractional-count",
            )
            continue
        # Explicitness is about what was written: the raw request, before API defaults.
        implicit = [field for field in ("allocationMode", "count") if request.raw.get(field) in (None, "")]
        zero = "count" not in implicit and count_value(request.raw.get("count")) == 0
        if zero:
            implicit.append("count")
        if implicit:
            note = " (count: 0 is stored as the default, 1)" if zero else ""
            yield Violation(
                request.path,
                f"{label} leaves {' and '.join(implicit)} implicit{note}",
                severity=Severity.MEDIUM,
                facet="implicit",
            )


# --- admission ---------------------------------------------------------------------------


def _admission(target: AdmissionTarget) -> Admission:
    """allocationMode: All on an accelerator request.  The rest of the rule is invisible at
    admission: the API server has already defaulted an absent mode to ExactCount and an absent
    count to 1 (so "implicit" cannot be seen), and refused any other mode or count."""
    config = target.config

    def not_all(body: str) -> str:
        return (
            f"!({is_accelerator_body(body, config)}) || !has({body}.allocationMode) || {body}.allocationMode != 'All'"
        )

    return Admission(
        kinds=tuple(sorted(CLAIM_KINDS)),
        variables=(("requests", REQUESTS), ("takeAll", failing_requests(not_all))),
        validations=(
            Validation(
                expression="size(variables.takeAll) == 0",
                message="an accelerator request uses allocationMode: All, which takes every matching device",
                message_expression="'request ' + variables.takeAll[0] + ' uses allocationMode: All, which takes "
                "every matching device'",
            ),
        ),
        covers=frozenset({"all"}),
    )


ADMISSION = _admission
