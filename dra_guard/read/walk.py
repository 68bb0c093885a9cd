"""Which files `dra-guard check` reads: paths named on the command line, directory walks, globs.

A walk (a directory, or a glob) finds *candidates*: `.yaml`, `.yml` and `.json` files
and kustomize's `Kustomization` (any file a glob matches), never descending into hidden folders, `node_modules`,
`__pycache__` or `site-packages`, nor into what an exclude pattern or a `.gitignore`
names.  A folder with a `Chart.yaml` is a Helm chart: its templates are not manifests,
so the walk hands over the chart as a whole (see `dra_guard.read.inputs`), and walks the
rest of its folder, which helm never renders as objects (`CHART_OWN_FILES`), for the files
kept there (`Candidate.in_chart`).  Whether a
candidate is a Kubernetes manifest is decided when it is read: a file a walk found that
is none is skipped, a file named on the command line is always checked.

A walk does not follow a symlinked folder (as `kubectl apply -R` and git do not: it could
lead out of the project, or round a loop); it names it in `Selection.links`, reported as
not checked, unless the walk would have skipped a real folder there or the link leads into
a folder the check walks (its files are checked where they are).  A folder named on the
command line is walked, link or not.  In a glob, `**` is such a walk: it matches zero or
more folders, never a hidden one, one a walk skips, nor a symlinked one (which Python's
glob follows, with no loop check, before 3.13), and names a link unless the pattern
matches as much below where it leads; otherwise it matches as glob does.  A folder a glob
cannot read is an input error, never a silent hole (glob.glob says nothing).  Excludes and
`.gitignore` still do not apply to a glob.

As in git, `.gitignore` applies to untracked files only: a file in the repository's index
is walked whatever the patterns say, and so is an ignored folder that holds one, for the
tracked files in it (`dra_guard.read.git_index` reads the index, once a repository).

Exclude patterns and `.gitignore` files use git's pattern syntax, matched by `pathspec`
(a well-kept implementation of it): a pattern without a slash matches a name at any
depth (`charts`, `*.generated.yaml`), one with a slash matches from its base directory
(`deploy/legacy/`); excludes from the configuration are relative to the configuration
file's directory, `--exclude` patterns to the working directory.  `.gitignore` files
count only inside a git repository, as in git: those from the repository root down to
each file, and the repository's `info/exclude` (a worktree's is in the common git folder).
"""

from __future__ import annotations

import errno
import fnmatch
import glob
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from dra_guard.contract.findings import InputError
from dra_guard.read.files import Refused, read_regular

if TYPE_CHECKING:  # pathspec is imported only when a walk meets a pattern, the index when it is needed
    from pathspec import GitIgnoreSpec

    from dra_guard.read.git_index import Tracked

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
#: The names kustomize reads a kustomization from (kustomize `api/konfig/general.go`);
#: a walk takes `Kustomization`, which has no suffix, too.
KUSTOMIZATION_FILE_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__", "site-packages"})
CHART_FILE = "Chart.yaml"
#: What helm loads from a chart's own folder as the chart itself, not as files it carries
#: (helm/helm pkg/chart/v2/loader/load.go @ e9b85e4d): its metadata, its default values and
#: their schema, Helm 2's requirements; and `templates/`, which it renders.  Everything else
#: there (`crds/`, which `helm template --include-crds` prints as it is, and `files/`,
#: `examples/`, ... which a template may read as text with `.Files.Get`) is walked as files;
#: `Chart.lock` and `requirements.lock` have no manifest suffix, so no walk takes them.
CHART_OWN_FILES = frozenset({CHART_FILE, "values.yaml", "values.schema.json", "requirements.yaml"})
CHART_TEMPLATES = "templates"
#: The folder of a chart's sub-charts, which helm renders with it (load.go, as above).
SUBCHARTS = "charts"
STDIN = "-"


class Candidate(NamedTuple):
    path: str
    #: Found by a walk or a glob (or named while named files are treated as found ones):
    #: if it is not a Kubernetes manifest it is skipped and counted, not an error.
    found: bool
    #: Found in a Helm chart's folder, outside what helm renders (`CHART_OWN_FILES`): one
    #: holding `{{` is a file the chart reads with `.Files.Get` or `tpl`, skipped and counted.
    in_chart: bool = False


@dataclass
class Selection:
    """What a check reads, in a stable order."""

    files: list[Candidate] = field(default_factory=list)
    #: Helm chart folders: read as a whole, never file by file.
    charts: list[str] = field(default_factory=list)
    #: Symlinked folders a walk met and did not follow: reported as not checked.
    links: list[str] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    #: The report file (`-o`) was named as an input.
    output_named: bool = False
    #: The report file was found by a walk or glob (and left out of the inputs).
    output_found: bool = False
    #: Git indexes that could not be read while a `.gitignore` pattern left files out:
    #: (path, why), reported as not read (the files they track may have been left out).
    unread_indexes: list[tuple[str, str]] = field(default_factory=list)

    def file_sizes(self) -> Iterable[int]:
        """The size of each file selected (standard input's is not known), one at a time."""
        return (file_size(candidate.path) for candidate in self.files if candidate.path != STDIN)


