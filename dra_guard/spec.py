"""The user's intent, validated: what slice to request and how the workload looks.

Every check raises ``ValueError`` whose message starts with the name of the argument at
fault, so the error reads the same from cdk8s, Pulumi or plain Python.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dra_guard.catalog import (
    DEVICE_CLASSES,
    MIG_PROFILE_PATTERN,
    RESOURCE_API_VERSIONS,
    SANITIZATION_POLICIES,
    WORKLOAD_KINDS,
    is_legacy_resource,
    topology_attribute_for,
)

#: What the builders and both front ends accept for a container's env, ports and resources.
EnvInput = Mapping[str, str] | Sequence[Mapping[str, Any]]
PortsInput = Sequence[int | Mapping[str, Any]]
ResourcesInput = Mapping[str, Mapping[str, str | int]]

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
# DRA attribute names are C identifiers of at most 32 characters (resource.k8s.io API).
_ATTRIBUTE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}")
_LABEL_NAME = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")


def _describe(value: object) -> str:
    return f"{value!r} ({type(value).__name__})"


def require_dns_label(field: str, value: object) -> str:
    """A DNS-1123 label: lower-case alphanumerics and '-', at most 63 characters."""
    if not isinstance(value, str) or len(value) > 63 or not _DNS1123_LABEL.fullmatch(value):
        raise ValueError(
            f"{field}: must be a DNS-1123 label (lower-case letters, digits and '-', "
            f"starting and ending with an alphanumeric, at most 63 characters), got {_describe(value)}"
        )
    return value


def require_dns_subdomain(field: str, value: object) -> str:
    """A DNS-1123 subdomain: dot-separated labels, at most 253 characters."""
    if not isinstance(value, str) or len(value) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(value):
        raise ValueError(
            f"{field}: must be a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', "
            f"at most 253 characters), got {_describe(value)}"
        )
    return value


def require_positive_int(field: str, value: object) -> int:
    # bool is an int subclass; `count=True` is a bug, not a count of one.
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{field}: must be an integer >= 1, got {_describe(value)}")
    return value


def require_one_of(field: str, value: object, allowed: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{field}: must be one of {', '.join(allowed)}; got {_describe(value)}")
    return value


def require_printable(field: str, value: object) -> str:
    """A non-empty single-line string (it ends up in a CEL literal and an annotation)."""
    if not isinstance(value, str) or not value.strip() or not value.isprintable():
        raise ValueError(f"{field}: must be a non-empty printable string, got {_describe(value)}")
    return value


def require_string_list(field: str, value: object) -> list[str]:
    # A plain string is a sequence too; `command="python serve.py"` is a classic mistake.
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"{field}: must be a list of strings, got {_describe(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise ValueError(f"{field}[{index}]: must be a string, got {_describe(item)}")
    return list(value)


def require_labels(field: str, value: object) -> dict[str, str]:
    """Kubernetes label keys (`[prefix/]name`) and values, checked as the API server would."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{field}: must be a mapping of label keys to values, got {_describe(value)}")
    labels: dict[str, str] = {}
    for key, label_value in value.items():
        if not isinstance(key, str):
            raise ValueError(f"{field}: label key {_describe(key)} must be a string")
        prefix, _, name = key.rpartition("/")
        if prefix:
            require_dns_subdomain(f"{field}[{key!r}] prefix", prefix)
        if not name or len(name) > 63 or not _LABEL_NAME.fullmatch(name):
            raise ValueError(f"{field}: {key!r} is not a valid label key")
        if not isinstance(label_value, str) or len(label_value) > 63 or not _LABEL_NAME.fullmatch(label_value):
            raise ValueError(f"{field}[{key!r}]: {_describe(label_value)} is not a valid label value")
        labels[key] = label_value
    return labels


def require_api_version(value: object) -> str:
    return require_one_of("api_version", value, RESOURCE_API_VERSIONS)


