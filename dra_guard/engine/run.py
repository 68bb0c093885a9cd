"""Runs the rules over a set of objects: for each object, each enabled rule, unless waived."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import date, datetime, timezone
from typing import Any, NamedTuple, Protocol

from dra_guard.contract.catalog import IGNORE_ANNOTATION_PREFIX, POD_CONTROLLER_KINDS
from dra_guard.contract.findings import (
    ACCEPTED_BY_CONFIGURATION,
    ANNOTATION_WAIVER,
    Finding,
    InputError,
    ObjectRef,
    Report,
    Severity,
    WaiverTerms,
    json_pointer,
)
from dra_guard.contract.waivers import WaiverText, read_waiver
from dra_guard.model.manifest import Path, is_list_kind, items, mapping, shape_problems
from dra_guard.model.owners import made_by
from dra_guard.model.pod_templates import PodSpecView, api_group, own_annotations_stay_off_pods
from dra_guard.ruleapi.admission_form import KIND_RESOURCES
from dra_guard.ruleapi.config import NON_WAIVABLE, WAIVERS, Config
from dra_guard.ruleapi.context import Context, Fact, Location, Pending, Resolved, Resource, Violation
from dra_guard.ruleapi.declarations import RuleModuleError
from dra_guard.ruleapi.options import ConfiguredWaiver
from dra_guard.rules import RULES, Rule


class LoadedDocument(Location, Protocol):
    """A document from a loader stream: its location and the object read from it."""

    @property
    def obj(self) -> Any: ...


def _expand(
    obj: Mapping[str, Any], document: Location | None, errors: list[InputError], origin: str | None = None
) -> Iterator[Resource]:
    """Each item of a `List` / `*List`, with its `/items/N` prefix."""
    nested = next(
        (index for index, item in enumerate(items(obj.get("items"))) if isinstance(item, Mapping) and "items" in item),
        None,
    )
    if nested is not None:
        # kubectl refuses the whole List ("... is not a list: no Items field in this
        # object", cli-runtime FlattenListVisitor): none of it would be applied.
        file = document.file if document else "<object>"
        line = document.line_of(("items", nested)) if document else None
        errors.append(
            InputError(file, line, f"List item {nested} is itself a List: kubectl refuses a List inside a List")
        )
        return
    for index, item in enumerate(items(obj.get("items"))):
        if isinstance(item, Mapping):
            yield Resource(item, document, ("items", index), origin)
        else:
            file = document.file if document else "<object>"
            line = document.line_of(("items", index)) if document else None
            errors.append(InputError(file, line, f"List item {index} is a {type(item).__name__}, not an object"))


#: Why a controller's or operator's own `ignore-<rule>` annotation does not waive a finding
#: in its pod template, and where the waiver belongs instead.
_NOT_ON_THE_PODS = (
    "is on the {kind} itself, and the pods it makes carry only their template's annotations (they would be "
    "denied): put it in {place}"
)
#: The same for a pod spec written without metadata of its own, in a kind whose operator is
#: not known to pass its own annotations on (an unknown kind, or Argo's workflow-level claims
#: for templates defined elsewhere): no annotation in the object is known to reach its pods.
_NO_PLACE_ON_THE_PODS = (
    "is on the {kind} itself, which is not known to pass it on to the pods it makes (they may be denied), "
    "and this pod spec has no annotations of its own: waive it with a `waivers` entry of the configuration"
)


def _expired(expires: date | None, today: date) -> bool:
    """Whether a waiver with this last day no longer waives on `today`."""
    return expires is not None and expires < today


def _own_waiver_stays_off_pods(resource: Resource) -> bool:
    """Whether the pods made from the object's pod templates lack its own annotations:
    Kubernetes' own controllers (`POD_CONTROLLER_KINDS` in their own API group: Volcano's
    `batch.volcano.sh` Job is another operator's) and every operator's kind but those that
    pass them on (`pod_templates.own_annotations_stay_off_pods`)."""
    if resource.kind in POD_CONTROLLER_KINDS and api_group(resource.obj) == KIND_RESOURCES[resource.kind][0]:
        return True
    return own_annotations_stay_off_pods(resource.obj)


def _where_it_belongs(pod: PodSpecView) -> str:
    """Where a waiver for findings in a pod template goes, said in `_NOT_ON_THE_PODS`: its
    metadata's annotations, or every place its pods get annotations from (an Argo
    template's: the workflow's `spec.podMetadata` too)."""
    places = pod.annotation_places()
    if len(places) == 1 and places[0][-2:] == ("metadata", "annotations"):
        return "the pod template's metadata.annotations"
    return f"the annotations its pods get, at {' or '.join(json_pointer(place) for place in places)}"


def _annotation_waiver(resource: Resource, rule_id: str, path: Path, today: date) -> WaiverText | None:
    """The `ignore-<rule>` annotation on the object or on the pod template that `path` is in,
    read as a waiver (`read_waiver`): the first that waives, else the first there is (which
    says why it does not: no reason, a malformed field, expired); None when there is none.

    A finding in a pod template is one its pods will have, and admission judges the pods
    (the admission policies read waivers so too: `admission.policy.waived`).  Where they
    carry only the template's annotations (`_own_waiver_stays_off_pods`), the object's own
    annotation would waive the workload and leave every pod it makes to be denied, so only
    the template's waives there.  A pod spec written without metadata of its own (an
    unknown operator's, found by the structural search) then has no annotation that waives."""
    key = IGNORE_ANNOTATION_PREFIX + rule_id
    own = mapping(mapping(resource.obj.get("metadata")).get("annotations"))
    sources: list[Mapping[str, Any]] = [own]
    pod = resource.pod_at(path) if resource.pods else None
    if pod is not None:
        if pod.is_template and _own_waiver_stays_off_pods(resource):
            template = mapping(pod.template_metadata.get("annotations"))
            if key in template or key not in own:
                sources = [template]
            elif pod.metadata_path is None:
                return WaiverText(problem=_NO_PLACE_ON_THE_PODS.format(kind=resource.kind))
            else:
                place = _where_it_belongs(pod)
                return WaiverText(problem=_NOT_ON_THE_PODS.format(kind=resource.kind, place=place))
        else:
            sources.append(mapping(pod.template_metadata.get("annotations")))
    found: WaiverText | None = None
    for annotation_map in sources:
        if key in annotation_map:
            waiver = read_waiver(annotation_map[key])
            if waiver.problem is None and not _expired(waiver.expires, today):
                return waiver
            found = found or waiver
    return found


