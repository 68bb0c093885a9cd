"""In-cluster enforcement as one list of objects: the policies, and optionally the webhook
running in the cluster.

`AdmissionGuardSpec` holds every argument of `dra-guard admission-policy`,
`constructs_dra.AdmissionGuard` and `pulumi_dra.AdmissionGuard` once, with its default and
its validation; `WebhookDeployment` the settings of the in-cluster webhook. From a spec,
`admission_guard_objects()` returns plain dicts in the order they can be applied; the
front ends only adapt them, so the CLI, cdk8s and Pulumi deploy identical objects
(docs/admission.md).

Every check raises ``ValueError`` whose message starts with the argument at fault
(`webhook.image: ...`), so the error reads the same from cdk8s, Pulumi or the CLI, which
names its flag instead.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, TypedDict

import yaml

from dra_guard.admission.policy import (
    ENFORCEMENTS,
    MANAGED_BY,
    WEBHOOK_FAILURE_POLICIES,
    WEBHOOK_NAMESPACE_MODES,
    WEBHOOK_OPT_IN_LABEL,
    admission_objects,
    webhook_configuration,
)
from dra_guard.admission.serving import MEMORY_LIMIT_MIB, PROBE_PORT
from dra_guard.contract.catalog import KUBERNETES_VERSIONS
from dra_guard.contract.served import template_api_version
from dra_guard.contract.validators import (
    DNS1035_LABEL,
    describe,
    require_dns_label,
    require_dns_subdomain,
    require_labels,
    require_one_of,
    require_positive_int,
    require_printable,
    require_runtime_config,
    require_string_list,
)
from dra_guard.read.config_file import parse_config
from dra_guard.ruleapi.admission_form import AdmissionTarget
from dra_guard.ruleapi.config import ADMISSION_CLAIM_WRITERS, KUBERNETES_VERSION, Config
from dra_guard.ruleapi.options import EnvSecret
from dra_guard.rules import RULES, Registry

# --- the in-cluster webhook's shape ---------------------------------------------------

#: The webhook's port in the pod, and the Service's port the API server calls.
CONTAINER_PORT = 8443
#: Where the kubelet probes /healthz and /readyz (plain HTTP, answered when reviews are at their cap).
PROBE_CONTAINER_PORT = PROBE_PORT
#: The container's memory limit reaches the webhook through the Downward API (in MiB),
#: and sizes its connection and review caps (dra_guard.admission.serving).
MEMORY_LIMIT_ENV = "DRA_GUARD_MEMORY_LIMIT_MIB"
SERVICE_PORT = 443
VALIDATE_PATH = "/validate"
TLS_MOUNT = "/etc/dra-guard/tls"
CONFIG_MOUNT = "/etc/dra-guard/config"
CONFIG_FILE = "dra-guard.yaml"
HMAC_MOUNT = "/etc/dra-guard/hmac"
#: The key, inside the user's HMAC Secret, that holds the isolation-tag key.
HMAC_SECRET_KEY = "hmac-key"
#: A fixed non-root user (distroless' "nonroot"), so `runAsNonRoot` holds for any image,
#: and the group that the mounted Secrets are readable by.
RUN_AS = 65532
#: The configuration option naming the HMAC key (`dra-guard webhook` sets it the same way).
HMAC_KEY_OPTION = "hmac-key-env"
#: Changes with the webhook's configuration, so a new ConfigMap rolls the pods.
CONFIG_DIGEST_ANNOTATION = "dra-guard.io/config-sha256"
#: The longest object-name suffix the prefix gets ("<prefix>-webhook-config").
_LONGEST_SUFFIX = "-webhook-config"

_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.\d+)?")
_LABEL = re.compile(r"([^=\s]+)=([^=\s]*)")
#: What a CA bundle holds (WebhookDeployment's, `admission-policy --ca-bundle`'s).
PEM_CERTIFICATE = b"-----BEGIN CERTIFICATE-----"


def _require_secret_name(name: str, value: object) -> str:
    """The name of a Secret: a DNS-1123 subdomain (said in the Secret's terms)."""
    try:
        return require_dns_subdomain(name, value)
    except ValueError:
        raise ValueError(
            f"{name}: must be the name of a Secret (a DNS-1123 subdomain), got {describe(value)}"
        ) from None


def parse_kubernetes_version(text: object) -> str | None:
    """`"1.36"` (or `v1.36.2`) -> `"1.36"`, a release dra-guard knows; None stays None (the config's)."""
    if text is None:
        return None
    match = _VERSION.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"kubernetes_version: {text!r} is not a version such as 1.36")
    version = f"{match.group(1)}.{match.group(2)}"
    if version not in KUBERNETES_VERSIONS:
        raise ValueError(
            f"kubernetes_version: {version} is not a release dra-guard knows ({', '.join(KUBERNETES_VERSIONS)})"
        )
    return version


