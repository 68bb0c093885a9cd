"""`dra-guard webhook`: a validating admission webhook for what the policies' CEL cannot do.

The ValidatingAdmissionPolicies (`dra-guard admission-policy`) decide every rule that one
object shows. This webhook decides the rest with the engine itself: isolation tags
verified with the HMAC key (CEL has no SHA-256), the rules that need other objects, as far
as one object and the claim templates and claims of its namespace that it names show them,
the rules that have no CEL form, and the scheduler's reservation of a claim for a pod,
against that pod (dra_guard.admission.reservations). It serves AdmissionReview
`admission.k8s.io/v1` as an ASGI application (run by uvicorn over HTTPS) with `/healthz`
and `/readyz`, a bounded request body, a deadline per review, and one JSON log line per
request on stderr. The key is read from a file (a Secret mount) and never logged.

It fails closed: a CREATE or UPDATE without an object, a claim template or claim it cannot
read (anything but a 404 from the API server: a refusal, a server error, a timeout, an
answer that is not that object), a review past its deadline and a review that raises
are denied, with a message that says why (an internal error with status code 500, and its
traceback in the log line). ResourceClaims that the control plane writes for pods
(`admission-claim-writers`, by `request.userInfo.username`) are admitted unchecked, as the
policies admit them (dra_guard.admission.policy says who writes them, from upstream source),
and so is an UPDATE that changes nothing a rule reads (dra_guard.admission.updates: a
finalizer or owner reference the control plane takes away while it cleans up), without a
lookup: denied for a template deleted since, it would leave the object stranded.

It is bounded: a request's body is read first, its bytes held within a budget of body bytes
in flight (`body_bytes`; a body that would pass it gets a 429, unless bodies still arriving
`stalled_body` after their heads hold enough of it: those are cut off with a 408 instead),
and must arrive within the review's deadline, which is the API server's `?timeout=` less a
margin; then at most `max_reviews` reviews are parsed and checked at once (the others wait
for a slot, 2 s at most, within their deadline, then get a 429), so a slow body never holds
a slot; those that may parse CEL (their object's, or their claim templates') wait, as long,
for one of all the places but one (`Webhook._placed`); the claim templates and claims
looked up are only those the object's pod specs (or pod groups) name in `resourceClaims`
(`resourceClaimTemplateName`, `resourceClaimName`), at most `max_templates` of them, with
one deadline for all and a short cache; and no selector is
evaluated on a device past the review's deadline. dra_guard.admission.serving serves it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import re
import sys
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, TypeVar

from dra_guard.admission import json_budget
from dra_guard.admission.policy import covered_rules
from dra_guard.admission.reservations import (
    group_member,
    is_extended_resource_claim,
    is_reservation,
    new_groups,
    new_pods,
    pod_using,
    reserved_groups,
    reserved_pods,
    shares_a_pod_claim,
    sharing_view,
)
from dra_guard.admission.serving import REVIEW_MIB, STALLED_BODY_SECONDS, Limits, ServingCertificate, log_event
from dra_guard.admission.updates import unchanged_for_rules
from dra_guard.contract.catalog import POD_SPEC_PATHS
from dra_guard.contract.findings import Finding, Report, Severity
from dra_guard.engine.run import Checker
from dra_guard.model.allocation import evaluations_until
from dra_guard.model.manifest import CLAIM_KINDS, get_path
from dra_guard.model.pod_groups import group_claims
from dra_guard.model.pod_templates import pod_specs
from dra_guard.model.selectors import analysed_at_once, byte_length, parsed_already
from dra_guard.ruleapi.admission_form import KIND_RESOURCES, Admission, AdmissionTarget, decides
from dra_guard.ruleapi.config import ADMISSION_CLAIM_WRITERS, ADMISSION_WORKLOAD_CONTROLLERS, DISABLE, Config
from dra_guard.rules import Registry, Rule

T = TypeVar("T")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

#: The API server sends reviews of up to a few MiB (etcd stores objects up to 1.5 MiB).
DEFAULT_MAX_BODY = 3 * 1024 * 1024
#: A review must be answered well within the webhook's timeoutSeconds (5); the API
#: server's `?timeout=` replaces this.
DEFAULT_DEADLINE_SECONDS = 4.0
#: The longest deadline: the API server allows timeoutSeconds of 1 to 30.
MAX_DEADLINE_SECONDS = 30.0
#: The answer must travel back before the API server's timeout: the deadline is its
#: `?timeout=` less this (less a quarter of it, for timeouts under 2 s).
RESPONSE_MARGIN_SECONDS = 0.5
#: What the generated Deployment's memory limit allows (dra_guard.admission.serving sizes
#: every cap from it); the CLI passes the container's own.
_DEFAULT_LIMITS = Limits.for_memory()
#: Reviews parsed and checked at once.
DEFAULT_MAX_REVIEWS = _DEFAULT_LIMITS.max_reviews
#: Bytes of request bodies received and not yet parsed.
DEFAULT_BODY_BYTES = _DEFAULT_LIMITS.body_bytes
#: The longest a review whose body has come waits for a slot (less when its deadline is
#: nearer): a request waiting is neither idle nor arriving, so nothing makes it give way at
#: the connection cap, and 128 of them queued behind reviews kept busy, with `?timeout=30s`,
#: held every connection; after this they get a 429 and their connections go idle.
SLOT_WAIT_SECONDS = 2.0
#: Claim templates and claims looked up for one object (distinct names in its pods'
#: `resourceClaims`).
#: Not an API limit (the API sets none for a pod's claims): a bound on the lookups one
#: review may cost, above what a workload needs (the builders' pods name one or two).
MAX_TEMPLATE_LOOKUPS = 8
#: Bytes of CEL selectors that the parser must read (those the fast path does not) in one
#: review.  cel-python parses some 12 to 30 us a byte in a review's thread, which holds its
#: slot until it is done, past the review's deadline: a Pod or claim template holding 150
#: selectors of 10 KiB each (within etcd's 1.5 MiB) kept a slot for 45 s, and four of them
#: every review out.  16 KiB (about half a second) is more than a real object holds, and
#: takes one selector of the longest the API server accepts (10 KiB).
MAX_CEL_PARSE_BYTES = 16 * 1024
#: How long a looked-up template (or its absence) is reused; a template's spec is immutable.
TEMPLATE_CACHE_SECONDS = 5.0
TEMPLATE_CACHE_SIZE = 1024
#: The most JSON a template read from the API server may be: etcd keeps objects of up to
#: 1.5 MiB, and a tenant's 8 such templates named by one Pod, parsed (about eight times the
#: JSON), were 96 MiB for one review, three times its allowance (serving.REVIEW_MIB).  Real
#: templates are a few KiB; a larger one is a failed lookup, so the review denies.
MAX_TEMPLATE_BYTES = 256 * 1024
#: JSON bytes of the templates the cache keeps, all together (about eight times that once
#: parsed), and the most one of them may be to be kept: 1,024 templates of 1.5 MiB each
#: would have been 12 GiB.
TEMPLATE_CACHE_BYTES = 1024 * 1024
TEMPLATE_CACHE_ENTRY_BYTES = 64 * 1024
#: The most JSON a pod read from the API server may be (etcd keeps objects up to 1.5 MiB).
MAX_POD_BYTES = 3 * 512 * 1024
REVIEW_API = "admission.k8s.io/v1"
#: The longest request uid accepted.  The API server's is a UUID, 36 characters
#: (k8s.io/apiserver's webhook request: `uuid.NewUUID()`); the uid is echoed in the answer
#: and written to the log, and a client reaching the Service could send one of 3 MiB and
#: have every answer and log line that large (3 MiB answers, pipelined and left unread, held
#: 272 MiB).  128 bytes leaves room for any UUID's spelling and for nothing else.
MAX_UID_BYTES = 128
#: What checking a review adds, at most, over its parsed body:
#: tests/test_webhook_review_bounds.py holds the engine's work under it on objects made of
#: nothing but findings or pod claims.
CHECK_MIB = 8
#: The most a request body's JSON may take once parsed, estimated before it is parsed
#: (dra_guard.admission.json_budget): what a review's allowance (serving.REVIEW_MIB, 32 MiB)
#: leaves its check.  3 MiB of JSON parses to anything from 3 MiB (one string) to 113 MiB
#: (nested keyed dicts); the webhook once counted only `{` and `[` (131,072 at most, at 64
#: bytes each), which 3 MiB of two-character strings (35 MiB parsed) and 130,000 dicts of
#: one key and a short string (about 30 MiB) passed.  The largest Pod of
#: tests/test_webhook_memory.py (3 MiB of JSON, 10.4 MiB parsed, 13.4 MiB at the parse's
#: peak) is estimated at 20.6 MiB parsed and 27.4 MiB at the peak, within both bounds.
PARSED_BODY_BYTES = (REVIEW_MIB - CHECK_MIB) * 2**20
#: The most decoding and parsing a body may take at its peak (its text, the parser's memo of
#: keys, a string or table growing): the whole allowance, the review holding nothing else yet
#: (the body's own bytes are the bodies' budget's until it is parsed).
PARSING_BYTES = REVIEW_MIB * 2**20
#: The most findings the engine makes for one review (those the policies decide, pending
#: and waived ones included); past it the rules stop, and the review is denied, fail closed
#: (`Checker(most_findings=...)`).  A real object makes a handful; each costs about 1 KiB
#: (its message, path and record), and a Pod of 28,000 containers each naming a claim it
#: does not declare made 28,000, 42 MiB at once, over the review's 32 MiB.
MAX_FINDINGS = 256
#: How many findings (and errors) a denial, and the warnings of an answer, list; the rest
#: are counted.  An answer stays a few KiB: the API server hands it to the client.
LISTED_FINDINGS = 32
#: The rule a reservation is checked for: the scrubber a pod runs before it gets the devices.
SCRUB_RULE = "DRA016"
#: The rule that says whether two pods may use one claim (a reservation for a second pod).
SHARED_CLAIM_RULE = "DRA005"
#: The operations whose AdmissionRequest has no `object`.
OBJECTLESS_OPERATIONS = ("DELETE", "CONNECT")


class TemplateSource(Protocol):
    """Claim templates of a namespace, by name (the cluster's, for cross-object rules).

    `get` returns None when there is no such template, and raises `TemplateLookupError`
    when it cannot tell. A source that also has `get_claim(namespace, name)`, answering the
    same way for ResourceClaims (`ClaimSource`), has the claims pods name looked up too."""

    def get(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...


class ClaimSource(Protocol):
    """ResourceClaims of a namespace, by name, as `TemplateSource.get` answers for templates."""

    def get_claim(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...


#: What a pod spec's `resourceClaims` entry names: (kind, name).
Named = tuple[str, str]
TEMPLATE_KIND = "ResourceClaimTemplate"
CLAIM_KIND = "ResourceClaim"


class TemplateLookupError(Exception):
    """A claim template could not be read; the message names it and says what failed."""


class NoTemplates:
    def get(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return None


#: Where a pod's service account credentials are mounted (a projected volume, whose token
#: the kubelet rotates: the client reads it again, at most a minute after it changes).
SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


class KubernetesTemplates:
    """Reads ResourceClaimTemplates (and ResourceClaims, `get_claim`) from the API server
    with the `kubernetes` client.

    `in_cluster()` configures it as a pod: the API server from `KUBERNETES_SERVICE_HOST` and
    `_PORT`, its CA and the service-account token from the mounted files, the token re-read
    as the kubelet rotates it (the client's in-cluster loader). A 404 means the template
    does not exist; every other failure raises `TemplateLookupError`, and the review denies.
    """

    def __init__(self, api_client: Any, *, api_version: str = "resource.k8s.io/v1", timeout: float = 1.0) -> None:
        #: A `kubernetes.client.ApiClient`.
        self.api_client = api_client
        self.api_version = api_version
        #: Seconds for one lookup, connecting and reading (the review's deadline is 4).
        self.timeout = timeout

    @classmethod
    def in_cluster(
        cls,
        *,
        token_file: str = f"{SERVICE_ACCOUNT}/token",
        ca_file: str = f"{SERVICE_ACCOUNT}/ca.crt",
        environ: Mapping[str, str] = os.environ,
        api_version: str = "resource.k8s.io/v1",
        timeout: float = 1.0,
    ) -> KubernetesTemplates:
        """The client a pod has: raises `ValueError` when the pod's environment or files lack it."""
        from kubernetes.client import ApiClient, Configuration
        from kubernetes.config.config_exception import ConfigException
        from kubernetes.config.incluster_config import InClusterConfigLoader

        configuration = Configuration()
        try:
            loader = InClusterConfigLoader(  # type: ignore[no-untyped-call]
                token_filename=token_file, cert_filename=ca_file, try_refresh_token=True, environ=environ
            )
            loader.load_and_set(configuration)  # type: ignore[no-untyped-call]
        except ConfigException as error:
            raise ValueError(f"cannot configure the Kubernetes client in the pod: {error}") from None
        # One attempt: a failure is an answer (the review denies), and the deadline is short.
        configuration.retries = False
        return cls(ApiClient(configuration), api_version=api_version, timeout=timeout)

    def get(
        self, namespace: str, name: str, *, timeout: float | None = None, kind: str = TEMPLATE_KIND
    ) -> Mapping[str, Any] | None:
        """The template (or claim, for `kind` ResourceClaim), None on a 404; `timeout` (at most
        `self.timeout`) for connecting and for reading."""
        from kubernetes.client import CustomObjectsApi
        from kubernetes.client.exceptions import ApiException

        group, _, version = self.api_version.rpartition("/")
        which = f"{kind} {namespace}/{name}"
        request_timeout = self.timeout if timeout is None else max(0.01, min(timeout, self.timeout))
        until = time.monotonic() + request_timeout
        most = MAX_POD_BYTES if kind == "Pod" else MAX_TEMPLATE_BYTES
        try:
            # The object as JSON, not as the client's model: the engine reads manifests.
            if kind == "Pod":
                from kubernetes.client import CoreV1Api

                response: Any = CoreV1Api(self.api_client).read_namespaced_pod(
                    name, namespace, _preload_content=False, _request_timeout=request_timeout
                )
            else:
                response = CustomObjectsApi(self.api_client).get_namespaced_custom_object(
                    group,
                    version,
                    namespace,
                    KIND_RESOURCES[kind][1],
                    name,
                    _preload_content=False,
                    _request_timeout=request_timeout,
                )
            # One byte past the most a template may be, no more: etcd's 1.5 MiB read whole
            # for each of 8 lookups of 4 reviews came to 48 MiB.
            whole = False
            try:
                arrived = _read_by(response, most + 1, until)
                whole = arrived is not None and len(arrived) <= most
            finally:
                # A connection with an answer left unread cannot serve another request.
                if whole:
                    response.release_conn()
                else:
                    response.close()
            if arrived is None:
                raise TemplateLookupError(f"{which}: the answer did not arrive within {request_timeout:g} s")
            body = arrived
            if not whole:
                noun = {"Pod": "pod", CLAIM_KIND: "claim"}.get(kind, "template")
                raise TemplateLookupError(f"{which}: more than the {most:,} bytes the webhook reads for one {noun}")
        except ApiException as error:
            if error.status == 404:
                return None
            reason = f" {error.reason}" if error.reason else ""
            raise TemplateLookupError(f"{which}: the API server answered HTTP {error.status}{reason}") from None
        except Exception as error:  # timeouts, refused connections, TLS: urllib3's and the client's
            raise TemplateLookupError(f"{which}: {type(error).__name__}: {error}") from None
        try:
            found = json.loads(body)
        except (TypeError, ValueError, RecursionError):
            raise TemplateLookupError(f"{which}: the API server's answer is not JSON") from None
        metadata = found.get("metadata") if isinstance(found, dict) else None
        if (
            not isinstance(found, dict)
            or found.get("kind") != kind
            or not isinstance(metadata, dict)
            or metadata.get("name") != name
        ):
            raise TemplateLookupError(f"{which}: the API server's answer is not that {kind}")
        return found

    def get_claim(self, namespace: str, name: str, *, timeout: float | None = None) -> Mapping[str, Any] | None:
        """The ResourceClaim, None on a 404 (`get`)."""
        return self.get(namespace, name, timeout=timeout, kind=CLAIM_KIND)

    def get_pod(self, namespace: str, name: str, *, timeout: float | None = None) -> Mapping[str, Any] | None:
        """The Pod, None on a 404 (`get`): the pod a claim is being reserved for."""
        return self.get(namespace, name, timeout=timeout, kind="Pod")


#: Reviews of bodies up to this size, with the cached templates they name, that read
#: nothing from the API server (`Webhook._cached_templates`) and hold no CEL the parser
#: must read (`_cel_to_parse`) run on the event loop: the engine takes a few milliseconds at
#: most on them, so the probes and other connections wait no longer than that.
INLINE_REVIEW_BYTES = 64 * 1024


def _read_by(response: Any, most: int, until: float) -> bytes | None:
    """At most `most` bytes of `response`'s body (a urllib3 response), or None when it has
    not all arrived by `until` (`time.monotonic`).  The client's timeout is for each read
    of the socket, not for the answer: an answer that came a byte at a time, each within
    it, took 7 s for 136 bytes under a timeout of 1 s, its review's slot held all along.
    Now the answer is read a socket read at a time until `until`, which it overshoots by
    one read at most (the client's own timeout)."""
    chunks: list[bytes] = []
    size = 0
    while size < most:
        if time.monotonic() > until:
            return None
        chunk = response.read1(most - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


class _TemplateCache:
    """Lookups of the last `ttl` seconds, found or not (never failures), by (namespace,
    kind, name): at most `size` of them and `most_bytes` of their JSON, none of more than
    `entry_bytes`. Templates only: a template's spec is immutable. A claim is read afresh
    for every review (it may be deleted and created again under its name)."""

    def __init__(
        self,
        ttl: float,
        size: int,
        most_bytes: int = TEMPLATE_CACHE_BYTES,
        entry_bytes: int = TEMPLATE_CACHE_ENTRY_BYTES,
    ) -> None:
        self.ttl, self.size, self.most_bytes, self.entry_bytes = ttl, size, most_bytes, entry_bytes
        #: key -> (when it expires, the template or None, its JSON bytes); the oldest first.
        self._entries: OrderedDict[tuple[str, str, str], tuple[float, Mapping[str, Any] | None, int]] = OrderedDict()
        self.held_bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, str]) -> tuple[bool, Mapping[str, Any] | None]:
        hit, value, _ = self.entry(key)
        return hit, value

    def entry(self, key: tuple[str, str, str]) -> tuple[bool, Mapping[str, Any] | None, int]:
        """Whether `key` is cached, its template (None: there is none) and its JSON bytes."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] <= time.monotonic():
                self._drop(key)
                return False, None, 0
            return True, entry[1], entry[2]

    def put(self, key: tuple[str, str, str], value: Mapping[str, Any] | None) -> None:
        if self.ttl <= 0:
            return
        weight = 0 if value is None else len(json.dumps(value, separators=(",", ":")))
        now = time.monotonic()
        with self._lock:
            self._drop(key)
            if weight > self.entry_bytes:
                return
            self._entries[key] = (now + self.ttl, value, weight)
            self.held_bytes += weight
            # Every entry lives as long: the oldest go first, when expired or when too many.
            while self._entries and (
                len(self._entries) > self.size
                or self.held_bytes > self.most_bytes
                or next(iter(self._entries.values()))[0] <= now
            ):
                self._drop(next(iter(self._entries)))

    def _drop(self, key: tuple[str, str, str]) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self.held_bytes -= entry[2]


@dataclass
class Webhook:
    """The ASGI application."""

    registry: Registry
    config: Config
    templates: TemplateSource = field(default_factory=NoTemplates)
    fail_on: Severity = Severity.MEDIUM
    #: Deny on every finding, not only on what the policies cannot decide (clusters
    #: without the ValidatingAdmissionPolicies).
    all_rules: bool = False
    max_body: int = DEFAULT_MAX_BODY
    #: Seconds for a review without the API server's `?timeout=`.
    deadline: float = DEFAULT_DEADLINE_SECONDS
    ready: bool = True
    #: Reviews parsed and checked at once; the others wait for a slot (SLOT_WAIT_SECONDS at most).
    max_reviews: int = DEFAULT_MAX_REVIEWS
    #: Bytes of request bodies received and not yet parsed (bodies are read before a slot is
    #: taken); a body that would go past it is refused with 429, unless stalled bodies make
    #: way for it.
    body_bytes: int = DEFAULT_BODY_BYTES
    #: Seconds after its head that a body still arriving is stalled (`_BodyBudget`).
    stalled_body: float = STALLED_BODY_SECONDS
    max_templates: int = MAX_TEMPLATE_LOOKUPS
    #: Bytes of CEL the parser may read for one review; an object with more is denied.
    max_cel_parse_bytes: int = MAX_CEL_PARSE_BYTES
    cache_seconds: float = TEMPLATE_CACHE_SECONDS
    #: The serving certificate: /readyz fails while it is not valid.
    certificate: ServingCertificate | None = None

    def __post_init__(self) -> None:
        target = AdmissionTarget(self.config)
        covered = covered_rules(self.registry, target)
        self._admissions = {each.rule.id: each.admission for each in covered}
        # The engine runs without the rules whose every finding the policies decide: the
        # webhook would drop all they find (on an object of another API group than the
        # policies match, such as a CRD named ResourceClaim, they run: `_engine_config`).
        left = [each.rule for each in covered if not self.all_rules and _policy_decides_all(each.rule, each.admission)]
        self._left_to_policies = frozenset(rule.id for rule in left)
        self._left_kinds = frozenset(kind for rule in left for kind in rule.kinds or ())
        self._without_left = self.config.with_value(DISABLE, self.config.get(DISABLE) | self._left_to_policies)
        writers: tuple[str, ...] = self.config.get(ADMISSION_CLAIM_WRITERS)
        self._claim_writers = frozenset(writers)
        controllers: tuple[str, ...] = self.config.get(ADMISSION_WORKLOAD_CONTROLLERS)
        self._workload_controllers = frozenset(controllers)
        self._cache = _TemplateCache(self.cache_seconds, TEMPLATE_CACHE_SIZE)
        #: Whether the source reads the claims pods name too (`ClaimSource`).
        self._reads_claims = callable(getattr(self.templates, "get_claim", None))
        #: Whether it reads pods, which reservations are checked against (`get_pod`).
        self._reads_pods = callable(getattr(self.templates, "get_pod", None))
        self._executor: ThreadPoolExecutor | None = None
        self._slots: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore, asyncio.BoundedSemaphore] | None = None
        self._lock = threading.Lock()
        if self.body_bytes < self.max_body:
            raise ValueError(
                f"the budget for request bodies in flight ({self.body_bytes} bytes) is smaller than the largest body "
                f"accepted ({self.max_body} bytes)"
            )
        self._bodies = _BodyBudget(self.body_bytes, self.stalled_body)
        #: Bytes of the bodies waiting for a place among the parsers (`_placed`).
        self._waiting_bytes = 0
        self._waiting_bytes_limit = self.body_bytes // 4
        # With ResourceSlices configured, DRA014 compiles every selector with cel-python
        # (and runs it on every device), the plain pins the fast path reads included: then
        # every selector counts as CEL to parse (`_cel_bytes`).
        slices = self.registry.options.get("resource-slices")
        self._compiles_every_selector = (
            slices is not None
            and bool(getattr(self.config.get(slices), "slices", ()))
            and "DRA014" not in self.config.get(DISABLE)
        )

    @property
    def body_bytes_in_flight(self) -> int:
        """Bytes of request bodies received and not yet parsed, now."""
        return self._bodies.held

    # --- HTTP --------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":  # pragma: no cover - uvicorn sends only http and lifespan
            return
        exchange = _Exchange(send)
        try:
            await self._http(scope, receive, exchange)
        except Exception as error:
            # Whatever went wrong, the API server gets JSON: a denial once the uid is known.
            log_event(
                event="internal error",
                uid=exchange.uid,
                path=scope.get("path", ""),
                error=f"{type(error).__name__}: {error}",
                traceback="".join(traceback.format_exception(type(error), error, error.__traceback__)),
            )
            if exchange.started:
                return
            if exchange.uid is not None:
                await _respond(exchange, 200, _review_answer(_internal_error(exchange.uid, error)))
            else:
                await _respond(exchange, 500, {"error": f"dra-guard webhook: internal error ({type(error).__name__})"})

    async def probes(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The probe port's application: /healthz and /readyz only."""
        if scope["type"] != "http":  # pragma: no cover - the probe port runs without lifespan
            return
        if not await self._probe(scope, send):
            await _respond(send, 404, {"error": "not found"})

    async def _probe(self, scope: Scope, send: Send) -> bool:
        path, method = scope.get("path", ""), scope.get("method", "")
        if path not in ("/healthz", "/readyz") or method != "GET":
            return False
        problem = None if path == "/healthz" else self.readiness_problem()
        if problem is None:
            await _respond(send, 200, {"status": "ok"})
        else:
            await _respond(send, 503, {"status": "not ready", "reason": problem})
        return True

    def readiness_problem(self) -> str | None:
        """Why /readyz fails, or None."""
        if not self.ready:
            return "not ready"
        return None if self.certificate is None else self.certificate.problem()

    async def _http(self, scope: Scope, receive: Receive, send: _Exchange) -> None:
        if await self._probe(scope, send):
            return
        path, method = scope.get("path", ""), scope.get("method", "")
        if path != "/validate":
            await _respond(send, 404, {"error": "not found"})
            return
        if method != "POST":
            await _respond(send, 405, {"error": "use POST"})
            return
        clock = _Clock.start(*_query_deadline(scope.get("query_string", b""), self.deadline))
        length = _content_length(scope)
        if length is not None and length > self.max_body:
            log_event(event="refused", reason="body too large", limit=self.max_body, length=length)
            await _respond(send, 413, {"error": f"request body larger than {self.max_body} bytes"})
            return
        # The body first, held in the budget of body bytes, then a review slot: a body that
        # arrives slowly holds only the bytes it has sent, never a slot.
        body = await _read_body(receive, self.max_body, clock.deadline, self._bodies)
        if isinstance(body, _Refusal):
            if body.status:
                log_event(event="refused", reason=body.reason, limit=body.limit, ms=clock.ms())
                await _respond(send, body.status, {"error": body.reason}, body.headers)
            return
        size = len(body)
        slots, parsers = self._semaphores()
        until = min(clock.deadline, time.monotonic() + SLOT_WAIT_SECONDS)
        try:
            placed = await self._placed(body, slots, parsers, until, send)
        finally:
            # Parsed in the slot, which holds what the body became; the bytes leave the budget.
            self._bodies.give(size)
            del body
        if isinstance(placed, str):
            limit, message = self._refusal(placed)
            log_event(event="refused", reason=placed, limit=limit, ms=clock.ms())
            await _respond(send, 429, {"error": message}, [(b"retry-after", b"1")])
            return
        parsed, place = placed
        await self._answer(parsed, send, slots=slots, place=place, size=size, clock=clock)

    async def _placed(
        self,
        body: bytes,
        slots: asyncio.Semaphore,
        parsers: asyncio.BoundedSemaphore,
        until: float,
        exchange: _Exchange,
    ) -> tuple[_Parsed, _Held | None] | str:
        """`body` parsed in a review slot, with the place it holds among the reviews that may
        parse CEL when it may (`_parse`); or why not ("overloaded", "parsing CEL", "waiting
        bodies"), by `until`.

        Reviews that may parse CEL hold all the slots but one, so that a review with nothing
        to parse always finds one: crafted reviews of 16 KiB of CEL each, sent on 128
        connections at 400 KB/s, held every slot and queue, and so did Pods naming templates
        of distinct CEL.  Only what the review will read decides (a Pod whose args say
        `expression` parses nothing), so other reviews never wait behind the parsers.
        A place is taken at once when one is free; otherwise the slot is given back with
        what the body became, and the review waits for a place, then a slot (waits always in
        that order: no two requests wait on each other), and parses the body again.  Parsed
        again, it may parse nothing after all (the templates it names were cached meanwhile,
        with nothing to parse): the place is given back then.  The body waits in the
        budget of body bytes, which nothing can make give way: the bodies waiting so hold a
        quarter of it at most (one alone may wait whatever its size), or a few reviews kept
        waiting behind the parsers, 16 MiB of them, would have every other request refused."""
        if not await _take(slots, until):
            return "overloaded"
        try:
            parsed = self._parse(body, exchange)
            if not parsed.may_parse:
                return parsed, None
            if not parsers.locked():
                await parsers.acquire()  # free: taken without a wait
                return parsed, _Held(parsers)
        except BaseException:
            slots.release()
            raise
        slots.release()
        del parsed
        size = len(body)
        if self._waiting_bytes and self._waiting_bytes + size > self._waiting_bytes_limit:
            return "waiting bodies"  # one body alone always waits: with 128Mi, 3 MiB is past the quarter
        self._waiting_bytes += size
        try:
            placed = await _take(parsers, until)
        finally:
            self._waiting_bytes -= size
        if not placed:
            return "parsing CEL"
        try:
            if not await _take(slots, until):
                parsers.release()
                return "overloaded"
        except BaseException:
            parsers.release()
            raise
        try:
            parsed = self._parse(body, exchange)
        except BaseException:
            slots.release()
            parsers.release()
            raise
        if not parsed.may_parse:
            parsers.release()
            return parsed, None
        return parsed, _Held(parsers)

    def _parse(self, body: bytes, exchange: _Exchange | None = None) -> _Parsed:
        """The review in `body` (or why it is none; its uid told to `exchange` at once, so
        that any error after is a denial of it), the bytes of CEL its object holds that the
        parser must read (`_cel_to_parse`: none for a claim the control plane writes, which
        is admitted unchecked), the claim templates it names as the cache has them
        (`_cached_templates`), and whether it may parse CEL: its object's, or that of
        templates it names that are not in the cache or hold CEL not parsed before."""
        review, problem = _parse_review(body)
        if review is None:
            return _Parsed(None, problem, 0, False, None)
        request = review["request"]
        if exchange is not None:
            exchange.uid = request["uid"]
        obj = request.get("object")
        if is_reservation(request):
            # It looks the pod up (never on the event loop: no cache answers it) and parses
            # the claim's CEL, which its admission capped.
            return _Parsed(review, problem, 0, False, None)
        unchanged = None
        if isinstance(obj, Mapping):
            if self._written_by_claim_writer(request, obj):
                return _Parsed(review, problem, 0, False, _NONE_CACHED)
            # Asked once for the request, and the review told: comparing an UPDATE's two
            # objects walks both, and the review would ask again.
            unchanged = _changes_nothing_rules_read(request)
            if unchanged:
                return _Parsed(review, problem, 0, False, _NONE_CACHED, unchanged)
        cel_bytes = self._cel_bytes(obj, self.max_cel_parse_bytes) if _EXPRESSION_KEY.search(body) else 0
        if cel_bytes > self.max_cel_parse_bytes:
            return _Parsed(review, problem, cel_bytes, False, _NONE_CACHED, unchanged)  # denied unparsed, nothing read
        cached = self._cached_templates(request)
        parses = bool(cel_bytes) or cached is None or cached.parses_now
        return _Parsed(review, problem, cel_bytes, parses, cached, unchanged)

    def _cel_bytes(self, value: Any, most: int, *, unless_kept: bool = False) -> int:
        """`_cel_to_parse` as this webhook reads CEL: every selector where DRA014 compiles
        them all (ResourceSlices configured)."""
        return _cel_to_parse(value, most, unless_kept=unless_kept, every=self._compiles_every_selector)

    async def _answer(
        self,
        parsed: _Parsed,
        send: _Exchange,
        *,
        slots: asyncio.Semaphore,
        place: _Held | None,
        size: int,
        clock: _Clock,
    ) -> None:
        """Review a parsed body in the slot taken for it, and the place among the parsers
        where it may parse CEL; both are given back here, or by the review's thread (the
        place as soon as it knows it parses nothing), or when it is done."""
        review = parsed.review
        if review is None:  # which parses nothing, so holds no place among the parsers
            slots.release()
            log_event(event="refused", reason=parsed.problem)
            await _respond(send, 400, {"error": parsed.problem})
            return
        # Until a review's thread takes them over, they are given back here, whatever
        # happens: a slot lost to an internal error would be lost for good.
        handed = False
        try:
            request = review["request"]
            send.uid = request["uid"]
            cel_bytes = parsed.cel_bytes
            # The lookups share the review's deadline, leaving the engine and the answer a moment.
            review_call = functools.partial(
                self.review,
                request,
                deadline=clock.lookups_until,
                checks_until=clock.deadline,
                cel_bytes=cel_bytes,
                place=place,
                unchanged=parsed.unchanged,
            )
            cached = parsed.cached
            if cached is not None:
                # The templates found in the cache when its place was decided: no lookup
                # (none on the loop), nothing else than what decided it.
                review_call = functools.partial(review_call, cached=cached.templates)
            if (
                place is None
                and not cel_bytes
                and cached is not None
                and not cached.parses
                and size + cached.weight <= INLINE_REVIEW_BYTES
            ):
                # Reviewed on the loop, at once: less than a thread's round trip costs.  Such
                # a review of a small object takes well under a millisecond
                # (bench/webhook_load.py); one that may wait on a lookup, or on the parser,
                # never runs here (a Pod naming cached templates of CEL froze the loop).
                response, error = _inline(review_call, request["uid"])
            else:
                # A review whose object holds CEL the fast path does not read parses it in
                # pure Python at some 30 us a byte: in a thread, so that a crafted selector
                # cannot hold the loop (and the probes) for seconds.
                future = asyncio.get_running_loop().run_in_executor(self._pool(), review_call)
                # Given back when the review's thread is done, not at the deadline: a review
                # that overran still holds its memory, and its parser runs on.
                future.add_done_callback(functools.partial(_release, slots, place))
                handed = True
                response, error = await _awaited(future, clock, request["uid"])
        finally:
            if not handed:
                slots.release()
                if place is not None:
                    place.give()
        _log_review(request, response, error, clock)
        await _respond(send, 200, _review_answer(response))

    def _cached_templates(self, request: Mapping[str, Any]) -> _Cached | None:
        """The claim templates the review names, by name, as the cache has them (a template
        that does not exist is cached as None), with their JSON bytes and whether their
        selectors hold CEL to parse; None when one is not in the cache.  Nothing to read
        (no template source, no name, or more names than are read: denied before any
        lookup) is an empty `_Cached`.  The review is handed these templates, so that what
        it checks is what decided its place, even if the cache drops them meanwhile."""
        obj = request.get("object")
        if isinstance(self.templates, NoTemplates) or not isinstance(obj, Mapping):
            return _NONE_CACHED
        names = self._named(obj)  # the namespace the object lands in changes no name
        if len(names) > self.max_templates:
            return _NONE_CACHED
        namespace = str(request.get("namespace") or "")
        found: dict[Named, Mapping[str, Any] | None] = {}
        weight, parses, parses_now = 0, False, False
        for named in names:
            hit, template, size = self._cache.entry((namespace, *named))
            if not hit:
                return None
            found[named], weight = template, weight + size
            if template is not None and self._cel_bytes(template, 0):
                parses = True
                parses_now = parses_now or bool(self._cel_bytes(template, 0, unless_kept=True))
        return _Cached(found, weight, parses, parses_now)

    def _refusal(self, reason: str) -> tuple[int, str]:
        """The limit that refused a request for `reason` (`_placed`), and the 429's message."""
        if reason == "overloaded":
            return self.max_reviews, f"dra-guard webhook: {self.max_reviews} reviews in flight; none finished in time"
        if reason == "parsing CEL":
            limit = self._parser_limit
            return limit, f"dra-guard webhook: {limit} reviews parsing CEL selectors in flight; none finished in time"
        limit = self._waiting_bytes_limit
        return limit, (
            f"dra-guard webhook: {self._parser_limit} reviews parsing CEL selectors in flight, and "
            f"{self._waiting_bytes:,} bytes of request bodies waiting for them (at most {limit:,} may); try again"
        )

    @property
    def _parser_limit(self) -> int:
        """Reviews that may parse CEL at once: all but one of the slots."""
        return max(1, self.max_reviews - 1)

    def _semaphores(self) -> tuple[asyncio.Semaphore, asyncio.BoundedSemaphore]:
        """The review slots and the places among the reviews parsing CEL, of the running loop."""
        loop = asyncio.get_running_loop()
        if self._slots is None or self._slots[0] is not loop:
            self._slots = (loop, asyncio.Semaphore(self.max_reviews), asyncio.BoundedSemaphore(self._parser_limit))
        return self._slots[1], self._slots[2]

    def _pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=self.max_reviews, thread_name_prefix="dra-guard-review")
            return self._executor

    # --- the review --------------------------------------------------------------

    def review(
        self,
        request: Mapping[str, Any],
        *,
        deadline: float | None = None,
        checks_until: float | None = None,
        cel_bytes: int | None = None,
        cached: Mapping[Named, Mapping[str, Any] | None] | None = None,
        place: _Held | None = None,
        unchanged: bool | None = None,
    ) -> dict[str, Any]:
        """The AdmissionReview response for one request; template lookups end by `deadline`
        (`time.monotonic()`; default: `self.deadline` from now), selectors are evaluated on
        devices until `checks_until` (default: no end).  `place`: the place among the parsers
        the review holds, given back once it knows it parses nothing.  `cel_bytes`: what
        `_cel_to_parse` says of it, when the caller has asked already; `cached`: the
        templates and claims it names, already found in the cache (none is looked up then);
        `unchanged`: whether the request is an UPDATE that changes nothing a rule reads
        (`_changes_nothing_rules_read`), when the caller has asked already."""
        if deadline is None:
            deadline = time.monotonic() + self.deadline
        if cel_bytes is None:
            cel_bytes = self._cel_bytes(request.get("object"), self.max_cel_parse_bytes)
        obj = request.get("object")
        uid = request["uid"]
        operation = str(request.get("operation") or "")
        if not isinstance(obj, Mapping):
            if operation in OBJECTLESS_OPERATIONS:
                return {"uid": uid, "allowed": True}
            return _denial(
                uid,
                f"dra-guard webhook: the {operation or 'request'} carries no object to review; denied "
                f"(only {' and '.join(OBJECTLESS_OPERATIONS)} may have none)",
            )
        beyond = past_api_limits(obj)
        if beyond is not None:
            # The API server validates an object before any validating webhook sees it, so it
            # never sends one past these; whoever does is not it (a claim of 8,000 requests
            # held a review for 24 s).
            return _denial(uid, f"dra-guard webhook: {beyond}, which the API server refuses; denied unchecked")
        beyond = past_pod_bounds(obj)
        if beyond is not None:
            # The API server lets these through (it bounds the object's size only); no real
            # workload comes near, and the rules' work and findings grow with each.
            return _denial(
                uid,
                f"dra-guard webhook: the {obj.get('kind') or 'object'} is too large to review: {beyond}; denied "
                "unchecked (split the workload)",
            )
        if is_reservation(request):
            return self._review_reservation(request, obj, deadline, checks_until)
        if self._written_by_claim_writer(request, obj):
            return {"uid": uid, "allowed": True}
        if unchanged is None:
            unchanged = _changes_nothing_rules_read(request)
        if unchanged:
            # The control plane's cleanup (a finalizer or an owner reference taken away):
            # denied for what the object is now (its template deleted), it would strand it.
            return {"uid": uid, "allowed": True}
        if cel_bytes > self.max_cel_parse_bytes:
            return self._too_much_cel(uid, f"the {obj.get('kind') or 'object'} holds")
        namespace = str(request.get("namespace") or "")
        reviewed = _with_namespace(obj, namespace)
        names = self._named(reviewed)
        if len(names) > self.max_templates:
            what = "ResourceClaimTemplates and ResourceClaims" if self._reads_claims else "ResourceClaimTemplates"
            return _denial(
                uid,
                f"dra-guard webhook: the {obj.get('kind') or 'object'} names {len(names)} {what} "
                f"in its pods' resourceClaims; the webhook reads at most {self.max_templates} for one review, so "
                "the claim rules cannot be checked; denied",
            )
        templates, failures = self._templates_named(names, namespace, deadline, cached or {})
        if failures:
            # The rules that need these templates cannot be checked: fail closed.
            return _denial(
                uid,
                "; ".join(
                    f"dra-guard webhook: cannot read {failure}, so the claim rules cannot be checked; denied"
                    for failure in failures
                ),
            )
        # Their selectors are parsed too: they count against the same cap (a Pod naming 8
        # templates of 16 KiB of CEL each held a slot for 2.5 s, every time).
        left = self.max_cel_parse_bytes - cel_bytes
        for template in templates:
            left -= self._cel_bytes(template, left)
            if left < 0:
                named = "claim templates and claims" if self._reads_claims else "claim templates"
                holder = f"the {obj.get('kind') or 'object'} and the {named} it names hold"
                return self._too_much_cel(uid, holder)
        missing = self._missing_templates(obj, names, templates)
        if missing:
            return _denial(
                uid,
                "; ".join(
                    f"dra-guard webhook: the Pod names {kind} {namespace}/{name}, which does not exist (yet), so "
                    f"{'its claim' if kind == TEMPLATE_KIND else 'it'} cannot be checked against this pod; denied "
                    f"(create the {'template' if kind == TEMPLATE_KIND else 'claim'} first: a controller retries "
                    "its pods, and they are admitted once it exists)"
                    for kind, name in missing
                ),
            )
        if place is not None and not cel_bytes and not any(self._cel_bytes(t, 0, unless_kept=True) for t in templates):
            place.give()  # nothing to parse after all: another review may have it now
        # A selector tried on every device of large ResourceSlices (DRA014, where they are
        # configured) could hold the review's thread, and its slot, long past the answer.
        with evaluations_until(checks_until):
            report, stopped = _check(
                reviewed,
                templates,
                self._engine_config(reviewed),
                MAX_FINDINGS,
                owner_references=self._written_by_workload_controller(request),
            )
        mine = [finding for finding in report.findings if finding.origin == "review" and self._decides(finding)]
        blocking = [finding for finding in mine if finding.severity >= self.fail_on]
        warnings = _listed([_message(finding) for finding in mine if finding.severity < self.fail_on], "warnings")
        errors = [str(error) for error in report.errors]
        if not blocking and not errors:
            response: dict[str, Any] = {"uid": uid, "allowed": True}
            if warnings:
                response["warnings"] = warnings
            return response
        # Errors first: one says the rules stopped short, which no finding listed says.
        listed = _listed([*errors, *(_message(finding) for finding in blocking)], "errors and findings")
        if stopped:
            listed.insert(0, _stopped_unfinished(bool(blocking)))
        return _denial(uid, "; ".join(listed), warnings)

    def _missing_templates(
        self, obj: Mapping[str, Any], names: Sequence[Named], found: Sequence[Mapping[str, Any]]
    ) -> list[Named]:
        """The templates and claims a Pod names that the API server does not have (a 404,
        not a failure).

        Such a pod is denied: were it admitted, the claim made once the template appears (or
        the claim created afterwards) would give it its devices, and nothing would check it
        against this pod (DRA016: no scrubber for a GPU claim created afterwards).  Only Pods: a controller
        (a Helm release creating its Deployment before its template) is admitted, and its pods,
        which the controller retries, are checked when they are made.  Without a template
        source (`NoTemplates`) nothing is looked up, so nothing is known to be missing."""
        if isinstance(self.templates, NoTemplates) or obj.get("kind") != "Pod" or obj.get("apiVersion") != "v1":
            return []
        present = {(str(each.get("kind")), str((each.get("metadata") or {}).get("name") or "")) for each in found}
        return [named for named in names if named not in present]

    def _review_reservation(
        self, request: Mapping[str, Any], claim: Mapping[str, Any], deadline: float, checks_until: float | None
    ) -> dict[str, Any]:
        """A claim's status update that reserves it for pods (`reservations`): each pod newly
        added is checked with this claim for DRA016, as at its admission; a pod that cannot
        be read, or that no pod claim of which gets this claim, denies the update (the pod
        stays pending, and the scheduler tries again)."""
        uid = request["uid"]
        namespace = str(request.get("namespace") or "")
        claim_name = str((claim.get("metadata") or {}).get("name") or "")
        reserved = _with_namespace(claim, namespace)
        where = f"dra-guard webhook: reserving ResourceClaim {namespace}/{claim_name}"
        # Asked of DRA016 at most once an update, and only where a group or the scheduler's
        # extended-resource claim needs the answer.
        needs_scrubber = functools.cache(lambda: self._needs_scrubber(reserved, checks_until))
        groups = new_groups(claim, request.get("oldObject"))
        if groups and needs_scrubber():
            return _denial(
                uid,
                "; ".join(
                    f"{where} for {group}: DRA016: a claim the scrubber must wipe before each use is given to "
                    "every pod of the group at once, where one pod's scrubber would wipe the memory the others "
                    "use, and the update names none of them; denied (give each pod its own claim from a template)"
                    for group in groups
                ),
            )
        if shares_a_pod_claim(claim, request.get("oldObject")):
            # Whoever the pods are: a tenant may have taken away the ownerReference that
            # made the claim another pod's (DRA005 then sees no owner at the pod's admission),
            # or a pod outside a pod group may name the group's claim.
            shared = self._shared_by_two_pods(reserved, namespace, deadline, checks_until)
            if shared:
                return _denial(uid, "; ".join(f"{where}: {each}" for each in shared))
        pods = new_pods(claim, request.get("oldObject"))
        if not pods or not self._reads_pods:
            return {"uid": uid, "allowed": True}  # no reservation added, or nothing to read pods with
        if len(pods) > self.max_templates:
            return _denial(
                uid,
                f"dra-guard webhook: the update reserves the claim for {len(pods)} pods at once; the webhook reads "
                f"at most {self.max_templates} for one review; denied",
            )
        denials: list[str] = []
        for name, pod_uid in pods:
            which = f"Pod {namespace}/{name}"
            try:
                pod = self._read("Pod", namespace, name, deadline)
            except TemplateLookupError as error:
                denials.append(f"cannot read {error}, so the claim cannot be checked against the pod")
                continue
            if pod is None or str((pod.get("metadata") or {}).get("uid") or "") != pod_uid:
                denials.append(f"the claim is reserved for {which} (uid {pod_uid}), which the API server does not have")
                continue
            using = pod_using(_with_namespace(pod, namespace), reserved)
            if using is None:
                if not is_extended_resource_claim(claim):
                    denials.append(f"the claim is reserved for {which}, no pod claim of which gets it")
                elif needs_scrubber():
                    # A name no DeviceClass or configuration dra-guard saw mapped passed DRA001;
                    # the cluster's class maps it to devices the scrubber must wipe.
                    denials.append(
                        f"DRA016: the scheduler's claim for the extended resources of {which} is of a class the "
                        "scrubber must wipe before each use, and no pod claim, so no scrubber, can hold it (ask "
                        "for the device with a claim template)"
                    )
                continue
            found = self._denying(SCRUB_RULE, using, [reserved], self._engine_config(using), checks_until)
            denials += [_message(finding) for finding in found if finding.origin == "review"]
        if not denials:
            return {"uid": uid, "allowed": True}
        return _denial(uid, "; ".join(f"{where}: {each}" for each in denials))

    def _shared_by_two_pods(
        self, claim: Mapping[str, Any], namespace: str, deadline: float, checks_until: float | None
    ) -> list[str]:
        """What DRA005 says of the consumers of `claim`, which the update reserves for a second
        one (a pod, or a pod group whose pods all use it): nothing where the claim asks for no
        accelerator or the configuration waives it.  Where only pods hold it, each is read and
        checked with the others, as `check` checks pods that name one claim, so each pod's own
        `ignore-DRA005` waives its finding, and every pod must waive it; a pod that cannot be
        read, or a pod group (whose pods the update does not name), leaves the finding of two
        pods that waive nothing."""
        stand_ins = [group_member(claim, name) for name in ("reserved-pod", "second-reserved-pod")]
        unwaived = [
            _message(finding)
            for finding in self._denying(
                SHARED_CLAIM_RULE, stand_ins[0], [stand_ins[1], claim], self.config, checks_until
            )
        ]
        pods = reserved_pods(claim)
        if not unwaived or reserved_groups(claim) or not self._reads_pods or len(pods) > self.max_templates:
            return unwaived
        using: list[Mapping[str, Any]] = []
        for name, pod_uid in pods:
            try:
                pod = self._read("Pod", namespace, name, deadline)
            except TemplateLookupError:
                return unwaived
            uses = None
            if pod is not None and str((pod.get("metadata") or {}).get("uid") or "") == pod_uid:
                uses = pod_using(_with_namespace(pod, namespace), claim)
            if uses is None:
                return unwaived
            using.append(sharing_view(uses))  # not the whole pod: up to 8 are held at once
        return [
            _message(finding)
            for position, pod in enumerate(using)
            for finding in self._denying(
                SHARED_CLAIM_RULE,
                pod,
                [*using[:position], *using[position + 1 :], claim],
                self.config,
                checks_until,
            )
        ]

    def _needs_scrubber(self, claim: Mapping[str, Any], checks_until: float | None) -> bool:
        """Whether DRA016 requires the scrubber of a pod using `claim`: asked of the rule with a
        pod that uses the claim and runs nothing else (`reservations.group_member`)."""
        return bool(self._denying(SCRUB_RULE, group_member(claim), [claim], self._engine_config(claim), checks_until))

    def _denying(
        self,
        rule: str,
        reviewed: Mapping[str, Any],
        others: Sequence[Mapping[str, Any]],
        config: Config,
        checks_until: float | None,
    ) -> list[Finding]:
        """The findings of `rule` severe enough to deny (`fail_on`) when the engine checks
        `reviewed` with `others`, within the review's time for checks: what a reservation asks
        of one rule."""
        with evaluations_until(checks_until):
            report, _ = _check(reviewed, others, config)  # no bound: it never stops
        return [finding for finding in report.findings if finding.rule == rule and finding.severity >= self.fail_on]

    def _engine_config(self, obj: Mapping[str, Any]) -> Config:
        """The configuration the engine checks `obj` with: without the rules left to the
        policies, unless `obj` is of a kind they apply to in an API group the policies do not
        match (their findings on it are the webhook's)."""
        kind = obj.get("kind")
        if kind in self._left_kinds:
            group = str(obj.get("apiVersion") or "").rpartition("/")[0]
            if KIND_RESOURCES[str(kind)][0] != group:
                return self.config
        return self._without_left

    def _decides(self, finding: Finding) -> bool:
        """Whether this webhook, rather than the policies, answers for the finding."""
        admission = self._admissions.get(finding.rule)
        return self.all_rules or admission is None or not decides(admission, finding)

    def _written_by_claim_writer(self, request: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
        """A ResourceClaim the control plane creates or updates for a pod (by username only:
        owner references and annotations can be written by anyone who may create claims)."""
        kind = request.get("kind")
        user = request.get("userInfo")
        return (
            isinstance(kind, Mapping)
            and kind.get("group") == "resource.k8s.io"
            and kind.get("kind") == "ResourceClaim"
            and obj.get("kind") == "ResourceClaim"
            and request.get("operation") in ("CREATE", "UPDATE")
            and isinstance(user, Mapping)
            and isinstance(user.get("username"), str)
            and user.get("username") in self._claim_writers
        )

    def _written_by_workload_controller(self, request: Mapping[str, Any]) -> bool:
        """Whether the request is a workload controller's (`admission-workload-controllers`, by
        username): only then do `waivers` entries match the object as the controllers its
        owner reference names (`model.owners` says why: anyone else may write one)."""
        user = request.get("userInfo")
        return (
            isinstance(user, Mapping)
            and isinstance(user.get("username"), str)
            and user.get("username") in self._workload_controllers
        )

    def _named(self, obj: Mapping[str, Any]) -> list[Named]:
        """The templates, and the claims where the source reads them, that `obj` names."""
        named = {(TEMPLATE_KIND, name) for name in template_names(obj)}
        if self._reads_claims:
            named.update((CLAIM_KIND, name) for name in claim_names(obj))
        return sorted(named)

    def _templates_named(
        self,
        names: Sequence[Named],
        namespace: str,
        deadline: float,
        cached: Mapping[Named, Mapping[str, Any] | None],
    ) -> tuple[list[Mapping[str, Any]], list[str]]:
        """The templates and claims of `names` that exist (those in `cached` as they are
        there), and what could not be read by `deadline`."""
        found: list[Mapping[str, Any]] = []
        failures: list[str] = []
        for named in names:
            kind, name = named
            hit, template = (True, cached[named]) if named in cached else self._cache.get((namespace, kind, name))
            if not hit:
                try:
                    template = self._read(kind, namespace, name, deadline)
                except TemplateLookupError as error:
                    failures.append(str(error))
                    continue
                if kind == TEMPLATE_KIND:
                    # A claim is never cached: deleted and created again under its name (a NIC
                    # claim swapped for a GPU one), the new one is what a pod then gets.
                    self._cache.put((namespace, kind, name), template)
            if template is not None:
                found.append(template)
        for failure in failures:
            log_event(event="template lookup failed", error=failure)
        return found, failures

    def _too_much_cel(self, uid: str, holder: str) -> dict[str, Any]:
        return _denial(
            uid,
            f"dra-guard webhook: {holder} more than {self.max_cel_parse_bytes:,} bytes of CEL selectors that must "
            "be parsed to be checked (the webhook parses at most that much for one review, so that no review holds "
            "its slot for seconds); denied. `dra-guard check` reads it whole",
        )

    def _read(self, kind: str, namespace: str, name: str, deadline: float) -> Mapping[str, Any] | None:
        """One lookup within the review's `deadline`: the object, None when the API server has
        none; TemplateLookupError naming it and saying what failed otherwise."""
        which = f"{kind} {namespace}/{name}"
        left = deadline - time.monotonic()
        if left <= 0:
            raise TemplateLookupError(f"{which}: no time was left within the review's deadline")
        try:
            return self._lookup(kind, namespace, name, left)
        except TemplateLookupError:
            raise
        except Exception as error:  # a source that raised something else
            raise TemplateLookupError(f"{which}: {type(error).__name__}: {error}") from None

    def _lookup(self, kind: str, namespace: str, name: str, seconds: float) -> Mapping[str, Any] | None:
        if isinstance(self.templates, KubernetesTemplates):
            return self.templates.get(namespace, name, timeout=seconds, kind=kind)
        # Another source: `_reads_claims` and `_reads_pods` said it has the method asked for.
        if kind == CLAIM_KIND:
            return self.templates.get_claim(namespace, name)  # type: ignore[attr-defined, no-any-return]
        if kind == "Pod":
            return self.templates.get_pod(namespace, name)  # type: ignore[attr-defined, no-any-return]
        return self.templates.get(namespace, name)


def _check(
    reviewed: Mapping[str, Any],
    templates: Sequence[Mapping[str, Any]],
    config: Config,
    most_findings: int | None = None,
    *,
    owner_references: bool = False,
) -> tuple[Report, bool]:
    """The engine over the reviewed object (origin `review`) and the claim templates and
    claims read for it (`cluster`), and whether its rules stopped unfinished.  With them at
    hand, "template not found" is a real answer (`complete`); and no ResourceSlice is among
    them, which the context is told.  `most_findings`: the engine's bound (`Checker`); past
    it the rules stop, and the report holds an input error, which denies.
    `owner_references`: whether `waivers` entries match the object as the controllers its
    owner reference names (`Checker`): only for a workload controller's request; never for
    the pods a reservation reads back, whose writer is not known."""
    checker = Checker(config, complete=bool(templates), most_findings=most_findings, owner_references=owner_references)
    checker.context.input_has_no_slices = True
    checker.add_object(reviewed, None, "review")
    for template in templates:
        checker.add_object(template, None, "cluster")
    return checker.finish(), checker.stopped


def _stopped_unfinished(blocking: bool) -> str:
    """What a denial says first when the rules stopped at `MAX_FINDINGS`.  The engine stops
    a rule at the finding past the bound and runs no rule after it (`Checker`), so nothing
    tells whether what it left unchecked would deny: an object whose findings all fall
    below `fail_on` (warnings, waived or pending ones) is denied all the same, fail closed,
    and must not read as found non-compliant."""
    if blocking:
        return (
            f"dra-guard webhook: the review stopped unfinished past {MAX_FINDINGS} findings, and the rest of the "
            "object is unchecked; the findings listed deny it"
        )
    return (
        f"dra-guard webhook: denied because the review stopped unfinished past {MAX_FINDINGS} findings, not "
        "because the object was found non-compliant: no finding made denies it, but the rules left unchecked "
        "could, and the webhook fails closed (fix or split the object so that it makes fewer findings)"
    )


def _changes_nothing_rules_read(request: Mapping[str, Any]) -> bool:
    """An UPDATE of an object itself (not a subresource: a claim's status is where the
    scheduler reserves it, `reservations`) that changes nothing any rule reads."""
    return (
        request.get("operation") == "UPDATE"
        and not request.get("subResource")
        and unchanged_for_rules(request.get("object"), request.get("oldObject"))
    )


def _policy_decides_all(rule: Rule, admission: Admission) -> bool:
    """Whether the rule's policy decides every finding the rule can make (`decides`): one
    that needs no other object, on kinds the policy matches, with facets it covers."""
    return (
        not rule.cross_object
        and rule.kinds is not None
        and rule.kinds <= set(admission.kinds)
        and (admission.covers is None or rule.facet_codes <= admission.covers)
    )


def template_names(obj: Mapping[str, Any]) -> Iterator[str]:
    """The claim templates `obj` makes claims from: `resourceClaimTemplateName` in the
    `resourceClaims` of its pod spec (where `POD_SPEC_PATHS` puts it for a built-in kind) or
    of its pod groups (scheduling.k8s.io PodGroup and Workload, a Job's `spec.scheduling`:
    `dra_guard.model.pod_groups`), nowhere else in it."""
    return _pod_claim_fields(obj, "resourceClaimTemplateName")


def claim_names(obj: Mapping[str, Any]) -> Iterator[str]:
    """The ResourceClaims `obj`'s pods use by name (`resourceClaimName`), found where
    `template_names` finds templates."""
    return _pod_claim_fields(obj, "resourceClaimName")


def _pod_claim_fields(obj: Mapping[str, Any], field_name: str) -> Iterator[str]:
    kind = obj.get("kind")
    api_version = obj.get("apiVersion")
    if not isinstance(kind, str) or not isinstance(api_version, str):
        return
    group = api_version.rpartition("/")[0]
    claims: list[Any] = []
    if kind in POD_SPEC_PATHS and KIND_RESOURCES[kind][0] == group:
        spec = get_path(obj, POD_SPEC_PATHS[kind])
        if isinstance(spec, Mapping) and isinstance(spec.get("resourceClaims"), list):
            claims += spec["resourceClaims"]
    # A pod group's, a Workload's (nested templates too) and a Job's scheduling claims.
    claims += (claim for _, claim in group_claims(kind, obj))
    for claim in claims:
        name = claim.get(field_name) if isinstance(claim, Mapping) else None
        if isinstance(name, str) and name:
            yield name


#: resource.k8s.io's own limits (kubernetes/api @ 10b39a39 resource/v1/types.go:
#: DeviceRequestsMaxSize, DeviceConstraintsMaxSize, DeviceConfigMaxSize, DeviceSelectorsMaxSize,
#: FirstAvailableDeviceRequestMaxSize), the same in every version dra-guard reads.
API_LIMITS = (("requests", 32), ("constraints", 32), ("config", 32))
REQUEST_LIMITS = (("selectors", 32), ("firstAvailable", 8))


def past_api_limits(obj: Mapping[str, Any]) -> str | None:
    """What of a claim or claim template (or a claim whose status is updated) is past the
    API's list limits, or None."""
    if obj.get("kind") not in CLAIM_KINDS or not str(obj.get("apiVersion") or "").startswith("resource.k8s.io/"):
        return None
    place = ("spec", "spec", "devices") if obj.get("kind") == "ResourceClaimTemplate" else ("spec", "devices")
    devices = get_path(obj, place)
    if not isinstance(devices, Mapping):
        return None
    for field_name, most in API_LIMITS:
        listed = devices.get(field_name)
        if isinstance(listed, list) and len(listed) > most:
            return f"the claim has {len(listed)} {field_name}, more than {most}"
    requests = devices.get("requests")
    for request in requests if isinstance(requests, list) else ():
        # v1beta1's flat request, or v1's `exactly`.
        for body in (request, get_path(request, ("exactly",))):
            for field_name, most in REQUEST_LIMITS:
                listed = get_path(body, (field_name,))
                if isinstance(listed, list) and len(listed) > most:
                    return f"a request has {len(listed)} {field_name}, more than {most}"
    return None


#: What the pod specs of one object may hold, all together, for a review (`past_pod_bounds`).
#: Not API limits: the API server bounds none of these counts (pkg/apis/core/validation:
#: container names unique, a container's claims declared by the pod, nothing more), only the
#: object's size (3 MiB a request, 1.5 MiB in etcd).  Bounds on what one review may cost, far
#: above any real workload (a pod has a few containers, and claims from the builders' one or
#: two): a Pod of 28,000 containers took a review to 42 MiB, and one of 28,000 pod claims to
#: 65 MiB and 5.8 s, where a review has 32 MiB (serving.REVIEW_MIB).
POD_BOUNDS = (
    ("containers (init and ephemeral included)", 1024),
    ("claims named by containers", 1024),
    ("pod claims", 256),
)


def past_pod_bounds(obj: Mapping[str, Any]) -> str | None:
    """What of the object's pod specs (every one the rules read: `pod_specs`) is past
    `POD_BOUNDS`, or None."""
    try:
        specs = pod_specs(obj)
    except Exception:  # a shape nobody foresaw: the engine reports it (an error), which denies
        return None
    counts = (
        sum(len(spec.containers) for spec in specs),
        sum(sum(1 for _ in container.claims()) for spec in specs for container in spec.containers),
        sum(len(spec.claims) for spec in specs),
    )
    for (what, most), count in zip(POD_BOUNDS, counts, strict=True):
        if count > most:
            return f"its pod specs hold {count} {what}, more than the {most} the webhook reviews"
    return None


def _with_namespace(obj: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """The object as stored: in the request's namespace even when its manifest named none."""
    result = dict(obj)
    metadata = dict(result.get("metadata") or {})
    if namespace and not metadata.get("namespace"):
        metadata["namespace"] = namespace
    result["metadata"] = metadata
    return result


_RULE_ID = re.compile(r"DRA\d{3}")


def _rule_ids(response: Mapping[str, Any]) -> list[str]:
    message = str(response.get("status", {}).get("message", ""))
    ids = (part.partition(":")[0] for part in message.split("; ") if part)
    return sorted({rule_id for rule_id in ids if _RULE_ID.fullmatch(rule_id)})


def _kind(request: Mapping[str, Any]) -> str:
    kind = request.get("kind")
    return str(kind.get("kind", "")) if isinstance(kind, Mapping) else ""


def _message(finding: Finding) -> str:
    return f"{finding.rule}: {finding.object}: {finding.message}"


def _listed(messages: list[str], what: str) -> list[str]:
    """The first `LISTED_FINDINGS` of `messages`, and how many more there are: the answer
    stays a few KiB whatever the object makes (a denial listed every finding, and a Pod of
    28,000 containers made one of 2.7 MB)."""
    if len(messages) <= LISTED_FINDINGS:
        return messages
    return [*messages[:LISTED_FINDINGS], f"and {len(messages) - LISTED_FINDINGS} more {what}, not listed"]


def _denial(uid: str, message: str, warnings: Sequence[str] = ()) -> dict[str, Any]:
    response: dict[str, Any] = {
        "uid": uid,
        "allowed": False,
        "status": {"code": 403, "reason": "Forbidden", "message": message},
    }
    if warnings:
        response["warnings"] = list(warnings)
    return response


def _spelled_in_json(word: str) -> bytes:
    """A pattern of the JSON string `word`, each character as itself or as a `\\u` escape
    (its hex digits in either case): every way a JSON text may spell the key."""

    def escaped(char: str) -> bytes:
        return b"\\\\u" + b"".join(b"[%s%s]" % (d.encode(), d.upper().encode()) for d in f"{ord(char):04x}")

    return b'"' + b"".join(b"(?:" + re.escape(char.encode()) + b"|" + escaped(char) + b")" for char in word) + b'"'


#: The key `expression`, however the body spells it: a review whose body holds none parses
#: no CEL of its object (kube-apiserver escapes `<`, `>` and `&` as `\\u003c`..., so a
#: Pod's `sh -c "a && b"` holds escapes, and is not taken for CEL).
_EXPRESSION_KEY = re.compile(_spelled_in_json("expression"))


class _Held:
    """A place taken among the parsers (all the slots but one), given back once: by the
    review's thread as soon as it knows it parses nothing, or when the review is done,
    whichever comes first.  Made on the event loop, whose semaphore a thread gives back
    through the loop."""

    def __init__(self, places: asyncio.BoundedSemaphore) -> None:
        self._places: asyncio.BoundedSemaphore | None = places
        self._lock = threading.Lock()
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()

    def give(self) -> None:
        with self._lock:
            places, self._places = self._places, None
        if places is None:
            return
        if threading.get_ident() == self._loop_thread:
            places.release()
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing waits any more
            self._loop.call_soon_threadsafe(places.release)


class _Parsed(NamedTuple):
    """A request body, parsed: the review (None: `problem` says why), the bytes of CEL its
    object holds that the parser must read, and whether the review may parse CEL (`Webhook._parse`)."""

    review: dict[str, Any] | None
    problem: str
    cel_bytes: int
    may_parse: bool
    #: The claim templates it names, as the cache has them (None: one is not there).
    cached: _Cached | None
    #: Whether it is an UPDATE that changes nothing a rule reads (`_changes_nothing_rules_read`);
    #: None where it was not asked (the review asks, if it comes to it).
    unchanged: bool | None = None


class _Cached(NamedTuple):
    """The claim templates (and claims) a review names, by kind and name, all found in the
    cache: their JSON bytes, whether their selectors hold CEL to parse, and CEL not parsed
    before."""

    templates: Mapping[Named, Mapping[str, Any] | None]
    weight: int
    parses: bool
    parses_now: bool


#: Nothing to read: no template source, no name, or a review denied before any lookup.
_NONE_CACHED = _Cached({}, 0, False, False)


def _parse_review(body: bytes) -> tuple[dict[str, Any] | None, str]:
    if json_budget.decoding_bound(body) > PARSING_BYTES:
        return None, _unaffordable("decoding it may take", json_budget.decoding_bound(body), PARSING_BYTES)
    try:
        # UTF-8 only, as the API server writes it: json.loads would also read bytes in UTF-16
        # or UTF-32, which `_EXPRESSION_KEY` does not see, so CEL would pass the gate unseen.
        text = body.decode("utf-8")
    except ValueError:
        return None, "the body is not JSON in UTF-8"
    # Refused before json.loads makes anything: the estimate is a few byte counts.
    cost = json_budget.estimate(body, text)
    if cost.parsed > PARSED_BODY_BYTES:
        return None, _unaffordable("its JSON may take, once parsed,", cost.parsed, PARSED_BODY_BYTES)
    if cost.peak > PARSING_BYTES:
        return None, _unaffordable("parsing its JSON may take", cost.peak, PARSING_BYTES)
    try:
        review = json.loads(text)
    except (ValueError, RecursionError):  # bad JSON, an integer of over 4,300 digits
        return None, "the body is not JSON in UTF-8"
    if not isinstance(review, dict) or review.get("kind") != "AdmissionReview":
        return None, "not an AdmissionReview"
    if review.get("apiVersion") != REVIEW_API:
        return None, f"AdmissionReview must be {REVIEW_API}"
    request = review.get("request")
    if not isinstance(request, dict) or not isinstance(request.get("uid"), str) or not request["uid"]:
        return None, "AdmissionReview has no request with a uid"
    if len(request["uid"].encode("utf-8")) > MAX_UID_BYTES:
        return None, f"AdmissionReview's request uid is longer than {MAX_UID_BYTES} bytes (the API server's is a UUID)"
    return review, ""


def _unaffordable(what: str, estimate: int, most: int) -> str:
    """Why a body is refused unparsed: what its parse was estimated to take, and its bound."""
    return (
        f"the body is refused unparsed: {what} up to {estimate / 2**20:.1f} MiB, more than the "
        f"{most // 2**20} MiB one review's memory allows it"
    )


async def _by(deadline: float, awaitable: Awaitable[T]) -> T:
    """`await awaitable`, or asyncio.TimeoutError at `deadline` (time.monotonic()).  On 3.11+
    without wrapping it in a task, as asyncio.wait_for does: a review awaits three or four
    times, and each task costs an event-loop turn (bench/webhook_load.py)."""
    left = max(0.0, deadline - time.monotonic())
    if sys.version_info >= (3, 11):
        try:
            async with asyncio.timeout(left):
                return await awaitable
        except TimeoutError:
            raise asyncio.TimeoutError from None
    return await asyncio.wait_for(awaitable, timeout=left)  # pragma: no cover - Python 3.10


class _Arrival:
    """One request body being received: its chunks so far, the bytes of the budget it holds,
    since when it is read and when its last chunk came (`time.monotonic()`), and the task
    reading it, cancelled if it is cut off."""

    __slots__ = ("chunks", "cut_off", "held", "last", "since", "task")

    def __init__(self, task: asyncio.Task[Any] | None) -> None:
        self.chunks: list[bytes] = []
        self.held, self.task, self.cut_off = 0, task, False
        self.since = self.last = time.monotonic()


class _BodyBudget:
    """Bytes of request bodies received and not yet parsed, at most `limit` (used on the
    event loop only).

    A body that would pass the limit is refused at once, never waiting: bodies that each
    held part of the budget while waiting for the rest of it could wait for one another
    until their deadlines.  Unless bodies still arriving `stalled` seconds after they began
    hold enough of it: those are cut off, the one silent longest first, and the newcomer
    goes on.  The API server writes a body right behind its head, so only a client that
    sends slowly, on purpose or not, ever holds bytes that long; without this, six of them sending most of a
    3 MiB body with `?timeout=30s` kept every review out for 30 s, and again.
    """

    def __init__(self, limit: int, stalled: float) -> None:
        self.limit, self.held, self.stalled = limit, 0, stalled
        #: Bodies still arriving, oldest first (a dict keeps the order they were added in).
        self._arriving: dict[_Arrival, None] = {}

    def arriving(self) -> _Arrival:
        """A body begins: it holds nothing yet."""
        arrival = _Arrival(asyncio.current_task())
        self._arriving[arrival] = None
        return arrival

    def arrived(self, arrival: _Arrival) -> None:
        """A body is whole (or refused): what it holds can no longer be cut off."""
        self._arriving.pop(arrival, None)

    def take(self, arrival: _Arrival, size: int) -> bool:
        if self.held + size > self.limit and not self._make_room(arrival, size):
            return False
        self.held += size
        arrival.held += size
        arrival.last = time.monotonic()
        return True

    def give(self, size: int) -> None:
        self.held -= size

    def _make_room(self, newcomer: _Arrival, size: int) -> bool:
        """Cut off stalled bodies until `size` more bytes fit, the one silent longest first
        (then the oldest): a body still flowing is the last to go, one that stopped the
        first; none when all of them would not make room enough."""
        cutoff = time.monotonic() - self.stalled
        stalled = sorted(
            (arrival for arrival in self._arriving if arrival is not newcomer and arrival.since <= cutoff),
            key=lambda arrival: (arrival.last, arrival.since),
        )
        if self.held - sum(arrival.held for arrival in stalled) + size > self.limit:
            return False
        for arrival in stalled:
            if self.held + size <= self.limit:
                break
            self._cut_off(arrival)
        return True

    def _cut_off(self, arrival: _Arrival) -> None:
        # Its bytes are given back now, for the newcomer, and freed with them; its task,
        # waiting for more of its body (the only place it waits while arriving), is woken
        # to answer 408.
        self.arrived(arrival)
        self.held -= arrival.held
        arrival.chunks.clear()
        arrival.held, arrival.cut_off = 0, True
        if arrival.task is not None:
            arrival.task.cancel()


@dataclass(frozen=True)
class _Refusal:
    """Why a request's body was not read whole: the status to answer (0: the client went
    away, nothing to answer) and the limit that refused it."""

    status: int
    reason: str
    limit: int

    @property
    def headers(self) -> list[tuple[bytes, bytes]]:
        # The rest of the body is never read, so the connection cannot carry another request.
        extra = [(b"retry-after", b"1")] if self.status == 429 else []
        return [(b"connection", b"close"), *extra]


async def _read_body(receive: Receive, limit: int, deadline: float, budget: _BodyBudget) -> bytes | _Refusal:
    """The body, its bytes taken from `budget` as they arrive (the caller gives them back),
    or why not (what it had taken given back)."""
    arrival = budget.arriving()
    try:
        refusal = await _receive_body(receive, limit, deadline, budget, arrival)
    except asyncio.CancelledError:
        if not arrival.cut_off or _cancelled_otherwise():
            budget.give(arrival.held)
            raise
        refusal = _Refusal(
            408,
            f"the request body was still arriving {budget.stalled:g} s after its head; it was cut off to make "
            "room for others",
            budget.limit,
        )
    except BaseException:
        budget.give(arrival.held)
        raise
    finally:
        budget.arrived(arrival)
    if refusal is not None:
        budget.give(arrival.held)
        return refusal
    return b"".join(arrival.chunks)


def _cancelled_otherwise() -> bool:
    """Whether the running task, cancelled to cut its body off, was also cancelled by
    something else (the server stopping): that cancellation goes on (Python 3.11+ counts
    them; 3.10 cannot tell, and answers the 408)."""
    task = asyncio.current_task()
    uncancel = getattr(task, "uncancel", None)
    return uncancel is not None and uncancel() > 0


async def _receive_body(
    receive: Receive, limit: int, deadline: float, budget: _BodyBudget, arrival: _Arrival
) -> _Refusal | None:
    """Appends the body's chunks to `arrival.chunks`, each once `budget` has taken it."""
    size = 0
    while True:
        try:
            message = await _by(deadline, receive())
        except asyncio.TimeoutError:
            return _Refusal(408, "the request body did not arrive within the review's deadline", limit)
        if message["type"] == "http.disconnect":
            return _Refusal(0, "the client went away", limit)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return _Refusal(413, f"request body larger than {limit} bytes", limit)
        if not budget.take(arrival, len(chunk)):
            return _Refusal(
                429, f"dra-guard webhook: {budget.limit} bytes of request bodies in flight; try again", budget.limit
            )
        arrival.chunks.append(chunk)
        if not message.get("more_body", False):
            return None


async def _take(slots: asyncio.Semaphore, deadline: float) -> bool:
    """A review slot (or a place among the parsers), waited for until `deadline`; whether
    one was taken."""
    if not slots.locked():
        await slots.acquire()  # a free slot: taken at once, no timer needed
        return True
    try:
        await _by(deadline, slots.acquire())
    except asyncio.TimeoutError:
        return False
    return True


def _cel_to_parse(value: Any, most: int, *, unless_kept: bool = False, every: bool = False) -> int:
    """Bytes of the CEL selectors in `value` (an object, or a template read for it: the
    `expression` of a `cel` mapping, as every device and DeviceClass selector spells it)
    that `analyse` would hand to the parser, counted until they pass `most`; `unless_kept`:
    only those it would parse now, its answer not kept; `every`: every selector (DRA014
    compiles them all where ResourceSlices are configured).  An `expression` elsewhere (a
    driver's opaque parameters) is never parsed, so never counted; nor is an UPDATE's old
    object, which is not checked."""
    at_once = _never if every else parsed_already if unless_kept else analysed_at_once
    total = 0
    pending: list[tuple[Any, bool]] = [(value, False)]
    while pending and total <= most:
        value, selector = pending.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "expression" and selector and isinstance(item, str):
                    if not at_once(item):
                        total += byte_length(item)
                elif isinstance(item, dict | list):
                    pending.append((item, key == "cel"))
        elif isinstance(value, list):
            pending.extend((item, False) for item in value if isinstance(item, dict | list))
    return total


def _never(expression: str) -> bool:
    return False


def _inline(review: Callable[[], dict[str, Any]], uid: str) -> tuple[dict[str, Any], Exception | None]:
    """The review's answer, run here, and the exception that made it a denial, if any."""
    try:
        return review(), None
    except Exception as error:
        return _internal_error(uid, error), error


async def _awaited(
    future: asyncio.Future[dict[str, Any]], clock: _Clock, uid: str
) -> tuple[dict[str, Any], Exception | None]:
    """The answer of a review running in a thread, or a denial at the deadline (the thread
    goes on: a lookup cannot be cancelled) or for its exception."""
    try:
        return await _by(clock.deadline, asyncio.shield(future)), None
    except asyncio.TimeoutError:
        message = (
            f"dra-guard webhook: the review took longer than its deadline ({clock.seconds:g} s); denied "
            "(failurePolicy Fail)"
        )
        return _denial(uid, message), None
    except Exception as error:
        return _internal_error(uid, error), error


class _Exchange:
    """`send`, remembering whether the response has started and whose review it answers."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False
        self.uid: str | None = None

    async def __call__(self, message: MutableMapping[str, Any]) -> None:
        self.started = True
        await self._send(message)


@dataclass(frozen=True)
class _Clock:
    """A review's time: when it started, the seconds it has (the API server's `?timeout=`
    less the margin), and what was wrong with the `timeout` given, if anything."""

    started: float
    seconds: float
    problem: str

    @classmethod
    def start(cls, seconds: float, problem: str) -> _Clock:
        return cls(time.monotonic(), seconds, problem)

    @property
    def deadline(self) -> float:
        return self.started + self.seconds

    @property
    def lookups_until(self) -> float:
        """When template lookups must end: the engine and the answer get a moment after."""
        return self.deadline - min(RESPONSE_MARGIN_SECONDS, self.seconds / 4)

    def ms(self) -> float:
        return round((time.monotonic() - self.started) * 1000, 1)


def _log_review(
    request: Mapping[str, Any], response: Mapping[str, Any], error: Exception | None, clock: _Clock
) -> None:
    """The review's one log line: what was asked, the answer, and an exception's traceback."""
    fields: dict[str, Any] = {}
    if error is not None:
        fields["error"] = f"{type(error).__name__}: {error}"
        fields["traceback"] = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    if clock.problem:
        fields["timeout_parameter"] = clock.problem
    log_event(
        event="review",
        uid=request["uid"],
        kind=_kind(request),
        namespace=request.get("namespace", ""),
        name=request.get("name", ""),
        allowed=response["allowed"],
        code=response.get("status", {}).get("code", 200),
        rules=_rule_ids(response),
        deadline_s=round(clock.seconds, 3),
        ms=clock.ms(),
        **fields,
    )


def _release(slots: asyncio.Semaphore, place: _Held | None, future: asyncio.Future[Any]) -> None:
    slots.release()
    if place is not None:
        place.give()
    if not future.cancelled():
        future.exception()  # retrieved (and answered) by the request, or left after its deadline


def _review_answer(response: Mapping[str, Any]) -> dict[str, Any]:
    return {"apiVersion": REVIEW_API, "kind": "AdmissionReview", "response": dict(response)}


def _internal_error(uid: str, error: BaseException) -> dict[str, Any]:
    return {
        "uid": uid,
        "allowed": False,
        "status": {
            "code": 500,
            "reason": "InternalError",
            "message": f"dra-guard webhook: internal error ({type(error).__name__}) while reviewing; denied "
            "(fail closed; the webhook's log has the details)",
        },
    }


_GO_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_go_duration(text: str) -> float | None:
    """Seconds in a Go duration (`5s`, `4.5s`, `1m30s`, `800ms`), as client-go writes the
    request's `?timeout=`; a bare number is seconds. None when it is neither."""
    text = text.strip()
    try:
        return float(text) if text and text[0].isdigit() and text.replace(".", "", 1).isdigit() else _go(text)
    except ValueError:
        return None


def _go(text: str) -> float | None:
    total, position = 0.0, 0
    for match in _GO_DURATION_PART.finditer(text):
        if match.start() != position:
            return None
        total += float(match.group(1)) * _GO_UNITS[match.group(2)]
        position = match.end()
    return total if text and position == len(text) else None


def review_deadline(timeout: str | None, default: float) -> tuple[float, str]:
    """The seconds a review may take: the API server's `?timeout=` (its timeoutSeconds, or
    what is left of its own request's) less `RESPONSE_MARGIN_SECONDS`, at most
    `MAX_DEADLINE_SECONDS`; `default` without it. And what was wrong with it, if anything."""
    if timeout is None:
        return default, ""
    seconds = parse_go_duration(timeout)
    if seconds is None or seconds <= 0:
        return default, f"{timeout!r} is not a duration; {default:g} s used"
    seconds = min(seconds, MAX_DEADLINE_SECONDS)
    return seconds - min(RESPONSE_MARGIN_SECONDS, seconds / 4), ""


@functools.lru_cache(maxsize=64)
def _query_deadline(query: bytes | str, default: float) -> tuple[float, str]:
    """`review_deadline` of a request's query string: the API server sends the same
    `?timeout=` with every review, so each distinct query is parsed once (a few of them at
    a time; whatever a client sends, the cache holds at most 64)."""
    from urllib.parse import parse_qsl

    text = query.decode("latin-1") if isinstance(query, bytes) else str(query)
    return review_deadline(dict(parse_qsl(text, keep_blank_values=True)).get("timeout"), default)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


#: One encoder for every answer (`json.dumps` with an option makes one per call).
_ANSWER = json.JSONEncoder(ensure_ascii=False)


async def _respond(
    send: Send, status: int, payload: Mapping[str, Any], headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    body = _ANSWER.encode(payload).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            log_event(event="started")
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            log_event(event="stopped")
            await send({"type": "lifespan.shutdown.complete"})
            return
