"""Public import path (docs/architecture.md, "Public import paths"): the code lives in
`dra_guard.contract.findings`."""

from dra_guard.contract.findings import *  # noqa: F403
