"""`dra-guard migrate`: device-plugin requests rewritten as compliant DRA, losing nothing.

* `plan` decides, per object, which claim templates replace which legacy requests and how
  the pods are wired (plain objects in, `Edit`s and templates out), with `existing`: what the
  input's claims, templates and DeviceClasses ask for, so that the scrubber holds a pod's
  claims from before migrate too;
* `migration` applies that to whole documents (`migrate_documents`) and to a file's bytes
  (`migrate_file`), reading files exactly as `dra-guard check` does;
* `yaml_text` turns edits into splices of the original text, so that only changed lines
  differ;
* `command` is the thin file layer (`-o`, `--in-place`, `--dry-run`), `arguments` its
  command line and `report` the text and JSON reports.

The claim templates come from `dra_guard.building.builders.claim_template`, so they are exactly
what the cdk8s and Pulumi front ends build.  Names load on first use (PEP 562): the CLI
imports `arguments` on every run and must not pay for the rest.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "Edit": "dra_guard.migrate.edits",
    "FileMigration": "dra_guard.migrate.migration",
    "Migration": "dra_guard.migrate.migration",
    "migrate_documents": "dra_guard.migrate.migration",
    "migrate_file": "dra_guard.migrate.migration",
    "CreatedTemplate": "dra_guard.migrate.plan",
    "LegacyRequest": "dra_guard.migrate.plan",
    "ObjectReport": "dra_guard.migrate.plan",
    "TemplateNames": "dra_guard.migrate.plan",
    "MigrationSettings": "dra_guard.migrate.settings",
}

if TYPE_CHECKING:
    from dra_guard.migrate.edits import Edit
    from dra_guard.migrate.migration import FileMigration, Migration, migrate_documents, migrate_file
    from dra_guard.migrate.plan import CreatedTemplate, LegacyRequest, ObjectReport, TemplateNames
    from dra_guard.migrate.settings import MigrationSettings


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'dra_guard.migrate' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "CreatedTemplate",
    "Edit",
    "FileMigration",
    "LegacyRequest",
    "Migration",
    "MigrationSettings",
    "ObjectReport",
    "TemplateNames",
    "migrate_documents",
    "migrate_file",
]
