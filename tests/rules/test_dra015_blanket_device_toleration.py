"""DRA015 `blanket-device-toleration`: cases beyond its EXAMPLES, across resource.k8s.io versions."""

from __future__ import annotations

from typing import Any

import pytest

from testkit.rulecases import CLAIM_MAKERS, config, devices, findings, request_body, retag, rule_ids, template

#: Versions whose requests have tolerations (1.33 on; v1beta1 flat, the others under `exactly`).
VERSIONS = pytest.mark.parametrize(
    "api_version", ["resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1"]
)


@VERSIONS
@CLAIM_MAKERS
@pytest.mark.parametrize(
    ("toleration", "reported"),
    [
        ({"operator": "Exists"}, True),
        ({"operator": "Exists", "key": ""}, True),
        ({"operator": "Exists", "effect": "NoExecute"}, True),
        ({"operator": "Exists", "effect": "NoSchedule"}, True),
        ({"operator": "Exists", "key": "example.com/maintenance"}, False),
        ({"operator": "Equal", "key": "example.com/maintenance", "value": "planned"}, False),
    ],
)
def test_dra015_tolerations(api_version: str, make: Any, toleration: dict[str, str], reported: bool) -> None:
    obj = make(api_version)
    request_body(obj)["tolerations"] = [toleration]
    assert rule_ids(retag(obj)) == ({"DRA015"} if reported else set())


def test_dra015_says_what_the_toleration_lets_in() -> None:
    obj = template()
    request_body(obj)["tolerations"] = [
        {"key": "a", "operator": "Exists"},
        {"operator": "Exists", "effect": "NoSchedule"},
    ]
    (finding,) = findings(retag(obj))
    assert finding.path.endswith("/tolerations/1")
    assert "every device taint with effect NoSchedule" in finding.message and "evicted" not in finding.message
    request_body(obj)["tolerations"] = [{"operator": "Exists"}]
    (finding,) = findings(retag(obj))
    assert "took out of service, and is not evicted from one" in finding.message


def test_dra015_first_available_alternatives_and_non_accelerators() -> None:
    obj = template()
    request = devices(obj)["requests"][0]
    body = request.pop("exactly")
    request["firstAvailable"] = [{"name": "a", **body, "tolerations": [{"operator": "Exists"}]}]
    (finding,) = [f for f in findings(retag(obj)) if f.rule == "DRA015"]
    assert finding.path.endswith("/requests/0/firstAvailable/0/tolerations/0")
    request["firstAvailable"][0]["deviceClassName"] = "nic.example.com"
    assert "DRA015" not in rule_ids(retag(obj), config=config({"non-accelerator-classes": ["nic.example.com"]}))
