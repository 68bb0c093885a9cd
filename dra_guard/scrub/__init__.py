"""`dra-guard scrub`: run in a pod with its accelerator claims, before the tenant's code, it
reads what the previous holder left in each visible device's memory, zeroes it, proves the
zeroing and says, in one JSON line, what it found (README, "Memory erasure").

Only NVIDIA GPUs and MIG instances are scrubbed (through CUDA, `dra-guard[scrub]`); on any
other accelerator the scrubber says it cannot scrub it and exits non-zero: never a silent
pass.
"""