def file_size(path: str) -> int:
    """Its size, or 0 where it cannot be read (reported when it is read, like any file)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


class Patterns(NamedTuple):
    """Exclude patterns and the directory they are relative to."""

    base: str
    patterns: tuple[str, ...]


def repository_root(start: str) -> str | None:
    """The nearest directory at or above `start` that holds `.git` (a folder or a worktree file)."""
    directory = os.path.abspath(start)
    while True:
        if os.path.exists(os.path.join(directory, ".git")):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _spec(lines: Iterable[str]) -> GitIgnoreSpec:
    """The exclude patterns of `lines`, matched by pathspec (`Ignores.matches_exclude`)."""
    from pathspec import GitIgnoreSpec

    return GitIgnoreSpec([pattern for line in lines for pattern in _compiled(line)])


def _compiled(line: str) -> list[Any]:
    """pathspec's pattern of one line; none for a line it cannot read (one ending in a lone
    backslash), which git leaves out too, instead of ending the walk in a traceback."""
    from pathspec import GitIgnoreSpec

    try:
        return list(GitIgnoreSpec.from_lines([line]).patterns)
    except ValueError:  # pathspec's GitIgnorePatternError
        return []


class _GitPattern(NamedTuple):
    """One .gitignore pattern, ready to match a path as git does (`_git_matches`)."""

    #: True: it ignores; False: it puts back (`!`).
    include: bool
    #: Searched in the path, or in the path without its folder's trailing slash (`inside`).
    regex: re.Pattern[str]
    #: It matches what is inside its folder, at any depth (`a/**`), not the path itself.
    inside: bool
    #: It matches folders only (`a/**/`).
    folders_only: bool


def _git_patterns(lines: Iterable[str]) -> tuple[_GitPattern, ...]:
    """The patterns of a .gitignore's lines, each worked out once.

    pathspec's regular expressions also match a path where a folder above it matches (git
    settles that one at that folder: `_Folder.ignored`), so `!a` put back every file below
    a folder named `a` that `*.yaml` ignores, and `!d/` everything below `d`; and `a/**`
    matches the folder `a` itself, though it matches only what is inside `a`, so `a/**`
    with `!a/keep.yaml` left `a/keep.yaml`, which git keeps, unchecked.  Each regular
    expression here therefore matches only where it can end at the path's end (pathspec
    leaves some unanchored: `*/` is `(?P<ps_d>/)`), except `a/**` and `a/**/`, which match
    what is inside, and a bare `*` (the regular expression `.`), which matches anything.
    Trailing spaces are no part of a pattern, as in git; patterns and paths are matched as
    their bytes (`_as_bytes`).
    """
    patterns: list[_GitPattern] = []
    for line in map(_as_bytes, lines):
        for pattern in _compiled(line):
            if pattern.include is None or pattern.regex is None:
                continue
            text = _TRAILING_SPACES.sub("", str(pattern.pattern)).removeprefix("!")
            regex: re.Pattern[str] = pattern.regex
            inside = text.endswith(("/**", "/**/"))
            if not inside and "ps_d" in regex.groupindex:
                regex = re.compile(f"(?:{regex.pattern})\\Z")
            patterns.append(_GitPattern(bool(pattern.include), regex, inside, text.endswith("/**/")))
    return tuple(patterns)


def _as_bytes(text: str) -> str:
    """`text` as its UTF-8 bytes, one character each: git matches patterns to paths byte by
    byte, so `?` and `[!a]` take one byte, never the two of `é` (pathspec, matching
    characters, took `?/` for the folder `é`, which git keeps).  Patterns and paths alike."""
    return text if text.isascii() else text.encode("utf-8", "surrogateescape").decode("latin-1")


def _relative(path: str, base: str) -> str | None:
    """`path` relative to `base` with forward slashes, or None when it lies outside."""
    relative = os.path.relpath(path, base)
    if relative in (os.curdir, os.pardir) or relative.startswith(os.pardir + os.sep):
        return None
    return relative.replace(os.sep, "/")


class Ignores:
    """Exclude patterns and `.gitignore` files: which paths a walk leaves out."""

    def __init__(self, excludes: Sequence[Patterns] = (), gitignore: bool = True) -> None:
        self._excludes = [(os.path.abspath(item.base), _spec(item.patterns)) for item in excludes if item.patterns]
        self._gitignore = gitignore
        #: Per directory: the patterns of its .gitignore (none: no .gitignore there).
        self._specs: dict[str, tuple[_GitPattern, ...]] = {}
        #: Per directory: the repository root above it (None: not in a repository).
        self._roots: dict[str, str | None] = {}
        #: Per (directory, its repository root): what its .gitignore files say (`_folder`).
        self._folders: dict[tuple[str, str], _Folder] = {}
        #: Per repository root: what its index tracks (None: the index cannot be read).
        self._tracked: dict[str, Tracked | None] = {}
        #: The indexes that could not be read when a `.gitignore` pattern matched, and why:
        #: what they track and the patterns name was left out, so the report says so.
        self.unread_indexes: dict[str, str] = {}

    def excluded(self, path: str, is_dir: bool = False) -> bool:
        """Named by an exclude pattern, or ignored by git."""
        return self.matches_exclude(path, is_dir) or (self._gitignore and self._git_ignored(path, is_dir))

    def matches_exclude(self, path: str, is_dir: bool = False) -> bool:
        if not self._excludes:
            return False
        absolute = os.path.abspath(path)
        suffix = "/" if is_dir else ""
        for base, spec in self._excludes:
            relative = _relative(absolute, base)
            if relative is not None and spec.match_file(relative + suffix):
                return True
        return False

    def _repository_of(self, directory: str) -> str | None:
        """`repository_root(directory)` of an absolute path, remembered for every folder
        passed on the way up: each folder is looked at once, however deep the walk."""
        passed = []
        while directory not in self._roots:
            if os.path.exists(os.path.join(directory, ".git")):
                self._roots[directory] = directory
                break
            passed.append(directory)
            parent = os.path.dirname(directory)
            if parent == directory:
                self._roots[directory] = None
                break
            directory = parent
        root = self._roots[directory]
        for each in passed:
            self._roots[each] = root
        return root

    def _ignore_spec(self, directory: str, root: str) -> tuple[_GitPattern, ...]:
        if directory not in self._specs:
            lines: list[str] = []
            sources = [os.path.join(directory, ".gitignore")]
            if directory == root:
                # Before the root's .gitignore: in one spec the later match wins, and git
                # lets a .gitignore's pattern (`!keep.yaml`) win over info/exclude's.
                from dra_guard.read.git_index import exclude_file

                sources.insert(0, exclude_file(root))
            for source in sources:
                try:
                    # Opened as inputs are: a FIFO named .gitignore would block the walk for
                    # good. One that is no regular file, or past the cap, ignores nothing.
                    text = read_regular(source, _MAX_IGNORE_FILE_BYTES).decode("utf-8", errors="replace")
                except (OSError, ValueError, Refused):
                    continue
                lines.extend(text.splitlines())
            self._specs[directory] = _git_patterns(lines)
        return self._specs[directory]

    def _git_ignored(self, path: str, is_dir: bool) -> bool:
        absolute = os.path.abspath(path)
        parent = os.path.dirname(absolute)
        root = self._repository_of(parent)
        if root is None or _relative(absolute, root) is None:
            return False
        # git never descends into an ignored folder, so an ancestor being ignored settles it;
        # otherwise the deepest .gitignore with a matching pattern decides (`!` re-includes).
        folder = self._folder(parent, root)
        if not (folder.ignored or _decides(folder.specs, absolute, is_dir)):
            return False
        # Ignore rules are for untracked files: a tracked file is checked, and a folder
        # with tracked files in it (`git add -f`) is walked for them.
        return not self._holds_tracked(root, absolute, is_dir)

    def _holds_tracked(self, root: str, absolute: str, is_dir: bool) -> bool:
        """Whether git tracks `absolute` (or, a folder, a file in it): its index is read the
        first time a path of the repository is ignored, and only then (`git_index`)."""
        if root not in self._tracked:
            from dra_guard.read.git_index import Unread, read_tracked

            found = read_tracked(root)
            if isinstance(found, Unread):
                self.unread_indexes.setdefault(found.path, found.why)
            self._tracked[root] = None if isinstance(found, Unread) else found
        index = self._tracked[root]
        relative = _relative(absolute, root)
        return index is not None and relative is not None and index.holds(relative, is_dir)

    def _folder(self, directory: str, root: str) -> _Folder:
        """What the repository's .gitignore files say of `directory` (at or below `root`),
        worked out once a folder: from the nearest folder already known, down."""
        below: list[str] = []
        while (directory, root) not in self._folders and directory != root:
            below.append(directory)
            directory = os.path.dirname(directory)
        known = self._folders.get((directory, root))
        if known is None:  # the root: ignored by nothing
            known = self._folders[(root, root)] = _Folder(False, self._specs_at(root, root, ()))
        for each in reversed(below):
            ignored = known.ignored or _decides(known.specs, each, True)
            known = self._folders[(each, root)] = _Folder(ignored, self._specs_at(each, root, known.specs))
        return known

    def _specs_at(
        self, directory: str, root: str, above: tuple[tuple[str, tuple[_GitPattern, ...]], ...]
    ) -> tuple[tuple[str, tuple[_GitPattern, ...]], ...]:
        patterns = self._ignore_spec(directory, root)
        return (*above, (directory, patterns)) if patterns else above


class _Folder(NamedTuple):
    """A folder of a repository: whether git ignores it (it, or a folder above it, matched),
    and the .gitignore files from the repository's root down to it, with their folders."""

    ignored: bool
    specs: tuple[tuple[str, tuple[_GitPattern, ...]], ...]


