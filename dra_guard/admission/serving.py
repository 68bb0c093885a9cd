"""How `dra-guard webhook` is served: bounded, with a certificate it reloads, and probes apart.

The review port is HTTPS on uvicorn's h11 protocol with kube-apiserver's own deadlines
(k8s.io/apiserver pkg/server/secure_serving.go: `ReadHeaderTimeout` 32 s, `IdleTimeout`
90 s), which uvicorn lacks for the first: a connection that has not sent a whole request
head within `read_header_timeout` of connecting (or of its first byte after a kept-alive
response) is closed, so are idle kept-alive connections after `idle_timeout`, and a
connection whose answers stay unread for `unread_answer_timeout` (its writing paused, with
`WRITE_BUFFER_BYTES` unsent, or more than that unsent and not going down by as much;
uvicorn would wait for ever; the kernel holds `SEND_BUFFER_BYTES` of them at most); at `max_connections` a new
connection closes another that is not under review (`_make_way`: the one whose answers
have been unread longest, then one whose client sent a request ahead of reading an answer,
then one the server closed, then the one whose body has stalled longest, then the idle one
accepted first, then the one whose body has been arriving longest), or is itself closed
when every other is under review; TLS handshakes under way are capped at as many (past
that, one is cut off for the newcomer: `_cut_for`).  A client that sends a request before
the answer to the one under way is complete has that one answered and its connection
closed, and a connection not being read holds at most `TLS_READ_BUFFER_BYTES` in the TLS
layer. The request body is read
by the application under the review's deadline (`dra_guard.admission.webhook`).

Every cap comes from one number, the memory limit the generated Deployment sets
(`MEMORY_LIMIT_MIB`, `Limits.for_memory`): an eighth of it for connections at
`CONNECTION_KIB` each, as many TLS handshakes under way at `HANDSHAKE_KIB` each, a
sixteenth for the bytes of request bodies received and not yet parsed (read before a
review slot is taken, so a slow body holds only what it has sent), and what is left after
the process's own `BASELINE_MIB` for reviews at `REVIEW_MIB` each (the largest body, 3 MiB,
parsed and checked). 256 MiB gives 128 connections, 128 handshakes (16 MiB), 16 MiB of
bodies and 4 reviews in flight.

The kernel hands either port a connection only once its client has sent something
(`DEFER_ACCEPT_SECONDS`), up to the port's backlog: a client that never speaks holds no
place meanwhile.

`/healthz` and `/readyz` are also served on a plain-HTTP probe port of their own, with
its own small connection cap, so the kubelet's probes are answered while the review port
is full. `/readyz` fails while the serving certificate is expired or not yet valid.

`ServingCertificate` loads the certificate and key into the live `SSLContext` and reloads
them when the mounted files change (their inode, size or modification time, looked at
every `CERTIFICATE_CHECK_INTERVAL` seconds, as controller-runtime's certwatcher polls): new
handshakes get the new certificate, open connections keep theirs, and files that do not
load (a key that does not match, a half-written file) leave the old pair in place, logged.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime
import itertools
import json
import logging
import operator
import os
import re
import socket
import ssl
import struct
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    import fcntl
    import termios
except ImportError:  # pragma: no cover - not Unix
    fcntl = termios = None  # type: ignore[assignment]

# --- sizing: everything from the memory limit ---------------------------------------

#: The memory limit of the generated Deployment (dra_guard.admission.deploy sets it from
#: here, and passes the container's real limit back with the Downward API).
MEMORY_LIMIT_MIB = 256
#: What the process holds before any review: the interpreter, the rules, the `kubernetes`
#: client (about 50 MiB measured after a thousand reviews on loopback), rounded up.
BASELINE_MIB = 64
#: One open connection at most, the larger of what it holds receiving a request and
#: answering one: h11's buffer for an incomplete request head (`MAX_HEADER_BYTES`) or the
#: head parsed (`MAX_HEADER_FIELDS` at most), uvicorn's
#: body buffer up to its high-water mark (64 KiB) and one more read (`TLS_READ_BUFFER_BYTES`),
#: or the answers unsent (`WRITE_BUFFER_BYTES` in the TLS layer, as much again below it);
#: with the TLS layer's read buffer (`TLS_READ_BUFFER_BYTES`: asyncio's own 256 KiB went
#: uncounted), the TLS records (2 x 17 KiB) and the objects around them (an idle connection
#: measured 94 KiB).
CONNECTION_KIB = 256
#: One TLS handshake under way at most: the TLS layer's read buffer (`TLS_READ_BUFFER_BYTES`),
#: OpenSSL's handshake state and the objects around them (89 KiB measured, each of 120
#: half-finished handshakes held at once), rounded up.  As many handshakes as connections
#: may be under way, and they get a share of their own.
HANDSHAKE_KIB = 128
#: One review at most: the largest body accepted (3 MiB), its parsed JSON (at most 24 MiB,
#: estimated before it is parsed: dra_guard.admission.json_budget) and the engine's working
#: set over it.
REVIEW_MIB = 32
#: Connections get this share of the limit.
CONNECTION_SHARE = 8
#: Request bodies received and not yet parsed get this share: five of the largest (3 MiB)
#: with 256 MiB, or thousands of the usual few KiB.
BODY_SHARE = 16
#: kube-apiserver's own deadlines (k8s.io/apiserver pkg/server/secure_serving.go).
READ_HEADER_TIMEOUT = 32.0
IDLE_TIMEOUT = 90
#: A TLS handshake must finish within this (asyncio's default is 60 s).  Go's server reads
#: the handshake under the request head's deadline; a connection that never finishes it is
#: held by asyncio's TLS layer, before the connection cap counts it.  The API server's client
#: finishes in milliseconds on a cluster network.
TLS_HANDSHAKE_TIMEOUT = 10.0
#: A request body still arriving this long after its head is stalled: it may be cut off to
#: make room for another request, at the connection cap (`ConnectionLimits`) and when the
#: budget of body bytes is spent (`dra_guard.admission.webhook`).  The API server writes an
#: AdmissionReview (3 MiB at most) right behind its head; at 1 s that is 25 Mbit/s.  Without
#: it, six clients sending most of a 3 MiB body with `?timeout=30s` held the 16 MiB budget,
#: and 128 sending a head alone held every connection, for 30 s at a time, again and again.
STALLED_BODY_SECONDS = 1.0
#: The buffer asyncio's TLS layer reads each connection's socket into, held from the moment
#: it is accepted (asyncio.sslproto.SSLProtocol.max_size, 256 KiB; `_smaller_read_buffer`):
#: a connect flood held the handshakes' and the connections' buffers, and those of the
#: flood's connections the garbage collector had not yet freed (their objects form
#: reference cycles), 251-341 MiB under a 256 MiB limit; 121 MiB with 32 KiB.  A TLS
#: record is 16 KiB at most, and a 3 MiB body takes 96 reads instead of 12.
TLS_READ_BUFFER_BYTES = 32 * 1024
#: How long a connection the server closed waits for the client's TLS close_notify (asyncio's
#: default is 30 s, held below the connection cap; Go's server does not wait at all).
TLS_SHUTDOWN_TIMEOUT = 2.0
#: How long an answer may wait for its client to read it.  Writing pauses once a connection
#: holds `WRITE_BUFFER_BYTES` of answers unsent (and the kernel's buffers are full), and
#: uvicorn then waits for it to resume with no deadline: 128 clients that pipelined reviews
#: and never read the answers held every connection for as long as they stayed, and 8 of
#: them the probe port (95 probes failed in a row, and the kubelet restarts the pod).  The API
#: server reads its answer, a few KiB, as it arrives; a client that leaves 64 KiB unread for
#: 2 s (as long as `TLS_SHUTDOWN_TIMEOUT` lets a closed connection wait) is not reading at all.
UNREAD_ANSWER_SECONDS = 2.0
#: Bytes of answers a connection holds unsent before its writing pauses (asyncio's TLS layer
#: holds 512 KiB by default, on top of the socket's 64 KiB): a review's answer is a few KiB.
WRITE_BUFFER_BYTES = 64 * 1024
#: The kernel's send buffer of each connection (SO_SNDBUF, which Linux doubles and then
#: stops growing): answers a client leaves unread are then held where the server sees them
#: (`WRITE_BUFFER_BYTES`, the deadline for answers left unread), not in the kernel, whose
#: buffer grows on its own to 4 MiB (`tcp_wmem`): on loopback it took 2.3 MB of an answer
#: nobody read, in memory charged to the pod.  128 KiB in flight is 128 MB/s at 1 ms.
SEND_BUFFER_BYTES = 64 * 1024
#: The longest request head accepted (h11's default); the API server's are a few hundred bytes.
MAX_HEADER_BYTES = 16 * 1024
#: The most header fields a request head may have (Apache httpd's `LimitRequestFields`);
#: the API server and the kubelet send fewer than ten.  h11 parses each into a few Python
#: objects, some 200 bytes: 16 KiB of empty fields is 0.8 MB parsed, held while the body is
#: awaited.
MAX_HEADER_FIELDS = 100
#: Connections waiting to be accepted (the kernel's queue), instead of uvicorn's 2048.
BACKLOG = 128
#: How long the kernel keeps a connection that has sent nothing from being accepted
#: (Linux's TCP_DEFER_ACCEPT, as nginx's `listen ... deferred`): both ports' clients speak
#: first (a ClientHello, a request), so a connection is handed to the server once its
#: first bytes arrive; one that stays silent is handed over at the end of this (rounded
#: up to the kernel's SYN-ACK retransmissions: 1 + 2 + 4 s), and holds no place meanwhile.
#: Only as many as the port's backlog wait so: past it the kernel answers with SYN
#: cookies, and those connections are accepted at once, as without it.
DEFER_ACCEPT_SECONDS = 5
#: The probe port: plain HTTP, /healthz and /readyz only.
PROBE_PORT = 8081
PROBE_CONNECTIONS = 8
PROBE_TIMEOUT = 5.0
#: How often the certificate files are looked at (controller-runtime's certwatcher: 10 s).
CERTIFICATE_CHECK_INTERVAL = 10.0
#: How long a stopping server lets reviews in flight finish.
GRACEFUL_SHUTDOWN_SECONDS = 5

_LOG = logging.getLogger("dra_guard.webhook")
#: One encoder for every log line: `json.dumps` with options builds a new one per call.
_LINE = json.JSONEncoder(ensure_ascii=False, sort_keys=True)


class JsonLines(logging.StreamHandler):  # type: ignore[type-arg]
    """The webhook's log: each record's message, a JSON line, written as it is."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.setFormatter(logging.Formatter("%(message)s"))

    def write_line(self, line: str) -> None:
        """`line` written and flushed, as `emit` writes a record's message."""
        with self.lock:  # type: ignore[union-attr]
            self.stream.write(line + self.terminator)
            self.flush()


