"""Hypothesis strategies for the admission parity test: objects the API server accepts.

Claims and templates (every request shape, All mode, several devices with and without
constraints, adminAccess, opaque configs that share or decode badly), DeviceClasses with
configs, every built-in kind with pods (legacy names in every container list and in the
pod-level resources, pod claims by name and by template, claims no container uses), and
LimitRanges; with waivers, readable or not, on objects and pod templates.  Everything drawn
is what the API server lets through to admission: valid for the strict schema of the target
release (the test asserts it) and for its validation (request references exist, no count
with All, parameters are objects), since anything else never reaches a policy.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

CLAIM_VERSIONS = ("resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1")
#: `rdma` is a NIC class the catalog knows by name, which a DeviceClass may show to be GPUs.
CLASSES = ("mig.nvidia.com", "gpu.nvidia.com", "nic.example.com", "tpu.google.com", "fpga.example.org", "rdma")
NAMESPACES = ("team-a", "gpu-ops")
#: Waiver reasons: readable, empty, blank, and invisible (a zero-width space).
REASONS = ("reviewed by ops", "", " ", "\u200b")

SELECTORS = (
    "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'",
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].profile == '1g.10gb' "
    "&& device.allowMultipleAllocations == false",
    "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100-SXM4-40GB'",
    "device.attributes['tpu.google.com'].tpuGen == 'v6e' && device.allowMultipleAllocations == false",
    "device.attributes['gpu.nvidia.com'].profile == '1g.10gb' || true",
    "device.allowMultipleAllocations == false",
    "(device.attributes['nic.example.com'].model == 'x' && device.allowMultipleAllocations == false)",
    "device.attributes['gpu.nvidia.com'].profile.startsWith('1g')",
    "!(device.allowMultipleAllocations == false)",
    "device.attributes['fpga.example.org'].bitstream == 'b1'",
    # DRA017: a whole TPU host of 1, 2 or 4 chips (counts are drawn from 1 to 4), either side.
    "device.attributes['tpu.google.com'].tpuGen == 'v6e' && device.attributes['tpu.google.com'].chipCount == 2",
    "4 == device.attributes['tpu.google.com'].chipCount && device.allowMultipleAllocations == false",
    "device.attributes['tpu.google.com'].chipCount == 1 || true",
)
#: DeviceClass names: unknown ones (decided by their own selector), one the configurations
#: call a NIC, one the catalog knows (never decided by the selector), and a NIC class the
#: catalog knows by name (an accelerator when its selector fixes a GPU driver).
DEVICE_CLASS_NAMES = ("shared-gpu", "efa-nics", "nic.example.com", "gpu.nvidia.com", "rdma")
#: DeviceClass selectors: a GPU driver, NIC and CPU drivers in a top-level conjunct (either
#: side, either quote, in parentheses), and NIC drivers that prove nothing (`||`, `!=`).
CLASS_SELECTORS = (
    "device.driver == 'gpu.nvidia.com'",
    'device.driver == "dra.net" && device.attributes["dra.net"].pciDevice == "Elastic Fabric Adapter (EFA)"',
    "'dra.cpu' == device.driver",
    "(device.attributes['dra.net'].rdma && device.driver == 'dra.net')",
    "device.driver == 'dra.net' || device.driver == 'gpu.nvidia.com'",
    "device.driver != 'dra.net'",
)
#: The scrubber as the builders write it, and what a tenant may change of it (DRA016).
SCRUBBER = {"name": "dra-guard-scrub", "image": "ghcr.io/dra-guard/scrub:0.1.0", "command": ["dra-guard", "scrub"]}
SCRUBBER_CHANGES = (
    {},
    {},
    {"command": ["true"]},
    {"image": "busybox:1.36"},
    {"args": ["--help"]},
    {"env": [{"name": "X", "value": "1"}]},
    {"restartPolicy": "Always"},
    {"volumeMounts": [{"name": "v", "mountPath": "/usr"}]},
    {"securityContext": {"privileged": True}},
    {"securityContext": {"privileged": False, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True}},
)
#: Blanket (no key, operator Exists) and targeted device tolerations.
TOLERATIONS = (
    {"operator": "Exists"},
    {"operator": "Exists", "effect": "NoSchedule"},
    {"operator": "Exists", "key": "example.com/maintenance"},
    {"operator": "Equal", "key": "example.com/maintenance", "value": "planned"},
)
ANNOTATION_VALUES = (
    "WipeOnDeallocate",
    "ZeroFillMemoryOnRelease",
    "ScrubBeforeUse",
    "Wipe",
    "",
    " ",
    "\u200b",
    "false",
    "true",
)
TAGS = ("sha256:" + "a" * 64, "hmac-sha256:" + "0" * 64, "sha256:" + "A" * 64, "md5:abc", "")
#: Strategies as written: the engine compares them case-insensitively, the policy with RE2's (?i).
STRATEGIES = ("TimeSlicing", "MPS", "mps", "time\u017flicing", "TIMESLICING ", "Exclusive", 5, None, ["MPS"])
#: Resource names: legacy, mapped, implicit (for an accelerator class and for a NIC), ordinary.
RESOURCE_NAMES = (
    "cpu",
    "memory",
    "nvidia.com/gpu",
    "nvidia.com/mig-1g.10gb",
    "google.com/tpu",
    "aws.amazon.com/neuroncore",
    "example.com/gpu",
    "example.com/accel",
    "example.com/nic",
    "deviceclass.resource.kubernetes.io/gpu.nvidia.com",
    "deviceclass.resource.kubernetes.io/nic.example.com",
    "deviceclass.resource.kubernetes.io/efa-nics",
    "deviceclass.resource.kubernetes.io/rdma",
)
#: Quantities: a zero asks for nothing, however written (the API server stores each as "0").
QUANTITIES = ("1", "1", 2, "0", 0, "0.0", "0Gi")
POD_KINDS = {
    "Pod": "v1",
    "PodTemplate": "v1",
    "ReplicationController": "v1",
    "Deployment": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "ReplicaSet": "apps/v1",
    "Job": "batch/v1",
    "CronJob": "batch/v1",
}


def _waivers(draw: st.DrawFn, rules: tuple[str, ...]) -> dict[str, str]:
    return {
        f"dra-guard.io/ignore-{rule}": draw(st.sampled_from(REASONS)) for rule in rules if draw(st.integers(0, 3)) == 0
    }


# --- claims and device classes --------------------------------------------------------------


def _opaque(draw: st.DrawFn) -> dict[str, Any]:
    driver = draw(st.sampled_from(["gpu.nvidia.com", "gpu.nvidia.com", "gpu.example.com"]))
    kind = draw(st.sampled_from(["GpuConfig", "MigDeviceConfig", "VfioDeviceConfig", "ComputeDomainDaemonConfig"]))
    parameters: dict[str, Any] = {
        "apiVersion": draw(st.sampled_from(["resource.nvidia.com/v1beta1", "resource.nvidia.com/v1beta1", "v1"])),
        "kind": kind,
    }
    if kind == "ComputeDomainDaemonConfig":
        parameters["domainID"] = draw(st.sampled_from(["d1", "", 3]))
    elif kind == "VfioDeviceConfig":
        if draw(st.booleans()):
            parameters["iommu"] = {"backendPolicy": draw(st.sampled_from(["LegacyOnly", "Other"]))}
    elif draw(st.integers(0, 4)) > 0:
        sharing: dict[str, Any] = {}
        if draw(st.integers(0, 5)) > 0:
            sharing["strategy"] = draw(st.sampled_from(STRATEGIES))
        if draw(st.booleans()):
            sharing["timeSlicingConfig"] = draw(st.sampled_from([{"interval": "Long"}, {}, {"interval": "long"}]))
        if draw(st.booleans()):
            sharing["mpsConfig"] = draw(
                st.sampled_from(
                    [
                        {"defaultActiveThreadPercentage": 50},
                        {"defaultActiveThreadPercentage": 150},
                        {"defaultActiveThreadPercentage": True},
                        {"defaultPerDevicePinnedMemoryLimit": {"0": "1Gi", "1": False}},
                        {"defaultPinnedDeviceMemoryLimit": "10Gi"},
                        {"unknown": 1},
                    ]
                )
            )
        parameters["sharing"] = draw(st.sampled_from([sharing, sharing, sharing, "MPS", None]))
    if draw(st.integers(0, 6)) == 0:
        parameters["Sharing"] = {}  # the strict decoder refuses a field spelt in another case
    return {"driver": driver, "parameters": parameters}


def _body(draw: st.DrawFn, *, sub_request: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": draw(st.sampled_from(CLASSES))}
    selectors = draw(st.lists(st.sampled_from(SELECTORS), max_size=2))
    if selectors:
        body["selectors"] = [{"cel": {"expression": expression}} for expression in selectors]
    if draw(st.integers(0, 3)) == 0:
        body["capacity"] = {"requests": draw(st.sampled_from([{}, {"memory": "10Gi"}]))}
    if draw(st.integers(0, 3)) == 0:
        body["tolerations"] = [draw(st.sampled_from(TOLERATIONS))]
    if draw(st.booleans()):
        body["allocationMode"] = draw(st.sampled_from(["ExactCount", "All"]))
    if body.get("allocationMode", "ExactCount") == "ExactCount" and draw(st.booleans()):
        body["count"] = draw(st.integers(1, 4))
    if not sub_request and draw(st.integers(0, 3)) == 0:
        body["adminAccess"] = draw(st.booleans())
    return body


@st.composite
def claims(draw: st.DrawFn) -> dict[str, Any]:
    """A ResourceClaim or ResourceClaimTemplate."""
    api_version = draw(st.sampled_from(CLAIM_VERSIONS))
    kind = draw(st.sampled_from(["ResourceClaim", "ResourceClaimTemplate"]))
    requests: list[dict[str, Any]] = []
    references: list[str] = []  # what constraints and configs may name
    for index in range(draw(st.integers(0, 3))):
        name = f"r{index}"
        references.append(name)
        if draw(st.integers(0, 2)) == 0:
            alternatives = [
                {"name": f"a{sub}", **_body(draw, sub_request=True)} for sub in range(draw(st.integers(1, 2)))
            ]
            references += [f"{name}/{alternative['name']}" for alternative in alternatives]
            requests.append({"name": name, "firstAvailable": alternatives})
        elif api_version == "resource.k8s.io/v1beta1":
            requests.append({"name": name, **_body(draw, sub_request=False)})
        else:
            requests.append({"name": name, "exactly": _body(draw, sub_request=False)})
    devices: dict[str, Any] = {"requests": requests}
    if references and draw(st.booleans()):
        attribute = st.sampled_from(
            ["gpu.nvidia.com/parentUUID", "resource.kubernetes.io/pcieRoot", "fpga.example.org/board", "x.io/y"]
        )
        devices["constraints"] = [
            {"matchAttribute": draw(attribute), **({"requests": names} if names else {})}
            for names in draw(st.lists(st.lists(st.sampled_from(references), unique=True), min_size=1, max_size=2))
        ]
    if draw(st.booleans()):
        devices["config"] = [
            {**({"requests": names} if names else {}), "opaque": _opaque(draw)}
            for names in draw(st.lists(st.lists(st.sampled_from(references or ["-"]), unique=True), max_size=2))
            if set(names) <= set(references)
        ]
    annotations: dict[str, str] = {}
    for key, values in (
        ("dra-guard.io/sanitization", ANNOTATION_VALUES),
        ("dra-guard.io/isolation-tag", TAGS),
        ("dra-guard.io/allow-multiple-allocations", ("false", "true")),
    ):
        if draw(st.booleans()):
            annotations[key] = draw(st.sampled_from(values))
    rules = ("DRA002", "DRA003", "DRA004", "DRA006", "DRA007", "DRA008", "DRA011", "DRA012", "DRA015")
    annotations.update(_waivers(draw, rules))
    metadata: dict[str, Any] = {"name": "c", "namespace": draw(st.sampled_from(NAMESPACES))}
    if annotations:
        metadata["annotations"] = annotations
    spec = {"spec": {"devices": devices}} if kind == "ResourceClaimTemplate" else {"devices": devices}
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": spec}


@st.composite
def device_classes(draw: st.DrawFn) -> dict[str, Any]:
    """A DeviceClass whose configs may share devices in time, and which may map an
    extended resource name (an accelerator class, or one a configuration says is a NIC)."""
    metadata: dict[str, Any] = {"name": draw(st.sampled_from(DEVICE_CLASS_NAMES))}
    waivers = _waivers(draw, ("DRA007", "DRA013"))
    if waivers:
        metadata["annotations"] = waivers
    configs = [{"opaque": _opaque(draw)} for _ in range(draw(st.integers(0, 3)))]
    selectors = draw(st.lists(st.sampled_from(CLASS_SELECTORS), min_size=1, max_size=2))
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": expression}} for expression in selectors]}
    if configs:
        spec["config"] = configs
    if draw(st.booleans()):
        spec["extendedResourceName"] = draw(st.sampled_from(["example.com/gpu", "nvidia.com/gpu"]))
    return {
        "apiVersion": draw(st.sampled_from(CLAIM_VERSIONS)),
        "kind": "DeviceClass",
        "metadata": metadata,
        "spec": spec,
    }


# --- pods, workloads and LimitRanges ---------------------------------------------------------


def _resources(draw: st.DrawFn) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    for section in ("limits", "requests"):
        names = draw(st.lists(st.sampled_from(RESOURCE_NAMES), unique=True, max_size=2))
        if names:
            resources[section] = {name: draw(st.sampled_from(QUANTITIES)) for name in names}
    return resources


def _pod_spec(draw: st.DrawFn) -> dict[str, Any]:
    pod_claims = []
    for index in range(draw(st.integers(0, 2))):
        source = draw(st.sampled_from(["resourceClaimTemplateName", "resourceClaimName"]))
        pod_claims.append({"name": f"claim{index}", source: f"slice{index}"})
    spec: dict[str, Any] = {}
    for list_name, most in (("initContainers", 1), ("containers", 2), ("ephemeralContainers", 1)):
        containers = []
        for index in range(draw(st.integers(1 if list_name == "containers" else 0, most))):
            container: dict[str, Any] = {"name": f"{list_name[:4].lower()}{index}", "image": "i"}
            resources = _resources(draw)
            used = draw(st.lists(st.sampled_from([claim["name"] for claim in pod_claims] or ["-"]), unique=True))
            used = [name for name in used if name != "-"]
            if used and list_name != "ephemeralContainers":
                resources["claims"] = [{"name": name} for name in used]
            if resources:
                container["resources"] = resources
            containers.append(container)
        if containers:
            spec[list_name] = containers
    if pod_claims:
        spec["resourceClaims"] = pod_claims
    if draw(st.integers(0, 3)) == 0:
        spec["resources"] = _resources(draw)
    if draw(st.booleans()):
        _add_scrubber(draw, spec, [claim["name"] for claim in pod_claims])
    return spec


def _add_scrubber(draw: st.DrawFn, spec: dict[str, Any], claim_names: list[str]) -> None:
    """The scrubber, as built or changed, first or elsewhere, holding some of the claims."""
    scrubber: dict[str, Any] = {**SCRUBBER, **draw(st.sampled_from(SCRUBBER_CHANGES))}
    held = draw(st.lists(st.sampled_from(claim_names), unique=True)) if claim_names else []
    if held:
        scrubber["resources"] = {"claims": [{"name": name} for name in held]}
    if scrubber.get("restartPolicy") == "Always" or draw(st.integers(0, 3)) != 0:
        spec["initContainers"] = [scrubber, *spec.get("initContainers", [])]
    elif draw(st.booleans()):
        spec["initContainers"] = [*spec.get("initContainers", []), scrubber]
    else:
        spec["containers"] = [*spec["containers"], scrubber]


WORKLOAD_RULES = ("DRA001", "DRA005", "DRA009")


@st.composite
def workloads(draw: st.DrawFn) -> dict[str, Any]:
    """A Pod, PodTemplate or built-in controller, with waivers on it and its pod template."""
    kind = draw(st.sampled_from(["Pod", "Pod", *sorted(POD_KINDS)]))
    metadata: dict[str, Any] = {"name": "w", "namespace": draw(st.sampled_from(NAMESPACES))}
    waivers = _waivers(draw, WORKLOAD_RULES)
    if waivers:
        metadata["annotations"] = waivers
    obj: dict[str, Any] = {"apiVersion": POD_KINDS[kind], "kind": kind, "metadata": metadata}
    pod = _pod_spec(draw)
    if kind == "Pod":
        obj["spec"] = pod
        return obj
    labels = {"app": "w"}
    template_metadata: dict[str, Any] = {"labels": labels}
    template_waivers = _waivers(draw, WORKLOAD_RULES)
    if template_waivers:
        template_metadata["annotations"] = template_waivers
    template = {"metadata": template_metadata, "spec": pod}
    if kind == "PodTemplate":
        obj["template"] = template
    elif kind == "CronJob":
        obj["spec"] = {"schedule": "@daily", "jobTemplate": {"spec": {"template": template}}}
    elif kind == "Job":
        obj["spec"] = {"template": template}
    elif kind == "ReplicationController":
        obj["spec"] = {"selector": labels, "template": template}
    else:
        obj["spec"] = {"selector": {"matchLabels": labels}, "template": template}
        if kind == "StatefulSet":
            obj["spec"]["serviceName"] = "w"
    return obj


@st.composite
def limit_ranges(draw: st.DrawFn) -> dict[str, Any]:
    limits = []
    for _ in range(draw(st.integers(1, 2))):
        item: dict[str, Any] = {"type": draw(st.sampled_from(["Container", "Pod", "PersistentVolumeClaim"]))}
        for field in draw(
            st.lists(
                st.sampled_from(["default", "defaultRequest", "max", "min", "maxLimitRequestRatio"]),
                unique=True,
                max_size=3,
            )
        ):
            item[field] = {draw(st.sampled_from(RESOURCE_NAMES)): draw(st.sampled_from(QUANTITIES))}
        limits.append(item)
    metadata: dict[str, Any] = {"name": "limits", "namespace": "team-a"}
    waivers = _waivers(draw, ("DRA001",))
    if waivers:
        metadata["annotations"] = waivers
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": metadata, "spec": {"limits": limits}}


def admitted_objects() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(claims(), claims(), workloads(), workloads(), limit_ranges(), device_classes())
