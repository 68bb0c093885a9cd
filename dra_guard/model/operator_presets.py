"""Operators that give their pods an accelerator because the object names a preset model.

KAITO (`kaito.sh`) runs its preset models on NVIDIA GPUs of the device plugin; no field of
the object names the resource or the count (kaito-project/kaito @ 056b8280):

* A Workspace's `inference.preset` becomes a StatefulSet whose container requests and limits
  `nvidia.com/gpu`, as many as the instance type's SKU (or the matching node's
  `nvidia.com/gpu.count` label) has; with `resource.partition` of mode `mig` and a
  `profile`, `nvidia.com/mig-<profile>` instead (`pkg/workspace/inference/
  preset_inferences.go` `GenerateInferencePodSpec`, `pkg/utils/mig/mig.go`
  `MIGResourceName`).  A configuration that yields no GPU makes no pod at all
  (`getGPUConfig` returns an error), so a preset always asks for one.
* A Workspace's `tuning.preset` becomes a Job with `nvidia.com/gpu` requests and limits
  (`pkg/workspace/tuning/preset_tuning.go` `GenerateBasicTuningPodSpec`).
* An InferenceSet makes Workspaces of its `spec.template` (`api/v1beta1/
  inferenceset_types.go` `InferenceSetTemplate`), and a MultiRoleInference makes
  InferenceSets whose preset is `spec.model.name` (`pkg/controllers/multiroleinference/
  controller.go` `reconcileInferenceSet`).

A Workspace's `inference.template` is a pod template the operator runs as written: the pod
template reading finds what it asks for, not this module.  A RAGEngine asks for GPUs only
where its `compute.instanceType` is a GPU SKU of KAITO's own tables, which this module does
not hold.  This module only says where the field is and what it asks for;
`extended_resources` makes it a request.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from dra_guard.model.manifest import get_path, mapping, text

KAITO_GROUP = "kaito.sh"
KAITO_GPU = "nvidia.com/gpu"
#: `MIGResourcePrefix` of kaito-project/kaito pkg/utils/mig/mig.go @ 056b8280.
KAITO_MIG_PREFIX = "nvidia.com/mig-"
#: `PartitionModeMIG` of kaito-project/kaito api/v1beta1/workspace_types.go @ 056b8280.
KAITO_PARTITION_MIG = "mig"


class PresetField(NamedTuple):
    """Where a CRD names a preset model, and what the operator makes of it."""

    #: The mapping whose presence asks for the GPUs.
    path: tuple[str, ...]
    #: What the operator does with it, as messages say it.
    becomes: str
    #: Where the object's GPU partition is, if the preset's pods follow it.
    partition: tuple[str, ...] | None = None


_INFERENCE = (
    "KAITO runs the preset model in a StatefulSet whose container requests and limits the GPUs "
    "(as many as the instance type, or the matching node, has)"
)
_TUNING = "KAITO runs the tuning Job with the GPUs in its container's requests and limits"

#: (API group, kind) -> the preset fields of the kind (Workspace has no `spec`: its fields are
#: top-level).
PRESET_FIELDS: Mapping[tuple[str, str], tuple[PresetField, ...]] = MappingProxyType(
    {
        (KAITO_GROUP, "Workspace"): (
            PresetField(("inference", "preset"), _INFERENCE, ("resource", "partition")),
            PresetField(("tuning", "preset"), _TUNING),
        ),
        (KAITO_GROUP, "InferenceSet"): (
            PresetField(
                ("spec", "template", "inference", "preset"),
                f"each Workspace of the template: {_INFERENCE}",
                ("spec", "template", "resource", "partition"),
            ),
        ),
        (KAITO_GROUP, "MultiRoleInference"): (
            PresetField(("spec", "model"), f"each role's InferenceSet names it as its preset: {_INFERENCE}"),
        ),
    }
)


class PresetNamed(NamedTuple):
    """A preset an object names, and the resource its pods ask for."""

    path: tuple[str, ...]
    field: PresetField
    resource: str


def named_presets(obj: Mapping[str, Any], group: str, kind: str) -> Iterator[PresetNamed]:
    """The presets the object names: a mapping at a preset field (KAITO refuses one without
    a model name, yet it is what the author asked for, as a quantity the API server would
    refuse still counts)."""
    for field in PRESET_FIELDS.get((group, kind), ()):
        preset = get_path(obj, field.path)
        if not isinstance(preset, Mapping):
            continue
        yield PresetNamed(field.path, field, _resource(obj, field))


def _resource(obj: Mapping[str, Any], field: PresetField) -> str:
    if field.partition is None:
        return KAITO_GPU
    partition = mapping(get_path(obj, field.partition))
    profile = text(partition.get("profile"))
    if text(partition.get("mode")) == KAITO_PARTITION_MIG and profile:
        return KAITO_MIG_PREFIX + profile
    return KAITO_GPU
