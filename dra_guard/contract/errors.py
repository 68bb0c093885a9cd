"""Errors the CLI must be able to name before the module that raises them imports.

`UnavailableParser` is raised while `dra_guard.kubectl_yaml` imports (a forced reader
whose wheel does not import fails at once), so the CLI cannot import it from there to
catch it: it lives here, in a module that imports nothing.
"""

from __future__ import annotations


class UnavailableParser(RuntimeError):
    """DRA_GUARD_YAML_PARSER names no parser, or `rapidyaml` where its wheel does not import."""
