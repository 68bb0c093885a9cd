"""The building side: `AcceleratorSlice`, `ClaimSpec`, `WorkloadSpec` and the builders that turn
them into compliant objects.  Imports only `contract`; never the checking side.
"""
