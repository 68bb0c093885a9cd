"""Kustomizations on disk: rendered as `kubectl kustomize` renders them, and the patch files a
kustomization names read with it (the model, `dra_guard.model.kustomize`, reads patches as
written where a kustomization is not rendered).

Rendering (README, "Kustomize, as kustomize renders it"): `roots` picks the kustomizations
no other one in the input builds on (`tree`, `closure`: their resources, bases, components
and patch files), `render` runs `kubectl kustomize` (or `kustomize build`) in a temporary
folder whose kustomization asks for origin annotations, with a timeout, no stdin and no
network, and `origin` maps each rendered object back to the file it came from.  A remote
reference, a missing renderer or a timeout leaves the kustomization to the reading of its
patches.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from dra_guard.model.embedded import Unreadable, read_embedded_documents
from dra_guard.model.kustomize import MAX_PATCH_FILE_BYTES, PatchFile, patch_file_names
from dra_guard.model.manifest import items, mapping
from dra_guard.read.files import Refused, TooLarge, read_regular
from dra_guard.read.walk import KUSTOMIZATION_FILE_NAMES


def read_patch_files(obj: Mapping[str, Any], source: str) -> dict[str, PatchFile]:
    """The patch files of the kustomization in the file `source`, each read (or why not)."""
    folder = os.path.dirname(source)
    return {name: _read_patch_file(os.path.join(folder, name), folder) for name in patch_file_names(obj)}


def _read_patch_file(file: str, folder: str) -> PatchFile:
    # kustomize loads a file only in or below the kustomization's folder, symlinks resolved
    # (its default load restrictor: kubernetes-sigs/kustomize api/loader/loadrestrictions.go,
    # RestrictionRootOnly, "security; file ... is not in or below ..."); nor does dra-guard,
    # so a cloned repository's `path: ../../../home/me/.kube/config` reads nothing of the
    # machine it is checked on.  What is left unread is "cannot verify", never skipped.
    if not _in_or_below(file, folder):
        return PatchFile(file, Unreadable("it is not in or below the kustomization's folder, which kustomize refuses"))
    if not os.path.isfile(file):
        return PatchFile(file, Unreadable("it is not there"))
    try:
        data = read_regular(file, MAX_PATCH_FILE_BYTES)
    except OSError as error:
        return PatchFile(file, Unreadable(f"cannot read {file}: {error.strerror or error}"))
    except TooLarge:
        return PatchFile(file, Unreadable(f"{file} is larger than {MAX_PATCH_FILE_BYTES} bytes"))
    except Refused as refused:  # swapped for a FIFO or a device since it was looked at
        return PatchFile(file, Unreadable(f"cannot read {file}: {refused.reason}"))
    try:
        return PatchFile(file, data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        return PatchFile(file, Unreadable(f"{file} is not UTF-8 text"))


def _in_or_below(file: str, folder: str) -> bool:
    """Whether `file`, symlinks resolved, lies in `folder` (resolved too) or below it."""
    real, real_folder = os.path.realpath(file), os.path.realpath(folder or os.curdir)
    try:
        return os.path.commonpath([real, real_folder]) == real_folder
    except ValueError:  # another drive (Windows)
        return False


#: How long one `kubectl kustomize` may take.
KUSTOMIZE_TIMEOUT_SECONDS = 60
#: The annotation kustomize writes with `buildMetadata: [originAnnotations]`
#: (kustomize `api/resource/origin.go`): `path:` of the file an object came from, or
#: `configuredIn:` for what a generator made.
ORIGIN_ANNOTATION = "config.kubernetes.io/origin"
#: Fields whose entries are files or kustomization folders (kustomize
#: `api/types/kustomization.go`), read in `tree`.
_PATH_LISTS = ("resources", "bases", "components", "crds", "configurations", "transformers", "generators", "validators")
_FOLDER_LISTS = ("resources", "bases", "components", "transformers", "generators", "validators")
_GENERATORS = ("configMapGenerator", "secretGenerator")
_HELM_FIELDS = ("helmCharts", "helmChartInflationGenerator", "helmGlobals")
#: Hosts kustomize clones from without a scheme (`api/internal/git/repospec.go`).
_REMOTE_PREFIXES = ("git@", "git::", "github.com/", "gitlab.com/", "bitbucket.org/", "ssh:", "file:")
#: An address that refuses every connection: with it as the proxy, nothing is fetched even
#: where the references dra-guard reads miss one.
_NO_NETWORK = "http://127.0.0.1:9"


def kustomization_file(folder: str) -> str | None:
    """The kustomization file of `folder`, as kustomize looks for it, or None."""
    for name in KUSTOMIZATION_FILE_NAMES:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
    return None


@dataclass(frozen=True)
class Tree:
    """What one kustomization folder reads, found without running kustomize."""

    #: Its kustomization file (None: the folder has none).
    file: str | None
    #: "Kustomization" or "Component" ("" when the file cannot be read).
    kind: str
    #: The kustomization folders it builds on (resources, bases, components), real paths.
    folders: frozenset[str] = frozenset()
    #: The files it reads (resources, patches, generators' sources, ...), real paths.
    files: frozenset[str] = frozenset()
    #: A reference kustomize would fetch: "resources: https://..." (None: none).
    remote: str | None = None
    #: Helm charts, which kustomize renders only with --enable-helm (and may download).
    helm: bool = False


def tree(folder: str) -> Tree:
    file = kustomization_file(folder)
    if file is None:
        return Tree(None, "")
    try:
        documents = read_embedded_documents(read_regular(file, MAX_PATCH_FILE_BYTES).decode("utf-8-sig"))
    except (OSError, UnicodeDecodeError, Unreadable, Refused):
        return Tree(file, "")  # the file's own reading reports why
    obj = mapping(documents[0]) if len(documents) == 1 else {}
    kind = obj.get("kind") if isinstance(obj.get("kind"), str) else "Kustomization"
    folders: set[str] = set()
    files: set[str] = {os.path.realpath(file)}
    remote: str | None = None
    for field_name, entry in _references(obj):
        if remote is None and _is_remote(folder, entry):
            remote = f"{field_name}: {entry}"
            continue
        located = os.path.join(folder, entry)
        if os.path.isdir(located) and field_name in _FOLDER_LISTS:
            folders.add(os.path.realpath(located))
        elif os.path.isfile(located):
            files.add(os.path.realpath(located))
    helm = any(obj.get(name) for name in _HELM_FIELDS)
    return Tree(file, str(kind), frozenset(folders), frozenset(files), remote, helm)


def _references(obj: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(field, path) for each file or folder the kustomization names."""
    for name in _PATH_LISTS:
        for entry in items(obj.get(name)):
            if isinstance(entry, str):
                yield name, entry
    for name in ("patches", "patchesJson6902", "replacements"):
        for entry in items(obj.get(name)):
            path = mapping(entry).get("path")
            if isinstance(path, str):
                yield name, path
    for entry in items(obj.get("patchesStrategicMerge")):
        if isinstance(entry, str) and "\n" not in entry and ":" not in entry:
            yield "patchesStrategicMerge", entry
    openapi = mapping(obj.get("openapi")).get("path")
    if isinstance(openapi, str):
        yield "openapi", openapi
    for name in _GENERATORS:
        for raw in items(obj.get(name)):
            generator = mapping(raw)
            sources = [*items(generator.get("files")), *items(generator.get("envs")), generator.get("env")]
            for source in sources:
                if isinstance(source, str):
                    yield name, source.partition("=")[2] or source


