"""Runs the rules over a set of objects: for each object, each enabled rule, unless waived."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dra_guard.catalog import IGNORE_ANNOTATION_PREFIX
from dra_guard.config import Config
from dra_guard.context import Context, Resource, Violation
from dra_guard.findings import Finding, InputError, json_pointer
from dra_guard.loader import Document
from dra_guard.manifest import is_list_kind, items, mapping, shape_problems
from dra_guard.rules import RULES, Rule


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    files: int = 0
    objects: int = 0


def _expand(obj: Mapping[str, Any], document: Document | None, errors: list[InputError]) -> Iterator[Resource]:
    """The object itself, or each item of a `List` / `*List` with its `/items/N` prefix."""
    if not is_list_kind(obj):
        yield Resource(obj, document)
        return
    for index, item in enumerate(items(obj.get("items"))):
        if isinstance(item, Mapping):
            yield Resource(item, document, ("items", index))
        else:
            file = document.file if document else "<object>"
            line = document.line_of(("items", index)) if document else None
            errors.append(InputError(file, line, f"List item {index} is a {type(item).__name__}, not an object"))


def resources_from_documents(documents: Iterable[Document], errors: list[InputError]) -> list[Resource]:
    """One Resource per object; `List`/`*List` documents give one per item."""
    resources: list[Resource] = []
    for document in documents:
        if isinstance(document.obj, Mapping):
            resources.extend(_expand(document.obj, document, errors))
        else:
            errors.append(
                InputError(
                    document.file,
                    document.line,
                    f"document {document.index} is a {type(document.obj).__name__}, not a Kubernetes object",
                )
            )
    return resources


def _waiver(resource: Resource, rule_id: str) -> str | None:
    """The reason given to ignore `rule_id` on the object or its pod template, if any."""
    key = IGNORE_ANNOTATION_PREFIX + rule_id
    sources: list[Mapping[str, Any]] = [mapping(mapping(resource.obj.get("metadata")).get("annotations"))]
    if resource.pod is not None:
        sources.append(mapping(resource.pod.template_metadata.get("annotations")))
    for annotation_map in sources:
        reason = annotation_map.get(key)
        if isinstance(reason, str) and reason.strip():
            return reason
    return None


def _has_empty_waiver(resource: Resource, rule_id: str) -> bool:
    key = IGNORE_ANNOTATION_PREFIX + rule_id
    return key in mapping(mapping(resource.obj.get("metadata")).get("annotations"))


def _finding(rule: Rule, resource: Resource, violation: Violation, note: str = "") -> Finding:
    path = (*resource.prefix, *violation.path)
    return Finding(
        rule=rule.id,
        severity=violation.severity or rule.severity,
        message=violation.message + note,
        object=resource.ref,
        path=json_pointer(path),
        remediation=rule.remediation,
        file=resource.document.file if resource.document else None,
        line=resource.line_of(violation.path),
    )


def check_resources(resources: Sequence[Resource], config: Config | None = None) -> Report:
    config = config or Config()
    report = Report(objects=len(resources))
    context = Context(config, resources)
    rules = [rule for rule in RULES.values() if config.rule_enabled(rule.id)]
    for resource in resources:
        for path, problem in shape_problems(resource.obj):
            document = resource.document
            report.errors.append(
                InputError(
                    document.file if document else str(resource.ref),
                    resource.line_of(path),
                    f"{resource.ref}: {json_pointer((*resource.prefix, *path))} {problem}",
                )
            )
        for rule in rules:
            violations = list(rule.check(resource, context))
            if not violations:
                continue
            note = ""
            if _waiver(resource, rule.id) is not None:
                if rule.id not in config.non_waivable:
                    continue
                note = f" ({rule.id} cannot be waived)"
            elif _has_empty_waiver(resource, rule.id):
                note = f" (the {IGNORE_ANNOTATION_PREFIX}{rule.id} annotation gives no reason, so it is ignored)"
            report.findings.extend(_finding(rule, resource, violation, note) for violation in violations)
    report.findings.sort(key=lambda f: (f.file or "", f.line or 0, f.rule, str(f.object), f.path, f.message))
    return report


def check_objects(objects: Iterable[Mapping[str, Any]], config: Config | None = None) -> Report:
    """Check plain dicts (cdk8s synth output, Pulumi props, builder output)."""
    errors: list[InputError] = []
    resources = [resource for obj in objects for resource in _expand(obj, None, errors)]
    report = check_resources(resources, config)
    report.errors = errors + report.errors
    return report


def check_documents(documents: Sequence[Document], config: Config | None = None) -> Report:
    errors: list[InputError] = []
    resources = resources_from_documents(documents, errors)
    report = check_resources(resources, config)
    report.errors = errors + report.errors
    return report


__all__ = ["Report", "check_documents", "check_objects", "check_resources"]
