"""What a rule sees: one resource with cached views, and the whole input set around it."""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar, cast

from dra_guard.contract.catalog import POD_GROUP_KINDS
from dra_guard.contract.findings import ObjectRef, Severity
from dra_guard.model.manifest import (
    CLAIM_KINDS,
    DeviceRequestView,
    Path,
    device_requests,
    in_namespace,
    is_dra_object,
    items,
    mapping,
    metadata,
    text,
)
from dra_guard.model.pod_groups import group_claims
from dra_guard.model.pod_templates import PodSpecView, pod_specs
from dra_guard.ruleapi.config import Config
from dra_guard.ruleapi.device_classes import (
    decided_by_input,
    is_accelerator_class,
    is_pod_level_class,
    overridable,
    scrubbed_class,
)

if TYPE_CHECKING:
    from dra_guard.model.allocation import SliceCollector

T = TypeVar("T")
#: The kinds that may share claims among the pods of a group (`dra_guard.model.pod_groups`).
GROUP_CLAIM_KINDS = frozenset({*POD_GROUP_KINDS, "Job", "CronJob"})
#: NVIDIA's ComputeDomain (resource.nvidia.com), and the one request of the template it makes.
COMPUTE_DOMAIN_GROUP = "resource.nvidia.com/"
COMPUTE_DOMAIN_REQUESTS = ("channel",)
COMPUTE_DOMAIN_CLASSES = ("compute-domain-default-channel.nvidia.com",)
#: What `Context.fact_of` keeps of an object: a tag, then the facts (see `Context.apply`).
Fact = tuple[Any, ...]
_CLAIM, _DEVICE_CLASS, _SLICE, _POD_GROUP, _CLAIM_USERS = "claim", "device-class", "slice", "pod-group", "claim-users"


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

    def line_of(self, path: Sequence[str | int]) -> int | None:
        """The line of the node at `path` inside the document."""


class Violation(NamedTuple):
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
    #: Which of the rule's checks found it: one of the rule's `FACETS` ("" for a rule that
    #: declares none).  What an admission policy covers is a set of facets, never words.
    facet: str = ""


class Pending(NamedTuple):
    """A finding that depends on objects the input may hold further on.

    The engine keeps it, with its line and waiver worked out while the object is at hand,
    and calls `resolve(*args)` once after the last object: the finding's message (or a
    `Resolved`, when the other objects also decide its severity or did not decide it at
    all), or None when the other objects clear it.  `resolve` and `args` must hold only small facts
    (names, the context), never the resource or its object: every pending finding lives
    until the end.  (A module-level function with `args` is smaller than a closure, for
    findings kept once per object.)
    """

    path: Path
    resolve: Callable[..., str | Resolved | None]
    args: tuple[Any, ...] = ()
    severity: Severity | None = None
    #: As for a Violation: what else in the object the finding rests on (None: anything).
    evidence: tuple[Path, ...] | None = None
    #: As for a Violation: which of the rule's checks it is.
    facet: str = ""


class Resolved(NamedTuple):
    """What a `Pending`'s resolve may return instead of a bare message.

    `severity` replaces the pending finding's when the other objects decide it (sharing
    inside one pod is not sharing between pods).  `cross_object=False` says the other
    objects did not decide whether there is a finding: the object alone gives one (they
    changed at most its words or severity), so front ends that see one object at a time,
    and the admission policies, report it as theirs (with what the object alone shows).
    """

    message: str
    severity: Severity | None = None
    cross_object: bool = True
    #: Why the configuration accepts what the finding reports (DRA016's unscrubbed-classes):
    #: the finding is then reported as waived with this reason, never dropped.
    accepted: str | None = None


