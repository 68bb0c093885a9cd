"""Regenerate dra_guard/dra_fields.py from the official OpenAPI schemas.

Usage: .venv/bin/python tools/gen_dra_fields.py > dra_guard/dra_fields.py
The schemas come from kubernetes-validate (a dev dependency); the generated table keeps
the core free of that package.  tests/test_dra_fields.py fails when the table is stale.
"""

from __future__ import annotations

import json
from pathlib import Path

import kubernetes_validate

#: pyproject.toml's [tool.ruff] line-length, which the generated module must respect.
LINE_LENGTH = 120
KUBERNETES_RELEASES = ("1.31.0", "1.32.0", "1.33.0", "1.34.0", "1.35.0", "1.36.0", "1.37.0")
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
    "DeviceSelector",
    "CELDeviceSelector",
)


def schema_root() -> Path:
    return Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"


def fields_by_version() -> dict[str, dict[str, list[str]]]:
    table: dict[str, dict[str, set[str]]] = {}
    for release in KUBERNETES_RELEASES:
        definitions = json.loads((schema_root() / f"v{release}-local" / "_definitions.json").read_text())["$defs"]
        for api_version in API_VERSIONS:
            for type_name in TYPES:
                definition = definitions.get(f"io.k8s.api.resource.{api_version}.{type_name}")
                if definition is None:
                    continue
                known = table.setdefault(f"resource.k8s.io/{api_version}", {}).setdefault(type_name, set())
                known.update(definition.get("properties", {}))
    return {
        version: {name: sorted(fields) for name, fields in sorted(types.items())} for version, types in table.items()
    }


def _entry(type_name: str, fields: list[str]) -> list[str]:
    """`"Type": frozenset([...]),` as `ruff format` lays it out: on one line, else the list on
    a line of its own, else one field per line."""
    names = [json.dumps(field) for field in fields]
    line = f"        {json.dumps(type_name)}: frozenset([{', '.join(names)}]),"
    if len(line) <= LINE_LENGTH:
        return [line]
    inner = f"            [{', '.join(names)}]"
    if len(inner) <= LINE_LENGTH:
        return [f"        {json.dumps(type_name)}: frozenset(", inner, "        ),"]
    return [
        f"        {json.dumps(type_name)}: frozenset(",
        "            [",
        *[f"                {name}," for name in names],
        "            ]",
        "        ),",
    ]


def render() -> str:
    """The module text, already as `ruff format` and `ruff check` want it (a test checks)."""
    table = fields_by_version()
    lines = [
        '"""Fields each resource.k8s.io version has, per DRA type (generated; do not edit).',
        "",
        f"Union over Kubernetes {KUBERNETES_RELEASES[0]} - {KUBERNETES_RELEASES[-1]}, "
        "from the official OpenAPI schemas.",
        "Regenerate with: python tools/gen_dra_fields.py > dra_guard/dra_fields.py",
        '"""',
        "",
        "FIELDS: dict[str, dict[str, frozenset[str]]] = {",
    ]
    for version in sorted(table):
        lines.append(f"    {json.dumps(version)}: {{")
        for type_name, fields in table[version].items():
            lines += _entry(type_name, fields)
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