def _decides(specs: Sequence[tuple[str, tuple[_GitPattern, ...]]], path: str, is_dir: bool) -> bool:
    """Whether the deepest of `specs` with a pattern that matches `path` ignores it."""
    ignored = False
    for directory, spec in specs:
        relative = _relative(path, directory)
        if relative is None:
            continue
        include = _git_matches(spec, relative, is_dir)
        if include is not None:
            ignored = include
    return ignored


def _git_matches(patterns: Sequence[_GitPattern], relative: str, is_dir: bool) -> bool | None:
    """What the last of `patterns` that matches `relative` (a folder when `is_dir`) says
    (True: ignore), None when none does, as git matches (`_git_patterns`)."""
    include = None
    relative = _as_bytes(relative)
    path = relative + "/" if is_dir else relative
    for pattern in patterns:
        if pattern.folders_only and not is_dir:
            continue
        if pattern.regex.search(relative if pattern.inside else path) is not None:
            include = pattern.include
    return include


#: Trailing spaces of a pattern, which git drops unless escaped (`\\ `).
_TRAILING_SPACES = re.compile(r"(?<!\\) +$")
#: The largest .gitignore (or info/exclude) read; a larger one ignores nothing.
_MAX_IGNORE_FILE_BYTES = 1 << 20


class ChartPlace(NamedTuple):
    """Where a path lies in a Helm chart (`chart_place`)."""

    #: The chart helm renders it with (a sub-chart renders with its parent), spelt as the
    #: user spelt the path where it lies under it.
    chart: str
    #: Part of what helm renders: the chart's `templates/` (or below), or one of its own
    #: files (`CHART_OWN_FILES`); else a folder or a file the chart only carries.
    rendered: bool


