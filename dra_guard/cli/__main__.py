"""`python -m dra_guard.cli`: the `dra-guard` command."""

import sys

from dra_guard.cli.main import main

sys.exit(main())
