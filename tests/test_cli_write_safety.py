"""`init`, `migrate` and the files `check` and `merge` write (`-o`, `--facts-out`,
`--write-baseline`) never write outside the folder they were pointed at.

A cloned repository can hold symlinks out of it (`.github` -> elsewhere, `cdk8s.yaml` ->
a file of the user's, `reports` -> /etc, a report's name -> a device), or a symlink
planted at a temporary's name.  Each case below is
refused with one `dra-guard:` line and exit 2, writing nothing, or written through to a
real file inside; and no temporary is ever left behind.  In-process: no subprocess.
"""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import pytest

from dra_guard.cli import safe_write
from dra_guard.cli.main import main
from testkit.paths import REPO_ROOT

CORPUS = REPO_ROOT / "tests" / "corpus" / "legacy-device-plugin"
PINS = ["--namespace", "tenant-a", "--gpu-product", "NVIDIA H100 80GB HBM3"]
CDK8S_YAML = "language: python\napp: python main.py\n"


def dra_guard(*arguments: str | Path) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main([str(argument) for argument in arguments], stdout, stderr)
    assert "Traceback" not in stdout.getvalue() + stderr.getvalue()
    return code, stdout.getvalue(), stderr.getvalue()


def assert_refused(code: int, stderr: str, *words: str) -> None:
    """Exit 2 and every error one line of its own, starting `dra-guard:`."""
    assert code == 2
    lines = stderr.splitlines()
    assert lines and all(line.startswith("dra-guard: ") for line in lines), stderr
    assert all(word in stderr for word in words), stderr


def tree(folder: Path) -> dict[str, bytes | str]:
    """Every entry below `folder`: a file's bytes, a symlink's target."""
    found: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if path.is_symlink():
            found[name] = os.readlink(path)
        elif path.is_file():
            found[name] = path.read_bytes()
    return found


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder of the user's, outside the project, with a file worth keeping."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "keep.yaml").write_text("mine: true\n")
    return folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


# --- init ---------------------------------------------------------------------------------


def test_init_ci_refuses_a_github_folder_that_is_a_symlink_out(project: Path, outside: Path) -> None:
    (project / ".github").symlink_to(outside, target_is_directory=True)
    before = tree(outside)
    code, _, stderr = dra_guard("init", "ci", "--dir", project)
    assert_refused(code, stderr, "outside", "nothing written")
    assert tree(outside) == before and not (outside / "workflows").exists()


def test_init_writes_a_symlinked_folder_that_stays_inside(project: Path) -> None:
    (project / "ci-config").mkdir()
    (project / ".github").symlink_to("ci-config", target_is_directory=True)
    code, stdout, stderr = dra_guard("init", "ci", "--dir", project)
    assert code == 0, stderr
    assert (project / "ci-config" / "workflows" / "dra-guard.yml").is_file() and "created" in stdout


@pytest.mark.parametrize("target", ["cdk8s", "pre-commit", "config"])
def test_init_refuses_a_target_file_that_is_a_symlink_out(project: Path, outside: Path, target: str) -> None:
    name = {"cdk8s": "cdk8s.yaml", "pre-commit": ".pre-commit-config.yaml", "config": ".dra-guard.yaml"}[target]
    victim = outside / "keep.yaml"
    (project / name).symlink_to(victim)
    code, _, stderr = dra_guard("init", target, "--dir", project)
    assert_refused(code, stderr, name, "outside")
    assert victim.read_text() == "mine: true\n" and (project / name).is_symlink()


@pytest.mark.parametrize(("target", "folder"), [("cdk8s", ".dra-guard"), ("pulumi", "policy-pack")])
def test_init_refuses_a_folder_of_ours_that_is_a_symlink_out(
    project: Path, outside: Path, target: str, folder: str
) -> None:
    """The cdk8s shim's folder, the Pulumi pack's: a symlink out of the project writes nothing,
    there nor in the project (cdk8s.yaml keeps naming no plugin)."""
    (project / "cdk8s.yaml").write_text(CDK8S_YAML)
    (project / folder).symlink_to(outside, target_is_directory=True)
    before, inside = tree(outside), tree(project)
    code, _, stderr = dra_guard("init", target, "--dir", project)
    assert_refused(code, stderr, folder, "outside", "nothing written")
    assert tree(outside) == before and tree(project) == inside


def test_init_writes_through_a_symlinked_cdk8s_yaml_inside_and_keeps_the_link(project: Path) -> None:
    (project / "app").mkdir()
    (project / "app" / "cdk8s.yaml").write_text(CDK8S_YAML)
    (project / "cdk8s.yaml").symlink_to(Path("app") / "cdk8s.yaml")
    code, _, stderr = dra_guard("init", "cdk8s", "--dir", project)
    assert code == 0, stderr
    assert (project / "cdk8s.yaml").is_symlink() and "DraGuardValidation" in (project / "app/cdk8s.yaml").read_text()


