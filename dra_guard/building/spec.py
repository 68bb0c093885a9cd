"""The user's intent, validated: which slice to request and how the workload looks.

`AcceleratorSlice` is one kind of slice.  `ClaimSpec` and `WorkloadSpec` hold every
argument of a claim template and of an isolated workload, with its default, its doc and
its validation, once; the builders take a spec.  The entry points (the keyword functions
in `dra_guard.building.builders`, the cdk8s constructs, the Pulumi components) take the same
keyword arguments, typed once by `ClaimOptions` / `WorkloadOptions`, and differ only in
where `name` and `namespace` come from.

Every check raises ``ValueError`` whose message starts with the name of the argument at
fault, so the error reads the same from cdk8s, Pulumi or plain Python.
"""

# No `from __future__ import annotations` here: the TypedDicts below must see `Required`
# as a type, not as a string, or their `__required_keys__` are wrong at run time.

import difflib
import enum
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Final, Literal

from dra_guard.contract.catalog import (
    DEFAULT_KUBERNETES_VERSION,
    DEFAULT_RESOURCE_API_VERSION,
    DEFAULT_SANITIZATION,
    DEVICE_CLASSES,
    KUBERNETES_RELEASES,
    KUBERNETES_VERSIONS,
    SANITIZATION_POLICIES,
    SCRUB_BEFORE_USE,
    DeviceClass,
    exclusivity_guard_compiles,
)
from dra_guard.contract.mig_profiles import max_per_gpu
from dra_guard.contract.scrubber import (
    DEFAULT_SCRUB_IMAGE,
    SCRUBBED_CLASSES,
    SCRUBBED_DRIVERS,
    scrubbed,
)
from dra_guard.contract.served import served_claim_api_versions
from dra_guard.contract.validators import (
    describe,
    frozen_copy,
    require_api_version,
    require_dns1035_label,
    require_dns_label,
    require_dns_subdomain,
    require_env,
    require_hmac_key,
    require_image,
    require_int32_count,
    require_labels,
    require_one_of,
    require_ports,
    require_positive_int,
    require_printable,
    require_qualified_attribute,
    require_resources,
    require_sanitization,
    require_scrub_image,
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


class _Default(enum.Enum):
    CATALOG = "the catalog's alignment for the class"

    def __repr__(self) -> str:
        return "CATALOG_DEFAULT"


#: `AcceleratorSlice(topology=...)` default: the alignment the catalog gives the class.
CATALOG_DEFAULT: Final = _Default.CATALOG
#: What `topology=` takes: an attribute name, None (no alignment), or CATALOG_DEFAULT.
TopologyChoice = str | Literal[_Default.CATALOG] | None


@dataclass(frozen=True)
class AcceleratorSlice:
    """One kind of accelerator slice, pinned to one profile, and how many of it.

    ``pin_attribute`` is qualified as ``<driver domain>/<attribute>``; the selector will
    require ``device.attributes['<domain>'].<attribute> == '<pin_value>'``.

    ``topology`` is the attribute several devices of one claim must share (a
    ``matchAttribute`` constraint).  By default it is what the catalog gives the class: the
    parent GPU for MIG slices (``gpu.nvidia.com/parentUUID``), and nothing for every other
    class, because no other driver publishes an attribute that every device carries and that
    any count a node holds can meet (README.md, "What locality a claim for several devices
    gets").  Name one to opt in (``topology="resource.kubernetes.io/pcieRoot"`` where your
    nodes publish it), or ``topology=None`` for no constraint at all.
    """

    device_class: str
    pin_attribute: str
    pin_value: str
    count: int = 1
    topology: TopologyChoice = CATALOG_DEFAULT

    def __post_init__(self) -> None:
        require_dns_subdomain("device_class", self.device_class)
        require_printable("pin_value", self.pin_value)
        require_positive_int("count", self.count)
        require_qualified_attribute("pin_attribute", self.pin_attribute)
        known = DEVICE_CLASSES.get(self.device_class)
        if known is not None:
            # Pinning any other attribute leaves the profile open (DRA002), or never matches:
            # a MIG profile on class gpu.nvidia.com selects nothing.
            if self.pin_attribute != known.qualified_pin_attribute:
                raise ValueError(
                    f"pin_attribute: class {self.device_class} is pinned by "
                    f"{known.qualified_pin_attribute}, not {self.pin_attribute}"
                )
            check_pin_value("pin_value", known, self.pin_value)
        object.__setattr__(self, "topology", self._checked_topology(known))

    def _checked_topology(self, known: DeviceClass | None) -> str | None:
        """The alignment to emit: the catalog's, or the user's if the class's devices can carry it."""
        if self.topology is CATALOG_DEFAULT:
            topology = known.default_alignment if known is not None else None
        elif self.topology is None:
            return None
        else:
            topology = self.topology
            require_qualified_attribute("topology", topology)
            if known is not None and known.topology_attribute(topology) is None:
                raise ValueError(f"topology: {_unpublished(known, topology)}")
        if topology is not None and known is not None:
            self._refuse_unalignable(known, topology)
        return topology

    def _refuse_unalignable(self, known: DeviceClass, topology: str) -> None:
        """Refuse an alignment no device of this pin value carries, and a count one aligned
        unit never holds.  Only these: without the alignment (topology=None, or pcieRoot over
        several GPUs) the devices may come from several GPUs, and no count is impossible."""
        if known.name == "gpu.amd.com" and topology == _AMD_PARENT and self.pin_value.startswith("spx_"):
            # ROCm/k8s-gpu-dra-driver @ 2622427226d5ac361c3588284f4815e0dae11eaa,
            # cmd/gpu-kubeletplugin/discovery.go enumerateAllPossibleDevices: compute partition
            # "spx" is a full GPU (AmdGpuInfo), whose GetDevice (deviceinfo.go) publishes
            # deviceID; only partitions (AmdPartitionInfo) publish parentDeviceID.
            raise ValueError(
                f"topology: {self.pin_value} devices are whole GPUs (compute partition spx), which the gpu.amd.com "
                f"driver publishes with deviceID, not {topology} (only partitions of a GPU carry it), so a "
                "matchAttribute on it never chooses one; leave topology unset"
            )
        if topology != known.default_alignment or known.max_aligned_count is None:
            return
        limit, why = known.max_aligned_count, ""
        if known.name == "mig.nvidia.com":
            # Aligned on parentUUID, every device of the claim is a MIG device of one GPU.
            limit, why = max_per_gpu(self.pin_value)
            why = f" MIG device{'s' * (limit != 1)} of profile {self.pin_value} ({why})"
        if self.count > limit:
            raise ValueError(
                f"count: {self.count} devices of {self.device_class} aligned on {topology} never allocate: "
                f"one {_ALIGNED_UNIT.get(topology, 'group')} holds at most {limit}{why}; "
                "ask for fewer, or pass topology=None to let them come from several"
            )

    @property
    def domain(self) -> str:
        return self.pin_attribute.partition("/")[0]

    @property
    def attribute(self) -> str:
        return self.pin_attribute.partition("/")[2]

    @property
    def scrubbed(self) -> bool:
        """Whether the scrubber scrubs the slice's devices: by their driver, which the slice's
        selector fixes (`device.driver == '<domain>'`), so under a class of any name."""
        return scrubbed(self.device_class, self.domain)

    @property
    def alignment(self) -> str | None:
        """The attribute a `matchAttribute` constraint aligns several devices on, or None."""
        return None if self.topology is CATALOG_DEFAULT else self.topology

    @classmethod
    def nvidia_mig(
        cls, profile: str, count: int = 1, *, topology: TopologyChoice = CATALOG_DEFAULT
    ) -> "AcceleratorSlice":
        """MIG slices of one profile, e.g. ``1g.10gb`` or ``3g.40gb+me``; several come from one parent GPU."""
        check_pin_value("profile", DEVICE_CLASSES["mig.nvidia.com"], profile)
        return cls("mig.nvidia.com", "gpu.nvidia.com/profile", profile, count, topology)

    @classmethod
    def nvidia_gpu(
        cls, product_name: str, count: int = 1, *, topology: TopologyChoice = CATALOG_DEFAULT
    ) -> "AcceleratorSlice":
        """Whole NVIDIA GPUs of one product (the NVML name), e.g. ``NVIDIA A100-SXM4-40GB``."""
        return cls(
            "gpu.nvidia.com", "gpu.nvidia.com/productName", _named("product_name", product_name), count, topology
        )

    @classmethod
    def google_tpu(
        cls, tpu_gen: str, count: int = 1, *, topology: TopologyChoice = CATALOG_DEFAULT
    ) -> "AcceleratorSlice":
        """Every TPU chip of one host, of one generation as the driver publishes it: ``v6e``,
        ``v5p``, ``v5lite`` (v5e), ...

        `count` is the host's chip count (1, 4 or 8 on GKE's TPU machine types).  The selector
        also fixes the driver's ``chipCount`` (the chips of the device's host) to `count`, so
        the claim only lands on hosts of exactly that many chips and takes all of them: the
        TPU driver shares host state between every claim on a host and refuses a claim for
        part of one (README, "TPU hosts are not split"; DRA017)."""
        check_pin_value("tpu_gen", DEVICE_CLASSES["tpu.google.com"], _named("tpu_gen", tpu_gen))
        return cls("tpu.google.com", "tpu.google.com/tpuGen", tpu_gen, count, topology)

    @classmethod
    def amd_gpu(
        cls,
        partition_profile: str,
        count: int = 1,
        *,
        topology: TopologyChoice = CATALOG_DEFAULT,
    ) -> "AcceleratorSlice":
        """AMD GPU partitions (or, with ``spx_<nps>``, whole GPUs) of one profile, e.g. ``cpx_nps4``."""
        value = _named("partition_profile", partition_profile)
        check_pin_value("partition_profile", DEVICE_CLASSES["gpu.amd.com"], value)
        return cls("gpu.amd.com", "gpu.amd.com/partitionProfile", value, count, topology)


def scrub_unperformed(device_class: str) -> str:
    """Why ScrubBeforeUse is refused for a slice the scrubber does not scrub: it would declare
    an erasure nothing performs (DRA004 reports it on a template, whatever unscrubbed-classes says)."""
    others = " or ".join(policy for policy in SANITIZATION_POLICIES if policy != SCRUB_BEFORE_USE)
    return (
        f"sanitization: {SCRUB_BEFORE_USE} declares that the scrubber erases the devices before the pod's "
        f"containers run, and it cannot scrub those of {device_class} (it scrubs the GPUs and MIG instances of "
        f"NVIDIA's driver, {', '.join(sorted(SCRUBBED_DRIVERS))}), so no scrubber is emitted for them; declare "
        f"{others}, which the driver or a node agent must honour"
    )


#: What one value of a default alignment attribute stands for, for messages.
_ALIGNED_UNIT = {"gpu.nvidia.com/parentUUID": "GPU"}
#: The attribute AMD GPU partitions carry naming their GPU.
_AMD_PARENT = "gpu.amd.com/parentDeviceID"


def check_pin_value(field: str, known: DeviceClass, value: object) -> None:
    """Refuse a pin value the class's driver never publishes, naming what it does publish."""
    if not isinstance(value, str):
        raise ValueError(f"{field}: must be a string, got {describe(value)}")
    if known.pin_value_pattern is None or known.pin_value_pattern.fullmatch(value):
        return
    hint = known.pin_value_hints.get(value)
    if hint is not None:
        raise ValueError(
            f"{field}: the {known.name} driver never publishes {value!r} as {known.pin_attribute}; use {hint}"
        )
    examples = f" ({', '.join(known.known_pin_values)}, ...)" if known.known_pin_values else ""
    raise ValueError(f"{field}: {value!r} is not a {known.pin_attribute} the {known.name} driver publishes{examples}")


def _unpublished(known: DeviceClass, topology: str) -> str:
    """Why `topology` cannot align devices of `known`."""
    published = ", ".join(f"{attribute.name} ({attribute.published})" for attribute in known.topology)
    if not published:
        return (
            f"the {known.name} driver publishes no attribute to align devices on ({topology} never appears), "
            "so a matchAttribute on it never allocates; leave topology unset"
        )
    return (
        f"the {known.name} driver does not publish {topology}, so a matchAttribute on it never allocates; "
        f"it publishes {published}"
    )


def _named(field: str, value: object) -> str:
    # Re-check under the constructor's own argument name, so the message names it.
    return require_printable(field, value)


#: The longest StatefulSet name whose pods can be created (see WorkloadSpec).
STATEFULSET_NAME_MAX_LENGTH = 63 - len("-") - 10


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
    kubernetes_version: str
    runtime_config: Sequence[str] | None
    consumable_capacity: bool | None
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
    service_name: str | None
    scrub_image: str


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


def _require_namespace_given(why: str, namespace: str | None, hint: str) -> None:
    # The spec says the same without the hint; an entry point knows where a namespace comes from.
    if namespace is None and hint:
        raise ValueError(f"namespace: required: {why}; {hint}")


_NONE_BY_DEFAULT = ', none by default: pass runtime_config=["<that version>=true"] with it'


def _require_served(api_version: str, kubernetes_version: str, runtime_config: Sequence[str] | None) -> None:
    """Raise unless a `kubernetes_version` cluster with `runtime_config` serves `api_version`."""
    served = served_claim_api_versions(kubernetes_version, runtime_config)
    if api_version in served:
        return
    release = KUBERNETES_RELEASES[kubernetes_version]
    entry = f"{api_version}=true"
    if not runtime_config:
        message = (
            f"api_version: {api_version} is not served by a default Kubernetes {kubernetes_version} cluster; "
            f'pass runtime_config=["{entry}"] if your API server enables it (--runtime-config)'
        )
    else:
        message = (
            f"api_version: {api_version} is not served by a Kubernetes {kubernetes_version} cluster with "
            f"--runtime-config={','.join(runtime_config)} (it serves {', '.join(served) or 'no claim version'}); "
            f'add "{entry}" to runtime_config if your API server enables it'
        )
    if not release.dra_enabled_by_default:
        message += (
            f", and run the DynamicResourceAllocation feature gate (beta and off by default in {kubernetes_version})"
        )
    raise ValueError(message)


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
            "doc": "Namespace of the objects, required: the claim template's isolation tag binds it (a template "
            "without one would land wherever `kubectl apply -n` puts it). The cdk8s constructs default to the "
            "chart's namespace; the Pulumi components and the builder functions take it as an argument."
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
            "`resource.k8s.io/v1beta1` or `resource.k8s.io/v1alpha3`, one `kubernetes_version` has. A default cluster "
            "serves no beta or alpha: name the `runtime_config` that enables yours."
        },
    )
    kubernetes_version: str = field(
        default=DEFAULT_KUBERNETES_VERSION,
        metadata={
            "doc": f"The Kubernetes release the objects are for ({', '.join(KUBERNETES_VERSIONS)}): which "
            "`api_version`s exist, and whether each request carries the exclusivity guard "
            "`device.allowMultipleAllocations == false` (from 1.36, where DRAConsumableCapacity is on by default)."
        },
    )
    runtime_config: Sequence[str] | None = field(
        default=None,
        metadata={
            "doc": 'The entries of your kube-apiserver\'s `--runtime-config`, e.g. `["resource.k8s.io/v1beta2=true"]`: '
            "which `api_version`s the cluster serves. A default cluster serves `resource.k8s.io/v1` only (1.34 on; "
            "1.33 serves no version by default), so a beta or alpha `api_version` needs the entry that enables "
            "it. `None`: the flag is not set. It is read, never emitted."
        },
    )
    consumable_capacity: bool | None = field(
        default=None,
        metadata={
            "doc": "Whether the cluster runs the DRAConsumableCapacity feature gate; `None` follows "
            "`kubernetes_version` (off in 1.34 and 1.35, on from 1.36). `True` on 1.34/1.35 adds the guard; "
            "`False` leaves it out (it does not compile without the gate)."
        },
    )
    sanitization: str = field(
        default=DEFAULT_SANITIZATION,
        metadata={
            "doc": f"{', '.join(f'`{policy}`' for policy in SANITIZATION_POLICIES[:-1])} or "
            f"`{SANITIZATION_POLICIES[-1]}`, declared in `dra-guard.io/sanitization`. `{SCRUB_BEFORE_USE}` (the "
            "scrubber runs first in every pod) is refused for a slice the scrubber does not scrub; the others are "
            'promises for the driver or a node agent (README, "Memory erasure").'
        },
    )
    hmac_key: str | bytes | None = field(
        default=None,
        repr=False,  # a key never shows up in a log line or a traceback
        metadata={"doc": "Key for an HMAC-SHA256 isolation tag; `None` gives a plain SHA-256 tag."},
    )
    labels: Mapping[str, str] | None = field(
        default=None, metadata={"doc": "Extra labels for the template and the workload."}
    )

    #: Why a namespace is required, after "namespace: required: "; each spec says it its way.
    _WHY_NAMESPACE: ClassVar[str] = ""

    def _validate_shared(self) -> None:
        if self.namespace is None:
            raise ValueError(f"namespace: required: {self._WHY_NAMESPACE}")
        require_dns_label("namespace", self.namespace)
        if not isinstance(self.slice, AcceleratorSlice):
            raise ValueError(f"slice: must be an AcceleratorSlice, got {type(self.slice).__name__}")
        require_one_of("kubernetes_version", self.kubernetes_version, KUBERNETES_VERSIONS)
        release = KUBERNETES_RELEASES[self.kubernetes_version]
        require_api_version(self.api_version)
        if self.api_version not in release.claim_api_versions:
            raise ValueError(
                f"api_version: Kubernetes {self.kubernetes_version} does not serve ResourceClaimTemplates in "
                f"{self.api_version}; it serves {', '.join(release.claim_api_versions)}"
                + ("" if release.claim_api_versions_served_by_default else _NONE_BY_DEFAULT)
            )
        if self.runtime_config is not None:
            _set(self, "runtime_config", tuple(require_string_list("runtime_config", self.runtime_config)))
        _require_served(self.api_version, self.kubernetes_version, self.runtime_config)
        if self.consumable_capacity is not None and not isinstance(self.consumable_capacity, bool):
            raise ValueError(
                f"consumable_capacity: must be True, False or None, got {describe(self.consumable_capacity)}"
            )
        if self.consumable_capacity is not None and not release.consumable_capacity_exists:
            raise ValueError(
                f"consumable_capacity: Kubernetes {self.kubernetes_version} has no DRAConsumableCapacity gate "
                "(it came in 1.34); leave it None"
            )
        require_sanitization(self.sanitization)
        if self.sanitization == SCRUB_BEFORE_USE and not self.slice.scrubbed:
            raise ValueError(scrub_unperformed(self.slice.device_class))
        require_hmac_key(self.hmac_key)
        if self.labels is not None:
            _set(self, "labels", frozen_copy(require_labels("labels", self.labels)))
        if self.tenant is not None:
            require_dns_label("tenant", self.tenant)

    @property
    def exclusivity_guard(self) -> bool:
        """Whether each request carries `device.allowMultipleAllocations == false`: wherever it compiles."""
        return exclusivity_guard_compiles(KUBERNETES_RELEASES[self.kubernetes_version], self.consumable_capacity)


