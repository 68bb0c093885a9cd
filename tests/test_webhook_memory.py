"""The webhook's memory under the largest reviews, against the limit its Deployment sets
(issue 23, point 5): 50 clients at once, each sending a review of almost the largest body
accepted (3 MiB), to the real `dra-guard webhook` process; every request is answered (a
review, or 429 where the reviews in flight are at their cap) and the process's peak RSS stays
below `MEMORY_LIMIT_MIB`, which dra_guard/admission/serving.py sizes the caps from."""

from __future__ import annotations

import http.client
import json
import ssl
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from dra_guard.admission.serving import MEMORY_LIMIT_MIB
from dra_guard.admission.webhook import DEFAULT_MAX_BODY
from tests.webhook_apiserver import LOOPBACK, free_port, write_certificates

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")]

CLIENTS = 50


def _largest_review() -> bytes:
    """A Pod whose environment fills the body to just under the largest accepted."""
    entry = {"name": "VARIABLE_000000", "value": "x" * 64}
    size = len(json.dumps(entry)) + 2
    count = (DEFAULT_MAX_BODY - 4096) // size
    env = [{"name": f"VARIABLE_{index:06d}", "value": "x" * 64} for index in range(count)]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "big", "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "image": "i", "env": env}]},
    }
    request = {
        "uid": "u",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "operation": "CREATE",
        "namespace": "ns",
        "userInfo": {"username": "alice"},
        "object": pod,
    }
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}).encode()
    assert DEFAULT_MAX_BODY - 8192 < len(body) <= DEFAULT_MAX_BODY
    return body


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def test_fifty_largest_reviews_at_once_stay_below_the_memory_limit(tmp_path: Path) -> None:
    ca_file, cert_file, key_file = write_certificates(tmp_path)
    port, probe_port = free_port(), free_port()
    cli = str(Path(sys.executable).with_name("dra-guard"))
    command = [cli, "webhook", "--tls-cert", str(cert_file), "--tls-key", str(key_file), "--host", LOOPBACK]
    command += ["--port", str(port), "--probe-port", str(probe_port)]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    context = ssl.create_default_context(cafile=str(ca_file))
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                probe = http.client.HTTPConnection(LOOPBACK, probe_port, timeout=2)
                probe.request("GET", "/readyz")
                if probe.getresponse().status == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline and server.poll() is None, "the webhook did not start"
            time.sleep(0.1)
        body = _largest_review()

        def send(_: int) -> tuple[int, Any]:
            connection = http.client.HTTPSConnection(LOOPBACK, port, context=context, timeout=60)
            connection.request("POST", "/validate?timeout=30s", body=body, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            return response.status, response.read()

        with ThreadPoolExecutor(CLIENTS) as pool:
            answers = list(pool.map(send, range(CLIENTS)))
        statuses = sorted({status for status, _ in answers})
        assert set(statuses) <= {200, 429}, statuses
        reviewed = [json.loads(payload) for status, payload in answers if status == 200]
        assert reviewed and all(answer["response"]["allowed"] for answer in reviewed)
        peak = _peak_rss_mib(server.pid)
        assert peak < MEMORY_LIMIT_MIB, f"peak RSS {peak:.0f} MiB against the Deployment's {MEMORY_LIMIT_MIB} MiB"
        print(
            f"\npeak RSS {peak:.0f} MiB for {CLIENTS} reviews of {len(body) / 2**20:.1f} MiB; {len(reviewed)} reviewed"
        )
    finally:
        server.terminate()
        server.wait(timeout=10)
