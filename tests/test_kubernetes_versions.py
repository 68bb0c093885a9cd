"""One setting, `kubernetes-version` (config) / `kubernetes_version` (constructs, Pulumi), drives
what is emitted and what is accepted, for every release from 1.33 to 1.37.

What is emitted per release (the exclusivity guard, strict-schema validity) is in
tests/test_schema_matrix.py; DRA003 per release in tests/rules/test_dra003_*.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from dra_guard.contract.catalog import (
    DEFAULT_KUBERNETES_VERSION,
    EXCLUSIVITY_GUARD,
    KUBERNETES_RELEASES,
    KUBERNETES_VERSIONS,
)
from dra_guard.contract.served import served_claim_api_versions
from dra_guard.ruleapi.config import CONSUMABLE_CAPACITY, KUBERNETES_VERSION, ConfigError
from testkit.rulecases import claim, config, devices, findings, request_body, retag, template


def _check(obj: dict[str, Any], version: str, **options: Any) -> list[tuple[str, str, str]]:
    values = {"kubernetes-version": version, **options}
    return [(finding.rule, finding.path, finding.message) for finding in findings(obj, config=config(values))]


def test_versions_and_default() -> None:
    assert KUBERNETES_VERSIONS == ("1.33", "1.34", "1.35", "1.36", "1.37")
    assert DEFAULT_KUBERNETES_VERSION == "1.36" == KUBERNETES_VERSION.default


@pytest.mark.parametrize(("written", "parsed"), [("1.35", "1.35"), (1.37, "1.37"), (1.33, "1.33")])
def test_the_option_reads_yaml_and_toml_numbers(written: object, parsed: str) -> None:
    assert config({"kubernetes-version": written}).get(KUBERNETES_VERSION) == parsed


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"kubernetes-version": "1.30"}, r"kubernetes-version: must be one of 1.33, 1.34, 1.35, 1.36, 1.37"),
        ({"kubernetes-version": 1.3}, r"kubernetes-version: must be one of"),
        ({"consumable-capacity": "yes"}, r"consumable-capacity: must be true or false"),
        ({"kubernetes-version": "1.33", "consumable-capacity": True}, r"consumable-capacity: Kubernetes 1.33 has no"),
    ],
)
def test_bad_values_are_configuration_errors(values: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config(values)


def test_what_a_default_cluster_of_each_release_serves() -> None:
    # KEP-3136: no beta is on by default, alphas never were; DRA is off by default before 1.34.
    served = {version: release.claim_api_versions_served_by_default for version, release in KUBERNETES_RELEASES.items()}
    assert served == {
        "1.33": (),
        "1.34": ("resource.k8s.io/v1",),
        "1.35": ("resource.k8s.io/v1",),
        "1.36": ("resource.k8s.io/v1",),
        "1.37": ("resource.k8s.io/v1",),
    }
    gate = {version: release.dra_enabled_by_default for version, release in KUBERNETES_RELEASES.items()}
    assert gate == {"1.33": False, "1.34": True, "1.35": True, "1.36": True, "1.37": True}
    for version, release in KUBERNETES_RELEASES.items():
        assert served_claim_api_versions(version) == release.claim_api_versions_served_by_default
        # Every version the release has is one runtime-config entry away.
        assert served_claim_api_versions(version, ["api/all=true"]) == release.claim_api_versions


def test_consumable_capacity_defaults_to_the_release() -> None:
    assert config({}).get(CONSUMABLE_CAPACITY) is None
    compiles = {
        version: config({"kubernetes-version": version}).exclusivity_guard_compiles for version in KUBERNETES_VERSIONS
    }
    assert compiles == {"1.33": False, "1.34": False, "1.35": False, "1.36": True, "1.37": True}
    assert config({"kubernetes-version": "1.34", "consumable-capacity": True}).exclusivity_guard_compiles
    assert not config({"kubernetes-version": "1.36", "consumable-capacity": False}).exclusivity_guard_compiles


# --- DRA006: the admin label of the release --------------------------------------------


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_dra006_names_the_admin_label_of_the_release(version: str) -> None:
    obj = template("resource.k8s.io/v1beta2", kubernetes_version=version)
    request_body(obj)["adminAccess"] = True
    ((rule, _, message),) = _check(retag(obj), version)
    label = "resource.k8s.io/admin-access" if version == "1.33" else "resource.kubernetes.io/admin-access"
    assert rule == "DRA006" and f'the namespace also needs the label {label}: "true"' in message
    assert _check(obj, version, **{"admin-namespaces": ["ns"]}) == []


# --- DRA010: the release's schema, not the union ---------------------------------------


def test_dra010_capacity_in_a_v1beta1_claim_is_a_finding_for_1_33_only() -> None:
    obj = claim("resource.k8s.io/v1beta1")
    request_body(obj)["capacity"] = {"requests": {"memory": "10Gi"}}
    retag(obj)
    for version in KUBERNETES_VERSIONS:
        # (The claim's guard compiles from 1.34 with the gate on; only the schema is judged here.)
        schema = [
            (rule, path)
            for rule, path, _ in _check(obj, version, **({"consumable-capacity": True} if version > "1.33" else {}))
            if rule == "DRA010" and not path.endswith("/expression")
        ]
        assert schema == ([("DRA010", "/spec/devices/requests/0/capacity")] if version == "1.33" else []), version


def test_dra010_derived_attributes_exist_from_1_37() -> None:
    obj = template()
    request_body(obj)["derivedAttributes"] = []
    retag(obj)
    assert [path for rule, path, _ in _check(obj, "1.36") if rule == "DRA010"] == [
        "/spec/spec/devices/requests/0/exactly/derivedAttributes"
    ]
    assert [rule for rule, _, _ in _check(obj, "1.37")] == []


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize(
    ("api_version", "built_for", "served"),
    [
        ("resource.k8s.io/v1alpha3", "1.33", ("1.33",)),
        ("resource.k8s.io/v1", "1.34", ("1.34", "1.35", "1.36", "1.37")),
        ("resource.k8s.io/v1beta1", "1.34", KUBERNETES_VERSIONS),
    ],
)
def test_dra010_api_versions_the_release_does_not_serve(
    version: str, api_version: str, built_for: str, served: tuple[str, ...]
) -> None:
    obj = template(api_version, kubernetes_version=built_for)  # no guard: judged on its apiVersion only
    refused = [(path, message) for rule, path, message in _check(obj, version) if rule == "DRA010"]
    if version in served:
        assert refused == []
    else:
        ((path, message),) = refused
        assert path == "/apiVersion" and f"Kubernetes {version} does not serve ResourceClaimTemplates" in message


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_dra010_the_guard_does_not_compile_without_the_gate(version: str) -> None:
    guarded = template("resource.k8s.io/v1beta2", kubernetes_version="1.36")
    assert EXCLUSIVITY_GUARD in str(devices(guarded))
    refused = [message for rule, _, message in _check(guarded, version) if rule == "DRA010"]
    if version in ("1.36", "1.37"):
        assert refused == []
    else:
        (message,) = refused
        assert f"device.allowMultipleAllocations does not compile on Kubernetes {version}" in message
    if version in ("1.34", "1.35"):  # a cluster that turns the gate on
        assert _check(guarded, version, **{"consumable-capacity": True}) == []
