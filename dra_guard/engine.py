"""Runs the rules over a set of objects: for each object, each enabled rule, unless waived."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol

from dra_guard.catalog import IGNORE_ANNOTATION_PREFIX, has_visible_character
from dra_guard.config import NON_WAIVABLE, Config
from dra_guard.context import Context, Location, Resource, Violation
from dra_guard.findings import Finding, InputError, Report, json_pointer
from dra_guard.manifest import is_list_kind, items, mapping, shape_problems
from dra_guard.rules import RULES, Rule


class LoadedDocument(Location, Protocol):
    """A document from a loader stream: its location and the object read from it."""

    @property
    def obj(self) -> Any: ...


def _expand(
    obj: Mapping[str, Any], document: Location | None, errors: list[InputError], origin: str | None = None
) -> Iterator[Resource]:
    """The object itself, or each item of a `List` / `*List` with its `/items/N` prefix."""
    if not is_list_kind(obj):
        yield Resource(obj, document, (), origin)
        return
    for index, item in enumerate(items(obj.get("items"))):
        if isinstance(item, Mapping):
            yield Resource(item, document, ("items", index), origin)
        else:
            file = document.file if document else "<object>"
            line = document.line_of(("items", index)) if document else None
            errors.append(InputError(file, line, f"List item {index} is a {type(item).__name__}, not an object"))


def _waiver(resource: Resource, rule_id: str) -> str | None:
    """The `ignore-<rule>` annotation on the object or its pod template: its reason, "" when
    it gives none that can be read (which waives nothing), None when there is no such annotation."""
    key = IGNORE_ANNOTATION_PREFIX + rule_id
    sources: list[Mapping[str, Any]] = [mapping(mapping(resource.obj.get("metadata")).get("annotations"))]
    if resource.pod is not None:
        sources.append(mapping(resource.pod.template_metadata.get("annotations")))
    found: str | None = None
    for annotation_map in sources:
        if key in annotation_map:
            reason = annotation_map[key]
            # A reason that shows nothing (blanks, a zero-width space) gives no reason.
            if isinstance(reason, str) and has_visible_character(reason):
                return reason.strip()
            found = ""
    return found


def _finding(
    rule: Rule, resource: Resource, violation: Violation, note: str = "", waiver: str | None = None
) -> Finding:
    path = (*resource.prefix, *violation.path)
    evidence = violation.evidence
    return Finding(
        rule=rule.id,
        severity=violation.severity or rule.severity,
        message=violation.message + note,
        object=resource.ref,
        path=json_pointer(path),
        remediation=rule.remediation,
        file=resource.document.file if resource.document else None,
        line=resource.line_of(violation.path),
        origin=resource.origin,
        cross_object=violation.cross_object,
        waiver=waiver,
        evidence=None if evidence is None else tuple(json_pointer((*resource.prefix, *part)) for part in evidence),
    )


class Checker:
    """Runs the rules as resources arrive; cross-object rules run in `finish()`.

    Per-object findings are made while the resource's document still has its node tree,
    so their lines cost nothing; only cross-object findings may need a late lookup.
    """

    def __init__(self, config: Config | None = None, complete: bool = True) -> None:
        self.config = config or Config()
        self.context = Context(self.config, complete=complete)
        rules = [rule for rule in RULES.values() if self.config.rule_enabled(rule.id)]
        # Each rule says whether it can be waived; the configuration may override them all.
        configured = self.config.get(NON_WAIVABLE)
        declared = frozenset(rule.id for rule in RULES.values() if not rule.waivable)
        self._non_waivable = declared if configured is None else configured
        self._per_object = [rule for rule in rules if not rule.cross_object]
        self._cross_object = [rule for rule in rules if rule.cross_object]
        self._by_kind: dict[tuple[bool, str], list[Rule]] = {}
        self._resources: list[Resource] = []
        self.report = Report()

    def add(self, resource: Resource) -> None:
        self.report.objects += 1
        for path, problem in shape_problems(resource.obj):
            document = resource.document
            if path or resource.prefix:
                where = f"{resource.ref}: {json_pointer((*resource.prefix, *path))}"
            else:
                where = f"document {document.index}" if document else "object"
            self.report.errors.append(
                InputError(
                    document.file if document else str(resource.ref), resource.line_of(path), f"{where} {problem}"
                )
            )
        self._run(self._in_scope(False, resource.kind), resource)
        self.context.add(resource)
        self._resources.append(resource)

    def add_error(self, error: InputError) -> None:
        self.report.errors.append(error)

    def add_object(self, obj: object, document: Location | None = None, origin: str | None = None) -> None:
        """A document's or caller's object: expanded if it is a List, an error if no mapping."""
        if not isinstance(obj, Mapping):
            where = f"document {document.index}" if document else "object"
            self.add_error(
                InputError(
                    document.file if document else "<object>",
                    document.line if document else None,
                    f"{where} is a {type(obj).__name__}, not a Kubernetes object",
                )
            )
            return
        errors: list[InputError] = []
        for resource in _expand(obj, document, errors, origin):
            self.add(resource)
        for error in errors:
            self.add_error(error)

    def _in_scope(self, cross_object: bool, kind: str) -> list[Rule]:
        rules = self._by_kind.get((cross_object, kind))
        if rules is None:
            candidates = self._cross_object if cross_object else self._per_object
            rules = self._by_kind[(cross_object, kind)] = [rule for rule in candidates if rule.applies_to(kind)]
        return rules

    def _run(self, rules: list[Rule], resource: Resource) -> None:
        for rule in rules:
            violations = list(rule.check(resource, self.context))
            if not violations:
                continue
            note = ""
            reason = _waiver(resource, rule.id)
            if reason:
                if rule.id not in self._non_waivable:
                    waived = (_finding(rule, resource, violation, waiver=reason) for violation in violations)
                    self.report.waived.extend(waived)
                    continue
                note = f" ({rule.id} cannot be waived)"
            elif reason == "":
                note = f" (the {IGNORE_ANNOTATION_PREFIX}{rule.id} annotation gives no reason, so it is ignored)"
            self.report.findings.extend(_finding(rule, resource, violation, note) for violation in violations)

    def finish(self) -> Report:
        for resource in self._resources:
            self._run(self._in_scope(True, resource.kind), resource)
        for findings in (self.report.findings, self.report.waived):
            findings.sort(key=lambda f: (f.file or "", f.line or 0, f.rule, str(f.object), f.path, f.message))
        return self.report


def check_stream(items: Iterable[LoadedDocument | InputError], config: Config | None = None) -> Report:
    """Check documents as a loader stream yields them, keeping its errors in order."""
    checker = Checker(config)
    for item in items:
        if isinstance(item, InputError):
            checker.add_error(item)
        else:
            checker.add_object(item.obj, item)
    return checker.finish()


def check_objects(
    objects: Iterable[Mapping[str, Any]],
    config: Config | None = None,
    origins: Iterable[str] | None = None,
    complete: bool = True,
) -> Report:
    """Check plain dicts (cdk8s synth output, Pulumi props, builder output).

    `origins`, parallel to `objects`, says where each came from (construct path, URN);
    findings carry it as `origin`.  `complete=False` says the objects are part of a larger
    set the checker cannot see, so nothing is reported as missing from it.
    """
    checker = Checker(config, complete)
    origin_list = list(origins) if origins is not None else None
    for index, obj in enumerate(objects):
        checker.add_object(obj, None, origin_list[index] if origin_list is not None else None)
    return checker.finish()