def log_event(**fields: Any) -> None:
    """One JSON line (keys sorted, `time` added) on the `dra_guard.webhook` logger.

    Where the logger's one handler is the webhook's own (`JsonLines`, what `dra-guard
    webhook` sets up) and nothing filters, the line is written straight to it: a record, its
    filtering and formatting cost more than the line.  Otherwise the record is made and
    handled as logging does (`Logger.info` would also walk the stack for a file and line
    no line shows)."""
    if not _LOG.isEnabledFor(logging.INFO):
        return
    line = _LINE.encode({"time": round(time.time(), 3), **fields})
    handlers = _LOG.handlers
    if len(handlers) == 1 and not _LOG.propagate and not _LOG.filters:
        (handler,) = handlers
        if type(handler) is JsonLines and not handler.filters and handler.level <= logging.INFO:
            handler.write_line(line)
            return
    _LOG.handle(_LOG.makeRecord(_LOG.name, logging.INFO, "", 0, line, (), None))


@dataclass(frozen=True)
class ConnectionLimits:
    """What one listening port allows."""

    max_connections: int
    read_header_timeout: float = READ_HEADER_TIMEOUT
    idle_timeout: int = IDLE_TIMEOUT
    max_header_bytes: int = MAX_HEADER_BYTES
    backlog: int = BACKLOG
    tls_handshake_timeout: float = TLS_HANDSHAKE_TIMEOUT
    stalled_body_timeout: float = STALLED_BODY_SECONDS
    unread_answer_timeout: float = UNREAD_ANSWER_SECONDS


#: The probe port's: a few connections, short deadlines (the kubelet's probes time out in 2 s).
PROBE_LIMITS = ConnectionLimits(
    PROBE_CONNECTIONS, read_header_timeout=PROBE_TIMEOUT, idle_timeout=int(PROBE_TIMEOUT), backlog=16
)


