"""`dra-guard check` never skips input silently, never hangs on it and never reads it without bound.

Each test runs the CLI in this process (`main(argv, stdout, stderr)`) in a fresh folder
with a file that has a known finding next to the bad input: the bad input is an input
error naming its path (exit 2), and the good file is still checked and reported.
"""

from __future__ import annotations

import contextlib
import errno
import io
import itertools
import json
import os
import signal
import socket
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dra_guard.cli.main import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, main
from dra_guard.read import walk
from dra_guard.read.config_file import find_config_file
from testkit.manifests import LEGACY_POD

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder outside any git repository and outside HOME, with one file with a finding."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "legacy.yaml").write_text(LEGACY_POD)
    monkeypatch.chdir(root)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if walk.repository_root(str(root)) is not None:
        pytest.skip("the temporary folder is inside a git repository")
    return root


class Blocked(Exception):
    """A check that blocked (not an OSError: dra-guard would report that as unreadable input)."""


@pytest.fixture(autouse=True)
def no_hang() -> Iterator[None]:
    """Fails a test that blocks (on a FIFO) instead of hanging the run."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def expired(signum: int, frame: Any) -> None:
        raise Blocked("dra-guard check blocked")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(10)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def check(*arguments: str, stdout: Any = None) -> tuple[int, str, str]:
    out = io.StringIO() if stdout is None else stdout
    err = io.StringIO()
    code = main(["check", *arguments], out, err)
    return code, out.getvalue() if stdout is None else "", err.getvalue()


def report(*arguments: str) -> tuple[int, dict[str, Any], str]:
    """A check with a JSON report written to report.json: exit status, report, stderr."""
    code, _, stderr = check("--format", "json", "-o", "report.json", *arguments)
    return code, json.loads(Path("report.json").read_text(encoding="utf-8")), stderr


def errors_of(document: dict[str, Any]) -> list[tuple[str, str]]:
    return [(error["file"], error["message"]) for error in document["errors"]]


def rules_of(document: dict[str, Any]) -> list[tuple[str, str]]:
    return [(finding["file"], finding["rule"]) for finding in document["findings"]]


def test_an_unreadable_folder_is_an_input_error(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    locked = project / "locked"
    locked.mkdir()
    (locked / "hidden.yaml").write_text(LEGACY_POD)
    if os.geteuid() == 0:  # root reads every folder: make this one refuse as it would refuse a user
        scandir = os.scandir

        def refusing(path: Any = ".") -> Any:
            if os.path.abspath(os.fspath(path)) == str(locked):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
            return scandir(path)

        monkeypatch.setattr(os, "scandir", refusing)
    else:
        locked.chmod(0)  # undone below, so that the folder can be removed
    try:
        code, document, _ = report(".")
        assert code == EXIT_ERROR
        assert errors_of(document) == [("./locked", "cannot read: Permission denied")]
        assert rules_of(document) == [("./legacy.yaml", "DRA001")]  # the rest is still checked
        code, document, _ = report("locked", "legacy.yaml")  # named on the command line
        assert code == EXIT_ERROR and errors_of(document) == [("locked", "cannot read: Permission denied")]
        assert rules_of(document) == [("legacy.yaml", "DRA001")]
    finally:
        locked.chmod(0o755)


def _lock(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make `folder` act as a folder of mode 000 does for a user who is not root: it cannot
    be listed, and nothing below it can be reached (stat'ed) through it."""
    locked = str(folder)
    denied = OSError(errno.EACCES, os.strerror(errno.EACCES))

    def refuse(function: Any, below_only: bool) -> Any:
        def refusing(path: Any = ".", *arguments: Any, **keywords: Any) -> Any:
            absolute = os.path.abspath(os.fspath(path))
            if absolute.startswith(locked + os.sep) or (not below_only and absolute == locked):
                raise PermissionError(denied.errno, denied.strerror, os.fspath(path))
            return function(path, *arguments, **keywords)

        return refusing

    monkeypatch.setattr(os, "scandir", refuse(os.scandir, below_only=False))
    monkeypatch.setattr(os, "stat", refuse(os.stat, below_only=True))
    monkeypatch.setattr(os, "lstat", refuse(os.lstat, below_only=True))


