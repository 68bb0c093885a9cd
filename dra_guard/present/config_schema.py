"""The JSON Schema of the configuration file, derived from the option declarations.

Editors (YAML language server, Taplo for `[tool.dra-guard]`) and SchemaStore read it to
complete and check `.dra-guard.yaml`; it is written from what the registry declares
(`Option.schema()`: each option's type, default and documentation), never by hand, so it
cannot drift from what `dra-guard check` accepts: `tests/test_config_schema.py` fails while
the shipped copy is stale.

    python -m dra_guard.present.config_schema > dra_guard/config.schema.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dra_guard.rules import Registry

SCHEMA_FILE = Path(__file__).parent.parent / "config.schema.json"
SCHEMA_ID = "https://github.com/dra-guard/dra-guard/blob/main/dra_guard/config.schema.json"


def config_schema(registry: Registry) -> dict[str, Any]:
    """The schema of a configuration: one property per option, nothing else allowed (the
    parser refuses unknown keys too)."""
    options = registry.options
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "dra-guard configuration (.dra-guard.yaml, or [tool.dra-guard] in pyproject.toml)",
        "type": "object",
        "properties": {key: options[key].schema() for key in sorted(options)},
        "additionalProperties": False,
    }


def render(registry: Registry) -> str:
    """The schema as the shipped file holds it: sorted keys, two-space indents, a final newline."""
    return json.dumps(config_schema(registry), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> int:
    from dra_guard.rules import RULES

    sys.stdout.write(render(RULES))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