def _finding(
    rule: Rule,
    resource: Resource,
    violation: Violation | Pending,
    message: str,
    waiver: str | None = None,
    *,
    terms: WaiverTerms | None = None,
) -> Finding:
    # Interned: the same message and path recur across many objects (every CronJob asking
    # for nvidia.com/gpu), and the report keeps every finding to the end.
    path, file, line = _located(resource, violation.path)
    return Finding(
        rule=rule.id,
        severity=violation.severity or rule.severity,
        message=sys.intern(message),
        object=resource.ref,
        path=path,
        remediation=rule.remediation,
        file=file,
        line=line,
        origin=resource.origin,
        cross_object=isinstance(violation, Pending) or violation.cross_object,
        waiver=waiver,
        evidence=_evidence(resource, violation.evidence),
        facet=violation.facet,
        waiver_terms=terms,
    )


def _located(resource: Resource, path: Path) -> tuple[str, str | None, int | None]:
    """Where a finding at `path` of the resource is: its JSON pointer in the document
    (interned, see `_finding`), its file and its line.  For a finding made now and for a
    pending one alike."""
    file = resource.document.file if resource.document else None
    return sys.intern(json_pointer((*resource.prefix, *path))), file, resource.line_of(path)


def _evidence(resource: Resource, evidence: tuple[Path, ...] | None) -> tuple[str, ...] | None:
    return None if evidence is None else tuple(json_pointer((*resource.prefix, *part)) for part in evidence)


def _describe(error: BaseException) -> str:
    try:
        text = str(error)
    except Exception:  # even printing it fails (an integer of thousands of digits)
        text = ""
    return f"{type(error).__name__}: {text[:200]}" if text else type(error).__name__


