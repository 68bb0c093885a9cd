"""`dra-guard admission-policy`: valid objects for every target release, CEL that compiles,
messages that start with the rule ID, and the CLI's options."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from dra_guard.admission.policy import admission_objects, webhook_configuration
from dra_guard.read.config_file import parse_config
from dra_guard.ruleapi.admission_form import KIND_RESOURCES, Admission, AdmissionTarget, NotAdmissible
from dra_guard.ruleapi.config import Config
from dra_guard.rules import RULES

RELEASES = ("1.34.0", "1.35.0", "1.36.0", "1.37.0")
DRA_GUARD = str(Path(sys.executable).parent / "dra-guard")


def run(*arguments: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([DRA_GUARD, *arguments], capture_output=True, text=True, check=False, cwd=cwd)


def _generated() -> list[dict[str, Any]]:
    keyed = parse_config(
        {"hmac-key-env": "K", "non-accelerator-classes": ["nic.example.com"]}, RULES, "test", environ={"K": "k"}
    )
    objects = admission_objects(RULES, AdmissionTarget(Config())) + admission_objects(RULES, AdmissionTarget(keyed))
    objects.append(
        webhook_configuration({"url": "https://webhook.example:8443/validate"}, b"-----BEGIN CERTIFICATE-----")
    )
    objects.append(
        webhook_configuration({"service": {"namespace": "dra-guard", "name": "webhook", "path": "/validate"}}, b"ca")
    )
    return objects


GENERATED = _generated()


@pytest.mark.parametrize("release", RELEASES)
def test_every_emitted_object_is_valid_in_strict_mode(release: str) -> None:
    for obj in GENERATED:
        kubernetes_validate.validate(obj, release, strict=True)


def _expressions(obj: dict[str, Any]) -> list[str]:
    spec = obj.get("spec", {})
    found = [condition["expression"] for condition in spec.get("matchConditions", [])]
    found += [variable["expression"] for variable in spec.get("variables", [])]
    for validation in spec.get("validations", []):
        found.append(validation["expression"])
        if "messageExpression" in validation:
            found.append(validation["messageExpression"])
    return found


def test_every_expression_compiles_as_cel() -> None:
    import celpy

    environment = celpy.Environment()
    expressions = [expression for obj in GENERATED for expression in _expressions(obj)]
    assert expressions
    for expression in expressions:
        environment.compile(expression)


def test_every_message_starts_with_its_rule_id() -> None:
    for obj in GENERATED:
        if obj["kind"] != "ValidatingAdmissionPolicy":
            continue
        rule_id = obj["metadata"]["name"].split("-")[2].upper()
        assert rule_id in RULES
        for validation in obj["spec"]["validations"]:
            assert validation["message"].startswith(f"{rule_id}: ")
            if "messageExpression" in validation:
                assert validation["messageExpression"].startswith(f"'{rule_id}: ' + ")


def test_each_policy_has_a_binding_with_the_enforcement() -> None:
    objects = admission_objects(RULES, AdmissionTarget(Config()), enforcement="Audit", prefix="acme")
    policies = [obj for obj in objects if obj["kind"] == "ValidatingAdmissionPolicy"]
    bindings = {obj["spec"]["policyName"]: obj for obj in objects if obj["kind"] == "ValidatingAdmissionPolicyBinding"}
    assert policies and {policy["metadata"]["name"] for policy in policies} == set(bindings)
    assert all(name.startswith("acme-dra0") for name in bindings)
    assert all(binding["spec"]["validationActions"] == ["Audit"] for binding in bindings.values())


def test_non_waivable_rules_have_no_waiver_condition() -> None:
    for obj in admission_objects(RULES, AdmissionTarget(Config())):
        if obj["kind"] != "ValidatingAdmissionPolicy":
            continue
        rule = RULES[obj["metadata"]["name"].split("-")[2].upper()]
        names = [condition["name"] for condition in obj["spec"].get("matchConditions", [])]
        assert ("not-waived" in names) == rule.waivable


@pytest.mark.e2e
def test_cli_prints_policies_and_the_webhook_configuration(tmp_path: Path) -> None:
    pem = b"-----BEGIN CERTIFICATE-----\nMIIBpolicy\n-----END CERTIFICATE-----\n"
    (tmp_path / "ca.pem").write_bytes(pem)
    result = run(
        "admission-policy",
        "--enforcement",
        "Warn",
        "--name",
        "acme",
        "--webhook",
        "https://dra-guard.example/validate",
        "--ca-bundle",
        str(tmp_path / "ca.pem"),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    objects = list(yaml.safe_load_all(result.stdout))
    kinds = [obj["kind"] for obj in objects]
    assert kinds[-1] == "ValidatingWebhookConfiguration" and "ValidatingAdmissionPolicy" in kinds
    webhook, _ = objects[-1]["webhooks"]  # the objects' entry, then the reservations'
    assert webhook["failurePolicy"] == "Fail" and webhook["sideEffects"] == "None"
    assert webhook["timeoutSeconds"] <= 5
    assert base64.b64decode(webhook["clientConfig"]["caBundle"]) == pem
    assert webhook["namespaceSelector"]["matchExpressions"][0]["values"] == ["kube-system"]
    assert all(
        binding["spec"]["validationActions"] == ["Warn"]
        for binding in objects
        if binding["kind"] == "ValidatingAdmissionPolicyBinding"
    )
    assert run("admission-policy", cwd=tmp_path).stdout == run("admission-policy", cwd=tmp_path).stdout


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--kubernetes-version", "latest"], "--kubernetes-version: 'latest' is not a version"),
        (["--admin-namespace-label", "ops"], "--admin-namespace-label: 'ops' is not KEY=VALUE"),
        (["--webhook", "https://x"], "--webhook needs --ca-bundle"),
        (["--ca-bundle", "ca.pem"], "--ca-bundle is only used with --webhook"),
        (["--webhook", "https://x", "--ca-bundle", "missing.pem"], "cannot read missing.pem"),
        (["--enforcement", "Block"], "invalid choice"),
    ],
)
def test_cli_refuses_bad_arguments_clearly(tmp_path: Path, arguments: list[str], message: str) -> None:
    result = run("admission-policy", *arguments, cwd=tmp_path)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.e2e
def test_cli_refuses_a_keyed_configuration_that_no_webhook_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With hmac-key-env the policies accept only hmac-sha256: tags, and only a webhook can
    verify one: without a webhook that holds the key, a forged tag of the right form would
    pass policies that seem to demand the key."""
    monkeypatch.setenv("DRA_GUARD_TEST_TAG_KEY", "k")
    (tmp_path / "keyed.yaml").write_text("hmac-key-env: DRA_GUARD_TEST_TAG_KEY\n")
    (tmp_path / "ca.pem").write_bytes(b"-----BEGIN CERTIFICATE-----\nMIIBpolicy\n-----END CERTIFICATE-----\n")
    keyed = ["admission-policy", "--config", "keyed.yaml"]
    result = run(*keyed, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert "hmac-key-env makes the policies require hmac-sha256: isolation tags" in result.stderr
    assert "--deploy-webhook with --hmac-key-secret" in result.stderr
    deploy = ["--deploy-webhook", "--webhook-image", "i", "--webhook-namespace", "n", "--tls-secret", "t"]
    result = run(*keyed, *deploy, "--ca-bundle", "ca.pem", cwd=tmp_path)
    assert result.returncode == 2 and "--hmac-key-secret: the config's hmac-key-env" in result.stderr
    holding_the_key = [*deploy, "--hmac-key-secret", "tag-key"]
    run_elsewhere = ["--webhook", "https://dra-guard.example/validate"]  # run with --hmac-key-file
    for webhook in (holding_the_key, run_elsewhere):
        result = run(*keyed, *webhook, "--ca-bundle", "ca.pem", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert "^hmac-sha256:[0-9a-f]{64}$" in result.stdout
    assert run("admission-policy", cwd=tmp_path).returncode == 0  # no key, no webhook needed


TARGETS = [
    AdmissionTarget.for_release(Config(), version, label)
    for version in ("1.34", "1.35", "1.36", "1.37")
    for label in (None, ("dra-guard.io/admin", "true"))
]


@pytest.mark.parametrize("rule_id", list(RULES))
def test_every_rule_declares_its_admission(rule_id: str) -> None:
    """ADMISSION is required (the registry refuses a module without one): a policy for
    every target release, over kinds the policies know how to match, or a reason."""
    rule = RULES[rule_id]
    if isinstance(rule.admission, NotAdmissible):
        assert len(rule.admission.reason.split()) >= 5, f"{rule_id}: say why the API server cannot decide it"
        return
    for chosen in TARGETS:
        admission = rule.admission(chosen)
        assert isinstance(admission, Admission) and admission.validations
        assert admission.kinds and set(admission.kinds) <= set(KIND_RESOURCES), admission.kinds
        if rule.kinds is not None:
            assert set(admission.kinds) <= rule.kinds, "a policy for kinds its rule never looks at"
        names = [name for name, _ in admission.variables]
        assert len(names) == len(set(names)), f"{rule_id}: a variable declared twice"
