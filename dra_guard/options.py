"""Public import path (docs/architecture.md, "Public import paths"): the code lives in
`dra_guard.ruleapi.options`."""

from dra_guard.ruleapi.options import *  # noqa: F403
