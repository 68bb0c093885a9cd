"""Public import path (docs/architecture.md, "Public import paths"): the code lives in
`dra_guard.contract.catalog`."""

from dra_guard.contract.catalog import *  # noqa: F403