def _failure(resource: Resource, what: str, error: Exception, rule_id: str | None = None) -> InputError:
    """An exception while checking `resource`, as an input error naming the object and file."""
    document = resource.document
    where = document.file if document else (resource.origin or "<object>")
    try:
        line = resource.line_of(())
    except Exception:
        line = None
    where_in = f" at {json_pointer(resource.prefix)}" if resource.prefix else ""
    return InputError(
        where,
        line,
        f"{what} {resource.ref}{where_in}: {_describe(error)}; the other rules and objects were checked",
        rule_id,
    )


class _PendingKind(NamedTuple):
    """What the pending findings of one rule and check mostly share (kept once)."""

    rule: Rule
    severity: Severity
    origin: str | None
    waiver: str | None
    terms: WaiverTerms | None
    evidence: tuple[str, ...] | None
    facet: str
    note: str
    resolve: Callable[..., str | Resolved | None]


class _Deferred(NamedTuple):
    """A pending finding: everything but its message decided while its object was at hand.

    Kept as the few facts that vary, the rest shared (`_PendingKind`), and made a finding
    once it is resolved: some rules leave one for every claim of the input.
    """

    kind: _PendingKind
    object: ObjectRef
    path: str
    file: str | None
    line: int | None
    args: tuple[Any, ...]

    def finding(self, message: str, severity: Severity, cross_object: bool) -> Finding:
        kind = self.kind
        return Finding(
            rule=kind.rule.id,
            severity=severity,
            message=sys.intern(message),
            object=self.object,
            path=self.path,
            remediation=kind.rule.remediation,
            file=self.file,
            line=self.line,
            origin=kind.origin,
            cross_object=cross_object,
            waiver=kind.waiver,
            evidence=kind.evidence,
            facet=kind.facet,
            waiver_terms=kind.terms,
        )


def _covers(entry: ConfiguredWaiver, resource: Resource, owner_references: bool) -> bool:
    """Whether a `waivers` entry's globs match the object (its generateName when it has no
    name) or, where `owner_references` says its owner references are to be believed, one of
    Kubernetes' controllers that made it (`model.owners.made_by`, which says why not always):
    an entry for a Deployment waives the ReplicaSet and the Pods admission judges of it, as
    `check` waives the Deployment."""
    ref = resource.ref
    if entry.matches(entry.rule, ref.kind, ref.namespace, ref.name or ref.generate_name):
        return True
    if not owner_references:
        return False
    return any(entry.matches(entry.rule, kind, ref.namespace, name) for kind, name in made_by(resource.obj))


class _RulePlan:
    """What a configuration makes of the rule set: the same for every check under it.

    Front ends that check one object at a time (the Pulumi pack: one check per resource)
    would otherwise work it out again for each object.
    """

    def __init__(self, config: Config, registered: tuple[Rule, ...]) -> None:
        #: The registry it was made from (tests and extra rule modules can change it).
        self.registered = registered
        self.rules = [rule for rule in registered if config.rule_enabled(rule.id)]
        # Each rule says whether it can be waived; the configuration may override them all.
        configured = config.get(NON_WAIVABLE)
        declared = frozenset(rule.id for rule in registered if not rule.waivable)
        self.non_waivable = declared if configured is None else configured
        #: The configuration's `waivers` by rule ID, in order, each with its terms.
        waivers: dict[str, list[tuple[ConfiguredWaiver, WaiverTerms]]] = {}
        for entry in config.get(WAIVERS):
            where = f"waivers[{entry.index}]" + (f" in {config.source}" if config.source else "")
            waivers.setdefault(entry.rule, []).append((entry, WaiverTerms(entry.owner, entry.expires, where)))
        self.waivers: Mapping[str, tuple[tuple[ConfiguredWaiver, WaiverTerms], ...]] = {
            rule_id: tuple(entries) for rule_id, entries in waivers.items()
        }
        #: The enabled rules for each kind, as kinds are met (filling it twice is harmless).
        self.by_kind: dict[str, list[Rule]] = {}

    def in_scope(self, kind: str) -> list[Rule]:
        rules = self.by_kind.get(kind)
        if rules is None:
            rules = self.by_kind[kind] = [rule for rule in self.rules if rule.applies_to(kind)]
        return rules


class _LastPlan:
    #: The configuration checked last and its plan: one tuple, replaced whole (thread-safe).
    last: tuple[Config, _RulePlan] | None = None


_PLANS = _LastPlan()


