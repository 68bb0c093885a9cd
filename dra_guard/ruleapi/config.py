"""Configuration: `[tool.dra-guard]` in pyproject.toml, `.dra-guard.yaml`, enforce() and the
Pulumi pack's policy config, all read by one parser.

The accepted keys are the options the registry knows: those declared here (shared by
several rules, or about rule selection) and those each rule module declares for itself.
Unknown keys are errors, so a misspelt `disabel` never silently turns nothing off.  This
module does not import the rules: callers hand the registry in as an `OptionCatalog`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from types import MappingProxyType
from typing import Any, Protocol, TypeVar, cast

from dra_guard.contract.catalog import (
    ATTRIBUTE_DOMAIN_MAX_LENGTH,
    ATTRIBUTE_NAME_PATTERN,
    DEFAULT_KUBERNETES_VERSION,
    DEVICE_CLASSES,
    KUBERNETES_RELEASES,
    KUBERNETES_VERSIONS,
    DeviceClass,
    KubernetesRelease,
    TopologyAttribute,
    exclusivity_guard_compiles,
)
from dra_guard.contract.catalog import (
    NON_ACCELERATOR_CLASSES as KNOWN_NON_ACCELERATOR_CLASSES,
)
from dra_guard.ruleapi.options import (
    OPTIONAL_FLAG,
    RULE_IDS,
    STRING_LIST,
    STRING_SET,
    WAIVER_LIST,
    ConfigError,
    ConfiguredWaiver,
    OneOf,
    Option,
    OptionType,
    ParseContext,
    PositiveInteger,
    ReadManifests,
    StringMap,
)

__all__ = [
    "CONFIG_FILE_NAMES",
    "CORE_OPTIONS",
    "EXCLUDE",
    "FAIL_ON",
    "MAX_FILE_BYTES",
    "Config",
    "ConfigError",
    "OptionCatalog",
    "parse_config",
    "parse_policy_config",
]

T = TypeVar("T")
CONFIG_FILE_NAMES = (".dra-guard.yaml", ".dra-guard.yml", "pyproject.toml")


class DeviceClassMap(OptionType[Mapping[str, DeviceClass]]):
    """Device classes the catalog does not know, each with the attribute that pins a profile."""

    description = "mapping of device class name to {pin-attribute, topology-attribute, selector}"
    _KEYS = ("pin-attribute", "topology-attribute", "selector")

    def parse(self, key: str, value: object, context: ParseContext) -> Mapping[str, DeviceClass]:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{key}: must map device class names to {{pin-attribute, topology-attribute, selector}}")
        classes = {}
        for name, spec in value.items():
            if not isinstance(spec, Mapping) or not isinstance(spec.get("pin-attribute"), str):
                raise ConfigError(f"{key}.{name}: needs pin-attribute: '<driver domain>/<attribute>'")
            unknown = sorted(set(spec) - set(self._KEYS))
            if unknown:
                raise ConfigError(f"{key}.{name}: unknown key {', '.join(unknown)}")
            domain, attribute = _qualified(f"{key}.{name}.pin-attribute", spec["pin-attribute"])
            selector = _selector(f"{key}.{name}.selector", spec.get("selector"))
            topology = spec.get("topology-attribute")
            if topology is None:
                classes[str(name)] = DeviceClass(str(name), domain, attribute, class_selector=selector)
                continue
            _qualified(f"{key}.{name}.topology-attribute", topology)
            # Declared by the user: every device of this class publishes it, so it is asked for.
            aligned_on = TopologyAttribute(topology, "always", "declared in the configuration")
            classes[str(name)] = DeviceClass(
                str(name),
                domain,
                attribute,
                topology=(aligned_on,),
                default_alignment=topology,
                class_selector=selector,
            )
        return MappingProxyType(classes)

    def json_schema(self) -> dict[str, Any]:
        attribute = {"type": "string", "pattern": "^[^/]+/.+$"}
        properties: dict[str, Any] = {key: attribute for key in self._KEYS[:2]}
        properties["selector"] = {"type": "string", "minLength": 1}
        return {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": properties,
                "required": ["pin-attribute"],
                "additionalProperties": False,
            },
        }

    def to_json(self, value: object) -> Any:
        if not isinstance(value, Mapping):
            return value
        written: dict[str, dict[str, str]] = {}
        for name, item in sorted(value.items()):
            written[name] = {"pin-attribute": item.qualified_pin_attribute}
            if item.default_alignment is not None:
                written[name]["topology-attribute"] = item.default_alignment
            if item.class_selector:
                written[name]["selector"] = item.class_selector
        return written


def _selector(key: str, value: object) -> str:
    """A DeviceClass's CEL selector as the configuration gives it ("" when it gives none)."""
    if value is None:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{key}: must be the CEL expression of the class's selector")
    from dra_guard.model.selectors import analyse  # the CEL parser: only when a selector is configured

    problem = analyse(value).error
    if problem is not None:
        raise ConfigError(f"{key}: not valid CEL ({problem})")
    return value


