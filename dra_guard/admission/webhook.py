"""`dra-guard webhook`: a validating admission webhook for what the policies' CEL cannot do.

The ValidatingAdmissionPolicies (`dra-guard admission-policy`) decide every rule that one
object shows. This webhook decides the rest with the engine itself: isolation tags
verified with the HMAC key (CEL has no SHA-256), the rules that need other objects, as far
as one object and its namespace's claim templates show them, and the rules that have no
CEL form. It serves AdmissionReview `admission.k8s.io/v1` as an ASGI application (run by
uvicorn over HTTPS) with `/healthz` and `/readyz`, a bounded request body, a deadline per
review, and one JSON log line per request on stderr. The key is read from a file (a
Secret mount) and never logged.

It fails closed: a CREATE or UPDATE without an object, a claim template it cannot read
(anything but a 404 from the API server: a refusal, a server error, a timeout, an answer
that is not a ResourceClaimTemplate) and a review past its deadline are denied, with a
message that says why. ResourceClaims that the control plane writes for pods
(`admission-claim-writers`, by `request.userInfo.username`) are admitted unchecked, as the
policies admit them (dra_guard.admission.policy says who writes them, from upstream source).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from dra_guard.admission.policy import covered_rules
from dra_guard.contract.findings import Finding, Severity
from dra_guard.engine.run import check_objects
from dra_guard.ruleapi.admission_form import AdmissionTarget, decides
from dra_guard.ruleapi.config import ADMISSION_CLAIM_WRITERS, Config
from dra_guard.rules import Registry

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

#: The API server sends reviews of up to a few MiB (etcd stores objects up to 1.5 MiB).
DEFAULT_MAX_BODY = 3 * 1024 * 1024
#: A review must be answered well within the webhook's timeoutSeconds (5).
DEFAULT_DEADLINE_SECONDS = 4.0
REVIEW_API = "admission.k8s.io/v1"
#: The operations whose AdmissionRequest has no `object`.
OBJECTLESS_OPERATIONS = ("DELETE", "CONNECT")
_LOG = logging.getLogger("dra_guard.webhook")


class TemplateSource(Protocol):
    """Claim templates of a namespace, by name (the cluster's, for cross-object rules).

    `get` returns None when there is no such template, and raises `TemplateLookupError`
    when it cannot tell."""

    def get(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...


class TemplateLookupError(Exception):
    """A claim template could not be read; the message names it and says what failed."""


class NoTemplates:
    def get(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return None


#: Where a pod's service account credentials are mounted (a projected volume, whose token
#: the kubelet rotates: the client reads it again, at most a minute after it changes).
SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


class KubernetesTemplates:
    """Reads ResourceClaimTemplates from the API server with the `kubernetes` client.

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

    def get(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        from kubernetes.client import CustomObjectsApi
        from kubernetes.client.exceptions import ApiException

        group, _, version = self.api_version.rpartition("/")
        which = f"ResourceClaimTemplate {namespace}/{name}"
        try:
            # The object as JSON, not as the client's model: the engine reads manifests.
            response: Any = CustomObjectsApi(self.api_client).get_namespaced_custom_object(
                group,
                version,
                namespace,
                "resourceclaimtemplates",
                name,
                _preload_content=False,
                _request_timeout=self.timeout,
            )
            try:
                body = response.data
            finally:
                response.release_conn()
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
            or found.get("kind") != "ResourceClaimTemplate"
            or not isinstance(metadata, dict)
            or metadata.get("name") != name
        ):
            raise TemplateLookupError(f"{which}: the API server's answer is not that ResourceClaimTemplate")
        return found


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
    deadline: float = DEFAULT_DEADLINE_SECONDS
    ready: bool = True

    def __post_init__(self) -> None:
        target = AdmissionTarget(self.config)
        self._admissions = {covered.rule.id: covered.admission for covered in covered_rules(self.registry, target)}
        writers: tuple[str, ...] = self.config.get(ADMISSION_CLAIM_WRITERS)
        self._claim_writers = frozenset(writers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":  # pragma: no cover - uvicorn sends only http and lifespan
            return
        path, method = scope.get("path", ""), scope.get("method", "")
        if path in ("/healthz", "/readyz") and method == "GET":
            healthy = path == "/healthz" or self.ready
            await _respond(send, 200 if healthy else 503, {"status": "ok" if healthy else "not ready"})
            return
        if path != "/validate":
            await _respond(send, 404, {"error": "not found"})
            return
        if method != "POST":
            await _respond(send, 405, {"error": "use POST"})
            return
        started = time.monotonic()
        body = await _read_body(receive, self.max_body)
        if body is None:
            _log(event="refused", reason="body too large", limit=self.max_body)
            await _respond(send, 413, {"error": f"request body larger than {self.max_body} bytes"})
            return
        review, problem = _parse_review(body)
        if review is None:
            _log(event="refused", reason=problem)
            await _respond(send, 400, {"error": problem})
            return
        request = review["request"]
        try:
            response = await asyncio.wait_for(asyncio.to_thread(self.review, request), timeout=self.deadline)
        except TimeoutError:
            response = _denial(
                request["uid"], "dra-guard webhook: the review took too long; denied (failurePolicy Fail)"
            )
        _log(
            event="review",
            uid=request["uid"],
            kind=_kind(request),
            namespace=request.get("namespace", ""),
            name=request.get("name", ""),
            allowed=response["allowed"],
            rules=_rule_ids(response),
            ms=round((time.monotonic() - started) * 1000, 1),
        )
        await _respond(send, 200, {"apiVersion": REVIEW_API, "kind": "AdmissionReview", "response": response})

    def review(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The AdmissionReview response for one request."""
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
        if self._written_by_claim_writer(request, obj):
            return {"uid": uid, "allowed": True}
        namespace = str(request.get("namespace") or "")
        reviewed = _with_namespace(obj, namespace)
        templates, failures = self._templates_named_by(reviewed, namespace)
        if failures:
            # The rules that need these templates cannot be checked: fail closed.
            return _denial(
                uid,
                "; ".join(
                    f"dra-guard webhook: cannot read {failure} from the API server, so the claim rules "
                    "cannot be checked; denied"
                    for failure in failures
                ),
            )
        # With the namespace's templates at hand, "template not found" is a real answer.
        report = check_objects(
            [reviewed, *templates],
            self.config,
            origins=["review"] + ["cluster"] * len(templates),
            complete=bool(templates),
        )
        mine = [finding for finding in report.findings if finding.origin == "review" and self._decides(finding)]
        blocking = [finding for finding in mine if finding.severity >= self.fail_on]
        warnings = [_message(finding) for finding in mine if finding.severity < self.fail_on]
        errors = [str(error) for error in report.errors]
        if not blocking and not errors:
            response: dict[str, Any] = {"uid": uid, "allowed": True}
            if warnings:
                response["warnings"] = warnings
            return response
        return _denial(uid, "; ".join([*(_message(finding) for finding in blocking), *errors]), warnings)

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
            and user.get("username") in self._claim_writers
        )

    def _templates_named_by(self, obj: Mapping[str, Any], namespace: str) -> tuple[list[Mapping[str, Any]], list[str]]:
        """The templates `obj` names that exist, and what could not be read."""
        names = sorted(set(_template_names(obj)))
        found: list[Mapping[str, Any]] = []
        failures: list[str] = []
        for name in names:
            try:
                template = self.templates.get(namespace, name)
            except TemplateLookupError as error:
                failures.append(str(error))
            except Exception as error:  # a TemplateSource that raised something else
                failures.append(f"ResourceClaimTemplate {namespace}/{name}: {type(error).__name__}: {error}")
            else:
                if template is not None:
                    found.append(template)
        for failure in failures:
            _log(event="template lookup failed", error=failure)
        return found, failures


def _template_names(obj: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    stack: list[Any] = [obj]
    while stack:
        current = stack.pop()
        if isinstance(current, Mapping):
            name = current.get("resourceClaimTemplateName")
            if isinstance(name, str):
                found.append(name)
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return found


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


def _denial(uid: str, message: str, warnings: Sequence[str] = ()) -> dict[str, Any]:
    response: dict[str, Any] = {
        "uid": uid,
        "allowed": False,
        "status": {"code": 403, "reason": "Forbidden", "message": message},
    }
    if warnings:
        response["warnings"] = list(warnings)
    return response


def _parse_review(body: bytes) -> tuple[dict[str, Any] | None, str]:
    try:
        review = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None, "the body is not JSON"
    if not isinstance(review, dict) or review.get("kind") != "AdmissionReview":
        return None, "not an AdmissionReview"
    if review.get("apiVersion") != REVIEW_API:
        return None, f"AdmissionReview must be {REVIEW_API}"
    request = review.get("request")
    if not isinstance(request, dict) or not isinstance(request.get("uid"), str) or not request["uid"]:
        return None, "AdmissionReview has no request with a uid"
    return review, ""


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b""
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _respond(send: Send, status: int, payload: Mapping[str, Any]) -> None:
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            _log(event="started")
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            _log(event="stopped")
            await send({"type": "lifespan.shutdown.complete"})
            return


def _log(**fields: Any) -> None:
    _LOG.info(json.dumps({"time": round(time.time(), 3), **fields}, ensure_ascii=False, sort_keys=True))