@dataclass(frozen=True, kw_only=True)
class ClaimSpec(_IsolationFields):
    """Everything about one isolated ResourceClaimTemplate, validated when it is made.

    A spec is frozen and holds read-only copies of its mappings and lists, so it is valid
    for as long as it exists; `dataclasses.replace()` validates again.
    """

    name: str = field(metadata={"doc": "The template's `metadata.name` (a DNS-1123 subdomain)."})

    _WHY_NAMESPACE: ClassVar[str] = (
        "the isolation tag binds the namespace the claim lands in, and a template without one lands wherever "
        "kubectl apply -n puts it"
    )

    def __post_init__(self) -> None:
        require_dns_subdomain("name", self.name)
        self._validate_shared()

    @classmethod
    def from_options(
        cls,
        entry_point: str,
        *,
        name: str,
        namespace: str | None,
        options: ClaimOptions,
        takes: Sequence[str] = (),
        namespace_hint: str = "",
    ) -> "ClaimSpec":
        """The spec for an entry point's keyword arguments; `takes` names its own parameters, and
        `namespace_hint` says where its namespace comes from, for the error when there is none."""
        _refuse_unknown_options(entry_point, options, (*takes, *CLAIM_OPTION_NAMES))
        _require_namespace_given(cls._WHY_NAMESPACE, namespace, namespace_hint)
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
            "doc": "`Deployment`, `StatefulSet` (with its headless Service, see `service_name`; its name "
            "leaves the 11 characters the controller's revision label adds: at most 52) or `Job`."
        },
    )
    container_name: str | None = field(
        default=None, metadata={"doc": "The container's name; `None` uses the workload's name."}
    )
    command: Sequence[str] | None = field(default=None, metadata={"doc": "The container's command, a list of strings."})
    args: Sequence[str] | None = field(default=None, metadata={"doc": "The container's args, a list of strings."})
    env: EnvInput | None = field(
        default=None,
        metadata={
            "doc": 'A `{"NAME": "value"}` mapping or a list of EnvVar mappings: `NVIDIA_VISIBLE_DEVICES` naming '
            "GPUs (anything but empty, `void` or `none`; or from `valueFrom`) is refused, the claim is the request."
        },
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
    service_name: str | None = field(
        default=None,
        metadata={
            "doc": "StatefulSet only: the governing Service. `None` emits a headless Service named after the "
            "workload (as cdk8s-plus does); a name points `serviceName` at a Service you bring, and none is emitted."
        },
    )
    scrub_image: str = field(
        default=DEFAULT_SCRUB_IMAGE,
        metadata={
            "doc": "Image of the scrubber each pod runs as its first init container, holding the claim, before any "
            "other container (`dra-guard scrub`: device memory read, zeroed and verified), pinned by tag or digest. "
            f"Emitted for a slice of a class it scrubs: {', '.join(sorted(SCRUBBED_CLASSES))}, or a class the "
            f"catalog does not know whose driver (the pin attribute's domain) is {', '.join(sorted(SCRUBBED_DRIVERS))}"
            " (`check` and admission decide that class by its selectors: its devices' type must be gpu or mig); "
            'for any other, vfio.gpu.nvidia.com included, no scrubber is emitted (README, "Memory erasure").'
        },
    )

    _WHY_NAMESPACE: ClassVar[str] = (
        "a workload shares its claim template's namespace, which the template's isolation tag binds, and "
        "objects without one land wherever kubectl apply -n puts them"
    )

    def __post_init__(self) -> None:
        require_dns_label("name", self.name)
        self._validate_shared()
        require_workload_kind(self.workload_kind)
        require_int32_count("replicas", self.replicas)
        if self.workload_kind == "StatefulSet":
            self._validate_stateful_set_names()
        elif self.service_name is not None:
            raise ValueError(f"service_name: only a StatefulSet has a governing Service, not a {self.workload_kind}")
        require_image(self.image)
        require_scrub_image(self.scrub_image)
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

    def _validate_stateful_set_names(self) -> None:
        # The StatefulSet controller labels each pod `controller-revision-hash: <name>-<hash>`
        # with a hash of up to 10 characters, and label values may have 63
        # (kubernetes/kubernetes pkg/controller/history/controller_history.go
        # ControllerRevisionName / HashControllerRevision; issue #64023): a longer name is
        # accepted by the API server, but no pod is ever created.
        if len(self.name) > STATEFULSET_NAME_MAX_LENGTH:
            raise ValueError(
                f"name: a StatefulSet name may have at most {STATEFULSET_NAME_MAX_LENGTH} characters (its pods get "
                f"the label controller-revision-hash: <name>-<10-character hash>, at most 63), got "
                f"{self.name!r} ({len(self.name)})"
            )
        if self.service_name is None:
            # The headless Service we emit takes the workload's name; Service names are DNS-1035 labels.
            require_dns1035_label("name (also the name of the StatefulSet's headless Service)", self.name)
        else:
            require_dns1035_label("service_name", self.service_name)

    @classmethod
    def from_options(
        cls,
        entry_point: str,
        *,
        name: str,
        namespace: str | None,
        options: WorkloadOptions,
        takes: Sequence[str] = (),
        namespace_hint: str = "",
    ) -> "WorkloadSpec":
        """The spec for an entry point's keyword arguments; `takes` names its own parameters, and
        `namespace_hint` says where its namespace comes from, for the error when there is none."""
        _refuse_unknown_options(entry_point, options, (*takes, *WORKLOAD_OPTION_NAMES))
        _require_namespace_given(cls._WHY_NAMESPACE, namespace, namespace_hint)
        return cls(name=name, namespace=namespace, **options)

    @property
    def claim(self) -> ClaimSpec:
        """The spec of this workload's claim template, named `<name>-accelerator`."""
        shared = {spec_field.name: getattr(self, spec_field.name) for spec_field in fields(_IsolationFields)}
        return ClaimSpec(**{**shared, "name": claim_template_name(self.name)})


#: The keyword arguments of each kind of entry point, in declaration order.
CLAIM_OPTION_NAMES: tuple[str, ...] = tuple(ClaimOptions.__annotations__)
WORKLOAD_OPTION_NAMES: tuple[str, ...] = tuple(WorkloadOptions.__annotations__)