def _qualified(key: str, value: object) -> tuple[str, str]:
    """`<domain>/<name>` as the DRA API allows it in an attribute name, split."""
    domain, slash, name = value.partition("/") if isinstance(value, str) else ("", "", "")
    if not slash or not domain or not name:
        raise ConfigError(f"{key}: must be qualified as '<driver domain>/<attribute>'")
    if len(domain) > ATTRIBUTE_DOMAIN_MAX_LENGTH:
        raise ConfigError(f"{key}: the domain {domain!r} is longer than {ATTRIBUTE_DOMAIN_MAX_LENGTH} characters")
    if not ATTRIBUTE_NAME_PATTERN.fullmatch(name):
        raise ConfigError(f"{key}: {name!r} is not a DRA attribute name (a C identifier, at most 32 characters)")
    return domain, name


# --- the options several rules share (each rule module declares its own) -------------

ENABLE: Option[frozenset[str] | None] = Option(
    key="enable",
    type=RULE_IDS,
    default=None,
    doc="Run only these rules.",
    default_doc="every rule",
    selects_rules=True,
)
DISABLE = Option(key="disable", type=RULE_IDS, default=frozenset(), doc="Do not run these rules.", selects_rules=True)
NON_WAIVABLE: Option[frozenset[str] | None] = Option(
    key="non-waivable",
    type=RULE_IDS,
    default=None,
    doc="Rules whose findings neither an ignore annotation nor a `waivers` entry can waive; an empty list makes "
    "every rule waivable.",
    default_doc="the rules marked not waivable",
)
WAIVERS: Option[tuple[ConfiguredWaiver, ...]] = Option(
    key="waivers",
    type=WAIVER_LIST,
    default=(),
    doc="Waivers for objects nobody can annotate (a third-party chart's): each entry waives the findings of "
    "`rule` (an ID or name) on the objects whose `kind`, `namespace` and `name` match its fnmatch globs "
    '(a glob left out matches everything; an object without a namespace has the namespace ""), for a '
    "`reason` (required), with an optional `owner` and `expires` date (YYYY-MM-DD, the last day it waives, UTC). "
    "Reported as waived like an annotation's waiver; rules that cannot be waived (`non-waivable`) are not, "
    "and an expired entry waives nothing: its findings are reported, with a note.",
    default_doc="none",
)
NON_ACCELERATOR_CLASSES = Option(
    key="non-accelerator-classes",
    type=STRING_SET,
    default=frozenset(),
    doc="Device classes that are not accelerators (NICs, ...): their requests are not checked. "
    f"Added to those dra-guard knows ({', '.join(sorted(KNOWN_NON_ACCELERATOR_CLASSES))}). "
    "Every other class counts as an accelerator, including classes dra-guard does not know (fail closed).",
)
EXTRA_CLASSES: Option[Mapping[str, DeviceClass]] = Option(
    key="extra-classes",
    type=DeviceClassMap(),
    default=MappingProxyType({}),
    doc="Device classes dra-guard does not know, with the attribute that pins a profile "
    "(`<driver domain>/<attribute>`) and, optionally, an attribute every device of the class publishes "
    "that several devices of one claim must share (a matchAttribute on it is then required; "
    "without one, no alignment is asked for), and the CEL `selector` of the class as your cluster defines "
    "it: a pin there (NVIDIA's per-profile class mig-1g-12gb.gpu.nvidia.com pins profile == '1g.12gb') "
    "pins every request of the class, and `check --slices` evaluates it before the request's selectors; "
    "the sanitization rules count a class as scrubbed only where it fixes device.driver == 'gpu.nvidia.com' and "
    "device.attributes['gpu.nvidia.com'].type == 'gpu' or 'mig' (README, \"Memory erasure\").",
)
KUBERNETES_VERSION = Option(
    key="kubernetes-version",
    type=OneOf(KUBERNETES_VERSIONS, "Kubernetes minor version"),
    default=DEFAULT_KUBERNETES_VERSION,
    doc="The Kubernetes release the manifests are for: which resource.k8s.io versions, fields and CEL "
    "variables exist, whether the exclusivity guard `device.allowMultipleAllocations == false` is required, "
    "and which namespace label allows adminAccess.",
)
CONSUMABLE_CAPACITY = Option(
    key="consumable-capacity",
    type=OPTIONAL_FLAG,
    default=None,
    doc="Whether the cluster runs the DRAConsumableCapacity feature gate; unset follows the release's "
    "default (off in 1.34 and 1.35, on from 1.36). Set true on 1.34/1.35 clusters that turn it on: "
    "the exclusivity guard then compiles there and is required.",
    default_doc="the release's default",
)
EXCLUDE: Option[tuple[str, ...]] = Option(
    key="exclude",
    type=STRING_LIST,
    default=(),
    doc="Paths `dra-guard check` leaves out of directory walks, as .gitignore patterns relative to "
    "the configuration file's directory (`charts/legacy/`, `*.generated.yaml`). Files named on the "
    "command line are still checked.",
    default_doc="nothing",
    selects_files=True,
)
MAX_FILE_BYTES: Option[int] = Option(
    key="max-file-bytes",
    type=PositiveInteger("positive integer (bytes)"),
    default=64 * 1024 * 1024,
    doc="The most bytes `dra-guard check` and `dra-guard migrate` read from one input file (or from standard "
    "input): a larger one is an input error naming its size, not read. `check` reads an input of more than 8 MiB "
    "a piece at a time, so its memory follows the largest document, not this cap.",
    default_doc="64 MiB (67108864)",
    selects_files=True,
)
EXTENDED_RESOURCE_CLASSES: Option[Mapping[str, str]] = Option(
    key="extended-resource-classes",
    type=StringMap("mapping of extended resource name to device class name"),
    default=MappingProxyType({}),
    doc="Extended resources your cluster's DeviceClasses map with spec.extendedResourceName, each to its class "
    "(e.g. example.com/gpu: gpu.nvidia.com): a request for the name is DRA's implicit claim on the class, and "
    "is reported like nvidia.com/gpu. DeviceClasses among the checked objects are read too.",
)
#: The users that write ResourceClaims for pods in a default cluster (kubernetes/kubernetes
#: @ 3de376ecf6955ccd1b2ae31ffb310ae082b11cb1 pkg/controller/resourceclaim/controller.go;
#: @ 16913111deb1a4c4ff76f4ba7ffd9ebef397a303
#: pkg/scheduler/framework/plugins/dynamicresources/extendeddynamicresources.go): the
#: resource-claim controller (its own service account under kube-controller-manager's
#: --use-service-account-credentials, else kube-controller-manager's user) and the
#: kube-scheduler (KEP-5004 extended-resource claims, and the finalizer it adds on allocation).
CLAIM_WRITERS = (
    "system:serviceaccount:kube-system:resource-claim-controller",
    "system:kube-controller-manager",
    "system:kube-scheduler",
)
ADMISSION_CLAIM_WRITERS: Option[tuple[str, ...]] = Option(
    key="admission-claim-writers",
    type=STRING_LIST,
    default=CLAIM_WRITERS,
    doc="Usernames (`request.userInfo.username`) whose creates and updates of ResourceClaims the admission "
    "policies and the webhook do not check: the control-plane components that write claims for pods (from a "
    "ResourceClaimTemplate, which admission checks instead, or for DRA-backed extended resources). Set it where "
    "a managed cluster's controllers run under other names; `[]` checks every writer. Read by "
    "`dra-guard admission-policy`, the AdmissionGuard constructs and `dra-guard webhook` only.",
)
#: The users that write the objects Kubernetes' workload controllers make: each controller's
#: service account in kube-system under kube-controller-manager's
#: --use-service-account-credentials (kubernetes/kubernetes @
#: a9de9a3d078789487723bb90b83f66a9c303f397
#: plugin/pkg/auth/authorizer/rbac/bootstrappolicy/controller_policy.go: `addControllerRole`
#: binds `system:controller:<name>` to service account kube-system/<name>), else
#: kube-controller-manager's user.
WORKLOAD_CONTROLLERS = (
    "system:serviceaccount:kube-system:deployment-controller",
    "system:serviceaccount:kube-system:replicaset-controller",
    "system:serviceaccount:kube-system:statefulset-controller",
    "system:serviceaccount:kube-system:daemon-set-controller",
    "system:serviceaccount:kube-system:job-controller",
    "system:serviceaccount:kube-system:cronjob-controller",
    "system:serviceaccount:kube-system:replication-controller",
    "system:kube-controller-manager",
)
ADMISSION_WORKLOAD_CONTROLLERS: Option[tuple[str, ...]] = Option(
    key="admission-workload-controllers",
    type=STRING_LIST,
    default=WORKLOAD_CONTROLLERS,
    doc="Usernames (`request.userInfo.username`) whose creates and updates the webhook trusts to carry the "
    "controller owner reference Kubernetes' workload controllers write: only their Pods, ReplicaSets and Jobs "
    'are also matched, as the controllers that made them, by `waivers` entries (README "Configuration and '
    "waivers\"); anyone else's are matched by their own kind and name only. Set it where a managed cluster's "
    "controllers run under other names; `[]` trusts nobody. Read by `dra-guard webhook` only.",
)
#: What `--fail-on` takes, in the configuration too: a severity, or `never`.
FAIL_ON_CHOICES = ("critical", "high", "medium", "low", "never")
FAIL_ON: Option[str] = Option(
    key="fail-on",
    type=OneOf(FAIL_ON_CHOICES, "severity or never"),
    default="medium",
    doc="`dra-guard check` exits 1 when a finding that is neither waived nor baselined is at or above this "
    "severity; `never` only reports (input errors still exit 2). `--fail-on` and `--exit-zero` win over it. "
    "enforce() and `dra-guard webhook` take their own fail_on and --fail-on.",
    cli_only=True,
)
CORE_OPTIONS: tuple[Option[Any], ...] = (
    ENABLE,
    DISABLE,
    NON_WAIVABLE,
    WAIVERS,
    NON_ACCELERATOR_CLASSES,
    EXTRA_CLASSES,
    KUBERNETES_VERSION,
    CONSUMABLE_CAPACITY,
    EXCLUDE,
    MAX_FILE_BYTES,
    EXTENDED_RESOURCE_CLASSES,
    ADMISSION_CLAIM_WRITERS,
    ADMISSION_WORKLOAD_CONTROLLERS,
    FAIL_ON,
)


