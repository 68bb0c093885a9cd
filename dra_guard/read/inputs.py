"""The documents of one check: what `dra_guard.read.walk` selected, read by `dra_guard.read.loader`.

* A file a walk found is checked only if it is a Kubernetes manifest.  It is one when
  one of its documents has an `apiVersion` or a `kind` key (in any letter case, so
  that `apiversion: v1` stays the input error kubectl would make of it); a file none of
  whose documents has either (Chart.yaml, values.yaml, package.json, CI workflows,
  docker-compose files, `.dra-guard.yaml`, cdk8s's `construct-metadata.json`) is
  skipped and counted, and so is one no parser can read whose every top-level
  `apiVersion:` line names a tool's configuration (a krew-release-bot template).  Half a
  manifest stays an input error.
* A file named on the command line, and stdin, are always checked.
* A Helm chart is rendered with `helm template` when `helm` is on PATH (values from the
  chart, nothing fetched) and the output checked, each object attributed to the
  template named by its `# Source:` comment; without helm, or when rendering fails,
  the chart is listed as not checked.  The other files a walk finds in a chart's folder
  are read as files (a CRD of `crds/` is not read again from the render), but for those
  holding `{{`, which the chart reads with `.Files.Get` or `tpl`: skipped and counted.
* A symlinked folder a walk did not follow is listed as not checked (see `dra_guard.read.walk`).
* An object with neither `metadata.name` nor `metadata.generateName` is an input error
  (kubectl refuses it: "resource name may not be empty"); it is still checked.
* A file that fails to load and contains `{{` gets a hint to render it first.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Protocol

from dra_guard.contract.findings import InputError, Unchecked
from dra_guard.kubectl_yaml.objects import says_no_object
from dra_guard.read.files import Opened, open_input, read_input, standard_input
from dra_guard.read.loader import STDIN_NAME, Document, display_name, iter_blocks, iter_bytes
from dra_guard.read.walk import KUSTOMIZATION_FILE_NAMES, LINK_NOT_FOLLOWED, STDIN, Selection
from dra_guard.ruleapi.config import MAX_FILE_BYTES

#: How long one `helm template` may take.
HELM_TIMEOUT_SECONDS = 120
_HELM_SOURCE = re.compile(r"^# Source: (.*?)\s*$")
_MANIFEST_KEYS = frozenset({"apiversion", "kind"})
# Bytes that let a key's text differ from its value: escapes, binary and verbatim tags, %TAG.
_KEY_DISGUISES = (b"\\", b"!!binary", b"tag:yaml.org,2002:binary", b"!<", b"%tag")
#: Configuration files of Kubernetes' own components and of cluster tools, which hold
#: apiVersion and kind but are never sent to an API server (kubectl refuses them: no name,
#: or no such resource): the scheduler's, kubelet's, kube-proxy's, the API server's
#: admission, encryption and audit configuration, kubeadm's, kind's, k3d's, ctlptl's and
#: Skaffold's; and the configuration files operators read (controller-runtime's
#: ControllerManagerConfig, Kubeflow's trainer Configuration and KatibConfig, which their
#: kustomizations turn into ConfigMaps with a configMapGenerator, dra-guard reading those
#: ConfigMaps as such; JobSet's and Kueue's `Configuration` likewise: kubernetes-sigs/jobset
#: config/components/manager/kustomization.yaml @ 08dfbdfd and kubernetes-sigs/kueue
#: config/components/manager/kustomization.yaml @ ff69552e generate `manager-config` from
#: them, and no API server serves their groups), operator-sdk's scorecard configuration
#: (written with a lowercase `apiversion`), krew's plugin manifests and istioctl's
#: IstioOperator input (Istio removed the in-cluster operator that read it in 1.24). A walk
#: that finds a file holding only these skips it, as a file that is no manifest (listed,
#: never silently). A scheduler configuration that scores `nvidia.com/gpu` asks for no device.
TOOL_CONFIGURATION_API_PREFIXES = (
    "kubescheduler.config.k8s.io/",
    "kubelet.config.k8s.io/",
    "kubeproxy.config.k8s.io/",
    "controllermanager.config.k8s.io/",
    "apiserver.config.k8s.io/",
    "apiserver.k8s.io/",
    "audit.k8s.io/",
    "pod-security.admission.config.k8s.io/",
    "eventratelimit.admission.k8s.io/",
    "kubeadm.k8s.io/",
    "kind.x-k8s.io/",
    "k3d.io/",
    "ctlptl.dev/",
    "skaffold/",
    "controller-runtime.sigs.k8s.io/",
    "config.trainer.kubeflow.org/",
    "config.kubeflow.org/",
    "config.jobset.x-k8s.io/",
    "config.kueue.x-k8s.io/",
    "scorecard.operatorframework.io/",
    "krew.googlecontainertools.github.com/",
    "install.istio.io/",
)
#: Reports tools write, in an API group the API server may serve but of a kind it never
#: does: Gateway API's conformance reports, `gateway.networking.k8s.io/v1` (formerly
#: `v1alpha1`) `ConformanceReport`, which its conformance suite writes and implementations
#: keep in their trees (kubernetes-sigs/gateway-api conformance/apis/v1/conformancereport.go
#: and conformance/utils/suite/suite.go @ 4564255a; no CRD of config/crd serves the kind).
TOOL_REPORT_KINDS = (("gateway.networking.k8s.io/", "ConformanceReport"),)


def is_tool_configuration(document: Any) -> bool:
    """Whether `document` is a component's or a tool's configuration (see above), a tool's
    report (`TOOL_REPORT_KINDS`), a kubeconfig (`apiVersion: v1`, `kind: Config`, a kind the
    core API does not have), or a Helm chart repository's index (`apiVersion: v1` and an `entries` mapping of charts, no
    kind), which `helm repo index` writes and chart repositories served from a project's own
    tree keep there (aws/karpenter-provider-aws charts/index.yaml @ 1d927085,
    substratusai/kubeai docs/index.yaml @ 2f32ef49): kubectl refuses it (no kind), and no
    walk should fail on it."""
    if not isinstance(document, dict):
        return False
    # In another case only where `apiVersion` itself is absent: operator-sdk writes
    # `apiversion` in every scorecard configuration, and a manifest may not hide behind a
    # second, tool-like `apiversion` beside its own (the API server drops the unknown key).
    api_version = document.get("apiVersion")
    if "apiVersion" not in document:
        api_version = next((value for key, value in document.items() if str(key).lower() == "apiversion"), None)
    if not isinstance(api_version, str):
        return False
    if api_version == "v1":
        if "kind" not in document and isinstance(document.get("entries"), dict):
            return True
        return document.get("kind") == "Config"
    kind = document.get("kind")
    if any(api_version.startswith(group) and kind == report for group, report in TOOL_REPORT_KINDS):
        return True
    return api_version.startswith(TOOL_CONFIGURATION_API_PREFIXES)


def render_hint(chart: str = "…") -> str:
    return f"render it with `helm template {chart} | dra-guard check -`"


def _text(data: bytes) -> bytes:
    """The bytes to search for key names: UTF-16 files decoded, everything lower-cased."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        with contextlib.suppress(UnicodeDecodeError):
            data = data.decode("utf-16").encode("utf-8")
    return data.lower()