@dataclass(frozen=True)
class Limits:
    """The review port's connection limits, how many reviews may be in flight at once, and
    how many bytes of request bodies may be held before they are parsed."""

    connections: ConnectionLimits
    max_reviews: int
    body_bytes: int

    @classmethod
    def for_memory(cls, memory_mib: int = MEMORY_LIMIT_MIB) -> Limits:
        """The limits for a container limited to `memory_mib` MiB (see the module's doc)."""
        connections_mib, handshakes_mib, bodies_mib, reviews_mib = _shares(memory_mib)
        if reviews_mib < REVIEW_MIB:
            least = next(mib for mib in itertools.count(memory_mib) if _shares(mib)[3] >= REVIEW_MIB)
            raise ValueError(
                f"--memory-limit-mib: {memory_mib} MiB leaves no room for one review of {REVIEW_MIB} MiB after the "
                f"process's {BASELINE_MIB} MiB, the connections' {connections_mib} MiB, their TLS handshakes' "
                f"{handshakes_mib} MiB and the request bodies' {bodies_mib} MiB; give at least {least}"
            )
        return cls(_connections(connections_mib), reviews_mib // REVIEW_MIB, bodies_mib * 2**20)


def _connections(connections_mib: int) -> ConnectionLimits:
    return ConnectionLimits(connections_mib * 1024 // CONNECTION_KIB)


def _shares(memory_mib: int) -> tuple[int, int, int, int]:
    """MiB of `memory_mib` for connections, for their TLS handshakes under way (as many as
    connections), for request bodies and for reviews."""
    connections_mib = memory_mib // CONNECTION_SHARE
    handshakes_mib = -(-_connections(connections_mib).max_connections * HANDSHAKE_KIB // 1024)
    bodies_mib = memory_mib // BODY_SHARE
    return (
        connections_mib,
        handshakes_mib,
        bodies_mib,
        memory_mib - BASELINE_MIB - connections_mib - handshakes_mib - bodies_mib,
    )


# --- TLS ------------------------------------------------------------------------------

#: `--tls-min-version`, by the names Kubernetes components take (`VersionTLS12`) and short.
TLS_VERSIONS: Mapping[str, ssl.TLSVersion] = {
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
    "1.2": ssl.TLSVersion.TLSv1_2,
    "1.3": ssl.TLSVersion.TLSv1_3,
}
DEFAULT_TLS_MIN_VERSION = "1.2"
#: `--tls-cipher-suites`: the IANA names Kubernetes components take (Go's secure TLS 1.2
#: suites), as OpenSSL names them. TLS 1.3's suites cannot be chosen, here as in Go.
CIPHER_SUITES: Mapping[str, str] = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
}


def server_context(min_version: str = DEFAULT_TLS_MIN_VERSION, cipher_suites: str | None = None) -> ssl.SSLContext:
    """A server `SSLContext` with no certificate yet; raises `ValueError` naming the flag."""
    version = TLS_VERSIONS.get(min_version)
    if version is None:
        raise ValueError(f"--tls-min-version: {min_version!r} is not one of {', '.join(TLS_VERSIONS)}")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = version
    context.set_alpn_protocols(["http/1.1"])
    if cipher_suites is not None:
        names = [name.strip() for name in cipher_suites.split(",") if name.strip()]
        unknown = [name for name in names if name not in CIPHER_SUITES]
        if not names or unknown:
            raise ValueError(
                f"--tls-cipher-suites: {', '.join(unknown) or 'none given'}: not one of {', '.join(CIPHER_SUITES)} "
                "(TLS 1.3's suites cannot be chosen)"
            )
        if version is ssl.TLSVersion.TLSv1_3:
            raise ValueError(
                "--tls-cipher-suites: only TLS 1.2 suites can be chosen, and --tls-min-version 1.3 has none"
            )
        context.set_ciphers(":".join(dict.fromkeys(CIPHER_SUITES[name] for name in names)))
    return context


class CertificateError(ValueError):
    """The serving certificate or key cannot be used; the message names the file."""


@dataclass(frozen=True)
class CertificateInfo:
    serial: int
    not_before: datetime.datetime
    not_after: datetime.datetime


def _certificate_info(pem: bytes) -> CertificateInfo:
    from cryptography import x509

    try:
        certificate = x509.load_pem_x509_certificate(pem)
    except ValueError as error:
        raise ValueError(f"not a PEM certificate ({error})") from None
    return CertificateInfo(certificate.serial_number, certificate.not_valid_before_utc, certificate.not_valid_after_utc)


def _load_chain(context: ssl.SSLContext, certificate: bytes, key: bytes) -> None:
    """`context.load_cert_chain` from bytes already read, so the pair checked is the pair
    loaded (the files may change in between): anonymous memory files where Linux has
    them (the root filesystem is read-only in the pod), else a private directory."""
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is not None and os.path.isdir("/proc/self/fd"):
        descriptors: list[int] = []
        try:
            for name, data in (("tls.crt", certificate), ("tls.key", key)):
                descriptor = memfd_create(f"dra-guard-{name}", getattr(os, "MFD_CLOEXEC", 0))
                descriptors.append(descriptor)
                view = memoryview(data)
                while view:
                    view = view[os.write(descriptor, view) :]
            context.load_cert_chain(*(f"/proc/self/fd/{descriptor}" for descriptor in descriptors))
        finally:
            for descriptor in descriptors:
                os.close(descriptor)
        return
    with tempfile.TemporaryDirectory(prefix="dra-guard-tls-") as directory:  # pragma: no cover - not Linux
        files = [Path(directory, "tls.crt"), Path(directory, "tls.key")]
        for file, data in zip(files, (certificate, key), strict=True):
            file.write_bytes(data)
            file.chmod(0o600)
        context.load_cert_chain(files[0], files[1])


class ServingCertificate:
    """The certificate and key in `context`, from `cert_file` and `key_file`, reloaded when they change."""

    def __init__(self, context: ssl.SSLContext, cert_file: str | os.PathLike[str], key_file: str | os.PathLike[str]):
        self.context = context
        self.cert_file, self.key_file = Path(cert_file), Path(key_file)
        self.info: CertificateInfo | None = None
        self._identity: tuple[tuple[int, int, int], ...] | None = None
        self._valid: bool | None = None
        self._now: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.timezone.utc)

    def _stat(self) -> tuple[tuple[int, int, int], ...]:
        # os.stat follows the Secret volume's `..data` symlink to the files of the moment.
        stats = [os.stat(file) for file in (self.cert_file, self.key_file)]
        return tuple((stat.st_ino, stat.st_size, stat.st_mtime_ns) for stat in stats)

    def _read_and_install(self) -> CertificateInfo:
        """Raises OSError, ValueError or ssl.SSLError; the live context is changed only on success."""
        certificate, key = self.cert_file.read_bytes(), self.key_file.read_bytes()
        info = _certificate_info(certificate)
        # A pair that does not load must not reach the live context (OpenSSL would keep the
        # new certificate without a key): load it into a throwaway context first.
        _load_chain(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), certificate, key)
        _load_chain(self.context, certificate, key)
        return info

    def load(self) -> None:
        """The first load, at startup: raises `CertificateError` naming the file and the problem."""
        try:
            self._identity = self._stat()
            self.info = self._read_and_install()
        except ssl.SSLError as error:  # an OSError too
            raise CertificateError(
                f"--tls-cert/--tls-key: {self.cert_file} and {self.key_file} do not load as a certificate and its "
                f"key: {error.reason or error}"
            ) from None
        except OSError as error:
            name = "--tls-key" if Path(str(error.filename or "")) == self.key_file else "--tls-cert"
            raise CertificateError(f"{name}: {error.filename}: {error.strerror or error}") from None
        except ValueError as error:
            raise CertificateError(f"--tls-cert: {self.cert_file}: {error}") from None
        log_event(event="certificate loaded", **self._fields())
        self._note_validity()

    def refresh(self) -> bool:
        """Reload when the files changed; never raises. Whether a new pair was loaded."""
        try:
            identity = self._stat()
        except OSError as error:
            if self._identity is not None:
                log_event(event="certificate reload failed", error=f"{error.filename}: {error.strerror or error}")
                self._identity = None
            self._note_validity()
            return False
        if identity == self._identity:
            self._note_validity()
            return False
        # Once per change of the files: a pair that fails is tried again when they change again.
        self._identity = identity
        try:
            info = self._read_and_install()
        except (OSError, ValueError, ssl.SSLError) as error:
            log_event(event="certificate reload failed", error=f"{type(error).__name__}: {error}", **self._fields())
            self._note_validity()
            return False
        self.info = info
        log_event(event="certificate reloaded", **self._fields())
        self._note_validity()
        return True

    def problem(self) -> str | None:
        """Why the certificate in use is not valid now, or None."""
        info = self.info
        if info is None:
            return "no serving certificate is loaded"
        now = self._now()
        if now < info.not_before:
            return f"the serving certificate is not valid before {info.not_before.isoformat()}"
        if now >= info.not_after:
            return f"the serving certificate expired at {info.not_after.isoformat()}"
        return None

    def _fields(self) -> dict[str, Any]:
        info = self.info
        if info is None:
            return {}
        return {
            "serial": format(info.serial, "x"),
            "not_before": info.not_before.isoformat(),
            "not_after": info.not_after.isoformat(),
        }

    def _note_validity(self) -> None:
        problem = self.problem()
        if (problem is None) != self._valid:
            self._valid = problem is None
            if problem is None:
                log_event(event="certificate valid", **self._fields())
            else:
                log_event(event="certificate not valid", error=problem, **self._fields())

    async def watch(self, interval: float = CERTIFICATE_CHECK_INTERVAL) -> None:
        while True:
            await asyncio.sleep(interval)
            self.refresh()


