"""The user's intent, validated: which slice to request and how the workload looks.

`AcceleratorSlice` is one kind of slice.  `ClaimSpec` and `WorkloadSpec` hold every
argument of a claim template and of an isolated workload, with its default, its doc and
its validation, once; the builders take a spec.  The entry points (the keyword functions
in `dra_guard.builders`, the cdk8s constructs, the Pulumi components) take the same
keyword arguments, typed once by `ClaimOptions` / `WorkloadOptions`, and differ only in
where `name` and `namespace` come from.

Every check raises ``ValueError`` whose message starts with the name of the argument at
fault, so the error reads the same from cdk8s, Pulumi or plain Python.
"""

# No `from __future__ import annotations` here: the TypedDicts below must see `Required`
# as a type, not as a string, or their `__required_keys__` are wrong at run time.

import difflib
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from dra_guard.catalog import (
    DEFAULT_RESOURCE_API_VERSION,
    DEFAULT_SANITIZATION,
    DEVICE_CLASSES,
    MIG_PROFILE_PATTERN,
    topology_attribute_for,
)
from dra_guard.validators import (
    ATTRIBUTE_NAME,
    describe,
    frozen_copy,
    require_api_version,
    require_dns_label,
    require_dns_subdomain,
    require_env,
    require_hmac_key,
    require_image,
    require_labels,
    require_ports,
    require_positive_int,
    require_printable,
    require_resources,
    require_sanitization,
    require_string_list,
    require_workload_kind,
)

if sys.version_info >= (3, 11):
    from typing import Required, TypedDict
else:  # Python 3.10's typing.TypedDict does not understand Required
    from typing_extensions import Required, TypedDict

#: What the builders and both front ends accept for a container's env, ports and resources.
EnvInput = Mapping[str, str] | Sequence[Mapping[str, Any]]
PortsInput = Sequence[int | Mapping[str, Any]]
ResourcesInput = Mapping[str, Mapping[str, str | int]]


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
                f"pin_attribute: must be qualified as '<domain>/<attribute>', got {describe(self.pin_attribute)}"
            )
        domain, _, name = self.pin_attribute.partition("/")
        require_dns_subdomain("pin_attribute domain", domain)
        if not ATTRIBUTE_NAME.fullmatch(name):
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
    def nvidia_mig(cls, profile: str, count: int = 1) -> "AcceleratorSlice":
        """A MIG slice of one profile, e.g. ``1g.10gb`` or ``3g.40gb+me``."""
        if not isinstance(profile, str) or not MIG_PROFILE_PATTERN.fullmatch(profile):
            raise ValueError(
                f"profile: must be a MIG profile such as '1g.10gb' or '3g.40gb+me', got {describe(profile)}"
            )
        return cls("mig.nvidia.com", "gpu.nvidia.com/profile", profile, count)

    @classmethod
    def nvidia_gpu(cls, product_name: str, count: int = 1) -> "AcceleratorSlice":
        """Whole NVIDIA GPUs of one product, e.g. ``NVIDIA A100-SXM4-40GB``."""
        return cls("gpu.nvidia.com", "gpu.nvidia.com/productName", _named("product_name", product_name), count)

    @classmethod
    def google_tpu(cls, tpu_gen: str, count: int = 1) -> "AcceleratorSlice":
        """TPU chips of one generation, e.g. ``v5e`` or ``v6e``."""
        return cls("tpu.google.com", "tpu.google.com/tpuGen", _named("tpu_gen", tpu_gen), count)

    @classmethod
    def amd_gpu(cls, partition_profile: str, count: int = 1) -> "AcceleratorSlice":
        """AMD GPU partitions of one profile, e.g. ``cpx_nps4``."""
        return cls("gpu.amd.com", "gpu.amd.com/partitionProfile", _named("partition_profile", partition_profile), count)


def _named(field: str, value: object) -> str:
    # Re-check under the constructor's own argument name, so the message names it.
    return require_printable(field, value)


def claim_template_name(workload_name: str) -> str:
    """The template name derived from a workload name."""
    return f"{workload_name}-accelerator"


# --- The keyword arguments of every entry point ----------------------------------------
#
# `name` and `namespace` are not here: each entry point gets them its own way (the cdk8s
# constructs from the construct id and the chart, the Pulumi components from the resource
# name and a required `namespace`, the plain functions as arguments).  Everything else is
# the same everywhere.  These lists name the specs' fields once more, because a type
# checker needs them spelled out; mypy checks every key against the spec's constructor,
# and tests/test_spec.py checks that no spec field is missing.


