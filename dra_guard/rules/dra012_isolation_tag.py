"""DRA012: accelerator claims without a valid isolation tag."""

from __future__ import annotations

import re
from collections.abc import Iterator

from dra_guard.catalog import ISOLATION_TAG_ANNOTATION
from dra_guard.celkit import (
    Admission,
    AdmissionTarget,
    Validation,
    annotation,
    annotation_value,
    has_accelerator_request,
)
from dra_guard.context import Context, Resource, Violation
from dra_guard.findings import Severity
from dra_guard.manifest import CLAIM_KINDS, annotations_of
from dra_guard.options import EnvSecret, Option, Secret
from dra_guard.rulekit import Example
from dra_guard.tags import HMAC_PREFIX, verify_isolation_tag

ID = "DRA012"
NAME = "isolation-tag"
SEVERITY = Severity.HIGH
SUMMARY = f"Accelerator claims and templates must carry a valid {ISOLATION_TAG_ANNOTATION}."
RATIONALE = (
    "The tag is a SHA-256 (or, with a configured key, HMAC-SHA256) over the namespace, name, device "
    "section, sanitization policy and tenant. A missing or stale tag means the object was written by hand "
    "or edited after it was reviewed; with a key, only holders of the key can re-tag."
)
REMEDIATION = (
    "Generate the object with IsolatedAcceleratorWorkload / IsolatedClaimTemplate, or recompute the tag "
    "with dra_guard.isolation_tag(obj, key) after a reviewed change."
)
_WELL_FORMED = re.compile(r"(sha256|hmac-sha256):[0-9a-f]{64}")
#: The kinds this rule looks at (the engine runs it on nothing else).
KINDS = frozenset(CLAIM_KINDS)
CROSS_OBJECT = False
WAIVABLE = True
HMAC_KEY_ENV: Option[Secret | None] = Option(
    key="hmac-key-env",
    type=EnvSecret(needed_for="isolation tags cannot be verified without the key"),
    default=None,
    doc="The environment variable holding the HMAC key; tags must then be hmac-sha256 with that key. "
    "Naming a variable that is not set is a configuration error.",
    default_doc="none: plain sha256 tags verify",
)
OPTIONS = (HMAC_KEY_ENV,)
_TEMPLATE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: slice
  namespace: %s
  annotations:
    dra-guard.io/sanitization: WipeOnDeallocate
    dra-guard.io/isolation-tag: sha256:%s
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: mig.nvidia.com, allocationMode: ExactCount, count: 1}
"""
# The tag of _TEMPLATE in namespace team-a, as dra_guard.isolation_tag() computes it.
_TAG = "5dcdf9d6a91b19101c238f5dd681613d11aa90c3992275fdf604251607d2e6a5"
EXAMPLES = (
    Example(
        title="An accelerator claim template without a tag",
        manifests=(_TEMPLATE % ("team-a", _TAG)).replace(f"    {ISOLATION_TAG_ANNOTATION}: sha256:{_TAG}\n", ""),
        findings=("ResourceClaimTemplate/slice#/metadata",),
    ),
    Example(
        title="Moved to another namespace after it was tagged",
        manifests=_TEMPLATE % ("team-b", _TAG),
        findings=("ResourceClaimTemplate/slice#/metadata/annotations/dra-guard.io~1isolation-tag",),
    ),
    Example(
        title="Tagged as built",
        manifests=_TEMPLATE % ("team-a", _TAG),
    ),
)


def check(resource: Resource, context: Context) -> Iterator[Violation]:
    if not context.accelerator_requests(resource):
        return
    tag = annotations_of(resource.obj).get(ISOLATION_TAG_ANNOTATION)
    path = ("metadata", "annotations", ISOLATION_TAG_ANNOTATION)
    secret = context.config.get(HMAC_KEY_ENV)
    key = secret.value if secret is not None else None
    if tag is None:
        yield Violation(("metadata",), f"accelerator {resource.kind} has no {ISOLATION_TAG_ANNOTATION}")
    elif not isinstance(tag, str) or not _WELL_FORMED.fullmatch(tag):
        yield Violation(path, f"isolation tag {tag!r} is malformed; expected sha256:<64 hex> or hmac-sha256:<64 hex>")
    elif key is not None and not tag.startswith(HMAC_PREFIX):
        yield Violation(path, "an HMAC key is configured, so the isolation tag must be hmac-sha256:")
    elif not verify_isolation_tag(resource.obj, key):
        yield Violation(path, "isolation tag does not match the object: it was edited after tagging")


def _admission(target: AdmissionTarget) -> Admission:
    """Presence and format; with a key, the HMAC form. Verifying the digest needs the key and
    SHA-256, which CEL has not: the webhook does that (`dra-guard webhook`)."""
    pattern = "^hmac-sha256:[0-9a-f]{64}$" if target.config.get(HMAC_KEY_ENV) is not None else _WELL_FORMED.pattern
    if not pattern.startswith("^"):
        pattern = f"^{pattern}$"
    tag = annotation_value(ISOLATION_TAG_ANNOTATION)
    return Admission(
        kinds=tuple(sorted(CLAIM_KINDS)),
        condition=has_accelerator_request(target.config),
        validations=(
            Validation(
                expression=annotation(ISOLATION_TAG_ANNOTATION),
                message=f"accelerator claim has no {ISOLATION_TAG_ANNOTATION}",
            ),
            Validation(
                expression=f"!{annotation(ISOLATION_TAG_ANNOTATION)} || {tag}.matches('{pattern}')",
                message="isolation tag is malformed; expected sha256:<64 hex> or hmac-sha256:<64 hex> "
                "(hmac-sha256 when a key is configured)",
            ),
        ),
        # The digest itself is the webhook's: the policy decides presence and format only.
        covers=lambda finding: "does not match the object" not in finding.message,
    )


ADMISSION = _admission