@pytest.mark.parametrize(
    ("pattern", "findings"),
    [
        ("k8s/*/*.yaml", [("k8s/sub/b.yaml", "DRA001")]),  # glob.glob dropped k8s/locked silently
        ("k8s/**/*.yaml", [("k8s/sub/b.yaml", "DRA001")]),  # the walk's form said so already
        ("k8s/locked/*.yaml", []),  # was "no file matches this pattern"
        ("k8s/*/c.yaml", []),  # a name after a wildcard, looked up in a folder that cannot be entered
        ("k8s/locked/deeper/**/*.yaml", []),
    ],
)
def test_a_glob_names_the_folder_it_cannot_read(
    project: Path, monkeypatch: pytest.MonkeyPatch, pattern: str, findings: list[tuple[str, str]]
) -> None:
    (project / "k8s" / "sub").mkdir(parents=True)
    (project / "k8s" / "locked" / "deeper").mkdir(parents=True)
    (project / "k8s" / "sub" / "b.yaml").write_text(LEGACY_POD)
    (project / "k8s" / "locked" / "c.yaml").write_text(LEGACY_POD.replace("legacy", "locked"))
    _lock(project / "k8s" / "locked", monkeypatch)
    code, document, _ = report(pattern)
    assert code == EXIT_ERROR
    assert errors_of(document) == [("k8s/locked", "cannot read: Permission denied")]
    assert rules_of(document) == findings


def test_a_glob_of_a_folder_that_is_not_there_still_matches_nothing(project: Path) -> None:
    for pattern in ("absent/*.yaml", "absent/**/*.yaml", "legacy.yaml/*.yaml"):
        code, document, _ = report(pattern, "legacy.yaml")
        assert code == EXIT_ERROR
        assert errors_of(document) == [(pattern, "no file matches this pattern")]


def test_an_over_long_path_is_an_input_error(project: Path) -> None:
    named = "x" * 300 + ".yaml"  # longer than a file name may be
    code, text, _ = check(named, "legacy.yaml")
    assert code == EXIT_ERROR
    assert f"{named}: error: cannot read: {os.strerror(errno.ENAMETOOLONG)}" in text and "DRA001" in text
    # A tree deeper than a path may be long (PATH_MAX): the walk says where it had to stop.
    # Folders opened one below the other, kept open to remove them afterwards (no path
    # reaches the deepest, so pytest could not remove them: they piled up as garbage-*).
    descriptors = [os.open(project, os.O_RDONLY)]
    try:
        for _ in range(24):
            os.mkdir("d" * 200, dir_fd=descriptors[-1])
            descriptors.append(os.open("d" * 200, os.O_RDONLY, dir_fd=descriptors[-1]))
        code, document, _ = report(".")
        assert code == EXIT_ERROR and rules_of(document) == [("./legacy.yaml", "DRA001")]
        ((file, message),) = errors_of(document)
        assert file.startswith("./" + "d" * 200) and len(file) > 4000
        assert message == f"cannot read: {os.strerror(errno.ENAMETOOLONG)}"
    finally:
        for parent, child in reversed(list(itertools.pairwise(descriptors))):
            os.close(child)
            os.rmdir("d" * 200, dir_fd=parent)
        os.close(descriptors[0])


