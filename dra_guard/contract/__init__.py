"""The contract every side shares: the annotation contract and device-class catalog, Kubernetes
releases, accelerator names by family, workload paths, the isolation tag, argument validators and
findings.  Imports nothing of ours outside this package.
"""
