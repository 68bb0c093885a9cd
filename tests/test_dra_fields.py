"""dra_guard/contract/dra_fields.py is what tools/gen_dra_fields.py generates from the official
schemas today, and the generator's output passes `ruff check` and `ruff format` as is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from testkit.paths import REPO_ROOT, load_tool

GENERATED = REPO_ROOT / "dra_guard" / "contract" / "dra_fields.py"
RUFF = Path(sys.executable).parent / "ruff"


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    return load_tool("gen_dra_fields")


def test_the_table_is_current(generator: ModuleType) -> None:
    assert generator.render() == GENERATED.read_text(encoding="utf-8"), (
        "stale: python tools/gen_dra_fields.py > dra_guard/contract/dra_fields.py"
    )


@pytest.mark.e2e
@pytest.mark.parametrize("command", [["check", "--no-fix"], ["format", "--check"]])
def test_generated_text_passes_ruff_as_generated(generator: ModuleType, command: list[str]) -> None:
    result = subprocess.run(
        [str(RUFF), *command, "--stdin-filename", str(GENERATED), "-"],
        input=generator.render(),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_fields_carry_the_releases_that_have_them(generator: ModuleType) -> None:
    table = generator.field_releases()
    # capacity came with consumable capacity (1.34); v1alpha3 claims went away after 1.33.
    assert table["resource.k8s.io/v1beta1"]["DeviceRequest"]["capacity"] == ("1.34", "1.37")
    assert table["resource.k8s.io/v1alpha3"]["ResourceClaimSpec"]["devices"] == ("1.31", "1.33")
    assert table["resource.k8s.io/v1"]["ExactDeviceRequest"]["deviceClassName"] == ("1.34", "1.37")