@needs_fifo
def test_a_fifo_is_refused_never_read(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    os.mkfifo("pipe.yaml")  # nobody writes to it: opening it to read would block
    refused = "not a regular file (a FIFO): not read"
    code, document, _ = report(".")
    assert code == EXIT_ERROR and errors_of(document) == [("./pipe.yaml", refused)]
    assert rules_of(document) == [("./legacy.yaml", "DRA001")]
    code, document, _ = report("pipe.yaml", "legacy.yaml")
    assert code == EXIT_ERROR and errors_of(document) == [("pipe.yaml", refused)]
    # A file a walk found, swapped for a FIFO before it is read.
    os.unlink("pipe.yaml")
    Path("swapped.yaml").write_text(LEGACY_POD)
    select = walk.select

    def swapping(*arguments: Any, **keywords: Any) -> walk.Selection:
        selection = select(*arguments, **keywords)
        os.unlink("swapped.yaml")
        os.mkfifo("swapped.yaml")
        return selection

    monkeypatch.setattr(walk, "select", swapping)
    code, document, _ = report(".")
    assert code == EXIT_ERROR and errors_of(document) == [("./swapped.yaml", refused)]


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="no Unix sockets here")
def test_a_socket_is_refused_as_no_regular_file(project: Path) -> None:
    """open() fails on a socket (ENXIO) before fstat can name it: the error says what it is."""
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind("socket.yaml")
        refused = "not a regular file (a socket): not read"
        for named in (".", "socket.yaml"):
            code, document, _ = report(named, "legacy.yaml")
            assert code == EXIT_ERROR
            assert [message for _, message in errors_of(document)] == [refused]
            assert [rule for _, rule in rules_of(document)] == ["DRA001"]


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_a_device_is_refused_never_read(project: Path) -> None:
    code, document, _ = report("/dev/zero", "legacy.yaml")
    assert code == EXIT_ERROR
    assert errors_of(document) == [("/dev/zero", "not a regular file (a character device): not read")]
    assert rules_of(document) == [("legacy.yaml", "DRA001")]


def test_an_input_over_max_file_bytes_is_refused(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / ".dra-guard.yaml").write_text("max-file-bytes: 1000\n")
    (project / "big.yaml").write_text(LEGACY_POD + "#" * 1000 + "\n")
    size = (project / "big.yaml").stat().st_size
    code, document, _ = report("big.yaml", "legacy.yaml")
    assert code == EXIT_ERROR and rules_of(document) == [("legacy.yaml", "DRA001")]
    ((file, message),) = errors_of(document)
    assert file == "big.yaml"
    assert message.startswith(f"{size} bytes, larger than max-file-bytes (1000 bytes): not read")
    # Standard input gets the same cap.
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"#" * 5000)))
    code, document, _ = report("-")
    assert code == EXIT_ERROR
    assert errors_of(document)[0][0] == "<stdin>" and "more than 1000 bytes" in errors_of(document)[0][1]
    # Under the cap, a file is read.
    (project / ".dra-guard.yaml").write_text(f"max-file-bytes: {size}\n")
    assert report("big.yaml")[0] == EXIT_FINDINGS
    for bad in ("0", "true", "'1000'"):
        (project / ".dra-guard.yaml").write_text(f"max-file-bytes: {bad}\n")
        code, _, stderr = check("legacy.yaml")
        assert code == EXIT_ERROR and "max-file-bytes: must be a positive integer" in stderr


def test_discovery_outside_a_repository_stops_at_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outer = tmp_path / "outer"
    home = outer / "home"
    project = home / "work" / "project"
    project.mkdir(parents=True)
    (project / "legacy.yaml").write_text(LEGACY_POD)
    if walk.repository_root(str(project)) is not None:
        pytest.skip("the temporary folder is inside a git repository")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    (outer / ".dra-guard.yaml").write_text("disable: [DRA001]\n")  # above HOME: never read
    assert find_config_file(project) is None
    code, _, stderr = check(".")
    assert code == EXIT_FINDINGS and stderr == ""
    (home / ".dra-guard.yaml").write_text("disable: [DRA001]\n")  # HOME itself is looked at
    assert find_config_file(project) == str(home / ".dra-guard.yaml")
    code, _, stderr = check(".")
    assert code == EXIT_CLEAN
    assert stderr == f"dra-guard: configuration: {home / '.dra-guard.yaml'}\n"  # found above what is checked
    # A folder outside HOME is looked at alone: nothing above it.
    elsewhere = tmp_path / "elsewhere" / "sub"
    elsewhere.mkdir(parents=True)
    (elsewhere.parent / ".dra-guard.yaml").write_text("disable: [DRA001]\n")
    assert find_config_file(elsewhere) is None
    (elsewhere / ".dra-guard.yaml").write_text("disable: [DRA001]\n")
    assert find_config_file(elsewhere) == str(elsewhere / ".dra-guard.yaml")
    # Inside a git repository discovery stops at its root, wherever HOME is.
    repository = home / "repo"
    (repository / ".git").mkdir(parents=True)
    (repository / "k8s").mkdir()
    assert find_config_file(repository / "k8s") is None