def chart_place(path: str) -> ChartPlace | None:
    """Where `path` (a file or folder) lies in the nearest Helm chart folder holding it, if any.

    The search stops at the repository root, so a stray Chart.yaml above the repository
    never turns it into a chart.
    """
    absolute = os.path.abspath(path)
    is_folder = os.path.isdir(absolute)
    directory = absolute if is_folder else os.path.dirname(absolute)
    root = repository_root(directory)
    chart = directory
    while not os.path.isfile(os.path.join(chart, CHART_FILE)):
        parent = os.path.dirname(chart)
        if chart in (root, parent):
            return None
        chart = parent
    inside = [] if absolute == chart else os.path.relpath(absolute, chart).split(os.sep)
    rendered = bool(inside) and (
        inside[0] == CHART_TEMPLATES or (len(inside) == 1 and not is_folder and inside[0] in CHART_OWN_FILES)
    )
    while (holder := _holding_chart(chart)) is not None:
        chart = holder
    return ChartPlace(_spelt(chart), rendered)


def _holding_chart(chart: str) -> str | None:
    """The chart (absolute) whose `charts/` holds the chart folder `chart` (absolute), which
    helm renders with it; None for a chart of its own.  helm passes over a folder there whose
    name starts with `_` or `.` (load.go, as `CHART_OWN_FILES` cites), and a repository's root
    is a chart of its own whatever lies above it."""
    holder, name = os.path.split(chart)
    parent = os.path.dirname(holder)
    if os.path.basename(holder) != SUBCHARTS or name.startswith(("_", ".")) or parent == holder:
        return None
    if os.path.exists(os.path.join(chart, ".git")) or not os.path.isfile(os.path.join(parent, CHART_FILE)):
        return None
    return parent


def _spelt(absolute: str) -> str:
    """An absolute path relative to the working directory where it lies under it, else as it is."""
    relative = os.path.relpath(absolute)
    return absolute if relative.startswith(os.pardir) else relative


def _rendering_chart(folder: str) -> str:
    """The chart helm renders the chart folder `folder` (as a walk spells it) with: itself,
    or, for a sub-chart, the chart that holds it (`_holding_chart`)."""
    absolute = os.path.abspath(folder)
    holder = _holding_chart(absolute)
    if holder is None:
        return folder
    while (above := _holding_chart(holder)) is not None:
        holder = above
    return _spelt(holder)


def _skipped_folder(name: str) -> bool:
    return name.startswith(".") or name in SKIPPED_FOLDERS


