"""The `dra-guard` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from dra_guard import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dra-guard",
        description="Author and check isolated sliced-accelerator workloads on Kubernetes DRA.",
    )
    parser.add_argument("--version", action="version", version=f"dra-guard {__version__}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    parser.parse_args(argv)
    parser.print_help(sys.stdout)
    return 0


if __name__ == "__main__":  # pragma: no cover - `python -m dra_guard.cli`
    sys.exit(main())
