"""Public import path (docs/architecture.md, "Public import paths"): the code lives in
`dra_guard.building.spec`."""

from dra_guard.building.spec import *  # noqa: F403
