"""What migrate tells people (text) and scripts (`--format json`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dra_guard.contract.findings import InputError
from dra_guard.migrate.migration import FileMigration, LocatedReport
from dra_guard.read.walk import LINK_NOT_FOLLOWED


@dataclass(frozen=True)
class Unmigrated:
    """What a walk found and migrate left alone, as `check` leaves it unchecked."""

    #: Files that are no Kubernetes manifests.
    skipped: Sequence[str] = field(default_factory=list)
    #: Helm charts: templates are not manifests; render them and migrate the output.
    charts: Sequence[str] = field(default_factory=list)
    #: Symlinked folders a walk does not follow (`dra_guard.read.walk`).
    links: Sequence[str] = field(default_factory=list)
    #: Git indexes the walk could not read, and why (`dra_guard.read.walk.Selection`).
    unread_indexes: Sequence[tuple[str, str]] = field(default_factory=list)

    def lines(self) -> list[str]:
        lines = [
            f"dra-guard: {chart}: a Helm chart, not migrated; render it (helm template) and migrate the output"
            for chart in self.charts
        ]
        lines += [f"dra-guard: {link}: {LINK_NOT_FOLLOWED}: not migrated; name it to migrate it" for link in self.links]
        lines += [
            f"dra-guard: {path}: a git index that cannot be read ({why}): files it tracks that a .gitignore "
            "names were left out; name them to migrate them"
            for path, why in self.unread_indexes
        ]
        if self.skipped:
            lines.append(f"dra-guard: {len(self.skipped)} file(s) found are no Kubernetes manifests, left alone")
        return lines


def _template_text(template: Any) -> str:
    where = f"{template.namespace}/{template.name}" if template.namespace else template.name
    return (
        f"ResourceClaimTemplate {where} ({template.device_class}, {template.pin}, count {template.count}, "
        f"pod claim {template.pod_claim} for {', '.join(template.containers)})"
    )


def _entry_lines(entry: LocatedReport) -> list[str]:
    report = entry.report
    lines = []
    for request in report.requests:
        lines.append(
            f"{entry.file}:{entry.lines.get(request.path, entry.line)}: {report.ref}: "
            f"{request.resource}: {request.count} in container {request.container or '?'}"
        )
    lines.extend(f"{entry.file}:{entry.line}: {report.ref}: created {_template_text(t)}" for t in report.templates)
    lines.extend(f"{entry.file}:{entry.line_of(note)}: note: {report.ref}: {note.text}" for note in report.notes)
    lines.extend(
        f"{entry.file}:{entry.line_of(error)}: error: {report.ref}: {error.text}; not migrated"
        for error in report.errors
    )
    return lines


def summary(files: Sequence[FileMigration], errors: Sequence[InputError]) -> Mapping[str, int]:
    entries = [entry for file in files for entry in file.reports]
    return {
        "files": len(files),
        "changed": sum(file.changed for file in files),
        "migrated": sum(1 for entry in entries if not entry.report.errors and entry.report.templates),
        "templates": sum(len(entry.report.templates) for entry in entries),
        "refused": sum(1 for entry in entries if entry.report.errors),
        "errors": len(errors) + sum(len(file.errors) for file in files),
    }


def render_text(
    files: Sequence[FileMigration],
    errors: Sequence[InputError],
    written: Mapping[str, str],
    unmigrated: Unmigrated | None = None,
) -> str:
    lines = [str(error) for error in errors]
    for file in files:
        lines.extend(str(error) for error in file.errors)
        for entry in file.reports:
            lines.extend(_entry_lines(entry))
        if file.name in written:
            lines.append(f"{file.name}: written to {written[file.name]}")
    lines.extend((unmigrated or Unmigrated()).lines())
    counts = summary(files, errors)
    lines.append(
        f"{counts['migrated']} object(s) migrated with {counts['templates']} claim template(s), "
        f"{counts['refused']} refused, {counts['errors']} input error(s); "
        f"{counts['changed']} of {counts['files']} file(s) changed"
    )
    return "\n".join(lines) + "\n"


def _entry_json(entry: LocatedReport) -> dict[str, Any]:
    report = entry.report
    return {
        "file": entry.file,
        "line": entry.line,
        "object": report.ref,
        "kind": report.kind,
        "namespace": report.namespace,
        "name": report.name,
        "status": report.status,
        "requests": [
            {
                "container": request.container,
                "resource": request.resource,
                "count": request.count,
                "line": entry.lines.get(request.path, entry.line),
            }
            for request in report.requests
        ],
        "templates": [
            {
                "namespace": template.namespace,
                "name": template.name,
                "deviceClass": template.device_class,
                "pin": template.pin,
                "count": template.count,
                "podClaim": template.pod_claim,
                "containers": list(template.containers),
            }
            for template in report.templates
        ],
        "notes": [{"line": entry.line_of(note), "message": note.text} for note in report.notes],
        "errors": [{"line": entry.line_of(error), "message": error.text} for error in report.errors],
    }


def _error_json(error: InputError) -> dict[str, Any]:
    return {"file": error.file, "line": error.line, "message": error.message}


def render_json(
    files: Sequence[FileMigration],
    errors: Sequence[InputError],
    written: Mapping[str, str],
    unmigrated: Unmigrated | None = None,
    diffs: Mapping[str, str] | None = None,
) -> str:
    unmigrated = unmigrated or Unmigrated()
    document = {
        "files": [
            {
                "file": file.name,
                "changed": file.changed,
                "written": written.get(file.name),
                **({"diff": diffs.get(file.name, "")} if diffs is not None else {}),
            }
            for file in files
        ],
        "objects": [_entry_json(entry) for file in files for entry in file.reports],
        "errors": [_error_json(error) for error in errors]
        + [_error_json(error) for file in files for error in file.errors],
        "skipped": list(unmigrated.skipped),
        "charts": list(unmigrated.charts),
        "links": list(unmigrated.links),
        "unread_git_indexes": [{"path": path, "reason": why} for path, why in unmigrated.unread_indexes],
        "summary": dict(summary(files, errors)),
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