def require_sanitization(value: object) -> str:
    return require_one_of("sanitization", value, SANITIZATION_POLICIES)


def require_workload_kind(value: object) -> str:
    return require_one_of("workload_kind", value, WORKLOAD_KINDS)


def require_hmac_key(value: object) -> str | bytes | None:
    if value is None:
        return None
    if not isinstance(value, (str, bytes)) or not value:
        raise ValueError(f"hmac_key: must be a non-empty str or bytes, got {type(value).__name__}")
    return value


def require_resources(value: object) -> dict[str, dict[str, str | int]]:
    """Container CPU/memory resources; accelerators come from the claim, never from here."""
    if not isinstance(value, Mapping):
        raise ValueError(f"resources: must be a mapping with 'limits' and/or 'requests', got {_describe(value)}")
    checked: dict[str, dict[str, str | int]] = {}
    for section, quantities in value.items():
        if section not in ("limits", "requests"):
            raise ValueError(
                f"resources: unknown key {section!r}; only 'limits' and 'requests' are allowed "
                "(the accelerator claim is added for you)"
            )
        if not isinstance(quantities, Mapping):
            raise ValueError(f"resources.{section}: must be a mapping, got {_describe(quantities)}")
        checked[section] = {}
        for name, quantity in quantities.items():
            if not isinstance(name, str):
                raise ValueError(f"resources.{section}: resource name {_describe(name)} must be a string")
            if is_legacy_resource(name):
                raise ValueError(
                    f"resources.{section}.{name}: legacy accelerator requests are what this "
                    "component replaces; the slice is requested through the claim template"
                )
            if isinstance(quantity, bool) or not isinstance(quantity, (str, int)):
                raise ValueError(
                    f"resources.{section}.{name}: must be a quantity string or integer, got {_describe(quantity)}"
                )
            checked[section][name] = quantity
    return checked


def require_env(value: object) -> list[dict[str, Any]]:
    """`{"NAME": "value"}` in the given order, or a list of Kubernetes EnvVar mappings."""
    if isinstance(value, Mapping):
        env = []
        for name, env_value in value.items():
            if not isinstance(name, str) or not name or "=" in name:
                raise ValueError(f"env: {_describe(name)} is not a valid variable name")
            if not isinstance(env_value, str):
                raise ValueError(f"env[{name!r}]: must be a string, got {_describe(env_value)}")
            env.append({"name": name, "value": env_value})
        return env
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"env: must be a mapping or a list of EnvVar mappings, got {_describe(value)}")
    env = []
    for index, item in enumerate(value):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise ValueError(f"env[{index}]: must be an EnvVar mapping with a 'name', got {_describe(item)}")
        env.append(plain_copy(item))
    return env


