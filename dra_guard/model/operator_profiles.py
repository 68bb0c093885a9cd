"""Operators that give their pods the resources of a named profile of their own configuration.

KubeAI's `Model` (`kubeai.org/v1`) names a resource profile, `spec.resourceProfile:
"<name>:<multiple>"`; the operator looks the name up in its system configuration (the Helm
values' `resourceProfiles`), multiplies the profile's `requests` and `limits` by the
multiple and writes them into the model server container (substratusai/kubeai
`internal/modelcontroller/model_controller.go` `getModelConfig` and `engine_vllm.go` @
2f32ef49).  A profile holds only ResourceLists, never a claim
(`internal/config/system.go` `ResourceProfile`), so any accelerator it gives is an extended
resource.

What a profile holds is cluster configuration, which no manifest shows.  The profiles the
operator's own chart defines are known (`KUBEAI_CHART_PROFILES`); a profile named `cpu...`
is taken to hold none; any other name cannot be verified.  This module only says where the
field is and what is known of the name; `extended_resources` makes it a request.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from dra_guard.model.manifest import get_path

_KUBEAI_VALUES = "substratusai/kubeai charts/kubeai/values.yaml @ 2f32ef49"
_KUBEAI_GKE_VALUES = "substratusai/kubeai charts/kubeai/values-gke.yaml @ 2f32ef49"
_NVIDIA_GPU_PROFILES = (
    "nvidia-gpu-t4",
    "nvidia-gpu-l4",
    "nvidia-gpu-l40s",
    "nvidia-gpu-h100",
    "nvidia-gpu-gh200",
    "nvidia-gpu-a100-80gb",
    "nvidia-gpu-a100-40gb",
    "nvidia-gpu-a16",
    "nvidia-gpu-rtx4070-8gb",
)
_GOOGLE_TPU_PROFILES = ("google-tpu-v5e-1x1", "google-tpu-v5e-2x2", "google-tpu-v5e-2x4")


class ChartProfile(NamedTuple):
    """A resource profile the operator's chart defines."""

    #: The resource names of its `limits` (its `requests`, where it has them, name the same
    #: accelerator).
    limits: tuple[str, ...]
    #: The values file that defines it.
    source: str


#: KubeAI's chart profiles with accelerators in their limits.  (`nvidia-gpu-rtx4090-24gb` of
#: `values-nvidia-k8s-device-plugin.yaml` sets only a nodeSelector, no limits, so it is not
#: among them: a Model naming it cannot be verified, like any profile of the cluster's own.)
KUBEAI_CHART_PROFILES: Mapping[str, ChartProfile] = MappingProxyType(
    {
        **{name: ChartProfile(("nvidia.com/gpu",), _KUBEAI_VALUES) for name in _NVIDIA_GPU_PROFILES},
        "amd-gpu-mi300x": ChartProfile(("amd.com/gpu",), _KUBEAI_VALUES),
        **{name: ChartProfile(("google.com/tpu",), _KUBEAI_GKE_VALUES) for name in _GOOGLE_TPU_PROFILES},
    }
)
#: Profile names taken to hold no accelerator: the chart's `cpu` (requests of cpu and memory
#: only) and the like.
CPU_PROFILE_PREFIX = "cpu"


class ProfileField(NamedTuple):
    """Where a CRD names an operator's resource profile, and what the operator does with it."""

    path: tuple[str, ...]
    #: Who reads it, as messages say it ("KubeAI").
    operator: str
    #: The profiles the operator's chart defines.
    profiles: Mapping[str, ChartProfile]
    #: What the operator does with a profile's limits, as messages say it (after "which").
    becomes: str
    #: Where the cluster defines its profiles, as messages say it.
    configured_in: str


#: (API group, kind) -> the field naming a profile.
PROFILE_FIELDS: Mapping[tuple[str, str], ProfileField] = MappingProxyType(
    {
        ("kubeai.org", "Model"): ProfileField(
            ("spec", "resourceProfile"),
            "KubeAI",
            KUBEAI_CHART_PROFILES,
            "the operator multiplies by the multiple after the colon into the model server container",
            "the resourceProfiles of the operator's Helm values",
        ),
    }
)

#: A multiple `strconv.Atoi` reads as zero: the operator multiplies every quantity by it.
_ZERO_MULTIPLE = re.compile(r"[+-]?0+")


class ProfileNamed(NamedTuple):
    """A profile an object names, that may give its pods resources."""

    path: tuple[str, ...]
    field: ProfileField
    name: str
    #: None: a profile the operator's chart does not define, whose contents are unknown.
    chart: ChartProfile | None


def named_profiles(obj: Mapping[str, Any], group: str, kind: str) -> Iterator[ProfileNamed]:
    """The profile the object names, unless it gives nothing: no profile, a `cpu...` one, or a
    multiple of zero.  A value the operator refuses (no colon, a multiple that is not a
    number) still counts by its name, as a quantity the API server would refuse does."""
    field = PROFILE_FIELDS.get((group, kind))
    if field is None:
        return
    value = get_path(obj, field.path)
    if not isinstance(value, str) or not value:
        return  # no profile: the operator refuses the object and makes no pod
    name, _, multiple = value.partition(":")
    if name.startswith(CPU_PROFILE_PREFIX) or _ZERO_MULTIPLE.fullmatch(multiple):
        return
    yield ProfileNamed(field.path, field, name, field.profiles.get(name))
