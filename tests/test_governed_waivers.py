"""Waivers a team can govern (issue 24, point 2): an owner and an expiry in the
`ignore-<rule>` annotation, and the configuration's `waivers` list for objects nobody can
annotate; an expired waiver waives nothing, and JSON and SARIF show who owns a waiver and
until when."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from dra_guard.cli.main import main
from dra_guard.contract.findings import Report
from dra_guard.contract.waivers import read_waiver
from dra_guard.engine.run import check_objects
from dra_guard.present.report.json_report import render_json
from dra_guard.read.config_file import load_config_file, parse_config, parse_policy_config
from dra_guard.ruleapi.config import WAIVERS, Config, ConfigError
from dra_guard.rules import RULES

IGNORE = "dra-guard.io/ignore-DRA001"
GOVERNED = "reason=the vendor chart pins this; owner=OPS-142; expires=2027-03-01"
EXPIRES = date(2027, 3, 1)


def legacy_pod(
    name: str = "p", namespace: str = "vendor-a", annotations: dict[str, str] | None = None, kind: str = "Pod"
) -> dict[str, Any]:
    """An object asking for nvidia.com/gpu through the device plugin (DRA001)."""
    spec = {"containers": [{"name": "c", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if annotations:
        metadata["annotations"] = annotations
    if kind == "Pod":
        return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": metadata,
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {}, "spec": spec}},
    }


def config(values: dict[str, Any] | None = None, today: date | None = None) -> Config:
    return replace(parse_config(values or {}, RULES, "test"), today=today)


def dra001(report: Report) -> tuple[list[str], list[str]]:
    """The messages of DRA001's findings, and the reasons of its waived ones."""
    return (
        [finding.message for finding in report.findings if finding.rule == "DRA001"],
        [finding.waiver or "" for finding in report.waived if finding.rule == "DRA001"],
    )


# --- the annotation: owner and expiry ---------------------------------------------------------


@pytest.mark.parametrize(
    ("today", "waived"),
    [(date(2026, 1, 1), True), (EXPIRES, True), (date(2027, 3, 2), False), (date(2030, 1, 1), False)],
)
def test_an_annotation_with_an_expiry_waives_through_that_day_and_not_after(today: date, waived: bool) -> None:
    report = check_objects([legacy_pod(annotations={IGNORE: GOVERNED})], config(today=today))
    messages, reasons = dra001(report)
    if waived:
        assert (messages, reasons) == ([], ["the vendor chart pins this"])
        (finding,) = report.waived
        assert finding.waiver_terms is not None
        assert (finding.waiver_terms.owner, finding.waiver_terms.expires) == ("OPS-142", EXPIRES)
    else:
        assert reasons == [] and len(messages) == 1
        assert messages[0].endswith(" (the waiver expired on 2027-03-01)")


def test_the_expiry_on_the_pod_template_counts_as_the_objects_does() -> None:
    deployment = legacy_pod(kind="Deployment")
    deployment["spec"]["template"]["metadata"]["annotations"] = {IGNORE: GOVERNED}
    assert dra001(check_objects([deployment], config(today=EXPIRES)))[1] == ["the vendor chart pins this"]
    (message,) = dra001(check_objects([deployment], config(today=date(2027, 3, 2))))[0]
    assert "(the waiver expired on 2027-03-01)" in message
    # An expired waiver on the object does not hide a valid one on the template.
    deployment["metadata"]["annotations"] = {IGNORE: "reason=old; expires=2020-01-01"}
    assert dra001(check_objects([deployment], config(today=EXPIRES)))[1] == ["the vendor chart pins this"]