#: What a walk or a glob yields: a candidate file, one in a Helm chart's folder outside what
#: helm renders, a Helm chart folder, a symlinked folder it did not enter.
_FILE, _CHART_FILE, _CHART, _LINK = "file", "chart file", "chart", "link"
#: Why a symlinked folder in `Selection.links` was left out, as check and migrate say it.
LINK_NOT_FOLLOWED = "a symlinked folder, not followed by a walk"


def _identity(path: str) -> tuple[int, int] | None:
    """(st_dev, st_ino) of the file `path` names, links followed; None where it cannot be told."""
    try:
        status = os.stat(path)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None
    # Some network file systems give every file inode 0: no identity is better than one for all.
    return (status.st_dev, status.st_ino) if status.st_ino else None


class _OutputFile:
    """The report file, told apart from the inputs by identity, worked out once.

    An existing regular file is compared by (st_dev, st_ino), the identity `select` works
    out for each candidate anyway (one stat, where `realpath` cost an lstat per component
    of every candidate's path: issue 25, ~145 us a file on one-object-per-file trees), and
    a hard link or symlink to it is still caught.  A report file that does not exist yet
    cannot be read as an input, nor can one that is no regular file (`/dev/null`, a pipe:
    reading refuses those, and writing to them overwrites no input); a candidate naming
    the same path is still refused."""

    def __init__(self, output: str | None) -> None:
        self.path = os.path.normpath(os.path.abspath(output)) if output else None
        self.identity = _identity(output) if output and os.path.isfile(output) else None

    def is_(self, path: str, identity: tuple[int, int] | None) -> bool:
        """Whether the candidate `path`, of `identity` (`_identity`), is the report file."""
        if self.path is None:
            return False
        if self.identity is None:
            return os.path.normpath(os.path.abspath(path)) == self.path
        return identity == self.identity


def select(
    paths: Iterable[str],
    *,
    ignores: Ignores | None = None,
    named_like_found: bool = False,
    output: str | None = None,
    ours: Callable[[str], bool] | None = None,
) -> Selection:
    """Candidates, charts, symlinked folders not entered and errors for the paths given on
    the command line.

    Excludes and `.gitignore` apply inside walked directories; a directory named
    explicitly is walked even when they name it (`dra-guard check dist/` after
    `cdk8s synth`, with `dist/` in `.gitignore`), and a glob is the user's own choice of
    files.  `named_like_found` treats named files as a walk treats what it finds
    (pre-commit passes every staged file by name): not-manifests skipped, exclude
    patterns applied (not `.gitignore`: git lists tracked files whatever it says).
    `output`, the report file, is never a candidate, nor is a `.json` file a walk or glob
    finds that `ours` says dra-guard wrote (a shard's facts file: see
    `dra_guard.distribute.facts_file`).  A file reached twice (named twice, through a link,
    by two patterns) is a candidate once, as first spelt.

    A folder in a Helm chart is walked for what the chart keeps outside what helm renders
    (`_walk`), without the chart unless the walk meets it; a chart's `templates/` named, or
    a template or one of the chart's own files treated as found, stands for the chart
    (`chart_place`).
    """
    ignores = ignores or Ignores()
    selection = Selection()
    output_file = _OutputFile(output)
    seen: set[tuple[int, int] | str] = set()
    charts: dict[str, str] = {}
    links: dict[str, str] = {}
    #: The folders named and walked, real paths: a link into one of them is checked through it.
    walked_folders: set[str] = set()

    def add(path: str, found: bool, in_chart: bool = False) -> None:
        identity = None if path == STDIN else _identity(path)
        if path != STDIN and output_file.is_(path, identity):
            if found:
                selection.output_found = True
            else:
                selection.output_named = True
            return
        if found and ours is not None and path.lower().endswith(".json") and ours(path):
            return
        # A file that cannot be stat'ed is told by its path (reading it reports why).
        key = identity or (path if path == STDIN else os.path.normpath(path))
        if key not in seen:  # a file reached twice (or stdin, read once) is checked once
            seen.add(key)
            selection.files.append(Candidate(path, found, in_chart))

    def add_chart(directory: str) -> None:
        charts.setdefault(os.path.realpath(directory), directory)

    def add_link(folder: str) -> None:
        # By the link's own path: two links to one folder are two things left unchecked.
        links.setdefault(os.path.normpath(os.path.abspath(folder)), folder)

    for raw in paths:
        if raw == STDIN:
            add(STDIN, False)
            continue
        try:
            mode: int | None = os.stat(raw).st_mode
            problem: OSError | None = None
        except (OSError, ValueError) as error:  # ValueError: a NUL in the path
            mode, problem = None, error if isinstance(error, OSError) else OSError(errno.EINVAL, str(error))
        if mode is not None and stat.S_ISDIR(mode):
            place = chart_place(raw)
            if place is not None and place.rendered:  # a chart's templates: what helm renders
                add_chart(place.chart)
                continue
            # A chart (its folder, or a folder in it) is walked for the files it keeps
            # outside what helm renders; the walk hands over the chart itself.
            walked_folders.add(os.path.realpath(raw))
            named_ignored = ignores.excluded(raw, is_dir=True)
            walked = Ignores(gitignore=False) if named_ignored else ignores
            for path, kind in _walk(raw, walked, selection.errors, in_chart=place is not None):
                if kind == _CHART:
                    add_chart(path)
                elif kind == _LINK:
                    add_link(path)
                else:
                    add(path, True, kind == _CHART_FILE)
        elif mode is not None:  # a file, or a FIFO, socket or device: reading refuses those
            if not named_like_found:
                add(raw, False)
            elif (place := chart_place(raw)) is not None and place.rendered:
                add_chart(place.chart)
            elif not ignores.matches_exclude(raw):
                add(raw, True, place is not None)
        elif glob.has_magic(raw):
            known = len(selection.errors)
            matches = _glob(raw, selection.errors)
            # A folder it could not read is the error: whether it would match is not known.
            if not any(kind == _FILE for _, kind in matches) and len(selection.errors) == known:
                selection.errors.append(InputError(raw, None, "no file matches this pattern"))
            for path, kind in matches:
                place = chart_place(path)
                if place is not None and place.rendered:
                    add_chart(place.chart)
                elif kind == _LINK:
                    add_link(path)
                else:
                    add(path, True, place is not None)
        elif problem is None or problem.errno in (errno.ENOENT, errno.ENOTDIR):
            selection.errors.append(InputError(raw, None, "no such file or directory"))
        else:  # a path too long, a folder on the way that cannot be entered, a loop of links
            selection.errors.append(InputError(raw, None, f"cannot read: {problem.strerror or problem}"))
    selection.charts = list(charts.values())
    selection.unread_indexes = [(_shown(path), why) for path, why in ignores.unread_indexes.items()]
    selection.links = [link for link in links.values() if not _inside(os.path.realpath(link), walked_folders)]
    return selection


