"""How `init` and `migrate` write files: never outside the folder they were pointed at.

A cloned repository is untrusted input.  It can hold a `.github` that is a symlink to
/etc, a `k8s/pod.yaml` that is a symlink to ~/.bashrc, or a symlink planted at the name a
temporary file would get.  So every write goes through here:

* the target's real path (symlinks resolved) must lie inside the root's real path (the
  project, the walked folder, the `-o` folder), or nothing is written;
* the bytes go to a fresh temporary made by `mkstemp` (O_CREAT | O_EXCL: a file or
  symlink already at that name makes it pick another name, never write through it) beside
  the real target, so a symlinked target stays a symlink and its real file is replaced;
* the temporary is fsynced before `os.replace`, and the folder after it: a crash leaves
  the old file or the new one, whole, never half of one and never an empty one.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import time

#: Every temporary this package writes is named `.dra-guard-<mkstemp's 8 characters>.tmp`.
TEMP_PREFIX = ".dra-guard-"
TEMP_SUFFIX = ".tmp"
_TEMP_NAME = re.compile(re.escape(TEMP_PREFIX) + r"[a-z0-9_]{8}" + re.escape(TEMP_SUFFIX))
#: A temporary older than this is left over from a killed run: a live run renames or
#: removes its own within seconds, so a younger one may belong to a run still going.
STALE_AFTER_S = 10 * 60


class OutsideRoot(ValueError):
    """A target whose real path leaves the folder it must be written under."""


def real_path_inside(path: str, root: str) -> str:
    """The real path of `path`; OutsideRoot when it does not lie inside the real `root`."""
    real, real_root = os.path.realpath(path), os.path.realpath(root)
    try:
        contained = os.path.commonpath([real, real_root]) == real_root
    except ValueError:  # another drive (Windows): certainly not inside
        contained = False
    if not contained:
        raise OutsideRoot(f"{path} resolves to {real}, outside {real_root}")
    return real


def _named_inside(path: str, folder: str) -> bool:
    """Whether `path`, as written (made absolute, `..` taken as text), lies in `folder`."""
    try:
        return os.path.commonpath([os.path.abspath(path), os.path.abspath(folder)]) == os.path.abspath(folder)
    except ValueError:  # another drive (Windows)
        return False


def confined(path: str, real: str, working: str | None = None) -> str:
    """`real` (where a write to `path` lands), unless `path` is named inside the working
    folder and `real` lies outside it: then OutsideRoot.

    A file or folder named inside the working folder (`-o dra-guard.sarif`, `-o out/`,
    `migrate --in-place deploy`) is, to whoever typed it, inside the project; in a cloned
    repository any name there may be a symlink its author planted (`out -> /etc`, a report
    name pointing at a device), so where it really leads must stay inside too.  A path
    named outside the working folder (`-o /tmp/report.sarif`, `-o ../x`, `/dev/stdout`)
    is the user's own choice, written as named."""
    working = os.getcwd() if working is None else working
    if _named_inside(path, working):
        real_working = os.path.realpath(working)
        try:
            inside = os.path.commonpath([real, real_working]) == real_working
        except ValueError:
            inside = False
        if not inside:
            raise OutsideRoot(f"{path} leads to {real}, outside the working folder {real_working}")
    return real


def rename_target(path: str, working: str | None = None) -> str:
    """Where an atomic rename onto `path` lands: its folder's real path joined with its
    name.  The name itself, a symlink or not, is replaced, never followed; every folder on
    the way is resolved as the system resolves it (`reports/..` is the parent of wherever
    `reports` leads), so the temporary and the rename go to the same real folder, which
    `confined` keeps in the working folder where `path` is named inside it."""
    folder, name = os.path.split(path)
    return confined(path, os.path.join(os.path.realpath(folder or os.curdir), name), working)


def _new_file_mode(like: str | None) -> int:
    """The permissions of the file replaced, or what a plain open() would give a new one
    (mkstemp makes 0600, which would hide a manifest from the rest of a team)."""
    if like is not None and os.path.exists(like):
        return stat.S_IMODE(os.stat(like).st_mode)
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def fsync_directory(directory: str) -> None:
    """Make a rename in `directory` durable; a filesystem that cannot fsync a folder still
    renamed atomically, so that is no error."""
    with contextlib.suppress(OSError):
        descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def write_atomically(real: str, data: bytes, *, like: str | None = None) -> None:
    """Replace the file at `real` (a path real_path_inside gave) with `data`, with the
    permissions of `like` (default: the file replaced)."""
    directory = os.path.dirname(real) or "."
    mode = _new_file_mode(real if like is None else like)
    descriptor, temporary = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX, dir=directory)
    replaced = False
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fchmod(stream.fileno(), mode)
            os.fsync(stream.fileno())  # the bytes are on disk before any name points at them
        os.replace(temporary, real)
        replaced = True
    finally:
        # An error or ^C between mkstemp and the rename: the temporary goes with it.  (A
        # SIGKILL runs no finally; remove_stale_temporaries sweeps those on the next run.)
        if not replaced:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    fsync_directory(directory)


def remove_stale_temporaries(directory: str, now: float | None = None) -> None:
    """Remove this package's temporaries in `directory` that a killed run left behind:
    only regular files named as write_atomically names them, older than STALE_AFTER_S."""
    now = time.time() if now is None else now
    try:
        names = os.listdir(directory)
    except OSError:
        return  # a folder not made yet holds nothing stale
    for name in names:
        if not _TEMP_NAME.fullmatch(name):
            continue
        path = os.path.join(directory, name)
        with contextlib.suppress(OSError):
            status = os.lstat(path)
            if stat.S_ISREG(status.st_mode) and now - status.st_mtime > STALE_AFTER_S:
                os.unlink(path)
