"""Opaque driver parameters, decoded the way their driver decodes them (DRA010).

NVIDIA's GPU driver reads `opaque.parameters` of configs for `driver: gpu.nvidia.com` with a
strict JSON decoder over a scheme of its own kinds: an unknown or misspelt field, or an
unknown kind, fails — in its admission webhook when that is deployed (the chart ships it
disabled), otherwise when the kubelet plugin prepares the claim on the node, long after
the manifest was applied.  The structs, enums and rules below are those of
NVIDIA/k8s-dra-driver-gpu @ 22407113 (v0.4.0), `api/nvidia.com/resource/v1beta1/`:
api.go (StrictDecoder, kinds), gpuconfig.go, migconfig.go, vfiodeviceconfig.go, iommu.go,
sharing.go, validate.go, computedomainconfig.go.  Driver feature gates (TimeSlicingSettings,
MPSSupport, PassthroughSupport) are a cluster setting this check cannot see; DRA007 judges
what sharing means.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from dra_guard.model.manifest import Path

NVIDIA_GPU_DRIVER = "gpu.nvidia.com"
NVIDIA_CONFIG_API_VERSION = "resource.nvidia.com/v1beta1"


class Problem(NamedTuple):
    #: Path inside `parameters`.
    path: Path
    message: str


# One struct: field -> its type.  A type is a nested struct (a dict), or one of the names
# below; "required" fields are listed apart.
_Struct = Mapping[str, Any]
_INTERVALS = ("Default", "Short", "Medium", "Long")
_STRATEGIES = ("TimeSlicing", "MPS")
_MPS_CONFIG: _Struct = {
    "defaultActiveThreadPercentage": "percentage",
    "defaultPinnedDeviceMemoryLimit": "quantity",
    "defaultPerDevicePinnedMemoryLimit": "quantity-map",
}
_GPU_SHARING: _Struct = {
    "strategy": "strategy",
    "timeSlicingConfig": {"interval": "interval"},
    "mpsConfig": _MPS_CONFIG,
}
# MigDeviceSharing has no timeSlicingConfig: strict decoding refuses one (sharing.go).
_MIG_SHARING: _Struct = {"strategy": "strategy", "mpsConfig": _MPS_CONFIG}
_KINDS: Mapping[str, _Struct] = {
    "GpuConfig": {"sharing": _GPU_SHARING},
    "MigDeviceConfig": {"sharing": _MIG_SHARING},
    "VfioDeviceConfig": {"iommu": {"backendPolicy": "backend-policy", "enableAPIDevice": "bool"}},
    "ComputeDomainChannelConfig": {"domainID": "non-empty", "allocationMode": "string"},
    "ComputeDomainDaemonConfig": {"domainID": "non-empty"},
}
# Fields without `omitempty` whose zero value Validate() refuses (Normalize() fills
# iommu.backendPolicy, so it is not among them).
_REQUIRED: Mapping[str, tuple[str, ...]] = {
    "sharing": ("strategy",),
    "ComputeDomainChannelConfig": ("domainID",),
    "ComputeDomainDaemonConfig": ("domainID",),
}
_ENUMS: Mapping[str, tuple[str, ...]] = {
    "strategy": _STRATEGIES,
    "interval": _INTERVALS,
    "backend-policy": ("LegacyOnly", "PreferIommuFD"),
}
#: The kind of device each NVIDIA config applies to, by the class that selects those devices:
#: the kubelet plugin fails to prepare a claim whose config does not fit its device
#: (cmd/gpu-kubelet-plugin/device_state.go prepareDevices).
CONFIG_KIND_FOR_CLASS: Mapping[str, str] = {
    "gpu.nvidia.com": "GpuConfig",
    "mig.nvidia.com": "MigDeviceConfig",
    "vfio.gpu.nvidia.com": "VfioDeviceConfig",
}


def nvidia_problems(parameters: object) -> Iterator[Problem]:
    """What NVIDIA's StrictDecoder, Normalize() and Validate() refuse in `parameters`."""
    if not isinstance(parameters, Mapping):
        yield Problem((), "the NVIDIA driver's parameters must be an object with apiVersion and kind")
        return
    if parameters.get("apiVersion") != NVIDIA_CONFIG_API_VERSION:
        yield Problem(
            ("apiVersion",),
            f"the NVIDIA driver decodes only apiVersion {NVIDIA_CONFIG_API_VERSION}, "
            f"got {parameters.get('apiVersion')!r}",
        )
        return
    kind = parameters.get("kind")
    struct = _KINDS.get(kind) if isinstance(kind, str) else None
    if struct is None:
        yield Problem(("kind",), f"the NVIDIA driver has no config kind {kind!r}; it has {', '.join(_KINDS)}")
        return
    yield from _struct(parameters, {"apiVersion": "string", "kind": "string", **struct}, (), str(kind), str(kind))
    sharing = parameters.get("sharing")
    if isinstance(sharing, Mapping):
        yield from _sharing(sharing)


def _struct(value: Mapping[str, Any], struct: _Struct, path: Path, what: str, name: str) -> Iterator[Problem]:
    for key in _REQUIRED.get(name, ()):
        if key not in value:
            yield Problem(path, f"{what} needs {key}")
    for key, item in value.items():
        field_type = struct.get(key) if isinstance(key, str) else None
        where = (*path, str(key))
        if field_type is None:
            # The strict decoder also refuses a field spelt in another case.
            yield Problem(where, f"{what} has no field {key!r} (the driver decodes strictly: {', '.join(struct)})")
        elif isinstance(field_type, Mapping):
            if not isinstance(item, Mapping):
                yield Problem(where, f"{key} must be an object")
            else:
                yield from _struct(item, field_type, where, key, key)
        else:
            yield from _scalar(item, field_type, where, key)