def _shown(path: str) -> str:
    """An absolute path as a report names it: relative to the working directory when it is
    below it (the same on every machine), else as it is."""
    return _relative(path, os.curdir) or path


def _inside(path: str, folders: Iterable[str]) -> bool:
    """Whether `path` is one of `folders` or lies below one: a link there (`overlays/x/common
    -> ../../common`, or a loop `up -> ..`) leads to files the walk checks where they are."""
    return any(path == folder or path.startswith(folder.rstrip(os.sep) + os.sep) for folder in folders)


def _reporter(errors: list[InputError], directory: str) -> Callable[[OSError], None]:
    """walk_tree's `onerror`: a folder that cannot be listed is an input error in `errors`."""

    def unreadable(error: OSError) -> None:
        path = error.filename if isinstance(error.filename, str) else directory
        errors.append(InputError(path, None, f"cannot read: {error.strerror or error}"))

    return unreadable


def walk_tree(top: str, onerror: Callable[[OSError], None] | None = None) -> Iterator[tuple[str, list[str], list[str]]]:
    """`os.walk(top)`, top down, links not followed, in the same order, without recursion:
    before Python 3.12 os.walk recurses once a level, and a tree 1,200 folders deep (a
    path of 2,400 characters, well within what Linux allows) raised RecursionError.

    As with os.walk, the caller may prune or reorder `folders` in place before the walk
    goes on below them.
    """
    pending = [top]
    while pending:
        root = pending.pop()
        try:
            with os.scandir(root) as listing:
                entries = list(listing)
        except OSError as error:
            if onerror is not None:
                onerror(error)
            continue
        folders: list[str] = []
        names: list[str] = []
        links: set[str] = set()
        for entry in entries:
            try:
                is_folder = entry.is_dir()
                if is_folder and entry.is_symlink():  # told by the listing: no lstat
                    links.add(entry.name)
            except OSError:
                is_folder = False
            (folders if is_folder else names).append(entry.name)
        yield root, folders, names
        pending.extend(os.path.join(root, folder) for folder in reversed(folders) if folder not in links)