class Resource:
    """One Kubernetes object from the input (a `List` contributes one per item)."""

    # Plain attributes: functools.cached_property takes a lock on every access (3.11),
    # and these are read for every rule on every object; slots, as one is made per object.
    __slots__ = (
        "_pods",
        "_ref",
        "_requests",
        "accelerator_consulted",
        "accelerator_requests",
        "document",
        "kind",
        "name",
        "namespace",
        "obj",
        "origin",
        "prefix",
        "serial",
    )

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
        # Interned: kinds and namespaces repeat, and findings and facts keep them to the end.
        self.kind = sys.intern(text(obj.get("kind")))
        self.namespace = sys.intern(text(meta.get("namespace")))
        self.name = text(meta.get("name"))
        self._pods: tuple[PodSpecView, ...] | None = None
        self._requests: list[DeviceRequestView] | None = None
        #: Filled by Context.accelerator_requests (it depends on the configuration).
        self.accelerator_requests: list[DeviceRequestView] | None = None
        #: Set by Context.accelerator_requests, cleared by the engine before each rule: the
        #: rule's findings rest on which requests are for accelerators.
        self.accelerator_consulted = False
        self._ref: ObjectRef | None = None

    @property
    def ref(self) -> ObjectRef:
        """The object's reference (one per object, however many findings keep it)."""
        if self._ref is None:
            generate_name = "" if self.name else text(metadata(self.obj).get("generateName"))
            api_version = sys.intern(text(self.obj.get("apiVersion")))
            self._ref = ObjectRef(api_version, self.kind, self.namespace, self.name, generate_name)
        return self._ref

    @property
    def pods(self) -> tuple[PodSpecView, ...]:
        """Every pod spec of the object (see `dra_guard.model.pod_templates`)."""
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


class ClaimFacts(NamedTuple):
    """What other objects' rules need of a ResourceClaim or ResourceClaimTemplate."""

    kind: str
    namespace: str
    name: str
    #: The names a container claim's `request` may use (requests and `request/sub-request`):
    #: a tuple, smaller than a set for the one or two names a claim usually has.
    request_names: tuple[str, ...]
    #: The device classes of its requests ("" for a request that names none): whether they
    #: are accelerators is decided after the last object (`Context.no_accelerator`), since a
    #: DeviceClass of the input further on may say (`dra_guard.ruleapi.device_classes`).
    classes: tuple[str, ...]
    #: The Pod a ResourceClaim was made for ("" for none): the one its controller owner
    #: reference names, as the resource-claim controller and the scheduler write it on the
    #: claims they make for a pod (`controlling_pod`).
    owner_pod: str = ""


def controlling_pod(obj: Mapping[str, Any]) -> str:
    """The name of the Pod that controls `obj` (its ownerReference with `controller: true`
    of kind Pod in the core group), or "".

    The resource-claim controller gives each claim it makes from a pod's template such a
    reference to that pod, and the scheduler each claim it makes for a pod's extended
    resources (kubernetes/kubernetes @ 003e86297d18a8538c9da3619871393f9703bf70
    pkg/controller/resourceclaim/controller.go `handleClaim`; `testkit.lifecycle` models
    both).  Only a pod claim made from a template is checked against it: a pod that names the
    claim by `resourceClaimName` gets it whoever owns it (@ 0209a4cb57a359609b96779f044bcdff8e8df70d
    staging/src/k8s.io/dynamic-resource-allocation/resourceclaim/resourceclaim.go: `Name`
    returns mustCheckOwner false for it, and `CanBeReserved` puts no limit on sharing)."""
    for raw in items(mapping(obj.get("metadata")).get("ownerReferences")):
        owner = mapping(raw)
        if owner.get("controller") is True and owner.get("kind") == "Pod" and owner.get("apiVersion") == "v1":
            return text(owner.get("name"))
    return ""


def same_namespace(first: str, second: str) -> bool:
    """Whether two objects may be in one namespace.

    An object without a namespace lands in the namespace the input is applied to
    (`kubectl -n`, the context's default): one namespace, the same for every object of
    the input, which may be any namespace, so it matches every namespace.
    """
    return first == second or not first or not second


