"""DRA017: a TPU claim that takes part of a host."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from dra_guard.contract.catalog import DEVICE_CLASSES, DeviceClass
from dra_guard.contract.findings import Severity
from dra_guard.model.conjuncts import conjunct_pattern, has_conjunct, int_attribute_term, split_at_value
from dra_guard.model.manifest import CLAIM_KINDS, DeviceRequestView, cel_expressions
from dra_guard.ruleapi.admission_form import (
    REQUESTS,
    Admission,
    AdmissionTarget,
    Validation,
    failing_requests,
    is_accelerator_body,
    selector_matches_expression,
    string,
    string_list,
)
from dra_guard.ruleapi.context import Context, Resource, Violation
from dra_guard.ruleapi.declarations import Example

ID = "DRA017"
NAME = "tpu-host-split"
SEVERITY = Severity.HIGH
SUMMARY = (
    "A TPU request must take a whole host: allocationMode All, or a count equal to the chipCount its "
    "selector fixes (device.attributes['tpu.google.com'].chipCount == <count>)."
)
RATIONALE = (
    "The TPU driver publishes every chip of a host in one pool, each with chipCount, the number of chips on "
    "its host (kubernetes-sigs/dra-driver-google-tpu @ f5a9d8c8, manager.go GetDevice and NewTPUManager). It "
    "shares host state between every claim on the host: the CDI spec bind-mounts the host directory "
    "/tmp/tpu_logs into every claim, with the host's TPU environment, and releasing any claim empties that "
    "directory (manager.go libtpuLogDir, cdi.go CreateCommonSpecFile, state.go unprepareDevices, whose comment "
    "says this is acceptable only because a workload requests all TPUs). Two tenants on one host therefore read "
    "and delete each other's libtpu logs, and the driver refuses a claim for part of a host when it prepares it "
    "(state.go prepareDevices: 'claim requests partial tpu devices'), so the pod never starts. A count without "
    "the chipCount pin may be part of a larger host; with the pin it only lands on hosts of exactly that many "
    "chips and takes them all. allocationMode: All takes every matching chip of the node (the driver's own "
    "demos use it), which DRA008 reports for review."
)
REMEDIATION = (
    "Add the selector conjunct device.attributes['tpu.google.com'].chipCount == <count> with count set to the "
    "host's chip count (AcceleratorSlice.google_tpu does), or ask for the whole node with allocationMode: All."
)
#: The kinds this rule looks at (the engine runs it on nothing else).
KINDS = frozenset(CLAIM_KINDS)
CROSS_OBJECT = False
WAIVABLE = True
OPTIONS = ()


def whole_host_classes() -> Mapping[str, DeviceClass]:
    """The catalog's classes whose claims must take whole hosts."""
    return {name: known for name, known in DEVICE_CLASSES.items() if known.whole_host_attribute is not None}


_CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: tpu, namespace: team-a}
spec:
  spec:
    devices:
      requests:
      - name: tpu
        exactly:
          deviceClassName: tpu.google.com
          allocationMode: ExactCount
          count: %d
          selectors:
          - cel: {expression: %s}
"""
_PIN = "\"device.attributes['tpu.google.com'].tpuGen == 'v6e'\""
_WHOLE = "\"device.attributes['tpu.google.com'].tpuGen == 'v6e' && device.attributes['tpu.google.com'].chipCount == 4\""
EXAMPLES = (
    Example(
        title="One chip of a v6e host: the other chips may go to other tenants, who share its /tmp/tpu_logs",
        manifests=_CLAIM % (1, _PIN),
        findings=("ResourceClaimTemplate/tpu#/spec/spec/devices/requests/0/exactly",),
    ),
    Example(
        title="Four chips, only on hosts of four chips: the whole host",
        manifests=_CLAIM % (4, _WHOLE),
    ),
    Example(
        title="The pin says four chips per host, the count asks for two",
        manifests=_CLAIM % (2, _WHOLE),
        findings=("ResourceClaimTemplate/tpu#/spec/spec/devices/requests/0/exactly",),
    ),
)


def takes_whole_host(request: DeviceRequestView, known: DeviceClass) -> bool:
    """allocationMode All, or a selector conjunct fixing the host's device count to the count."""
    if request.allocation_mode != "ExactCount":
        return True  # All (or a mode the API server refuses, which DRA010 reports)
    count = request.count
    if count is None or known.whole_host_attribute is None:
        return True  # a count the API server refuses: DRA010's
    term = int_attribute_term(known.domain, known.whole_host_attribute, count)
    return any(has_conjunct(expression, term) for expression in cel_expressions(request.body.get("selectors")))


def check(resource: Resource, context: Context) -> Iterator[Violation]:
    classes = whole_host_classes()
    for request in context.accelerator_requests(resource):
        known = classes.get(request.device_class)
        if known is None or takes_whole_host(request, known):
            continue
        attribute = f"device.attributes['{known.domain}'].{known.whole_host_attribute}"
        yield Violation(
            request.path,
            f"request {request.qualified_name!r} asks for {request.count} {request.device_class} device(s) without "
            f"the selector {attribute} == {request.count}, so it may take part of a host: the driver shares "
            "/tmp/tpu_logs between every claim on a host and empties it when any of them is released, and "
            "refuses a claim for part of a host when it prepares it",
        )


def _admission(target: AdmissionTarget) -> Admission:
    classes = whole_host_classes()
    checks = []
    for name, known in sorted(classes.items()):
        assert known.whole_host_attribute is not None
        parts = split_at_value(conjunct_pattern(int_attribute_term(known.domain, known.whole_host_attribute, None)))
        checks.append((name, parts))

    def whole(body: str) -> str:
        count = f"string(has({body}.count) && {body}.count != 0 ? {body}.count : 1)"
        alternatives = []
        for name, parts in checks:
            pinned = selector_matches_expression(body, f" + {count} + ".join(string(part) for part in parts))
            alternatives.append(f"({body}.deviceClassName == {string(name)} && !({pinned}))")
        split = " || ".join(alternatives) or "false"
        exact = f"(!has({body}.allocationMode) || {body}.allocationMode in ['', 'ExactCount'])"
        tpu = f"has({body}.deviceClassName) && {body}.deviceClassName in {string_list(sorted(classes))}"
        return f"!({tpu} && {is_accelerator_body(body, target.config)} && {exact} && ({split}))"

    return Admission(
        kinds=tuple(sorted(CLAIM_KINDS)),
        variables=(("requests", REQUESTS), ("split", failing_requests(whole))),
        validations=(
            Validation(
                expression="size(variables.split) == 0",
                message="a TPU request must take a whole host: a count equal to the chipCount its selector fixes, "
                "or allocationMode: All",
                message_expression="'request ' + variables.split[0] + ' may take part of a TPU host: fix "
                "device.attributes[\\'tpu.google.com\\'].chipCount to its count, or use allocationMode: All'",
            ),
        ),
    )


ADMISSION = _admission
