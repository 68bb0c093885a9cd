"""Real manifests from DRA drivers and device plugins (tests/corpus, see SOURCES.md).

The exact rule IDs each file yields, checked file by file as a user would run it, so any
change of behaviour on real input shows up here; an entry whose findings changed says why,
from what the drivers publish (dra_guard/contract/catalog.py cites the driver source for each class).
DRA003 on these files now means "no exclusivity guard" (Kubernetes 1.36, the default
target) where it meant "no annotation": the same files, for a different reason.
DRA016 is on every file whose pods hold an accelerator claim: none runs the scrubber
(no-scrubber on NVIDIA's classes; unscrubbable-class on TPU and the example driver's,
which it cannot scrub; unknown-claim, low, on gpu-test-vfio-config.yaml, whose Pod is in
namespace gpu-test-vfiopci and its template in gpu-test-vfio). DRA017 on multi-tpu-pod.yaml:
4 TPU chips with no chipCount pin may be part of a host.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dra_guard.engine.run import check_stream
from dra_guard.read.loader import load_paths

CORPUS = Path(__file__).parent / "corpus"

EXPECTED = {
    "dra-example-driver/1-basic-resourceclaimtemplate.yaml": [
        "DRA002",
        "DRA003",
        "DRA004",
        "DRA008",
        "DRA012",
        "DRA016",
    ],
    "dra-example-driver/2-device-taint-rule.yaml": [],
    # DRA011 gone: the example driver publishes no topology attribute (catalog: gpu.example.com),
    # so a matchAttribute could only make the claim unallocatable.
    # adminAccess monitors devices other claims hold: DRA006 decides who may; pinning, tags,
    # sanitization and the scrubber are not for it (the scrubber would take another tenant's
    # free memory).
    "dra-example-driver/admin-access.yaml": ["DRA006"],
    # DRA011 gone: the example driver publishes no topology attribute (catalog: gpu.example.com).
    # DRA007 now medium, was critical: the template gives each pod its own claim, so the sharing stays
    # among one pod's containers (facts 3.5: NVIDIA's own MPS and time-slicing examples are per pod).
    "dra-example-driver/basic-resourceclaim-opaque-config.yaml": [
        "DRA002",
        "DRA003",
        "DRA004",
        "DRA007",
        "DRA008",
        "DRA012",
        "DRA016",
    ],
    "dra-example-driver/basic-resourceclaimtemplate.yaml": ["DRA002", "DRA003", "DRA004", "DRA008", "DRA012", "DRA016"],
    "dra-example-driver/basic-shared-claim-across-pods.yaml": [
        "DRA002",
        "DRA003",
        "DRA004",
        "DRA005",
        "DRA008",
        "DRA012",
        "DRA016",
    ],
    "dra-example-driver/cel-selector.yaml": ["DRA003", "DRA004", "DRA008", "DRA012", "DRA016"],
    "dra-example-driver/extended-resource-request.yaml": ["DRA001"],
    "dra-example-driver/gpu-allow-multiple-allocations.yaml": [
        "DRA002",
        "DRA003",
        "DRA004",
        "DRA008",
        "DRA012",
        "DRA016",
    ],
    # DRA011 gone: the example driver publishes no topology attribute (catalog: gpu.example.com).
    "dra-example-driver/partitionable-devices.yaml": ["DRA002", "DRA003", "DRA004", "DRA008", "DRA012", "DRA016"],
    # DRA005 also on each Deployment's template claim now: its PodGroup declares the same claim, so every
    # pod of the group resolves to the group's one claim (facts 3.2, DRAWorkloadResourceClaims).
    "dra-example-driver/podgroup-resourceclaimtemplate.yaml": [
        "DRA002",
        "DRA003",
        "DRA004",
        "DRA005",
        "DRA008",
        "DRA012",
        "DRA016",
    ],
    "dra-example-driver/prioritized-alternatives.yaml": ["DRA002", "DRA003", "DRA004", "DRA008", "DRA012", "DRA016"],
    # DRA011 gone from the four TPU files: the TPU driver publishes no pcieRoot or other topology
    # attribute, and a matchAttribute on one never allocates (catalog: tpu.google.com).
    "google-tpu-dra/multi-tpu-pod.yaml": ["DRA002", "DRA003", "DRA004", "DRA008", "DRA012", "DRA016", "DRA017"],
    "google-tpu-dra/tpu-jax-test.yaml": ["DRA002", "DRA003", "DRA004", "DRA008", "DRA012", "DRA016"],
    "google-tpu-dra/tpu-test.yaml": ["DRA002", "DRA003", "DRA004", "DRA008", "DRA012", "DRA016"],
    "google-tpu-dra/vllm-tpu.yaml": ["DRA002", "DRA003", "DRA004", "DRA008", "DRA012", "DRA016"],
    "legacy-device-plugin/alexnet-gpu.yaml": ["DRA001"],
    "legacy-device-plugin/gpu-pod.yaml": ["DRA001"],
    "legacy-device-plugin/intelgpu-job.yaml": ["DRA001"],
    "legacy-device-plugin/jax-multi-gpu.yaml": ["DRA001"],
    "legacy-device-plugin/job-1.yaml": ["DRA001"],
    "legacy-device-plugin/plugin-test.yaml": ["DRA001"],
    "legacy-device-plugin/pytorch.yaml": ["DRA001"],
    "legacy-device-plugin/saxml-model-server-1x1.yaml": ["DRA001"],
    "legacy-device-plugin/training_singlehost.yaml": ["DRA001"],
    "nvidia-dra-driver/claims.yaml": ["DRA010"],
    "nvidia-dra-driver/gpu-anymig.yaml": ["DRA002", "DRA003", "DRA004", "DRA008", "DRA012", "DRA016"],
    # DRA001's message (here and for nvidia.com/gpu in the device-plugin files): NVIDIA's chart maps the name
    # to DeviceClass gpu.nvidia.com since v25.12.0, so it may be DRA's claim rather than a device plugin's
    # (facts 1.2, 3.6).
    "nvidia-dra-driver/gpu-full.yaml": ["DRA001"],
    "nvidia-dra-driver/gpu-job-rct.yaml": ["DRA002", "DRA003", "DRA004", "DRA008", "DRA012", "DRA016"],
    # DRA007 now medium, was critical: the template gives each pod its own claim, so the sharing stays
    # among one pod's containers (facts 3.5: NVIDIA's own MPS and time-slicing examples are per pod).
    "nvidia-dra-driver/gpu-mps.yaml": ["DRA002", "DRA003", "DRA004", "DRA007", "DRA008", "DRA012", "DRA016"],
    "nvidia-dra-driver/gpu-multiple-mig.yaml": ["DRA002", "DRA003", "DRA004", "DRA008", "DRA011", "DRA012", "DRA016"],
    # DRA007 now medium, was critical: the template gives each pod its own claim, so the sharing stays
    # among one pod's containers (facts 3.5: NVIDIA's own MPS and time-slicing examples are per pod).
    "nvidia-dra-driver/gpu-simple-mig-ts.yaml": ["DRA002", "DRA003", "DRA004", "DRA007", "DRA008", "DRA012", "DRA016"],
    "nvidia-dra-driver/gpu-simple-mig.yaml": ["DRA002", "DRA003", "DRA004", "DRA008", "DRA012", "DRA016"],
    # DRA007 now medium, was critical: the template gives each pod its own claim, so the sharing stays
    # among one pod's containers (facts 3.5: NVIDIA's own MPS and time-slicing examples are per pod).
    "nvidia-dra-driver/gpu-test-mps.yaml": ["DRA002", "DRA003", "DRA004", "DRA007", "DRA008", "DRA012", "DRA016"],
    "nvidia-dra-driver/gpu-test-vfio-config.yaml": [
        "DRA002",
        "DRA003",
        "DRA004",
        "DRA008",
        "DRA009",
        "DRA012",
        "DRA016",
    ],
    "nvidia-dra-driver/gpu-test1.yaml": ["DRA002", "DRA003", "DRA004", "DRA008", "DRA012", "DRA016"],
    "nvidia-dra-driver/gpu-test2.yaml": ["DRA002", "DRA003", "DRA004", "DRA008", "DRA012", "DRA016"],
    "nvidia-dra-driver/gpu-test3.yaml": ["DRA002", "DRA003", "DRA004", "DRA005", "DRA008", "DRA012", "DRA016"],
    "nvidia-dra-driver/gpu-test4.yaml": ["DRA003", "DRA004", "DRA008", "DRA012", "DRA016"],
    # DRA011 gone: NVIDIA publishes pcieRoot only where it can derive it (catalog: gpu.nvidia.com),
    # so it is accepted for whole GPUs but not required. DRA007 (both configs) now medium: one pod's claim.
    "nvidia-dra-driver/gpu-test5.yaml": ["DRA002", "DRA003", "DRA004", "DRA007", "DRA008", "DRA012", "DRA016"],
    # DRA007 now medium: a Deployment's replicas each get their own claim from the template (facts 3.2).
    "nvidia-dra-driver/gpu-test6.yaml": ["DRA002", "DRA003", "DRA004", "DRA007", "DRA008", "DRA012", "DRA016"],
    # DRA007 now medium, was critical: the template gives each pod its own claim, so the sharing stays
    # among one pod's containers (facts 3.5: NVIDIA's own MPS and time-slicing examples are per pod).
    "nvidia-dra-driver/gpu-timeslicing.yaml": ["DRA002", "DRA003", "DRA004", "DRA007", "DRA008", "DRA012", "DRA016"],
    "nvidia-dra-driver/gpu-two-claims-one-pod.yaml": ["DRA002", "DRA003", "DRA004", "DRA008", "DRA012", "DRA016"],
    # DRA013 new: the demo's DeviceClass maps nvidia.com/mig-1g.12gb (extendedResourceName), so any pod
    # takes a 1g.12gb slice without a claim template (KEP-5004, facts 3.6). DRA001's message now names the
    # class and its pin (profile == '1g.12gb') instead of calling the name a device plugin's.
    "nvidia-dra-driver/mig-1g-12gb.yaml": ["DRA001", "DRA013"],
    "nvidia-dra-driver/rc-shared-gpu.yaml": ["DRA002", "DRA003", "DRA004", "DRA008", "DRA012"],
    "nvidia-dra-driver/v1beta1-gpu-test1.yaml": ["DRA002", "DRA003", "DRA004", "DRA008", "DRA012", "DRA016"],
    "nvidia-dra-driver/v1beta1-gpu-test4.yaml": ["DRA003", "DRA004", "DRA008", "DRA012", "DRA016"],
}


def test_every_corpus_file_is_in_the_table() -> None:
    assert sorted(str(path.relative_to(CORPUS)) for path in CORPUS.rglob("*.yaml")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_file_yields_exactly_these_rules(name: str) -> None:
    loaded = load_paths([str(CORPUS / name)])
    report = check_stream(loaded.documents)
    assert loaded.errors == [] and report.errors == []
    assert sorted({finding.rule for finding in report.findings}) == EXPECTED[name]
    for finding in report.findings:
        assert finding.file == str(CORPUS / name) and finding.line and finding.line > 0


def test_highlights_from_the_corpus() -> None:
    """The cases the issue names, spelt out with objects and lines."""
    loaded = load_paths([str(CORPUS / "nvidia-dra-driver" / "gpu-test-mps.yaml")])
    (mps,) = [f for f in check_stream(loaded.documents).findings if f.rule == "DRA007"]
    assert "MPS" in mps.message and mps.path.endswith("/sharing/strategy") and mps.line == 28
    loaded = load_paths([str(CORPUS / "legacy-device-plugin" / "gpu-pod.yaml")])
    (legacy,) = check_stream(loaded.documents).findings
    assert legacy.rule == "DRA001" and "nvidia.com/gpu" in legacy.message


#: Findings whose severity or number changed on the corpus, by file: (rule, severity, how many).
CHANGED = {
    "dra-example-driver/basic-resourceclaim-opaque-config.yaml": ("DRA007", "medium", 1),
    "nvidia-dra-driver/gpu-mps.yaml": ("DRA007", "medium", 1),
    "nvidia-dra-driver/gpu-simple-mig-ts.yaml": ("DRA007", "medium", 1),
    "nvidia-dra-driver/gpu-test-mps.yaml": ("DRA007", "medium", 1),
    "nvidia-dra-driver/gpu-test5.yaml": ("DRA007", "medium", 2),
    "nvidia-dra-driver/gpu-test6.yaml": ("DRA007", "medium", 1),
    "nvidia-dra-driver/gpu-timeslicing.yaml": ("DRA007", "medium", 1),
    # Two PodGroups' claims and the two Deployments' template claims they share.
    "dra-example-driver/podgroup-resourceclaimtemplate.yaml": ("DRA005", "high", 4),
    "nvidia-dra-driver/mig-1g-12gb.yaml": ("DRA013", "high", 1),
}


@pytest.mark.parametrize("name", sorted(CHANGED))
def test_changed_findings_have_the_severity_and_number_the_table_says(name: str) -> None:
    rule, severity, count = CHANGED[name]
    loaded = load_paths([str(CORPUS / name)])
    found = [finding for finding in check_stream(loaded.documents).findings if finding.rule == rule]
    assert [finding.severity.label for finding in found] == [severity] * count
