"""Small manifests several test modules write to files."""

from __future__ import annotations

#: A Pod asking for a whole GPU through the device plugin: one DRA001 finding, critical.
LEGACY_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: legacy, namespace: ns}
spec:
  containers:
  - {name: c, image: i, resources: {limits: {nvidia.com/gpu: 1}}}
"""
