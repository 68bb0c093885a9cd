"""The policy pack directory (PulumiPolicy.yaml + __main__.py); see pulumi_dra.policies."""