# --- connections ----------------------------------------------------------------------


def listening_socket(host: str, port: int) -> socket.socket:
    """A bound socket for `host`:`port` (uvicorn listens on it); raises OSError."""
    family, kind, protocol, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, protocol)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)  # the connections accepted get it
        if hasattr(socket, "TCP_DEFER_ACCEPT"):  # Linux
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT, DEFER_ACCEPT_SECONDS)
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock


class _Throttled:
    """Logs an event at most once per `interval` seconds for each reason, with how often it
    happened for that reason: one reason's flood (idle connections closed for newcomers)
    hides no other (requests cut off in the middle)."""

    def __init__(self, event: str, interval: float = 10.0) -> None:
        self.event, self.interval = event, interval
        #: Per reason: how often since it was last logged, and when that was.
        self._seen: dict[Any, tuple[int, float]] = {}

    def __call__(self, **fields: Any) -> None:
        reason = fields.get("reason")
        count, last = self._seen.get(reason, (0, float("-inf")))
        count += 1
        now = time.monotonic()
        if now - last >= self.interval:
            log_event(event=self.event, count=count, **fields)
            count, last = 0, now
        self._seen[reason] = (count, last)


class CoalescedWrites(asyncio.Transport):
    """A transport that sends what is written in one turn of the event loop as one write.

    uvicorn writes an answer's head and its body apart, and each write through TLS is a
    record of its own and a socket send (about a third of the server's time for a small
    review, measured with py-spy); both are made before the task waits again, so the
    flush scheduled by the first sends them together.  Nothing waits longer than that turn:
    a `100 Continue` goes out when the task waits for the body."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._transport, self._loop = transport, loop
        self._pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(bytes(data))

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        for data in list_of_data:
            self.write(data)

    def _flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def abort(self) -> None:
        self._pending.clear()
        self._transport.abort()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(map(len, self._pending))

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._transport.get_write_buffer_limits()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)

    def can_write_eof(self) -> bool:
        return False  # uvicorn never half-closes; TLS cannot


#: The blank line that ends a request head, as h11 finds it (h11/_receivebuffer.py).
_BLANK_LINE = re.compile(b"\n\r?\n")


def bounded_protocol(limits: ConnectionLimits, port: str, *, tls: bool = True) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with a connection cap, a deadline for the request head, an
    answer's writes sent as one (`CoalescedWrites`) and a JSON 400 for malformed HTTP; on a
    port with `tls`, a cap of TLS handshakes under way."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    refused = _Throttled("connection refused")
    slow = _Throttled("connection closed")
    evicted = _Throttled("connection evicted")
    #: This port's connections since they were accepted: each counts as a handshake under
    #: way until it is made (or its handshake deadline has passed).
    accepted: weakref.WeakSet[BoundedH11Protocol] = weakref.WeakSet()

    class BoundedH11Protocol(H11Protocol):
        _head_deadline: asyncio.TimerHandle | None = None
        #: Closes the connection when its writing stays paused (`UNREAD_ANSWER_SECONDS`).
        _write_deadline: asyncio.TimerHandle | None = None
        #: When its writing paused (loop time), None while the client reads its answers.
        _paused_at: float | None = None
        #: Looks again at the answers it holds unsent (`_watch_unsent`).
        _unsent_check: asyncio.TimerHandle | None = None
        _accepted_at = 0.0
        _handshake: asyncio.Transport | None = None
        #: The address its handshake comes from, and whether any of its bytes have arrived.
        _peer: str | None = None
        _heard = False
        #: When the request under way had its head read (loop time).
        _request_at = 0.0
        #: The request head arriving (`_head_refusal`): its bytes and lines so far, and its
        #: last two bytes (the blank line that ends it may come in two reads).
        _head_bytes = 0
        _head_lines = 0
        _head_tail = b""
        _refused = False
        _made = False
        _evicted = False

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            # Made as a connection is accepted, before its TLS handshake, which holds
            # `HANDSHAKE_KIB` (up to TLS_HANDSHAKE_TIMEOUT), so those have a cap of their
            # own, as many as connections -- 780 connections that never said hello took the
            # process past its memory limit when nothing counted them.
            # They make no idle connection give way: the API server's kept-alive ones stay.
            # At that cap a handshake under way is cut off for the newcomer
            # (`handshake_began`), as a stalled request makes way at the connection cap:
            # refusing the newcomer let 64 connections that never said hello shut the port
            # for the handshake deadline, again and again.
            super().__init__(*args, **kwargs)
            self._accepted_at = self.loop.time()
            if not tls:
                # No handshake: the connection is made in the next turn of the loop.  Counted
                # as handshakes, connections accepted in one turn past half the probe port's
                # 8 were refused.
                return
            handshaking = _handshaking(self._accepted_at)
            if len(handshaking) >= handshakes and all(other._handshake is None for other in handshaking):
                # This loop does not say which transport a handshake runs on (`_bound_tls`):
                # none can be cut off.
                refused(port=port, reason="at the limit of handshakes under way", limit=handshakes)
                # Out of the loop's accept: it drops the socket (closed with it, unanswered).
                raise ConnectionRefusedError(f"{port}: at the limit of handshakes under way")
            accepted.add(self)

        def handshake_began(self, transport: asyncio.Transport, peer: str | None = None) -> None:
            """The TLS transport this connection's handshake runs on (`_bound_tls`), by which
            the handshake can be cut off before the connection is made, and the address it
            comes from.  Past the cap of handshakes under way, one of the others is cut off
            (`_cut_for`)."""
            self._handshake, self._peer = transport, peer
            handshaking = _handshaking(self._accepted_at)
            if len(handshaking) > handshakes:
                _cut_for(self, handshaking)

        def handshake_heard(self) -> None:
            """The first bytes of its handshake arrived (`_bound_tls`)."""
            self._heard = True

        def handshake_bytes_waiting(self) -> bool:
            """Bytes of its handshake have arrived that the loop has not read yet."""
            sock = None if self._handshake is None else self._handshake.get_extra_info("socket")
            return sock is not None and _bytes_waiting(sock.fileno())

        def cut_handshake(self) -> None:
            self._evicted = True
            evicted(port=port, reason="a TLS handshake under way made way for a new connection", limit=handshakes)
            if self._handshake is not None:
                self._handshake.abort()
                # A connection accepted in this turn of the loop has no socket under its TLS
                # yet (asyncio attaches it in the next): the second abort finds it there.
                self.loop.call_soon(self._handshake.abort)

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            self._made = True
            super().connection_made(transport)
            peers = self._peers()
            if _live(peers) > limits.max_connections and not _make_way(peers, self):
                refused(port=port, reason="at the connection limit", limit=limits.max_connections)
                # abort, not close: a TLS close waits up to 30 s for the client's close_notify.
                transport.abort()
                return
            transport.set_write_buffer_limits(high=WRITE_BUFFER_BYTES)
            if tls:
                # Bytes received and not yet read by h11 (reading paused while a body waits
                # for the review, or a pipelined request for its turn): asyncio's TLS layer
                # holds up to 256 KiB of them; one read's worth is enough to keep it busy.
                transport.set_read_buffer_limits(high=TLS_READ_BUFFER_BYTES)  # type: ignore[attr-defined]
            # After super(): its flow control pauses and resumes reading on the transport itself.
            self.transport = CoalescedWrites(transport, self.loop)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            refusal = self._head_refusal(data)
            if refusal is not None:
                self._refused = True
                slow(port=port, reason=refusal)
                self._answer_400(refusal)
                return
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:
                self._disarm()
                if self.pipelining() and self.cycle.keep_alive:
                    self._close_after_answer()
            elif self._head_deadline is None:
                # Part of a request head on a kept-alive connection: its deadline runs from
                # these first bytes.  A head that came whole (the API server sends it so)
                # needs no timer at all.
                self._arm()

        def _head_refusal(self, data: bytes) -> str | None:
            """Why the request head `data` is part of is refused (too long, too many fields),
            or None, counted before h11 parses it.  h11 bounds only a head still incomplete
            (`max_incomplete_event_size`): one that arrived whole in a read (up to 48 KiB
            through the TLS layer, 256 KiB on the probe port) was parsed whatever its size,
            and 128 connections each holding a head of 30 KB of empty fields, their bodies
            awaited, took the process from 48 to 177 MiB.  Counted as it arrives, so a head
            sent a byte at a time costs no more than one sent whole."""
            if self.conn.their_state is not h11.IDLE:
                return None
            seen = self._head_tail + data
            end = _BLANK_LINE.search(seen)
            upto = len(data) if end is None else max(0, end.end() - len(self._head_tail))
            self._head_bytes += upto
            self._head_lines += data.count(b"\n", 0, upto)
            size, lines = self._head_bytes, self._head_lines
            if end is None:
                self._head_tail = seen[-2:]
            else:  # the head is whole: the next one, on this connection, starts afresh
                self._head_bytes = self._head_lines = 0
                self._head_tail = b""
            if size > limits.max_header_bytes:
                return f"a request head longer than {limits.max_header_bytes} bytes"
            if lines > MAX_HEADER_FIELDS + 2:  # with the request line and the blank line
                return f"a request head of more than {MAX_HEADER_FIELDS} header fields"
            return None

        def _answer_400(self, problem: str) -> None:
            """A JSON 400 saying `problem`, written as it is (h11 has seen no request to
            answer), and the connection closed."""
            body = json.dumps({"error": f"dra-guard webhook: the request could not be read as HTTP/1.1 ({problem})"})
            head = (
                "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n"
                f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
            )
            self._disarm()
            self.transport.pause_reading()
            self.transport.write(head.encode() + body.encode())
            self.transport.close()

        def _close_after_answer(self) -> None:
            """Its client sent another request before the answer to the one under way was
            complete: that one is answered, then the connection is closed, the requests sent
            ahead unread.  uvicorn would answer them one by one, holding them meanwhile in
            h11's buffer and the TLS layer's (up to its high-water mark) with reading
            paused: some 310 KB a connection.  Neither the API server nor the kubelet
            pipelines (Go's HTTP/1.1 client sends a request on a connection only once the
            answer to the one before is read), and HTTP/1.1 lets a server close a
            connection after any answer (RFC 9112 section 9.3.2: a client retries the
            requests it pipelined on a new one)."""
            self.cycle.keep_alive = False
            slow(port=port, reason="a request sent before the answer to the one under way: answered, then closed")

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            self._reading_again()
            if self._unsent_check is not None:
                self._unsent_check.cancel()
                self._unsent_check = None
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self._unsent_check is None and not self.transport.is_closing():
                self._watch_unsent(None)

        def _unsent(self) -> int:
            """Bytes of answers the connection holds unsent, below the TLS layer included."""
            app: asyncio.Transport = self.transport
            if isinstance(app, CoalescedWrites):
                app = app._transport
            below: Any = getattr(getattr(app, "_ssl_protocol", None), "_transport", None)
            return self.transport.get_write_buffer_size() + (0 if below is None else below.get_write_buffer_size())

        def _watch_unsent(self, before: int | None) -> None:
            """Reset the connection unless the answers it holds unsent, past
            `WRITE_BUFFER_BYTES`, go down by as much every `unread_answer_timeout`.  An
            answer written whole (a denial lists every finding, about as large as its
            object) passes through the TLS layer at once, to be held below it, and the
            writing never pauses (`pause_writing`): 128 clients that each sent a review
            whose denial is 330 KB and read nothing held 81 MiB in the kernel and 37 MiB in
            the process until the idle deadline (90 s); now 1 MiB, reset within 4 s
            (with `SEND_BUFFER_BYTES`).  The API server reads its answer as it arrives;
            64 KiB in 2 s is 256 kbit/s."""
            self._unsent_check = None
            unsent = self._unsent()
            if unsent <= WRITE_BUFFER_BYTES or self.transport.is_closing():
                if self._write_deadline is None:
                    self._paused_at = None
                return
            if before is not None and before - unsent < WRITE_BUFFER_BYTES:
                self._unread_too_long()
                return
            if self._paused_at is None:
                self._paused_at = self.loop.time()  # first to make way at the cap (`unread`)
            self._unsent_check = self.loop.call_later(limits.unread_answer_timeout, self._watch_unsent, unsent)

        def pause_writing(self) -> None:
            """The transport holds more answers unsent than it may: the client is not reading
            them.  uvicorn's answer then waits for `resume_writing`, with no deadline of its
            own: this one closes the connection unless writing resumes in time."""
            super().pause_writing()
            if self._write_deadline is None:
                self._paused_at = self.loop.time()
                self._write_deadline = self.loop.call_later(limits.unread_answer_timeout, self._unread_too_long)

        def resume_writing(self) -> None:
            self._reading_again()
            super().resume_writing()

        def _reading_again(self) -> None:
            self._paused_at = None
            if self._write_deadline is not None:
                self._write_deadline.cancel()
                self._write_deadline = None

        def _unread_too_long(self) -> None:
            self._write_deadline = None
            slow(port=port, reason=f"answers left unread {limits.unread_answer_timeout:g} s")
            self._reset()

        def _reset(self) -> None:
            """Abort the connection with a TCP reset, dropping what it holds unsent.  A close,
            even an abort, leaves the unsent answers to the kernel, which keeps trying to send
            them to a client that reads nothing (in memory charged to the pod) for minutes; a close
            from uvicorn waits for them to be read (on plain HTTP with no deadline at all)."""
            sock = self.transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.transport.abort()

        def handle_events(self) -> None:
            # uvicorn starts a request's cycle here, from data_received or, for a request
            # the client sent early, as the previous answer completes.
            cycle = self.cycle
            super().handle_events()
            if self.cycle is not cycle:
                self._request_at = self.loop.time()

        def _arm(self) -> None:
            self._disarm()
            self._head_deadline = self.loop.call_later(limits.read_header_timeout, self._head_too_slow)

        def _disarm(self) -> None:
            if self._head_deadline is not None:
                self._head_deadline.cancel()
                self._head_deadline = None

        def _head_too_slow(self) -> None:
            self._head_deadline = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                slow(port=port, reason=f"no request head within {limits.read_header_timeout:g} s")
                self.transport.abort()

        def _peers(self) -> list[BoundedH11Protocol]:
            """This port's connections made (uvicorn's set; each is one of these)."""
            return [connection for connection in self.connections if isinstance(connection, BoundedH11Protocol)]

        def idle(self) -> bool:
            """No request under way: none begun (or only part of its head), none answered."""
            return (
                self._made
                and not self._evicted
                and self.conn.their_state is h11.IDLE
                and (self.cycle is None or self.cycle.response_complete)
            )

        def unread(self) -> bool:
            """Its writing paused: its client leaves the answers unread."""
            return self._made and not self._evicted and self._paused_at is not None

        def bytes_waiting(self) -> bool:
            """Bytes have arrived on its socket that the loop has not read yet."""
            sock = self.transport.get_extra_info("socket")
            return sock is not None and _bytes_waiting(sock.fileno())

        def pipelining(self) -> bool:
            """Its client sent another request before reading the answer to the one under way
            (neither the API server nor the kubelet does: Go's HTTP/1.1 client never pipelines)."""
            return (
                self._made
                and not self._evicted
                and self.conn.their_state is h11.DONE
                and bool(self.conn.trailing_data[0])
            )

        def receiving(self) -> bool:
            """A request whose body is still arriving."""
            return self._made and not self._evicted and self.conn.their_state is h11.SEND_BODY

        def stalled(self, now: float) -> bool:
            """A request whose body is still arriving `stalled_body_timeout` after its head."""
            return self.receiving() and now - self._request_at > limits.stalled_body_timeout

        def closing(self) -> bool:
            """Answered and closed by the server: its TLS close waits for the client's."""
            return self._made and not self._evicted and self.transport.is_closing()

        def evict(self, reason: str) -> None:
            self._evicted = True
            evicted(port=port, reason=reason, limit=limits.max_connections)
            self._disarm()
            if self._paused_at is not None:
                self._reset()
            else:
                self.transport.abort()

        def send_400_response(self, msg: str) -> None:
            """What uvicorn answers a request h11 cannot parse, in JSON as every other answer
            (uvicorn's own is text/plain); the connection is closed, as uvicorn closes it."""
            body = json.dumps({"error": f"dra-guard webhook: the request could not be read as HTTP/1.1 ({msg})"})
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ]
            events = (
                h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                h11.Data(data=body.encode()),
            )
            try:
                for event in (*events, h11.EndOfMessage()):
                    self.transport.write(self.conn.send(event) or b"")
            except h11.LocalProtocolError:
                pass  # a response had started already: nothing more can be said on it
            self.transport.close()

    #: TLS handshakes that may be under way at once: as many as connections, at
    #: `HANDSHAKE_KIB` each (half the 64 of them held more, with asyncio's 256 KiB buffers).
    handshakes = max(1, limits.max_connections)

    def _handshaking(now: float) -> list[BoundedH11Protocol]:
        """This port's connections accepted whose handshakes are under way (or ended
        without a word to the protocol, until they are cut off or their deadline passes)."""
        since = now - limits.tls_handshake_timeout - 0.5
        return [other for other in accepted if not other._made and not other._evicted and other._accepted_at >= since]

    def _cut_for(newcomer: BoundedH11Protocol, handshaking: list[BoundedH11Protocol]) -> None:
        """Cut off one handshake under way for `newcomer`, the first there is of: one whose
        connection is gone already; one from the address holding the most handshakes under
        way (the newcomer's counted); of those, one that has sent nothing yet; the oldest,
        passing over one whose client's next bytes have arrived, not yet read.
        Cutting the oldest alone let a flood of reopened silent or half-finished handshakes
        (96 of them) cut 87-97 % of the handshakes of fresh clients, which take longer than
        the flood needs to churn the places; now a flood cuts its own handshakes first,
        those from its address (a client's only handshake is never cut while another
        address holds more) and those that have sent nothing (a client says hello at once)."""
        held = collections.Counter(other._peer for other in handshaking)
        candidates = [other for other in handshaking if other is not newcomer and other._handshake is not None]
        if not candidates:  # pragma: no cover - every handshake began before its newcomer's
            return

        def first(other: BoundedH11Protocol) -> tuple[bool, int, bool, float]:
            assert other._handshake is not None
            return (not other._handshake.is_closing(), -held[other._peer], other._heard, other._accepted_at)

        ranked = sorted(candidates, key=first)
        # Of those alike but for age, one whose client's bytes have arrived unread goes
        # last: its handshake is moving on, not stalled (the oldest only are asked).
        alike = itertools.takewhile(lambda other: first(other)[:3] == first(ranked[0])[:3], ranked[:8])
        next((other for other in alike if not other.handshake_bytes_waiting()), ranked[0]).cut_handshake()

    def _live(connections: Iterable[BoundedH11Protocol]) -> int:
        return sum(not connection._evicted for connection in connections)

    def _make_way(connections: Iterable[BoundedH11Protocol], newcomer: BoundedH11Protocol) -> bool:
        """Close a connection to make way for a new one, the first there is of: the one whose
        client has left its answers unread longest (its writing paused); the one whose client
        sent another request before reading the answer to the one under way, longest under
        way (clients pipelining requests and reading nothing held every place for as long as
        they stayed, the probe port's too: 8 of them failed 95 probes in a row); one the
        server has closed, still waiting for the client's TLS close (clients that sent
        `Connection: close` and stayed silent held the cap for asyncio's 30 s); the one
        whose request body has stalled longest; the idle one accepted first (one whose
        request has arrived, not yet read, after the others); the one whose
        request body has been arriving longest, however briefly (clients pipelining tiny
        requests, each body a byte sent half a second late, were never stalled nor idle).
        None of them keeps a client out at the cap: 128 silent connections used to shut the
        review port for 32 s, and 8 the probes' (the API server and the kubelet open
        another when theirs is closed); 128 sending a request head and no body shut it for
        the review's deadline, up to 30 s.  A request being reviewed is never cut off, unless
        its client sent another behind it."""
        others = [connection for connection in connections if connection is not newcomer]
        now = newcomer.loop.time()
        accepted_at, request_at = operator.attrgetter("_accepted_at"), operator.attrgetter("_request_at")
        # (which, the first of them to go, why), in the order they make way.
        choices = (
            (
                BoundedH11Protocol.unread,
                operator.attrgetter("_paused_at"),
                "a connection whose client left its answers unread made way for a new connection",
            ),
            (
                BoundedH11Protocol.pipelining,
                request_at,
                "a connection whose client sent requests ahead of reading the answers made way for a new connection",
            ),
            (
                BoundedH11Protocol.closing,
                accepted_at,
                "a connection closed by the server, waiting for the client's TLS close, made way for a new connection",
            ),
            (
                lambda connection: connection.stalled(now),
                request_at,
                f"a request body still arriving {limits.stalled_body_timeout:g} s after its head made way for a "
                "new connection",
            ),
            (BoundedH11Protocol.idle, accepted_at, "an idle connection made way for a new one"),
            (
                BoundedH11Protocol.receiving,
                request_at,
                "the request body arriving longest made way for a new connection",
            ),
        )
        for which, first, reason in choices:
            candidates = sorted((connection for connection in others if which(connection)), key=first)
            if candidates:
                if which is BoundedH11Protocol.idle:
                    # Idle until the loop reads its request, a turn or two after it is made:
                    # one whose bytes have arrived is passed over (200 silent connections
                    # reopened on the probe port made the kubelet's, its request sent, the
                    # idle one accepted first again and again: 8 of 30 probes failed).
                    candidates.sort(key=BoundedH11Protocol.bytes_waiting)
                candidates[0].evict(reason)
                return True
        return False

    return BoundedH11Protocol


