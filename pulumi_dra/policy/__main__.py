"""Entry point run by `pulumi preview --policy-pack <this dir>`: only constructs the pack.

PolicyPack() starts the Analyzer gRPC server and never returns, so nothing else may live
here; the policies are in `pulumi_dra.policies`, importable by tests and other packs.
"""

from pulumi_policy import EnforcementLevel, PolicyPack

from pulumi_dra.analyze_once import install_or_warn
from pulumi_dra.policies import PACK_NAME, build_policies

install_or_warn()  # deserialize each resource once per request, not once per policy
PolicyPack(name=PACK_NAME, policies=build_policies(), enforcement_level=EnforcementLevel.ADVISORY)
