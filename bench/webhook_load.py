"""The admission webhook under load, as a ratio to a trivial ASGI app with the same TLS.

    .venv/bin/python -m bench.webhook_load            # make bench runs it too

Both servers run as processes of their own under uvicorn on 127.0.0.1, with one
self-signed certificate: `dra-guard webhook` (the rules, the HMAC key for tagged
templates) and `trivial_app` below, which reads the body and allows (what any ASGI app
costs: TLS, HTTP parsing, JSON out).  For a Pod, a Deployment and an HMAC-tagged claim
template, at concurrency 1, 10 and 50 (keep-alive connections, one thread each), each
round measures both servers back to back, alternating which goes first; reported per
case: reviews per second and p50 / p99 latency of ours, and the per-round ratios to the
trivial app (median of the rounds).  The load generator is the same Python for both, so
the ratios, not the absolute rates, are the figures (these machines are shared).

Targets: throughput >= 0.7x the trivial app for Pods and Deployments and >= 0.5x for
tagged templates; p99 <= 2x the trivial app's.  Exits 1 if one is missed.
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import ipaddress
import json
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

LOOPBACK = "127.0.0.1"
TARGET_THROUGHPUT = {"Pod": 0.7, "Deployment": 0.7, "tagged template": 0.5}
TARGET_P99 = 2.0
HMAC_KEY = b"bench-key"


async def trivial_app(scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
    """Read the review, allow it: the floor any ASGI admission webhook pays."""
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    uid = json.loads(body or b"{}").get("request", {}).get("uid", "")
    payload = json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {"uid": uid, "allowed": True}}
    ).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": payload})


def _certificates(directory: Path) -> tuple[Path, Path]:
    """A self-signed serving certificate for 127.0.0.1 and its key (PEM)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dra-guard bench")])
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=2))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(LOOPBACK))]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "tls.crt", directory / "tls.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def _payloads() -> dict[str, dict[str, Any]]:
    """The three objects reviewed: compliant, so both servers answer `allowed`."""
    from dra_guard import AcceleratorSlice, claim_template, isolated_workload

    mig = AcceleratorSlice.nvidia_mig("1g.10gb")
    workload = isolated_workload("bench", image="i", slice=mig, namespace="ns")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "bench-0", "namespace": "ns"},
        "spec": workload.workload["spec"]["template"]["spec"],
    }
    tagged = claim_template(name="bench", slice=mig, namespace="ns", hmac_key=HMAC_KEY.decode())
    return {"Pod": pod, "Deployment": workload.workload, "tagged template": tagged}


def _review(obj: dict[str, Any]) -> bytes:
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    request = {
        "uid": "00000000-0000-0000-0000-000000000000",
        "kind": {"group": group, "version": version, "kind": obj["kind"]},
        "operation": "CREATE",
        "namespace": "ns",
        "userInfo": {"username": "alice"},
        "object": obj,
    }
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}).encode()


