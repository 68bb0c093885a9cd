"""Public import path (docs/architecture.md, "Public import paths"): the code lives in
`dra_guard.contract.tags`."""

from dra_guard.contract.tags import *  # noqa: F403
