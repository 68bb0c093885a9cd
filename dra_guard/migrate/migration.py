"""Whole documents and whole files: the two pure entry points of `dra-guard migrate`.

`migrate_documents` works on plain objects; `migrate_file` on a file's bytes, and returns
the new text.  Neither reads nor writes anything.  A file is read exactly as `dra-guard
check` reads it, and is refused, untouched, when check would refuse it; the new text is
read back the same way and must give exactly the migrated objects, or the file is left
as it was (see `_verify`).
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dra_guard.contract.findings import InputError
from dra_guard.migrate.edits import Edit, EditError, Path, apply_edits, within
from dra_guard.migrate.plan import (
    Message,
    ObjectMigration,
    ObjectReport,
    TemplateNames,
    is_list,
    migrate_object,
    needs_migration,
)
from dra_guard.migrate.settings import MigrationSettings


@dataclass
class DocumentMigration:
    """One YAML document's edits, the templates that go after it, and its objects' reports."""

    edits: list[Edit] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)
    reports: list[ObjectReport] = field(default_factory=list)


def note_existing_templates(root: object, names: TemplateNames) -> None:
    """Record the ResourceClaimTemplates of a document (List items too) as taken names, and
    what its claims, templates and DeviceClasses ask for (`TemplateNames.found`)."""
    if isinstance(root, Mapping):
        names.note_existing(root)
        if is_list(root):
            for item in root["items"]:
                names.note_existing(item)


def migrate_document(root: object, settings: MigrationSettings, names: TemplateNames) -> DocumentMigration:
    result = DocumentMigration()
    if not isinstance(root, Mapping):
        return result
    objects: list[tuple[Path, Mapping[str, Any]]] = [((), root)]
    if is_list(root):
        objects = [(("items", index), item) for index, item in enumerate(root["items"]) if isinstance(item, Mapping)]
    for prefix, obj in objects:
        migration: ObjectMigration = migrate_object(obj, prefix, settings, names)
        if migration.report is None:
            continue
        result.reports.append(migration.report)
        try:
            # A shape the plan did not foresee (`resourceClaims: null`, ...) is caught here,
            # before any of this object's edits goes into the document.
            apply_edits(root, migration.edits)
        except EditError as error:
            migration.report.errors.append(Message((), f"cannot edit this object: {error}"))
            migration.report.templates.clear()
        if not migration.report.errors:
            result.edits.extend(migration.edits)
            result.templates.extend(migration.templates)
    return result


@dataclass
class Migration:
    """`migrate_documents`' answer: the documents to write, and one report per object."""

    documents: list[Any]
    reports: list[ObjectReport]


def migrate_documents(
    roots: Sequence[object], settings: MigrationSettings, names: TemplateNames | None = None
) -> Migration:
    """Each document migrated, followed by the claim templates it needs."""
    names = names if names is not None else TemplateNames()
    for root in roots:
        note_existing_templates(root, names)
    documents: list[Any] = []
    reports: list[ObjectReport] = []
    for root in roots:
        result = migrate_document(root, settings, names)
        documents.append(apply_edits(root, result.edits))
        documents.extend(result.templates)
        reports.extend(result.reports)
    return Migration(documents, reports)


# --- files -------------------------------------------------------------------------


@dataclass(frozen=True)
class LocatedReport:
    """An object's report, with the line of the object and of each message."""

    file: str
    line: int
    report: ObjectReport
    lines: Mapping[Path, int]

    def line_of(self, message: Message) -> int:
        return self.lines.get(message.path, self.line)


@dataclass
class FileMigration:
    name: str
    original: bytes
    text: str | None = None
    reports: list[LocatedReport] = field(default_factory=list)
    #: Input errors (the file was refused), as check reports them.
    errors: list[InputError] = field(default_factory=list)

    @property
    def output(self) -> bytes:
        """The bytes to write: the new text, or the original when nothing changed."""
        return self.original if self.text is None else self.text.encode("utf-8")

    @property
    def changed(self) -> bool:
        return self.output != self.original

    @property
    def refused(self) -> bool:
        return bool(self.errors) or any(entry.report.errors for entry in self.reports)


_BOM = "\ufeff"


def _read_as_check_does(data: bytes, name: str) -> tuple[list[Any], list[InputError]]:
    from dra_guard.read.inputs import read_file
    from dra_guard.read.loader import Document

    documents: list[Document] = []
    errors: list[InputError] = []
    for item in read_file(data, name):
        if isinstance(item, Document):
            documents.append(item)
        else:
            errors.append(item)
    return documents, errors


def scan_templates(data: bytes, names: TemplateNames) -> None:
    """Record the ResourceClaimTemplates of a file, so migrate's names never collide with them,
    and what the file's claims, templates and DeviceClasses ask for, so that the scrubber a
    pod of another file gets holds that pod's claims of them."""
    documents, _ = _read_as_check_does(data, "-")
    for document in documents:
        note_existing_templates(document.obj, names)


