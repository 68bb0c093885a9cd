"""Every command line, and nothing else: `dra-guard check`, `rules`, `explain`, `init`, `migrate`,
`admission-policy` and `webhook` parse their arguments here and call the layers below.
"""

from dra_guard.cli.main import main

__all__ = ["main"]