def _walk(directory: str, ignores: Ignores, errors: list[InputError], in_chart: bool = False) -> list[tuple[str, str]]:
    """(path, _FILE, _CHART_FILE, _CHART or _LINK) below `directory` (which lies in a Helm
    chart's folder where `in_chart`), sorted; symlinked folders are not entered (those the
    walk would not skip are named).

    A chart folder (`directory` too) is named as the chart helm renders it with (itself, or
    the chart holding it as a sub-chart) and walked, but for what helm renders of it: its
    `templates/` and its own files (`CHART_OWN_FILES`).  The files found in it are
    _CHART_FILE; a linked chart is rendered, not walked.

    A folder that cannot be listed (no permission, a path longer than the system allows)
    is an input error in `errors`, never a silent hole in the walk; so is a wanted name
    that is no regular file (a FIFO, a socket, a device), as reading it refuses it.
    """
    found: list[tuple[str, str]] = []
    #: The chart folders met, and every folder walked in a chart's folder (few, or none:
    #: a folder outside charts costs a set lookup).
    chart_folders: set[str] = set()
    in_charts: set[str] = set()
    if os.path.isfile(os.path.join(directory, CHART_FILE)):
        found.append((_rendering_chart(_spelt(os.path.abspath(directory))), _CHART))
        chart_folders.add(directory)
    if in_chart or chart_folders:
        in_charts.add(directory)
    # os.scandir rather than pathlib: pathlib alone is a tenth of the CLI's start-up time.
    for root, folders, names in walk_tree(directory, _reporter(errors, directory)):
        is_chart = root in chart_folders
        kind = _CHART_FILE if root in in_charts else _FILE
        kept = []
        for folder in folders:
            path = os.path.join(root, folder)
            if _skipped_folder(folder) or ignores.excluded(path, is_dir=True):
                continue
            if is_chart and folder == CHART_TEMPLATES:
                continue  # helm renders it: the chart is checked as rendered
            if os.path.isfile(os.path.join(path, CHART_FILE)):
                found.append((_rendering_chart(path), _CHART))  # a linked chart too: it is rendered
                if os.path.islink(path):
                    continue
                chart_folders.add(path)
                in_charts.add(path)
            elif os.path.islink(path):  # walk_tree lists it and does not enter it: name it
                found.append((path, _LINK))
                continue
            elif kind == _CHART_FILE:
                in_charts.add(path)
            kept.append(folder)
        folders[:] = kept
        for name in names:
            if is_chart and name in CHART_OWN_FILES:
                continue  # read by helm as the chart itself
            path = os.path.join(root, name)
            wanted = name.lower().endswith(MANIFEST_SUFFIXES) or name in KUSTOMIZATION_FILE_NAMES
            # Everything but a folder (walk_tree put folders, and links to them, in `folders`):
            # what is no regular file is refused when it is read.
            if wanted and not ignores.excluded(path):
                found.append((path, kind))
    return sorted(found)


def _glob(pattern: str, errors: list[InputError]) -> list[tuple[str, str]]:
    """(path, _FILE or _LINK) for a glob, sorted: the files it matches and, where it has a
        `**`, the symlinked folders it did not enter though its rest could match below them
        and not as much below the folder they lead to (a loop back into the tree is no gap).

        A pattern without `**` matches as glob does (`_plain_glob`), but says which folders it
    could not read.  With one, the folder before its first wildcard is
        walked (walk_tree, links not followed) and each path below matched a name at a time
        (`_advance`): Python's glob follows every symlinked folder under `**`, with no loop
        check (one loop selects each file dozens of times, two never finish).
    """
    if os.altsep:
        pattern = pattern.replace(os.altsep, os.sep)
    segments = pattern.split(os.sep)
    if not segments[-1]:
        return []  # only folders end in a separator, and no folder is a candidate
    literal = next(index for index, segment in enumerate(segments) if glob.has_magic(segment))
    prefix = os.sep.join(segments[:literal]) or (os.sep if literal else "")
    if "**" not in segments:
        return _plain_glob(prefix, segments[literal:], errors)
    # `a//b` and `a/./b` are `a/b`, as in glob.
    rest = [segment for segment in segments[literal:] if segment not in ("", os.curdir)]
    if os.pardir in rest:
        errors.append(InputError(pattern, None, "`..` after a wildcard: write the folder before the first wildcard"))
        return []
    top = prefix or os.curdir
    if not _is_folder(top, errors):
        return []
    real_top = os.path.realpath(top)
    found: list[tuple[str, str]] = []
    #: The pattern's positions at each real folder walked, and at each link not entered.
    states_at: dict[str, frozenset[int]] = {}
    links: list[tuple[str, frozenset[int]]] = []
    reached = {top: _closure([0], rest)}
    for root, folders, names in walk_tree(top, _reporter(errors, top)):
        states = reached.pop(root)
        states_at[os.path.normpath(os.path.join(real_top, os.path.relpath(root, top)))] = states
        kept = []
        for folder in folders:
            path = os.path.join(root, folder)
            inside = _advance(states, folder, rest)
            if not any(index < len(rest) for index in inside):
                continue  # nothing below can match
            if os.path.islink(path):
                links.append((path, inside))
            else:
                reached[path] = inside
                kept.append(folder)
        folders[:] = kept
        found.extend((os.path.join(root, name), _FILE) for name in names if _takes_file(states, name, rest))
    for link, inside in links:
        # Left out only where the pattern matches as much below where it leads, walked.
        if not inside <= states_at.get(os.path.realpath(link), frozenset()):
            found.append((link, _LINK))
    if not prefix:  # glob spells what it finds below the working directory without `./`
        found = [(path[len(os.curdir + os.sep) :], kind) for path, kind in found]
    return sorted(found)