def test_a_configuration_someone_else_owns_is_ignored(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = project / ".dra-guard.yaml"
    config.write_text("disable: [DRA001]\n")
    assert check("legacy.yaml")[0] == EXIT_CLEAN  # one's own is obeyed
    if os.geteuid() == 0:
        os.chown(config, 12345, 12345)
        owner, user = 12345, 0
    else:  # the file stays the user's; this process pretends to be someone else
        owner, user = os.geteuid(), os.geteuid() + 1
        monkeypatch.setattr(os, "geteuid", lambda: user)
    assert find_config_file(project) is None
    code, text, stderr = check("legacy.yaml")
    assert code == EXIT_FINDINGS and "DRA001" in text
    assert stderr == (
        f"dra-guard: ignoring the configuration ./.dra-guard.yaml: owned by uid {owner}, not by you (uid {user}) "
        "or root (as git's safe.directory asks)\n"
    )
    assert stat.S_ISREG(config.stat().st_mode)


class _Failing(io.StringIO):
    def __init__(self, error: OSError) -> None:
        super().__init__()
        self.error = error

    def write(self, text: str) -> int:
        raise self.error


@pytest.mark.parametrize("number", [errno.ENOSPC, errno.EPIPE])
def test_a_failing_stdout_is_named(project: Path, number: int) -> None:
    error = (BrokenPipeError if number == errno.EPIPE else OSError)(number, os.strerror(number))
    for arguments in ([], ["--format", "json"], ["--format", "sarif"]):
        code, _, stderr = check(*arguments, "legacy.yaml", stdout=_Failing(error))
        assert code == EXIT_ERROR
        assert stderr.startswith(f"dra-guard: cannot write the report to stdout: {os.strerror(number)}\n")


def _run_closing(descriptor: int, *arguments: str) -> tuple[int, str]:
    """`dra-guard ARGUMENTS` in a process whose descriptor 0 or 1 is closed (`<&-`, `>&-`):
    exit status, and what it wrote (stderr, after stdout where that is open)."""
    import subprocess

    completed = subprocess.run(
        [sys.executable, "-c", "import sys; from dra_guard.cli.main import main; sys.exit(main())", *arguments],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        preexec_fn=lambda: os.close(descriptor),
        text=True,
        timeout=60,
        check=False,
    )
    return completed.returncode, completed.stdout + completed.stderr


@pytest.mark.e2e
@pytest.mark.parametrize("command", [["check", "-"], ["migrate", "-", "--gpu-product", "A100", "-n", "ns"]])
def test_a_closed_stdin_is_an_input_error_not_a_traceback(project: Path, command: list[str]) -> None:
    code, stderr = _run_closing(0, *command)
    assert code == EXIT_ERROR and "Traceback" not in stderr
    assert "cannot read: standard input is closed" in stderr


@pytest.mark.e2e
@pytest.mark.parametrize(
    "command",
    [["check", "legacy.yaml"], ["check", "--format", "json", "legacy.yaml"], ["rules"], ["admission-policy"]],
)
def test_a_closed_stdout_is_named_once_not_a_traceback(project: Path, command: list[str]) -> None:
    code, stderr = _run_closing(1, *command)
    assert code == EXIT_ERROR and "Traceback" not in stderr
    assert stderr.count("standard output is closed") == 1, stderr


@pytest.mark.parametrize(
    "command",
    [
        ["rules"],
        ["admission-policy"],
        ["completion", "bash"],
        ["migrate", "legacy.yaml", "--gpu-product", "A100", "-n", "ns"],
    ],
)
@pytest.mark.parametrize("number", [errno.ENOSPC, errno.EPIPE])
def test_every_command_names_a_failing_stdout(project: Path, command: list[str], number: int) -> None:
    """A full disk is an error for every command; a reader that stops early (`| head`) is
    one where the output is a product (a policy, migrated manifests), not where people read."""
    error = (BrokenPipeError if number == errno.EPIPE else OSError)(number, os.strerror(number))
    err = io.StringIO()
    code = main(command, _Failing(error), err)
    if number == errno.EPIPE and command[0] in ("rules", "completion"):
        assert (code, err.getvalue()) == (EXIT_CLEAN, "")
    else:
        assert code == EXIT_ERROR
        assert err.getvalue().endswith(f"dra-guard: cannot write standard output: {os.strerror(number)}\n")


@pytest.mark.e2e
@pytest.mark.skipif(not hasattr(os, "set_blocking"), reason="no non-blocking pipes here")
@pytest.mark.parametrize(
    "command",
    [["check", "--format", "json", "many.yaml"], ["migrate", "many.yaml", "--gpu-product", "A100", "-n", "ns"]],
)
def test_an_output_cut_short_is_named_with_pythonunbuffered(project: Path, command: list[str]) -> None:
    """With PYTHONUNBUFFERED (this project's Dockerfile sets it), sys.stdout writes
    straight to the descriptor and drops what a write leaves over: into a full
    non-blocking pipe the report was cut at the pipe's size, under exit 1 and no word.
    Now the whole output arrives, or exit 2 names why it did not."""
    import subprocess

    # Several times what a pipe holds (64 KiB), the reader not reading.
    Path("many.yaml").write_text("---\n".join(LEGACY_POD.replace("legacy", f"p{n}") for n in range(150)))
    reader, writer = os.pipe()
    os.set_blocking(writer, False)
    try:
        completed = subprocess.run(
            [sys.executable, "-c", "import sys; from dra_guard.cli.main import main; sys.exit(main())", *command],
            stdin=subprocess.DEVNULL,
            stdout=writer,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            timeout=120,
            check=False,
        )
        os.close(writer)
        with os.fdopen(reader, "rb") as pipe:
            written = pipe.read()
    finally:
        for descriptor in (reader, writer):
            with contextlib.suppress(OSError):
                os.close(descriptor)
    stderr = completed.stderr.decode()
    assert "Traceback" not in stderr
    assert completed.returncode == EXIT_ERROR, (completed.returncode, len(written), stderr[-300:])
    assert "cannot write the report to stdout" in stderr or "cannot write standard output" in stderr, stderr[-300:]


def test_only_a_plain_file_descriptor_gets_a_buffered_writer() -> None:
    """A raw stream that is not a FileIO writes in its own way and keeps it: with
    PYTHONUNBUFFERED on a Windows console, sys.stdout's raw stream is `_WindowsConsoleIO`
    (registered as an io.RawIOBase), which hands the console UTF-16; a FileIO on its
    descriptor would write UTF-8 bytes the console reads in its code page (non-ASCII text
    garbled).  A FileIO's stream is still given a buffered writer."""
    from dra_guard.cli.main import _whole_writes

    class ConsoleLike(io.RawIOBase):
        def __init__(self, descriptor: int) -> None:
            self.descriptor = descriptor
            self.written = b""

        def writable(self) -> bool:
            return True

        def fileno(self) -> int:
            return self.descriptor

        def write(self, data: Any) -> int:
            self.written += bytes(data)
            return len(data)

    reader, writer = os.pipe()
    try:
        console = ConsoleLike(writer)
        stream = io.TextIOWrapper(console, encoding="utf-8", write_through=True)
        assert _whole_writes(stream) is stream
        stream.write("é\n")
        assert console.written == "é\n".encode()
        plain = io.TextIOWrapper(io.FileIO(writer, "w", closefd=False), encoding="utf-8", write_through=True)
        buffered = _whole_writes(plain)
        assert buffered is not plain and isinstance(buffered.buffer, io.BufferedWriter)  # type: ignore[union-attr]
    finally:
        os.close(reader)
        os.close(writer)


@pytest.mark.parametrize("where", ["config-yaml", "config-toml", "baseline", "facts"])
def test_input_nested_past_pythons_stack_is_a_clear_error(project: Path, where: str) -> None:
    """json, PyYAML and tomllib recurse: a file nested 100,000 deep raises RecursionError,
    which must be an error naming the file, never a traceback (or a lost report)."""
    deep = "[" * 100_000 + "]" * 100_000
    if where == "config-yaml":
        Path("deep.yaml").write_text(f"disable: {deep}\n")
        code, _, stderr = check("--config", "deep.yaml", "legacy.yaml")
        assert code == EXIT_ERROR and "deep.yaml: YAML nested too deeply" in stderr
    elif where == "config-toml":
        Path("pyproject.toml").write_text(f"[tool.dra-guard]\ndisable = {deep}\n")
        code, _, stderr = check("--config", "pyproject.toml", "legacy.yaml")
        assert code == EXIT_ERROR and "pyproject.toml: TOML nested too deeply" in stderr
    elif where == "baseline":
        Path("baseline.json").write_text(deep)
        code, _, stderr = check("--baseline", "baseline.json", "legacy.yaml")
        assert code == EXIT_ERROR and "baseline baseline.json: nested too deeply" in stderr
    else:
        # A .json file a walk finds is first asked whether it is a shard's facts file (its
        # first line, within the first 4 KiB, parsed); this one is not, nor a manifest.
        Path("deep.json").write_bytes(b'{"a":' + b"[" * 3000 + b"\n\x80")
        code, document, _ = report(".")
        assert code == EXIT_FINDINGS and rules_of(document) == [("./legacy.yaml", "DRA001")]
        assert document["skipped"] == ["./deep.json"]


def test_a_file_name_with_a_newline_stays_on_its_line_of_the_text_report(project: Path) -> None:
    """grep, and editors that jump to `file:line`, read one finding per line."""
    Path("new\nline.yaml").write_text(LEGACY_POD)
    Path("broken\r.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: [\n")
    code, text, _ = check("new\nline.yaml", "broken\r.yaml")
    assert code == EXIT_ERROR
    lines = text.splitlines()
    assert any(line.startswith("new\\x0aline.yaml:6: DRA001 [critical]") for line in lines), text
    assert any(line.startswith("broken\\x0d.yaml:4: error: ") for line in lines), text


@pytest.mark.e2e
@pytest.mark.parametrize(("stdin", "noted"), [("pipe", True), ("devnull", False)])
def test_data_piped_in_with_no_path_named_is_said_to_be_unread(project: Path, stdin: str, noted: bool) -> None:
    """`helm template x | dra-guard check` (no `-`) checks the working folder: said, not silent."""
    import subprocess

    completed = subprocess.run(
        [sys.executable, "-m", "dra_guard.cli", "check", "--config", "/dev/null"],
        input=LEGACY_POD if stdin == "pipe" else None,
        stdin=subprocess.DEVNULL if stdin == "devnull" else None,
        capture_output=True,
        text=True,
        cwd=project,
        timeout=60,
        check=False,
    )
    note = "standard input is not read (name - to check it)"
    assert (note in completed.stderr) is noted, completed.stderr
    named = subprocess.run(
        [sys.executable, "-m", "dra_guard.cli", "check", "--config", "/dev/null", "."],
        input=LEGACY_POD,
        capture_output=True,
        text=True,
        cwd=project,
        timeout=60,
        check=False,
    )
    assert note not in named.stderr  # `.` named: what is checked is what was asked for