@pytest.mark.parametrize(
    ("value", "note"),
    [
        ("reason=x; expires=2027-13-01", "gives expires='2027-13-01', which is not a date YYYY-MM-DD"),
        ("reason=x; expires=2027-02-30", "gives expires='2027-02-30', which is not a date YYYY-MM-DD"),
        ("reason=x; expires=1 March 2027", "gives expires='1 March 2027', which is not a date YYYY-MM-DD"),
        ("reason=x; expires=2027-3-1", "gives expires='2027-3-1', which is not a date YYYY-MM-DD"),
        ("reason=x; expires=", "gives expires='', which is not a date YYYY-MM-DD"),
        # A misspelt key can never leave a waiver that never expires.
        ("reason=x; expire=2027-03-01", "has an unknown field 'expire' (the fields are reason, owner, expires)"),
        ("reason=x; owner=a; owner=b", "gives owner twice"),
        ("reason=x; owner= ", "gives an empty owner"),
        ("owner=OPS-142; expires=2027-03-01", "gives no reason"),
        ("reason=\u200b; owner=OPS-142", "gives no reason"),
    ],
)
def test_a_malformed_annotation_waives_nothing_and_says_why(value: str, note: str) -> None:
    report = check_objects([legacy_pod(annotations={IGNORE: value})], config(today=date(2026, 1, 1)))
    (message,) = dra001(report)[0]
    assert message.endswith(f" (the {IGNORE} annotation {note}, so it is ignored)")
    assert report.waived == []


@pytest.mark.parametrize(
    ("value", "reason", "owner", "expires"),
    [
        ("node burn-in, see OPS-142", "node burn-in, see OPS-142", None, None),  # today's form, unchanged
        ("owner: OPS-142; see the chart", "owner: OPS-142; see the chart", None, None),  # no `key=` start: plain
        (" expires=2027-03-01 ; reason = pinned; by the chart ", "pinned; by the chart", None, EXPIRES),
        ("reason=limit=4 per node; owner=team-gpu", "limit=4 per node", "team-gpu", None),
    ],
)
def test_the_annotation_forms(value: str, reason: str, owner: str | None, expires: date | None) -> None:
    read = read_waiver(value)
    assert (read.problem, read.reason, read.owner, read.expires) == (None, reason, owner, expires)


# --- the configuration's waivers ------------------------------------------------------------


def test_configuration_waivers_match_by_kind_namespace_and_name_globs() -> None:
    waivers = [
        {"rule": "DRA001", "kind": "Deployment", "namespace": "vendor-*", "name": "*-exporter", "reason": "chart"},
        {"rule": "legacy-extended-resource", "namespace": "", "reason": "never matches a glob-less empty"},
    ]
    objects = [
        legacy_pod("dcgm-exporter", "vendor-a", kind="Deployment"),  # waived
        legacy_pod("dcgm-exporter", "vendor-b", kind="Deployment"),  # waived
        legacy_pod("dcgm-exporter", "team-a", kind="Deployment"),  # another namespace
        legacy_pod("trainer", "vendor-a", kind="Deployment"),  # another name
        legacy_pod("dcgm-exporter", "vendor-a", kind="StatefulSet"),  # another kind
        legacy_pod("dcgm-exporter", "vendor-a", kind="Pod"),
    ]
    with pytest.raises(ConfigError, match=r"waivers\[1\]\.namespace: must be a non-empty string"):
        config({"waivers": waivers})
    report = check_objects(objects, config({"waivers": waivers[:1]}))
    assert sorted((f.object.kind, f.object.namespace, f.object.name) for f in report.waived) == [
        ("Deployment", "vendor-a", "dcgm-exporter"),
        ("Deployment", "vendor-b", "dcgm-exporter"),
    ]
    assert len(dra001(report)[0]) == 4
    terms = report.waived[0].waiver_terms
    assert terms is not None and (terms.owner, terms.expires, terms.source) == (None, None, "waivers[0] in test")
    # A rule named by name, globs left out: every object.
    everywhere = config({"waivers": [{"rule": "legacy-extended-resource", "reason": "lab cluster"}]})
    assert dra001(check_objects(objects, everywhere)) == ([], ["lab cluster"] * 6)


