"""The policies, called as the SDK calls them: ResourceValidationArgs with proxy props."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy import Severity as PolicySeverity

from dra_guard.contract.catalog import RESOURCE_API_VERSIONS
from dra_guard.rules import RULES
from pulumi_dra.policies import (
    CONFIG_SCHEMA,
    PACK_DESCRIPTION,
    READABLE_INPUT,
    VERIFIABLE_CONTENTS,
    build_policies,
)
from pulumi_dra.props import CannotVerifyUntilApply, kubernetes_api_version
from testkit.paths import REPO_ROOT
from testkit.pulumi_props import (
    UNKNOWN,
    as_pulumi_props,
    claim_user,
    compliant_pair,
    legacy_pod,
    shared_claim,
    type_token,
    unsanitized_template,
)
from testkit.targets import target_for

POLICIES = {policy.name: policy for policy in build_policies()}


def run_resource_policy(name: str, obj: dict[str, Any], config: dict[str, Any] | None = None) -> list[str]:
    policy = POLICIES[name]
    assert isinstance(policy, ResourceValidationPolicy)
    violations: list[str] = []
    args = ResourceValidationArgs(
        type_token(obj), as_pulumi_props(obj), f"urn:pulumi:dev::p::{type_token(obj)}::x", "x", None, None, config
    )  # type: ignore[arg-type]
    policy.validate(args, lambda message, urn=None: violations.append(message))
    return violations


def run_stack_policy(name: str, objects: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    policy = POLICIES[name]
    assert isinstance(policy, StackValidationPolicy)
    resources = [
        PolicyResource(type_token(obj), as_pulumi_props(obj), f"urn:{index}", f"r{index}", None, None, None, [], {})  # type: ignore[arg-type]
        for index, obj in enumerate(objects)
    ]
    violations: list[tuple[str, str | None]] = []
    policy.validate(StackValidationArgs(resources, None), lambda message, urn=None: violations.append((message, urn)))
    return violations


def test_one_policy_per_rule_named_after_it_with_severity_and_enforcement() -> None:
    resource_policies = [p.name for p in POLICIES.values() if isinstance(p, ResourceValidationPolicy)]
    assert resource_policies == [rule.slug for rule in RULES.values()] + [READABLE_INPUT, VERIFIABLE_CONTENTS]
    assert POLICIES[READABLE_INPUT].enforcement_level == EnforcementLevel.MANDATORY
    assert POLICIES[VERIFIABLE_CONTENTS].enforcement_level == EnforcementLevel.ADVISORY
    stack = [p.name for p in POLICIES.values() if isinstance(p, StackValidationPolicy)]
    assert stack == [f"{rule.slug}-stack" for rule in RULES.values() if rule.cross_object]
    assert {"dra005-shared-claim-stack", "dra009-claim-wiring-stack"} <= set(stack)
    assert POLICIES["dra001-legacy-extended-resource"].enforcement_level == EnforcementLevel.MANDATORY
    assert POLICIES["dra002-profile-not-pinned"].enforcement_level == EnforcementLevel.MANDATORY
    assert POLICIES["dra011-topology-unaligned"].enforcement_level == EnforcementLevel.ADVISORY
    assert POLICIES["dra001-legacy-extended-resource"].severity == PolicySeverity.CRITICAL
    assert "ResourceClaimTemplate" in (POLICIES["dra001-legacy-extended-resource"].remediation_steps or "")


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("kubernetes:core/v1:Pod", "v1"),
        ("kubernetes:apps/v1:Deployment", "apps/v1"),
        ("kubernetes:resource.k8s.io/v1beta2:ResourceClaimTemplate", "resource.k8s.io/v1beta2"),
        ("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet", "jobset.x-k8s.io/v1alpha2"),
        ("kubernetes:yaml/v2:ConfigGroup", None),
        ("kubernetes:helm.sh/v4:Chart", None),
        ("pulumi:providers:kubernetes", None),
        ("aws:s3/bucket:Bucket", None),
    ],
)
def test_type_tokens(token: str, expected: str | None) -> None:
    assert kubernetes_api_version(token) == expected


@pytest.mark.parametrize("api_version", RESOURCE_API_VERSIONS)
def test_compliant_objects_with_float_numbers_pass_every_policy(api_version: str) -> None:
    # Each policy checks for the release the objects were built for (v1alpha3: 1.33).
    target = {"kubernetesVersion": target_for(api_version)}
    for obj in compliant_pair(api_version):
        for name, policy in POLICIES.items():
            if isinstance(policy, ResourceValidationPolicy):
                assert run_resource_policy(name, obj, target) == [], (name, obj["kind"])


def _mps_template(percentage: float) -> dict[str, Any]:
    """A claim template whose NVIDIA opaque config sets an integer field (MPS thread percentage)."""
    template, _ = compliant_pair()
    template["spec"]["spec"]["devices"]["config"] = [
        {
            "requests": ["slice"],
            "opaque": {
                "driver": "gpu.nvidia.com",
                "parameters": {
                    "apiVersion": "resource.nvidia.com/v1beta1",
                    "kind": "MigDeviceConfig",
                    "sharing": {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": percentage}},
                },
            },
        }
    ]
    return template


def test_an_integral_float_is_the_integer_the_api_server_receives() -> None:
    """Props carry every number as a float; the provider's JSON sends 50.0 as 50, so an
    integer field of an opaque config is read as the CLI reads the YAML (and 50.5 is not)."""
    whole = run_resource_policy("dra010-invalid-dra-schema", _mps_template(50))
    fraction = run_resource_policy("dra010-invalid-dra-schema", _mps_template(50.5))
    assert not any("defaultActiveThreadPercentage" in message for message in whole), whole
    assert any("defaultActiveThreadPercentage must be an integer" in message for message in fraction), fraction


def test_violations_name_rule_object_and_fix() -> None:
    (message,) = run_resource_policy("dra001-legacy-extended-resource", legacy_pod())
    assert message.startswith("DRA001 [critical] Pod/ns/legacy at /spec/containers/0/resources/limits/")
    assert "Fix: " in message
    (message,) = run_resource_policy("dra004-sanitization-undeclared", unsanitized_template())
    assert message.startswith("DRA004")


def test_crd_resources_are_scanned() -> None:
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "ns"},
        "spec": {"replicatedJobs": [{"template": {"spec": {"template": legacy_pod()}}}]},
    }
    assert len(run_resource_policy("dra001-legacy-extended-resource", jobset)) == 1


def test_configuration() -> None:
    admin = compliant_pair()[0]
    admin["spec"]["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    from dra_guard import isolation_tag

    admin["metadata"]["annotations"]["dra-guard.io/isolation-tag"] = isolation_tag(admin)
    assert len(run_resource_policy("dra006-admin-access", admin)) == 1
    assert run_resource_policy("dra006-admin-access", admin, {"adminNamespaces": ["ns"]}) == []
    custom = legacy_pod()
    custom["spec"]["containers"][0]["resources"]["limits"] = {"example.com/gpu": 1}
    assert run_resource_policy("dra001-legacy-extended-resource", custom) == []
    assert (
        len(
            run_resource_policy(
                "dra001-legacy-extended-resource", custom, {"extraLegacyResources": ["example.com/gpu"]}
            )
        )
        == 1
    )


def test_hmac_key_from_the_configured_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    template = compliant_pair()[0]
    (missing,) = run_resource_policy("dra012-isolation-tag", template, {"hmacKeyEnv": "DRA_KEY"})
    assert "DRA_KEY, which is not set" in missing
    monkeypatch.setenv("DRA_KEY", "k")
    # Both the template tag and the claim tag (spec.metadata) must then be HMACs.
    assert len(run_resource_policy("dra012-isolation-tag", template, {"hmacKeyEnv": "DRA_KEY"})) == 2
    from dra_guard import claim_template
    from dra_guard.building.spec import AcceleratorSlice

    signed = claim_template(name="t", slice=AcceleratorSlice.nvidia_mig("1g.10gb"), namespace="ns", hmac_key="k")
    assert run_resource_policy("dra012-isolation-tag", signed, {"hmacKeyEnv": "DRA_KEY"}) == []


def run_with_unknowns(name: str, obj: dict[str, Any], config: dict[str, Any] | None = None) -> tuple[list[str], str]:
    """The violations a policy reports, and the advisory it raises after them ("" for none)."""
    policy = POLICIES[name]
    assert isinstance(policy, ResourceValidationPolicy)
    violations: list[str] = []
    args = ResourceValidationArgs(type_token(obj), as_pulumi_props(obj), "urn:x", "x", None, None, config)  # type: ignore[arg-type]
    try:
        policy.validate(args, lambda message, urn=None: violations.append(message))
    except CannotVerifyUntilApply as unsure:
        return violations, unsure.message
    return violations, ""


def test_an_unknown_value_masks_only_the_findings_that_may_depend_on_it() -> None:
    pod = legacy_pod()
    pod["spec"]["containers"][0]["image"] = UNKNOWN
    violations, unsure = run_with_unknowns("dra001-legacy-extended-resource", pod)
    # The known legacy request stays a violation; the unknown image gets the advisory.
    assert len(violations) == 1 and "DRA001 [critical] Pod/ns/legacy" in violations[0]
    assert unsure.startswith("cannot verify until apply: ") and ".spec.containers.0.image" in unsure
    # The unknown part itself: an unknown resource name masks the finding on it.
    pod = legacy_pod()
    pod["spec"]["containers"][0]["resources"]["limits"] = UNKNOWN
    assert run_with_unknowns("dra001-legacy-extended-resource", pod) == (
        [],
        "cannot verify until apply: string value at .spec.containers.0.resources.limits can't be known during preview",
    )
    # An unknown annotation may be a waiver, so the finding is not definite.
    pod = legacy_pod()
    pod["metadata"]["annotations"] = UNKNOWN
    violations, unsure = run_with_unknowns("dra001-legacy-extended-resource", pod)
    assert violations == [] and unsure
    # Rules that do not look at this kind add nothing.
    assert run_with_unknowns("dra002-profile-not-pinned", pod) == ([], "")


_LEGACY_GPU = {"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}
_WAIVER_KEY = "dra-guard.io/ignore-DRA001"


def _kind(api_version: str, kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "w", "namespace": "ns"}, "spec": spec}


#: Objects asking for a legacy GPU, each with the `annotations` map its pods get outside a
#: `metadata` (dra_guard/model/pod_templates.py cites each operator's source).
_WAIVER_PLACES_BEYOND_METADATA: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "Argo podMetadata": (
        _kind(
            "argoproj.io/v1alpha1",
            "Workflow",
            {"podMetadata": {}, "templates": [{"name": "t", "container": _LEGACY_GPU}]},
        ),
        ("spec", "podMetadata"),
    ),
    "CronWorkflow podMetadata": (
        _kind(
            "argoproj.io/v1alpha1",
            "CronWorkflow",
            {"workflowSpec": {"podMetadata": {}, "templates": [{"name": "t", "container": _LEGACY_GPU}]}},
        ),
        ("spec", "workflowSpec", "podMetadata"),
    ),
    "ServingRuntime spec": (
        _kind("serving.kserve.io/v1alpha1", "ServingRuntime", {"containers": [_LEGACY_GPU]}),
        ("spec",),
    ),
    "ServingRuntime workerSpec": (
        _kind(
            "serving.kserve.io/v1alpha1",
            "ServingRuntime",
            {"containers": [], "workerSpec": {"containers": [_LEGACY_GPU]}},
        ),
        ("spec", "workerSpec"),
    ),
    "LLMInferenceService prefill": (
        _kind(
            "serving.kserve.io/v1alpha2",
            "LLMInferenceService",
            {"prefill": {"template": {"containers": [_LEGACY_GPU]}}},
        ),
        ("spec", "prefill"),
    ),
    "InferenceService predictor": (
        _kind("serving.kserve.io/v1beta1", "InferenceService", {"predictor": {"containers": [_LEGACY_GPU]}}),
        ("spec", "predictor"),
    ),
}


@pytest.mark.parametrize("name", list(_WAIVER_PLACES_BEYOND_METADATA))
def test_an_unknown_value_where_the_pods_get_a_waiver_masks_the_finding(name: str) -> None:
    """A waiver reaches the pods from more places than a `metadata` (an Argo workflow's
    `spec.podMetadata`, KServe's `annotations` of a runtime, a WorkloadSpec, a component): an
    unknown value at any of them (the map, or the rule's key in it) may yet waive the finding,
    so it is not reported; an unknown value of another key there may not, so it is."""
    obj, holder_path = _WAIVER_PLACES_BEYOND_METADATA[name]

    def with_annotations(annotations: Any) -> dict[str, Any]:
        copied = copy.deepcopy(obj)
        holder = copied
        for key in holder_path:
            holder = holder[key]
        holder["annotations"] = annotations
        return copied

    violations, _ = run_with_unknowns("dra001-legacy-extended-resource", with_annotations({}))
    assert len(violations) == 1
    for unknown in (UNKNOWN, {_WAIVER_KEY: UNKNOWN}):
        violations, unsure = run_with_unknowns("dra001-legacy-extended-resource", with_annotations(unknown))
        assert violations == [] and unsure
    violations, unsure = run_with_unknowns("dra001-legacy-extended-resource", with_annotations({"team": UNKNOWN}))
    assert len(violations) == 1 and unsure


def test_a_finding_that_rests_on_an_unknown_value_is_not_reported() -> None:
    admin, _ = compliant_pair()
    admin["spec"]["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    admin["metadata"]["namespace"] = UNKNOWN  # it may turn out to be an admin namespace
    violations, unsure = run_with_unknowns("dra006-admin-access", admin, {"adminNamespaces": ["gpu-ops"]})
    assert violations == [] and unsure
    # Its tag covers the namespace too: DRA012 cannot conclude either.
    assert run_with_unknowns("dra012-isolation-tag", admin)[0] == []
    # A known namespace keeps the violation, whatever else is unknown.
    admin["metadata"]["namespace"] = "ns"
    admin["metadata"]["labels"] = {"team": UNKNOWN}
    violations, unsure = run_with_unknowns("dra006-admin-access", admin, {"adminNamespaces": ["gpu-ops"]})
    assert len(violations) == 1 and "adminAccess" in violations[0] and unsure


def test_stack_policies_report_only_what_one_resource_cannot_show() -> None:
    violations = run_stack_policy("dra005-shared-claim-stack", [shared_claim(), claim_user("a"), claim_user("b")])
    assert sorted(urn for _, urn in violations) == ["urn:1", "urn:2"]
    assert run_resource_policy("dra005-shared-claim", claim_user("a")) == []
    _, workload = compliant_pair()
    (missing,) = run_stack_policy("dra009-claim-wiring-stack", [workload])
    assert "not among the checked objects" in missing[0]
    assert run_resource_policy("dra009-claim-wiring", workload) == []
    assert run_stack_policy("dra009-claim-wiring-stack", list(compliant_pair())) == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(
        ["kubernetes:core/v1:Pod", "kubernetes:resource.k8s.io/v1:ResourceClaim", "kubernetes:x.io/v1:Thing"]
    ),
    st.recursive(
        st.none() | st.booleans() | st.floats(allow_nan=False) | st.text(max_size=6) | st.just(UNKNOWN),
        lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=4),
        max_leaves=25,
    ),
)
def test_policies_never_raise_on_arbitrary_props(resource_type: str, props: Any) -> None:
    """Only the SDK's unknown-value signal may escape; it becomes an advisory diagnostic."""
    obj = props if isinstance(props, dict) else {"spec": props}
    for policy in POLICIES.values():
        if not isinstance(policy, ResourceValidationPolicy):
            continue
        args = ResourceValidationArgs(resource_type, as_pulumi_props(obj), "urn:x", "x", None, None, None)  # type: ignore[arg-type]
        with contextlib.suppress(CannotVerifyUntilApply):
            policy.validate(args, lambda message, urn=None: None)


def test_bad_configuration_is_reported_by_the_policy_instead_of_checking() -> None:
    (message,) = run_resource_policy("dra006-admin-access", legacy_pod(), {"adminNamespaces": "ns"})
    assert message == "policy dra006-admin-access: adminNamespaces: must be a list of strings"
    (message,) = run_resource_policy("dra001-legacy-extended-resource", legacy_pod(), {"enable": ["DRA001"]})
    assert message.startswith("policy dra001-legacy-extended-resource: unknown option 'enable'; known options: ")


def test_config_schema_lists_every_option_but_rule_selection() -> None:
    expected = {
        option.camel_key
        for option in RULES.options.values()
        if not option.selects_rules and not option.selects_files and not option.cli_only
    }
    assert "exclude" not in expected  # the pack reads no files
    assert set(CONFIG_SCHEMA.properties) == expected
    assert {"adminNamespaces", "extraLegacyResources", "hmacKeyEnv", "nonAcceleratorClasses"} <= expected
    assert CONFIG_SCHEMA.properties["adminNamespaces"]["default"] == []
    assert "default" not in CONFIG_SCHEMA.properties["hmacKeyEnv"]  # the CLI must not fill in a bad name


def test_pulumi_policy_yaml_describes_the_pack() -> None:
    pack = yaml.safe_load((REPO_ROOT / "pulumi_dra" / "policy" / "PulumiPolicy.yaml").read_text())
    assert pack["description"] == PACK_DESCRIPTION


def test_stack_policies_with_an_unknown_object_conclude_nothing() -> None:
    # The template's name is not known yet: "no such template" would be a false finding.
    template, workload = compliant_pair()
    template["metadata"]["name"] = UNKNOWN
    with pytest.raises(CannotVerifyUntilApply, match=r"\.metadata\.name"):
        run_stack_policy("dra009-claim-wiring-stack", [template, workload])
    # Patches are no objects of their own and stay out of the stack-wide check.
    policy = POLICIES["dra009-claim-wiring-stack"]
    assert isinstance(policy, StackValidationPolicy)
    patch = PolicyResource(
        "kubernetes:apps/v1:DeploymentPatch",
        as_pulumi_props({"metadata": {"name": "w"}}),
        "urn:p",
        "p",
        None,
        None,
        None,
        [],
        {},
    )  # type: ignore[arg-type]
    violations: list[str] = []
    policy.validate(StackValidationArgs([patch], None), lambda message, urn=None: violations.append(message))
    assert violations == []


@pytest.mark.parametrize("unknown", ["name", "namespace", "ownerReferences"])
@pytest.mark.parametrize("configured", [True, False], ids=["with-an-entry", "without"])
def test_an_unknown_identity_masks_a_finding_a_configured_waiver_may_match(unknown: str, configured: bool) -> None:
    """A `waivers` entry matches an object by its kind, namespace and name, and by the
    controllers that made it (its owner references): with one of those unknown at preview,
    the entry may match once it is known, so the finding is held back (the advisory says
    so). Before, an unknown name left the finding reported. Without an entry for the rule,
    the finding is reported (beside the advisory any unknown value raises)."""
    pod = legacy_pod("prod-a")
    pod["metadata"][unknown] = UNKNOWN
    entries = [{"rule": "DRA001", "name": "prod-*", "reason": "burn-in"}] if configured else []
    violations, advisory = run_with_unknowns("dra001-legacy-extended-resource", pod, {"waivers": entries})
    assert (violations == []) is configured
    assert "cannot verify until apply" in advisory
