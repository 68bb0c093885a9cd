"""What the engine produces: findings about objects, errors about unreadable input, and the
report that holds both."""

from __future__ import annotations

from dataclasses import dataclass, field
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

    def __str__(self) -> str:
        return f"{self.kind or '?'}/{self.namespace or '-'}/{self.name or '-'}"


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


@dataclass
class Report:
    """One check's outcome, in the order the renderers print it."""

    findings: list[Finding] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    files: int = 0
    objects: int = 0


def json_pointer(path: tuple[str | int, ...]) -> str:
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)
