"""Regenerate dra_guard/contract/dra_fields.py from the official OpenAPI schemas.

Usage: .venv/bin/python tools/gen_dra_fields.py > dra_guard/contract/dra_fields.py
The schemas come from kubernetes-validate (a dev dependency); the generated table keeps
the core free of that package.  tests/test_dra_fields.py fails when the table is stale.

For every resource.k8s.io version, DRA type and field, the table gives the first and the
last Kubernetes release whose schema has it, so DRA010 checks an object against the
release it targets (`kubernetes-version`), not against the union of all of them.
"""

from __future__ import annotations

import json
from pathlib import Path

import kubernetes_validate

KUBERNETES_RELEASES = ("1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37")
API_VERSIONS = ("v1alpha3", "v1beta1", "v1beta2", "v1")
# The DRA types whose fields DRA010 checks, by their OpenAPI definition names.
TYPES = (
    "ResourceClaimSpec",
    "ResourceClaimTemplateSpec",
    "DeviceClaim",
    "DeviceRequest",
    "ExactDeviceRequest",
    "DeviceSubRequest",
    "DeviceConstraint",
    "DeviceClaimConfiguration",
    "OpaqueDeviceConfiguration",
    "DeviceSelector",
    "CELDeviceSelector",
    "DeviceToleration",
    "CapacityRequirements",
)


def schema_root() -> Path:
    return Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"


def field_releases() -> dict[str, dict[str, dict[str, tuple[str, str]]]]:
    """apiVersion -> type -> field -> (first release, last release) whose schema has it."""
    seen: dict[str, dict[str, dict[str, list[str]]]] = {}
    for release in KUBERNETES_RELEASES:
        definitions = json.loads((schema_root() / f"v{release}.0-local" / "_definitions.json").read_text())["$defs"]
        for api_version in API_VERSIONS:
            for type_name in TYPES:
                definition = definitions.get(f"io.k8s.api.resource.{api_version}.{type_name}")
                if definition is None:
                    continue
                fields = seen.setdefault(f"resource.k8s.io/{api_version}", {}).setdefault(type_name, {})
                for name in definition.get("properties", {}):
                    fields.setdefault(name, []).append(release)
    table: dict[str, dict[str, dict[str, tuple[str, str]]]] = {}
    for version in sorted(seen):
        for type_name in sorted(seen[version]):
            for name, releases in sorted(seen[version][type_name].items()):
                first, last = KUBERNETES_RELEASES.index(releases[0]), KUBERNETES_RELEASES.index(releases[-1])
                # A (first, last) pair is only exact for a field no release in between lacks.
                if list(KUBERNETES_RELEASES[first : last + 1]) != releases:
                    raise SystemExit(f"{version} {type_name}.{name} is missing from some releases: {releases}")
                table.setdefault(version, {}).setdefault(type_name, {})[name] = (releases[0], releases[-1])
    return table


def render() -> str:
    """The module text, already as `ruff format` and `ruff check` want it (a test checks):
    every mapping ends in a trailing comma, so ruff keeps one entry per line."""
    table = field_releases()
    lines = [
        '"""Fields of each DRA type per resource.k8s.io version, with the Kubernetes releases',
        "whose official OpenAPI schema has them (generated; do not edit).",
        "",
        "Regenerate with: python tools/gen_dra_fields.py > dra_guard/contract/dra_fields.py",
        '"""',
        "",
        "#: The releases the table covers, oldest first.",
        f"RELEASES = ({', '.join(json.dumps(release) for release in KUBERNETES_RELEASES)})",
        "",
        "#: apiVersion -> type -> field -> (first release, last release) that has it.",
        "FIELDS: dict[str, dict[str, dict[str, tuple[str, str]]]] = {",
    ]
    for version, types in table.items():
        lines.append(f"    {json.dumps(version)}: {{")
        for type_name, fields in types.items():
            lines.append(f"        {json.dumps(type_name)}: {{")
            lines += [
                f"            {json.dumps(name)}: ({json.dumps(first)}, {json.dumps(last)}),"
                for name, (first, last) in fields.items()
            ]
            lines.append("        },")
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
