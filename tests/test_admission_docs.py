"""docs/admission.md's tables come from the code: which rule the policies and the webhook
cover (the registry), and the AdmissionGuard arguments (the spec) with their CLI flags.

`UPDATE_DOCS=1 .venv/bin/pytest tests/test_admission_docs.py` rewrites them; review the
diff before committing it.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dra_guard.admission.deploy import AdmissionGuardSpec, WebhookDeployment
from dra_guard.admission.policy import covered_rules, uncovered_rules
from dra_guard.cli.admission import FLAGS
from dra_guard.ruleapi.admission_form import AdmissionTarget
from dra_guard.ruleapi.config import Config
from dra_guard.rules import RULES
from testkit.paths import REPO_ROOT

DOC = REPO_ROOT / "docs" / "admission.md"
DRA_GUARD = str(Path(sys.executable).parent / "dra-guard")


def render_coverage() -> str:
    covered = {entry.rule.id: entry.admission for entry in covered_rules(RULES, AdmissionTarget(Config()))}
    reasons = {rule.id: reason for rule, reason in uncovered_rules(RULES)}
    rows = ["| rule | ValidatingAdmissionPolicy | webhook |", "|---|---|---|"]
    for rule in RULES.values():
        admission = covered.get(rule.id)
        if admission is None:
            policy, webhook = f"— ({reasons[rule.id]})", "all of it"
        else:
            policy = ", ".join(sorted(admission.kinds))
            left = [facet for facet in rule.facets if admission.covers is not None and facet not in admission.covers]
            webhook = "—" if not left else "facets " + ", ".join(f"`{facet}`" for facet in left)
        if rule.cross_object:
            webhook += ", as far as the object and the claim templates and claims it names show"
        rows.append(f"| {rule.id} {rule.name} | {policy} | {webhook} |")
    return "\n".join(rows)


def _default(spec_field: dataclasses.Field[object]) -> str:
    if spec_field.default is dataclasses.MISSING:
        return "required"
    return f"`{spec_field.default!r}`".replace("'", '"')


def render_arguments() -> str:
    rows = ["| argument | CLI | default | meaning |", "|---|---|---|---|"]
    for prefix, spec in (("", AdmissionGuardSpec), ("webhook.", WebhookDeployment)):
        for spec_field in dataclasses.fields(spec):
            if not spec_field.init:
                continue
            flag = FLAGS[spec_field.name]
            rows.append(
                f"| `{prefix}{spec_field.name}` | `{flag}` | {_default(spec_field)} | {spec_field.metadata['doc']} |"
            )
    return "\n".join(rows)


BLOCKS = {"admission-coverage": render_coverage, "admission-guard-arguments": render_arguments}


@pytest.mark.parametrize("marker", list(BLOCKS))
def test_the_generated_tables_are_current(marker: str) -> None:
    text = DOC.read_text(encoding="utf-8")
    block = re.compile(rf"<!-- {marker}: [^\n]*-->\n(.*?)<!-- /{marker} -->", re.DOTALL)
    match = block.search(text)
    assert match, f"docs/admission.md lost its {marker} markers"
    expected = BLOCKS[marker]() + "\n"
    if os.environ.get("UPDATE_DOCS") == "1":
        DOC.write_text(text[: match.start(1)] + expected + text[match.end(1) :], encoding="utf-8")
        return
    assert match.group(1) == expected, f"docs/admission.md's {marker} table is stale: UPDATE_DOCS=1 pytest {__file__}"


@pytest.mark.e2e
def test_every_argument_has_a_cli_flag_that_exists() -> None:
    """CLI, cdk8s and Pulumi users reach the same objects: every argument is a flag."""
    help_text = subprocess.run(
        [DRA_GUARD, "admission-policy", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for spec in (AdmissionGuardSpec, WebhookDeployment):
        for spec_field in dataclasses.fields(spec):
            if spec_field.init:
                assert FLAGS[spec_field.name] in help_text


def test_the_readme_links_the_page() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert "## Enforce in the cluster" in readme and "(docs/admission.md)" in readme