def test_an_annotation_waiver_comes_first_then_the_first_matching_entry() -> None:
    waivers = [
        {"rule": "DRA001", "name": "a*", "reason": "first", "expires": "2020-01-01"},
        {"rule": "DRA001", "name": "a*", "reason": "second", "owner": "OPS-7"},
        {"rule": "DRA001", "reason": "third"},
    ]
    objects = [legacy_pod("annotated", annotations={IGNORE: "by hand"}), legacy_pod("a2"), legacy_pod("b")]
    report = check_objects(objects, config({"waivers": waivers}, today=date(2026, 1, 1)))
    assert [(f.object.name, f.waiver) for f in report.waived] == [
        ("a2", "second"),
        ("annotated", "by hand"),
        ("b", "third"),
    ]
    # An expired annotation gives way to a valid entry.
    expired = legacy_pod("b", annotations={IGNORE: "reason=old; expires=2025-12-31"})
    assert dra001(check_objects([expired], config({"waivers": waivers}, today=date(2026, 1, 1))))[1] == ["third"]


def test_an_expired_configuration_entry_waives_nothing_and_says_so() -> None:
    waivers = [{"rule": "DRA001", "namespace": "vendor-*", "reason": "chart", "owner": "OPS-142", "expires": EXPIRES}]
    assert dra001(check_objects([legacy_pod()], config({"waivers": waivers}, today=EXPIRES)))[1] == ["chart"]
    report = check_objects([legacy_pod()], config({"waivers": waivers}, today=date(2027, 3, 2)))
    (message,) = dra001(report)[0]
    assert message.endswith(" (the waiver expired on 2027-03-01: waivers[0] in test)")
    assert report.waived == []


def test_configuration_waivers_apply_to_pending_cross_object_findings() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "vendor-a"},
        "spec": {
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "missing"}],
            "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}],
        },
    }
    before = check_objects([pod], config())
    (missing,) = [f for f in before.findings if f.rule == "DRA009"]
    assert missing.cross_object and "is not among the checked objects" in missing.message
    waivers = [{"rule": "claim-wiring", "kind": "Pod", "reason": "the template is the chart's", "owner": "OPS-9"}]
    after = check_objects([pod], config({"waivers": waivers}))
    assert [f.rule for f in after.findings].count("DRA009") == 0
    (waived,) = [f for f in after.waived if f.rule == "DRA009"]
    assert waived.cross_object and waived.waiver == "the template is the chart's"
    assert waived.waiver_terms is not None and waived.waiver_terms.owner == "OPS-9"
    expired = [{**waivers[0], "expires": "2020-01-01"}]
    (note,) = [f.message for f in check_objects([pod], config({"waivers": expired})).findings if f.rule == "DRA009"]
    assert note.endswith("(the waiver expired on 2020-01-01: waivers[0] in test)")


