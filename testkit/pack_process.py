"""Start the policy pack as `pulumi preview --policy-pack` does, and talk Analyzer gRPC to it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from testkit.paths import REPO_ROOT

PACK_DIR = REPO_ROOT / "pulumi_dra" / "policy"
# The engine address is passed as the CLI would; the pack never calls the engine here.
ENGINE_ADDRESS = "127.0.0.1:1"


@contextmanager
def running_pack(
    pack_dir: Path = PACK_DIR, env: Mapping[str, str] | None = None, python: str | Path = sys.executable
) -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    """The pack as a process, as Pulumi's Python language host starts it: `python` (the
    interpreter of the pack's virtualenv) runs `pulumi.policy`, which runs the pack folder's
    `__main__.py`; `env` replaces the environment it inherits."""
    process = subprocess.Popen(
        [str(python), "-u", "-m", "pulumi.policy", ENGINE_ADDRESS, str(pack_dir)],
        cwd=pack_dir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(env) if env is not None else None,
    )
    try:
        assert process.stdout is not None
        first_line = process.stdout.readline()
        if not first_line.strip().isdigit():
            process.kill()
            raise AssertionError(f"pack did not print its port first: {first_line!r} {process.communicate()[1]}")
        channel = grpc.insecure_channel(f"127.0.0.1:{int(first_line)}")
        grpc.channel_ready_future(channel).result(timeout=30)
        yield analyzer_pb2_grpc.AnalyzerStub(channel)
        channel.close()
    finally:
        process.kill()
        process.wait(timeout=30)


def struct(obj: dict[str, Any]) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(obj)  # every number becomes a double, as from the engine
    return message


def analyze(stub: analyzer_pb2_grpc.AnalyzerStub, type_token: str, obj: dict[str, Any], name: str = "r") -> Any:
    request = analyzer_pb2.AnalyzeRequest(
        type=type_token, properties=struct(obj), urn=f"urn:pulumi:dev::proj::{type_token}::{name}", name=name
    )
    return stub.Analyze(request, timeout=60)


def configure(stub: analyzer_pb2_grpc.AnalyzerStub, policies: dict[str, dict[str, Any]]) -> None:
    stub.Configure(
        analyzer_pb2.ConfigureAnalyzerRequest(
            policyConfig={
                name: analyzer_pb2.PolicyConfig(properties=struct(values)) for name, values in policies.items()
            }
        ),
        timeout=60,
    )


def info(stub: analyzer_pb2_grpc.AnalyzerStub) -> Any:
    return stub.GetAnalyzerInfo(empty_pb2.Empty(), timeout=60)