def parse_namespace_label(text: object, name: str = "admin_namespace_label") -> tuple[str, str] | None:
    """`"KEY=VALUE"` -> (KEY, VALUE); None stays None. Messages start with `name`."""
    if text is None:
        return None
    match = _LABEL.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"{name}: {text!r} is not KEY=VALUE")
    return match.group(1), match.group(2)


def parse_opt_in_label(text: object) -> tuple[str, str]:
    """The webhook's opt-in namespace label, `"KEY=VALUE"`, checked as a Kubernetes label."""
    label = parse_namespace_label(text, "namespace_label")
    if label is None:
        raise ValueError("namespace_label: must be KEY=VALUE, got None")
    require_labels("namespace_label", dict([label]))
    return label


def parse_claim_writers(value: object) -> tuple[str, ...] | None:
    """Usernames, as `claim_writers` takes them; None stays None (the configuration's)."""
    if value is None:
        return None
    names = require_string_list("claim_writers", value)
    for index, name in enumerate(names):
        require_printable(f"claim_writers[{index}]", name)
    return tuple(names)


# --- the arguments, once --------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class WebhookDeployment:
    """How `dra-guard webhook` runs in the cluster: image, namespace, certificates, key.

    dra-guard publishes no image: `image` is one you build with `dra-guard[webhook]`
    installed and `dra-guard` on its PATH (docs/admission.md).
    """

    image: str = field(metadata={"doc": "A container image with `dra-guard[webhook]` installed (none is published)."})
    namespace: str = field(metadata={"doc": "An existing namespace to run the webhook in; the webhook skips it."})
    tls_secret: str = field(
        metadata={"doc": "A `kubernetes.io/tls` Secret in `namespace`, for `<prefix>-webhook.<namespace>.svc`."}
    )
    ca_bundle: str | bytes = field(
        repr=False, metadata={"doc": "The PEM certificate of the CA that signed the serving certificate."}
    )
    hmac_key_secret: str | None = field(
        default=None,
        metadata={
            "doc": f"A Secret in `namespace` whose `{HMAC_SECRET_KEY}` holds the isolation-tag key; the "
            "webhook verifies HMAC tags with it and the policies then require HMAC tags."
        },
    )
    replicas: int = field(default=2, metadata={"doc": "Webhook pods; a PodDisruptionBudget keeps all but one up."})
    namespaces: str = field(
        default="all",
        metadata={
            "doc": "Which namespaces' objects the API server sends the webhook: `all` (but kube-system and "
            "the webhook's own) or `opt-in`, only those labelled `namespace_label` (never those two either)."
        },
    )
    namespace_label: str = field(
        default="=".join(WEBHOOK_OPT_IN_LABEL),
        metadata={"doc": '`KEY=VALUE`: the label that opts a tenant namespace in, with `namespaces="opt-in"`.'},
    )
    failure_policy: str = field(
        default="Fail",
        metadata={
            "doc": "When the API server gets no answer from the webhook: `Fail` refuses the request, "
            "`Ignore` admits it unreviewed by the webhook (the policies still apply); docs/admission.md."
        },
    )
    runtime_config: Sequence[str] | None = field(
        default=None,
        metadata={
            "doc": 'Your kube-apiserver\'s `--runtime-config` entries, e.g. `["resource.k8s.io/v1beta2=true"]`: '
            "the webhook reads claim templates in the newest resource.k8s.io version the cluster then serves. "
            "Needed for Kubernetes 1.33, which serves none by default."
        },
    )

    def __post_init__(self) -> None:
        if not isinstance(self.image, str) or not self.image.strip() or any(c.isspace() for c in self.image):
            raise ValueError(
                f"image: must be a container image reference (dra-guard publishes none; build one with "
                f"dra-guard[webhook] installed), got {describe(self.image)}"
            )
        require_dns_label("namespace", self.namespace)
        _require_secret_name("tls_secret", self.tls_secret)
        if self.hmac_key_secret is not None:
            _require_secret_name("hmac_key_secret", self.hmac_key_secret)
        require_positive_int("replicas", self.replicas)
        require_one_of("namespaces", self.namespaces, WEBHOOK_NAMESPACE_MODES)
        parse_opt_in_label(self.namespace_label)
        require_one_of("failure_policy", self.failure_policy, WEBHOOK_FAILURE_POLICIES)
        if self.runtime_config is not None:
            entries = tuple(require_string_list("runtime_config", self.runtime_config))
            require_runtime_config(entries)
            object.__setattr__(self, "runtime_config", entries)
        # A file name here is the likely mistake: say what is wanted instead of encoding it.
        if not isinstance(self.ca_bundle, (str, bytes)) or PEM_CERTIFICATE not in self.ca_pem:
            shown = self.ca_bundle if isinstance(self.ca_bundle, str) and len(self.ca_bundle) < 80 else "..."
            raise ValueError(
                "ca_bundle: must be the PEM text of the CA certificate (-----BEGIN CERTIFICATE-----...), "
                f"not a file name or other value; got {shown!r}"
            )

    @property
    def opt_in_label(self) -> tuple[str, str]:
        """`namespace_label`, parsed."""
        return parse_opt_in_label(self.namespace_label)

    @property
    def ca_pem(self) -> bytes:
        """`ca_bundle` as bytes."""
        return self.ca_bundle.encode("utf-8") if isinstance(self.ca_bundle, str) else bytes(self.ca_bundle)

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any]) -> WebhookDeployment:
        """The settings as a mapping (`{"image": ..., ...}`); messages name `webhook.<setting>`."""
        _refuse_unknown("webhook", "WebhookDeployment", settings, WEBHOOK_SETTING_NAMES)
        missing = [spec.name for spec in fields(cls) if _required(spec) and spec.name not in settings]
        if missing:
            raise ValueError(f"webhook: needs {', '.join(missing)}")
        try:
            return cls(**settings)
        except ValueError as error:
            raise ValueError(f"webhook.{error}") from None