def test_rules_that_cannot_be_waived_stay_so_in_the_configuration() -> None:
    def scrubber_pod(annotations: dict[str, str] | None = None) -> dict[str, Any]:
        pod = legacy_pod(annotations=annotations)  # DRA016 (not waivable): its claim runs no scrubber
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "missing"}]
        return pod

    waivers = [{"rule": "scrub-before-use", "reason": "we scrub by hand", "owner": "OPS-1"}]
    by_annotation = check_objects([scrubber_pod({"dra-guard.io/ignore-DRA016": "reason=x; owner=y"})], config())
    by_configuration = check_objects([scrubber_pod()], config({"waivers": waivers}))
    for report in (by_annotation, by_configuration):
        assert [f for f in report.waived if f.rule == "DRA016"] == []
        scrub = [f.message for f in report.findings if f.rule == "DRA016"]
        assert scrub and all(message.endswith(" (DRA016 cannot be waived)") for message in scrub)
    # `non-waivable: []` makes every rule waivable, by the configuration too.
    report = check_objects([scrubber_pod()], config({"waivers": waivers, "non-waivable": []}))
    assert {f.waiver for f in report.waived if f.rule == "DRA016"} == {"we scrub by hand"}
    assert [f for f in report.findings if f.rule == "DRA016"] == []


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("DRA001", r"waivers\[0\]: must be a mapping with rule and reason, not a str"),
        ({"reason": "x"}, r"waivers\[0\]\.rule: required: the ID or name of the rule it waives"),
        ({"rule": "DRA999", "reason": "x"}, r"waivers\[0\]\.rule: unknown rule 'DRA999'; known rules are DRA001-"),
        ({"rule": "nope", "reason": "x"}, r"waivers\[0\]\.rule: unknown rule 'nope'"),
        ({"rule": "DRA001"}, r"waivers\[0\]\.reason: required: why the rule's findings are accepted there"),
        ({"rule": "DRA001", "reason": " \u200b"}, r"waivers\[0\]\.reason: must be a reason that shows something"),
        ({"rule": "DRA001", "reason": 3}, r"waivers\[0\]\.reason: must be a reason that shows something, got 3"),
        ({"rule": "DRA001", "reason": "x", "kind": ""}, r"waivers\[0\]\.kind: must be a non-empty string"),
        ({"rule": "DRA001", "reason": "x", "name": ["a"]}, r"waivers\[0\]\.name: must be a non-empty string"),
        ({"rule": "DRA001", "reason": "x", "owner": ""}, r"waivers\[0\]\.owner: must be a non-empty string"),
        ({"rule": "DRA001", "reason": "x", "expires": "2027-02-30"}, r"waivers\[0\]\.expires: must be a date YYYY"),
        ({"rule": "DRA001", "reason": "x", "expires": 20270301}, r"waivers\[0\]\.expires: must be a date YYYY"),
        ({"rule": "DRA001", "reason": "x", "team": "a"}, r"waivers\[0\]: unknown key team; the keys are rule, "),
    ],
)
def test_bad_configuration_entries_name_the_entry_and_field(entry: object, message: str) -> None:
    with pytest.raises(ConfigError, match=r"^test: " + message):
        parse_config({"waivers": [entry]}, RULES, "test")
    # The second entry is named by its index.
    with pytest.raises(ConfigError, match=r"^test: " + message.replace(r"\[0\]", r"\[1\]")):
        parse_config({"waivers": [{"rule": "DRA001", "reason": "ok"}, entry]}, RULES, "test")


def test_waivers_must_be_a_list() -> None:
    with pytest.raises(ConfigError, match=r"^test: waivers: must be a list of waivers"):
        parse_config({"waivers": {"rule": "DRA001"}}, RULES, "test")


def test_files_give_dates_quoted_or_not_and_the_pulumi_pack_takes_waivers(tmp_path: Path) -> None:
    (tmp_path / ".dra-guard.yaml").write_text(
        "waivers:\n  - {rule: DRA001, reason: chart, expires: 2027-03-01}\n"
        "  - {rule: DRA002, reason: chart, expires: '2027-03-01', owner: OPS-1}\n"
    )
    (tmp_path / "pyproject.toml").write_text(
        '[tool.dra-guard]\nwaivers = [{ rule = "DRA001", reason = "chart", expires = 2027-03-01 }]\n'
    )
    from_yaml = load_config_file(tmp_path / ".dra-guard.yaml", RULES).get(WAIVERS)
    assert [(entry.rule, entry.expires, entry.owner) for entry in from_yaml] == [
        ("DRA001", EXPIRES, None),
        ("DRA002", EXPIRES, "OPS-1"),
    ]
    assert load_config_file(tmp_path / "pyproject.toml", RULES).get(WAIVERS)[0].expires == EXPIRES
    (tmp_path / "time.toml").write_text(
        '[tool.dra-guard]\nwaivers = [{ rule = "DRA001", reason = "c", expires = 2027-03-01T10:00:00 }]\n'
    )
    with pytest.raises(ConfigError, match=r"waivers\[0\]\.expires: must be a date YYYY-MM-DD, not a date and time"):
        load_config_file(tmp_path / "time.toml", RULES)
    (tmp_path / "bad.yaml").write_text("waivers:\n  - {rule: DRA001, reason: c, expires: 2027-02-30}\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: invalid YAML"):
        load_config_file(tmp_path / "bad.yaml", RULES)
    pack = parse_policy_config({"waivers": [{"rule": "DRA001", "reason": "c"}]}, RULES, "pulumi")
    assert pack.get(WAIVERS)[0].rule == "DRA001"
    option = RULES.options["waivers"]
    assert option.schema()["items"]["required"] == ["rule", "reason"]
    assert option.type.to_json(from_yaml) == [
        {"rule": "DRA001", "reason": "chart", "expires": "2027-03-01"},
        {"rule": "DRA002", "reason": "chart", "owner": "OPS-1", "expires": "2027-03-01"},
    ]


