"""`dra-guard migrate` on real files: the upstream corpus, our fixtures, every error path.

Each migrated file must pass the official schemas (kubernetes-validate, strict, 1.34),
`dra-guard check` with exit 0, and the allocation model against the driver's slices;
only the lines migrate means to change may differ; the input stays as it was; and
migrating the output again changes nothing.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from dra_guard.cli.main import main
from dra_guard.contract.catalog import is_legacy_resource
from dra_guard.contract.scrubber import SCRUB_CONTAINER_NAME
from dra_guard.model.pod_templates import BUILTIN_GROUPS, api_group, pod_specs
from dra_guard.read.loader import Document, iter_bytes
from testkit.paths import REPO_ROOT
from testkit.rulecases import UNSCRUBBED_ACCEPTED
from tests.kubectl_oracle import read_many, same_objects
from tests.test_allocation import decide

CORPUS = REPO_ROOT / "tests" / "corpus" / "legacy-device-plugin"
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "migrate"
CRDS = REPO_ROOT / "tests" / "fixtures" / "crds"
#: A value for every pin the corpus and the fixtures need, each one a device the slice
#: fixtures in tests/fixtures/slices publish; and the namespace the corpus's objects, which
#: name none, are applied to (a template's isolation tag binds its namespace).
PINS = [
    "--namespace",
    "tenant-a",
    "--gpu-product",
    "NVIDIA H100 80GB HBM3",
    "--tpu-gen",
    "v6e",
    "--pin",
    "gpu.amd.com=cpx_nps4",
    "--pin",
    "gpu.intel.com=Flex 170",
]
#: The driver whose slices decide each class's claims.
SLICES = {
    "mig.nvidia.com": "nvidia-a100-mig",
    "gpu.nvidia.com": "nvidia-8gpu-pcieroot",
    "tpu.google.com": "tpu-v6e-2x4",
    "gpu.amd.com": "amd-mi300x-partitioned",
    "gpu.intel.com": "intel-gpu",
}
CLEAN_SOURCES = sorted(CORPUS.glob("*.yaml")) + [
    FIXTURES / name for name in ("mig-training.yaml", "workloads.yaml", "two-profiles.yaml", "flow-style.yaml")
]
#: The CRD fixtures migrate refuses on purpose, and the reason it gives (README.md,
#: "Migrate from the device plugin": what the controller does with the request).
CRD_REFUSALS = {
    "kserve-isvc-legacy-gpu.yaml": "KServe runs it with Knative",
    "trainingruntime-legacy-gpu.yaml": "Kubeflow Trainer reads the node container's resources",
    "trainjob-legacy-gpu.yaml": "a TrainJob has no pod template",
}
#: Pod templates inside workload CRDs: every CRD fixture migrate knows, and ours.
CRD_SOURCES = [path for path in sorted(CRDS.glob("*-legacy-gpu.yaml")) if path.name not in CRD_REFUSALS] + [
    FIXTURES / "crd-workloads.yaml"
]


#: TPU slice fixtures by the chips of their host.
TPU_HOSTS = {4: "tpu-v6e-2x2", 8: "tpu-v6e-2x4"}


def migrate(*arguments: str | Path) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(["migrate", *map(str, arguments)], stdout, stderr)
    assert "Traceback" not in stdout.getvalue() + stderr.getvalue()
    return code, stdout.getvalue(), stderr.getvalue()


def check(*paths: Path, config: Path | None = None) -> tuple[int, str]:
    """`dra-guard check` with `config`, the classes the scrubber cannot scrub accepted: migrate
    adds no scrubber for them, which DRA016 reports unless a platform accepts the class
    (tests/test_migrate.py shows both)."""
    options = yaml.safe_load(config.read_text()) if config else {}
    combined = paths[0].parent / "check-config.yaml"
    combined.write_text(yaml.safe_dump({**(options or {}), **UNSCRUBBED_ACCEPTED}))
    stdout, stderr = io.StringIO(), io.StringIO()
    arguments = ["check", "--config", str(combined), *map(str, paths)]
    return main(arguments, stdout, stderr), stdout.getvalue() + stderr.getvalue()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def objects(text: str) -> list[dict[str, Any]]:
    """Every object kubectl would send (List items on their own)."""
    found = []
    for document in yaml.safe_load_all(text):
        if isinstance(document, dict) and document.get("kind") == "List":
            found.extend(document["items"])
        elif document:
            found.append(document)
    return found


@pytest.fixture(autouse=True)
def _no_config_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # config discovery looks in the working directory


# --- what a migration may change -------------------------------------------------------

_LEGACY = r"""["']?(?:nvidia\.com/(?:gpu|mig-[\w.+-]+)|google\.com/tpu|amd\.com/gpu|gpu\.intel\.com/\w+)["']?"""
_LEGACY_ENTRY = re.compile(rf"""^\s*{_LEGACY}\s*:\s*["']?\d+["']?\s*(#.*)?$""")
_EMPTIED_SECTION = re.compile(r"^\s*(limits|requests):\s*(#.*)?$")
_FLOW_WITH_LEGACY = re.compile(rf"[{{,]\s*{_LEGACY}\s*:")
_WIRING = re.compile(
    r"^\s*(?:-\s+)?(?:claims:|resourceClaims:|name: [\w.-]+|resourceClaimTemplateName: [\w.-]+"
    # the scrubber, first init container (DRA016)
    r"|initContainers:|image: ghcr\.io/dra-guard/scrub:[\w.-]+|command:|dra-guard|scrub|resources:)$"
)
#: KubeRay's num-gpus, which migrate keeps when the limit it came from goes (a flow
#: `rayStartParams: {}` line is rewritten whole).
_RAY_START_PARAMS = re.compile(r"^\s*(?:rayStartParams:.*|num-gpus: '\d+')$")


def assert_only_migration_lines_changed(original: str, output: str) -> None:
    """Removed lines hold legacy requests; added lines are claims, pod claims or new documents."""
    old, new = original.splitlines(), output.splitlines()
    for tag, first, last, added_first, added_last in difflib.SequenceMatcher(None, old, new, False).get_opcodes():
        if tag == "equal":
            continue
        for line in old[first:last]:
            assert (
                _LEGACY_ENTRY.match(line)
                or _EMPTIED_SECTION.match(line)
                or _FLOW_WITH_LEGACY.search(line)
                or _RAY_START_PARAMS.match(line)
            ), line
        in_new_document = False
        for line in new[added_first:added_last]:
            in_new_document = in_new_document or line == "---"
            if not in_new_document and "{" not in line:  # flow lines: see the flow-style tests
                assert _WIRING.match(line) or _RAY_START_PARAMS.match(line), line


def _strip(value: Any, created: set[str], claims: set[str], inherited: tuple[Any, ...] = ()) -> Any:
    """`value` without legacy requests, the claims migrate adds, the workflow-level claims
    it copies into an Argo template (`inherited`), and KubeRay's num-gpus (which migrate
    writes where the limit gave it; test_migrate.py checks when)."""
    if isinstance(value, list):
        return [_strip(item, created, claims, inherited) for item in value]
    if not isinstance(value, dict):
        return value
    result = {}
    for key, item in value.items():
        kept, below = item, inherited
        if key in ("limits", "requests") and isinstance(item, dict):
            kept = {name: quantity for name, quantity in item.items() if not is_legacy_resource(name)}
        elif key == "resourceClaims" and isinstance(item, list):
            kept = [
                claim
                for claim in item
                if claim.get("resourceClaimTemplateName") not in created and claim not in inherited
            ]
        elif key == "claims" and isinstance(item, list):
            kept = [claim for claim in item if claim.get("name") not in claims]
        elif key == "initContainers" and isinstance(item, list):
            kept = [container for container in item if container.get("name") != SCRUB_CONTAINER_NAME]
        elif key == "rayStartParams" and isinstance(item, dict):
            kept = {name: param for name, param in item.items() if name != "num-gpus"}
        elif key == "templates" and isinstance(value.get("resourceClaims"), list):
            below = tuple(value["resourceClaims"])
        kept = _strip(kept, created, claims, below)
        if kept not in ({}, []) or key not in (
            "limits",
            "requests",
            "resourceClaims",
            "claims",
            "resources",
            "rayStartParams",
            "initContainers",
        ):
            result[key] = kept
    return result


def assert_nothing_else_changed(original: str, output: str) -> list[dict[str, Any]]:
    """The objects of `output`, minus the new templates and wiring, are those of `original`."""
    before, after = objects(original), objects(output)
    templates = [obj for obj in after if obj not in before and obj["kind"] == "ResourceClaimTemplate"]
    created = {template["metadata"]["name"] for template in templates}
    rest = [obj for obj in after if obj not in templates]
    claims = {
        claim["name"] for obj in rest for claim in _pod_claims(obj) if claim.get("resourceClaimTemplateName") in created
    }
    assert [_strip(obj, created, claims) for obj in rest] == [_strip(obj, set(), set()) for obj in before]
    return templates


def _pod_claims(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, list):
        return [claim for item in value for claim in _pod_claims(item)]
    if not isinstance(value, dict):
        return []
    own = value.get("resourceClaims") if isinstance(value.get("resourceClaims"), list) else []
    return own + [claim for item in value.values() for claim in _pod_claims(item)]


# --- the corpus and the fixtures, migrated -------------------------------------------------


def validate_strictly(obj: dict[str, Any]) -> None:
    """Built-in kinds against the official schema (kubernetes-validate, strict, 1.34).  In a
    workload CRD, what migrate edits is of core types the CRD embeds (PodSpec or
    PodTemplateSpec, Container, PodResourceClaim): each pod template the finder knows is
    validated as one, and the containers and pod claims of every pod it builds as a Pod."""
    if api_group(obj) in BUILTIN_GROUPS:
        kubernetes_validate.validate(obj, "1.34.0", strict=True)
        return
    views = pod_specs(obj)
    assert views, f"no pod spec in {obj['kind']}"
    for view in views:
        if not view.containers:
            continue  # an Argo workflow's claims for templates defined elsewhere
        if view.path[-2:] == ("template", "spec"):  # a PodTemplateSpec
            template = {"metadata": view.template_metadata, "spec": view.spec}
            kubernetes_validate.validate(
                {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "probe"}, "template": template},
                "1.34.0",
                strict=True,
            )
        kubernetes_validate.validate(_as_pod(view), "1.34.0", strict=True)