class AdmissionGuardOptions(TypedDict, total=False):
    """Keyword arguments of both `AdmissionGuard`s: see `AdmissionGuardSpec`."""

    enforcement: str
    kubernetes_version: str
    admin_namespace_label: str | None
    name_prefix: str
    config: Config | Mapping[str, Any] | None
    claim_writers: Sequence[str] | None
    webhook: WebhookDeployment | Mapping[str, Any] | None


@dataclass(frozen=True, kw_only=True)
class AdmissionGuardSpec:
    """Everything about one installation of in-cluster enforcement, validated when made."""

    enforcement: str = field(
        default="Deny",
        metadata={"doc": "What the bindings do with a violation: `Deny`, `Warn` or `Audit`."},
    )
    kubernetes_version: str | None = field(
        default=None,
        metadata={
            "doc": "The cluster's release (`1.33` ... `1.37`); some rules' CEL depends on it. "
            "Default: the configuration's `kubernetes-version` (1.36 unless set)."
        },
    )
    admin_namespace_label: str | None = field(
        default=None,
        metadata={"doc": "`KEY=VALUE`: namespaces with this label may use adminAccess, like admin-namespaces."},
    )
    name_prefix: str = field(
        default="dra-guard",
        metadata={"doc": "Prefix of every object's name: `<prefix>-dra0NN-<rule>`, `<prefix>-webhook`."},
    )
    config: Config | Mapping[str, Any] | None = field(
        default=None,
        metadata={"doc": "A `Config`, or the options as `.dra-guard.yaml` writes them; compiled into the policies."},
    )
    claim_writers: Sequence[str] | None = field(
        default=None,
        metadata={
            "doc": "Usernames whose writes of ResourceClaims the policies and the webhook do not check (the "
            "control plane's, which create pods' claims). Default: the configuration's `admission-claim-writers` "
            "(the resource-claim controller, kube-controller-manager, kube-scheduler)."
        },
    )
    webhook: WebhookDeployment | Mapping[str, Any] | None = field(
        default=None,
        metadata={"doc": "A `WebhookDeployment` (or its settings as a mapping) to run the webhook in the cluster."},
    )
    #: The configuration, parsed.
    parsed_config: Config = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.enforcement not in ENFORCEMENTS:
            raise ValueError(f"enforcement: must be one of {', '.join(ENFORCEMENTS)}, got {describe(self.enforcement)}")
        parse_kubernetes_version(self.kubernetes_version)
        parse_namespace_label(self.admin_namespace_label)
        limit = 63 - len(_LONGEST_SUFFIX)
        # A Service name is a DNS-1035 label: it starts with a letter.
        if (
            not isinstance(self.name_prefix, str)
            or len(self.name_prefix) > limit
            or not DNS1035_LABEL.fullmatch(self.name_prefix)
        ):
            raise ValueError(
                f"name_prefix: must be lower-case letters, digits and '-', starting with a letter, at most "
                f"{limit} characters (object names such as <prefix>{_LONGEST_SUFFIX} must fit), "
                f"got {describe(self.name_prefix)}"
            )
        if isinstance(self.config, Config):
            config = self.config
        elif self.config is None:
            config = Config()
        else:
            config = parse_config(self.config, RULES, "config")
        writers = parse_claim_writers(self.claim_writers)
        if writers is not None:
            # In the configuration, so the webhook's ConfigMap carries the same list.
            config = config.with_value(ADMISSION_CLAIM_WRITERS, writers)
        object.__setattr__(self, "parsed_config", config)
        if isinstance(self.webhook, Mapping):
            object.__setattr__(self, "webhook", WebhookDeployment.from_mapping(self.webhook))
        elif self.webhook is not None and not isinstance(self.webhook, WebhookDeployment):
            raise ValueError(
                f"webhook: must be a WebhookDeployment or a mapping of its settings, got {describe(self.webhook)}"
            )
        deployment = self.webhook_deployment
        version = parse_kubernetes_version(self.kubernetes_version) or config.get(KUBERNETES_VERSION)
        if deployment is not None:
            # The webhook reads templates in the version the pod's arguments make it choose,
            # which the API server must serve: checked here, not when the pod starts.
            try:
                template_api_version(version, deployment.runtime_config)
            except ValueError as error:
                raise ValueError(f"webhook.runtime_config: {error}") from None
        if deployment is not None and deployment.hmac_key_secret is None and config.values.get(HMAC_KEY_OPTION):
            # The policies would demand HMAC tags that nobody verifies: a forged one would pass.
            raise ValueError(
                f"webhook.hmac_key_secret: the config's {HMAC_KEY_OPTION} makes the policies require HMAC "
                "isolation tags, which only the webhook can verify; name the Secret that holds the key"
            )

    @classmethod
    def from_options(
        cls, entry_point: str, options: AdmissionGuardOptions, takes: Sequence[str] = ()
    ) -> AdmissionGuardSpec:
        """The spec for an entry point's keyword arguments; `takes` names its other parameters."""
        _refuse_unknown(None, entry_point, options, (*takes, *ADMISSION_GUARD_OPTION_NAMES))
        return cls(**options)

    @property
    def webhook_deployment(self) -> WebhookDeployment | None:
        return self.webhook if isinstance(self.webhook, WebhookDeployment) else None

    def target(self, registry: Registry = RULES) -> AdmissionTarget:
        """What the policies are generated for."""
        config = self.parsed_config
        deployment = self.webhook_deployment
        if deployment is not None and deployment.hmac_key_secret is not None and not config.values.get(HMAC_KEY_OPTION):
            # The key lives in the cluster's Secret; the policies need only know there is one
            # (they then accept HMAC tags alone, and the webhook verifies the digest). The
            # stand-in value is never used to compute a tag: this Config only makes CEL.
            variable = "DRA_GUARD_WEBHOOK_SECRET"
            keyed = parse_config(
                {HMAC_KEY_OPTION: variable},
                registry,
                "webhook.hmac_key_secret",
                environ={variable: f"the key in Secret {deployment.namespace}/{deployment.hmac_key_secret}"},
            )
            config = Config({**config.values, **keyed.values}, config.source)
        return AdmissionTarget.for_release(
            config, parse_kubernetes_version(self.kubernetes_version), parse_namespace_label(self.admin_namespace_label)
        )


