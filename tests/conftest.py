"""Shared test setup: cdk8s must run offline and quietly (see DESIGN §8)."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("CDK8S_CHECK_UPGRADE", "false")
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

REPO_ROOT = Path(__file__).resolve().parent.parent