def is_manifest(data: bytes) -> bool:
    """Whether one of the file's documents has an apiVersion or kind key (any case).

    A file whose text spells neither name, and holds nothing that could disguise a key
    (an escape, a binary or verbatim tag), has no such key: that answer costs one
    search.  Otherwise the file is parsed; one that cannot be parsed counts as a
    manifest, so its errors are reported rather than hidden, unless every top-level
    `apiVersion:` line of its text names a tool's configuration (`_only_tool_api_versions`).
    """
    text = _text(data)
    if b"kind" not in text and b"apiversion" not in text and not any(mark in text for mark in _KEY_DISGUISES):
        return False
    import yaml

    try:
        documents = list(yaml.safe_load_all(data))
    except (yaml.YAMLError, RecursionError, ValueError):
        return not _only_tool_api_versions(text)
    return any(_has_manifest_key(document) and not is_tool_configuration(document) for document in documents)


#: A top-level `apiVersion:` line (any letter case, as the text is lowered) and its value.
_TOP_LEVEL_API_VERSION = re.compile(rb"""^apiversion:[ \t]*["']?([^\s"'#]*)""", re.MULTILINE)


def _only_tool_api_versions(text: bytes) -> bool:
    """Whether the lowered text of a file no parser can read declares, on every top-level
    `apiVersion:` line and on at least one, a tool's configuration group: a template of one,
    such as the `.krew.yaml` that krew-release-bot fills in with `{{ .TagName }}` to make a
    plugin manifest (ray-project/kuberay .krew.yaml @ feeaf72f).  kubectl can read it no more
    than dra-guard can, and rendered it is still a tool's input, never an object to check.
    A line any other way (a placeholder, a group of the API server's) keeps the file a
    manifest, its errors reported."""
    versions = _TOP_LEVEL_API_VERSION.findall(text)
    return bool(versions) and all(
        version.decode("utf-8", "replace").startswith(TOOL_CONFIGURATION_API_PREFIXES) for version in versions
    )


