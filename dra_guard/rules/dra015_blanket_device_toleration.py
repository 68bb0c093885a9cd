"""DRA015: accelerator requests that tolerate every device taint."""

from __future__ import annotations

from collections.abc import Iterator

from dra_guard.contract.findings import Severity
from dra_guard.model.manifest import CLAIM_KINDS, items, mapping, text
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

ID = "DRA015"
NAME = "blanket-device-toleration"
SEVERITY = Severity.HIGH
SUMMARY = "An accelerator request must not tolerate every device taint (operator: Exists with no key)."
RATIONALE = (
    "Device taints (KEP-5055: DRADeviceTaints beta and on by default in Kubernetes 1.36, GA in 1.37) are how a "
    "device is taken out of service: a DeviceTaintRule an administrator writes to quarantine a device (found "
    "unhealthy, or not yet wiped after its last tenant), or a taint the driver publishes itself (Intel's "
    "drivers taint unhealthy GPUs NoExecute). A toleration with operator Exists and an empty key matches every "
    "key and value (DeviceToleration, resource.k8s.io v1 types.go), so the claim can be allocated a "
    "quarantined device, and with effect NoExecute or no effect it is not evicted from one either. Tolerate "
    "the taints you mean, by key. It is its own rule, not part of exclusivity-undeclared (DRA003): that rule "
    "is about other claims sharing the device; this one is about devices taken out of service, the hook a "
    "sanitization process has, and a diagnostic claim that has to reach every device can be waived here alone."
)
REMEDIATION = (
    "Name the taint you tolerate: tolerations: [{key: <taint key>, operator: Exists, effect: NoSchedule}], or "
    "remove the toleration."
)
#: The kinds this rule looks at (the engine runs it on nothing else).
KINDS = frozenset(CLAIM_KINDS)
CROSS_OBJECT = False
WAIVABLE = True
OPTIONS = ()
_TEMPLATE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: slice, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: mig.nvidia.com
          tolerations:
          - %s
"""
EXAMPLES = (
    Example(
        title="A request that tolerates every taint, quarantine included",
        manifests=_TEMPLATE % "{operator: Exists}",
        findings=("ResourceClaimTemplate/slice#/spec/spec/devices/requests/0/exactly/tolerations/0",),
    ),
    Example(
        title="Every taint with effect NoSchedule: still any key, so a quarantined device too",
        manifests=_TEMPLATE % "{operator: Exists, effect: NoSchedule}",
        findings=("ResourceClaimTemplate/slice#/spec/spec/devices/requests/0/exactly/tolerations/0",),
    ),
    Example(
        title="One named taint",
        manifests=_TEMPLATE % "{key: example.com/maintenance, operator: Exists, effect: NoSchedule}",
    ),
)


def _blanket(toleration: object) -> bool:
    entry = mapping(toleration)
    # An empty key with operator Exists matches every key and value; the operator defaults to
    # Equal, which the API server refuses with an empty key (invalid-dra-schema's to say).
    return not text(entry.get("key")) and entry.get("operator") == "Exists"


def check(resource: Resource, context: Context) -> Iterator[Violation]:
    for request in context.accelerator_requests(resource):
        for index, toleration in enumerate(items(request.body.get("tolerations"))):
            if not _blanket(toleration):
                continue
            effect = text(mapping(toleration).get("effect"))
            which = f"every device taint with effect {effect}" if effect else "every device taint"
            evicted = "" if effect == "NoSchedule" else ", and is not evicted from one"
            yield Violation(
                (*request.path, "tolerations", index),
                f"request {request.qualified_name!r} tolerates {which} (operator Exists, no key): it can be "
                f"allocated a device a DeviceTaintRule or its driver took out of service{evicted}",
            )


def _admission(target: AdmissionTarget) -> Admission:
    config = target.config

    def tolerates_named_taints_only(body: str) -> str:
        blanket = "(!has(t.key) || t.key == '') && has(t.operator) && t.operator == 'Exists'"
        return (
            f"!({is_accelerator_body(body, config)}) || !has({body}.tolerations) || "
            f"!{body}.tolerations.exists(t, {blanket})"
        )

    return Admission(
        kinds=tuple(sorted(CLAIM_KINDS)),
        variables=(("requests", REQUESTS), ("blanket", failing_requests(tolerates_named_taints_only))),
        validations=(
            Validation(
                expression="size(variables.blanket) == 0",
                message="a request tolerates every device taint (operator Exists, no key)",
                message_expression="'request ' + variables.blanket[0] + ' tolerates every device taint (operator "
                "Exists, no key): it can be allocated a device taken out of service'",
            ),
        ),
    )


ADMISSION = _admission
