"""`python -m dra_guard.scrub`: the same as `dra-guard scrub`."""

import sys

from dra_guard.cli.main import main

sys.exit(main(["scrub", *sys.argv[1:]]))
