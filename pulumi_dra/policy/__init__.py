"""The policy pack directory (PulumiPolicy.yaml + __main__.py); see pulumi_dra.policies.

serve() is the pack: this folder's `__main__.py` runs it, and so does the project-local
pack that `dra-guard init pulumi` writes, against the dra-guard installed in its virtualenv.
"""


def serve() -> None:
    """Build the pack and serve it over the Analyzer gRPC protocol; never returns."""
    from pulumi_policy import EnforcementLevel, PolicyPack

    from pulumi_dra.analyze_once import install_or_warn
    from pulumi_dra.policies import PACK_NAME, build_policies

    install_or_warn()  # deserialize each resource once per request, not once per policy
    PolicyPack(name=PACK_NAME, policies=build_policies(), enforcement_level=EnforcementLevel.ADVISORY)
