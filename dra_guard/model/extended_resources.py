"""Every place an object asks for a resource by name (`nvidia.com/gpu: 1`).

* Kubernetes' own kinds, exactly where the API server reads them: the containers and the
  pod-level `resources` of every pod spec, and a LimitRange's `default`,
  `defaultRequest`, `max`, `min` and `maxLimitRequestRatio` (for type Container the API
  server defaults `default` from `max` and `defaultRequest` from `min`, kubernetes
  `pkg/apis/core/v1/defaults.go` `SetDefaults_LimitRangeItem`, so those inject too; for
  the other types they only cap, like a ResourceQuota, which asks for nothing).
* Any other kind: every ResourceRequirements-shaped mapping (a `limits` or `requests`
  mapping, with nothing beside them but `claims`) at any depth, whatever its key
  (`resources`, TrainJob's `resourcesPerNode`, ...), so a CRD cannot hide a request behind a
  path we do not know.  A `limits` or `requests` mapping beside other fields may be a cap
  rather than a request: its names are `Asked` with `uncertain` saying so, and the cap
  kinds we know (`CAP_FIELDS`: Karpenter's NodePool limits, KAI Scheduler's Queue
  resources) are not read at all.
* Operators' GPU fields that become container limits (`OPERATOR_GPU_FIELDS`: a
  SparkApplication's `driver.gpu` / `executor.gpu`, a VLLMRuntime's `resources.gpu`, a
  Dynamo component's `resources.limits.gpu` and `custom` names), and operators' resource
  profiles (`operator_profiles`: a KubeAI Model's `resourceProfile`), whose limits the
  operator writes into the pod: a profile of the operator's chart asks for what its limits
  name; a `cpu...` profile, or a multiple of zero, asks for nothing; any other profile is
  `Unverifiable` (what it holds is cluster configuration); and operators' preset models
  (`operator_presets`: a KAITO Workspace's `inference.preset`), which the operator runs
  with device-plugin GPUs no field names.
* KubeVirt: the device-plugin names VMs pass through, `gpus[].deviceName` and
  `hostDevices[].deviceName`.
* A quantity of zero, or null (which Go decodes as a zero Quantity), asks for nothing: the
  scheduler's fit check skips a zero request (kubernetes `pkg/scheduler/framework/plugins/
  noderesources/fit.go`, "Skip in case request quantity is zero") and so does the kubelet's
  device manager (`pkg/kubelet/cm/devicemanager/manager.go` `devicesToAllocate`, "needed ==
  0"); `nvidia.com/gpu: 0` in a LimitRange's `max` is how a namespace forbids GPUs.  A JSON
  6902 `remove` or `test` writes nothing either.
* Argo Workflows: `podSpecPatch` strings and resource templates' `manifest` strings, read
  as YAML after the `{{...}}` placeholders are filled in, as Argo fills them in; text that
  cannot be read, resource names that hold placeholders, and placeholders that make up a
  whole value where the text filled in could add fields, are `Unverifiable`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from dra_guard.contract.findings import json_pointer
from dra_guard.model.embedded import PLACEHOLDER_WORD, Unreadable, fill_placeholders, is_filled, read_embedded
from dra_guard.model.kustomize import PatchFiles, is_kustomization, patches
from dra_guard.model.manifest import Path, get_path, items, mapping, text
from dra_guard.model.operator_presets import named_presets
from dra_guard.model.operator_profiles import ProfileNamed, named_profiles
from dra_guard.model.pod_templates import ARGO_GROUP, BUILTIN_GROUPS, PodSpecView, api_group

REQUIREMENT_SECTIONS = ("limits", "requests")
#: LimitRange fields that add their quantities to containers (for type Container).
LIMIT_RANGE_DEFAULTS = ("default", "defaultRequest")
LIMIT_RANGE_BOUNDS = ("max", "min", "maxLimitRequestRatio")
KUBEVIRT_DEVICE_LISTS = ("gpus", "hostDevices")
#: Argo string fields that hold YAML: a pod spec patch, a Kubernetes object.
ARGO_POD_SPEC_PATCH = "podSpecPatch"
ARGO_MANIFEST = "manifest"
#: The keys a ResourceRequirements has (k8s.io/api core/v1 types.go).
REQUIREMENTS_KEYS = frozenset({"limits", "requests", "claims"})
#: A resource.Quantity that is zero, however written (`0`, `0.0`, `+0`, `0Gi`, `0m`, `0e3`);
#: the API server stores each of them as "0".
ZERO_QUANTITY = re.compile(r"[+-]?(?:0+(?:\.0*)?|\.0+)(?:[KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?")


def asks_nothing(quantity: object) -> bool:
    """Whether a resource list's value asks for none of its resource: zero, or null (Go's
    Quantity decodes null as zero). Anything else, a value the API server would refuse
    included, counts as asking."""
    if quantity is None:
        return True
    if isinstance(quantity, str):
        return ZERO_QUANTITY.fullmatch(quantity.strip()) is not None
    if isinstance(quantity, (int, float)) and not isinstance(quantity, bool):
        return quantity == 0
    return False


#: Fields where a whole-value Argo placeholder can only be text: names, images, quantities,
#: arguments, environment values, and anything in metadata (labels, annotations).
_SCALAR_FIELDS = frozenset(
    {"name", "generateName", "namespace", "image", "value", "serviceAccountName", "schedulerName", "args", "command"}
)

#: (API group, kind) -> the fields that cap what may be provisioned or used and request
#: nothing, with where that is said.  Not read at all.  (ResourceQuota's `hard` and Kueue's
#: ClusterQueue `nominalQuota` have no `limits`/`requests` mapping, so are not read anyway.)
CAP_FIELDS: Mapping[tuple[str, str], tuple[tuple[tuple[str, ...], str], ...]] = MappingProxyType(
    {
        # kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go @ 22664681: "Limits define a set of
        # bounds for provisioning capacity".
        ("karpenter.sh", "NodePool"): ((("spec", "limits"), "Karpenter's provisioning bounds"),),
        # kubernetes-sigs/karpenter pkg/apis/v1/nodeclaim.go: NodeClaimSpec.Resources "models the
        # resource requirements for the NodeClaim to launch" (the node's size, no pod's request).
        ("karpenter.sh", "NodeClaim"): ((("spec", "resources"), "the capacity of the node Karpenter launches"),),
        # NVIDIA/KAI-Scheduler pkg/apis/scheduling/v2/queue_types.go @ 72de64fc: quota, limit
        # and over-quota weight per resource.
        ("scheduling.run.ai", "Queue"): ((("spec", "resources"), "KAI Scheduler's queue quota"),),
    }
)


class OperatorGpuField(NamedTuple):
    """A CRD mapping whose `name_key` names a resource and whose `quantity_key` gives how
    many, which an operator writes into a pod's container limits."""

    path: tuple[str, ...]
    #: What the operator does with it, as messages say it.
    becomes: str
    name_key: str = "name"
    quantity_key: str = "quantity"
    #: The name the operator uses where `name_key` is not set, if it has one.
    default_name: str | None = None
    #: Set where every key of the mapping at `path` is a resource name (Dynamo's `custom`).
    names_are_keys: bool = False
    #: Where the operator writes it: "limits" (and requests, where they are not set) or "requests".
    section: str = "limits"


