#!/usr/bin/env bash
# The scrubber on a real NVIDIA GPU: A fills, the scrubber reads and zeroes, B finds nothing.
# Run from the repository root on a machine with an NVIDIA GPU and cuda-python
# (`pip install 'dra-guard[scrub]'`, or an image that has cuda-bindings):
#   bash bench/gpu/scrub_check.sh
# It never changes the GPU's settings (MIG mode included). See bench/gpu/scrub_check.py.
set -euo pipefail
cd "$(dirname "$0")/../.."
nvidia-smi --query-gpu=name,memory.total,driver_version,mig.mode.current --format=csv,noheader || true
PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" exec "${PYTHON:-python3}" bench/gpu/scrub_check.py
