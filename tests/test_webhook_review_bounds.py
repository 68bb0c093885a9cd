"""What one review may make, whatever the object holds (docs/admission.md, "Failure modes"):
objects the API server lets through (it bounds their size, not their counts) made of many
containers, claims or resource names each giving a finding, measured as a review of the
webhook takes them (the body parsed, then reviewed) with tracemalloc.  Before these bounds a
Pod of 28,000 containers each naming a claim it does not declare took 42 MiB and made a
2.7 MB denial; 64 clients sending it took the process past its 256 MiB limit."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest

from dra_guard.admission.serving import REVIEW_MIB
from dra_guard.admission.webhook import CHECK_MIB, LISTED_FINDINGS, MAX_FINDINGS, POD_BOUNDS, Webhook
from dra_guard.contract.findings import Severity
from dra_guard.ruleapi.config import Config
from dra_guard.rules import RULES
from tests.test_webhook_bounded import admission_review

#: The most an answer may be: LISTED_FINDINGS messages of a few hundred bytes.
ANSWER_BYTES = 64 * 1024


def _pod(spec: dict[str, Any], kind: str = "Pod") -> dict[str, Any]:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "tenant-a"}, "spec": spec}
    if kind == "Pod":
        return pod
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "tenant-a"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": spec},
        },
    }


def _containers(count: int, **resources: Any) -> list[dict[str, Any]]:
    return [{"name": f"c{index}", "image": "i", "resources": resources} for index in range(count)]


#: Each about 1 to 2 MiB of JSON (a body may be 3), each piece of it a finding or a pod claim.
CRAFTED = {
    "containers naming undeclared claims": _pod(
        {
            "containers": [
                {"name": f"c{i}", "image": "i", "resources": {"claims": [{"name": f"g{i}"}]}} for i in range(28_000)
            ]
        }
    ),
    "one container naming undeclared claims": _pod(
        {
            "containers": [
                {"name": "c", "image": "i", "resources": {"claims": [{"name": f"g{i}"} for i in range(56_000)]}}
            ]
        }
    ),
    "extended resource names": _pod(
        {
            "containers": [
                {"name": "c", "image": "i", "resources": {"limits": {f"nvidia.com/gpu{i}": "1" for i in range(56_000)}}}
            ]
        }
    ),
    "pod claims": _pod(
        {
            "resourceClaims": [{"name": f"c{i}", "resourceClaimName": f"x{i}"} for i in range(28_000)],
            "containers": [{"name": "c", "image": "i"}],
        }
    ),
}


#: What the review may add to its parsed body (MiB): before the bounds, 20 to 72.  The
#: webhook leaves it this much of the allowance (a parsed body may take the rest).
REVIEW_WORK_MIB = CHECK_MIB


def _measured(app: Webhook, obj: dict[str, Any]) -> tuple[float, float, dict[str, Any], int]:
    """The body's parse and the review's peak (MiB of Python objects, the parse included),
    its answer, and the answer's JSON bytes."""
    body = json.dumps(admission_review(obj)).encode()
    tracemalloc.start()
    try:
        request = json.loads(body)["request"]
        parsed = tracemalloc.get_traced_memory()[0]
        answer = app.review(request)
        size = len(json.dumps(answer))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return parsed / 2**20, peak / 2**20, answer, size


@pytest.mark.parametrize("shape", sorted(CRAFTED))
def test_a_crafted_object_stays_within_one_review_and_is_denied_with_a_small_answer(shape: str) -> None:
    parsed, peak, answer, size = _measured(Webhook(RULES, Config()), CRAFTED[shape])
    assert not answer["allowed"], answer
    assert size < ANSWER_BYTES, f"{shape}: an answer of {size} bytes"
    assert peak < REVIEW_MIB, f"{shape}: {peak:.1f} MiB for one review, whose allowance is {REVIEW_MIB} MiB"
    assert peak - parsed < REVIEW_WORK_MIB, f"{shape}: the review took {peak - parsed:.1f} MiB over its parsed body"


def _pod_claims(count: int) -> list[dict[str, Any]]:
    return [{"name": f"c{index}", "resourceClaimName": f"x{index}"} for index in range(count)]


