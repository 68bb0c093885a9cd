"""What a rule module declares besides its constants, and the error for a wrong declaration.

Kept apart from `dra_guard.rules` so that rule modules, and callers that must report a
broken registry (the CLI), can import it without building the registry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

#: Comma-separated names of rule modules to register after the built-in ones.
EXTRA_RULES_ENV = "DRA_GUARD_EXTRA_RULES"


class RuleModuleError(ValueError):
    """A rule module whose declaration the registry refuses; the message names the module."""


@dataclass(frozen=True)
class Example:
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
    config: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def fails(self) -> bool:
        return bool(self.findings)
