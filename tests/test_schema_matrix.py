"""Every object the builders emit is accepted by the official OpenAPI schemas, strictly.

Strict mode rejects unknown fields, which is exactly how the API server treats
`allowMultipleAllocations` inside a request (README.md, "Why not
`allowMultipleAllocations: false` in the request").
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from typing import Any

import kubernetes_validate
import pytest

from dra_guard import isolated_workload
from dra_guard.catalog import RESOURCE_API_VERSIONS, WORKLOAD_KINDS
from tests.slices import VENDOR_SLICES

KUBERNETES_VERSIONS = ("1.32.0", "1.33.0", "1.34.0", "1.35.0", "1.36.0", "1.37.0")
# Which releases serve which resource.k8s.io version, per the bundled schemas (README.md,
# "Versions").
SERVED_BY = {
    "resource.k8s.io/v1alpha3": ("1.32.0", "1.33.0"),
    "resource.k8s.io/v1beta1": KUBERNETES_VERSIONS,
    "resource.k8s.io/v1beta2": KUBERNETES_VERSIONS[1:],
    "resource.k8s.io/v1": KUBERNETES_VERSIONS[2:],
}


def test_served_table_covers_every_emitted_version() -> None:
    assert set(SERVED_BY) == set(RESOURCE_API_VERSIONS)


def _strictly_valid(obj: dict[str, Any], version: str) -> None:
    # SchemaNotFoundError (no schema for this apiVersion) must fail the test, not pass it.
    kubernetes_validate.validate(obj, version, strict=True)


def _distinct_emitted_objects() -> dict[str, tuple[dict[str, Any], tuple[str, ...]]]:
    """Every object the matrix emits, once, with the releases that must accept it.

    The matrix is every resource.k8s.io version x workload kind x vendor slice x count;
    a workload does not depend on the claim's version or slice count, a template not on
    the workload kind, so most combinations repeat an object.  Keyed by the first
    combination that emits it, which names the object in a failure.
    """
    distinct: dict[str, tuple[str, dict[str, Any], tuple[str, ...]]] = {}
    for api_version, kind, (slice_id, accelerator), count in itertools.product(
        RESOURCE_API_VERSIONS, WORKLOAD_KINDS, [s[:2] for s in VENDOR_SLICES], (1, 3)
    ):
        template, pods = isolated_workload(
            "w",
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
        for obj, label, versions in (
            (template, f"ResourceClaimTemplate {api_version} {slice_id} x{count}", SERVED_BY[api_version]),
            (pods, f"{kind} workload", KUBERNETES_VERSIONS),
        ):
            distinct.setdefault(json.dumps(obj, sort_keys=True), (label, obj, versions))
    return {label: (obj, versions) for label, obj, versions in distinct.values()}


DISTINCT_OBJECTS = _distinct_emitted_objects()


@pytest.mark.parametrize(
    ("label", "version"),
    [(label, version) for label, (_, versions) in DISTINCT_OBJECTS.items() for version in versions],
)
def test_emitted_objects_pass_strict_schema(label: str, version: str) -> None:
    obj, _ = DISTINCT_OBJECTS[label]
    try:
        _strictly_valid(obj, version)
    except (kubernetes_validate.ValidationError, kubernetes_validate.SchemaNotFoundError) as error:
        pytest.fail(f"{label} is refused by Kubernetes {version}: {error}")


def test_the_matrix_validates_each_object_once() -> None:
    # 4 versions x 5 slices x 2 counts templates (17 served releases per slice and count),
    # 3 kinds of workload (the slice only names the template, the same for all) x 6 releases.
    templates = sum(len(SERVED_BY[version]) for version in RESOURCE_API_VERSIONS) * len(VENDOR_SLICES) * 2
    assert len(DISTINCT_OBJECTS) == len(RESOURCE_API_VERSIONS) * len(VENDOR_SLICES) * 2 + len(WORKLOAD_KINDS)
    workloads = len(WORKLOAD_KINDS) * len(KUBERNETES_VERSIONS)
    assert sum(len(versions) for _, versions in DISTINCT_OBJECTS.values()) == templates + workloads == 188


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