class OptionCatalog(Protocol):
    """What the parser needs from the rule registry."""

    @property
    def options(self) -> Mapping[str, Option[Any]]:
        """Every option by its kebab-case key: CORE_OPTIONS, then each rule's."""

    @property
    def rule_ids(self) -> Sequence[str]: ...

    @property
    def rule_names(self) -> Mapping[str, str]:
        """Each rule's name, to its ID."""


@dataclass(frozen=True)
class Config:
    """Parsed option values by key; an option that was not set reads as its default."""

    values: Mapping[str, object] = field(default_factory=dict)
    #: Where the values came from, for messages.
    source: str | None = None
    #: The day waivers' expiry dates are compared with (None: today in UTC, when a check
    #: starts).  Not an option: front ends set it (the CLI from DRA_GUARD_TODAY), tests too.
    today: date | None = None

    def get(self, option: Option[T]) -> T:
        if option.key in self.values:
            return cast(T, self.values[option.key])
        return option.default

    def with_value(self, option: Option[T], value: T) -> Config:
        return replace(self, values={**self.values, option.key: value})

    def rule_enabled(self, rule_id: str) -> bool:
        enabled = self.get(ENABLE)
        return (enabled is None or rule_id in enabled) and rule_id not in self.get(DISABLE)

    def device_class(self, name: str) -> DeviceClass | None:
        return self.get(EXTRA_CLASSES).get(name) or DEVICE_CLASSES.get(name)

    def extended_resource_class(self, name: str) -> str | None:
        """The device class the configuration maps the extended resource `name` to."""
        return self.get(EXTENDED_RESOURCE_CLASSES).get(name)

    def is_accelerator(self, device_class: str) -> bool:
        # Fail closed: a class nobody told us about is an accelerator.
        return device_class not in KNOWN_NON_ACCELERATOR_CLASSES and device_class not in self.get(
            NON_ACCELERATOR_CLASSES
        )

    @property
    def kubernetes_release(self) -> KubernetesRelease:
        """The target release (`kubernetes-version`)."""
        return KUBERNETES_RELEASES[self.get(KUBERNETES_VERSION)]

    @property
    def exclusivity_guard_compiles(self) -> bool:
        """Whether the target's CEL environment has `device.allowMultipleAllocations`."""
        return exclusivity_guard_compiles(self.kubernetes_release, self.get(CONSUMABLE_CAPACITY))