_SPARK_FIELDS = {
    ("sparkoperator.k8s.io", kind): tuple(
        OperatorGpuField((*prefix, role, "gpu"), f"the Spark operator writes it into the {pods}' limits")
        for role, pods in (("driver", "driver pod"), ("executor", "executor pods"))
    )
    for kind, prefix in (("SparkApplication", ("spec",)), ("ScheduledSparkApplication", ("spec", "template")))
}
_VLLM_RUNTIME_FIELDS = tuple(
    OperatorGpuField(
        path,
        f"the vLLM production-stack operator writes it into the {container} container's requests and limits",
        name_key="gpuType",
        quantity_key="gpu",
        default_name="nvidia.com/gpu",
    )
    for path, container in (
        (("spec", "deploymentConfig", "resources"), "vLLM"),
        (("spec", "deploymentConfig", "sidecarConfig", "resources"), "sidecar"),
    )
)


def _dynamo_fields(resources: tuple[str, ...]) -> tuple[OperatorGpuField, ...]:
    becomes = "the Dynamo operator writes it into the component's container"
    return (
        OperatorGpuField(
            (*resources, "limits"),
            f"{becomes} limits",
            name_key="gpuType",
            quantity_key="gpu",
            default_name="nvidia.com/gpu",
        ),
        *(
            OperatorGpuField(
                (*resources, section, "custom"), f"{becomes} {section}", names_are_keys=True, section=section
            )
            for section in REQUIREMENT_SECTIONS
        ),
        # The component's `device.resources`, beside `resources`: "how to ask the operator for
        # HAMi-sliced GPUs through the new `device` field" (examples/backends/vllm/deploy/
        # disagg_hami.yaml @ b5fa9e64), a mapping of resource names to quantities.
        OperatorGpuField((*resources[:-1], "device", "resources"), f"{becomes} resources", names_are_keys=True),
    )


