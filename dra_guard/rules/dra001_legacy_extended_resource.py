"""DRA001: accelerators requested as legacy extended resources."""

from __future__ import annotations

from collections.abc import Iterator

from dra_guard.catalog import LEGACY_RESOURCE_NAMES, LEGACY_RESOURCE_PREFIXES, is_legacy_resource
from dra_guard.context import Context, Resource, Violation
from dra_guard.findings import Severity
from dra_guard.manifest import resource_names, resource_quantities
from dra_guard.options import STRING_SET, Option
from dra_guard.rulekit import Example

ID = "DRA001"
NAME = "legacy-extended-resource"
SEVERITY = Severity.CRITICAL
SUMMARY = "Accelerators must be requested through DRA claims, not extended resources such as nvidia.com/gpu."
RATIONALE = (
    "Device-plugin extended resources (nvidia.com/gpu, nvidia.com/mig-*, google.com/tpu, ...) carry no "
    "profile pin, no exclusivity or sanitization contract and no isolation tag; nothing in the request says "
    "what the device's memory held before. The same holds for DRA's own extended-resource mapping "
    "(deviceclass.resource.kubernetes.io/<class>), which allocates through an implicit, unpinned claim. "
    "Every resources.limits/requests mapping is scanned at any depth, so CRDs (JobSet, RayCluster, "
    "PyTorchJob, LeaderWorkerSet) cannot hide a request."
)
REMEDIATION = (
    "Remove the extended resource and request the slice through a ResourceClaimTemplate: "
    "IsolatedAcceleratorWorkload in cdk8s or Pulumi builds both objects for you."
)
#: Every kind: a resources mapping can sit anywhere, in CRDs too.
KINDS = None
CROSS_OBJECT = False
WAIVABLE = True
EXTRA_LEGACY_RESOURCES = Option(
    key="extra-legacy-resources",
    type=STRING_SET,
    default=frozenset(),
    doc="More extended-resource names that request accelerators (a vendor's device plugin dra-guard does "
    "not know), reported like nvidia.com/gpu.",
)
OPTIONS = (EXTRA_LEGACY_RESOURCES,)
EXAMPLES = (
    Example(
        title="A pod asks for a whole GPU through the device plugin",
        manifests="""\
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: team-a}
spec:
  containers:
  - name: main
    image: pytorch
    resources:
      limits: {nvidia.com/gpu: 1}
""",
        findings=("Pod/trainer#/spec/containers/0/resources/limits/nvidia.com~1gpu",),
    ),
    Example(
        title="A MIG slice through the device plugin, hidden in a CRD's pod template",
        manifests="""\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: sweep, namespace: team-a}
spec:
  replicatedJobs:
  - name: workers
    template:
      spec:
        template:
          spec:
            containers:
            - name: main
              image: jax
              resources:
                requests: {nvidia.com/mig-1g.10gb: 1}
""",
        findings=(
            "JobSet/sweep#/spec/replicatedJobs/0/template/spec/template/spec/containers/0/resources/requests"
            "/nvidia.com~1mig-1g.10gb",
        ),
    ),
    Example(
        title="A resource name the configuration lists under extra-legacy-resources",
        manifests="""\
apiVersion: v1
kind: Pod
metadata: {name: inference, namespace: team-a}
spec:
  containers:
  - name: main
    image: server
    resources:
      limits: {example.com/gpu: 1}
""",
        findings=("Pod/inference#/spec/containers/0/resources/limits/example.com~1gpu",),
        config={"extra-legacy-resources": ["example.com/gpu"]},
    ),
    Example(
        title="CPU and memory only",
        manifests="""\
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: team-a}
spec:
  containers:
  - name: main
    image: nginx
    resources:
      limits: {cpu: "1", memory: 1Gi, example.com/gpu: 1}
""",
    ),
)
# KEP-5004: a DeviceClass is also requestable as this extended resource (implicit claim).
IMPLICIT_DRA_PREFIX = "deviceclass.resource.kubernetes.io/"


_MARKERS = (*LEGACY_RESOURCE_NAMES, *LEGACY_RESOURCE_PREFIXES, IMPLICIT_DRA_PREFIX)


def check(resource: Resource, context: Context) -> Iterator[Violation]:
    extra = context.config.get(EXTRA_LEGACY_RESOURCES)
    # Walking every node of every object is this rule's whole cost; skip objects whose
    # source text cannot spell a legacy name (see Resource.source_may_contain), then ask
    # the cheap question before building paths.
    if not resource.source_may_contain((*_MARKERS, *extra)):
        return
    if not any(
        is_legacy_resource(name, extra) or _implicit_claim(name, context) for name in resource_names(resource.obj)
    ):
        return
    # A finding rests on the resource name at its path alone (evidence=()).
    for path, name in resource_quantities(resource.obj):
        if is_legacy_resource(name, extra):
            yield Violation(path, f"requests legacy accelerator resource {name!r} in {path[-2]}", evidence=())
        elif _implicit_claim(name, context):
            yield Violation(
                path, f"requests {name!r}, DRA's implicit extended-resource claim, which pins no profile", evidence=()
            )


def _implicit_claim(name: str, context: Context) -> bool:
    """`deviceclass.resource.kubernetes.io/<class>` for an accelerator class (KEP-5004)."""
    return name.startswith(IMPLICIT_DRA_PREFIX) and context.config.is_accelerator(name[len(IMPLICIT_DRA_PREFIX) :])