#: What Argo adds to a core Container (ScriptTemplate, ContainerNode, UserContainer).
_ARGO_CONTAINER_EXTRAS = ("source", "dependencies", "mirrorVolumeMounts")


def _as_pod(view: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [], "initContainers": []}
    for found in view.containers:
        container = {key: value for key, value in found.container.items() if key not in _ARGO_CONTAINER_EXTRAS}
        container.setdefault("name", "main")  # an Argo container or script template runs as `main`
        spec["initContainers" if found.path[-2] == "initContainers" else "containers"].append(container)
    spec["resourceClaims"] = [dict(claim) for _, claim in view.claims]
    spec = {key: value for key, value in spec.items() if value}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe"}, "spec": spec}


@pytest.mark.parametrize("source", CLEAN_SOURCES + CRD_SOURCES, ids=lambda path: path.name)
def test_migrated_files_are_valid_compliant_and_idempotent_and_change_nothing_else(
    source: Path, tmp_path: Path
) -> None:
    before = digest(source)
    output = tmp_path / "out.yaml"
    code, report, _ = migrate(source, "-o", output, *PINS)
    assert code == 0, report
    assert digest(source) == before, "the input must not change"
    original, migrated = source.read_text(), output.read_text()

    for obj in objects(migrated):
        validate_strictly(obj)
    code, findings = check(output)
    assert code == 0, findings
    assert assert_nothing_else_changed(original, migrated), "every clean source has something to migrate"
    if source.name != "flow-style.yaml":  # one line there is both kept and changed
        assert_only_migration_lines_changed(original, migrated)

    again = tmp_path / "again.yaml"
    assert migrate(output, "-o", again, *PINS)[0] == 0
    assert again.read_bytes() == output.read_bytes()