def _is_remote(folder: str, entry: str) -> bool:
    """Whether kustomize would fetch `entry` (a URL, or a repository spec it clones)."""
    if "://" in entry or entry.startswith(_REMOTE_PREFIXES):
        return True
    if os.path.exists(os.path.join(folder, entry)):
        return False
    host = entry.split("/", 1)[0]
    return "/" in entry and "." in host.strip(".") and host not in (os.curdir, os.pardir)


@dataclass(frozen=True)
class Closure:
    """Everything a kustomization reads, through the kustomizations it builds on."""

    folders: frozenset[str]
    files: frozenset[str]
    remote: str | None
    helm: bool


def closure(folder: str, trees: dict[str, Tree]) -> Closure:
    """The folders and files `folder`'s kustomization reads, down to its bases (`trees`
    caches each folder's Tree by real path)."""
    start = os.path.realpath(folder)
    seen: set[str] = set()
    files: set[str] = set()
    remote: str | None = None
    helm = False
    pending = [start]
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        if current not in trees:
            trees[current] = tree(current)
        found = trees[current]
        files |= found.files
        remote = remote or found.remote
        helm = helm or found.helm
        pending.extend(sorted(found.folders - seen))
    return Closure(frozenset(seen), frozenset(files), remote, helm)


def roots(folders: list[str], trees: dict[str, Tree]) -> tuple[list[str], dict[str, Closure]]:
    """The kustomizations to render among `folders` (the kustomization folders a check
    selected), and each one's closure: a Kustomization that no other selected one builds on.

    A base the overlays of the selection build on is not rendered on its own: its objects
    are checked as each overlay renders them, never twice.  A Component is never rendered
    on its own (kustomize builds it only into a Kustomization).
    """
    closures = {folder: closure(folder, trees) for folder in folders}
    real = {folder: os.path.realpath(folder) for folder in folders}
    chosen = []
    for folder in folders:
        if trees[real[folder]].kind != "Kustomization":
            continue
        above = [
            other
            for other in folders
            if other != folder
            and real[folder] in closures[other].folders
            and real[other] not in closures[folder].folders
        ]
        if not above:
            chosen.append(folder)
    return chosen, closures