def _required(spec_field: Field[Any]) -> bool:
    return bool(spec_field.default is MISSING and spec_field.default_factory is MISSING and spec_field.init)


def _refuse_unknown(where: str | None, entry_point: str, options: Mapping[str, object], takes: Sequence[str]) -> None:
    """Raise ``TypeError`` naming every key of `options` that `entry_point` does not take."""
    unknown = [str(key) for key in options if key not in takes]
    if not unknown:
        return
    prefix = f"{where}." if where else ""
    noun = "an argument" if len(unknown) == 1 else "arguments"
    message = f"{', '.join(prefix + key for key in unknown)}: not {noun} of {entry_point}"
    guesses = [match[0] for key in unknown if (match := difflib.get_close_matches(key, takes, n=1, cutoff=0.75))]
    if guesses:
        message += f" (did you mean {', '.join(guesses)}?)"
    raise TypeError(f"{message}; it takes {', '.join(takes)}")


#: The keyword arguments, in declaration order.
ADMISSION_GUARD_OPTION_NAMES: tuple[str, ...] = tuple(AdmissionGuardOptions.__annotations__)
WEBHOOK_SETTING_NAMES: tuple[str, ...] = tuple(spec.name for spec in fields(WebhookDeployment))


# --- the objects ----------------------------------------------------------------------