#: (API group, kind) -> GPU fields that become container limits:
#:
#: * kubeflow/spark-operator internal/webhook/sparkpod_defaulter.go @ 38082f33 (`addGPU`):
#:   `gpu.name` is the resource name, `gpu.quantity` its limit, in the driver's or every
#:   executor's container.
#: * vllm-project/production-stack operator/internal/controller/vllmruntime_controller.go
#:   @ a6c01db0: where `resources.gpu` is set, `resources.gpuType` (by default
#:   `nvidia.com/gpu`) gets that quantity in the vLLM container's requests and limits, and
#:   the same for the sidecar's (which gets 0 of it otherwise: not a request).
#: * ai-dynamo/dynamo deploy/cloud/operator/internal/controller_common/resource.go @ 0284ad86
#:   (`GetResourcesConfig`): a component's `resources.limits.gpu` becomes a limit of
#:   `limits.gpuType` (by default `nvidia.com/gpu`), and every name of `limits.custom` and
#:   `requests.custom` a limit or request (`requests.gpu` is not used). In a
#:   DynamoGraphDeployment each of `spec.services` is a component (`*` is any key); its
#:   `device.resources` names are asked for too.
OPERATOR_GPU_FIELDS: Mapping[tuple[str, str], tuple[OperatorGpuField, ...]] = MappingProxyType(
    {
        **_SPARK_FIELDS,
        ("production-stack.vllm.ai", "VLLMRuntime"): _VLLM_RUNTIME_FIELDS,
        ("nvidia.com", "DynamoGraphDeployment"): _dynamo_fields(("spec", "services", "*", "resources")),
        ("nvidia.com", "DynamoComponentDeployment"): _dynamo_fields(("spec", "resources")),
    }
)


class Asked(NamedTuple):
    """A resource name an object asks for.

    A named tuple, not a frozen dataclass: one is made for every name of every container
    (cpu and memory mostly), and a frozen dataclass costs several times as much to make.
    """

    #: The key naming the resource (or KubeVirt's `deviceName`, or the string holding it).
    path: Path
    name: str
    #: "limits" / "requests", a LimitRange field, or a KubeVirt device list.
    section: str
    #: For a name inside a string or a file: the JSON pointer to it inside what was read,
    #: and what holds it ("podSpecPatch", "the patch file kustomize/gpu.yaml").
    inner: str = ""
    holder: str = ""
    #: For an operator's field: what the operator does with it.
    via: str = ""
    #: Set when the mapping may cap rather than request: why.
    uncertain: str = ""


class Unverifiable(NamedTuple):
    """Something that may ask for resources, but what cannot be known from the manifest."""

    path: Path
    why: str


def asked_resources(
    obj: Mapping[str, Any], pods: tuple[PodSpecView, ...], patch_files: PatchFiles | None = None
) -> Iterator[Asked | Unverifiable]:
    """What the object asks for; `patch_files` are a kustomization's patch files, read with it
    (None: it has no folder, as on stdin)."""
    group = api_group(obj)
    if is_kustomization(obj):
        yield from _kustomization(obj, patch_files)
        return
    if group in BUILTIN_GROUPS:
        if obj.get("kind") == "LimitRange":
            yield from _limit_range(obj)
        for pod in pods:
            yield from _requirements(pod.path, pod.spec)
            for container in pod.containers:
                yield from _requirements(container.path, container.container)
        return
    kubevirt = group is not None and (group == "kubevirt.io" or group.endswith(".kubevirt.io"))
    kind = text(obj.get("kind"))
    yield from operator_requests(obj)
    caps = frozenset(path for path, _ in CAP_FIELDS.get((group or "", kind), ()))
    yield from _anywhere(obj, (), argo=group == ARGO_GROUP, kubevirt=kubevirt, skip=caps)


