"""The webhook runs the engine without the rules whose every finding the policies decide
(`Webhook._engine_config`): it would drop all they find.  Its answers must be the ones it
gives running every rule, on every object the tests know, under several configurations; and
on an object of a kind those rules apply to but of another API group than the policies
match, the rules run."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_guard import AcceleratorSlice, claim_template, isolated_workload
from dra_guard.admission.webhook import Webhook
from dra_guard.read.config_file import parse_config
from dra_guard.ruleapi.config import Config
from dra_guard.rules import RULES

REPO_ROOT = Path(__file__).resolve().parent.parent
CONFIGURATIONS = (
    "",
    "kubernetes-version: '1.34'\nadmin-namespaces: [gpu-ops]\n",
    "hmac-key-env: KEY\nnon-accelerator-classes: [nic.example.com]\n",
    "kubernetes-version: '1.36'\nnon-waivable: []\n",
)


def _objects() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for rule in RULES.values():
        for example in rule.examples:
            found += [doc for doc in yaml.safe_load_all(example.manifests) if isinstance(doc, dict)]
    for path in sorted((REPO_ROOT / "tests" / "corpus").rglob("*.yaml")):
        try:
            found += [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if isinstance(doc, dict)]
        except yaml.YAMLError:
            continue
    mig = AcceleratorSlice.nvidia_mig("1g.10gb")
    found += list(isolated_workload("w", image="i", slice=mig, namespace="ns"))
    found.append(claim_template(name="t", slice=mig, namespace="ns", hmac_key="KEY"))
    return found


OBJECTS = _objects()


def _review(obj: dict[str, Any]) -> dict[str, Any]:
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    return {
        "uid": str(uuid.uuid4()),
        "kind": {"group": group, "version": version, "kind": obj.get("kind", "")},
        "operation": "CREATE",
        "namespace": (obj.get("metadata") or {}).get("namespace") or "ns",
        "userInfo": {"username": "alice"},
        "object": obj,
    }


@pytest.mark.parametrize("config_text", CONFIGURATIONS)
def test_the_webhook_answers_as_if_it_ran_every_rule(config_text: str) -> None:
    config = parse_config(yaml.safe_load(config_text) or {}, RULES, "test", environ={"KEY": "KEY"})
    webhook = Webhook(RULES, config)
    assert webhook._left_to_policies, "no rule is left to the policies: the test tests nothing"
    every_rule = Webhook(RULES, config)
    every_rule._without_left = config  # the engine runs every rule
    differences = []
    for obj in OBJECTS:
        request = _review(obj)
        mine, theirs = webhook.review(request), every_rule.review(request)
        if mine != theirs:
            differences.append((obj.get("kind"), (obj.get("metadata") or {}).get("name"), mine, theirs))
    assert not differences, differences[:3]
    assert len(OBJECTS) > 100


def test_the_rules_run_on_a_kind_of_another_api_group() -> None:
    """A ResourceClaim of a CRD's group is no claim the policies match: the engine checks it
    with every rule, as it would any object of a kind the policies do not decide."""
    webhook = Webhook(RULES, Config())
    claim = {
        "apiVersion": "example.com/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "mig.nvidia.com"}}]}},
    }
    assert webhook._engine_config(claim) is webhook.config
    assert webhook._engine_config({**claim, "apiVersion": "resource.k8s.io/v1"}) is webhook._without_left
    assert webhook._engine_config({**claim, "kind": "Pod", "apiVersion": "v1"}) is webhook._without_left
