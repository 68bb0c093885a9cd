"""What a check of one small file does not import: a cold start pays only for what it uses.

`make bench` measures the cold start against `python -c "import yaml"`; these modules
are each a few percent of it, and nothing a check of a ConfigMap needs: rapidyaml
(worth its import only past a few hundred documents), what talks to its C++ (ctypes,
threads), `shutil` (argparse imports it for the terminal's width), shtab (for `dra-guard
completion` alone), the allocator (needed with the first claim or ResourceSlice), and the
scaffolding of `dra-guard init` (a check builds its own subcommand's arguments alone).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dra_guard.kubectl_yaml.choice import PARSER_VARIABLE

pytestmark = pytest.mark.e2e  # every test here starts a process (tests/conftest.py)

#: Dataclasses a check of one small file defines, at most.  Each costs about 0.75 ms at import
#: on Python 3.11, which compiles up to six generated methods with `exec`; a NamedTuple costs
#: a fifth of that.  The records that are made per object, or that only the engine, the
#: reading layer or the catalog's tables hold, are NamedTuples (54 dataclasses made it 3.2x
#: `import yaml`; 23, under 3x).  The ones left are the report's types, the configuration's,
#: and those that need a dataclass: mutable, `__post_init__`, a field left out of `==`.
MOST_DATACLASSES_AT_START = 23

NOT_AT_START = ("ryml", "ctypes", "threading", "shutil", "shtab", "dra_guard.model.allocation", "dra_guard.cli.init")


def _imported_after_check(path: Path) -> set[str]:
    script = (
        "import sys; from dra_guard.cli.main import main; code = main(['check', sys.argv[1]]); "
        f"print(' '.join(m for m in {NOT_AT_START!r} if m in sys.modules))"
    )
    unforced = {key: value for key, value in os.environ.items() if key != PARSER_VARIABLE}
    result = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True, env=unforced
    )
    return set(result.stdout.splitlines()[-1].split())


def test_a_check_of_a_small_file_imports_only_what_it_uses(tmp_path: Path) -> None:
    path = tmp_path / "settings.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: fast\n")
    assert _imported_after_check(path) == set()


def test_a_check_of_a_small_file_defines_few_dataclasses(tmp_path: Path) -> None:
    path = tmp_path / "settings.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n")
    script = (
        "import dataclasses, sys; from dra_guard.cli.main import main; main(['check', sys.argv[1]]); "
        "print(' '.join(sorted(f'{name}.{value.__qualname__}' for name, module in list(sys.modules.items()) "
        "if name.startswith('dra_guard') for value in list(vars(module).values()) "
        "if isinstance(value, type) and value.__module__ == name and dataclasses.is_dataclass(value))))"
    )
    result = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True)
    defined = result.stdout.splitlines()[-1].split()
    assert "dra_guard.contract.findings.Finding" in defined  # the count sees what it counts
    assert len(defined) <= MOST_DATACLASSES_AT_START, defined


def test_a_claim_brings_the_allocator(tmp_path: Path) -> None:
    """The other side of the bargain: the lazily imported allocator is there when needed."""
    path = tmp_path / "claim.yaml"
    path.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: slice}\nspec:\n"
        "  spec:\n    devices:\n      requests:\n      - name: gpu\n        exactly:\n"
        "          deviceClassName: mig.nvidia.com\n          count: 1\n"
    )
    assert "dra_guard.model.allocation" in _imported_after_check(path)