def operator_requests(obj: Mapping[str, Any]) -> Iterator[Asked | Unverifiable]:
    """What an operator's own fields ask for (`OPERATOR_GPU_FIELDS`, resource profiles, preset
    models): no ResourceRequirements holds these names, the operator writes them into its
    pods' limits."""
    group, kind = api_group(obj) or "", text(obj.get("kind"))
    if group in BUILTIN_GROUPS:
        return
    for field in OPERATOR_GPU_FIELDS.get((group, kind), ()):
        yield from _operator_gpu(obj, field)
    for profile in named_profiles(obj, group, kind):
        yield from _profile(profile)
    for preset in named_presets(obj, group, kind):
        via = f"{'.'.join(preset.path)}: {preset.field.becomes}"
        yield Asked(preset.path, preset.resource, "limits", via=via)


def _operator_gpu(obj: Mapping[str, Any], field: OperatorGpuField) -> Iterator[Asked]:
    for path in _expand(obj, field.path):
        gpu = mapping(get_path(obj, path))
        via = f"{'.'.join(map(str, path))}: {field.becomes}"
        if field.names_are_keys:
            for name in gpu:
                if isinstance(name, str):
                    yield Asked((*path, name), name, field.section, via=via)
            continue
        named = gpu.get(field.name_key)
        if isinstance(named, str) and named:
            yield Asked((*path, field.name_key), named, field.section, via=via)
        elif field.default_name is not None and gpu.get(field.quantity_key) not in (None, ""):
            # The operator's default name; the quantity's field is what asks for it.
            yield Asked((*path, field.quantity_key), field.default_name, field.section, via=via)


def _profile(named: ProfileNamed) -> Iterator[Asked | Unverifiable]:
    field, where = named.field, ".".join(named.path)
    if named.chart is None:
        why = (
            f"{where} names {field.operator} resource profile {named.name!r}, which is not one of the profiles "
            f"of {field.operator}'s chart: what it holds is set in {field.configured_in}, which no manifest shows"
        )
        yield Unverifiable(named.path, why)
        return
    via = (
        f"{where}: the limits of {field.operator}'s chart profile {named.name!r}, which {field.becomes}; "
        f"{named.chart.source}"
    )
    for name in named.chart.limits:
        yield Asked(named.path, name, "limits", via=via)


def _expand(obj: Mapping[str, Any], pattern: tuple[str, ...]) -> Iterator[Path]:
    """The paths in `obj` that `pattern` names, `*` standing for every key of a mapping."""
    if "*" not in pattern:
        yield pattern
        return
    star = pattern.index("*")
    for key in mapping(get_path(obj, pattern[:star])):
        if isinstance(key, str):
            yield from _expand(obj, (*pattern[:star], key, *pattern[star + 1 :]))


def _requirements(path: Path, owner: Mapping[str, Any]) -> Iterator[Asked | Unverifiable]:
    """The names in `owner["resources"]` (a container's or a pod's)."""
    resources = mapping(owner.get("resources"))
    for section in REQUIREMENT_SECTIONS:
        for name, quantity in mapping(resources.get(section)).items():
            if isinstance(name, str) and not asks_nothing(quantity):
                yield _asked_by_name((*path, "resources", section, name), name, section)


def _asked_by_name(path: Path, name: str, section: str, uncertain: str = "") -> Asked | Unverifiable:
    """A name asked for, or, where a template's `{{ ... }}` placeholder stands for it (a Helm
    template read unrendered), what cannot be known until it is rendered."""
    if "{{" in name:
        why = f"the resource name {name!r} is a template placeholder, decided when the template is rendered"
        return Unverifiable(path, why)
    return Asked(path, name, section, uncertain=uncertain)


def _limit_range(obj: Mapping[str, Any]) -> Iterator[Asked | Unverifiable]:
    for index, item in enumerate(items(mapping(obj.get("spec")).get("limits"))):
        limit = mapping(item)
        # Only type Container turns bounds into defaults; an unknown type is read that way.
        injects = text(limit.get("type")) not in ("Pod", "PersistentVolumeClaim")
        fields = (*LIMIT_RANGE_DEFAULTS, *LIMIT_RANGE_BOUNDS) if injects else LIMIT_RANGE_DEFAULTS
        for field in fields:
            for name, quantity in mapping(limit.get(field)).items():
                if isinstance(name, str) and not asks_nothing(quantity):
                    yield _asked_by_name(("spec", "limits", index, field, name), name, field)