def _plain_glob(prefix: str, segments: Sequence[str], errors: list[InputError]) -> list[tuple[str, str]]:
    """(path, _FILE) for a glob without `**`, sorted: what `glob.glob` matches, links
    followed as there, but a folder on the way that cannot be listed or entered (no
    permission, a loop of links) is an input error in `errors`, where glob.glob drops it
    without a word (`k8s/*/*.yaml` left out everything in a folder it could not read).
    Only a path that does not exist (or is no folder) matches nothing silently, as in glob.
    """
    paths = [prefix]
    last = len(segments) - 1
    for index, segment in enumerate(segments):
        wanted_folder = index < last
        reached: list[str] = []
        for path in paths:
            if glob.has_magic(segment):
                reached.extend(_matching_names(path, segment, wanted_folder, errors))
                continue
            status = _status(os.path.join(path, segment), path, errors)
            if status is not None and (not wanted_folder or stat.S_ISDIR(status.st_mode)):
                reached.append(os.path.join(path, segment))
        paths = reached
    return sorted((path, _FILE) for path in paths if not os.path.isdir(path))


def _matching_names(folder: str, segment: str, folders_only: bool, errors: list[InputError]) -> list[str]:
    """The paths of `folder`'s entries whose names `segment` matches (folders, links to
    folders included, only where `folders_only`), as glob lists them."""
    try:
        with os.scandir(folder or os.curdir) as listing:
            entries = list(listing)
    except OSError as error:
        _unless_missing(error, folder or os.curdir, errors)
        return []
    matched = []
    for entry in entries:
        if not _name_matches(segment, entry.name):
            continue
        try:
            if folders_only and not entry.is_dir():
                continue
        except OSError:
            continue  # gone since the listing, or a link that leads nowhere: no folder
        matched.append(os.path.join(folder, entry.name))
    return matched


def _status(path: str, folder: str, errors: list[InputError]) -> os.stat_result | None:
    """`path`'s status, links followed (an lstat for a link that leads nowhere, as glob's
    lexists), or None where it does not exist; a `folder` that cannot be entered is an
    input error in `errors`."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        try:
            return os.lstat(path)  # a dangling link: glob matches it, reading reports it
        except OSError:
            return None
    except OSError as error:
        _unless_missing(error, folder or os.curdir, errors)
        return None


def _is_folder(path: str, errors: list[InputError]) -> bool:
    """Whether `path` is a folder; one that cannot be told (a folder above it that cannot
    be entered) is an input error in `errors`."""
    status = _status(path, os.path.dirname(path), errors)
    return status is not None and stat.S_ISDIR(status.st_mode)


def _unless_missing(error: OSError, path: str, errors: list[InputError]) -> None:
    """An input error for `path` in `errors`, once, unless `error` says it is not there."""
    if error.errno in (errno.ENOENT, errno.ENOTDIR):
        return
    problem = InputError(path, None, f"cannot read: {error.strerror or error}")
    if problem not in errors:
        errors.append(problem)


def _takes_file(states: frozenset[int], name: str, segments: Sequence[str]) -> bool:
    """Whether a file `name` at `states` ends a match: its name matched by the last segment,
    or by a `**` with nothing but `**` after it.  (Not through a final `**` matching no
    name: in glob, what comes before the last segment is a folder, never a file.)"""
    last = len(segments) - 1
    for index in states:
        if index > last:
            continue
        segment = segments[index]
        if segment == "**":
            if not name.startswith(".") and all(after == "**" for after in segments[index:]):
                return True
        elif index == last and _name_matches(segment, name):
            return True
    return False


def _name_matches(segment: str, name: str) -> bool:
    """Whether a pattern segment other than `**` matches `name` as in glob: a hidden name
    only if the segment starts with a dot."""
    return (segment.startswith(".") or not name.startswith(".")) and fnmatch.fnmatch(name, segment)


def _closure(states: Iterable[int], segments: Sequence[str]) -> frozenset[int]:
    """`states` (positions in `segments`) and those past each `**` there: it matches no name too."""
    closed: set[int] = set()
    for start in states:
        end = start
        while end < len(segments) and segments[end] == "**":
            end += 1
        closed.update(range(start, end + 1))
    return frozenset(closed)


def _advance(states: frozenset[int], name: str, segments: Sequence[str]) -> frozenset[int]:
    """The positions in `segments` a path at `states` reaches with one more name.

    `**` matches any name but one a walk skips (hidden, `node_modules`, ...); another
    segment matches as in glob (`_name_matches`).
    """
    after: list[int] = []
    for index in states:
        if index == len(segments):
            continue  # the pattern is spent: nothing longer matches
        segment = segments[index]
        if segment == "**":
            if not _skipped_folder(name):
                after.append(index)
        elif _name_matches(segment, name):
            after.append(index + 1)
    return _closure(after, segments)