# The CRD fixtures ask for MIG 1g.10gb, an A100-80GB/H100 profile the A100-40GB slices do
# not publish; crd-workloads.yaml stands in for them here.
@pytest.mark.parametrize("source", [*CLEAN_SOURCES, FIXTURES / "crd-workloads.yaml"], ids=lambda path: path.name)
def test_migrated_claims_are_satisfiable_on_their_drivers_slices(source: Path, tmp_path: Path) -> None:
    output = tmp_path / "out.yaml"
    assert migrate(source, "-o", output, *PINS)[0] == 0
    templates = assert_nothing_else_changed(source.read_text(), output.read_text())
    verdicts = {}
    for template in templates:
        request = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
        fixture = SLICES[request["deviceClassName"]]
        if request["deviceClassName"] == "tpu.google.com":
            # A whole host (DRA017): only a host of exactly `count` chips allocates it.
            (selector,) = request["selectors"]
            assert f"chipCount == {request['count']}" in selector["cel"]["expression"]
            fixture = TPU_HOSTS.get(request["count"], "")
            if not fixture:
                continue  # no fixture of a host that size (v5e 1x1: one chip)
        verdicts[template["metadata"]["name"]] = decide(template, fixture)
    failed = {name: verdict.reason for name, verdict in verdicts.items() if verdict.status != "satisfiable"}
    assert failed == {}


def test_a_directory_is_mirrored_under_the_output_directory(tmp_path: Path) -> None:
    code, report, _ = migrate(CORPUS, "-o", tmp_path / "out", *PINS)
    assert code == 0, report
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == sorted(path.name for path in CORPUS.iterdir())
    assert check(tmp_path / "out")[0] == 0
    assert "9 object(s) migrated with 9 claim template(s), 0 refused" in report


def test_the_report_says_what_was_done_per_object(tmp_path: Path) -> None:
    code, report, _ = migrate(FIXTURES / "mig-training.yaml", "-o", tmp_path / "out.yaml")
    assert code == 0
    path = FIXTURES / "mig-training.yaml"
    assert f"{path}:45: Deployment/team-a/trainer: nvidia.com/mig-1g.5gb: 2 in container main" in report
    assert (
        f"{path}:7: Deployment/team-a/trainer: created ResourceClaimTemplate team-a/trainer-mig-1g-5gb "
        "(mig.nvidia.com, gpu.nvidia.com/profile=1g.5gb, count 3, pod claim accelerator for warmup, log-shipper, main)"
    ) in report


def test_the_scrubber_takes_a_claim_the_deployment_already_had_from_a_template_in_the_input(tmp_path: Path) -> None:
    """The scrubber migrate added held only the claim it created; `check` on the output
    reported DRA016 claim-not-scrubbed for the MIG claim the Deployment already had."""
    source = tmp_path / "trainer.yaml"
    source.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: old-slice, namespace: team-a}\n"
        "spec:\n  spec:\n    devices:\n      requests:\n      - name: dev\n"
        "        exactly: {deviceClassName: mig.nvidia.com, allocationMode: ExactCount, count: 1}\n"
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: trainer, namespace: team-a}\nspec:\n"
        "  selector: {matchLabels: {app: t}}\n  template:\n    metadata: {labels: {app: t}}\n    spec:\n"
        "      containers:\n      - name: main\n        image: trainer:1.0\n        resources:\n"
        "          limits: {nvidia.com/gpu: 1}\n          claims: [{name: old}]\n"
        "      resourceClaims:\n      - {name: old, resourceClaimTemplateName: old-slice}\n"
    )
    code, _, _ = migrate("--gpu-product", "NVIDIA H100 80GB HBM3", source, "-o", tmp_path / "out.yaml")
    assert code == 0
    stdout, stderr = io.StringIO(), io.StringIO()
    main(["check", "--config", os.devnull, "--format", "json", str(tmp_path / "out.yaml")], stdout, stderr)
    found = json.loads(stdout.getvalue())["findings"]
    assert [finding for finding in found if finding["rule"] == "DRA016"] == []


def test_json_report(tmp_path: Path) -> None:
    code, stdout, _ = migrate(FIXTURES / "two-profiles.yaml", "--dry-run", "--format", "json")
    assert code == 0
    report = json.loads(stdout)
    assert set(report) == {"files", "objects", "errors", "skipped", "charts", "links", "unread_git_indexes", "summary"}
    [file] = report["files"]
    assert file["changed"] and file["written"] is None and file["diff"].startswith("--- a/")
    [entry] = report["objects"]
    assert entry["object"] == "Pod/team-e/pipeline" and entry["status"] == "migrated"
    assert [template["podClaim"] for template in entry["templates"]] == ["mig-1g-5gb", "mig-2g-10gb"]
    assert entry["requests"][0] == {
        "container": "encoder",
        "resource": "nvidia.com/mig-2g.10gb",
        "count": 1,
        "line": 12,
    }
    assert report["summary"] == {"files": 1, "changed": 1, "migrated": 1, "templates": 2, "refused": 0, "errors": 0}