def require_ports(value: object) -> list[dict[str, Any]]:
    """Container ports: integers, or ContainerPort mappings with `containerPort`."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"ports: must be a list of port numbers or ContainerPort mappings, got {_describe(value)}")
    ports = []
    for index, item in enumerate(value):
        port = item.get("containerPort") if isinstance(item, Mapping) else item
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise ValueError(f"ports[{index}]: container port must be an integer 1-65535, got {_describe(port)}")
        ports.append(plain_copy(item) if isinstance(item, Mapping) else {"containerPort": port})
    return ports


def plain_copy(value: Any) -> Any:
    """A deep copy into plain dicts and lists, so callers never share state with us."""
    if isinstance(value, Mapping):
        return {key: plain_copy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_copy(item) for item in value]
    return value


def name_from_id(construct_id: str, field: str = "id") -> str:
    """The Kubernetes name for a cdk8s construct id or a Pulumi resource name.

    `TenantA_Inference` -> `tenanta-inference`.  Deterministic and readable (no hash
    suffix), so the names in the cluster are the ones in the code; two workloads with the
    same name in one namespace collide, as they would with kubectl.
    """
    name = re.sub(r"[^a-z0-9]+", "-", str(construct_id).lower()).strip("-")[:63].rstrip("-")
    if not name:
        raise ValueError(f"{field}: {construct_id!r} gives no usable Kubernetes name; use letters or digits")
    return name


@dataclass(frozen=True)
class AcceleratorSlice:
    """One kind of accelerator slice, pinned to one profile, and how many of it.

    ``pin_attribute`` is qualified as ``<driver domain>/<attribute>``; the selector will
    require ``device.attributes['<domain>'].<attribute> == '<pin_value>'``.
    """

    device_class: str
    pin_attribute: str
    pin_value: str
    count: int = 1

    def __post_init__(self) -> None:
        require_dns_subdomain("device_class", self.device_class)
        require_printable("pin_value", self.pin_value)
        require_positive_int("count", self.count)
        if not isinstance(self.pin_attribute, str) or "/" not in self.pin_attribute:
            raise ValueError(
                f"pin_attribute: must be qualified as '<domain>/<attribute>', got {_describe(self.pin_attribute)}"
            )
        domain, _, name = self.pin_attribute.partition("/")
        require_dns_subdomain("pin_attribute domain", domain)
        if not _ATTRIBUTE_NAME.fullmatch(name):
            raise ValueError(
                f"pin_attribute: {name!r} is not a DRA attribute name (a C identifier, at most 32 characters)"
            )
        known = DEVICE_CLASSES.get(self.device_class)
        if known is not None:
            # Pinning any other attribute leaves the profile open (DRA002), or never matches:
            # a MIG profile on class gpu.nvidia.com selects nothing.
            if self.pin_attribute != known.qualified_pin_attribute:
                raise ValueError(
                    f"pin_attribute: class {self.device_class} is pinned by "
                    f"{known.qualified_pin_attribute}, not {self.pin_attribute}"
                )
            if known.pin_value_pattern and not known.pin_value_pattern.fullmatch(self.pin_value):
                raise ValueError(
                    f"pin_value: {self.pin_value!r} is not a valid {known.pin_attribute} for {self.device_class}"
                )

    @property
    def domain(self) -> str:
        return self.pin_attribute.partition("/")[0]

    @property
    def attribute(self) -> str:
        return self.pin_attribute.partition("/")[2]

    @property
    def topology_attribute(self) -> str:
        return topology_attribute_for(self.device_class)

    @classmethod
    def nvidia_mig(cls, profile: str, count: int = 1) -> AcceleratorSlice:
        """A MIG slice of one profile, e.g. ``1g.10gb`` or ``3g.40gb+me``."""
        if not isinstance(profile, str) or not MIG_PROFILE_PATTERN.fullmatch(profile):
            raise ValueError(
                f"profile: must be a MIG profile such as '1g.10gb' or '3g.40gb+me', got {_describe(profile)}"
            )
        return cls("mig.nvidia.com", "gpu.nvidia.com/profile", profile, count)

    @classmethod
    def nvidia_gpu(cls, product_name: str, count: int = 1) -> AcceleratorSlice:
        """Whole NVIDIA GPUs of one product, e.g. ``NVIDIA A100-SXM4-40GB``."""
        return cls("gpu.nvidia.com", "gpu.nvidia.com/productName", _named("product_name", product_name), count)

    @classmethod
    def google_tpu(cls, tpu_gen: str, count: int = 1) -> AcceleratorSlice:
        """TPU chips of one generation, e.g. ``v5e`` or ``v6e``."""
        return cls("tpu.google.com", "tpu.google.com/tpuGen", _named("tpu_gen", tpu_gen), count)

    @classmethod
    def amd_gpu(cls, partition_profile: str, count: int = 1) -> AcceleratorSlice:
        """AMD GPU partitions of one profile, e.g. ``cpx_nps4``."""
        return cls("gpu.amd.com", "gpu.amd.com/partitionProfile", _named("partition_profile", partition_profile), count)


def _named(field: str, value: object) -> str:
    # Re-check under the constructor's own argument name, so the message names it.
    return require_printable(field, value)
