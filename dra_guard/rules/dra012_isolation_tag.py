"""DRA012: accelerator claims without a valid isolation tag."""

from __future__ import annotations

import re
from collections.abc import Iterator

from dra_guard.contract.catalog import ISOLATION_TAG_ANNOTATION, SANITIZATION_ANNOTATION, TENANT_ANNOTATION
from dra_guard.contract.findings import Severity
from dra_guard.contract.tags import HMAC_PREFIX, IsolationTags
from dra_guard.model.manifest import CLAIM_KINDS, declaration_places, mapping
from dra_guard.ruleapi.admission_form import (
    CLAIM_METADATA,
    Admission,
    AdmissionTarget,
    Validation,
    annotation,
    annotation_value,
    has_accelerator_request,
    on_template,
)
from dra_guard.ruleapi.context import Context, Resource, Violation
from dra_guard.ruleapi.declarations import Example
from dra_guard.ruleapi.options import EnvSecret, Option, Secret

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
FACETS = {
    "missing": "an accelerator claim (or a template's spec.metadata) carries no isolation tag",
    "malformed": "a tag that is neither sha256:<64 hex> nor hmac-sha256:<64 hex>",
    "not-hmac": "a plain sha256 tag where an HMAC key is configured",
    "digest-mismatch": "the tag does not match the object: it was edited after tagging",
    "declarations-disagree": "a template's spec.metadata declares other sanitization or tenant than the template",
    "no-namespace": "an object without metadata.namespace, whose tag cannot be verified",
}
_TEMPLATE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: slice
  namespace: %(namespace)s
  annotations:
    dra-guard.io/sanitization: WipeOnDeallocate
    dra-guard.io/isolation-tag: sha256:%(tag)s
spec:
  metadata:
    annotations:
      dra-guard.io/sanitization: WipeOnDeallocate
      dra-guard.io/isolation-tag: sha256:%(claim_tag)s
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: mig.nvidia.com, allocationMode: ExactCount, count: 1}
"""
# The tags of _TEMPLATE in namespace team-a, as dra_guard.isolation_tag() and
# dra_guard.claim_isolation_tag() compute them.
_TAG = "5dcdf9d6a91b19101c238f5dd681613d11aa90c3992275fdf604251607d2e6a5"
_CLAIM_TAG = "b83648426d20a611fd382fe9775ab636d9a090a34f4f66477292caf6a50a43f7"
_TAGGED = {"namespace": "team-a", "tag": _TAG, "claim_tag": _CLAIM_TAG}
# A claim kube-controller-manager made from _TEMPLATE for pod `infer-0`: the template's
# spec.metadata, the pod claim's name, and a generated name (docs/admission.md).
_GENERATED_CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: infer-0-gpu-7xk2q
  generateName: infer-0-gpu-
  namespace: team-a
  annotations:
    dra-guard.io/sanitization: WipeOnDeallocate
    dra-guard.io/isolation-tag: sha256:%s
    resource.kubernetes.io/pod-claim-name: gpu
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: mig.nvidia.com, allocationMode: ExactCount, count: %d}
"""
EXAMPLES = (
    Example(
        title="An accelerator claim template without a tag",
        manifests=(_TEMPLATE % _TAGGED).replace(f"    {ISOLATION_TAG_ANNOTATION}: sha256:{_TAG}\n", ""),
        findings=("ResourceClaimTemplate/slice#/metadata",),
    ),
    Example(
        title="Moved to another namespace after it was tagged: both tags bind the namespace",
        manifests=_TEMPLATE % {**_TAGGED, "namespace": "team-b"},
        findings=(
            "ResourceClaimTemplate/slice#/metadata/annotations/dra-guard.io~1isolation-tag",
            "ResourceClaimTemplate/slice#/spec/metadata/annotations/dra-guard.io~1isolation-tag",
        ),
    ),
    Example(
        title="A template whose claims would carry no tag (nothing in spec.metadata)",
        manifests=(_TEMPLATE % _TAGGED).replace(
            f"  metadata:\n    annotations:\n      dra-guard.io/sanitization: WipeOnDeallocate\n"
            f"      {ISOLATION_TAG_ANNOTATION}: sha256:{_CLAIM_TAG}\n",
            "",
        ),
        findings=("ResourceClaimTemplate/slice#/spec/metadata",),
    ),
    Example(
        title="No namespace: the tag binds the namespace the template lands in, which the file does not say",
        manifests=(_TEMPLATE % _TAGGED).replace("  namespace: team-a\n", ""),
        findings=("ResourceClaimTemplate/slice#/metadata",),
    ),
    Example(
        title="Tagged as built",
        manifests=_TEMPLATE % _TAGGED,
    ),
    Example(
        title="A claim made from the template: its claim tag binds everything but the generated name",
        manifests=_GENERATED_CLAIM % (_CLAIM_TAG, 1),
    ),
    Example(
        title="A claim made from the template, then edited",
        manifests=_GENERATED_CLAIM % (_CLAIM_TAG, 2),
        findings=("ResourceClaim/infer-0-gpu-7xk2q#/metadata/annotations/dra-guard.io~1isolation-tag",),
    ),
)