# --- reports and the command line -------------------------------------------------------------


def _cli(arguments: list[str], monkeypatch: pytest.MonkeyPatch, today: str | None) -> tuple[int, str, str]:
    if today is None:
        monkeypatch.delenv("DRA_GUARD_TODAY", raising=False)
    else:
        monkeypatch.setenv("DRA_GUARD_TODAY", today)
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(["check", *arguments], stdout, stderr)
    return code, stdout.getvalue(), stderr.getvalue()


def _write_input(tmp_path: Path) -> None:
    import yaml

    objects = [
        legacy_pod("annotated", annotations={IGNORE: GOVERNED}),
        legacy_pod("dcgm-exporter", kind="DaemonSet"),
        legacy_pod("plain", annotations={IGNORE: "node burn-in"}),
    ]
    (tmp_path / "a.yaml").write_text(yaml.safe_dump_all(objects))
    (tmp_path / ".dra-guard.yaml").write_text(
        "disable: [DRA016]\nwaivers:\n"
        "  - {rule: DRA001, kind: DaemonSet, name: '*-exporter', reason: vendor chart, owner: team-gpu, "
        "expires: 2027-06-30}\n"
    )


def test_json_and_sarif_show_the_owner_and_the_expiry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_input(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out, err = _cli(["--format", "json", "a.yaml"], monkeypatch, "2027-01-01")
    assert (code, err) == (0, ""), err
    waived = {entry["object"]["name"]: entry for entry in json.loads(out)["waived"]}
    assert {name: {k: v for k, v in entry.items() if k.startswith("waiver")} for name, entry in waived.items()} == {
        "annotated": {
            "waiver": "the vendor chart pins this",
            "waiverOwner": "OPS-142",
            "waiverExpires": "2027-03-01",
            "waiverSource": "annotation",
        },
        "dcgm-exporter": {
            "waiver": "vendor chart",
            "waiverOwner": "team-gpu",
            "waiverExpires": "2027-06-30",
            "waiverSource": "waivers[0] in ./.dra-guard.yaml",
        },
        "plain": {"waiver": "node burn-in", "waiverOwner": None, "waiverExpires": None, "waiverSource": "annotation"},
    }
    code, out, err = _cli(["--format", "sarif", "a.yaml"], monkeypatch, "2027-01-01")
    assert code == 0, err
    results = json.loads(out)["runs"][0]["results"]
    suppressions = {
        result["locations"][0]["logicalLocations"][0]["name"]: result["suppressions"]
        for result in results
        if "suppressions" in result
    }
    assert suppressions == {
        "Pod/vendor-a/annotated": [
            {
                "kind": "inSource",
                "status": "accepted",
                "justification": "the vendor chart pins this (owner OPS-142, expires 2027-03-01)",
                "properties": {"owner": "OPS-142", "expires": "2027-03-01"},
            }
        ],
        "DaemonSet/vendor-a/dcgm-exporter": [
            {
                "kind": "external",
                "status": "accepted",
                "justification": "vendor chart (owner team-gpu, expires 2027-06-30)",
                "properties": {
                    "owner": "team-gpu",
                    "expires": "2027-06-30",
                    "source": "waivers[0] in ./.dra-guard.yaml",
                },
            }
        ],
        # A plain reason stays as it was.
        "Pod/vendor-a/plain": [{"kind": "inSource", "status": "accepted", "justification": "node burn-in"}],
    }


def test_the_command_line_reads_today_from_dra_guard_today(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_input(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out, _ = _cli(["a.yaml"], monkeypatch, "2027-03-02")
    assert code == 1
    assert "Pod/vendor-a/annotated: " in out and out.count("(the waiver expired on 2027-03-01)") == 1
    assert out.splitlines()[-1].endswith("; 2 findings waived")
    code, out, _ = _cli(["a.yaml"], monkeypatch, "2027-07-01")
    assert code == 1 and "(the waiver expired on 2027-06-30: waivers[0] in ./.dra-guard.yaml)" in out
    code, _, err = _cli(["a.yaml"], monkeypatch, "tomorrow")
    assert (code, err) == (2, "dra-guard: DRA_GUARD_TODAY: must be a date YYYY-MM-DD, got 'tomorrow'\n")
    # Unset: today, in UTC (these waivers end long before the test's real today could be checked
    # against them, so only the plain annotation can be sure to waive).
    code, out, _ = _cli(["--format", "json", "a.yaml"], monkeypatch, None)
    assert code in (0, 1) and any(e["waiver"] == "node burn-in" for e in json.loads(out)["waived"])


def test_reports_are_deterministic() -> None:
    waivers = [
        {"rule": "DRA001", "namespace": "vendor-*", "reason": "chart", "owner": "OPS-1", "expires": "2027-03-01"},
        {"rule": "DRA001", "reason": "everywhere else", "expires": "2026-01-01"},
    ]
    objects = [
        legacy_pod(f"p{index}", namespace, annotations={IGNORE: GOVERNED} if index % 3 == 0 else None)
        for index in range(12)
        for namespace in ("vendor-a", "team-b")
    ]
    today = date(2026, 6, 1)
    first = render_json(check_objects(objects, config({"waivers": waivers}, today=today)))
    again = render_json(check_objects(list(reversed(objects)), config({"waivers": waivers}, today=today)))
    assert first == again
    document = json.loads(first)
    assert {entry["waiverSource"] for entry in document["waived"]} == {"annotation", "waivers[0] in test"}
    expired = [e for e in document["findings"] if e["rule"] == "DRA001"]
    assert expired and all(
        e["message"].endswith("(the waiver expired on 2026-01-01: waivers[1] in test)") for e in expired
    )


# --- a configuration entry for a controller, and what the cluster makes of it -----------------

_GPU_CONTAINER = {"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}
_POD_TEMPLATE = {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [_GPU_CONTAINER]}}
_SELECTOR = {"matchLabels": {"app": "w"}}
_CONTROLLERS: dict[str, dict[str, Any]] = {
    "Deployment": {"apiVersion": "apps/v1", "spec": {"replicas": 1, "selector": _SELECTOR, "template": _POD_TEMPLATE}},
    "ReplicaSet": {"apiVersion": "apps/v1", "spec": {"replicas": 1, "selector": _SELECTOR, "template": _POD_TEMPLATE}},
    "StatefulSet": {
        "apiVersion": "apps/v1",
        "spec": {"replicas": 1, "serviceName": "w", "selector": _SELECTOR, "template": _POD_TEMPLATE},
    },
    "DaemonSet": {"apiVersion": "apps/v1", "spec": {"selector": _SELECTOR, "template": _POD_TEMPLATE}},
    "Job": {
        "apiVersion": "batch/v1",
        "spec": {"template": {**_POD_TEMPLATE, "spec": {**_POD_TEMPLATE["spec"], "restartPolicy": "Never"}}},
    },
    "CronJob": {
        "apiVersion": "batch/v1",
        "spec": {
            "schedule": "0 * * * *",
            "jobTemplate": {
                "spec": {"template": {**_POD_TEMPLATE, "spec": {**_POD_TEMPLATE["spec"], "restartPolicy": "Never"}}}
            },
        },
    },
}


def _controller(kind: str) -> dict[str, Any]:
    return {**_CONTROLLERS[kind], "kind": kind, "metadata": {"name": "w", "namespace": "ns"}}


def _entry_for(kind: str, name: str) -> Config:
    return config(
        {
            "unscrubbed-classes": {"gpu.nvidia.com": "t"},
            "waivers": [{"rule": "DRA001", "kind": kind, "name": name, "reason": "a vendor chart's burn-in job"}],
        }
    )


def _admitted(made: Any, chosen: Config) -> bool:
    from dra_guard.admission.webhook import Webhook

    group = made.obj["apiVersion"].rpartition("/")[0]
    request = {
        "uid": "u",
        "kind": {"group": group, "version": "v1", "kind": made.kind},
        "operation": "CREATE",
        "namespace": "ns",
        "userInfo": {"username": made.writer},
        "object": made.obj,
    }
    return bool(Webhook(RULES, chosen, all_rules=True).review(request)["allowed"])


@pytest.mark.parametrize("kind", sorted(_CONTROLLERS))
@pytest.mark.parametrize("named", ["w", "other"])
def test_an_entry_for_a_controller_waives_what_the_cluster_makes_of_it(kind: str, named: str) -> None:
    """README: "In the cluster, the webhook applies both as `check` does". An entry for
    Deployment w passed w in `check`, and the webhook denied its ReplicaSet and every Pod
    (kind Pod, name w-<hash>-<suffix>: the entry matched none of them). Each object the
    controllers make (testkit.lifecycle) is now known by them too (model.owners); an entry
    for another name still waives nothing."""
    from testkit.lifecycle import cluster_creates

    chosen = _entry_for(kind, named)
    controller = _controller(kind)
    waived = named == "w"
    assert (not check_objects([controller], chosen).findings) is waived
    made = [each for each in cluster_creates([controller]) if each.kind != kind]
    assert {each.kind for each in made} >= {"Pod"}
    for each in made:
        assert _admitted(each, chosen) is waived, (each.kind, each.obj["metadata"])


def test_a_pod_is_known_as_a_deployment_only_through_a_replica_set_its_hash_names() -> None:
    """A Pod whose controller is ReplicaSet w-abc is Deployment w's only when it carries
    pod-template-hash abc, as the deployment controller makes them; a ReplicaSet of another
    name scheme is only itself."""
    from dra_guard.model.owners import made_by

    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "w-abc", "uid": "1", "controller": True}
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "ownerReferences": [owner]}}
    assert made_by(pod) == (("ReplicaSet", "w-abc"),)
    pod["metadata"]["labels"] = {"pod-template-hash": "abc"}
    assert made_by(pod) == (("ReplicaSet", "w-abc"), ("Deployment", "w"))
    pod["metadata"]["labels"] = {"pod-template-hash": "xyz"}
    assert made_by(pod) == (("ReplicaSet", "w-abc"),)
    # Not the controller, or an operator's kind: not followed.
    assert made_by({"metadata": {"ownerReferences": [{**owner, "controller": False}]}}) == ()
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "w", "controller": True}
    assert made_by({"metadata": {"ownerReferences": [jobset]}}) == ()