# --- writing ------------------------------------------------------------------------------


def test_nothing_is_written_without_in_place_and_dry_run_prints_a_diff(tmp_path: Path) -> None:
    source = tmp_path / "pod.yaml"
    source.write_bytes((CORPUS / "gpu-pod.yaml").read_bytes())
    before = digest(source)
    code, stdout, _ = migrate(source, *PINS)
    assert code == 0 and "kind: ResourceClaimTemplate" in stdout
    code, diff, stderr = migrate(source, "--dry-run", "-o", tmp_path / "never.yaml", *PINS)
    assert code == 0 and diff.startswith(f"--- a/{source}\n+++ b/{source}\n")
    assert "-          nvidia.com/gpu: 1\n" in diff and "1 object(s) migrated" in stderr
    assert digest(source) == before and not (tmp_path / "never.yaml").exists()
    assert sorted(os.listdir(tmp_path)) == ["pod.yaml"]


def test_in_place_keeps_a_backup_and_leaves_unchanged_files_alone(tmp_path: Path) -> None:
    legacy, clean = tmp_path / "legacy.yaml", tmp_path / "clean.yaml"
    legacy.write_bytes((CORPUS / "plugin-test.yaml").read_bytes())
    legacy.chmod(0o640)
    clean.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    code, report, _ = migrate(tmp_path, "--in-place", *PINS)
    assert code == 0, report
    assert (tmp_path / "legacy.yaml.bak").read_bytes() == (CORPUS / "plugin-test.yaml").read_bytes()
    assert "resourceClaimTemplateName" in legacy.read_text() and legacy.stat().st_mode & 0o777 == 0o640
    assert not (tmp_path / "clean.yaml.bak").exists()
    assert sorted(os.listdir(tmp_path)) == ["clean.yaml", "legacy.yaml", "legacy.yaml.bak"]  # no temporary left
    assert migrate(tmp_path / "legacy.yaml", "--in-place", *PINS)[0] == 0  # idempotent in place too
    assert (tmp_path / "legacy.yaml.bak").read_bytes() == (CORPUS / "plugin-test.yaml").read_bytes()


