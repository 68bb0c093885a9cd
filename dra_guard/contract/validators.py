"""Argument validators shared by the specs and the builders.

Each ``require_*`` returns the value (normalised where the input has two forms) or raises
``ValueError`` whose message starts with the name of the argument at fault, so the error
reads the same from cdk8s, Pulumi or plain Python.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from dra_guard.contract.catalog import (
    ATTRIBUTE_DOMAIN_MAX_LENGTH,
    ATTRIBUTE_NAME_PATTERN,
    RESOURCE_API_VERSIONS,
    SANITIZATION_POLICIES,
    WORKLOAD_KINDS,
    is_legacy_resource,
)
from dra_guard.contract.runtime_devices import visible_devices_asked
from dra_guard.contract.scrubber import image_pin_problem

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
#: A DNS-1035 label (Service names): a DNS-1123 label that starts with a letter.
DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
# DRA attribute names are C identifiers of at most 32 characters (resource.k8s.io API).
ATTRIBUTE_NAME = ATTRIBUTE_NAME_PATTERN
_LABEL_NAME = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")
#: The largest value of an int32 field (`replicas`, a Job's `completions` and `parallelism`).
INT32_MAX = 2**31 - 1


def describe(value: object) -> str:
    return f"{value!r} ({type(value).__name__})"


def require_dns_label(field: str, value: object) -> str:
    """A DNS-1123 label: lower-case alphanumerics and '-', at most 63 characters."""
    if not isinstance(value, str) or len(value) > 63 or not _DNS1123_LABEL.fullmatch(value):
        raise ValueError(
            f"{field}: must be a DNS-1123 label (lower-case letters, digits and '-', "
            f"starting and ending with an alphanumeric, at most 63 characters), got {describe(value)}"
        )
    return value


def require_dns1035_label(field: str, value: object) -> str:
    """A DNS-1035 label (a Service name): a DNS-1123 label that starts with a letter."""
    if not isinstance(value, str) or len(value) > 63 or not DNS1035_LABEL.fullmatch(value):
        raise ValueError(
            f"{field}: must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter "
            f"and ending with an alphanumeric, at most 63 characters), got {describe(value)}"
        )
    return value


def require_dns_subdomain(field: str, value: object) -> str:
    """A DNS-1123 subdomain: dot-separated labels, at most 253 characters."""
    if not isinstance(value, str) or len(value) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(value):
        raise ValueError(
            f"{field}: must be a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', "
            f"at most 253 characters), got {describe(value)}"
        )
    return value


def require_positive_int(field: str, value: object) -> int:
    # bool is an int subclass; `count=True` is a bug, not a count of one.
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{field}: must be an integer >= 1, got {describe(value)}")
    return value


def require_int32_count(field: str, value: object) -> int:
    """A positive integer that fits the int32 field Kubernetes stores it in."""
    count = require_positive_int(field, value)
    if count > INT32_MAX:
        raise ValueError(f"{field}: must be at most {INT32_MAX} (an int32 in the Kubernetes API), got {count}")
    return count


def require_qualified_attribute(field: str, value: object) -> tuple[str, str]:
    """A qualified DRA attribute name, `<domain>/<name>`, split: the domain a DNS subdomain of
    at most 63 characters, the name a C identifier of at most 32 (resource.k8s.io API)."""
    if not isinstance(value, str) or "/" not in value:
        raise ValueError(f"{field}: must be qualified as '<domain>/<attribute>', got {describe(value)}")
    domain, _, name = value.partition("/")
    require_dns_subdomain(f"{field} domain", domain)
    if len(domain) > ATTRIBUTE_DOMAIN_MAX_LENGTH:
        raise ValueError(
            f"{field}: the domain {domain!r} is longer than {ATTRIBUTE_DOMAIN_MAX_LENGTH} characters, "
            "the most a DRA attribute domain may have"
        )
    if not ATTRIBUTE_NAME.fullmatch(name):
        raise ValueError(f"{field}: {name!r} is not a DRA attribute name (a C identifier, at most 32 characters)")
    return domain, name


def require_one_of(field: str, value: object, allowed: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{field}: must be one of {', '.join(allowed)}; got {describe(value)}")
    return value


def require_printable(field: str, value: object) -> str:
    """A non-empty single-line string (it ends up in a CEL literal and an annotation)."""
    if not isinstance(value, str) or not value.strip() or not value.isprintable():
        raise ValueError(f"{field}: must be a non-empty printable string, got {describe(value)}")
    return value


def require_string_list(field: str, value: object) -> list[str]:
    # A plain string is a sequence too; `command="python serve.py"` is a classic mistake.
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"{field}: must be a list of strings, got {describe(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise ValueError(f"{field}[{index}]: must be a string, got {describe(item)}")
    return list(value)


def require_labels(field: str, value: object) -> dict[str, str]:
    """Kubernetes label keys (`[prefix/]name`) and values, checked as the API server would."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{field}: must be a mapping of label keys to values, got {describe(value)}")
    labels: dict[str, str] = {}
    for key, label_value in value.items():
        if not isinstance(key, str):
            raise ValueError(f"{field}: label key {describe(key)} must be a string")
        prefix, _, name = key.rpartition("/")
        if prefix:
            require_dns_subdomain(f"{field}[{key!r}] prefix", prefix)
        if not name or len(name) > 63 or not _LABEL_NAME.fullmatch(name):
            raise ValueError(f"{field}: {key!r} is not a valid label key")
        if not isinstance(label_value, str) or len(label_value) > 63 or not _LABEL_NAME.fullmatch(label_value):
            raise ValueError(f"{field}[{key!r}]: {describe(label_value)} is not a valid label value")
        labels[key] = label_value
    return labels