class _NamedIndex:
    """Claims or templates by name, looked up by (namespace, name).

    A name usually has one object: it maps to that object's facts, and to a list only
    when several share it (a tenth of the memory of a list for every name).
    """

    def __init__(self) -> None:
        self._by_name: dict[str, ClaimFacts | list[ClaimFacts]] = {}

    def add(self, facts: ClaimFacts) -> None:
        present = self._by_name.get(facts.name)
        if present is None:
            self._by_name[facts.name] = facts
        elif isinstance(present, list):
            present.append(facts)
        else:
            self._by_name[facts.name] = [present, facts]

    def _named(self, name: str) -> list[ClaimFacts]:
        present = self._by_name.get(name)
        return [] if present is None else present if isinstance(present, list) else [present]

    def exact(self, namespace: str, name: str) -> ClaimFacts | None:
        """The object of this namespace and name; once there, later objects do not change it."""
        return next((facts for facts in self._named(name) if facts.namespace == namespace), None)

    def find(self, namespace: str, name: str) -> ClaimFacts | None:
        return in_namespace(self._named(name), namespace, _facts_namespace)


def _facts_namespace(facts: ClaimFacts) -> str:
    return facts.namespace


class ClaimUser(NamedTuple):
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

    def __init__(self, config: Config, complete: bool = True, *, logging: bool = False) -> None:
        self.config = config
        #: False when the objects checked are not the whole picture (one Pulumi resource at
        #: a time): then cross-object rules must not conclude that something is missing.
        self.complete = complete
        #: With `logging`, the facts of each object are appended here, in order, and the
        #: indexes stay empty: the objects are one part of a check spread over processes,
        #: whose facts another context applies (`apply`) in input order.  Nothing is then
        #: settled before the last object (`settled_template` answers None), since objects
        #: this process never sees may come before these.
        self.log: list[Fact] | None = [] if logging else None
        self._templates = _NamedIndex()
        self._claims = _NamedIndex()
        self._request_names: dict[tuple[str, ...], tuple[str, ...]] = {}
        #: Pods (kind Pod) by the name of the ResourceClaim they name.
        self._claim_users: dict[str, ClaimUser | list[ClaimUser]] = {}
        #: Extended resource names the input's DeviceClasses map (spec.extendedResourceName).
        self._extended_resources: dict[str, list[str]] = defaultdict(list)
        #: The CEL selectors of the input's DeviceClasses, by name: the last object of a
        #: name wins, as `kubectl apply` leaves it.
        self._class_selectors: dict[str, tuple[str, ...]] = {}
        #: The claims each pod group shares among its pods, by (namespace, "Kind/name") of the
        #: PodGroup, Workload or Job that declares them: (claim name, resourceClaimName,
        #: resourceClaimTemplateName), "" for what is unset.
        self._pod_group_claims: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
        self._slices: SliceCollector | None = None
        #: Set by a caller that knows the input holds no ResourceSlice (the webhook: the object
        #: it reviews and the claim templates it reads): rules that need the input's slices
        #: can then tell at once that only the configuration's exist.
        self.input_has_no_slices = False
        #: What a rule works out once per check from the whole input (`derived`).
        self._derived: dict[str, Any] = {}
        #: Facts pending findings keep, each kept once however many objects repeat it.
        self._shared: dict[Any, Any] = {}

    @property
    def slices(self) -> SliceCollector:
        """The input's ResourceSlices, as devices: those of the objects given (`check_objects`),
        of the files named on the command line and of stdin, never those a walk found (see
        `dra_guard.read.loader.Document.walked`)."""
        if self._slices is None:
            # Imported with the first ResourceSlice or claim (dra014_unsatisfiable.py), not at start-up.
            from dra_guard.model.allocation import SliceCollector

            self._slices = SliceCollector()
        return self._slices

    @property
    def has_slices(self) -> bool:
        """Whether the input has a ResourceSlice (without importing the allocator)."""
        return self._slices is not None and self._slices.slices > 0

    def add(self, resource: Resource) -> None:
        """Index what other objects' rules need of `resource` (or log it: `logging`)."""
        fact = self.fact_of(resource)
        if fact is None:
            return
        if self.log is not None:
            self.log.append(fact)
        else:
            self.apply(fact)

    def fact_of(self, resource: Resource) -> Fact | None:
        """What the indexes keep of `resource`, as one small picklable tuple (None: nothing).

        Split from `apply` so that a check spread over processes (`dra_guard.distribute`)
        can send each file's facts to the process that resolves the pending findings,
        which applies them in input order, as one process would have."""
        kind = resource.kind
        if kind in CLAIM_KINDS:
            names = tuple(
                dict.fromkeys(
                    name for request in resource.requests for name in (request.request_name, request.qualified_name)
                )
            )
            # Claims mostly repeat a few request names: share one tuple per set of names.
            names = self._request_names.setdefault(names, names)
            # adminAccess requests allocate nothing to the claim's users (`accelerator_requests`).
            classes = tuple(
                dict.fromkeys(request.device_class for request in resource.requests if not self._monitors(request))
            )
            classes = self._request_names.setdefault(classes, classes)
            owner = controlling_pod(resource.obj) if kind == "ResourceClaim" else ""
            return (_CLAIM, ClaimFacts(kind, resource.namespace, resource.name, names, classes, owner))
        if kind == "ComputeDomain" and text(resource.obj.get("apiVersion")).startswith(COMPUTE_DOMAIN_GROUP):
            return self._compute_domain_fact(resource)
        if kind == "DeviceClass" and is_dra_object(resource.obj):
            spec = mapping(resource.obj.get("spec"))
            mapped = spec.get("extendedResourceName")
            selectors = tuple(
                expression
                for selector in items(spec.get("selectors"))
                if isinstance(expression := mapping(mapping(selector).get("cel")).get("expression"), str)
            )
            return (_DEVICE_CLASS, resource.name, mapped if isinstance(mapped, str) and mapped else "", selectors)
        if kind == "ResourceSlice" and is_dra_object(resource.obj):
            if getattr(resource.document, "walked", False):
                # A ResourceSlice a walk met (an example's captured node, another cluster's
                # fixture) is only an object: the cluster is what the user gives as such.
                return None
            return (_SLICE, resource.obj)
        if kind in GROUP_CLAIM_KINDS:
            return self._pod_group_fact(resource)
        if kind == "Pod":
            users = tuple(
                (claim_name, ClaimUser(resource.serial, resource.namespace, resource.name))
                for pod in resource.pods
                for _, claim in pod.claims
                if isinstance(claim_name := claim.get("resourceClaimName"), str)
            )
            return (_CLAIM_USERS, users) if users else None
        return None

    def apply(self, fact: Fact) -> None:
        """Add one fact of `fact_of` to the indexes."""
        tag = fact[0]
        if tag == _CLAIM:
            facts: ClaimFacts = fact[1]
            (self._templates if facts.kind == "ResourceClaimTemplate" else self._claims).add(facts)
        elif tag == _DEVICE_CLASS:
            _, name, mapped, selectors = fact
            if mapped:
                self._extended_resources[mapped].append(name)
            self._class_selectors[name] = selectors
        elif tag == _SLICE:
            self.slices.add(fact[1])
        elif tag == _POD_GROUP:
            for key, entry in fact[1]:
                self._pod_group_claims.setdefault(key, []).append(entry)
        elif tag == _CLAIM_USERS:
            for claim_name, user in fact[1]:
                self._add_claim_user(claim_name, user)

    def _compute_domain_fact(self, resource: Resource) -> Fact | None:
        """The ResourceClaimTemplate an NVIDIA ComputeDomain makes: its controller creates
        `spec.channel.resourceClaimTemplate.name` in the ComputeDomain's namespace, with one
        request `channel` of class compute-domain-default-channel.nvidia.com
        (NVIDIA/k8s-dra-driver-gpu @ 22407113: cmd/compute-domain-controller/computedomain.go,
        resourceclaimtemplate.go WorkloadResourceClaimTemplateManager.Create,
        templates/compute-domain-workload-claim-template.tmpl.yaml)."""
        template = text(
            mapping(mapping(mapping(resource.obj.get("spec")).get("channel")).get("resourceClaimTemplate")).get("name")
        )
        if not template:
            return None
        names = self._request_names.setdefault(COMPUTE_DOMAIN_REQUESTS, COMPUTE_DOMAIN_REQUESTS)
        classes = self._request_names.setdefault(COMPUTE_DOMAIN_CLASSES, COMPUTE_DOMAIN_CLASSES)
        return (_CLAIM, ClaimFacts("ResourceClaimTemplate", resource.namespace, template, names, classes))

    def _pod_group_fact(self, resource: Resource) -> Fact | None:
        """The claims `resource` shares among the pods of a group (`dra_guard.model.pod_groups`),
        keyed by (namespace, "Kind/name"): a PodGroup's, whose pods name it; a Workload's or a
        Job's, whose PodGroups get names we cannot know."""
        entries = tuple(
            (
                (resource.namespace, f"{resource.kind}/{resource.name}"),
                (
                    text(claim.get("name")),
                    text(claim.get("resourceClaimName")),
                    text(claim.get("resourceClaimTemplateName")),
                ),
            )
            for _, claim in group_claims(resource.kind, resource.obj)
        )
        return (_POD_GROUP, entries) if entries and resource.name else None

    def _add_claim_user(self, claim_name: str, user: ClaimUser) -> None:
        present = self._claim_users.get(claim_name)
        if present is None:
            self._claim_users[claim_name] = user
        elif isinstance(present, list):
            present.append(user)
        else:
            self._claim_users[claim_name] = [present, user]

    def find_template(self, namespace: str, name: str) -> ClaimFacts | None:
        return self._templates.find(namespace, name)

    def find_claim(self, namespace: str, name: str) -> ClaimFacts | None:
        return self._claims.find(namespace, name)

    def settled_template(self, namespace: str, name: str) -> ClaimFacts | None:
        """The template `find_template` will return whatever objects follow, if it is known now.

        A rule may decide a finding now on it, or keep it pending: the two must give the same
        finding (tests/test_distribute.py checks every input both ways)."""
        return None if self.log is not None else self._templates.exact(namespace, name)

    def settled_claim(self, namespace: str, name: str) -> ClaimFacts | None:
        return None if self.log is not None else self._claims.exact(namespace, name)

    def extended_resource_classes(self, name: str) -> list[str]:
        """Device classes that map the extended resource `name`: configured, then in the input."""
        configured = self.config.extended_resource_class(name)
        return [*([configured] if configured else []), *self._extended_resources.get(name, ())]

    def forget_check_facts(self) -> None:
        """Drop what `shared` and `derived` keep, once the pending findings are resolved.

        Those facts hold the context itself (a pending finding's arguments name it): left
        in place, every finished check is a reference cycle that only the garbage collector
        frees, which a front end checking one object at a time pays for on every object.
        """
        self._shared.clear()
        self._derived.clear()

    def shared(self, facts: T) -> T:
        """`facts` (hashable), or equal facts seen before: what a pending finding keeps of
        its object -- a claim's requests -- repeats across objects, and is kept once."""
        kept: T = self._shared.setdefault(facts, facts)
        return kept

    def derived(self, key: str, make: Callable[[], T]) -> T:
        """`make()`, computed once per check (after the last object, for pending findings):
        what several findings of a rule share, such as DRA014's device inventory."""
        if key not in self._derived:
            self._derived[key] = make()
        return cast(T, self._derived[key])

    def class_selectors(self, name: str) -> tuple[str, ...] | None:
        """The selectors of the input's DeviceClass `name`; None when the input has none of that name."""
        return self._class_selectors.get(name)

    def pod_group_shares(self, namespace: str, group: str, claim: Mapping[str, Any]) -> bool:
        """Whether PodGroup `group` (in the input) declares this pod claim, every field equal, so
        that it resolves to the one claim of the group (DRAWorkloadResourceClaims, core/v1
        `PodResourceClaim` @ v0.36.0)."""
        wanted = (
            text(claim.get("name")),
            text(claim.get("resourceClaimName")),
            text(claim.get("resourceClaimTemplateName")),
        )
        return any(
            wanted in entries
            for (group_namespace, declared_by), entries in self._pod_group_claims.items()
            if declared_by == f"PodGroup/{group}" and same_namespace(group_namespace, namespace)
        )

    def template_group_shared(self, namespace: str, template: str) -> list[str]:
        """The PodGroups, Workloads and Jobs in the input that share a claim made from this
        template among the pods of a group ("Kind/name")."""
        return sorted(
            declared_by
            for (group_namespace, declared_by), entries in self._pod_group_claims.items()
            if same_namespace(group_namespace, namespace) and any(entry[2] == template for entry in entries)
        )

    def other_claim_users(self, claim_name: str, namespace: str, serial: int) -> list[ClaimUser]:
        """Pods besides the one at `serial` that name this claim and may share its namespace."""
        present = self._claim_users.get(claim_name)
        users = [] if present is None else present if isinstance(present, list) else [present]
        return [user for user in users if user.serial != serial and same_namespace(user.namespace, namespace)]

    def is_accelerator_class(self, name: str) -> bool:
        """Whether requests of class `name` ask for an accelerator, the input's DeviceClass of
        that name considered: final only after the last object (`dra_guard.ruleapi.device_classes`)."""
        return is_accelerator_class(name, self.config, self._class_selectors.get(name))

    def is_pod_level_class(self, name: str) -> bool:
        """Whether devices of class `name` attach to the pod, not a container (DRANET's NICs)."""
        return is_pod_level_class(name, self.config, self._class_selectors.get(name))

    def is_scrubbed_class(self, name: str) -> bool:
        """Whether the scrubber scrubs devices of class `name` (their driver is NVIDIA's GPU
        driver), the input's DeviceClass of that name considered: final only after the last object."""
        return scrubbed_class(name, self.config, self._class_selectors.get(name))

    def _monitors(self, request: DeviceRequestView) -> bool:
        """An adminAccess request the target release honours (on 1.33 the API server drops the
        field, and the request is an ordinary one)."""
        return request.admin_access and self.config.kubernetes_release.admin_access_by_default

    def no_accelerator(self, facts: ClaimFacts) -> bool:
        """The claim or template has requests and none of them is for an accelerator (or every
        one is an adminAccess request, whose class is not among `classes`)."""
        if not facts.classes:
            return bool(facts.request_names)
        return not any(self.is_accelerator_class(name) for name in facts.classes)

    def pod_level(self, facts: ClaimFacts) -> bool:
        """Every request of the claim or template is for devices that attach to the pod."""
        return bool(facts.classes) and all(self.is_pod_level_class(name) for name in facts.classes)

    def accelerator_requests(self, resource: Resource) -> list[DeviceRequestView]:
        """The requests for accelerators, by the configuration and the catalog.  A request of
        a class neither knows counts, and findings resting on it wait for the input's
        DeviceClass of that name (`unless_not_accelerators`)."""
        resource.accelerator_consulted = True
        if resource.kind not in CLAIM_KINDS:
            return []
        if resource.accelerator_requests is None:
            # A request of a NIC or CPU class the catalog knows by its conventional name
            # (`rdma`) counts too, beside a GPU's as well as alone: the input's DeviceClass may
            # show it to select GPUs, so its findings wait for it (`unless_not_accelerators`).
            # An adminAccess request is left out: it monitors devices that other claims hold
            # (a DCGM exporter), allocated to nobody by it, in the namespaces DRA006 allows
            # it; pinning, tags, sanitization and the scrubber (which would take the free
            # memory of a device another tenant is using) are not for it.
            resource.accelerator_requests = [
                request
                for request in resource.requests
                if (self.config.is_accelerator(request.device_class) or overridable(request.device_class, self.config))
                and not self._monitors(request)
            ]
        return resource.accelerator_requests

    def unless_not_accelerators(
        self, resource: Resource, violations: Sequence[Violation | Pending]
    ) -> list[Violation | Pending]:
        """A rule's findings on a claim, each kept until the last object when every request it
        rests on is of a class that the input's DeviceClass may show to be no accelerator
        (a NIC or CPU class dra-guard does not know): then it is cleared.

        A finding rests on the requests whose path contains its path or is contained in it,
        or on every accelerator request of the object when none does (an annotation)."""
        accelerators = self.accelerator_requests(resource)
        if not any(decided_by_input(request.device_class, self.config) for request in accelerators):
            return list(violations)  # every class is settled already: nothing to wait for
        # Requests by every prefix of their path, and by their path: a violation's requests in
        # a walk of its own path (a claim of many requests cost requests x findings before).
        below: dict[Path, list[DeviceRequestView]] = {}
        for request in accelerators:
            for end in range(len(request.path) + 1):
                below.setdefault(request.path[:end], []).append(request)
        at = {request.path: request for request in accelerators}
        kept: list[Violation | Pending] = []
        for violation in violations:
            path = violation.path
            relevant = [*below.get(path, ()), *(at[path[:end]] for end in range(len(path)) if path[:end] in at)]
            classes = tuple(sorted({request.device_class for request in relevant or accelerators}))
            if not classes or not all(decided_by_input(name, self.config) for name in classes):
                kept.append(violation)
            elif isinstance(violation, Pending):
                chained = (self, classes, violation.resolve, violation.args)
                kept.append(violation._replace(resolve=_unless_classes_are_not_accelerators, args=chained))
            else:
                own = (self, classes, violation.message, violation.severity, violation.cross_object)
                kept.append(
                    Pending(
                        path, _unless_not_accelerators, own, violation.severity, violation.evidence, violation.facet
                    )
                )
        return kept


