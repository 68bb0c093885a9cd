"""Every object the builders emit is accepted, strictly, by the official OpenAPI schema of the
Kubernetes release it targets (`kubernetes_version`).

Strict mode rejects unknown fields, which is exactly how the API server treats
`allowMultipleAllocations` inside a request (README.md, "Why not
`allowMultipleAllocations: false` in the request").
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import kubernetes_validate
import pytest

from dra_guard import isolated_workload
from dra_guard.contract.catalog import EXCLUSIVITY_GUARD, KUBERNETES_RELEASES, RESOURCE_API_VERSIONS, WORKLOAD_KINDS
from testkit.targets import runtime_config_for
from tests.slices import VENDOR_SLICES, with_count


def _strictly_valid(obj: dict[str, Any], version: str) -> None:
    # SchemaNotFoundError (no schema for this apiVersion) must fail the test, not pass it.
    kubernetes_validate.validate(obj, f"{version}.0", strict=True)


def _emitted(version: str, api_version: str, kind: str, accelerator: Any, count: int) -> list[dict[str, Any]]:
    return list(
        isolated_workload(
            "w",
            image="registry.example/app:1.0",
            slice=with_count(accelerator, count),
            namespace="tenant-a",
            tenant="tenant-a",
            workload_kind=kind,
            api_version=api_version,
            kubernetes_version=version,
            runtime_config=runtime_config_for(api_version),
            replicas=2,
            command=["serve"],
            env={"MODE": "prod"},
            ports=[8080, {"containerPort": 9090, "name": "metrics"}],
            resources={"requests": {"cpu": "1", "memory": "2Gi"}},
        )
    )


def _distinct_emitted_objects() -> dict[str, tuple[dict[str, Any], str]]:
    """Every object the matrix emits for each target release, once per release.

    The matrix is every target release x the resource.k8s.io versions it serves x workload
    kind x vendor slice x count; most combinations repeat an object, so each distinct one
    is validated once per release, named by the first combination that emits it.
    """
    distinct: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
    for version, release in KUBERNETES_RELEASES.items():
        for api_version, kind, (slice_id, accelerator), count in itertools.product(
            release.claim_api_versions, WORKLOAD_KINDS, [s[:2] for s in VENDOR_SLICES], (1, 3)
        ):
            for obj in _emitted(version, api_version, kind, accelerator, count):
                label = f"{obj['kind']} {obj['apiVersion']}" + (
                    f" {slice_id} x{count}" if obj["kind"] == "ResourceClaimTemplate" else f" of a {kind}"
                )
                distinct.setdefault((version, json.dumps(obj, sort_keys=True)), (label, obj))
    return {f"{version} {label}": (obj, version) for (version, _), (label, obj) in distinct.items()}


DISTINCT_OBJECTS = _distinct_emitted_objects()


@pytest.mark.parametrize("label", list(DISTINCT_OBJECTS))
def test_emitted_objects_pass_the_strict_schema_of_their_target(label: str) -> None:
    obj, version = DISTINCT_OBJECTS[label]
    try:
        _strictly_valid(obj, version)
    except (kubernetes_validate.ValidationError, kubernetes_validate.SchemaNotFoundError) as error:
        pytest.fail(f"{label} is refused by Kubernetes {version}: {error}")


def test_the_matrix_covers_every_release_version_and_kind() -> None:
    kinds = {(version, obj["kind"], obj["apiVersion"]) for obj, version in DISTINCT_OBJECTS.values()}
    for version, release in KUBERNETES_RELEASES.items():
        assert {(version, "ResourceClaimTemplate", api) for api in release.claim_api_versions} <= kinds
        assert {(version, kind, group) for kind, group in _WORKLOAD_GROUPS.items()} <= kinds
        assert (version, "Service", "v1") in kinds


_WORKLOAD_GROUPS = {"Deployment": "apps/v1", "StatefulSet": "apps/v1", "Job": "batch/v1"}


@pytest.mark.parametrize("version", list(KUBERNETES_RELEASES))
def test_the_exclusivity_guard_is_emitted_where_the_gate_is_on_by_default(version: str) -> None:
    release = KUBERNETES_RELEASES[version]
    for api_version in release.claim_api_versions:
        template = _emitted(version, api_version, "Deployment", VENDOR_SLICES[0][1], 1)[0]
        assert (EXCLUSIVITY_GUARD in json.dumps(template)) is (version in ("1.36", "1.37")), (version, api_version)


@pytest.mark.parametrize("api_version", RESOURCE_API_VERSIONS)
def test_unserved_versions_really_have_no_schema_and_are_refused(api_version: str) -> None:
    """Guards the catalog's table of served versions against the bundled schemas."""
    for version, release in KUBERNETES_RELEASES.items():
        if api_version in release.claim_api_versions:
            continue
        served = release.claim_api_versions[-1]
        template = _emitted(version, served, "Deployment", VENDOR_SLICES[0][1], 1)[0]
        template["apiVersion"] = api_version
        with pytest.raises((kubernetes_validate.SchemaNotFoundError, kubernetes_validate.ValidationError)):
            _strictly_valid(template, version)
        with pytest.raises(ValueError, match=rf"^api_version: Kubernetes {version} does not serve"):
            _emitted(version, api_version, "Deployment", VENDOR_SLICES[0][1], 1)


def test_standard_example_field_is_rejected_by_strict_schema() -> None:
    """The standard's `allowMultipleAllocations: false` inside a request is not a real field."""
    template = _emitted("1.37", "resource.k8s.io/v1", "Deployment", VENDOR_SLICES[0][1], 1)[0]
    template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["allowMultipleAllocations"] = False
    with pytest.raises(kubernetes_validate.ValidationError):
        _strictly_valid(template, "1.37")