def admission_guard_objects(spec: AdmissionGuardSpec, registry: Registry = RULES) -> list[dict[str, Any]]:
    """Policies and bindings in rule order, then (with a webhook) its objects, the
    ValidatingWebhookConfiguration last: the order in which they can be applied."""
    objects = admission_objects(registry, spec.target(registry), enforcement=spec.enforcement, prefix=spec.name_prefix)
    deployment = spec.webhook_deployment
    if deployment is not None:
        objects += webhook_objects(
            deployment,
            spec.parsed_config,
            registry,
            prefix=spec.name_prefix,
            kubernetes_version=parse_kubernetes_version(spec.kubernetes_version),
        )
    return objects


def webhook_config_text(config: Config, registry: Registry = RULES) -> str:
    """The webhook's `--config` file: the options as `.dra-guard.yaml` writes them.

    Options naming an environment variable (the HMAC key's) are left out: the pod has no
    such variable, and the key reaches the webhook as a file (`--hmac-key-file`).
    """
    written: dict[str, Any] = {}
    for key, value in sorted(config.values.items()):
        option = registry.options[key]
        if isinstance(option.type, EnvSecret):
            continue
        written[key] = option.type.to_json(value)
    return yaml.safe_dump(written, sort_keys=True, default_flow_style=False, allow_unicode=True)


