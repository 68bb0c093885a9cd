"""The pack's Analyze leaves out the policies that report nothing, and reads a Struct
itself: every response and every converted Struct is the SDK's own (issue 25, point 5)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulumi_dra.analyze_once import install


def _requests_of(objects: list[tuple[str, Any]]) -> list[Any]:
    from pulumi.runtime.proto import analyzer_pb2

    from testkit.pack_process import struct

    requests = []
    for number, (token, props) in enumerate(objects):
        request = analyzer_pb2.AnalyzeRequest(type=token, properties=struct(props), urn=f"urn:x{number}", name="r")
        request.provider.CopyFrom(
            analyzer_pb2.AnalyzerProviderResource(
                type="pulumi:providers:kubernetes", properties=struct({"version": "4.18.0"}), urn="urn:p", name="p"
            )
        )
        requests.append(request)
    return requests


def _responses_alike(objects: list[tuple[str, Any]], configurations: list[dict[str, Any]]) -> None:
    """The pack's Analyze and the SDK's own loop over every policy answer each request alike,
    under each configuration (options, enforcement levels)."""
    from pulumi.runtime.proto import analyzer_pb2
    from pulumi_policy import EnforcementLevel
    from pulumi_policy.policy import _PolicyAnalyzerServicer

    from pulumi_dra.policies import PACK_NAME, build_policies
    from testkit.pack_process import struct

    install()
    servicer = _PolicyAnalyzerServicer(PACK_NAME, "0.0.1", build_policies(), EnforcementLevel.ADVISORY)
    sdk_loop = _PolicyAnalyzerServicer.Analyze.__wrapped__  # type: ignore[attr-defined]
    requests = _requests_of(objects)
    differences: list[str] = []

    def analyze() -> None:
        for configuration in configurations:
            servicer.Configure(
                analyzer_pb2.ConfigureAnalyzerRequest(
                    policyConfig={
                        name: analyzer_pb2.PolicyConfig(
                            enforcementLevel=values.pop("enforcementLevel", analyzer_pb2.ADVISORY),
                            properties=struct(values),
                        )
                        for name, values in ((name, dict(values)) for name, values in configuration.items())
                    }
                ),
                None,
            )
            for request in requests:
                ours, sdks = servicer.Analyze(request, None), sdk_loop(servicer, request, None)
                if ours != sdks:
                    differences.append(f"{request.type} {configuration}: {ours} != {sdks}")

    # On a worker thread, as gRPC calls it (see above).
    worker = threading.Thread(target=analyze)
    worker.start()
    worker.join()
    assert differences == []


def test_leaving_out_silent_policies_changes_no_response() -> None:
    from pulumi.runtime.proto import analyzer_pb2

    from testkit.pulumi_props import (
        UNKNOWN,
        claim_user,
        compliant_pair,
        legacy_pod,
        shared_claim,
        type_token,
        unsanitized_template,
    )

    template, workload = compliant_pair()
    unknown_image = legacy_pod("unknown-image")
    unknown_image["spec"]["containers"][0]["image"] = UNKNOWN
    unknown_limits = legacy_pod("unknown-limits")
    unknown_limits["spec"]["containers"][0]["resources"]["limits"] = UNKNOWN
    unreadable = legacy_pod("unreadable")
    unreadable["spec"]["containers"] = "not a list"
    admin, _ = compliant_pair()
    admin["spec"]["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    objects = [
        (type_token(obj), obj)
        for obj in (
            template,
            workload,
            legacy_pod(),
            shared_claim(),
            claim_user("a"),
            unsanitized_template(),
            unknown_image,
            unknown_limits,
            unreadable,
            admin,
        )
    ]
    patch = {"metadata": {"name": "w", "namespace": "ns"}, "spec": {"template": {"spec": {"containers": []}}}}
    objects += [
        ("kubernetes:apps/v1:DeploymentPatch", patch),
        ("kubernetes:helm.sh/v3:Release", {"chart": "gpu-operator"}),
        ("kubernetes:yaml/v2:ConfigGroup", {"files": ["a.yaml"]}),
        ("aws:s3/bucket:Bucket", {"bucket": "b"}),
        ("kubernetes:example.com/v1:Trainer", {"spec": {"limits": {"nvidia.com/gpu": 1}}}),
    ]
    configurations: list[dict[str, Any]] = [
        {},
        {
            "dra001-legacy-extended-resource": {"enforcementLevel": analyzer_pb2.DISABLED},
            "dra006-admin-access": {"adminNamespaces": ["gpu-ops"]},
            "dra012-isolation-tag": {"hmacKeyEnv": "UNSET_VARIABLE_OF_THE_TEST"},
            "readable-input": {"enforcementLevel": analyzer_pb2.MANDATORY},
        },
        {"dra006-admin-access": {"adminNamespaces": "not a list"}},
    ]
    _responses_alike(objects, configurations)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["kubernetes:core/v1:Pod", "kubernetes:resource.k8s.io/v1:ResourceClaim", "kubernetes:x.io/v1:T"]),
    st.recursive(
        st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6),
        lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=4),
        max_leaves=25,
    ),
)
def test_leaving_out_silent_policies_changes_no_response_on_arbitrary_props(resource_type: str, props: Any) -> None:
    from testkit.pulumi_props import UNKNOWN

    obj = props if isinstance(props, dict) else {"spec": props}
    _responses_alike([(resource_type, obj), (resource_type, {**obj, "metadata": UNKNOWN})], [{}])


_SECRET = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270"}
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers(-(2**60), 2**60) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(max_size=5), children, max_size=4)
        | st.builds(lambda value: {**_SECRET, "value": value}, children)
    ),  # a secret, as Pulumi marks one
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=5), _JSON_VALUES, max_size=5))
def test_structs_convert_as_the_sdk_converts_them(values: dict[str, Any]) -> None:
    """The SDK converts each resource's props (a Struct) with MessageToDict, then
    deserializes them: the pack reads a Struct itself, and gives what it made as it is when
    the deserializer would only copy it; the same dict, or the same error (an infinite
    number, NaN), either way."""
    import pulumi_policy.policy as sdk
    from google.protobuf import json_format, struct_pb2
    from pulumi_policy.deserialize import deserialize_properties

    install()
    message = struct_pb2.Struct()
    message.update(values)
    results: list[Any] = []
    for convert, deserialize in (
        (json_format.MessageToDict, deserialize_properties),
        (sdk.json_format.MessageToDict, sdk.deserialize_properties),  # a new message: not one it remembers
    ):
        try:
            converted = convert(message)
            results.append((repr(converted), repr(deserialize(converted))))
        except ValueError as error:
            results.append(repr(error))
    assert results[0] == results[1]
    value = struct_pb2.Value(string_value="not a struct")
    assert sdk.json_format.MessageToDict(value) == json_format.MessageToDict(value)


def test_reading_props_leaves_the_sdks_values_as_they_were() -> None:
    """The object the rules read shares the parts of the props it need not change, and never
    writes to the SDK's own values (apiVersion and kind come from the type when left out)."""
    import copy

    from pulumi_policy.proxy import unknown_checking_proxy

    from pulumi_dra.props import read_props

    for plain in (
        {"metadata": {"name": "p", "labels": {"a": "b"}}},
        {"metadata": {"name": "p"}, "spec": {"replicas": 2.0, "template": {"metadata": {"labels": {"a": "b"}}}}},
    ):
        before = copy.deepcopy(plain)
        for read in (
            read_props("kubernetes:apps/v1:Deployment", unknown_checking_proxy(plain), plain),
            read_props("kubernetes:apps/v1:Deployment", unknown_checking_proxy(plain)),
        ):
            assert read is not None
            assert read.obj == {**before, "apiVersion": "apps/v1", "kind": "Deployment"}
            assert all(type(value) is int for value in read.obj.get("spec", {}).values() if not isinstance(value, dict))
            assert plain == before and "apiVersion" not in plain


