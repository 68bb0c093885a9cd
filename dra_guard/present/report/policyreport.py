"""Policy reports (wgpolicyk8s.io/v1alpha2), what Kyverno's Policy Reporter and other
report viewers read: `dra-guard check --format policyreport k8s/ | kubectl apply -f -`.

The output is one JSON `v1` `List` (what `kubectl apply -f` and `jq` both take) of:

* a `ClusterPolicyReport` for cluster-scoped objects (DeviceClasses, ResourceSlices, ...:
  `CLUSTER_SCOPED`), and input errors, which belong to no object;
* a `PolicyReport` per namespace of the namespaced objects that name one;
* a `PolicyReport` without `metadata.namespace` for namespaced objects that name none:
  `kubectl apply -n NS` puts it where it would put them.

Each is named `dra-guard` and labelled `app.kubernetes.io/managed-by: dra-guard`, and
only written when it has results.  A result is a finding: `policy` the rule's slug
(`dra0nn-rule-name`), `rule` its facet (or its name, for a rule of one check),
`result` `fail`, or `skip` for a waived finding (the reason in `properties.waiver`),
`severity` the rule's (critical/high/medium/low, all in the CRD's enum), `category`
"DRA isolation", `source` "dra-guard", `scored` true, `message` the object and the
finding, `resources` the object (apiVersion, kind, name or generateName, namespace), and
`properties` its file, line, JSON pointer, remediation and docs/rules.md anchor.  An
input error is an `error` result of the policy `dra-guard-input`.  `summary` counts the
results; `pass` is 0, since objects without findings are not listed.  No timestamps:
the same input gives the same bytes (reports and results are sorted).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dra_guard.contract.findings import Finding, Report
from dra_guard.present.report.json_report import _dumps, write_items
from dra_guard.present.report.links import rule_docs_link
from dra_guard.rules import RULES

if TYPE_CHECKING:
    from dra_guard.present.report import Output

API_VERSION = "wgpolicyk8s.io/v1alpha2"
SOURCE = "dra-guard"
CATEGORY = "DRA isolation"
INPUT_POLICY = "dra-guard-input"
#: Cluster-scoped kinds of the Kubernetes API (and of the DRA and scheduling add-ons
#: dra-guard reads); any other kind without a namespace is taken to be namespaced.
CLUSTER_SCOPED = frozenset(
    {
        "APIService",
        "CertificateSigningRequest",
        "ClusterQueue",
        "ClusterRole",
        "ClusterRoleBinding",
        "CSIDriver",
        "CSINode",
        "CustomResourceDefinition",
        "DeviceClass",
        "DeviceTaintRule",
        "IngressClass",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
        "MutatingWebhookConfiguration",
        "Namespace",
        "Node",
        "PersistentVolume",
        "PriorityClass",
        "ResourceFlavor",
        "ResourceSlice",
        "RuntimeClass",
        "StorageClass",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
        "VolumeAttachment",
    }
)

# A report's key: (0, "") the ClusterPolicyReport, (1, "") the unnamespaced PolicyReport,
# (2, namespace) a namespace's.
_Key = tuple[int, str]


def _key(finding: Finding) -> _Key:
    if finding.object.namespace:
        return (2, finding.object.namespace)
    return (0, "") if finding.object.kind in CLUSTER_SCOPED else (1, "")


def _resource(finding: Finding) -> dict[str, str]:
    obj = finding.object
    resource = {"apiVersion": obj.api_version, "kind": obj.kind, "name": obj.name or obj.generate_name}
    if obj.namespace:
        resource["namespace"] = obj.namespace
    return resource


def _result(finding: Finding) -> dict[str, Any]:
    rule = RULES.get(finding.rule)
    properties = {"rule": finding.rule, "path": finding.path, "docs": rule_docs_link(finding.rule)}
    if finding.file:
        properties["file"] = finding.file
    if finding.line:
        properties["line"] = str(finding.line)
    if finding.object.generate_name and not finding.object.name:
        properties["generateName"] = finding.object.generate_name
    properties["remediation"] = finding.remediation
    if finding.waiver is not None:
        properties["waiver"] = finding.waiver
    return {
        "policy": rule.slug if rule is not None else finding.rule.lower(),
        "rule": finding.facet or (rule.name if rule is not None else finding.rule),
        "result": "fail" if finding.waiver is None else "skip",
        "severity": finding.severity.label,
        "category": CATEGORY,
        "source": SOURCE,
        "scored": True,
        "message": f"{finding.object}: {finding.message}",
        "resources": [_resource(finding)],
        "properties": dict(sorted(properties.items())),
    }


def _order(finding: Finding) -> tuple[str, str, str, str, str, str, int, str]:
    obj = finding.object
    return (
        obj.kind,
        obj.name or obj.generate_name,
        obj.api_version,
        finding.rule,
        finding.path,
        finding.file or "",
        finding.line or 0,
        finding.message,
    )


def _report(key: _Key, results: list[dict[str, Any]]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": SOURCE, "labels": {"app.kubernetes.io/managed-by": SOURCE}}
    if key[0] == 2:
        metadata["namespace"] = key[1]
    counts = {outcome: sum(result["result"] == outcome for result in results) for outcome in ("fail", "skip", "error")}
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterPolicyReport" if key[0] == 0 else "PolicyReport",
        "metadata": metadata,
        "summary": {"pass": 0, "fail": counts["fail"], "warn": 0, "error": counts["error"], "skip": counts["skip"]},
        "results": [],
    }


def write_policyreport(report: Report, out: Output) -> None:
    grouped: dict[_Key, list[Finding]] = {}
    for finding in [*report.findings, *report.waived]:
        grouped.setdefault(_key(finding), []).append(finding)
    errors = [
        {
            "policy": INPUT_POLICY,
            "result": "error",
            "source": SOURCE,
            "scored": True,
            "message": str(error),
            "properties": {"file": error.file, **({"line": str(error.line)} if error.line else {})},
        }
        for error in sorted(report.errors, key=lambda e: (e.file, e.line or 0, e.message))
    ]
    if errors:
        grouped.setdefault((0, ""), [])
    out.write('{\n  "apiVersion": "v1",\n  "kind": "List",\n  "metadata": {},\n  "items": ')
    written = False
    for key in sorted(grouped):
        results = [*map(_result, sorted(grouped[key], key=_order)), *(errors if key == (0, "") else [])]
        # The report but its results at once, then its results one by one where the empty
        # list is (its last key), as json_report and sarif write theirs: the same text as
        # one json.dumps(..., indent=2) of the whole List.
        head, _, tail = _dumps(_report(key, results), 4).rpartition('"results": []')
        out.write(("," if written else "[") + "\n    " + head + '"results": ')
        write_items(out, results, 6)
        out.write(tail)
        written = True
    out.write("\n  ]\n}\n" if written else "[]\n}\n")


def written_here(data: bytes) -> bool:
    """Whether `data` is a report this module wrote: a `List` whose every item is one of
    its reports (named and labelled as above).  A walk that meets it where `-o` writes the
    next one has found the last run's report, not a manifest to keep."""
    import json

    try:
        document = json.loads(data)
    except ValueError:
        return False
    items = document.get("items") if isinstance(document, dict) and document.get("kind") == "List" else None
    return isinstance(items, list) and all(_is_ours(item) for item in items)


def _is_ours(item: Any) -> bool:
    metadata = item.get("metadata") if isinstance(item, dict) else None
    return (
        isinstance(metadata, dict)
        and item.get("apiVersion") == API_VERSION
        and item.get("kind") in ("PolicyReport", "ClusterPolicyReport")
        and metadata.get("name") == SOURCE
        and metadata.get("labels") == {"app.kubernetes.io/managed-by": SOURCE}
    )