def require_image(value: object, name: str = "image") -> str:
    if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value):
        raise ValueError(f"{name}: must be a container image reference, got {value!r}")
    return value


def require_scrub_image(value: object) -> str:
    value = require_image(value, "scrub_image")
    problem = image_pin_problem(value)
    if problem is not None:
        raise ValueError(f"scrub_image: {value!r} {problem}; pin it by tag or digest")
    return value


def require_api_version(value: object) -> str:
    return require_one_of("api_version", value, RESOURCE_API_VERSIONS)


#: The `--runtime-config` keys that address many versions at once, in the order
#: kube-apiserver applies them, with the versions each matches (k8s.io/apiserver
#: pkg/server/resourceconfig/helpers.go, groupVersionMatchers); they take exactly `true` or
#: `false`.
RUNTIME_CONFIG_MATCHERS: Mapping[str, re.Pattern[str]] = MappingProxyType(
    {
        "api/all": re.compile(r".*"),
        "api/ga": re.compile(r"v[0-9]+"),
        "api/beta": re.compile(r"v[0-9]+beta[0-9]+"),
        "api/alpha": re.compile(r"v[0-9]+alpha[0-9]+"),
    }
)
#: What Go's strconv.ParseBool reads, the values a `group/version[/resource]` key takes (an
#: empty value is true).
_PARSE_BOOL = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True", ""), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}
#: The API group whose entries the builders read; any other group's entry is passed over.
RESOURCE_GROUP = "resource.k8s.io"