def _deployment_pod(writer: str | None = None) -> Any:
    """The Pod the cluster makes of Deployment w (`testkit.lifecycle`), as `writer` would
    create it (default: the replicaset controller, as the cluster does)."""
    from testkit.lifecycle import cluster_creates

    made = next(each for each in cluster_creates([_controller("Deployment")]) if each.kind == "Pod")
    return made if writer is None else replace(made, writer=writer)


def test_a_tenants_pod_naming_a_controller_is_not_waived_as_its_pod() -> None:
    """Owner references are the creator's to write: a tenant allowed to create Pods in the
    namespace but not Deployments gave a Pod the replicaset controller's owner reference and
    pod-template-hash label, and the webhook waived it under the entry for Deployment w (as
    it would a pod naming Deployment w itself). Only the workload controllers' writes are
    known by their owners (`admission-workload-controllers`); `check`, which reads manifests
    whose author may write any kind, still knows the pod by them."""
    chosen = _entry_for("Deployment", "w")
    controllers = _deployment_pod()
    assert _admitted(controllers, chosen)
    assert not _admitted(_deployment_pod(writer="alice"), chosen)
    assert not check_objects([controllers.obj], chosen).findings
    forged = {**controllers.obj, "metadata": {**controllers.obj["metadata"], "name": "mine"}}
    forged["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "w", "uid": "1", "controller": True}
    ]
    assert not _admitted(replace(controllers, obj=forged, writer="alice"), chosen)
    # Not even from a controller: a Deployment makes ReplicaSets, never Pods.
    assert not _admitted(replace(controllers, obj=forged), chosen)