class Server:
    def __init__(self, name: str, command: Sequence[str], port: int) -> None:
        self.name, self.port = name, port
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def wait_ready(self, context: ssl.SSLContext, path: str) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}")
            try:
                connection = http.client.HTTPSConnection(LOOPBACK, self.port, context=context, timeout=2)
                connection.request("GET", path)
                if connection.getresponse().status == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"{self.name} did not become ready")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def _load(
    port: int, context: ssl.SSLContext, body: bytes, concurrency: int, seconds: float
) -> tuple[float, list[float]]:
    """Reviews per second and every latency (s), `concurrency` keep-alive clients for `seconds`."""
    latencies: list[list[float]] = [[] for _ in range(concurrency)]
    failures: list[str] = []
    start = time.monotonic()
    stop = start + seconds

    def client(index: int) -> None:
        connection = http.client.HTTPSConnection(LOOPBACK, port, context=context, timeout=30)
        headers = {"Content-Type": "application/json"}
        while time.monotonic() < stop:
            sent = time.perf_counter()
            connection.request("POST", "/validate", body=body, headers=headers)
            response = connection.getresponse()
            answer = json.loads(response.read())
            latencies[index].append(time.perf_counter() - sent)
            if response.status != 200 or not answer["response"]["allowed"]:
                failures.append(f"status {response.status}: {answer}")
                return
        connection.close()

    threads = [threading.Thread(target=client, args=(index,)) for index in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise RuntimeError(f"a review was not allowed: {failures[0]}")
    elapsed = time.monotonic() - start
    every = [latency for per_client in latencies for latency in per_client]
    return len(every) / elapsed, every


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=2.0, help="per case, server and round")
    parser.add_argument("--concurrency", default="1,10,50")
    arguments = parser.parse_args(argv)
    levels = [int(level) for level in arguments.concurrency.split(",")]
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        cert_file, key_file = _certificates(directory)
        (directory / "hmac.key").write_bytes(HMAC_KEY)
        context = ssl.create_default_context(cafile=str(cert_file))
        tls = ["--tls-cert", str(cert_file), "--tls-key", str(key_file)]
        ours_port, trivial_port = _free_port(), _free_port()
        cli = str(Path(sys.executable).with_name("dra-guard"))
        ours = Server(
            "dra-guard webhook",
            [
                cli,
                "webhook",
                *tls,
                "--host",
                LOOPBACK,
                "--port",
                str(ours_port),
                "--hmac-key-file",
                str(directory / "hmac.key"),
                "--probe-port",
                str(_free_port()),
            ],
            ours_port,
        )
        trivial = Server(
            "trivial ASGI app",
            [
                sys.executable, "-m", "uvicorn", "bench.webhook_load:trivial_app", "--host", LOOPBACK,
                "--port", str(trivial_port), "--ssl-certfile", str(cert_file), "--ssl-keyfile", str(key_file),
                "--log-level", "warning", "--no-access-log",
            ],
            trivial_port,
        )  # fmt: skip
        try:
            ours.wait_ready(context, "/readyz")
            trivial.wait_ready(context, "/")
            return _measure(ours, trivial, context, levels, arguments)
        finally:
            ours.stop()
            trivial.stop()


def _measure(
    ours: Server,
    trivial: Server,
    context: ssl.SSLContext,
    levels: list[int],
    arguments: argparse.Namespace,
) -> int:
    missed: list[str] = []
    header = ("case", "conc", "rev/s", "p50 ms", "p99 ms", "x trivial rev/s", "x trivial p99")
    print("{:<16} {:>4} {:>8} {:>7} {:>7} {:>16} {:>14}".format(*header))
    for case, obj in _payloads().items():
        body = _review(obj)
        for concurrency in levels:
            rates: list[float] = []
            throughput_ratios: list[float] = []
            p99_ratios: list[float] = []
            mine: list[float] = []
            for round_index in range(arguments.rounds):
                order = [ours, trivial] if round_index % 2 == 0 else [trivial, ours]
                measured = {
                    server.name: _load(server.port, context, body, concurrency, arguments.seconds) for server in order
                }
                (ours_rate, ours_latencies), (trivial_rate, trivial_latencies) = (
                    measured[ours.name],
                    measured[trivial.name],
                )
                rates.append(ours_rate)
                mine += ours_latencies
                throughput_ratios.append(ours_rate / trivial_rate)
                p99_ratios.append(_percentile(ours_latencies, 0.99) / _percentile(trivial_latencies, 0.99))
            throughput, p99 = statistics.median(throughput_ratios), statistics.median(p99_ratios)
            print(
                f"{case:<16} {concurrency:>4} {statistics.median(rates):>8.0f} {_percentile(mine, 0.5) * 1000:>7.1f} "
                f"{_percentile(mine, 0.99) * 1000:>7.1f} {throughput:>16.2f} {p99:>14.2f}"
            )
            if throughput < TARGET_THROUGHPUT[case]:
                missed.append(
                    f"{case} at {concurrency}: {throughput:.2f}x the trivial app (target {TARGET_THROUGHPUT[case]})"
                )
            if p99 > TARGET_P99:
                missed.append(f"{case} at {concurrency}: p99 {p99:.2f}x the trivial app's (target <= {TARGET_P99})")
    for miss in missed:
        print(f"MISSED: {miss}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