# --- the servers ----------------------------------------------------------------------

Asgi = Callable[..., Any]


def _bound_tls(loop: asyncio.AbstractEventLoop, seconds: float) -> None:
    """Give every TLS server this loop creates a handshake deadline of `seconds` (and a close
    deadline of `TLS_SHUTDOWN_TIMEOUT`), and tell
    each connection's protocol the transport its handshake runs on (`handshake_began`).

    uvicorn creates its listening server with `loop.create_server(..., ssl=context)` and no
    way to pass `ssl_handshake_timeout`, so this loop's (our own, in the webhook's thread)
    create_server adds it.  asyncio hands the protocol nothing before the handshake ends,
    so the loop's `_make_ssl_transport` (asyncio's own event loops have it; without it, a
    handshake cannot be cut off and the newcomer is refused at the cap instead) is wrapped."""
    create_server = loop.create_server

    async def with_deadline(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("ssl") is not None:
            kwargs.setdefault("ssl_handshake_timeout", seconds)
            if sys.version_info >= (3, 11):  # the parameter came in 3.11
                kwargs.setdefault("ssl_shutdown_timeout", TLS_SHUTDOWN_TIMEOUT)
        return await create_server(*args, **kwargs)

    loop.create_server = with_deadline  # type: ignore[method-assign]
    make_ssl_transport = getattr(loop, "_make_ssl_transport", None)
    if make_ssl_transport is None:
        return

    def telling_the_protocol(rawsock: Any, protocol: Any, *args: Any, **kwargs: Any) -> Any:
        transport = make_ssl_transport(rawsock, protocol, *args, **kwargs)
        ssl_protocol = getattr(transport, "_ssl_protocol", None)
        if ssl_protocol is not None:
            _smaller_read_buffer(ssl_protocol)
        heard = getattr(protocol, "handshake_heard", None)
        if heard is not None and _has_bytes(rawsock):
            # A client sends its ClientHello right behind the TCP handshake: under a flood it
            # is mostly there when the connection is accepted, and the flood's newcomers,
            # accepted in the same turn of the loop, cut handshakes off before any is read.
            heard()
        elif heard is not None and ssl_protocol is not None:
            _on_first_bytes(ssl_protocol, heard)
        began = getattr(protocol, "handshake_began", None)
        if began is not None:
            peer = (kwargs.get("extra") or {}).get("peername")
            began(transport, str(peer[0]) if isinstance(peer, tuple) and peer else None)
        return transport

    loop._make_ssl_transport = telling_the_protocol  # type: ignore[attr-defined]


def _smaller_read_buffer(protocol: Any) -> None:
    """Give asyncio's TLS protocol of one connection a read buffer of
    `TLS_READ_BUFFER_BYTES` instead of its 256 KiB, just made and not yet read into.

    The least global way: `asyncio.sslproto.SSLProtocol.max_size = ...` would change every
    TLS connection of every loop in the process, and making the protocol ourselves would
    copy asyncio's private `_make_ssl_transport`; this changes only the connections this
    server's loop accepts (its `_make_ssl_transport`, wrapped by `_bound_tls`), through the
    instance: the buffer's size is read from `self.max_size` wherever asyncio reads into
    it, grows it or reads from the TLS object (3.11+; 3.10's TLS layer holds no buffer of
    its own).  The 256 KiB made with the protocol is dropped at once, before any read; a
    loop without `_make_ssl_transport` (uvloop, which uvicorn would pick if its own loop
    were used, has its own TLS layer) keeps its own buffers."""
    if not isinstance(getattr(protocol, "_ssl_buffer", None), bytearray) or protocol.max_size <= TLS_READ_BUFFER_BYTES:
        return
    protocol.max_size = TLS_READ_BUFFER_BYTES
    protocol._ssl_buffer = bytearray(TLS_READ_BUFFER_BYTES)
    protocol._ssl_buffer_view = memoryview(protocol._ssl_buffer)


def _bytes_waiting(fileno: int) -> bool:
    """Whether bytes have arrived on the socket `fileno` that nothing has read (FIONREAD;
    asyncio's socket wrapper has no `recv` to peek with).  Never where there is no ioctl."""
    if fcntl is None or termios is None:  # pragma: no cover - not Unix
        return False
    try:
        waiting = fcntl.ioctl(fileno, termios.FIONREAD, b"\0\0\0\0")
    except OSError:
        return False
    return bool(struct.unpack("i", waiting)[0])


def _has_bytes(sock: socket.socket) -> bool:
    """Whether bytes have arrived on `sock` (not read)."""
    try:
        return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except OSError:  # none yet (BlockingIOError), or the connection is gone
        return False


def _on_first_bytes(protocol: asyncio.BaseProtocol, call: Callable[[], None]) -> None:
    """`call()` (a bound method) when the first bytes reach `protocol` (asyncio's TLS
    protocol, under the handshake), and nothing after: its method for them is wrapped for
    that first call only.  The wrapper holds both weakly: a reference cycle through it kept
    each silent connection's TLS buffers (256 KiB) until the garbage collector's next full
    pass, and a flood of them past 460 MiB."""
    name = "buffer_updated" if isinstance(protocol, asyncio.BufferedProtocol) else "data_received"
    if not callable(getattr(protocol, name, None)):
        return
    weak_protocol, weak_call = weakref.ref(protocol), weakref.WeakMethod(call)

    def first(*args: Any) -> Any:
        protocol, call = weak_protocol(), weak_call()
        assert protocol is not None  # it is calling
        delattr(protocol, name)  # the class's own method again
        if call is not None:
            call()
        return getattr(protocol, name)(*args)

    setattr(protocol, name, first)


class WebhookServer:
    """The review port (HTTPS, `limits`) and the probe port (HTTP, `PROBE_LIMITS`) in one loop."""

    def __init__(
        self,
        app: Asgi,
        probes: Asgi,
        *,
        review_socket: socket.socket,
        probe_socket: socket.socket | None,
        certificate: ServingCertificate,
        limits: Limits,
        probe_limits: ConnectionLimits = PROBE_LIMITS,
        certificate_interval: float = CERTIFICATE_CHECK_INTERVAL,
    ) -> None:
        self.app, self.probes = app, probes
        self.review_socket, self.probe_socket = review_socket, probe_socket
        self.certificate, self.limits, self.probe_limits = certificate, limits, probe_limits
        self.certificate_interval = certificate_interval
        self._servers: list[Any] = []
        self._stopping = False
        self.error: BaseException | None = None

    @property
    def port(self) -> int:
        return int(self.review_socket.getsockname()[1])

    @property
    def probe_port(self) -> int | None:
        return None if self.probe_socket is None else int(self.probe_socket.getsockname()[1])

    def _server(self, app: Asgi, limits: ConnectionLimits, name: str, context: ssl.SSLContext | None) -> Any:
        import uvicorn

        config = uvicorn.Config(
            app,
            http=bounded_protocol(limits, name, tls=context is not None),
            interface="asgi3",
            lifespan="on" if context is not None else "off",
            log_config=None,
            access_log=False,
            proxy_headers=False,
            server_header=False,
            timeout_keep_alive=limits.idle_timeout,
            h11_max_incomplete_event_size=limits.max_header_bytes,
            backlog=limits.backlog,
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
        )
        config.load()
        # The live context, whose certificate `ServingCertificate` swaps (uvicorn would
        # make its own from file names, once).
        config.ssl = context
        return uvicorn.Server(config)

    async def serve(self) -> None:
        _bound_tls(asyncio.get_running_loop(), self.limits.connections.tls_handshake_timeout)
        review = self._server(self.app, self.limits.connections, "review", self.certificate.context)
        pairs = [(review, self.review_socket)]
        if self.probe_socket is not None:
            pairs.append((self._server(self.probes, self.probe_limits, "probe", None), self.probe_socket))
        self._servers = [server for server, _ in pairs]
        if self._stopping:
            return
        watcher = asyncio.ensure_future(self.certificate.watch(self.certificate_interval))
        try:
            await asyncio.gather(*(server.serve(sockets=[sock]) for server, sock in pairs))
        finally:
            watcher.cancel()

    @property
    def started(self) -> bool:
        return bool(self._servers) and all(server.started for server in self._servers)

    def stop(self) -> None:
        """Ask both servers to finish (from any thread); they stop within a few seconds."""
        self._stopping = True
        for server in self._servers:
            server.should_exit = True

    def start(self) -> threading.Thread:
        """Serve in a thread of its own (uvicorn then leaves the process's signals alone)."""

        def run() -> None:
            try:
                asyncio.run(self.serve())
            except BaseException as error:  # reported by whoever joins the thread
                self.error = error

        thread = threading.Thread(target=run, name="dra-guard-webhook", daemon=True)
        thread.start()
        return thread

    def wait_started(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not self.started:
            if self.error is not None or time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True
