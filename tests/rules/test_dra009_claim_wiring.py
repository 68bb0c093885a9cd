"""DRA009 `claim-wiring`: cases beyond its EXAMPLES, across resource.k8s.io versions."""

from __future__ import annotations

import copy

from dra_guard.contract.findings import Severity
from testkit.rulecases import (
    findings,
    workload,
)


def test_dra009_wiring() -> None:
    template_obj, workload_obj = workload()
    spec = workload_obj["spec"]["template"]["spec"]
    assert findings(template_obj, workload_obj) == []
    # Template missing from the input set: low severity, it may live elsewhere.
    (finding,) = findings(workload_obj)
    assert (finding.rule, finding.severity) == ("DRA009", Severity.LOW)
    broken = copy.deepcopy(workload_obj)
    broken["spec"]["template"]["spec"]["containers"][0]["resources"]["claims"] = [{"name": "typo"}]
    # The builders' scrubber init container holds the claim too: the claim is used.
    assert [f.message for f in findings(template_obj, broken)] == [
        "container 'app' uses claim 'typo', which the pod does not declare"
    ]
    del broken["spec"]["template"]["spec"]["initContainers"]
    messages = sorted(f.message for f in findings(template_obj, broken) if f.rule == "DRA009")
    assert len(messages) == 2
    assert "does not declare" in messages[0] and "used by no container" in messages[1]
    spec["containers"][0]["resources"]["claims"] = [{"name": "accelerator", "request": "nope"}]
    (finding,) = findings(template_obj, workload_obj)
    assert finding.rule == "DRA009" and "'nope'" in finding.message
    spec["containers"][0]["resources"]["claims"] = [{"name": "accelerator", "request": "slice"}]
    assert findings(template_obj, workload_obj) == []