@pytest.mark.e2e
def test_stdin_to_stdout_and_byte_identical_output_whatever_the_hash_seed() -> None:
    outputs = set()
    for seed in ("0", "1", "4242"):
        result = subprocess.run(
            [sys.executable, "-m", "dra_guard.cli", "migrate", "-", *PINS],
            input=(FIXTURES / "workloads.yaml").read_bytes(),
            capture_output=True,
            cwd=REPO_ROOT,
            env={**os.environ, "PYTHONHASHSEED": seed},
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        outputs.add(result.stdout)
    assert len(outputs) == 1
    assert b"name: inference-mig-2g-10gb-2\n" in outputs.pop()  # the existing name is not reused


# --- refusals -------------------------------------------------------------------------------


def test_objects_that_cannot_be_migrated_exit_2_with_file_and_line_and_the_rest_is_migrated(tmp_path: Path) -> None:
    source = FIXTURES / "refusals.yaml"
    output = tmp_path / "out.yaml"
    code, report, _ = migrate(source, "-o", output)
    assert code == 2
    for line, expected in [
        (
            13,
            "error: Pod/team-g/needs-product: nvidia.com/gpu: class gpu.nvidia.com is pinned by "
            "gpu.nvidia.com/productName, which the resource name does not give; pass --gpu-product VALUE; not migrated",
        ),
        (26, "error: Pod/team-g/inferentia: aws.amazon.com/neuroncore: dra-guard knows no DRA device class"),
        (41, "error: Pod/team-g/unequal: nvidia.com/mig-1g.5gb: limits (2) and requests (1) differ"),
        (54, "error: Pod/team-g/fractional: nvidia.com/mig-1g.5gb: '500m' is not a whole number of devices"),
        (69, "error: Trainer/team-g/custom: nvidia.com/mig-1g.5gb: kind Trainer (example.com) is no workload migrate"),
        (92, "note: LimitRange/team-g/defaults: removed nvidia.com/mig-1g.5gb from this LimitRange's default"),
    ]:
        assert f"{source}:{line}: {expected}" in report
    assert "1 object(s) migrated with 1 claim template(s), 5 refused" in report
    before, after = objects(source.read_text()), objects(output.read_text())
    refused = {"needs-product", "inferentia", "unequal", "fractional", "custom"}
    assert [obj for obj in before if obj["metadata"]["name"] in refused] == [
        obj for obj in after if obj["metadata"]["name"] in refused
    ]
    assert [obj["metadata"]["name"] for obj in after if obj["kind"] == "ResourceClaimTemplate"] == ["fine-mig-1g-5gb"]
    # What check still reports is exactly the refused requests.
    code, findings = check(output)
    assert code == 1
    assert set(re.findall(r"DRA001 \[critical\] \w+/team-g/([\w-]+)", findings)) == refused
    assert len(re.findall(r" DRA\d+ ", findings)) == 6  # `unequal` asks twice


def test_a_file_check_refuses_is_refused_untouched_and_the_others_still_migrate(tmp_path: Path) -> None:
    broken, good = tmp_path / "broken.yaml", tmp_path / "good.yaml"
    broken.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p\nspec:\n  containers: [{resources: {}}]\n")
    good.write_bytes((CORPUS / "gpu-pod.yaml").read_bytes())
    before = broken.read_bytes()
    code, report, _ = migrate(tmp_path, "--in-place", *PINS)
    assert code == 2
    assert re.search(rf"{re.escape(str(broken))}:\d+: invalid YAML: .*; not migrated", report)
    assert broken.read_bytes() == before and not (tmp_path / "broken.yaml.bak").exists()
    assert "resourceClaimTemplateName" in good.read_text()


def test_a_write_that_fails_midway_still_writes_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second file cannot be written (a full disk): the first was, whole, and the JSON
    report asked for says so, with the error, instead of being lost."""
    from dra_guard.cli import safe_write

    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    for path in (first, second):
        path.write_bytes((CORPUS / "gpu-pod.yaml").read_bytes())
    real_write = safe_write.write_atomically

    def full_after_a(path: str, data: bytes, **kwargs: Any) -> None:
        if os.path.basename(path).startswith("b.yaml"):
            raise OSError(28, "No space left on device")
        real_write(path, data, **kwargs)

    monkeypatch.setattr(safe_write, "write_atomically", full_after_a)
    code, stdout, stderr = migrate(tmp_path, "--in-place", "--format", "json", *PINS)
    assert code == 2 and "cannot write" in stderr and "No space left on device" in stderr
    report = json.loads(stdout)
    assert "resourceClaimTemplateName" in first.read_text() and "resourceClaimTemplateName" not in second.read_text()
    written = {entry["file"]: entry["written"] for entry in report["files"]}
    assert written == {str(first): str(first), str(second): None}


def test_a_json_file_gets_its_template_as_one_more_json_object(tmp_path: Path) -> None:
    output = tmp_path / "out.json"
    code, report, _ = migrate(FIXTURES / "pod.json", "-o", output)
    assert code == 0, report
    migrated = output.read_text()
    assert (
        migrated.startswith('{\n  "apiVersion": "v1",\n')
        and '\n}\n{\n  "apiVersion": "resource.k8s.io/v1",' in migrated
    )
    assert check(output)[0] == 0
    assert migrate(output, "-o", tmp_path / "again.json")[0] == 0
    assert (tmp_path / "again.json").read_bytes() == output.read_bytes()


@pytest.mark.e2e
@pytest.mark.parametrize("source", [*CLEAN_SOURCES, *CRD_SOURCES, FIXTURES / "pod.json"], ids=lambda path: path.name)
def test_kubectl_sends_the_migrated_objects(source: Path, tmp_path: Path) -> None:
    """The migrated file, read by the real kubectl, gives the objects check reads from it."""
    output = tmp_path / ("out" + source.suffix)
    assert migrate(source, "-o", output, *PINS)[0] == 0
    [kubectl] = read_many([output], tmp_path / "scratch")
    ours = [item.obj for item in iter_bytes(output.read_bytes(), str(output)) if isinstance(item, Document)]
    assert not kubectl.failed, kubectl.message
    assert same_objects(ours, kubectl.objects)


def test_every_crd_fixture_with_a_legacy_request_is_migrated_or_refused_on_purpose() -> None:
    names = {path.name for path in CRDS.glob("*-legacy-gpu.yaml")}
    assert set(CRD_REFUSALS) <= names
    assert {path.name for path in CRD_SOURCES if path.parent == CRDS} == names - set(CRD_REFUSALS)


@pytest.mark.parametrize("name", sorted(CRD_REFUSALS))
def test_crds_whose_controllers_read_the_request_are_refused_with_the_reason(name: str, tmp_path: Path) -> None:
    source, output = CRDS / name, tmp_path / "out.yaml"
    code, report, _ = migrate(source, "-o", output, *PINS)
    assert code == 2
    assert re.search(
        rf"{re.escape(str(source))}:\d+: error: \w+/tenant-a/[\w-]+: [\w./-]+: {CRD_REFUSALS[name]}", report
    )
    assert output.read_bytes() == source.read_bytes()


@pytest.mark.parametrize("name", ["limitrange-gpu-default.yaml", "limitrange-gpu-max-min.yaml"])
def test_limit_range_defaults_are_removed_with_a_note(name: str, tmp_path: Path) -> None:
    output = tmp_path / "out.yaml"
    code, report, _ = migrate(CRDS / name, "-o", output)
    assert code == 0 and "note: LimitRange/tenant-a/" in report
    assert check(output)[0] == 0
    for obj in objects(output.read_text()):
        kubernetes_validate.validate(obj, "1.34.0", strict=True)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--format", "json"], "--format json puts the report on stdout"),
        (["-", "--in-place"], "--in-place cannot rewrite stdin"),
        (["--pin", "gpu.amd.com"], "expected CLASS=VALUE"),
        (["--pin", "fpga.example.org=x"], "unknown device class 'fpga.example.org'"),
        (["--hmac-key-env", "DRA_GUARD_TEST_UNSET_KEY"], "DRA_GUARD_TEST_UNSET_KEY, which is not set or empty"),
        (
            ["--sanitization", "ScrubBeforeUse", "--no-scrubber"],
            "--sanitization ScrubBeforeUse declares that the scrubber runs first in every pod, and --no-scrubber",
        ),
    ],
)
def test_usage_errors_exit_2_and_write_nothing(arguments: list[str], message: str, tmp_path: Path) -> None:
    source = tmp_path / "pod.yaml"
    source.write_bytes((CORPUS / "gpu-pod.yaml").read_bytes())
    code, stdout, stderr = migrate(source, *arguments, *PINS)
    assert code == 2 and message in stderr and stdout == ""
    assert sorted(os.listdir(tmp_path)) == ["pod.yaml"]


def test_output_onto_an_input_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "pod.yaml"
    source.write_bytes((CORPUS / "gpu-pod.yaml").read_bytes())
    code, _, stderr = migrate(source, "-o", source, *PINS)
    assert code == 2 and "-o would overwrite the input" in stderr
    assert source.read_bytes() == (CORPUS / "gpu-pod.yaml").read_bytes()


def test_output_and_in_place_exclude_each_other(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["migrate", str(CORPUS), "-o", str(tmp_path / "x"), "--in-place"])
    assert exit_info.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


# --- configuration and keys -----------------------------------------------------------------


def test_hmac_tags_from_the_flag_or_from_the_configuration_verify_in_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEAM_KEY", "s3cret")
    config = tmp_path / "keyed.yaml"
    config.write_text("hmac-key-env: TEAM_KEY\n")
    flagged, configured, plain = tmp_path / "flagged.yaml", tmp_path / "configured.yaml", tmp_path / "plain.yaml"
    assert migrate(CORPUS / "gpu-pod.yaml", "-o", flagged, "--hmac-key-env", "TEAM_KEY", *PINS)[0] == 0
    assert migrate(CORPUS / "gpu-pod.yaml", "-o", configured, "--config", config, *PINS)[0] == 0
    assert migrate(CORPUS / "gpu-pod.yaml", "-o", plain, *PINS)[0] == 0
    assert "isolation-tag: hmac-sha256:" in flagged.read_text()
    assert flagged.read_text() == configured.read_text()
    assert check(flagged, config=config)[0] == 0
    assert check(plain, config=config)[0] == 1  # a plain digest proves nothing once a key is in force


def test_the_configuration_decides_what_is_legacy(tmp_path: Path) -> None:
    config = tmp_path / ".dra-guard.yaml"
    config.write_text("extra-legacy-resources: [example.com/gpu]\n")
    source = tmp_path / "pod.yaml"
    source.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: m\n    image: i\n"
        "    resources:\n      limits: {example.com/gpu: 1}\n"
    )
    code, _, report = migrate(source)  # discovered in the working directory, as check does
    assert code == 2 and "example.com/gpu: dra-guard knows no DRA device class" in report


def test_tenant_from_namespace_and_api_version(tmp_path: Path) -> None:
    output = tmp_path / "out.yaml"
    arguments = [
        "--tenant-from-namespace",
        "--api-version",
        "resource.k8s.io/v1beta1",
        "--runtime-config",
        "resource.k8s.io/v1beta1=true",
        "--sanitization",
    ]
    code, _, _ = migrate(FIXTURES / "two-profiles.yaml", "-o", output, *arguments, "ZeroFillMemoryOnRelease")
    assert code == 0
    templates = [obj for obj in objects(output.read_text()) if obj["kind"] == "ResourceClaimTemplate"]
    assert {template["apiVersion"] for template in templates} == {"resource.k8s.io/v1beta1"}
    annotations = [template["metadata"]["annotations"] for template in templates]
    assert {(a["dra-guard.io/tenant"], a["dra-guard.io/sanitization"]) for a in annotations} == {
        ("team-e", "ZeroFillMemoryOnRelease")
    }
    assert check(output)[0] == 0
    for obj in objects(output.read_text()):
        kubernetes_validate.validate(copy.deepcopy(obj), "1.34.0", strict=True)


def test_the_readme_example_is_what_migrate_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO_ROOT)  # the diff names the file as given
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme[readme.index("## Migrate from the device plugin") :]
    example = section[section.index("```diff\n") + len("```diff\n") : section.index("```\n", section.index("```diff"))]
    code, diff, _ = migrate(
        Path("tests/corpus/legacy-device-plugin/gpu-pod.yaml"),
        "--dry-run",
        "--gpu-product",
        "NVIDIA A100-SXM4-40GB",
        "--namespace",
        "tenant-a",
    )
    assert code == 0 and diff == example


# --- which files, and for which release ------------------------------------------------------


def test_files_are_chosen_as_check_chooses_them(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "chart" / "templates").mkdir(parents=True)
    (tree / "chart" / "Chart.yaml").write_text("apiVersion: v2\nname: chart\nversion: 0.1.0\n")
    (tree / "chart" / "templates" / "pod.yaml").write_bytes((CORPUS / "gpu-pod.yaml").read_bytes())
    (tree / "values.yaml").write_text("replicas: 2\n")  # no manifest: skipped, as check skips it
    (tree / "generated").mkdir()
    (tree / "generated" / "pod.yaml").write_bytes((CORPUS / "gpu-pod.yaml").read_bytes())
    (tree / "pod.yaml").write_bytes((CORPUS / "gpu-pod.yaml").read_bytes())
    out = tmp_path / "out"
    code, report, _ = migrate(tree, "-o", out, "--exclude", "generated/", *PINS)
    assert code == 0, report
    assert sorted(path.name for path in out.rglob("*")) == ["pod.yaml"]
    assert f"dra-guard: {tree / 'chart'}: a Helm chart, not migrated" in report
    assert "1 file(s) found are no Kubernetes manifests, left alone" in report
    # A symlinked folder is not followed, as check does not follow it, and is named.
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "pod.yaml").write_bytes((CORPUS / "gpu-pod.yaml").read_bytes())
    os.symlink(tmp_path / "shared", tree / "shared")
    code, report, _ = migrate(tree, "-o", tmp_path / "out2", "--exclude", "generated/", *PINS)
    assert code == 0, report
    assert f"dra-guard: {tree / 'shared'}: a symlinked folder, not followed by a walk: not migrated" in report
    assert sorted(path.name for path in (tmp_path / "out2").rglob("*")) == ["pod.yaml"]
    (tree / "shared").unlink()
    # What a run wrote into OUT is not read again when OUT is inside the tree.
    inside = tree / "migrated"
    assert migrate(tree, "-o", inside, "--exclude", "generated/", *PINS)[0] == 0
    assert migrate(tree, "-o", inside, "--exclude", "generated/", *PINS)[0] == 0
    assert sorted(path.name for path in inside.rglob("*")) == ["pod.yaml"]


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.mark.parametrize("output", ["k8s", "k8s/sub"])
def test_an_output_folder_holding_inputs_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, output: str
) -> None:
    """-o at an input folder, or inside one where inputs lie, left those inputs out without a
    word ("0 of 0 file(s) changed", exit 0): they are no copies an earlier run wrote."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k8s" / "sub").mkdir(parents=True)
    (tmp_path / "k8s" / "pod.yaml").write_bytes((CORPUS / "gpu-pod.yaml").read_bytes())
    (tmp_path / "k8s" / "sub" / "p2.yaml").write_bytes((CORPUS / "gpu-pod.yaml").read_bytes())
    (tmp_path / "k8s" / "sub" / "values.yaml").write_text("replicas: 2\n")  # no manifest: no input to lose
    before = _snapshot(tmp_path)
    code, _, stderr = migrate("k8s", "-o", output, *PINS)
    assert code == 2
    named = "k8s/pod.yaml" if output == "k8s" else "k8s/sub/p2.yaml"
    assert stderr.startswith(f"dra-guard: -o {output} holds {named}, which the walk finds as an input")
    assert "nothing written" in stderr
    assert _snapshot(tmp_path) == before


