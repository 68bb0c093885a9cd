"""What a rule sees: one resource with cached views, and the whole input set around it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from dra_guard.config import Config
from dra_guard.findings import ObjectRef, Severity
from dra_guard.manifest import (
    CLAIM_KINDS,
    DeviceRequestView,
    Path,
    PodSpecView,
    device_requests,
    metadata,
    pod_claims,
    pod_spec,
    text,
)


class Location(Protocol):
    """Where an object sits in its file: all a resource needs from the loader's documents."""

    @property
    def file(self) -> str: ...

    @property
    def index(self) -> int:
        """1-based position of the document in its file."""

    @property
    def line(self) -> int | None:
        """1-based line where the document starts (None: no line means anything, as in
        the output of `helm template`)."""

    @property
    def text(self) -> str | None:
        """The whole file's text, when it is kept (see `span`)."""

    @property
    def span(self) -> tuple[int, int]:
        """The document's [start, end) slice of `text`."""

    def line_of(self, path: Sequence[str | int]) -> int | None:
        """The line of the node at `path` inside the document."""


@dataclass(frozen=True)
class Violation:
    """What a rule's `check()` yields; the engine adds the rule, object, file and line."""

    path: Path
    message: str
    #: Only for rules whose findings differ in severity from the rule's own.
    severity: Severity | None = None
    #: Set when the finding depends on other objects of the input (another pod using the
    #: same claim, a template that is or is not there): front ends that check one object
    #: at a time leave these to a check of the whole set.
    cross_object: bool = False
    #: What else in the object the finding rests on, besides the value at `path`: ()
    #: for nothing else, None (the default) for anything in the object.  Front ends that
    #: see objects with parts unknown (Pulumi during preview, patches) keep a finding
    #: only when neither its path nor its evidence touches an unknown part.
    evidence: tuple[Path, ...] | None = None


class Resource:
    """One Kubernetes object from the input (a `List` contributes one per item)."""

    # Plain attributes: functools.cached_property takes a lock on every access (3.11),
    # and these are read for every rule on every object.
    def __init__(
        self, obj: Mapping[str, Any], document: Location | None = None, prefix: Path = (), origin: str | None = None
    ) -> None:
        self.obj = obj
        self.document = document
        #: For objects that come from code, not files: a cdk8s construct path, a Pulumi URN.
        self.origin = origin
        #: Where the object sits inside its document (`("items", 3)` for List items).
        self.prefix = prefix
        meta = metadata(obj)
        self.kind = text(obj.get("kind"))
        self.namespace = text(meta.get("namespace"))
        self.name = text(meta.get("name"))
        self._pod: PodSpecView | bool | None = False
        self._requests: list[DeviceRequestView] | None = None
        #: Filled by Context.accelerator_requests (it depends on the configuration).
        self.accelerator_requests: list[DeviceRequestView] | None = None

    @property
    def ref(self) -> ObjectRef:
        generate_name = "" if self.name else text(metadata(self.obj).get("generateName"))
        return ObjectRef(text(self.obj.get("apiVersion")), self.kind, self.namespace, self.name, generate_name)

    @property
    def pod(self) -> PodSpecView | None:
        if self._pod is False:
            self._pod = pod_spec(self.obj)
        return self._pod  # type: ignore[return-value]

    @property
    def requests(self) -> list[DeviceRequestView]:
        if self._requests is None:
            self._requests = list(device_requests(self.obj)) if self.kind in CLAIM_KINDS else []
        return self._requests

    def line_of(self, path: Path) -> int | None:
        if self.document is None:
            return None
        return self.document.line_of((*self.prefix, *path))

    def source_may_contain(self, needles: Iterable[str]) -> bool:
        """False only when the object's source text provably spells none of `needles`.

        Sound because a YAML/JSON string can differ from its source text only through
        backslash escapes or line folding (which inserts spaces), and aliases are local
        to their document; so no backslash and no needle in the text means no string
        of the object equals or starts with a needle.  Objects without text: True.
        """
        document = self.document
        if document is None or document.text is None:
            return True
        source = document.text[document.span[0] : document.span[1]]
        return "\\" in source or any(needle in source for needle in needles)


class _NamedIndex:
    """Objects by (namespace, name), falling back to the name alone when a side has no namespace."""

    def __init__(self) -> None:
        self._by_name: dict[str, list[Resource]] = defaultdict(list)

    def add(self, resource: Resource) -> None:
        self._by_name[resource.name].append(resource)

    def find(self, namespace: str, name: str) -> Resource | None:
        candidates = self._by_name.get(name, [])
        for resource in candidates:
            if resource.namespace == namespace:
                return resource
        # Manifests often leave the namespace to `kubectl -n`; then a unique name match will do.
        loose = [resource for resource in candidates if not resource.namespace or not namespace]
        return loose[0] if len(loose) == 1 else None


class Context:
    """The configuration, and indexes over every resource of one check.

    The indexes fill as resources are added; only rules marked CROSS_OBJECT read them,
    and those run after the last resource.
    """

    def __init__(self, config: Config, complete: bool = True) -> None:
        self.config = config
        #: False when the objects checked are not the whole picture (one Pulumi resource at
        #: a time): then cross-object rules must not conclude that something is missing.
        self.complete = complete
        self._templates = _NamedIndex()
        self._claims = _NamedIndex()
        #: Pods (kind Pod) by the (namespace, name) of the ResourceClaim they reference.
        self.claim_users: dict[tuple[str, str], list[Resource]] = defaultdict(list)

    def add(self, resource: Resource) -> None:
        if resource.kind == "ResourceClaimTemplate":
            self._templates.add(resource)
        elif resource.kind == "ResourceClaim":
            self._claims.add(resource)
        elif resource.kind == "Pod" and resource.pod is not None:
            for _, claim in pod_claims(resource.pod):
                claim_name = claim.get("resourceClaimName")
                if isinstance(claim_name, str):
                    self.claim_users[(resource.namespace, claim_name)].append(resource)

    def find_template(self, namespace: str, name: str) -> Resource | None:
        return self._templates.find(namespace, name)

    def find_claim(self, namespace: str, name: str) -> Resource | None:
        return self._claims.find(namespace, name)

    def accelerator_requests(self, resource: Resource) -> list[DeviceRequestView]:
        if resource.kind not in CLAIM_KINDS:
            return []
        if resource.accelerator_requests is None:
            resource.accelerator_requests = [
                request for request in resource.requests if self.config.is_accelerator(request.device_class)
            ]
        return resource.accelerator_requests
