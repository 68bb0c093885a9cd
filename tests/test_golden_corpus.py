"""The whole vendored corpus through `dra-guard check --format json`, byte for byte.

tests/golden/corpus-check.json is the report of `dra-guard check --format json --config
/dev/null tests/corpus/ > tests/golden/corpus-check.json`, run from the repository root;
any change of a finding, message, line, path or remediation shows up here as a diff.
Regenerate it with that command when behaviour changes on purpose, and review the diff
(tests/test_corpus.py says, per file, why its set of rules changed).
"""

from __future__ import annotations

import io

import pytest

from dra_guard.cli.main import EXIT_FINDINGS, main
from testkit.paths import REPO_ROOT

GOLDEN = REPO_ROOT / "tests" / "golden" / "corpus-check.json"


def test_corpus_report_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO_ROOT)  # the report names files as given on the command line
    stdout, stderr = io.StringIO(), io.StringIO()
    arguments = ["check", "--format", "json", "--config", "/dev/null", "tests/corpus/"]
    assert main(arguments, stdout, stderr) == EXIT_FINDINGS
    assert stderr.getvalue() == ""
    assert stdout.getvalue() == GOLDEN.read_text(encoding="utf-8")