def test_an_output_folder_inside_the_inputs_skips_only_its_own_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "pod.yaml").write_bytes((CORPUS / "gpu-pod.yaml").read_bytes())
    assert migrate("k8s", "-o", "k8s/out", *PINS)[0] == 0
    copy = (tmp_path / "k8s" / "out" / "pod.yaml").read_bytes()
    code, report, _ = migrate("k8s", "-o", "k8s/out", *PINS)  # a rerun: the copy is not read
    assert code == 0 and "1 of 1 file(s) changed" in report
    assert (tmp_path / "k8s" / "out" / "pod.yaml").read_bytes() == copy
    assert sorted(_snapshot(tmp_path / "k8s")) == ["out/pod.yaml", "pod.yaml"]
    (tmp_path / "k8s" / "pod.yaml").rename(tmp_path / "k8s" / "moved.yaml")  # its copy is stale now
    code, _, stderr = migrate("k8s", "-o", "k8s/out", *PINS)
    assert code == 2 and "holds k8s/out/pod.yaml" in stderr
    assert not (tmp_path / "k8s" / "out" / "moved.yaml").exists()


def test_two_inputs_whose_copies_would_be_one_file_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """stdin's copy is OUT/stdin.yaml, and so was the copy of a file named stdin.yaml: both
    said "written to out/stdin.yaml", exit 0, and one was lost."""
    monkeypatch.chdir(tmp_path)
    pod = (CORPUS / "gpu-pod.yaml").read_bytes()
    (tmp_path / "stdin.yaml").write_bytes(pod)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(pod.replace(b"gpu-operator-test", b"from-stdin"))))
    code, _, stderr = migrate("-", "stdin.yaml", "-o", "out/", *PINS)
    assert code == 2
    assert "-o would write both <stdin> and stdin.yaml to out/stdin.yaml" in stderr and "nothing written" in stderr
    assert not (tmp_path / "out").exists()


