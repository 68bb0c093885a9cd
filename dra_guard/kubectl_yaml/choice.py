"""Which parser reads plain YAML documents: `DRA_GUARD_YAML_PARSER` (README "Performance").

Unset, the fast reader (rapidyaml) is used where its wheel imports; `pyyaml` turns it off;
`rapidyaml` requires it.  A wrong choice raises `UnavailableParser` (from
`dra_guard.contract.errors`, which the CLI imports without importing this package), so the
CLI reports it as a usage error, without a traceback, whatever failed to import.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from dra_guard.contract.errors import UnavailableParser

PARSER_VARIABLE = "DRA_GUARD_YAML_PARSER"
PARSERS = ("pyyaml", "rapidyaml")

__all__ = ["PARSERS", "PARSER_VARIABLE", "UnavailableParser", "chosen", "load_rapidyaml"]


def chosen(environ: Mapping[str, str] = os.environ) -> str:
    """The forced parser, or "" when the variable is unset (or blank)."""
    choice = environ.get(PARSER_VARIABLE, "").strip().lower()
    if choice and choice not in PARSERS:
        raise UnavailableParser(f"{PARSER_VARIABLE}={choice!r}: expected one of {', '.join(PARSERS)}")
    return choice


def load_rapidyaml(environ: Mapping[str, str] = os.environ) -> Any:
    """The ryml module, or None when the fast reader is off or unavailable."""
    choice = chosen(environ)
    if choice == "pyyaml":
        return None
    try:
        import ryml
    except ImportError as error:
        if choice == "rapidyaml":
            raise UnavailableParser(
                f"{PARSER_VARIABLE}=rapidyaml, but the rapidyaml package does not import ({error})"
            ) from None
        return None
    return ryml