def migrate_file(data: bytes, name: str, settings: MigrationSettings, names: TemplateNames) -> FileMigration:
    """The migrated text of one file (pure: `data` in, `FileMigration` out)."""
    from dra_guard.migrate import yaml_text

    result = FileMigration(name, data)
    old_documents, errors = _read_as_check_does(data, name)
    if errors:
        result.errors.extend(InputError(error.file, error.line, f"{error.message}; not migrated") for error in errors)
        return result
    if not any(needs_migration(document.obj, settings) for document in old_documents):
        # Nothing to do: the file need not be one the editor can parse (a stream of JSON
        # objects, say), and migrating migrate's own output changes nothing.
        return result
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        result.errors.append(InputError(name, None, "migrate rewrites UTF-8 files only; not migrated"))
        return result
    bom = _BOM if text.startswith(_BOM) else ""
    text = text[len(bom) :]
    from ruamel.yaml.error import YAMLError

    try:
        nodes = yaml_text.compose_documents(text)
        roots = yaml_text.load_documents(text)
    except YAMLError as error:
        result.errors.append(InputError(name, None, f"cannot edit this YAML ({error}); not migrated"))
        return result

    newline = "\r\n" if "\r\n" in text else "\n"
    all_edits: dict[int, list[Edit]] = {}
    all_templates: dict[int, list[dict[str, Any]]] = {}
    splices: list[yaml_text.TextEdit] = []
    for index, (node, root) in enumerate(zip(nodes, roots, strict=True)):
        planned = migrate_document(root, settings, names)
        if planned.edits or planned.templates:
            try:
                splices.extend(_splices(text, node, planned, newline))
            except yaml_text.Unrealizable as why:
                _refuse(planned.reports, f"cannot rewrite this document without touching other content: {why}")
            else:
                all_edits[index], all_templates[index] = planned.edits, planned.templates
        result.reports.extend(_locate(name, node, report) for report in planned.reports)
    if not splices:
        return result
    new_text = bom + yaml_text.apply_text_edits(text, splices, newline)
    starts = [node.start_mark.line + 1 for node in nodes]
    problem = _verify(
        new_text.encode("utf-8"),
        name,
        old_documents=old_documents,
        starts=starts,
        edits=all_edits,
        templates=all_templates,
    )
    if problem is not None:
        result.errors.append(InputError(name, problem[0], f"{problem[1]}; not migrated"))
        return result
    result.text = new_text
    return result


def _splices(text: str, node: Any, planned: DocumentMigration, newline: str) -> list[Any]:
    from dra_guard.migrate import yaml_text

    style = yaml_text.detect_style(node)
    splices = yaml_text.text_edits(text, node, planned.edits, style)
    if planned.templates and text.lstrip().startswith("{"):
        # kubectl reads such a file as a stream of JSON objects (YAML's `---` would be an
        # error there): the template follows as one more object, indented like the file.
        at = yaml_text.after_line(text, yaml_text.content_end(node))
        rendered = "".join(yaml_text.render_json_document(template, text) for template in planned.templates)
        splices.append(yaml_text.TextEdit(at, at, rendered, order=1))
    elif planned.templates:
        at = yaml_text.document_end(text, node)
        rendered = "".join(yaml_text.render_document(template, style) for template in planned.templates)
        splices.append(yaml_text.TextEdit(at, at, rendered, order=1))
    # New lines end the way the file's lines end (CRLF files stay CRLF).
    return [dataclasses.replace(splice, text=splice.text.replace("\n", newline)) for splice in splices]


def _refuse(reports: list[ObjectReport], why: str) -> None:
    for report in reports:
        if report.templates or report.requests or report.notes:
            report.errors.append(Message((), why))
            report.templates.clear()


def _locate(name: str, node: Any, report: ObjectReport) -> LocatedReport:
    from dra_guard.migrate.yaml_text import line_of

    messages = [*report.notes, *report.errors]
    paths = {message.path for message in messages} | {request.path for request in report.requests}
    lines = {path: line_of(node, (*report.path, *path)) for path in paths}
    return LocatedReport(name, line_of(node, report.path), report, lines)


def _verify(
    new_data: bytes,
    name: str,
    *,
    old_documents: Sequence[Any],
    starts: Sequence[int],
    edits: Mapping[int, list[Edit]],
    templates: Mapping[int, list[dict[str, Any]]],
) -> tuple[int | None, str] | None:
    """None when check reads `new_data` as exactly the migrated objects; else (line, why).

    The expectation is built from what check read in the original file, with the same
    edits applied, so everything the editor did not mean to change must read back equal.
    Check's objects are matched to the edited documents by line (`starts`: the first line
    of each document the editor saw), not by position: the two readers need not count
    empty documents, or List items, alike.
    """
    new_documents, errors = _read_as_check_does(new_data, name)
    if errors:
        return errors[0].line, f"the rewritten file would not read back ({errors[0].message})"
    expected: list[Any] = []
    owners = [bisect.bisect_right(starts, document.line) - 1 for document in old_documents]
    for position, (document, owner) in enumerate(zip(old_documents, owners, strict=True)):
        prefix: Path = tuple(getattr(document, "within", ()))
        try:
            expected.append(apply_edits(document.obj, within(edits.get(owner, []), prefix)))
        except EditError:
            return document.line, "the edits do not fit the objects check reads here"
        if position + 1 == len(owners) or owners[position + 1] != owner:
            expected.extend(templates.get(owner, []))
    actual = [document.obj for document in new_documents]
    if actual != expected:
        mismatch = next(
            (position for position, pair in enumerate(zip(actual, expected, strict=False)) if pair[0] != pair[1]),
            min(len(actual), len(expected)),
        )
        line = new_documents[mismatch].line if mismatch < len(new_documents) else None
        return line, "the rewritten file would not read back as the migrated objects"
    return None