def _has_manifest_key(document: Any) -> bool:
    if not isinstance(document, dict):
        return False
    for key in document:
        name = key.decode("utf-8", "replace") if isinstance(key, bytes) else key
        if isinstance(name, str) and name.lower() in _MANIFEST_KEYS:
            return True
    return False


@dataclass
class RenderedDocument:
    """An object from `helm template`, attributed to the template that made it.

    Its lines are lines of the rendered output, not of the template, so it has none.
    """

    file: str
    index: int
    obj: Any
    text: str | None = field(default=None, repr=False)
    span: tuple[int, int] = field(default=(0, 0), repr=False)
    line: int | None = None
    #: A chart's objects come from a folder, never from a file the user named.
    walked: bool = field(default=True, repr=False)

    def line_of(self, path: Sequence[str | int]) -> int | None:
        return None


@dataclass
class KustomizedDocument:
    """An object `kubectl kustomize` rendered, attributed to the file it came from.

    `source`, the document of that file the object was made from (when one document of
    its kind and name is there), gives the lines: the deepest node of a finding's path
    that the file spells, else the document's first line.  An object a generator made
    is attributed to the kustomization that configured it, without a line.
    """

    file: str
    index: int
    obj: Any
    source: Document | None = field(default=None, repr=False)
    text: str | None = field(default=None, repr=False)
    span: tuple[int, int] = field(default=(0, 0), repr=False)
    #: Rendered from a folder: a ResourceSlice in it describes no cluster.
    walked: bool = field(default=True, repr=False)

    @property
    def line(self) -> int | None:
        return self.source.line if self.source is not None else None

    def line_of(self, path: Sequence[str | int]) -> int | None:
        if self.source is None:
            return None
        return self.source.line_of(_spelled_prefix(self.source.obj, path))


def _spelled_prefix(obj: Any, path: Sequence[str | int]) -> tuple[str | int, ...]:
    """The longest beginning of `path` that exists in `obj`."""
    prefix: list[str | int] = []
    node = obj
    for step in path:
        in_mapping = isinstance(node, dict) and step in node
        in_list = isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node)
        if not (in_mapping or in_list):
            break
        node = node[step]
        prefix.append(step)
    return tuple(prefix)


def _partly(folder: str, reason: str) -> Unchecked:
    return Unchecked(folder, reason, "kustomization", "rendered partially")


def _link(folder: str) -> Unchecked:
    return Unchecked(folder, f"{LINK_NOT_FOLLOWED}: name it to check it", "symlinked folder")


def unread_index(path: str, why: str) -> Unchecked:
    """A git index the walk could not read: files it tracks that a `.gitignore` names may have
    been left out, since git's rule (a tracked file is never ignored) could not be applied."""
    return Unchecked(
        path,
        f"cannot be read ({why}): files it tracks that a .gitignore names were left out; name them to check them",
        "git index",
        "not read",
    )


def kustomize_hint(folder: str) -> str:
    return f"render it with `kubectl kustomize {folder} | dra-guard check -`"


#: The kinds of `Unit`.
FILE, RENDERED, CHART = "file", "rendered", "chart"


@dataclass(frozen=True)
class Unit:
    """One part of a check's input: a file (or stdin), what kustomizations rendered, or a
    Helm chart.  Parts are checked in `position` order; a file may be read anywhere (by
    another process: `dra_guard.distribute`), the others only where they were made."""

    position: int
    kind: str
    #: The file's path (`-` for stdin), or the chart's folder.
    path: str
    #: A file a walk or glob found (see `file_items`).
    found: bool = False
    #: Found in a Helm chart's folder, outside what helm renders (see `file_items`).
    in_chart: bool = False
    #: What the kustomizations rendered (RENDERED only).
    rendered: Sequence[Any] = field(default=(), repr=False, compare=False)