def check(resource: Resource, context: Context) -> Iterator[Violation]:
    if not context.accelerator_requests(resource):
        return
    secret = context.config.get(HMAC_KEY_ENV)
    key = secret.value if secret is not None else None
    obj = resource.obj
    own, *claim_place = declaration_places(obj)
    yield from _tag_problems(resource.kind, own[0], own[1].get(ISOLATION_TAG_ANNOTATION), key)
    namespaced = bool(mapping(obj.get("metadata")).get("namespace"))
    tag = own[1].get(ISOLATION_TAG_ANNOTATION)
    tags = IsolationTags(obj, key)  # a template's two tags cover the same devices: written once
    if namespaced and _well_formed(tag, key) and not tags.own_matches():
        yield Violation(
            (*own[0], "annotations", ISOLATION_TAG_ANNOTATION),
            "isolation tag does not match the object: it was edited after tagging",
            facet="digest-mismatch",
        )
    for place, claim_annotations in claim_place:
        claim_tag = claim_annotations.get(ISOLATION_TAG_ANNOTATION)
        yield from _tag_problems(resource.kind, place, claim_tag, key, claim=True)
        if namespaced and _well_formed(claim_tag, key) and not tags.claim_matches():
            yield Violation(
                (*place, "annotations", ISOLATION_TAG_ANNOTATION),
                "claim tag in spec.metadata does not match the claims the template makes: it was edited after tagging",
                facet="digest-mismatch",
            )
        for declaration in _SHARED_DECLARATIONS if claim_tag is not None else ():
            if claim_annotations.get(declaration) != own[1].get(declaration):
                yield Violation(
                    (*place, "annotations"),
                    f"spec.metadata declares {declaration} {claim_annotations.get(declaration)!r} for the claims made "
                    f"from the template, the template itself {own[1].get(declaration)!r}: they must agree",
                    facet="declarations-disagree",
                )
    if not namespaced:
        yield Violation(
            ("metadata",),
            f"accelerator {resource.kind} has no metadata.namespace, so its isolation tag cannot be verified: the "
            "tag binds the namespace the object lands in, and a manifest without one lands wherever "
            "`kubectl apply -n` puts it; set metadata.namespace",
            facet="no-namespace",
        )


#: What a template declares for itself and for its claims alike (both tags cover them).
_SHARED_DECLARATIONS = (SANITIZATION_ANNOTATION, TENANT_ANNOTATION)


def _well_formed(tag: object, key: str | bytes | None) -> bool:
    return isinstance(tag, str) and bool(_WELL_FORMED.fullmatch(tag)) and (key is None or tag.startswith(HMAC_PREFIX))


def _tag_problems(
    kind: str, place: tuple[str, ...], tag: object, key: str | bytes | None, *, claim: bool = False
) -> Iterator[Violation]:
    """Presence and form of the tag at `place` (a template's `spec.metadata` with `claim`)."""
    name = f"claim tag ({ISOLATION_TAG_ANNOTATION} in spec.metadata)" if claim else "isolation tag"
    path = (*place, "annotations", ISOLATION_TAG_ANNOTATION)
    if tag is None:
        what = f"no {name}: the claims made from it carry none" if claim else f"no {ISOLATION_TAG_ANNOTATION}"
        yield Violation(place, f"accelerator {kind} has {what}", facet="missing")
    elif not isinstance(tag, str) or not _WELL_FORMED.fullmatch(tag):
        yield Violation(
            path, f"{name} {tag!r} is malformed; expected sha256:<64 hex> or hmac-sha256:<64 hex>", facet="malformed"
        )
    elif key is not None and not tag.startswith(HMAC_PREFIX):
        yield Violation(path, f"an HMAC key is configured, so the {name} must be hmac-sha256:", facet="not-hmac")


def _admission(target: AdmissionTarget) -> Admission:
    """Presence, format and agreement; with a key, the HMAC form. Verifying the digest needs
    the key and SHA-256, which CEL has not: the webhook does that (`dra-guard webhook`); so
    does a namespace-less object, which the API server always gives a namespace."""
    pattern = "^hmac-sha256:[0-9a-f]{64}$" if target.config.get(HMAC_KEY_ENV) is not None else _WELL_FORMED.pattern
    if not pattern.startswith("^"):
        pattern = f"^{pattern}$"

    def present(place: str) -> str:
        return annotation(ISOLATION_TAG_ANNOTATION, place)

    def formed(place: str) -> str:
        return f"!{present(place)} || {annotation_value(ISOLATION_TAG_ANNOTATION, place)}.matches('{pattern}')"

    def agree(declaration: str) -> str:
        own, claim = annotation(declaration), annotation(declaration, CLAIM_METADATA)
        return on_template(
            f"!{present(CLAIM_METADATA)} || (!{own} && !{claim}) || ({own} && {claim} && "
            f"{annotation_value(declaration)} == {annotation_value(declaration, CLAIM_METADATA)})"
        )

    malformed = "expected sha256:<64 hex> or hmac-sha256:<64 hex> (hmac-sha256 when a key is configured)"
    return Admission(
        kinds=tuple(sorted(CLAIM_KINDS)),
        condition=has_accelerator_request(target.config),
        validations=(
            Validation(
                expression=present("object.metadata"),
                message=f"accelerator claim has no {ISOLATION_TAG_ANNOTATION}",
            ),
            Validation(expression=formed("object.metadata"), message=f"isolation tag is malformed; {malformed}"),
            Validation(
                expression=on_template(present(CLAIM_METADATA)),
                message=f"accelerator claim template has no claim tag ({ISOLATION_TAG_ANNOTATION} in "
                "spec.metadata): the claims made from it carry none",
            ),
            Validation(
                expression=on_template(formed(CLAIM_METADATA)),
                message=f"claim tag ({ISOLATION_TAG_ANNOTATION} in spec.metadata) is malformed; {malformed}",
            ),
            *(
                Validation(
                    expression=agree(declaration),
                    message=f"spec.metadata declares {declaration} for the claims made from the template "
                    "differently from the template itself: they must agree",
                )
                for declaration in _SHARED_DECLARATIONS
            ),
        ),
        # The digest itself is the webhook's: the policy decides presence, format and agreement.
        covers=frozenset({"missing", "malformed", "not-hmac", "declarations-disagree"}),
    )


ADMISSION = _admission