def _anywhere(
    value: object, base: Path, *, argo: bool, kubevirt: bool, skip: frozenset[tuple[str, ...]] = frozenset()
) -> Iterator[Asked | Unverifiable]:
    """Every ResourceRequirements-shaped mapping below `value` (and, for Argo and KubeVirt,
    their own ways to ask), in document order.

    Iterative, so a deeply nested document cannot exhaust the stack.  It visits every
    node of the object: a node's path is a (parent link, key) pair, made into a tuple
    only for a mapping that can ask for something, and only scalars' containers are
    pushed, so the walk allocates little (what it leaves behind fragments the heap).
    """
    stack: list[tuple[Any, Any]] = [(value, None)]
    while stack:
        current, link = stack.pop()
        if type(current) is dict or isinstance(current, Mapping):
            if argo or kubevirt or "limits" in current or "requests" in current:
                path = (*base, *_unlink(link))
                # Beside other fields, limits may be a cap (a pool's, a queue's), not a request.
                others = sorted(str(key) for key in current if key not in REQUIREMENTS_KEYS)
                uncertain = f"beside {', '.join(others[:3])}{', ...' if len(others) > 3 else ''}" if others else ""
                for section in REQUIREMENT_SECTIONS:
                    quantities = current.get(section)
                    if isinstance(quantities, Mapping) and not (skip and (*path, section) in skip):
                        for name, quantity in quantities.items():
                            if not isinstance(name, str) or asks_nothing(quantity):
                                continue
                            if argo and ("{{" in name or is_filled(name)):
                                why = f"the resource name {name!r} is a placeholder"
                                yield Unverifiable((*path, section, name), why)
                            else:
                                yield _asked_by_name((*path, section, name), name, section, uncertain)
                if kubevirt:
                    yield from _kubevirt_devices(current, path)
                if argo:
                    yield from _argo_strings(current, path)
            for key, item in reversed(list(current.items())):
                if type(item) in (dict, list) or isinstance(item, (Mapping, list, tuple)):
                    if skip and (*base, *_unlink(link), str(key)) in skip:
                        continue  # a cap: nothing in it is a request
                    stack.append((item, (link, str(key))))
        elif isinstance(current, (list, tuple)):
            for index in range(len(current) - 1, -1, -1):
                item = current[index]
                if type(item) in (dict, list) or isinstance(item, (Mapping, list, tuple)):
                    stack.append((item, (link, index)))


def _unlink(link: Any) -> Path:
    parts: list[str | int] = []
    while link is not None:
        link, part = link
        parts.append(part)
    return tuple(reversed(parts))


def _kubevirt_devices(current: Mapping[str, Any], path: Path) -> Iterator[Asked]:
    for section in KUBEVIRT_DEVICE_LISTS:
        for index, device in enumerate(items(current.get(section))):
            name = mapping(device).get("deviceName")
            if isinstance(name, str):
                yield Asked((*path, section, index, "deviceName"), name, section)


def _argo_strings(current: Mapping[str, Any], path: Path) -> Iterator[Asked | Unverifiable]:
    patch = current.get(ARGO_POD_SPEC_PATCH)
    if isinstance(patch, str):
        yield from _embedded((*path, ARGO_POD_SPEC_PATCH), patch)
    resource_template = current.get("resource")
    if isinstance(resource_template, Mapping) and isinstance(resource_template.get(ARGO_MANIFEST), str):
        yield from _embedded((*path, "resource", ARGO_MANIFEST), resource_template[ARGO_MANIFEST])