def require_runtime_config(value: object) -> dict[str, bool]:
    """kube-apiserver's `--runtime-config` entries, as the flag reads them.

    Each item is one flag value: `key[=value]` pairs separated by commas, a key given twice
    keeping its last value (component-base's ConfigurationMap).  Returns the entries this
    package reads, the `api/*` matchers and the `resource.k8s.io/<version>[/<resource>]`
    keys, each with whether it enables; a value the API server would refuse to start with
    is refused here.  Entries of other groups are accepted and not read.
    """
    entries: dict[str, bool] = {}
    for index, item in enumerate(require_string_list("runtime_config", value)):
        for part in item.split(","):
            if not part:
                continue
            key, _, setting = part.partition("=")
            key, setting = key.strip(), setting.strip()
            where = f"runtime_config[{index}]"
            if not key:
                raise ValueError(
                    f"{where}: {part!r} names no API; write <group>/<version>=true, e.g. {RESOURCE_GROUP}/v1beta2=true"
                )
            if key in RUNTIME_CONFIG_MATCHERS:
                if setting not in ("true", "false"):
                    raise ValueError(
                        f"{where}: {key} takes true or false, got {setting!r} (kube-apiserver refuses anything else)"
                    )
                entries[key] = setting == "true"
                continue
            tokens = key.split("/")
            if tokens[0] != RESOURCE_GROUP:
                continue
            if len(tokens) not in (2, 3) or not all(tokens):
                raise ValueError(
                    f"{where}: {key!r} is not {RESOURCE_GROUP}/<version> or {RESOURCE_GROUP}/<version>/<resource>"
                )
            if len(tokens) == 3 and tokens[2].lower() != tokens[2]:
                raise ValueError(f"{where}: {key!r}: a resource is always lower-case plural, not {tokens[2]!r}")
            if setting not in _PARSE_BOOL:
                raise ValueError(
                    f"{where}: {key} takes true or false (or nothing, which means true), got {setting!r} "
                    "(kube-apiserver refuses anything else)"
                )
            entries[key] = _PARSE_BOOL[setting]
    return entries


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
        raise ValueError(f"resources: must be a mapping with 'limits' and/or 'requests', got {describe(value)}")
    checked: dict[str, dict[str, str | int]] = {}
    for section, quantities in value.items():
        if section not in ("limits", "requests"):
            raise ValueError(
                f"resources: unknown key {section!r}; only 'limits' and 'requests' are allowed "
                "(the accelerator claim is added for you)"
            )
        if not isinstance(quantities, Mapping):
            raise ValueError(f"resources.{section}: must be a mapping, got {describe(quantities)}")
        checked[section] = {}
        for name, quantity in quantities.items():
            if not isinstance(name, str):
                raise ValueError(f"resources.{section}: resource name {describe(name)} must be a string")
            if is_legacy_resource(name):
                raise ValueError(
                    f"resources.{section}.{name}: legacy accelerator requests are what this "
                    "component replaces; the slice is requested through the claim template"
                )
            if isinstance(quantity, bool) or not isinstance(quantity, (str, int)):
                raise ValueError(
                    f"resources.{section}.{name}: must be a quantity string or integer, got {describe(quantity)}"
                )
            checked[section][name] = quantity
    return checked


def require_env(value: object) -> list[dict[str, Any]]:
    """`{"NAME": "value"}` in the given order, or a list of Kubernetes EnvVar mappings; never
    one that asks the NVIDIA container runtime for GPUs (DRA001 `visible-devices`)."""
    env = _env_entries(value)
    for index, why in visible_devices_asked({"env": env}):
        raise ValueError(
            f"env[{index}]: {why}, which gives the container GPUs through the NVIDIA container runtime with no "
            "claim; the slice is requested through the claim template (leave the variable unset or void)"
        )
    return env


def _env_entries(value: object) -> list[dict[str, Any]]:
    if isinstance(value, Mapping):
        env = []
        for name, env_value in value.items():
            if not isinstance(name, str) or not name or "=" in name:
                raise ValueError(f"env: {describe(name)} is not a valid variable name")
            if not isinstance(env_value, str):
                raise ValueError(f"env[{name!r}]: must be a string, got {describe(env_value)}")
            env.append({"name": name, "value": env_value})
        return env
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"env: must be a mapping or a list of EnvVar mappings, got {describe(value)}")
    env = []
    for index, item in enumerate(value):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise ValueError(f"env[{index}]: must be an EnvVar mapping with a 'name', got {describe(item)}")
        env.append(plain_copy(item))
    return env


def require_ports(value: object) -> list[dict[str, Any]]:
    """Container ports: integers, or ContainerPort mappings with `containerPort`."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"ports: must be a list of port numbers or ContainerPort mappings, got {describe(value)}")
    ports = []
    for index, item in enumerate(value):
        port = item.get("containerPort") if isinstance(item, Mapping) else item
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise ValueError(f"ports[{index}]: container port must be an integer 1-65535, got {describe(port)}")
        ports.append(plain_copy(item) if isinstance(item, Mapping) else {"containerPort": port})
    return ports


def plain_copy(value: Any) -> Any:
    """A deep copy into plain dicts and lists, so callers never share state with us."""
    if isinstance(value, Mapping):
        return {key: plain_copy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_copy(item) for item in value]
    return value


def frozen_copy(value: Any) -> Any:
    """A deep read-only copy: mappings become mapping proxies, lists tuples.

    A frozen spec holds these, so nothing can change a validated value afterwards;
    :func:`plain_copy` turns them back into plain dicts and lists for the manifests.
    """
    if isinstance(value, Mapping):
        return MappingProxyType({key: frozen_copy(item) for key, item in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(frozen_copy(item) for item in value)
    return value