def test_the_workload_controllers_are_configured_by_username() -> None:
    """`admission-workload-controllers`: a managed cluster's controllers under other names
    are trusted once listed; `[]` trusts nobody, and the controller's pod is denied."""
    from testkit.lifecycle import KUBE_CONTROLLER_MANAGER

    entry = {"rule": "DRA001", "kind": "Deployment", "name": "w", "reason": "burn-in"}
    base = {"unscrubbed-classes": {"gpu.nvidia.com": "t"}, "waivers": [entry]}
    assert _admitted(_deployment_pod(writer=KUBE_CONTROLLER_MANAGER), config(base))
    managed = config({**base, "admission-workload-controllers": ["eks:replicaset-controller"]})
    assert _admitted(_deployment_pod(writer="eks:replicaset-controller"), managed)
    assert not _admitted(_deployment_pod(), managed)
    assert not _admitted(_deployment_pod(), config({**base, "admission-workload-controllers": []}))


def test_a_pod_of_a_replica_set_without_its_hash_is_not_the_deployments_in_admission() -> None:
    """The replicaset controller's pod of ReplicaSet w-<hash> whose pod-template-hash label is
    gone (a ReplicaSet a tenant made under that name, its template without the label) is known
    as the ReplicaSet only: the entry for Deployment w does not waive it."""
    made = _deployment_pod()
    labels = {k: v for k, v in made.obj["metadata"]["labels"].items() if k != "pod-template-hash"}
    unhashed = replace(made, obj={**made.obj, "metadata": {**made.obj["metadata"], "labels": labels}})
    assert not _admitted(unhashed, _entry_for("Deployment", "w"))
    assert _admitted(unhashed, _entry_for("ReplicaSet", "w-*"))