def webhook_objects(
    deployment: WebhookDeployment,
    config: Config,
    registry: Registry = RULES,
    *,
    prefix: str = "dra-guard",
    kubernetes_version: str | None = None,
) -> list[dict[str, Any]]:
    """ServiceAccount, its read access to claim templates, the configuration, the Service,
    the Deployment, its PodDisruptionBudget and the ValidatingWebhookConfiguration.
    `kubernetes_version` (else the configuration's) is the release the webhook checks for
    and reads claim templates from."""
    name, namespace = f"{prefix}-webhook", deployment.namespace
    selector = {"app.kubernetes.io/name": name}
    labels = {**selector, "app.kubernetes.io/component": "admission-webhook", **MANAGED_BY}

    def metadata(object_name: str = name, *, namespaced: bool = True) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": object_name}
        if namespaced:
            meta["namespace"] = namespace
        meta["labels"] = dict(labels)
        return meta

    config_text = webhook_config_text(config, registry)
    service_account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata()}
    # `--in-cluster`: the webhook reads the templates and claims a workload names, and the pod
    # a claim is reserved for, in any namespace (get only: it never lists).
    cluster_role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": metadata(namespaced=False),
        "rules": [
            {
                "apiGroups": ["resource.k8s.io"],
                "resources": ["resourceclaimtemplates", "resourceclaims"],
                "verbs": ["get"],
            },
            # The pod a claim is reserved for (dra_guard.admission.reservations).
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
        ],
    }
    cluster_role_binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": metadata(namespaced=False),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    }
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(f"{name}-config"),
        "data": {CONFIG_FILE: config_text},
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(),
        "spec": {
            "selector": dict(selector),
            "ports": [{"name": "https", "port": SERVICE_PORT, "targetPort": "https", "protocol": "TCP"}],
        },
    }
    workload = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(),
        "spec": {
            "replicas": deployment.replicas,
            "selector": {"matchLabels": dict(selector)},
            "template": {
                "metadata": {
                    "labels": dict(labels),
                    "annotations": {CONFIG_DIGEST_ANNOTATION: hashlib.sha256(config_text.encode()).hexdigest()},
                },
                "spec": _pod_spec(deployment, name, selector, kubernetes_version),
            },
        },
    }
    # maxUnavailable, not minAvailable: with one replica, minAvailable 1 would block every
    # node drain for good; with two or more it allows the same disruptions.
    disruption_budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": metadata(),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": dict(selector)}},
    }
    # The webhook's own namespace is never sent to it: with failurePolicy Fail, a webhook
    # that reviews its own pods can never come back once all of them are gone (the
    # ReplicaSet's new pods would wait for a webhook that is not there). The policies
    # still apply there.
    writers: tuple[str, ...] = config.get(ADMISSION_CLAIM_WRITERS)
    configuration = webhook_configuration(
        {"service": {"namespace": namespace, "name": name, "path": VALIDATE_PATH, "port": SERVICE_PORT}},
        deployment.ca_pem,
        prefix=prefix,
        namespaces=deployment.namespaces,
        namespace_label=deployment.opt_in_label,
        exempt_namespaces=(namespace,),
        failure_policy=deployment.failure_policy,
        claim_writers=writers,
    )
    return [
        service_account,
        cluster_role,
        cluster_role_binding,
        config_map,
        service,
        workload,
        disruption_budget,
        configuration,
    ]


