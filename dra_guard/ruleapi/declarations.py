"""What a rule module declares besides its constants, and the error for a wrong declaration.

Kept apart from `dra_guard.rules` so that rule modules, and callers that must report a
broken registry (the CLI), can import it without building the registry.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

#: Comma-separated names of rule modules to register after the built-in ones.
EXTRA_RULES_ENV = "DRA_GUARD_EXTRA_RULES"
#: An example's configuration when it sets none: read-only, so one serves every example.
_NO_OPTIONS: Mapping[str, Any] = MappingProxyType({})


class RuleModuleError(ValueError):
    """A rule module whose declaration the registry refuses; the message names the module."""


class Example(NamedTuple):
    """Manifests a rule must judge as documented; the docs show them and a test runs them
    through the engine, the Pulumi pack and cdk8s `enforce()`.

    `findings` lists where this rule (only this rule) reports, each as
    `<Kind>/<name>#<JSON pointer>`; an example without findings must pass.
    """

    title: str
    #: One or more YAML documents.
    manifests: str
    findings: tuple[str, ...] = ()
    #: Options as in .dra-guard.yaml (kebab-case keys), when the example needs some.
    config: Mapping[str, Any] = _NO_OPTIONS

    @property
    def fails(self) -> bool:
        return bool(self.findings)
