"""The admission webhook under load, as a ratio to a trivial ASGI app with the same TLS.

    .venv/bin/python -m bench.webhook_load            # make bench runs it too

Both servers run as processes of their own under uvicorn on 127.0.0.1, with one
self-signed certificate: `dra-guard webhook` (the rules, the HMAC key for tagged
templates; there is no API server, so it runs without `--in-cluster` and reads no claim
template: a Pod's or a Deployment's templates are not among what it checks) and
`trivial_app` below, which reads the body, parses it and allows (what any ASGI app costs:
TLS, HTTP parsing, JSON in and out).  For a Pod, a Deployment and an HMAC-tagged claim
template, at concurrency 1, 10 and 50 (keep-alive connections, one thread each, connected
before the clock starts), each round measures both servers in turns (`--slices` windows
each, A B B A ...), so that what else runs on a shared machine falls on both alike.
Reported per case: reviews per second and p50 / p99 latency of ours; the median and
[min-max] of the rounds' ratios to the trivial app; and each server's own CPU time per
review, which other processes on a shared machine disturb least.  The load generator is
the same Python for both, so the ratios, not the absolute rates, are the figures (these
machines are shared): run several rounds (`--rounds`, default 5) and read the ranges.

Targets: throughput >= 0.7x the trivial app for Pods and Deployments and >= 0.5x for
tagged templates; p99 <= 2x the trivial app's.  Exits 1 if one is missed.
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import ipaddress
import json
import os
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
    # With its length, as the webhook answers: without one, h11 would frame the body in
    # chunks, and uvicorn would write the last chunk apart, a third TLS record and send.
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
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

    def cpu_seconds(self) -> float | None:
        """The server process's CPU time so far (user and system), where /proc shows it."""
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


@dataclass(frozen=True)
class Measured:
    """One server, one case, one round."""

    rate: float
    latencies: list[float]
    #: The server's CPU seconds per review (None without /proc): what other processes on a
    #: shared machine change least.
    cpu_per_review: float | None