def _unless_not_accelerators(
    context: Context, classes: tuple[str, ...], message: str, severity: Severity | None, cross_object: bool
) -> Resolved | None:
    if not any(context.is_accelerator_class(name) for name in classes):
        return None
    # The object alone gave the finding; a DeviceClass among the objects could only clear it.
    # Unless the classes are NIC classes by name that a DeviceClass showed to select GPUs:
    # then the DeviceClass made the finding, and a policy, which sees the claim alone, cannot.
    return Resolved(message, severity, cross_object or _made_by_input(context, classes))


def _unless_classes_are_not_accelerators(
    context: Context, classes: tuple[str, ...], resolve: Callable[..., str | Resolved | None], args: tuple[Any, ...]
) -> str | Resolved | None:
    if not any(context.is_accelerator_class(name) for name in classes):
        return None
    resolved = resolve(*args)
    if resolved is None or not _made_by_input(context, classes):
        return resolved
    return Resolved(resolved) if isinstance(resolved, str) else resolved._replace(cross_object=True)


def _made_by_input(context: Context, classes: tuple[str, ...]) -> bool:
    """Whether the classes are accelerators only because the input's DeviceClasses say so of
    classes the catalog knows as NICs by name (`overridable`)."""
    return all(overridable(name, context.config) for name in classes)