def _claims_named(count: int) -> dict[str, Any]:
    """`count` claim references by containers, of 16 pod claims (at most one each a container)."""
    containers = [
        {"name": f"c{index}", "image": "i", "resources": {"claims": [{"name": f"c{claim}"} for claim in range(16)]}}
        for index in range(count // 16)
    ]
    if count % 16:
        containers.append(
            {
                "name": "rest",
                "image": "i",
                "resources": {"claims": [{"name": f"c{claim}"} for claim in range(count % 16)]},
            }
        )
    return {"resourceClaims": _pod_claims(16), "containers": containers}


@pytest.mark.parametrize("kind", ["Pod", "Deployment"])
@pytest.mark.parametrize(
    ("what", "spec_of"),
    [
        ("containers", lambda count: {"containers": _containers(count)}),
        ("claims named by containers", _claims_named),
        ("pod claims", lambda count: {"resourceClaims": _pod_claims(count), "containers": _containers(1)}),
    ],
)
def test_pod_specs_past_the_bounds_are_denied_unchecked(kind: str, what: str, spec_of: Any) -> None:
    most = next(bound for name, bound in POD_BOUNDS if name.startswith(what))
    app = Webhook(RULES, Config())
    at_bound = app.review(admission_review(_pod(spec_of(most), kind))["request"])
    assert "too large to review" not in json.dumps(at_bound)
    past = app.review(admission_review(_pod(spec_of(most + 1), kind))["request"])
    message = past["status"]["message"]
    assert not past["allowed"]
    assert f"too large to review: its pod specs hold {most + 1} {what}" in message, message
    assert "denied unchecked" in message


def test_a_denial_lists_the_first_findings_and_counts_the_rest() -> None:
    count = LISTED_FINDINGS + 10
    pod = _pod(
        {
            "containers": [
                {"name": "c", "image": "i", "resources": {"claims": [{"name": f"g{i}"} for i in range(count)]}}
            ]
        }
    )
    message = Webhook(RULES, Config()).review(admission_review(pod)["request"])["status"]["message"]
    assert message.count("DRA009") == LISTED_FINDINGS, message
    assert message.endswith("; and 10 more errors and findings, not listed"), message


def test_past_the_most_findings_the_rules_stop_and_the_review_is_denied() -> None:
    names = {f"nvidia.com/gpu{i}": "1" for i in range(MAX_FINDINGS + 1)}
    answer = Webhook(RULES, Config()).review(
        admission_review(_pod({"containers": _containers(1, limits=names)}))["request"]
    )
    message = answer["status"]["message"]
    assert not answer["allowed"]
    assert f"makes more than {MAX_FINDINGS} findings; the rules stopped there, and the rest is unchecked" in message
    assert message.startswith(
        f"dra-guard webhook: the review stopped unfinished past {MAX_FINDINGS} findings, and the rest of the object "
        "is unchecked; the findings listed deny it; "
    ), message


def _undeclared_claims(count: int) -> dict[str, Any]:
    """A Pod whose containers name `count` claims it does not declare: a DRA009 finding
    (medium) each."""
    containers = [{"name": f"c{i}", "image": "i", "resources": {"claims": [{"name": f"g{i}"}]}} for i in range(count)]
    return _pod({"containers": containers})


@pytest.mark.parametrize("below", ["warnings", "waived"])
def test_past_the_most_findings_a_review_of_nothing_that_denies_is_denied_as_unfinished(below: str) -> None:
    """Once the rules stop at the bound, what they left unchecked might deny, and nothing
    tells whether it would: the review is denied (fail closed), and says it was not found
    non-compliant.  Below the bound the same findings are admitted."""
    if below == "warnings":
        app, config = Webhook(RULES, Config(), fail_on=Severity.HIGH), {}
    else:
        app, config = Webhook(RULES, Config()), {"dra-guard.io/ignore-DRA009": "claims named elsewhere"}

    def answer(count: int) -> dict[str, Any]:
        pod = _undeclared_claims(count)
        pod["metadata"]["annotations"] = config
        return app.review(admission_review(pod)["request"])

    assert answer(MAX_FINDINGS)["allowed"] is True
    denied = answer(MAX_FINDINGS + 1)
    assert denied["allowed"] is False
    message = denied["status"]["message"]
    assert message.startswith(
        f"dra-guard webhook: denied because the review stopped unfinished past {MAX_FINDINGS} findings, not because "
        "the object was found non-compliant: no finding made denies it, but the rules left unchecked could, and the "
        "webhook fails closed (fix or split the object so that it makes fewer findings); "
    ), message
    assert f"makes more than {MAX_FINDINGS} findings; the rules stopped there, and the rest is unchecked" in message
    assert "DRA009" not in message
