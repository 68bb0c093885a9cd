"""Public import path (docs/architecture.md, "Public import paths"): the code lives in
`dra_guard.build.spec`."""

from dra_guard.build.spec import *  # noqa: F403