class Inputs:
    """The selection as a stream of documents and errors, with what was not checked.

    `skipped` (files a walk found that are no manifests), `unchecked` (symlinked folders a
    walk did not follow, charts, and kustomizations rendered partially) and `files` (files
    checked) are complete once the stream is exhausted.
    """

    def __init__(
        self,
        selection: Selection,
        stdin: BinaryIO | None = None,
        helm: str | None = None,
        kustomize: Sequence[str] | None = None,
        max_bytes: int = MAX_FILE_BYTES.default,
    ) -> None:
        self._selection = selection
        self._stdin = stdin
        #: The most bytes read from one input (`max-file-bytes`).
        self._max_bytes = max_bytes
        #: The helm executable; None looks it up on PATH, "" means there is none.
        self._helm = helm
        #: The command that renders a kustomization folder (`kubectl kustomize`); None
        #: looks it up on PATH, () means there is none.
        self._kustomize = kustomize
        self.skipped: list[str] = []
        self._in_charts: frozenset[str] | None = None
        self.unchecked: list[Unchecked] = [_link(folder) for folder in selection.links]
        self.unchecked += [unread_index(path, why) for path, why in selection.unread_indexes]
        self.files = 0

    @property
    def max_bytes(self) -> int:
        """The most bytes read from one input (`max-file-bytes`)."""
        return self._max_bytes

    def __iter__(self) -> Iterator[Any]:
        yield from self.errors
        for unit in self.units():
            yield from self.items(unit)

    @property
    def errors(self) -> list[InputError]:
        """What the walk could not select (unreadable folders, globs matching nothing)."""
        return self._selection.errors

    def units(self) -> list[Unit]:
        """The parts of the input, in the order their documents are checked: each file (a
        kustomization's files rendered with it, not on their own), then what the
        kustomizations rendered, then each Helm chart.  Kustomizations are rendered now."""
        consumed: set[str] = set()
        rendered: list[Any] = []
        if any(_is_kustomization(candidate.path) for candidate in self._selection.files):
            rendered = list(self._kustomizations(consumed))
        units: list[Unit] = []
        for candidate in self._selection.files:
            if consumed and candidate.path != STDIN and os.path.realpath(candidate.path) in consumed:
                continue  # checked as the kustomization that reads it renders it
            units.append(Unit(len(units), FILE, candidate.path, candidate.found, candidate.in_chart))
        if rendered:
            units.append(Unit(len(units), RENDERED, "", rendered=rendered))
        units.extend(Unit(len(units), CHART, chart) for chart in self._selection.charts)
        return units

    def items(self, unit: Unit) -> Iterator[Any]:
        """The documents and errors of one part of `units()`, counting what it checked."""
        if unit.kind == RENDERED:
            yield from unit.rendered
        elif unit.kind == CHART:
            yield from self._chart(unit.path)
        else:
            stdin = (self._stdin or standard_input()) if unit.path == STDIN else None
            yield from file_items(unit.path, unit.found, self._max_bytes, self, stdin, in_chart=unit.in_chart)

    def _kustomizations(self, consumed: set[str]) -> Iterator[Any]:
        """Each kustomization of the selection that no other one builds on, rendered:
        its objects, and the files it read added to `consumed` (they are checked as it
        renders them, not on their own).  One that cannot be rendered leaves its files to
        be read as they are (its patches read as patches): rendered partially."""
        from dra_guard.read import kustomize

        folders = list(
            dict.fromkeys(
                os.path.dirname(candidate.path) or os.curdir
                for candidate in self._selection.files
                if _is_kustomization(candidate.path)
            )
        )
        trees: dict[str, kustomize.Tree] = {}
        chosen, closures = kustomize.roots(folders, trees)
        command = kustomize.renderer() if self._kustomize is None else list(self._kustomize)
        origins: set[str] = set()
        for folder in chosen:
            reach = closures[folder]
            partly = "its files and the patches it names were checked as written"
            if reach.remote is not None:
                why = f"it names the remote {reach.remote}, and dra-guard fetches nothing"
                self.unchecked.append(_partly(folder, f"{why}; {partly}; {kustomize_hint(folder)}"))
                continue
            if reach.helm:
                why = "it inflates Helm charts, which needs `kustomize build --enable-helm` (and may download them)"
                self.unchecked.append(_partly(folder, f"{why}; {partly}; {kustomize_hint(folder)}"))
                continue
            if not command:
                why = "neither kubectl nor kustomize is on PATH"
                self.unchecked.append(_partly(folder, f"{why}; {partly}; {kustomize_hint(folder)}"))
                continue
            import subprocess

            try:
                result = kustomize.render(folder, command)
            except (OSError, subprocess.TimeoutExpired) as error:
                why = f"{' '.join(command[1:])} failed ({error})"
                self.unchecked.append(_partly(folder, f"{why}; {partly}; {kustomize_hint(folder)}"))
                continue
            file = trees[os.path.realpath(folder)].file or folder
            if isinstance(result, kustomize.RenderError):
                yield InputError(
                    display_name(file),
                    None,
                    f"kustomize cannot render {folder}: {result.message}; {partly} (rendered partially)",
                )
                continue
            consumed |= reach.files
            yield from self._rendered(folder, result, origins)
        self.files += len(origins)

    def _rendered(self, folder: str, rendered: Any, origins: set[str]) -> Iterator[Any]:
        from dra_guard.read.kustomize import origin, without_origin

        name = f"{folder} (rendered by kustomize)"
        sources: dict[str, list[Document]] = {}
        real_folder = os.path.realpath(folder)
        for item in iter_bytes(rendered.output, name):
            if isinstance(item, InputError):
                yield InputError(display_name(folder), None, f"rendered by kustomize: {item.message}")
                continue
            obj = item.obj
            came_from = origin(obj, rendered.base) if isinstance(obj, dict) else None
            if isinstance(obj, dict):
                without_origin(obj)
            if came_from is None:
                yield KustomizedDocument(display_name(folder), item.index, obj)
                continue
            origins.add(came_from)
            file = display_name(_spelled(folder, real_folder, came_from))
            if came_from not in sources:
                sources[came_from] = _documents_of(came_from)
            source = _source_document(sources[came_from], obj)
            index = source.index if source is not None else item.index
            yield KustomizedDocument(file, index, obj, source, item.text, item.span)

    def _chart_files(self) -> frozenset[str]:
        """The real paths of the files selected in charts' folders (their `crds/` among
        them), worked out the first time a chart is rendered."""
        if self._in_charts is None:
            self._in_charts = frozenset(
                os.path.realpath(candidate.path) for candidate in self._selection.files if candidate.in_chart
            )
        return self._in_charts

    def _chart(self, chart: str) -> Iterator[Any]:
        import shutil  # only charts need these: they stay out of the CLI's start-up
        import subprocess

        helm = shutil.which("helm") if self._helm is None else self._helm
        if not helm:
            self.unchecked.append(Unchecked(chart, f"helm is not on PATH; {render_hint(chart)}"))
            return
        try:
            rendered = subprocess.run(
                [helm, "template", chart, "--include-crds"],
                capture_output=True,
                timeout=HELM_TIMEOUT_SECONDS,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            self.unchecked.append(Unchecked(chart, f"helm template failed ({error}); {render_hint(chart)}"))
            return
        if rendered.returncode != 0:
            lines = rendered.stderr.decode("utf-8", "replace").strip().splitlines()
            why = lines[-1] if lines else f"exit status {rendered.returncode}"
            self.unchecked.append(Unchecked(chart, f"helm template failed: {why}"))
            return
        self.files += 1
        for source, text in _sources(rendered.stdout.decode("utf-8", "replace")):
            template = _template_path(chart, source)
            if os.path.realpath(template) in self._chart_files():
                continue  # a CRD of crds/, printed as it is: read as the file it is
            for item in iter_bytes(text.encode("utf-8"), template):
                if isinstance(item, InputError):
                    yield InputError(template, None, f"rendered by helm: {item.message}")
                else:
                    yield RenderedDocument(template, item.index, item.obj, item.text, item.span)


class Tally(Protocol):
    """What reading counts: files checked, and files a walk found that are no manifests."""

    files: int
    skipped: list[str]


def file_items(
    path: str, found: bool, max_bytes: int, tally: Tally, stdin: BinaryIO | None = None, *, in_chart: bool = False
) -> Iterator[Any]:
    """The documents and errors of one file (of `stdin` for the path `-`), as `check` reads
    it: a file a walk `found` only once one of its objects has apiVersion or kind, else
    skipped (see the module's doc).  A large file is read a piece at a time (`open_input`).

    A file found `in_chart` (in a Helm chart's folder, outside what helm renders) that
    holds `{{` is skipped too: a file the chart reads with `.Files.Get` or `tpl` (kubeflow/trainer
    keeps its runtimes so: charts/kubeflow-trainer/files/runtimes/torch-distributed.yaml @
    36155d2a), which helm renders, if at all, only through the template that reads it."""
    opened = open_input(path, max_bytes, stdin)
    name = STDIN_NAME if path == STDIN else display_name(path)
    if isinstance(opened, str):
        tally.files += 1
        yield InputError(name, None, opened)
        return
    try:
        if found and in_chart and opened.contains(b"{{"):
            tally.skipped.append(path)
        elif opened.data is not None:
            if found:
                yield from _found(path, opened.data, tally)
            else:
                tally.files += 1
                yield from read_file(opened.data, name)
        elif found:
            yield from _found_in_pieces(path, opened, tally)
        else:
            tally.files += 1
            yield from _in_pieces(opened, name)
    finally:
        opened.close()


def _in_pieces(opened: Opened, name: str, *, walked: bool = False) -> Iterator[Any]:
    """`read_file` of a large input, a piece at a time; the `{{` hint asks the whole input."""
    for item in iter_blocks(opened.blocks(), name):
        if isinstance(item, InputError) and opened.contains(b"{{"):
            yield InputError(item.file, item.line, f"{item.message}; it looks like a Helm template: {render_hint()}")
            continue
        if walked and isinstance(item, Document):
            item.walked = True
        yield item
        if isinstance(item, Document):
            yield from _nameless(item)
    if opened.problem is not None:
        yield InputError(name, None, opened.problem)


def _found_in_pieces(path: str, opened: Opened, tally: Tally) -> Iterator[Any]:
    """`_found` of a large file: read once up to its first object with apiVersion or kind,
    then again from the start for its items (nothing held meanwhile); a file without one is
    read whole, as `_found` reads it."""
    for item in iter_blocks(opened.blocks(), path):
        if (
            isinstance(item, Document)
            and isinstance(item.obj, dict)
            and _has_manifest_key(item.obj)
            and not is_tool_configuration(item.obj)
        ):
            tally.files += 1
            yield from _in_pieces(opened, path, walked=True)
            return
    yield from _found(path, opened.read_all(), tally)


def _found(path: str, data: bytes, tally: Tally) -> Iterator[Any]:
    """A file a walk found: its items once one of its objects has apiVersion or kind.

    Until then items are held back (errors, or objects that are no manifest); if none
    comes, the file's text decides whether it is a manifest with errors or no manifest.
    """
    held: list[Any] = []
    streaming = False
    for item in read_file(data, path):
        if isinstance(item, Document):
            item.walked = True
        if streaming:
            yield item
        elif (
            isinstance(item, Document)
            and isinstance(item.obj, dict)
            and _has_manifest_key(item.obj)
            and not is_tool_configuration(item.obj)
        ):
            streaming = True
            tally.files += 1
            yield from held
            held.clear()
            yield item
        else:
            held.append(item)
    if streaming:
        return
    # Every document parsed, and none is an object (a GitLab CI file, an OCI runtime config):
    # no manifest, whatever tags or escapes a parse with PyYAML would trip on.
    parsed_no_object = all(
        isinstance(item, Document) or (isinstance(item, InputError) and says_no_object(item.message)) for item in held
    )
    if not parsed_no_object and is_manifest(data):
        tally.files += 1
        yield from held
    else:
        tally.skipped.append(path)


def _is_kustomization(path: str) -> bool:
    return path != STDIN and os.path.basename(path) in KUSTOMIZATION_FILE_NAMES


def _spelled(folder: str, real_folder: str, path: str) -> str:
    """`path` (real) spelt from `folder` as the user spelt it."""
    inside = os.path.relpath(path, real_folder)
    if inside.startswith(os.pardir):
        joined = os.path.normpath(os.path.join(folder, inside))
        return (
            joined
            if os.path.isabs(joined) or joined.startswith(os.pardir) or not folder.startswith("./")
            else "./" + joined
        )
    return os.path.join(folder, inside)


def _documents_of(path: str) -> list[Document]:
    data = read_input(path, MAX_FILE_BYTES.default)
    if isinstance(data, str):
        return []
    return [item for item in iter_bytes(data, path) if isinstance(item, Document)]


def _source_document(documents: list[Document], obj: Any) -> Document | None:
    """The document of its file a rendered object was made from: the one of its kind,
    or the one of its kind whose name the rendered name holds (namePrefix, nameSuffix)."""
    if not isinstance(obj, dict):
        return None
    name = _name(obj)
    kind = [
        document
        for document in documents
        if isinstance(document.obj, dict) and document.obj.get("kind") == obj.get("kind")
    ]
    if len(kind) == 1:
        return kind[0]
    named = [document for document in kind if _name(document.obj) and _name(document.obj) in name]
    exact = [document for document in named if _name(document.obj) == name]
    found = exact or named
    return found[0] if len(found) == 1 else None


def _name(obj: Any) -> str:
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""


def _nameless(document: Document) -> Iterator[InputError]:
    """An error for each object of the document that has no name and no generateName."""
    obj = document.obj
    if not isinstance(obj, dict) or not _has_manifest_key(obj) or _kustomize_kind(obj):
        return
    items = obj.get("items")
    objects: list[tuple[tuple[str | int, ...], dict[str, Any]]]
    if isinstance(items, list):  # a List: its items are the objects (the List needs no name)
        objects = [(("items", index), item) for index, item in enumerate(items) if isinstance(item, dict)]
    else:
        objects = [((), obj)]
    for path, item in objects:
        metadata = item.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        if not metadata.get("name") and not metadata.get("generateName"):
            line = document.line_of(path) if path else document.line
            where = f"document {document.index}" + (f" item {path[1]}" if path else "")
            yield InputError(
                document.file, line, f"{where} has no metadata.name and no metadata.generateName (kubectl refuses it)"
            )


def _kustomize_kind(obj: dict[str, Any]) -> bool:
    """Kustomizations and Components are built by kustomize, never sent: they need no name."""
    api_version = obj.get("apiVersion")
    return isinstance(api_version, str) and api_version.startswith("kustomize.config.k8s.io/")


def read_file(data: bytes, name: str) -> Iterator[Any]:
    """One file's documents and errors, as `check` reads every file (`dra-guard migrate` too)."""
    return _with_hint(iter_bytes(data, name), data)


def _with_hint(items: Iterator[Any], data: bytes) -> Iterator[Any]:
    """A load error in a file with `{{ ... }}` in it says how to render it first."""
    templated = b"{{" in data
    for item in items:
        if templated and isinstance(item, InputError):
            yield InputError(item.file, item.line, f"{item.message}; it looks like a Helm template: {render_hint()}")
        else:
            yield item
            if isinstance(item, Document):
                yield from _nameless(item)


def _sources(output: str) -> Iterator[tuple[str, str]]:
    """(template, rendered text) for each `# Source:` section of `helm template` output."""
    source: str | None = None
    lines: list[str] = []
    for line in [*output.splitlines(keepends=True), "# Source: "]:
        match = _HELM_SOURCE.match(line)
        if match:
            while lines and lines[-1].strip() == "---":  # the separator before the next section
                lines.pop()
            if source is not None:
                yield source, "".join(lines)
            source, lines = match.group(1), []
        elif source is not None:
            lines.append(line)


def _template_path(chart: str, source: str) -> str:
    """`# Source: <chart name>/templates/x.yaml` -> `<chart folder>/templates/x.yaml`."""
    _, _, inside = source.partition("/")
    return os.path.join(chart, *inside.split("/")) if inside else chart


def read_besides(selection: Selection, path: str) -> str | None:
    """What the check of `selection` reads at `path` though no walk selected it, said as
    "it is ..." ends (None: nothing): a file a selected kustomization reads, through its
    bases (kustomize renders it), or a file inside a Helm chart (helm renders the chart).
    Writing the report or the facts there would replace what the check reads."""
    from dra_guard.read import kustomize

    if not os.path.exists(path):
        return None
    real = os.path.realpath(path)
    for chart in selection.charts:
        folder = os.path.realpath(chart)
        if real.startswith(folder.rstrip(os.sep) + os.sep):
            return f"inside the Helm chart {chart}, which is rendered"
    trees: dict[str, kustomize.Tree] = {}
    for candidate in selection.files:
        if _is_kustomization(candidate.path):
            folder = os.path.dirname(candidate.path) or os.curdir
            if real in kustomize.closure(folder, trees).files:
                return f"a file the kustomization {candidate.path} reads"
    return None