class ClaimOptions(TypedDict, total=False):
    """Keyword arguments of `IsolatedClaimTemplate` and `claim_template`: see `ClaimSpec`."""

    slice: Required[AcceleratorSlice]
    tenant: str | None
    api_version: str
    sanitization: str
    hmac_key: str | bytes | None
    labels: Mapping[str, str] | None


class WorkloadOptions(ClaimOptions, total=False):
    """Keyword arguments of `IsolatedAcceleratorWorkload` and `isolated_workload`: see `WorkloadSpec`."""

    image: Required[str]
    replicas: int
    workload_kind: str
    container_name: str | None
    command: Sequence[str] | None
    args: Sequence[str] | None
    env: EnvInput | None
    ports: PortsInput | None
    resources: ResourcesInput | None


def _refuse_unknown_options(entry_point: str, options: Mapping[str, object], takes: Sequence[str]) -> None:
    """Raise ``TypeError`` naming every key of `options` that `entry_point` does not take.

    A TypedDict is checked by the type checker only; at run time a misspelt keyword would
    otherwise reach the spec as a confusing "unexpected keyword argument" (or, for a name
    the entry point sets itself, "got multiple values").
    """
    unknown = [str(key) for key in options if key not in takes]
    if not unknown:
        return
    noun = "an argument" if len(unknown) == 1 else "arguments"
    message = f"{', '.join(unknown)}: not {noun} of {entry_point}"
    # A high cutoff: typos only (`replica`, `tennant`), not `name` -> `namespace`.
    guesses = [match[0] for key in unknown if (match := difflib.get_close_matches(key, takes, n=1, cutoff=0.75))]
    if guesses:
        message += f" (did you mean {', '.join(guesses)}?)"
    raise TypeError(f"{message}; it takes {', '.join(takes)}")


# --- The specs ------------------------------------------------------------------------


def _set(spec: object, name: str, value: object) -> None:
    # The specs are frozen; __post_init__ stores the validated, read-only copies this way.
    object.__setattr__(spec, name, value)


@dataclass(frozen=True, kw_only=True)
class _IsolationFields:
    """The fields a claim template and a workload share; validated by each spec."""

    name: str
    namespace: str | None = field(
        default=None,
        metadata={
            "doc": "Namespace of the objects; `None` leaves it unset. The cdk8s constructs default "
            "to the chart's namespace; the Pulumi components require it."
        },
    )
    slice: AcceleratorSlice = field(
        metadata={
            "doc": 'The slice each pod gets: `AcceleratorSlice.nvidia_mig("1g.10gb")`, `.nvidia_gpu(...)`, '
            "`.google_tpu(...)`, `.amd_gpu(...)`, or `AcceleratorSlice(device_class, pin_attribute, value, count)`."
        }
    )
    tenant: str | None = field(
        default=None,
        metadata={
            "doc": "Tenant id (a DNS-1123 label): the `dra-guard.io/tenant` annotation on the template, "
            "covered by the isolation tag, and a label of the same name on the workload."
        },
    )
    api_version: str = field(
        default=DEFAULT_RESOURCE_API_VERSION,
        metadata={
            "doc": "Version of the claim template: `resource.k8s.io/v1`, `resource.k8s.io/v1beta2`, "
            "`resource.k8s.io/v1beta1` or `resource.k8s.io/v1alpha3`."
        },
    )
    sanitization: str = field(
        default=DEFAULT_SANITIZATION,
        metadata={"doc": "`WipeOnDeallocate` or `ZeroFillMemoryOnRelease`, declared in `dra-guard.io/sanitization`."},
    )
    hmac_key: str | bytes | None = field(
        default=None,
        repr=False,  # a key never shows up in a log line or a traceback
        metadata={"doc": "Key for an HMAC-SHA256 isolation tag; `None` gives a plain SHA-256 tag."},
    )
    labels: Mapping[str, str] | None = field(
        default=None, metadata={"doc": "Extra labels for the template and the workload."}
    )

    def _validate_shared(self) -> None:
        if not isinstance(self.slice, AcceleratorSlice):
            raise ValueError(f"slice: must be an AcceleratorSlice, got {type(self.slice).__name__}")
        require_api_version(self.api_version)
        require_sanitization(self.sanitization)
        require_hmac_key(self.hmac_key)
        if self.namespace is not None:
            require_dns_label("namespace", self.namespace)
        if self.labels is not None:
            _set(self, "labels", frozen_copy(require_labels("labels", self.labels)))
        if self.tenant is not None:
            require_dns_label("tenant", self.tenant)