@dataclass(frozen=True)
class Rendered:
    """What kustomize rendered: its output, and the folder its origins are relative to."""

    output: bytes
    #: The temporary folder the origin annotations' paths are relative to (already gone).
    base: str


@dataclass(frozen=True)
class RenderError:
    """kustomize refused the kustomization; `message` is what it said."""

    message: str


def renderer() -> list[str] | None:
    """The command that renders a folder: `kubectl kustomize` (what `kubectl apply -k`
    applies), else `kustomize build`; None when neither is on PATH."""
    import shutil

    kubectl = shutil.which("kubectl")
    if kubectl:
        return [kubectl, "kustomize"]
    kustomize = shutil.which("kustomize")
    return [kustomize, "build"] if kustomize else None


def render(folder: str, command: list[str], timeout: float = KUSTOMIZE_TIMEOUT_SECONDS) -> Rendered | RenderError:
    """`folder` rendered by `command`, with each object's origin annotated.

    The user's files are never touched: a kustomization in a temporary folder names
    `folder` as its one resource and asks for `buildMetadata: [originAnnotations]`.
    Nothing is fetched (remote references are refused before, and the network is
    closed to kustomize and git) and no plugin runs (none is enabled).
    Raises OSError or subprocess.TimeoutExpired when the command cannot run.
    """
    import subprocess
    import tempfile

    environment = {
        **os.environ,
        **{name: _NO_NETWORK for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY")},
        "NO_PROXY": "",
        "no_proxy": "",
        "GIT_ALLOW_PROTOCOL": "none",
        "GIT_TERMINAL_PROMPT": "0",
    }
    with tempfile.TemporaryDirectory(prefix="dra-guard-kustomize-") as temporary:
        base = os.path.realpath(temporary)
        target = os.path.relpath(os.path.realpath(folder), base)
        wrapper = os.path.join(base, "kustomization.yaml")
        with open(wrapper, "w", encoding="utf-8") as handle:
            handle.write(f"resources:\n- {json.dumps(target)}\nbuildMetadata: [originAnnotations]\n")

        def build(target: str) -> subprocess.CompletedProcess[bytes]:
            return subprocess.run(
                [*command, target],
                capture_output=True,
                timeout=timeout,
                check=False,
                stdin=subprocess.DEVNULL,
                cwd=base,
                env=environment,
            )

        result = build(base)
        if result.returncode == 0:
            return Rendered(result.stdout, base)
        # What the user sees: kustomize's message for the folder itself, not for the wrapper.
        # By its real path: the run's working folder is the temporary one.
        direct = build(os.path.realpath(folder))
        stderr = direct.stderr if direct.returncode != 0 else result.stderr
        return RenderError(_message(stderr.decode("utf-8", "replace"), direct.returncode or result.returncode))


_KUBECTL_ERROR = re.compile(r'err="((?:[^"\\]|\\.)*)"\s*$')


def _message(stderr: str, status: int) -> str:
    """kustomize's error: `Error: ...` (kustomize) or `... err="..."` (kubectl's klog line)."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    if not lines:
        return f"exit status {status}"
    if lines[-1] == ">":
        # klog writes a value with line breaks as `err=<`, its lines indented, then ` >`.
        opened = max((index for index, line in enumerate(lines) if line.endswith("err=<")), default=None)
        if opened is not None:
            return " ".join(lines[opened + 1 : -1]).removeprefix("Error: ")
    last = lines[-1]
    match = _KUBECTL_ERROR.search(last)
    if match:
        try:
            return str(json.loads(f'"{match.group(1)}"'))
        except ValueError:
            return match.group(1)
    return last.removeprefix("Error: ")


def origin(obj: Mapping[str, Any], base: str) -> str | None:
    """The real path of the file a rendered object came from (its origin annotation)."""
    annotation = mapping(mapping(obj.get("metadata")).get("annotations")).get(ORIGIN_ANNOTATION)
    if not isinstance(annotation, str):
        return None
    try:
        documents = read_embedded_documents(annotation)
    except Unreadable:
        return None
    value = mapping(documents[0]) if documents else {}
    path = value.get("path") or value.get("configuredIn")
    return os.path.normpath(os.path.join(base, path)) if isinstance(path, str) else None


def without_origin(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as kustomize renders it for the user: without the origin annotation."""
    metadata = obj.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if isinstance(annotations, dict) and ORIGIN_ANNOTATION in annotations:
        del annotations[ORIGIN_ANNOTATION]
        if not annotations:
            del metadata["annotations"]  # type: ignore[union-attr]
    return obj