def _pod_spec(
    deployment: WebhookDeployment, name: str, selector: Mapping[str, str], kubernetes_version: str | None
) -> dict[str, Any]:
    arguments = [
        "webhook",
        "--tls-cert",
        f"{TLS_MOUNT}/tls.crt",
        "--tls-key",
        f"{TLS_MOUNT}/tls.key",
        "--port",
        str(CONTAINER_PORT),
        "--probe-port",
        str(PROBE_CONTAINER_PORT),
        "--config",
        f"{CONFIG_MOUNT}/{CONFIG_FILE}",
        "--in-cluster",
    ]
    if kubernetes_version is not None:
        arguments += ["--kubernetes-version", kubernetes_version]
    for entry in deployment.runtime_config or ():
        arguments += ["--runtime-config", entry]
    mounts = [
        {"name": "tls", "mountPath": TLS_MOUNT, "readOnly": True},
        {"name": "config", "mountPath": CONFIG_MOUNT, "readOnly": True},
    ]
    # Only the named keys are projected: a Secret without them keeps the pod from
    # starting, with the kubelet saying which key is missing, instead of a webhook that
    # starts without its certificate or key. 0440 and fsGroup: readable by the pod's group.
    volumes: list[dict[str, Any]] = [
        {
            "name": "tls",
            "secret": {
                "secretName": deployment.tls_secret,
                "defaultMode": 0o440,
                "items": [{"key": "tls.crt", "path": "tls.crt"}, {"key": "tls.key", "path": "tls.key"}],
            },
        },
        {"name": "config", "configMap": {"name": f"{name}-config", "defaultMode": 0o444}},
    ]
    if deployment.hmac_key_secret is not None:
        arguments += ["--hmac-key-file", f"{HMAC_MOUNT}/{HMAC_SECRET_KEY}"]
        mounts.append({"name": "hmac-key", "mountPath": HMAC_MOUNT, "readOnly": True})
        volumes.append(
            {
                "name": "hmac-key",
                "secret": {
                    "secretName": deployment.hmac_key_secret,
                    "defaultMode": 0o440,
                    "items": [{"key": HMAC_SECRET_KEY, "path": HMAC_SECRET_KEY}],
                },
            }
        )

    def probe(path: str, period: int) -> dict[str, Any]:
        # The probe port: answered even while every review slot and connection of the
        # review port is taken. /readyz fails while the serving certificate is not valid.
        return {
            "httpGet": {"path": path, "port": "probes", "scheme": "HTTP"},
            "periodSeconds": period,
            "timeoutSeconds": 2,
            "failureThreshold": 3,
        }

    container = {
        "name": "webhook",
        "image": deployment.image,
        "command": ["dra-guard"],
        "args": arguments,
        "ports": [
            {"name": "https", "containerPort": CONTAINER_PORT, "protocol": "TCP"},
            {"name": "probes", "containerPort": PROBE_CONTAINER_PORT, "protocol": "TCP"},
        ],
        "env": [
            {
                "name": MEMORY_LIMIT_ENV,
                "valueFrom": {
                    "resourceFieldRef": {"containerName": "webhook", "resource": "limits.memory", "divisor": "1Mi"}
                },
            }
        ],
        "readinessProbe": probe("/readyz", 5),
        "livenessProbe": probe("/healthz", 10),
        # The webhook holds ~50 MiB after a thousand reviews (measured on loopback); it
        # sizes its caps on connections, request bodies and reviews in flight (3 MiB bodies)
        # from this limit (dra_guard.admission.serving: 128, 16 MiB and 4). No CPU limit:
        # throttling would turn into review timeouts.
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": f"{MEMORY_LIMIT_MIB}Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": mounts,
    }
    return {
        "serviceAccountName": name,
        # The webhook reads claim templates with this token (`--in-cluster`).
        "automountServiceAccountToken": True,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RUN_AS,
            "runAsGroup": RUN_AS,
            "fsGroup": RUN_AS,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
        "volumes": volumes,
        # One node going away must not take every replica with it.
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": dict(selector)},
            }
        ],
    }