@dataclass(frozen=True, kw_only=True)
class ClaimSpec(_IsolationFields):
    """Everything about one isolated ResourceClaimTemplate, validated when it is made.

    A spec is frozen and holds read-only copies of its mappings and lists, so it is valid
    for as long as it exists; `dataclasses.replace()` validates again.
    """

    name: str = field(metadata={"doc": "The template's `metadata.name` (a DNS-1123 subdomain)."})

    def __post_init__(self) -> None:
        require_dns_subdomain("name", self.name)
        self._validate_shared()

    @classmethod
    def from_options(
        cls, entry_point: str, *, name: str, namespace: str | None, options: ClaimOptions, takes: Sequence[str] = ()
    ) -> "ClaimSpec":
        """The spec for an entry point's keyword arguments; `takes` names its own parameters."""
        _refuse_unknown_options(entry_point, options, (*takes, *CLAIM_OPTION_NAMES))
        return cls(name=name, namespace=namespace, **options)


@dataclass(frozen=True, kw_only=True)
class WorkloadSpec(_IsolationFields):
    """Everything about one isolated accelerator workload, validated when it is made.

    The workload is a Deployment, StatefulSet or Job named `name`; its pods each get their
    own claim from the template described by :attr:`claim`.  Frozen, like `ClaimSpec`.
    """

    name: str = field(
        metadata={"doc": "The workload's `metadata.name` (a DNS-1123 label); the template is `<name>-accelerator`."}
    )
    image: str = field(metadata={"doc": "The container image reference."})
    replicas: int = field(default=1, metadata={"doc": "Pods to run; for a Job, its `completions` and `parallelism`."})
    workload_kind: str = field(
        default="Deployment",
        metadata={
            "doc": "`Deployment`, `StatefulSet` (with `serviceName` set to its name; create the headless "
            "Service yourself if you need stable DNS) or `Job`."
        },
    )
    container_name: str | None = field(
        default=None, metadata={"doc": "The container's name; `None` uses the workload's name."}
    )
    command: Sequence[str] | None = field(default=None, metadata={"doc": "The container's command, a list of strings."})
    args: Sequence[str] | None = field(default=None, metadata={"doc": "The container's args, a list of strings."})
    env: EnvInput | None = field(
        default=None, metadata={"doc": 'A `{"NAME": "value"}` mapping or a list of EnvVar mappings.'}
    )
    ports: PortsInput | None = field(
        default=None, metadata={"doc": "A list of port numbers or ContainerPort mappings."}
    )
    resources: ResourcesInput | None = field(
        default=None,
        metadata={
            "doc": "CPU/memory `limits` and `requests` only: an accelerator here (`nvidia.com/gpu`) is "
            "refused, the claim is the request."
        },
    )

    def __post_init__(self) -> None:
        require_dns_label("name", self.name)
        self._validate_shared()
        require_workload_kind(self.workload_kind)
        require_positive_int("replicas", self.replicas)
        require_image(self.image)
        if self.container_name is not None:
            require_dns_label("container_name", self.container_name)
        if self.command is not None:
            _set(self, "command", tuple(require_string_list("command", self.command)))
        if self.args is not None:
            _set(self, "args", tuple(require_string_list("args", self.args)))
        if self.env is not None:
            _set(self, "env", frozen_copy(require_env(self.env)))
        if self.ports is not None:
            _set(self, "ports", frozen_copy(require_ports(self.ports)))
        if self.resources is not None:
            _set(self, "resources", frozen_copy(require_resources(self.resources)))

    @classmethod
    def from_options(
        cls, entry_point: str, *, name: str, namespace: str | None, options: WorkloadOptions, takes: Sequence[str] = ()
    ) -> "WorkloadSpec":
        """The spec for an entry point's keyword arguments; `takes` names its own parameters."""
        _refuse_unknown_options(entry_point, options, (*takes, *WORKLOAD_OPTION_NAMES))
        return cls(name=name, namespace=namespace, **options)

    @property
    def claim(self) -> ClaimSpec:
        """The spec of this workload's claim template, named `<name>-accelerator`."""
        shared = {spec_field.name: getattr(self, spec_field.name) for spec_field in fields(_IsolationFields)}
        return ClaimSpec(**{**shared, "name": claim_template_name(self.name)})


#: The keyword arguments of each kind of entry point, in declaration order.
CLAIM_OPTION_NAMES: tuple[str, ...] = tuple(ClaimOptions.__annotations__)
WORKLOAD_OPTION_NAMES: tuple[str, ...] = tuple(WorkloadOptions.__annotations__)
