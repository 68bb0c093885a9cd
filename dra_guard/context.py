"""What a rule sees: one resource with cached views, and the whole input set around it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from dra_guard.config import Config
from dra_guard.findings import ObjectRef, Severity
from dra_guard.manifest import (
    CLAIM_KINDS,
    DeviceRequestView,
    Path,
    device_requests,
    is_dra_object,
    mapping,
    metadata,
    text,
)
from dra_guard.pod_templates import PodSpecView, pod_specs


class Location(Protocol):
    """Where an object sits in its file: all a resource needs from the loader's documents."""

    @property
    def file(self) -> str: ...

    @property
    def index(self) -> int:
        """1-based position of the document in its file."""

    @property
    def line(self) -> int:
        """1-based line where the document starts."""

    def line_of(self, path: Sequence[str | int]) -> int:
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


@dataclass(frozen=True)
class Pending:
    """A finding that depends on objects the input may hold further on.

    The engine keeps it, with its line and waiver worked out while the object is at hand,
    and calls `resolve` once after the last object: the finding's message, or None when
    the other objects clear it.  `resolve` must hold only small facts (names, the
    context), never the resource or its object: every pending finding lives until the end.
    """

    path: Path
    resolve: Callable[[], str | None]
    severity: Severity | None = None


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
        #: Position in the input (1-based), set by the engine: tells objects apart after they are gone.
        self.serial = 0
        meta = metadata(obj)
        self.kind = text(obj.get("kind"))
        self.namespace = text(meta.get("namespace"))
        self.name = text(meta.get("name"))
        self._pods: tuple[PodSpecView, ...] | None = None
        self._requests: list[DeviceRequestView] | None = None
        #: Filled by Context.accelerator_requests (it depends on the configuration).
        self.accelerator_requests: list[DeviceRequestView] | None = None

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(text(self.obj.get("apiVersion")), self.kind, self.namespace, self.name)

    @property
    def pods(self) -> tuple[PodSpecView, ...]:
        """Every pod spec of the object (see `dra_guard.pod_templates`)."""
        if self._pods is None:
            self._pods = pod_specs(self.obj)
        return self._pods

    def pod_at(self, path: Path) -> PodSpecView | None:
        """The innermost pod spec whose path `path` is in."""
        found = None
        for pod in self.pods:
            if path[: len(pod.path)] == pod.path and (found is None or len(pod.path) > len(found.path)):
                found = pod
        return found

    @property
    def requests(self) -> list[DeviceRequestView]:
        if self._requests is None:
            self._requests = list(device_requests(self.obj)) if self.kind in CLAIM_KINDS else []
        return self._requests

    def line_of(self, path: Path) -> int | None:
        if self.document is None:
            return None
        return self.document.line_of((*self.prefix, *path))


@dataclass(frozen=True)
class ClaimFacts:
    """What other objects' rules need of a ResourceClaim or ResourceClaimTemplate."""

    kind: str
    namespace: str
    name: str
    #: The names a container claim's `request` may use (`request_names`).
    request_names: frozenset[str]


def same_namespace(first: str, second: str) -> bool:
    """Whether two objects may be in one namespace.

    An object without a namespace lands in the namespace the input is applied to
    (`kubectl -n`, the context's default): one namespace, the same for every object of
    the input, which may be any namespace, so it matches every namespace.
    """
    return first == second or not first or not second


class _NamedIndex:
    """Claims or templates by name, looked up by (namespace, name)."""

    def __init__(self) -> None:
        self._by_name: dict[str, list[ClaimFacts]] = defaultdict(list)

    def add(self, facts: ClaimFacts) -> None:
        self._by_name[facts.name].append(facts)

    def find(self, namespace: str, name: str) -> ClaimFacts | None:
        candidates = self._by_name.get(name, [])
        for facts in candidates:
            if facts.namespace == namespace:
                return facts
        # Manifests often leave the namespace to `kubectl -n`; then a unique name match will do.
        loose = [facts for facts in candidates if not facts.namespace or not namespace]
        return loose[0] if len(loose) == 1 else None


@dataclass(frozen=True)
class ClaimUser:
    """A Pod that names a ResourceClaim."""

    serial: int
    namespace: str
    name: str


class Context:
    """The configuration, and what rules need to know about the rest of the input.

    Rules run on each object as it arrives; what depends on other objects is a `Pending`
    finding, resolved from these indexes after the last object.  The indexes keep small
    facts only (names, request names), never objects, so memory does not grow with the
    size of the input's objects.
    """

    def __init__(self, config: Config, complete: bool = True) -> None:
        self.config = config
        #: False when the objects checked are not the whole picture (one Pulumi resource at
        #: a time): then cross-object rules must not conclude that something is missing.
        self.complete = complete
        self._templates = _NamedIndex()
        self._claims = _NamedIndex()
        #: Pods (kind Pod) by the name of the ResourceClaim they name.
        self._claim_users: dict[str, list[ClaimUser]] = defaultdict(list)
        #: Extended resource names the input's DeviceClasses map (spec.extendedResourceName).
        self._extended_resources: dict[str, list[str]] = defaultdict(list)

    def add(self, resource: Resource) -> None:
        if resource.kind in CLAIM_KINDS:
            names = frozenset(
                name for request in resource.requests for name in (request.request_name, request.qualified_name)
            )
            facts = ClaimFacts(resource.kind, resource.namespace, resource.name, names)
            (self._templates if resource.kind == "ResourceClaimTemplate" else self._claims).add(facts)
        elif resource.kind == "DeviceClass" and is_dra_object(resource.obj):
            mapped = mapping(resource.obj.get("spec")).get("extendedResourceName")
            if isinstance(mapped, str) and mapped:
                self._extended_resources[mapped].append(resource.name)
        elif resource.kind == "Pod":
            for pod in resource.pods:
                for _, claim in pod.claims:
                    claim_name = claim.get("resourceClaimName")
                    if isinstance(claim_name, str):
                        user = ClaimUser(resource.serial, resource.namespace, resource.name)
                        self._claim_users[claim_name].append(user)

    def find_template(self, namespace: str, name: str) -> ClaimFacts | None:
        return self._templates.find(namespace, name)

    def find_claim(self, namespace: str, name: str) -> ClaimFacts | None:
        return self._claims.find(namespace, name)

    def extended_resource_classes(self, name: str) -> list[str]:
        """Device classes that map the extended resource `name`: configured, then in the input."""
        configured = self.config.extended_resource_class(name)
        return [*([configured] if configured else []), *self._extended_resources.get(name, ())]

    def other_claim_users(self, claim_name: str, namespace: str, serial: int) -> list[ClaimUser]:
        """Pods besides the one at `serial` that name this claim and may share its namespace."""
        return [
            user
            for user in self._claim_users.get(claim_name, ())
            if user.serial != serial and same_namespace(user.namespace, namespace)
        ]

    def accelerator_requests(self, resource: Resource) -> list[DeviceRequestView]:
        if resource.kind not in CLAIM_KINDS:
            return []
        if resource.accelerator_requests is None:
            resource.accelerator_requests = [
                request for request in resource.requests if self.config.is_accelerator(request.device_class)
            ]
        return resource.accelerator_requests