def parse_config(
    values: object,
    catalog: OptionCatalog,
    source: str = "config",
    *,
    environ: Mapping[str, str | bytes] = os.environ,
    directory: str | None = None,
    read_manifests: ReadManifests | None = None,
) -> Config:
    """Options as written in a configuration file: kebab-case keys; relative paths in them
    are relative to `directory` (the file's folder), or to the working directory.  Files an
    option names are read with `read_manifests` (the reading layer's `parse_config` gives it;
    without it such an option is an error)."""
    spelt = {option.key: option for option in catalog.options.values()}
    context = ParseContext(catalog.rule_ids, environ, directory, read_manifests, catalog.rule_names)
    return _parse(values, spelt, source, context)


def parse_policy_config(
    values: object,
    catalog: OptionCatalog,
    source: str,
    *,
    environ: Mapping[str, str | bytes] = os.environ,
    read_manifests: ReadManifests | None = None,
) -> Config:
    """A Pulumi policy's config: camelCase keys, no rule selection (enforcement levels do
    that) and no file selection (the pack reads no files to check)."""
    spelt = {option.camel_key: option for option in catalog.options.values() if policy_option(option)}
    context = ParseContext(catalog.rule_ids, environ, read_manifests=read_manifests, rule_names=catalog.rule_names)
    return _parse(values, spelt, source, context)


def policy_option(option: Option[Any]) -> bool:
    """Whether the Pulumi pack takes this option."""
    return not option.selects_rules and not option.selects_files and not option.cli_only


def _parse(values: object, spelt: Mapping[str, Option[Any]], source: str, context: ParseContext) -> Config:
    if not isinstance(values, Mapping):
        raise ConfigError(f"{source}: must be a mapping of options")
    parsed: dict[str, object] = {}
    for key, value in values.items():
        option = spelt.get(key)
        if option is None:
            raise ConfigError(f"{source}: unknown option {key!r}; known options: {', '.join(spelt)}")
        try:
            parsed[option.key] = option.parse(key, value, context)
        except ConfigError as error:
            raise ConfigError(f"{source}: {error}") from None
    version = parsed.get(KUBERNETES_VERSION.key, KUBERNETES_VERSION.default)
    if parsed.get(CONSUMABLE_CAPACITY.key) is True and not KUBERNETES_RELEASES[str(version)].consumable_capacity_exists:
        raise ConfigError(
            f"{source}: consumable-capacity: Kubernetes {version} has no DRAConsumableCapacity gate (it came in 1.34)"
        )
    return Config(parsed, source)
