"""Every object the builders emit is accepted by the official OpenAPI schemas, strictly.

Strict mode rejects unknown fields, which is exactly how the API server treats
`allowMultipleAllocations` inside a request (DESIGN §3).
"""

from __future__ import annotations

import dataclasses

import kubernetes_validate
import pytest

from dra_guard import AcceleratorSlice, isolated_workload
from dra_guard.catalog import RESOURCE_API_VERSIONS, WORKLOAD_KINDS
from tests.slices import VENDOR_SLICES

KUBERNETES_VERSIONS = ("1.32.0", "1.33.0", "1.34.0", "1.35.0", "1.36.0", "1.37.0")
# Which releases serve which resource.k8s.io version, per the bundled schemas (DESIGN §8).
SERVED_BY = {
    "resource.k8s.io/v1alpha3": ("1.32.0", "1.33.0"),
    "resource.k8s.io/v1beta1": KUBERNETES_VERSIONS,
    "resource.k8s.io/v1beta2": KUBERNETES_VERSIONS[1:],
    "resource.k8s.io/v1": KUBERNETES_VERSIONS[2:],
}


def test_served_table_covers_every_emitted_version() -> None:
    assert set(SERVED_BY) == set(RESOURCE_API_VERSIONS)


def _strictly_valid(obj: dict[str, object], version: str) -> None:
    # SchemaNotFoundError (no schema for this apiVersion) must fail the test, not pass it.
    kubernetes_validate.validate(obj, version, strict=True)


@pytest.mark.parametrize("count", [1, 3])
@pytest.mark.parametrize(("slice_id", "accelerator"), [(s[0], s[1]) for s in VENDOR_SLICES])
@pytest.mark.parametrize("kind", WORKLOAD_KINDS)
@pytest.mark.parametrize("api_version", RESOURCE_API_VERSIONS)
def test_emitted_objects_pass_strict_schema(
    api_version: str, kind: str, slice_id: str, accelerator: AcceleratorSlice, count: int
) -> None:
    template, pods = isolated_workload(
        f"w-{slice_id}",
        image="registry.example/app:1.0",
        slice=dataclasses.replace(accelerator, count=count),
        namespace="tenant-a",
        tenant="tenant-a",
        workload_kind=kind,
        api_version=api_version,
        replicas=2,
        command=["serve"],
        env={"MODE": "prod"},
        ports=[8080],
        resources={"requests": {"cpu": "1", "memory": "2Gi"}},
    )
    for version in SERVED_BY[api_version]:
        _strictly_valid(template, version)
    for version in KUBERNETES_VERSIONS:
        _strictly_valid(pods, version)


@pytest.mark.parametrize("api_version", RESOURCE_API_VERSIONS)
def test_unserved_versions_really_have_no_schema(api_version: str) -> None:
    """Guards the SERVED_BY table itself: outside it, the schema set must not know the version."""
    template, _ = isolated_workload("w", image="i", slice=VENDOR_SLICES[0][1], namespace="n", api_version=api_version)
    for version in set(KUBERNETES_VERSIONS) - set(SERVED_BY[api_version]):
        with pytest.raises(kubernetes_validate.SchemaNotFoundError):
            _strictly_valid(template, version)


def test_standard_example_field_is_rejected_by_strict_schema() -> None:
    """The standard's `allowMultipleAllocations: false` inside a request is not a real field."""
    template, _ = isolated_workload("w", image="i", slice=VENDOR_SLICES[0][1], namespace="n")
    template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["allowMultipleAllocations"] = False
    with pytest.raises(kubernetes_validate.ValidationError):
        _strictly_valid(template, "1.37.0")
