"""Entry point run by `pulumi preview --policy-pack <this dir>`: only serves the pack.

PolicyPack() starts the Analyzer gRPC server and never returns, so nothing else may live
here; the policies are in `pulumi_dra.policies`, importable by tests and other packs.
"""

from pulumi_dra.policy import serve

serve()
