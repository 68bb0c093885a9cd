"""How many processes `check` may use by default, without importing the pool (a check of
one small file, the common case in editors and pre-commit hooks, never starts one)."""

from __future__ import annotations

import contextlib
import os


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, where the OS says)."""
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        with contextlib.suppress(OSError):
            return max(1, len(affinity(0)))
    return max(1, os.cpu_count() or 1)
