"""Public import path (docs/architecture.md, "Public import paths"): the code lives in
`dra_guard.building.builders`."""

from dra_guard.building.builders import *  # noqa: F403
