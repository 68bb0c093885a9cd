"""The stable identity of a finding, shared by SARIF (`partialFingerprints`) and baselines.

It is the rule, the object (kind, namespace, name) and the JSON pointer into the object:
never the file or the line, so that moving a file, reformatting it or reordering its keys
keeps a finding's fingerprint, and with it its place in a baseline and its code-scanning alert.
"""

from __future__ import annotations

from dra_guard.contract.findings import Finding

#: The key of `partialFingerprints` in SARIF; its version changes with the fingerprint's recipe.
FINGERPRINT_KEY = "draGuard/v1"


def fingerprint(finding: Finding) -> str:
    """`<rule>:<Kind>/<namespace>/<name>:<JSON pointer>`, e.g. `DRA001:Pod/-/gpu-test:/spec/containers/0`."""
    return f"{finding.rule}:{finding.object}:{finding.path}"