def _load(server: Server, context: ssl.SSLContext, body: bytes, concurrency: int, seconds: float) -> Measured:
    """`concurrency` keep-alive clients posting `body` for `seconds`.  Each connects and
    sends one review before the clock starts, so the TLS handshakes, which both servers pay
    alike, are not counted: they would pull every ratio towards 1."""
    latencies: list[list[float]] = [[] for _ in range(concurrency)]
    failures: list[str] = []
    connected = threading.Barrier(concurrency + 1)
    go = threading.Event()
    window: list[float] = []
    headers = {"Content-Type": "application/json"}

    def exchange(connection: http.client.HTTPSConnection) -> bool:
        try:
            connection.request("POST", "/validate", body=body, headers=headers)
            response = connection.getresponse()
            answer = json.loads(response.read())
        except Exception as error:  # reported below, after every client has stopped
            failures.append(f"{type(error).__name__}: {error}")
            return False
        if response.status != 200 or not answer["response"]["allowed"]:
            failures.append(f"status {response.status}: {answer}")
            return False
        return True

    def client(index: int) -> None:
        connection = http.client.HTTPSConnection(LOOPBACK, server.port, context=context, timeout=30)
        try:
            warm = exchange(connection)
        finally:
            connected.wait()  # whatever happened: the other clients and the clock wait for it
        go.wait()
        while warm and time.monotonic() < window[0] and not failures:
            sent = time.perf_counter()
            if not exchange(connection):
                break
            latencies[index].append(time.perf_counter() - sent)
        connection.close()

    threads = [threading.Thread(target=client, args=(index,)) for index in range(concurrency)]
    for thread in threads:
        thread.start()
    connected.wait()
    cpu_before = server.cpu_seconds()
    start = time.monotonic()
    window.append(start + seconds)
    go.set()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - start
    cpu_after = server.cpu_seconds()
    if failures:
        raise RuntimeError(f"a review failed: {failures[0]}")
    every = [latency for per_client in latencies for latency in per_client]
    if not every:
        raise RuntimeError(f"no review finished within {seconds} s")
    cpu = None if cpu_before is None or cpu_after is None else (cpu_after - cpu_before) / len(every)
    return Measured(len(every) / elapsed, every, cpu)


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _spread(values: list[float]) -> str:
    """The median and [min-max] of per-round values."""
    return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0, help="per case, server and round")
    parser.add_argument(
        "--slices", type=int, default=4, help="windows per server and round, the servers taking turns (default 4)"
    )
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
    header = ("case", "conc", "rev/s", "p50 ms", "p99 ms", "x trivial rev/s", "x trivial p99", "CPU us/review")
    print("{:<16} {:>4} {:>6} {:>6} {:>6} {:>19} {:>19} {:>15}".format(*header))
    for case, obj in _payloads().items():
        body = _review(obj)
        for concurrency in levels:
            rounds = [_round((ours, trivial), context, body, concurrency, arguments) for _ in range(arguments.rounds)]
            throughput = [mine.rate / theirs.rate for mine, theirs in rounds]
            p99 = [_percentile(mine.latencies, 0.99) / _percentile(theirs.latencies, 0.99) for mine, theirs in rounds]
            every = [latency for mine, _ in rounds for latency in mine.latencies]
            print(
                f"{case:<16} {concurrency:>4} {statistics.median(mine.rate for mine, _ in rounds):>6.0f} "
                f"{_percentile(every, 0.5) * 1000:>6.1f} {_percentile(every, 0.99) * 1000:>6.1f} "
                f"{_spread(throughput):>19} {_spread(p99):>19} {_cpu(rounds):>15}"
            )
            target = TARGET_THROUGHPUT[case]
            if statistics.median(throughput) < target:
                missed.append(f"{case} at {concurrency}: {_spread(throughput)}x the trivial app (target {target})")
            if statistics.median(p99) > TARGET_P99:
                missed.append(
                    f"{case} at {concurrency}: p99 {_spread(p99)}x the trivial app's (target <= {TARGET_P99})"
                )
    print("x trivial: the median [min-max] of the rounds' ratios; CPU: each server's own, ours / the trivial app's")
    for miss in missed:
        print(f"MISSED: {miss}")
    return 1 if missed else 0


def _round(
    servers: tuple[Server, Server],
    context: ssl.SSLContext,
    body: bytes,
    concurrency: int,
    arguments: argparse.Namespace,
) -> tuple[Measured, Measured]:
    """One round: the two servers take turns in `--slices` windows each, in the order A B B A
    A B B A ..., so that what else runs on the machine falls on both alike; each server's
    windows are added up."""
    windows = arguments.slices * 2
    order = [servers[1] if index % 4 in (1, 2) else servers[0] for index in range(windows)]
    seconds = arguments.seconds / arguments.slices
    parts: dict[str, list[Measured]] = {server.name: [] for server in servers}
    for server in order:
        parts[server.name].append(_load(server, context, body, concurrency, seconds))
    return _combined(parts[servers[0].name]), _combined(parts[servers[1].name])


def _combined(parts: list[Measured]) -> Measured:
    """Windows of one server as one measurement: all its reviews over all their time."""
    reviews = sum(len(part.latencies) for part in parts)
    elapsed = sum(len(part.latencies) / part.rate for part in parts)
    cpu_seconds = [part.cpu_per_review * len(part.latencies) for part in parts if part.cpu_per_review is not None]
    cpu = sum(cpu_seconds) / reviews if len(cpu_seconds) == len(parts) else None
    return Measured(reviews / elapsed, [latency for part in parts for latency in part.latencies], cpu)


def _cpu(rounds: list[tuple[Measured, Measured]]) -> str:
    """The servers' median CPU microseconds per review, ours / the trivial app's."""
    mine = [ours.cpu_per_review for ours, _ in rounds if ours.cpu_per_review is not None]
    theirs = [trivial.cpu_per_review for _, trivial in rounds if trivial.cpu_per_review is not None]
    if not mine or not theirs:
        return "-"
    return f"{statistics.median(mine) * 1e6:.0f} / {statistics.median(theirs) * 1e6:.0f}"


if __name__ == "__main__":
    sys.exit(main())