def test_only_what_a_controller_makes_is_known_by_it() -> None:
    """A controller owner reference on an object its controller never makes (a Pod naming a
    Deployment, a ConfigMap naming a ReplicaSet) gives no identity; nor does a Job whose
    name does not end in a scheduled minute a CronJob's."""
    from dra_guard.model.owners import made_by

    def owned(api_version: str, kind: str, owner_kind: str, owner_name: str = "w") -> dict[str, Any]:
        group = {"Deployment": "apps/v1", "ReplicaSet": "apps/v1", "Job": "batch/v1", "CronJob": "batch/v1"}[owner_kind]
        owner = {"apiVersion": group, "kind": owner_kind, "name": owner_name, "uid": "1", "controller": True}
        return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "ownerReferences": [owner]}}

    assert made_by(owned("v1", "Pod", "Deployment")) == ()
    assert made_by(owned("v1", "ConfigMap", "ReplicaSet")) == ()
    assert made_by(owned("apps/v1", "ReplicaSet", "Deployment")) == (("Deployment", "w"),)
    assert made_by(owned("batch/v1", "Job", "CronJob")) == (("CronJob", "w"),)
    assert made_by(owned("v1", "Pod", "Job", "w-29000000")) == (("Job", "w-29000000"), ("CronJob", "w"))
    assert made_by(owned("v1", "Pod", "Job", "w-007")) == (("Job", "w-007"),)
    assert made_by(owned("v1", "Pod", "Job", "w")) == (("Job", "w"),)
