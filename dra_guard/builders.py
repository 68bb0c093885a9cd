"""Public import path (docs/architecture.md, "Public import paths"): the code lives in
`dra_guard.build.builders`."""

from dra_guard.build.builders import *  # noqa: F403
