"""What the engine produces: findings about objects, errors about unreadable input, and the
report that holds both."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from enum import IntEnum


class Severity(IntEnum):
    """Ordered so that `severity >= fail_on` reads naturally."""

    LOW = 1
    MEDIUM = 2
    HIGH = 3
    CRITICAL = 4

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r}; use one of {', '.join(s.label for s in cls)}") from None


# Slots: a report of many findings, and the facts behind pending ones, stay small.
@dataclass(frozen=True, slots=True)
class ObjectRef:
    api_version: str
    kind: str
    namespace: str
    name: str

    #: `metadata.generateName`, shown when the object has no name.
    generate_name: str = ""

    def __str__(self) -> str:
        return f"{self.kind or '?'}/{self.namespace or '-'}/{self.name or self.generate_name or '-'}"


@dataclass(frozen=True, slots=True)
class WaiverTerms:
    """Who answers for a waiver and until when, and where it is written."""

    #: Who answers for it (a team, a ticket), when the waiver names one.
    owner: str | None = None
    #: The last day it waives (UTC), when it has one.
    expires: date | None = None
    #: Where it is written: "annotation", or the configuration entry ("waivers[2] in
    #: .dra-guard.yaml"); "configuration" for what an option accepts (DRA016's classes).
    source: str = "annotation"

    @property
    def external(self) -> bool:
        """Whether it is written outside the object (SARIF's `external` suppressions)."""
        return self.source != "annotation"


#: The terms of a plain annotation waiver (a reason alone), shared.
ANNOTATION_WAIVER = WaiverTerms()
#: The terms of a finding an option accepts (`Resolved.accepted`), shared.
ACCEPTED_BY_CONFIGURATION = WaiverTerms(source="configuration")


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str
    severity: Severity
    message: str
    object: ObjectRef
    #: JSON pointer into the object (RFC 6901).
    path: str
    remediation: str
    file: str | None = None
    line: int | None = None
    #: Where an object without a file came from: a cdk8s construct path, a Pulumi URN.
    origin: str | None = None
    #: The finding depends on other objects of the input, not on this object alone.
    cross_object: bool = False
    #: The reason of the waiver that waives it: its `ignore-<rule>` annotation or the
    #: configuration's `waivers` entry (waived findings only).
    waiver: str | None = None
    #: JSON pointers of what else in the object the finding rests on: () for nothing but
    #: its own path, None for anything in the object (see `Violation.evidence`).
    evidence: tuple[str, ...] | None = None
    #: Which of the rule's checks found it (the rule's `FACETS`; "" for a rule with one).
    facet: str = ""
    #: The waiver's owner, expiry and source (waived findings only; None read as a plain
    #: annotation's).
    waiver_terms: WaiverTerms | None = None


@dataclass(frozen=True, slots=True)
class InputError:
    """Input that could not be read or understood; it makes the CLI exit 2."""

    file: str
    line: int | None
    message: str
    #: The rule that failed, when the error is a rule's exception rather than the input's.
    rule: str | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}" if self.line else f"{self.file}: {self.message}"


@dataclass(frozen=True)
class Unchecked:
    """Input that was left unchecked on purpose (a Helm chart without helm), and why; or
    checked only in part (a kustomization without kustomize: its files as written)."""

    path: str
    reason: str
    #: What it is, for the summary: "chart", "kustomization" or "symlinked folder".
    what: str = "chart"
    #: "not checked", or "rendered partially".
    status: str = "not checked"

    def __str__(self) -> str:
        return f"{self.path}: {self.status}: {self.reason}"


@dataclass(frozen=True, slots=True, order=True)
class BaselineEntry:
    """One finding as a baseline file records it (`dra-guard check --write-baseline`)."""

    #: The finding's stable fingerprint (SARIF's `partialFingerprints`): rule, object, JSON pointer.
    fingerprint: str
    rule: str
    #: `Kind/namespace/name`.
    object: str
    #: For people reading the file; not matched on alone.
    message: str


@dataclass
class Report:
    """One check's outcome, in the order the renderers print it."""

    findings: list[Finding] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    #: Files checked.
    files: int = 0
    objects: int = 0
    #: Findings a waiver with a reason waived (`Finding.waiver`): an `ignore-<rule>`
    #: annotation or a `waivers` entry of the configuration, not expired.
    waived: list[Finding] = field(default_factory=list)
    #: Files a walk found that are not Kubernetes manifests.
    skipped: list[str] = field(default_factory=list)
    unchecked: list[Unchecked] = field(default_factory=list)
    #: The baseline file the findings were compared with (`check --baseline`); None without one.
    baseline: str | None = None
    #: Findings the baseline records: reported as such, and never failing the check
    #: (`findings` then holds only the new ones).
    baselined: list[Finding] = field(default_factory=list)
    #: Entries of the baseline that no finding matches any more: fixed, waived or changed.
    gone: list[BaselineEntry] = field(default_factory=list)


def json_pointer(path: tuple[str | int, ...]) -> str:
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)
