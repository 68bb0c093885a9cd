"""A stand-in for the API server the webhook reads claim templates from: HTTPS on
127.0.0.1 with a certificate the test makes, answering each GET as the test says (a
status and body, after a delay), recording what it was asked and with which token.

The webhook's real client (`KubernetesTemplates.in_cluster`, the `kubernetes` client's
in-cluster loader) is pointed at it through the files and variables a pod has: the
service-account token and CA files, `KUBERNETES_SERVICE_HOST` and `_PORT`. Nothing but
loopback is used.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from dra_guard.admission.webhook import KubernetesTemplates

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class Answer:
    """What the server answers: `status` with `body` (bytes, or JSON for anything else),
    after `delay` seconds."""

    status: int = 200
    body: Any = b""
    delay: float = 0.0
    content_type: str = "application/json"
    #: Seconds between the bytes of the body (sent one at a time when not 0).
    dribble: float = 0.0

    def payload(self) -> bytes:
        return self.body if isinstance(self.body, bytes) else json.dumps(self.body).encode()


@dataclass
class ApiServer:
    port: int
    ca_file: Path
    #: (path, Authorization header) of every request, in order.
    requests: list[tuple[str, str]] = field(default_factory=list)
    #: The answer for a request's path; the default answers 404 (nothing exists).
    answer: Callable[[str], Answer] = lambda path: Answer(404, {"kind": "Status", "code": 404})


def free_port() -> int:
    """A port on the loopback address nothing listens on (for servers started as processes)."""
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def write_certificates(directory: Path, hostname_ip: str = LOOPBACK) -> tuple[Path, Path, Path]:
    """A CA, and a serving certificate for `hostname_ip` signed by it (PEM files)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test API server CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    server = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")]))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(hostname_ip))]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    ca_file, cert_file, key_file = directory / "ca.crt", directory / "tls.crt", directory / "tls.key"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(server.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return ca_file, cert_file, key_file


@contextmanager
def api_server(directory: Path) -> Iterator[ApiServer]:
    """The stand-in API server, serving until the block ends."""
    ca_file, cert_file, key_file = write_certificates(directory / "apiserver")
    state = ApiServer(0, ca_file)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests.append((self.path, self.headers.get("Authorization", "")))
            answer = state.answer(self.path)
            if answer.delay:
                time.sleep(answer.delay)
            payload = answer.payload()
            try:
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if not answer.dribble:
                    self.wfile.write(payload)
                for byte in payload if answer.dribble else b"":
                    self.wfile.write(bytes([byte]))
                    time.sleep(answer.dribble)
            except OSError:  # the client gave up first (a timeout test)
                pass

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass

    server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
    server.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    state.port = int(server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def pod_files(directory: Path, server: ApiServer, token: str = "token-1") -> tuple[Path, dict[str, str]]:
    """The token file and environment a pod has for `server`: (token file, environ)."""
    token_file = directory / "token"
    token_file.write_text(token)
    return token_file, {"KUBERNETES_SERVICE_HOST": LOOPBACK, "KUBERNETES_SERVICE_PORT": str(server.port)}


def in_cluster_templates(directory: Path, server: ApiServer, *, timeout: float = 1.0) -> KubernetesTemplates:
    """The webhook's client as `dra-guard webhook --in-cluster` makes it, for `server`."""
    token_file, environ = pod_files(directory, server)
    return KubernetesTemplates.in_cluster(
        token_file=str(token_file), ca_file=str(server.ca_file), environ=environ, timeout=timeout
    )
