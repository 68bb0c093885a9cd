""" "A rule is one module": a rule module written outside the package, named in
DRA_GUARD_EXTRA_RULES, shows up in the CLI (rules, explain, check), the generated docs,
the configuration (its own option, parsed and validated), SARIF and the Pulumi pack,
and the generic example test runs it, with no other edit anywhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pulumi.runtime.proto import analyzer_pb2

from testkit.pack_process import analyze, configure, info, running_pack
from testkit.paths import REPO_ROOT

pytestmark = pytest.mark.e2e  # every test here starts a process (tests/conftest.py)

MODULE = "synthetic_rules.dra099_forbidden_config_key"
RULE_SOURCE = '''\
"""DRA099: ConfigMaps must not carry forbidden keys (a rule that exists only in a test)."""

from collections.abc import Iterator

from dra_guard.ruleapi.admission_form import NotAdmissible
from dra_guard.ruleapi.context import Context, Resource, Violation
from dra_guard.contract.findings import Severity
from dra_guard.ruleapi.options import STRING_SET, Option
from dra_guard.ruleapi.declarations import Example

ID = "DRA099"
NAME = "forbidden-config-key"
SEVERITY = Severity.HIGH
SUMMARY = "ConfigMaps must not carry forbidden keys."
RATIONALE = "Secrets belong in Secrets."
REMEDIATION = "Move the value to a Secret."
KINDS = frozenset({"ConfigMap"})
CROSS_OBJECT = False
WAIVABLE = True
FORBIDDEN_KEYS = Option(
    key="forbidden-config-keys", type=STRING_SET, default=frozenset({"password"}), doc="Keys no ConfigMap may have."
)
OPTIONS = (FORBIDDEN_KEYS,)
EXAMPLES = (
    Example(
        title="A password in a ConfigMap",
        manifests="apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: app}\\ndata: {password: hunter2}\\n",
        findings=("ConfigMap/app#/data/password",),
    ),
    Example(
        title="Only settings",
        manifests="apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: app}\\ndata: {level: debug}\\n",
    ),
)


ADMISSION = NotAdmissible("a rule that exists only in a test has no policy")


def check(resource: Resource, context: Context) -> Iterator[Violation]:
    data = resource.obj.get("data")
    for key in sorted(data) if isinstance(data, dict) else ():
        if key in context.config.get(FORBIDDEN_KEYS):
            yield Violation(("data", key), f"ConfigMap data has the forbidden key {key!r}")
'''
CONFIG_MAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "app"},
    "data": {"password": "x", "token": "y"},
}


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("synthetic")
    (root / "synthetic_rules").mkdir()
    (root / "synthetic_rules" / "__init__.py").write_text("")
    (root / "synthetic_rules" / "dra099_forbidden_config_key.py").write_text(RULE_SOURCE)
    path = os.pathsep.join(filter(None, [str(root), str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "DRA_GUARD_EXTRA_RULES": MODULE}


def cli(environment: dict[str, str], *arguments: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dra_guard.cli", *arguments],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_cli_lists_explains_and_documents_it(environment: dict[str, str]) -> None:
    assert cli(environment, "rules").stdout.splitlines()[-1].startswith("DRA099  forbidden-config-key")
    explained = cli(environment, "explain", "dra099").stdout
    assert (
        "forbidden-config-keys (Pulumi: forbiddenConfigKeys)" in explained and "A password in a ConfigMap" in explained
    )
    markdown = cli(environment, "rules", "--format", "markdown").stdout
    assert "\n## dra099-forbidden-config-key\n" in markdown
    assert '| `forbidden-config-keys` | `forbiddenConfigKeys` | list of strings | `["password"]` |' in markdown


def test_cli_checks_with_it_and_its_option(environment: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "cm.yaml").write_text(yaml.safe_dump(CONFIG_MAP))
    result = cli(environment, "check", "--format", "json", "cm.yaml", cwd=tmp_path)
    assert result.returncode == 1
    assert [(f["rule"], f["path"]) for f in json.loads(result.stdout)["findings"]] == [("DRA099", "/data/password")]
    (tmp_path / ".dra-guard.yaml").write_text("forbidden-config-keys: [token]\n")
    result = cli(environment, "check", "--format", "json", "cm.yaml", cwd=tmp_path)
    assert [f["path"] for f in json.loads(result.stdout)["findings"]] == ["/data/token"]
    (tmp_path / ".dra-guard.yaml").write_text("forbidden-config-keys: token\n")
    result = cli(environment, "check", "cm.yaml", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (
        2,
        "dra-guard: ./.dra-guard.yaml: forbidden-config-keys: must be a list of strings\n",
    )
    (tmp_path / ".dra-guard.yaml").write_text("disable: [DRA099]\n")
    assert cli(environment, "check", "cm.yaml", cwd=tmp_path).returncode == 0


def test_sarif_carries_its_metadata(environment: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "cm.yaml").write_text(yaml.safe_dump(CONFIG_MAP))
    document = json.loads(cli(environment, "check", "--format", "sarif", "cm.yaml", cwd=tmp_path).stdout)
    run = document["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert (
        rules[-1]["id"] == "DRA099"
        and rules[-1]["shortDescription"]["text"] == "ConfigMaps must not carry forbidden keys."
    )
    (result,) = run["results"]
    assert rules[result["ruleIndex"]]["id"] == result["ruleId"] == "DRA099"


def test_pulumi_pack_has_its_policy_and_option(environment: dict[str, str]) -> None:
    with running_pack(env=environment) as stub:
        policies = {policy.name: policy for policy in info(stub).policies}
        assert "forbiddenConfigKeys" in policies["dra099-forbidden-config-key"].configSchema.properties
        configure(stub, {})
        response = analyze(stub, "kubernetes:core/v1:ConfigMap", CONFIG_MAP)
        assert [(d.policyName, d.enforcementLevel) for d in response.diagnostics] == [
            ("dra099-forbidden-config-key", analyzer_pb2.EnforcementLevel.Value("MANDATORY"))
        ]
        configure(stub, {"dra099-forbidden-config-key": {"forbiddenConfigKeys": "token"}})
        (diagnostic,) = analyze(stub, "kubernetes:core/v1:ConfigMap", CONFIG_MAP).diagnostics
        assert diagnostic.message.endswith(
            "policy dra099-forbidden-config-key: forbiddenConfigKeys: must be a list of strings"
        )


def test_the_generic_example_test_runs_its_examples(environment: dict[str, str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_rule_examples.py", "-k", "DRA099"],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 passed" in result.stdout  # two examples, each through the engine, enforce() and the pack


def test_a_malformed_extra_module_is_a_clean_error(environment: dict[str, str]) -> None:
    result = cli({**environment, "DRA_GUARD_EXTRA_RULES": "synthetic_rules.nope"}, "rules")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("dra-guard: DRA_GUARD_EXTRA_RULES: cannot import rule module synthetic_rules.nope")
