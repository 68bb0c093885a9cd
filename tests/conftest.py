"""Shared test setup: cdk8s must run offline and quietly, as the Makefile runs it."""

from __future__ import annotations

import os

from testkit.paths import REPO_ROOT

__all__ = ["REPO_ROOT"]

os.environ.setdefault("CDK8S_CHECK_UPGRADE", "false")
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