def _rule_plan(config: Config) -> _RulePlan:
    """The plan of `config`, made again only when the configuration (frozen) or the rules change."""
    registered = tuple(RULES.values())
    last = _PLANS.last
    if last is not None and (last[0] is config or last[0] == config) and last[1].registered == registered:
        return last[1]
    plan = _RulePlan(config, registered)
    _PLANS.last = (config, plan)
    return plan


@dataclass(slots=True)
class Part:
    """What checking one part of an input (a file) gave, before anything was resolved:
    the findings and errors in order, the pending findings, and the facts the rules of
    other objects need (`Context.fact_of`).  Made by `Checker.take_part`, taken by
    `Checker.add_part`."""

    objects: int
    findings: list[Finding]
    waived: list[Finding]
    errors: list[InputError]
    deferred: list[_Deferred]
    facts: list[Fact]


class Checker:
    """Runs every rule on each resource as it arrives, then resolves pending findings.

    Findings are made while the resource's document still has its node tree, so their
    lines cost nothing.  Nothing of a resource is kept once it is checked: what other
    objects' rules need goes into the context's indexes, and a finding that depends on
    objects still to come (`Pending`) waits, as a finding without its message, for
    `finish()`.  Memory therefore does not grow with the size of the objects checked.
    """

    def __init__(
        self,
        config: Config | None = None,
        complete: bool = True,
        *,
        part: bool = False,
        most_findings: int | None = None,
        owner_references: bool = True,
    ) -> None:
        """`part=True`: these objects are a part of a check spread over processes (see
        `take_part`); nothing is resolved here, and nothing is settled early.
        `most_findings`: past that many findings (pending and waived ones included), the
        rules stop, and an input error says so (the admission webhook's bound on what one
        review may make: its answer lists them, and 28,000 of them were 42 MiB and a 2.7 MB
        denial); None: no bound.
        `owner_references`: whether `waivers` entries also match the controllers an object's
        controller owner reference names (`model.owners`); False where whoever wrote the
        object may not write those controllers (the webhook, for a writer that is not a
        workload controller)."""
        self.config = config or Config()
        self._owner_references = owner_references
        self.most_findings = most_findings
        #: Whether `most_findings` was reached: the rules stopped, the rest is unchecked.
        self.stopped = False
        self.context = Context(self.config, complete=complete, logging=part)
        #: Added to the objects' positions, so that parts checked apart number them apart.
        self._serial_base = 0
        plan = _rule_plan(self.config)
        self._in_scope = plan.in_scope
        self._non_waivable = plan.non_waivable
        self._waivers = plan.waivers
        #: The day expiry dates are compared with: the configuration's, else today's (UTC).
        self._today = self.config.today or datetime.now(timezone.utc).date()
        #: The terms of annotation waivers that give an owner or an expiry, shared.
        self._terms: dict[tuple[str | None, date | None], WaiverTerms] = {(None, None): ANNOTATION_WAIVER}
        self._deferred: list[_Deferred] = []
        self._pending_kinds: dict[tuple[Any, ...], _PendingKind] = {}
        #: One int object per line number that pending findings keep (most are > 256).
        self._lines: dict[int, int] = {}
        self.report = Report()

    def add(self, resource: Resource) -> None:
        self.report.objects += 1
        resource.serial = self._serial_base + self.report.objects
        try:
            self._read(resource)
        except Exception as error:  # a shape nobody foresaw: say so, and check the rest
            self.add_error(_failure(resource, "dra-guard could not read", error))
            return
        for rule in self._in_scope(resource.kind):
            if self.stopped:
                return
            try:
                self._run(rule, resource)
            except Exception as error:
                self.add_error(_failure(resource, f"rule {rule.id} failed on", error, rule.id))

    def _read(self, resource: Resource) -> None:
        # The requests are the resource's, worked out once for the rules and the context too.
        for path, problem in shape_problems(resource.obj, resource.requests):
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
        self.context.add(resource)

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
        if not is_list_kind(obj):
            self.add(Resource(obj, document, (), origin))
            return
        errors: list[InputError] = []
        for resource in _expand(obj, document, errors, origin):
            self.add(resource)
        for error in errors:
            self.add_error(error)

    def feed(self, item: LoadedDocument | InputError) -> None:
        """One item of a loader stream: a document's object, or an input error, in order."""
        if isinstance(item, InputError):
            self.add_error(item)
            return
        try:
            self.add_object(item.obj, item)
        except Exception as error:  # each resource is protected; this is the List expansion
            self.add_error(
                InputError(item.file, item.line, f"dra-guard could not check document {item.index}: {_describe(error)}")
            )

    def begin_part(self, position: int) -> None:
        """The objects that follow are those of the input's part at `position` (a file, in
        the order of the whole input): objects of different parts get different serials."""
        self._serial_base = position << 32

    def take_part(self) -> Part:
        """What was checked since the last `take_part` (or the start), as one part of the
        input, and start anew: its findings, errors, pending findings and facts, for
        `add_part` of the check that resolves the whole input."""
        context_log = self.context.log
        part = Part(
            self.report.objects,
            self.report.findings,
            self.report.waived,
            self.report.errors,
            self._deferred,
            [] if context_log is None else context_log,
        )
        self.report.objects = 0
        self.report.findings, self.report.waived, self.report.errors = [], [], []
        self._deferred = []
        if context_log is not None:
            self.context.log = []
        return part

    def add_part(self, part: Part) -> None:
        """A part checked elsewhere (`take_part`), in its place in the input: as if its
        objects had been checked here (the findings are the same, `tests/test_distribute.py`)."""
        self.report.objects += part.objects
        self.report.findings.extend(part.findings)
        self.report.waived.extend(part.waived)
        self.report.errors.extend(part.errors)
        apply = self.context.apply
        for fact in part.facts:
            apply(fact)
        self._deferred.extend(part.deferred)

    def _run(self, rule: Rule, resource: Resource) -> None:
        resource.accelerator_consulted = False
        found = iter(rule.check(resource, self.context))
        # Most rules find nothing in most objects: no list for them.
        first = next(found, None)
        if first is None:
            return
        if self.most_findings is None:
            violations: list[Violation | Pending] = [first, *found]
        else:
            # Taken one past the room left, never all: a rule's generator stops being asked.
            room = self.most_findings - len(self.report.findings) - len(self.report.waived) - len(self._deferred)
            violations = [first, *itertools.islice(found, max(room, 0))]
            if len(violations) > room:
                del violations[max(room, 0) :]
                self._stop(resource)
        if resource.accelerator_consulted and violations:
            # Findings about accelerator requests wait, where a DeviceClass of the input may
            # still show a request's class to be a NIC's or a CPU's (issue 20, point 6).
            violations = self.context.unless_not_accelerators(resource, violations)
        for violation in violations:
            if violation.facet not in rule.facet_codes:
                raise RuleModuleError(
                    f"rule module {rule.module} yields facet {violation.facet!r}, which its FACETS do not declare"
                )
            # A waived finding is reported as waived, with its reason, not as a finding.
            waiver, terms, note = self._waiver(rule, resource, violation.path)
            if isinstance(violation, Pending):
                # What the finding will hold, without making one now: most pending findings
                # resolve to nothing (those that wait for ResourceSlices the input never gives).
                key = (
                    rule.id,
                    violation.severity or rule.severity,
                    resource.origin,
                    waiver,
                    terms,
                    _evidence(resource, violation.evidence),
                    violation.facet,
                    note,
                    violation.resolve,
                )
                kind = self._pending_kinds.get(key)
                if kind is None:
                    kind = self._pending_kinds[key] = _PendingKind(rule, *key[1:])
                path, file, line = _located(resource, violation.path)
                if line is not None:
                    line = self._lines.setdefault(line, line)
                self._deferred.append(_Deferred(kind, resource.ref, path, file, line, violation.args))
            else:
                finding = _finding(rule, resource, violation, violation.message + note, waiver, terms=terms)
                (self.report.findings if waiver is None else self.report.waived).append(finding)

    def _stop(self, resource: Resource) -> None:
        self.stopped = True
        document = resource.document
        self.add_error(
            InputError(
                document.file if document else (resource.origin or "<object>"),
                None,
                f"{resource.ref} makes more than {self.most_findings} findings; the rules stopped there, and the "
                "rest is unchecked",
            )
        )

    def _waiver(self, rule: Rule, resource: Resource, path: Path) -> tuple[str | None, WaiverTerms | None, str]:
        """What waives a finding of `rule` at `path` of `resource`: the reason and terms of its
        `ignore-<rule>` annotation or, failing that, of the first `waivers` entry of the
        configuration that matches it (None, None: nothing), and the note the finding gets
        when something would have waived it but does not (expired, malformed, not waivable)."""
        annotation = _annotation_waiver(resource, rule.id, path, self._today)
        entries = self._waivers.get(rule.id)
        configured = (
            [(entry, terms) for entry, terms in entries if _covers(entry, resource, self._owner_references)]
            if entries
            else []
        )
        if annotation is None and not configured:
            return None, None, ""
        key = IGNORE_ANNOTATION_PREFIX + rule.id
        # Any annotation of a rule no one may waive gets that said, not why it would not waive
        # (malformed, or on a controller whose pods do not carry it).
        if rule.id in self._non_waivable and (configured or annotation is not None):
            return None, None, f" ({rule.id} cannot be waived)"
        notes: list[str] = []
        if annotation is not None:
            if annotation.problem is not None:
                notes.append(f"the {key} annotation {annotation.problem}, so it is ignored")
            elif annotation.expires is not None and annotation.expires < self._today:
                notes.append(f"the waiver expired on {annotation.expires.isoformat()}")
            else:
                owned = (annotation.owner, annotation.expires)
                terms = self._terms.get(owned)
                if terms is None:
                    terms = self._terms[owned] = WaiverTerms(*owned)
                return annotation.reason, terms, ""
        for entry, terms in configured:
            if entry.expires is not None and entry.expires < self._today:
                notes.append(f"the waiver expired on {entry.expires.isoformat()}: {terms.source}")
            else:
                return entry.reason, terms, ""
        return None, None, " (" + "; ".join(notes) + ")"

    def finish(self) -> Report:
        for deferred in self._deferred:
            kind = deferred.kind
            try:
                message = kind.resolve(*deferred.args)
            except Exception as error:
                rule_id = kind.rule.id
                where = f"{deferred.file}" if deferred.file else (kind.origin or str(deferred.object))
                self.add_error(
                    InputError(
                        where,
                        deferred.line,
                        f"rule {rule_id} failed on {deferred.object} at {deferred.path or '/'}: {_describe(error)}; "
                        "the other rules and objects were checked",
                        rule_id,
                    )
                )
                continue
            if isinstance(message, Resolved):
                resolved = deferred.finding(
                    message.message + kind.note, message.severity or kind.severity, message.cross_object
                )
                if message.accepted is not None and resolved.waiver is None:
                    resolved = replace(resolved, waiver=message.accepted, waiver_terms=ACCEPTED_BY_CONFIGURATION)
            elif message is not None:
                resolved = deferred.finding(message + kind.note, kind.severity, True)
            else:
                continue
            (self.report.findings if resolved.waiver is None else self.report.waived).append(resolved)
        self._deferred.clear()
        self.context.forget_check_facts()
        for findings in (self.report.findings, self.report.waived):
            findings.sort(key=lambda f: (f.file or "", f.line or 0, f.rule, str(f.object), f.path, f.message))
        return self.report


def check_stream(items: Iterable[LoadedDocument | InputError], config: Config | None = None) -> Report:
    """Check documents as a loader stream yields them, keeping its errors in order."""
    checker = Checker(config)
    for item in items:
        checker.feed(item)
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
    objects = list(objects)
    checker = Checker(config, complete)
    # Every object is at hand: when none is a ResourceSlice or a List (which may hold one),
    # no slice can come, and the rules that wait for the input's slices leave no pending
    # finding that would resolve to nothing (the unsatisfiable-claim rule: two per claim,
    # the largest part of enforce()'s and the pack's cost for a claim template).
    checker.context.input_has_no_slices = not any(_may_hold_slices(obj) for obj in objects)
    origin_list = list(origins) if origins is not None else None
    for index, obj in enumerate(objects):
        checker.add_object(obj, None, origin_list[index] if origin_list is not None else None)
    return checker.finish()


def _may_hold_slices(obj: object) -> bool:
    return not isinstance(obj, Mapping) or obj.get("kind") == "ResourceSlice" or is_list_kind(obj)