def _scalar(value: object, field_type: str, path: Path, key: str) -> Iterator[Problem]:
    if field_type in _ENUMS:
        if value not in _ENUMS[field_type]:
            yield Problem(path, f"{key} must be one of {', '.join(_ENUMS[field_type])} (exactly), got {value!r}")
    elif field_type == "percentage":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100:
            yield Problem(path, f"{key} must be an integer from 0 to 100, got {value!r}")
    elif field_type == "bool":
        if not isinstance(value, bool):
            yield Problem(path, f"{key} must be true or false, got {value!r}")
    elif field_type == "quantity":
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            yield Problem(path, f"{key} must be a quantity such as 1Gi, got {value!r}")
    elif field_type == "quantity-map":
        if not isinstance(value, Mapping):
            yield Problem(path, f"{key} must map device UUIDs or indexes to quantities")
        else:
            for device, quantity in value.items():
                yield from _scalar(quantity, "quantity", (*path, str(device)), f"{key}[{device!r}]")
    elif field_type == "non-empty":
        if not isinstance(value, str) or not value:
            yield Problem(path, f"{key} must be a non-empty string, got {value!r}")
    elif not isinstance(value, str):  # "string"
        yield Problem(path, f"{key} must be a string, got {value!r}")


def _sharing(sharing: Mapping[str, Any]) -> Iterator[Problem]:
    """The cross-field rules of sharing.go (GetTimeSlicingConfig / GetMpsConfig) and validate.go."""
    strategy = sharing.get("strategy")
    if strategy == "TimeSlicing" and "mpsConfig" in sharing:
        yield Problem(("sharing", "mpsConfig"), "mpsConfig cannot be used with the TimeSlicing strategy")
    if strategy == "MPS" and "timeSlicingConfig" in sharing:
        yield Problem(("sharing", "timeSlicingConfig"), "timeSlicingConfig cannot be used with the MPS strategy")
    time_slicing = sharing.get("timeSlicingConfig")
    if strategy == "TimeSlicing" and isinstance(time_slicing, Mapping) and "interval" not in time_slicing:
        # Normalize() fills a missing timeSlicingConfig, not a missing interval, and Validate()
        # then reads the interval it does not have.
        yield Problem(("sharing", "timeSlicingConfig"), "timeSlicingConfig needs an interval (Default, Short, ...)")


# --- the same decoding in CEL, for DRA010's admission policy ---------------------------------

_CEL_SCALARS: Mapping[str, str] = {
    "percentage": "type({v}) == int && {v} >= 0 && {v} <= 100",
    "bool": "type({v}) == bool",
    "quantity": "(type({v}) == string || type({v}) == int || type({v}) == double)",
    "non-empty": "type({v}) == string && size({v}) > 0",
    "string": "type({v}) == string",
}


def _cel_list(values: tuple[str, ...] | list[str]) -> str:
    return "[" + ", ".join(f"'{value}'" for value in values) + "]"


def _cel_value(value: str, field_type: str | _Struct, name: str, depth: int) -> str:
    if isinstance(field_type, Mapping):
        return _cel_struct(value, field_type, name, depth + 1)
    if field_type in _ENUMS:
        return f"type({value}) == string && {value} in {_cel_list(_ENUMS[field_type])}"
    if field_type == "quantity-map":
        device = f"d{depth}"
        quantity = _CEL_SCALARS["quantity"].format(v=f"{value}[{device}]")
        return f"type({value}) == map && {value}.all({device}, {quantity})"
    return _CEL_SCALARS[field_type].format(v=value)


def _cel_struct(value: str, struct: _Struct, name: str, depth: int = 0) -> str:
    """CEL: `value` is an object with only the struct's fields, the required ones, each valid."""
    key = f"k{depth}"
    parts = [f"type({value}) == map", f"{value}.all({key}, {key} in {_cel_list(list(struct))})"]
    parts += [f"has({value}.{required})" for required in _REQUIRED.get(name, ())]
    for field, field_type in struct.items():
        parts.append(f"(!has({value}.{field}) || ({_cel_value(f'{value}.{field}', field_type, field, depth)}))")
    return " && ".join(parts)


def decodes_cel(parameters: str) -> str:
    """CEL: what `nvidia_problems` finds nothing in: the parameters (a CEL expression for an
    object's `opaque.parameters`) decode strictly, pass Validate() and the sharing rules."""
    kinds = []
    for kind, struct in _KINDS.items():
        whole = {"apiVersion": "string", "kind": "string", **struct}
        kinds.append(f"({parameters}.kind == '{kind}' && {_cel_struct(parameters, whole, kind)})")
    sharing = f"{parameters}.sharing"
    strategy = f"{sharing}.strategy"
    rules = (
        f"(!has({sharing}) || type({sharing}) != map || ("
        f"!({strategy} == 'TimeSlicing' && has({sharing}.mpsConfig)) && "
        f"!({strategy} == 'MPS' && has({sharing}.timeSlicingConfig)) && "
        f"!({strategy} == 'TimeSlicing' && has({sharing}.timeSlicingConfig) && "
        f"type({sharing}.timeSlicingConfig) == map && !has({sharing}.timeSlicingConfig.interval))))"
    )
    return (
        f"type({parameters}) == map && has({parameters}.apiVersion) && "
        f"type({parameters}.apiVersion) == string && {parameters}.apiVersion == '{NVIDIA_CONFIG_API_VERSION}' && "
        f"has({parameters}.kind) && type({parameters}.kind) == string && ({' || '.join(kinds)}) && {rules}"
    )