def test_stack_policies_read_props_made_on_demand_as_the_sdks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stack policies read each resource's props through the proxy, made when first
    read: their answers are those over the SDK's own proxies."""
    import pulumi_policy.policy as sdk
    from pulumi.runtime.proto import analyzer_pb2
    from pulumi_policy import EnforcementLevel, proxy
    from pulumi_policy.policy import _PolicyAnalyzerServicer

    from pulumi_dra.policies import PACK_NAME, build_policies
    from testkit.pulumi_props import UNKNOWN, claim_user, compliant_pair, shared_claim, type_token

    install()
    servicer = _PolicyAnalyzerServicer(PACK_NAME, "0.0.1", build_policies(), EnforcementLevel.ADVISORY)
    servicer.Configure(analyzer_pb2.ConfigureAnalyzerRequest(), None)
    unknown_user = claim_user("c")
    unknown_user["metadata"]["labels"] = {"x": UNKNOWN}
    stacks = [
        [shared_claim(), claim_user("a"), claim_user("b"), *compliant_pair()],
        [shared_claim(), claim_user("a"), unknown_user],
    ]
    requests = [
        analyzer_pb2.AnalyzeStackRequest(
            resources=[
                analyzer_pb2.AnalyzerResource(
                    type=type_token(obj), properties=request.properties, urn=f"urn:{n}", name="r"
                )
                for n, (obj, request) in enumerate(
                    zip(objects, _requests_of([(type_token(o), o) for o in objects]), strict=True)
                )
            ]
        )
        for objects in stacks
    ]
    answers: list[Any] = []

    def analyze() -> None:
        answers.append([servicer.AnalyzeStack(request, None) for request in requests])
        monkeypatch.setattr(sdk, "unknown_checking_proxy", proxy.unknown_checking_proxy)
        answers.append([servicer.AnalyzeStack(request, None) for request in requests])

    worker = threading.Thread(target=analyze)
    worker.start()
    worker.join()
    assert answers[0] == answers[1] and any(response.diagnostics for response in answers[0])