def test_a_hard_linked_file_is_not_rewritten_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The atomic replace broke the link: k8s/a.yaml was migrated and k8s/b.yaml, the same
    file a moment before, kept its legacy request ("1 of 1 file(s) changed", exit 0)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "a.yaml").write_bytes((CORPUS / "gpu-pod.yaml").read_bytes())
    os.link(tmp_path / "k8s" / "a.yaml", tmp_path / "k8s" / "b.yaml")
    (tmp_path / "k8s" / "c.yaml").write_bytes((CORPUS / "gpu-pod.yaml").read_bytes())
    before = _snapshot(tmp_path)
    code, _, stderr = migrate("k8s", "--in-place", *PINS)
    assert code == 2
    assert "k8s/a.yaml has 1 other hard link, which --in-place would leave unmigrated" in stderr
    assert _snapshot(tmp_path) == before  # nothing written, c.yaml neither
    assert os.stat(tmp_path / "k8s" / "a.yaml").st_nlink == 2
    os.unlink(tmp_path / "k8s" / "b.yaml")  # one name left: migrated as any file
    assert migrate("k8s", "--in-place", *PINS)[0] == 0
    assert (tmp_path / "k8s" / "a.yaml.bak").read_bytes() == (CORPUS / "gpu-pod.yaml").read_bytes()