def test_a_symlink_planted_at_the_old_temporary_name_redirects_nothing(project: Path, outside: Path) -> None:
    """Before, `cdk8s.yaml.dra-guard-tmp` was opened with a plain open(): a symlink there
    sent the write to its target, then the link itself was renamed over cdk8s.yaml."""
    (project / "cdk8s.yaml").write_text(CDK8S_YAML)
    victim = outside / "keep.yaml"
    (project / "cdk8s.yaml.dra-guard-tmp").symlink_to(victim)
    code, _, stderr = dra_guard("init", "cdk8s", "--dir", project)
    assert code == 0, stderr
    assert victim.read_text() == "mine: true\n"
    written = project / "cdk8s.yaml"
    assert not written.is_symlink() and "DraGuardValidation" in written.read_text()
    assert sorted(os.listdir(project)) == [".dra-guard", "cdk8s.yaml", "cdk8s.yaml.dra-guard-tmp"]  # no temporary
    assert sorted(os.listdir(project / ".dra-guard" / "cdk8s-plugin")) == ["index.js", "package.json"]


def test_init_leaves_no_temporary_when_the_rename_fails(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / ".pre-commit-config.yaml").write_text("repos: []\n")

    def fail(source: str, destination: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    code, _, stderr = dra_guard("init", "pre-commit", "--dir", project)
    assert_refused(code, stderr, "cannot write", "No space left on device")
    assert tree(project) == {".pre-commit-config.yaml": b"repos: []\n"}


# --- migrate ------------------------------------------------------------------------------


def legacy(folder: Path, name: str = "pod.yaml") -> Path:
    path = folder / name
    path.write_bytes((CORPUS / "gpu-pod.yaml").read_bytes())
    return path


def test_in_place_writes_a_symlink_s_real_file_inside_and_keeps_the_link(project: Path) -> None:
    (project / "real").mkdir()
    real = legacy(project / "real")
    original = real.read_bytes()
    link = project / "pod.yaml"
    link.symlink_to(Path("real") / "pod.yaml")
    code, report, stderr = dra_guard("migrate", link, "--in-place", *PINS)
    assert code == 0, report + stderr
    assert link.is_symlink() and os.readlink(link) == os.path.join("real", "pod.yaml")
    assert "resourceClaimTemplateName" in real.read_text()
    assert (project / "real" / "pod.yaml.bak").read_bytes() == original
    assert not (project / "pod.yaml.bak").exists()
    assert f"written to {real}" in report


def test_in_place_refuses_a_symlink_out_of_the_walked_folder(project: Path, outside: Path) -> None:
    victim = legacy(outside, "theirs.yaml")
    before, untouched = victim.read_bytes(), legacy(project, "ours.yaml").read_bytes()
    (project / "link.yaml").symlink_to(victim)
    code, _, stderr = dra_guard("migrate", project, "--in-place", *PINS)
    assert_refused(code, stderr, "--in-place", "outside", "nothing written")
    assert victim.read_bytes() == before and (project / "ours.yaml").read_bytes() == untouched  # nothing at all
    assert sorted(os.listdir(project)) == ["link.yaml", "ours.yaml"] and tree(outside) == {
        "keep.yaml": b"mine: true\n",
        "theirs.yaml": before,
    }


def test_in_place_never_overwrites_a_backup_that_differs(project: Path) -> None:
    pod = legacy(project)
    before = pod.read_bytes()
    (project / "pod.yaml.bak").write_text("an earlier original\n")
    code, _, stderr = dra_guard("migrate", project, "--in-place", *PINS)
    assert_refused(code, stderr, "pod.yaml.bak exists and differs")
    assert (project / "pod.yaml.bak").read_text() == "an earlier original\n" and pod.read_bytes() == before


def test_in_place_keeps_a_backup_that_already_holds_the_original(project: Path) -> None:
    pod = legacy(project)
    (project / "pod.yaml.bak").write_bytes(pod.read_bytes())
    code, report, stderr = dra_guard("migrate", project, "--in-place", *PINS)
    assert code == 0, report + stderr
    assert "resourceClaimTemplateName" in pod.read_text()


def test_in_place_refuses_a_backup_name_that_is_a_symlink(project: Path, outside: Path) -> None:
    legacy(project)
    (project / "pod.yaml.bak").symlink_to(outside / "keep.yaml")
    code, _, stderr = dra_guard("migrate", project, "--in-place", *PINS)
    assert_refused(code, stderr, "no regular file")
    assert (outside / "keep.yaml").read_text() == "mine: true\n"


def test_a_migrate_that_fails_mid_way_leaves_no_temporary(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = legacy(project, "a.yaml"), legacy(project, "b.yaml")
    original = first.read_bytes()
    real_replace = os.replace
    calls: list[str] = []

    def fail_on_the_third(source: str, destination: str) -> None:  # a.yaml.bak, a.yaml, then b.yaml.bak
        calls.append(destination)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        real_replace(source, destination)

    monkeypatch.setattr(os, "replace", fail_on_the_third)
    code, _, stderr = dra_guard("migrate", project, "--in-place", *PINS)
    assert_refused(code, stderr, "cannot write", "b.yaml.bak", "1 file(s) written before it")
    assert sorted(os.listdir(project)) == ["a.yaml", "a.yaml.bak", "b.yaml"]  # no .dra-guard-*.tmp
    assert (project / "a.yaml.bak").read_bytes() == original and second.read_bytes() == original


def test_output_refuses_a_symlinked_folder_out_of_the_output_folder(tmp_path: Path, outside: Path) -> None:
    inputs, output = tmp_path / "in", tmp_path / "out"
    (inputs / "team").mkdir(parents=True)
    legacy(inputs / "team")
    output.mkdir()
    (output / "team").symlink_to(outside, target_is_directory=True)
    code, _, stderr = dra_guard("migrate", inputs, "-o", output, *PINS)
    assert_refused(code, stderr, "-o", "outside")
    assert tree(outside) == {"keep.yaml": b"mine: true\n"}


def test_output_file_that_is_a_symlink_out_is_refused(tmp_path: Path, outside: Path) -> None:
    source = legacy(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "out.yaml").symlink_to(outside / "keep.yaml")
    code, _, stderr = dra_guard("migrate", source, "-o", tmp_path / "out" / "out.yaml", *PINS)
    assert_refused(code, stderr, "outside")
    assert (outside / "keep.yaml").read_text() == "mine: true\n"


def test_stale_temporaries_of_a_killed_run_are_swept_and_fresh_ones_kept(project: Path) -> None:
    legacy(project)
    stale, fresh, other = project / ".dra-guard-abcd1234.tmp", project / ".dra-guard-wxyz5678.tmp", project / "x.tmp"
    for path in (stale, fresh, other):
        path.write_text("left over")
    old = time.time() - safe_write.STALE_AFTER_S - 60
    os.utime(stale, (old, old))
    os.utime(other, (old, old))
    code, report, stderr = dra_guard("migrate", project, "--in-place", *PINS)
    assert code == 0, report + stderr
    assert not stale.exists() and fresh.exists() and other.exists()


# --- a path named inside the working folder stays in it -----------------------------------


@pytest.fixture
def checkout(project: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cloned repository, the working folder (as in CI), with a manifest and a folder
    `reports` its author made a symlink out of it."""
    legacy(project)
    (project / "reports").symlink_to(outside, target_is_directory=True)
    monkeypatch.chdir(project)
    return project


@pytest.mark.parametrize("target", ["reports/dra-guard.sarif", "reports/../dra-guard.sarif"])
def test_check_writes_no_report_through_a_planted_folder_symlink(checkout: Path, outside: Path, target: str) -> None:
    """`reports/..` is the folder above wherever `reports` leads, not the checkout."""
    code, _, stderr = dra_guard("check", "--format", "sarif", "-o", target, "pod.yaml")
    assert_refused(code, stderr, f"cannot write {target}", "outside the working folder")
    assert tree(outside) == {"keep.yaml": b"mine: true\n"}
    assert not (outside.parent / "dra-guard.sarif").exists()


def test_check_writes_no_report_into_what_a_planted_report_name_leads_to(checkout: Path) -> None:
    """A report name committed as a symlink to a device (/dev/null here; /dev/sda or a
    watchdog in earnest) is not opened: only a name replaced by a rename is safe."""
    (checkout / "dra-guard.sarif").symlink_to(os.devnull)
    code, _, stderr = dra_guard("check", "--format", "sarif", "-o", "dra-guard.sarif", "pod.yaml")
    assert_refused(code, stderr, "dra-guard.sarif leads to", "outside the working folder")


@pytest.mark.parametrize(
    "arguments",
    [
        ["--write-baseline", "reports/baseline.json"],
        ["--shard", "1/1", "--facts-out", "reports/facts"],
    ],
)
def test_baselines_and_facts_go_through_no_planted_folder_symlink(
    checkout: Path, outside: Path, arguments: list[str]
) -> None:
    code, _, stderr = dra_guard("check", *arguments, "pod.yaml")
    assert code == 2 and "outside the working folder" in stderr, stderr
    assert tree(outside) == {"keep.yaml": b"mine: true\n"}


def test_a_report_named_outside_the_working_folder_is_the_users_choice(checkout: Path, tmp_path: Path) -> None:
    code, _, stderr = dra_guard("check", "--format", "json", "-o", tmp_path / "report.json", "pod.yaml")
    assert code == 1, stderr
    assert (tmp_path / "report.json").read_text().startswith("{")


def test_migrate_writes_nothing_through_a_planted_output_folder(checkout: Path, outside: Path) -> None:
    code, _, stderr = dra_guard("migrate", "pod.yaml", "-o", "reports/", *PINS)
    assert_refused(code, stderr, "outside the working folder", "nothing written")
    assert tree(outside) == {"keep.yaml": b"mine: true\n"}


def test_in_place_rewrites_no_named_folder_that_is_a_symlink_out(checkout: Path, outside: Path) -> None:
    legacy(outside)
    code, _, stderr = dra_guard("migrate", "reports", "--in-place", *PINS)
    assert_refused(code, stderr, "outside the working folder", "nothing written")
    assert tree(outside) == {"keep.yaml": b"mine: true\n", "pod.yaml": (CORPUS / "gpu-pod.yaml").read_bytes()}