def _embedded(path: Path, source: str) -> Iterator[Asked | Unverifiable]:
    placeholders = "{{" in source
    try:
        value = read_embedded(fill_placeholders(source) if placeholders else source)
    except Unreadable as unreadable:
        yield Unverifiable(path, f"{path[-1]} cannot be read: {unreadable}")
        return
    if not isinstance(value, (Mapping, list)):
        if placeholders:
            yield Unverifiable(path, f"{path[-1]} is a placeholder filled in at run time")
        return
    if placeholders:
        for hole in _structural_placeholders(value):
            why = "a {{...}} placeholder is the whole value, and the text Argo fills in could add fields (resources)"
            yield Unverifiable(path, f"{path[-1]}, at {json_pointer(hole)}: {why}")
    for found in _anywhere(value, (), argo=True, kubevirt=False):
        if isinstance(found, Asked):
            inner = json_pointer(found.path)
            yield Asked(path, found.name, found.section, inner, str(path[-1]), uncertain=found.uncertain)
        else:
            yield Unverifiable(path, f"{path[-1]}, at {json_pointer(found.path)}: {found.why}")


def _structural_placeholders(value: Any) -> Iterator[Path]:
    """Where a filled-in placeholder is a whole value (or key) that is not plainly text: a
    name, an image, a quantity, an argument, anything in metadata (`_SCALAR_FIELDS`)."""
    stack: list[tuple[Path, Any, bool]] = [((), value, False)]
    while stack:
        path, current, textual = stack.pop()
        if isinstance(current, Mapping):
            quantities = bool(path) and path[-1] in REQUIREMENT_SECTIONS
            for key, item in reversed(list(current.items())):
                inside = textual or quantities or key in _SCALAR_FIELDS or key == "metadata"
                if is_filled(key) and not (textual or quantities):
                    yield (*path, str(key))
                stack.append(((*path, str(key)), item, inside))
        elif isinstance(current, list):
            stack.extend(((*path, index), item, textual) for index, item in reversed(list(enumerate(current))))
        elif not textual and current == PLACEHOLDER_WORD:
            yield path


# --- kustomizations -----------------------------------------------------------------


def _kustomization(obj: Mapping[str, Any], patch_files: PatchFiles | None) -> Iterator[Asked | Unverifiable]:
    for patch in patches(obj, patch_files):
        holder = f"the patch file {patch.file}" if patch.file else "the inline patch"
        if isinstance(patch.documents, Unreadable):
            yield Unverifiable(patch.path, f"{holder} cannot be read ({patch.documents})")
            continue
        several = len(patch.documents) > 1
        for number, document in enumerate(patch.documents, 1):
            for path, name, section in _in_patch(document):
                inner = json_pointer(path) + (f" of document {number}" if several else "")
                yield Asked(patch.path, name, section, inner, holder)


def _in_patch(document: Any) -> Iterator[tuple[Path, str, str]]:
    """(path in the patch, name, section) for each resource name a patch writes."""
    if isinstance(document, list):  # JSON 6902 operations
        for index, operation in enumerate(document):
            yield from _in_operation(index, mapping(operation))
        return
    for found in _anywhere(document, (), argo=False, kubevirt=False):
        if isinstance(found, Asked):
            yield found.path, found.name, found.section


def _in_operation(index: int, operation: Mapping[str, Any]) -> Iterator[tuple[Path, str, str]]:
    """A JSON 6902 operation names a resource in its `path` (…/limits/nvidia.com~1gpu), in
    the keys of its `value` when the path ends at limits or requests, or anywhere in a
    `value` that holds ResourceRequirements.  `remove` and `test` write nothing; `copy` and
    `move` write a value from elsewhere, which counts as asking."""
    op = operation.get("op")
    if op in ("remove", "test"):
        return
    target = operation.get("path")
    tokens = (
        [token.replace("~1", "/").replace("~0", "~") for token in target.split("/")[1:]]
        if isinstance(target, str)
        else []
    )
    value = operation.get("value")
    writes_nothing = op in ("add", "replace") and "value" in operation and asks_nothing(value)
    for position, token in enumerate(tokens[:-1]):
        if token in REQUIREMENT_SECTIONS:
            if position + 2 == len(tokens) and writes_nothing:
                continue  # the quantity written is zero
            yield (index, "path"), tokens[position + 1], token
    if tokens and tokens[-1] in REQUIREMENT_SECTIONS and isinstance(value, Mapping):
        for name, quantity in value.items():
            if isinstance(name, str) and not asks_nothing(quantity):
                yield (index, "value", name), name, tokens[-1]
    for found in _anywhere(value, (index, "value"), argo=False, kubevirt=False):
        if isinstance(found, Asked):
            yield found.path, found.name, found.section
