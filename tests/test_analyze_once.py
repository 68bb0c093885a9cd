"""The SDK shim: memoisation by argument identity, idempotent, and inert if the SDK changes."""

from __future__ import annotations

import io
import threading
from types import SimpleNamespace
from typing import Any

import pytest

from pulumi_dra.analyze_once import install, install_or_warn, memoize_last_call


@pytest.mark.parametrize("unary_call", [False, True])
def test_memoizes_only_the_very_same_arguments(unary_call: bool) -> None:
    calls: list[Any] = []
    convert = memoize_last_call(lambda value: calls.append(value) or {"copy": dict(value)}, unary_call=unary_call)
    message = {"a": 1}
    first = convert(message)
    assert convert(message) is first and len(calls) == 1
    equal_but_new = {"a": 1}
    assert convert(equal_but_new) is not first and len(calls) == 2
    assert convert(message) is first and len(calls) == 2  # the last two calls are remembered
    convert({"b": 2})
    assert convert(message) is not first  # but no more


@pytest.mark.parametrize("unary_call", [False, True])
def test_alternating_arguments_are_each_converted_once(unary_call: bool) -> None:
    """The SDK converts a resource and its provider reference in turn, once per policy."""
    calls: list[Any] = []
    convert = memoize_last_call(lambda value: calls.append(value) or object(), unary_call=unary_call)
    resource, provider = object(), object()
    results = {(convert(resource), convert(provider)) for _ in range(17)}
    assert len(results) == 1 and calls == [resource, provider]


@pytest.mark.parametrize("unary_call", [False, True])
def test_each_thread_has_its_own_entry(unary_call: bool) -> None:
    calls: list[Any] = []
    convert = memoize_last_call(lambda value: calls.append(value) or object(), unary_call=unary_call)
    message = object()
    convert(message)
    worker = threading.Thread(target=convert, args=(message,))
    worker.start()
    worker.join()
    assert len(calls) == 2


def test_install_is_idempotent_and_inert_when_the_sdk_differs() -> None:
    assert install() is True and install() is True
    assert install(SimpleNamespace()) is False
    unchanged = SimpleNamespace(json_format=SimpleNamespace(), deserialize_properties=len, unknown_checking_proxy=len)
    assert install(unchanged) is False and unchanged.deserialize_properties is len


def test_patched_sdk_still_converts_messages() -> None:
    import pulumi_policy.policy as sdk
    from google.protobuf import struct_pb2

    install()
    message = struct_pb2.Struct()
    message.update({"count": 2, "name": "x"})
    converted = sdk.json_format.MessageToDict(message)
    assert converted == {"count": 2.0, "name": "x"}
    assert sdk.json_format.MessageToDict(message) is converted


def test_the_pack_warns_on_stderr_when_it_cannot_install() -> None:
    stderr = io.StringIO()
    assert install_or_warn(SimpleNamespace(), stderr) is False
    assert stderr.getvalue().startswith("dra-guard policy pack: warning:") and "once per policy" in stderr.getvalue()
    stderr = io.StringIO()
    assert install_or_warn(stderr=stderr) is True and stderr.getvalue() == ""


def test_two_argument_calls_are_memoized_by_both_identities() -> None:
    calls: list[Any] = []
    options = memoize_last_call(lambda servicer, request: calls.append(request) or object())
    servicer, request = object(), object()
    assert options(servicer, request) is options(servicer, request) and len(calls) == 1
    options(object(), request)
    assert len(calls) == 2


def test_the_plain_props_behind_the_last_proxy_read_as_the_proxy_does() -> None:
    import pulumi_policy.policy as sdk

    from pulumi_dra.analyze_once import plain_props
    from pulumi_dra.props import read_props
    from testkit.pulumi_props import UNKNOWN

    install()
    token = "kubernetes:core/v1:Pod"
    for deserialized in (
        {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": {"limits": {"x": 1.0}}}]}},
        {"metadata": {"name": "p", "labels": UNKNOWN}, "spec": {"containers": [UNKNOWN]}},
    ):
        proxied = sdk.unknown_checking_proxy(deserialized)
        assert plain_props(proxied) is deserialized
        assert plain_props(sdk.unknown_checking_proxy(dict(deserialized))) is not deserialized
        assert plain_props(proxied) is deserialized  # the last two proxies are remembered
        sdk.unknown_checking_proxy(dict(deserialized))
        assert plain_props(proxied) is None  # but no more
        proxied = sdk.unknown_checking_proxy(deserialized)
        assert read_props(token, proxied, plain_props(proxied)) == read_props(token, proxied)


def test_a_request_with_a_provider_reference_runs_the_rules_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """`pulumi preview` sends each resource's provider, which the SDK converts (with the same
    functions) between the resource's conversions for one policy and the next."""
    from pulumi.runtime.proto import analyzer_pb2
    from pulumi_policy import EnforcementLevel
    from pulumi_policy.policy import _PolicyAnalyzerServicer

    import pulumi_dra.checks
    from pulumi_dra.policies import PACK_NAME, build_policies
    from testkit.pack_process import struct
    from testkit.pulumi_props import legacy_pod

    install()
    servicer = _PolicyAnalyzerServicer(PACK_NAME, "0.0.1", build_policies(), EnforcementLevel.ADVISORY)
    servicer.Configure(analyzer_pb2.ConfigureAnalyzerRequest(), None)
    runs: list[object] = []
    check_objects = pulumi_dra.checks.check_objects
    monkeypatch.setattr(pulumi_dra.checks, "check_objects", lambda *a, **k: runs.append(a) or check_objects(*a, **k))
    token = "kubernetes:core/v1:Pod"
    responses: list[list[tuple[str, str]]] = []

    def analyze() -> None:
        for provider in (None, {"version": "4.18.0"}):
            request = analyzer_pb2.AnalyzeRequest(
                type=token, properties=struct(legacy_pod()), urn="urn:x", name="legacy"
            )
            if provider is not None:
                request.provider.CopyFrom(
                    analyzer_pb2.AnalyzerProviderResource(
                        type="pulumi:providers:kubernetes", properties=struct(provider), urn="urn:p", name="default"
                    )
                )
            responses.append([(d.policyName, d.message) for d in servicer.Analyze(request, None).diagnostics])

    # On a worker thread, as gRPC calls it: the memo's thread-local entries (protobuf
    # messages) go with the thread, not at interpreter exit, where freeing them crashes.
    worker = threading.Thread(target=analyze)
    worker.start()
    worker.join()
    assert len(runs) == 2  # once per request, with or without the provider
    assert responses[0] == responses[1] and any(name.startswith("dra001") for name, _ in responses[0])