def test_a_file_with_a_nameless_object_is_refused_as_check_refuses_it(tmp_path: Path) -> None:
    source = tmp_path / "pods.yaml"
    source.write_text((CORPUS / "gpu-pod.yaml").read_text() + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {}\n")
    code, _, report = migrate(source, *PINS)
    assert (
        code == 2 and "has no metadata.name and no metadata.generateName (kubectl refuses it); not migrated" in report
    )


@pytest.mark.parametrize(
    ("arguments", "api_version", "guarded"),
    [
        ([], "resource.k8s.io/v1", True),  # 1.36, the default target, has the exclusivity guard
        (["--kubernetes-version", "1.34"], "resource.k8s.io/v1", False),
        # A default 1.33 cluster serves no version: the newest the runtime-config enables.
        (["--kubernetes-version", "1.33", "--runtime-config", "api/beta=true"], "resource.k8s.io/v1beta2", False),
        (
            [
                "--kubernetes-version",
                "1.33",
                "--api-version",
                "resource.k8s.io/v1beta1",
                "--runtime-config",
                "resource.k8s.io/v1beta1=true",
            ],
            "resource.k8s.io/v1beta1",
            False,
        ),
        (
            ["--kubernetes-version", "1.36", "--runtime-config", "resource.k8s.io/v1beta2=true,api/ga=false"],
            "resource.k8s.io/v1beta2",
            True,
        ),
    ],
)
def test_the_target_release_decides_the_api_version_and_the_guard(
    arguments: list[str], api_version: str, guarded: bool, tmp_path: Path
) -> None:
    output = tmp_path / "out.yaml"
    assert migrate(CORPUS / "gpu-pod.yaml", "-o", output, *arguments, *PINS)[0] == 0
    [template] = [obj for obj in objects(output.read_text()) if obj["kind"] == "ResourceClaimTemplate"]
    assert template["apiVersion"] == api_version
    assert ("device.allowMultipleAllocations == false" in output.read_text()) is guarded
    config = tmp_path / "target.yaml"
    version = arguments[1] if arguments else "1.36"
    config.write_text(f"kubernetes-version: '{version}'\n")
    code, findings = check(output, config=config)
    assert code == 0, findings
    kubernetes_validate.validate(template, f"{version}.0", strict=True)


def test_the_configured_release_is_the_default_and_an_unserved_api_version_is_a_usage_error(tmp_path: Path) -> None:
    config = tmp_path / ".dra-guard.yaml"
    config.write_text("kubernetes-version: '1.33'\n")
    source = tmp_path / "pod.yaml"
    source.write_bytes((CORPUS / "gpu-pod.yaml").read_bytes())
    beta = ["--runtime-config", "resource.k8s.io/v1beta2=true"]
    code, stdout, _ = migrate(source, *beta, *PINS)  # the configuration next to the file applies
    assert code == 0 and "apiVersion: resource.k8s.io/v1beta2" in stdout
    code, _, stderr = migrate(source, "--api-version", "resource.k8s.io/v1", *beta, *PINS)
    assert code == 2 and "Kubernetes 1.33 serves ResourceClaimTemplates in resource.k8s.io/v1beta2" in stderr
    # A default 1.33 cluster serves no version at all; nor does a default 1.36 one serve a beta.
    code, _, stderr = migrate(source, *PINS)
    assert (
        code == 2
        and (
            "a Kubernetes 1.33 cluster serves no ResourceClaimTemplate version by default; pass the --runtime-config "
            "your API server has, e.g. resource.k8s.io/v1beta2=true (and the DynamicResourceAllocation feature gate, "
            "beta and off by default in 1.33)"
        )
        in stderr
    )
    code, _, stderr = migrate(source, "--kubernetes-version", "1.36", "--api-version", "resource.k8s.io/v1beta2", *PINS)
    assert (
        code == 2
        and (
            "--api-version resource.k8s.io/v1beta2: not served by a default Kubernetes 1.36 cluster; pass "
            "--runtime-config=resource.k8s.io/v1beta2=true if your API server enables it"
        )
        in stderr
    )
    code, _, stderr = migrate(source, "--runtime-config", "api/beta=yes", *PINS)
    assert code == 2 and "--runtime-config: runtime_config[0]: api/beta takes true or false, got 'yes'" in stderr


def test_an_object_without_a_namespace_needs_the_namespace_it_is_applied_to(tmp_path: Path) -> None:
    output = tmp_path / "out.yaml"
    pins = PINS[2:]
    assert pins[:1] == ["--gpu-product"]
    code, report, _ = migrate(CORPUS / "gpu-pod.yaml", "-o", output, *pins)
    assert code == 2 and output.read_bytes() == (CORPUS / "gpu-pod.yaml").read_bytes()
    assert (
        "Pod/-/gpu-operator-test: has no namespace, and its claim template needs one (the isolation tag binds the "
        "namespace the claim lands in): pass --namespace NS, the namespace you apply it to"
    ) in report
    code, report, _ = migrate(CORPUS / "gpu-pod.yaml", "-o", output, "-n", "team-x", *pins)
    assert code == 0, report
    [template] = [obj for obj in objects(output.read_text()) if obj["kind"] == "ResourceClaimTemplate"]
    assert template["metadata"]["namespace"] == "team-x"
    assert "its claim template(s) are written for team-x (--namespace); apply it there too" in report
    code, _, stderr = migrate(CORPUS / "gpu-pod.yaml", "--namespace", "Team_X", *pins)
    assert code == 2 and "--namespace: must be a DNS-1123 label" in stderr


def test_the_output_directory_mirrors_the_folder_the_inputs_were_named_from(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "team-a" / "gpu").mkdir(parents=True)
    (tree / "team-a" / "gpu" / "pod.yaml").write_bytes((CORPUS / "gpu-pod.yaml").read_bytes())
    assert migrate(tree, "-o", tmp_path / "out", *PINS)[0] == 0
    assert (tmp_path / "out" / "team-a" / "gpu" / "pod.yaml").is_file()
    assert migrate(str(tree / "team-a" / "*" / "*.yaml"), "-o", tmp_path / "globbed", *PINS)[0] == 0
    assert (tmp_path / "globbed" / "gpu" / "pod.yaml").is_file()
