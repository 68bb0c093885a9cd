"""What a migration is told: pin values, the claim templates' options, and what counts as legacy."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from dra_guard.contract.catalog import (
    DEFAULT_KUBERNETES_VERSION,
    DEFAULT_RESOURCE_API_VERSION,
    DEFAULT_SANITIZATION,
    DEVICE_CLASSES,
    SCRUB_BEFORE_USE,
    DeviceClass,
)
from dra_guard.contract.scrubber import DEFAULT_SCRUB_IMAGE


@dataclass(frozen=True)
class MigrationSettings:
    """Everything `migrate_documents` needs besides the documents."""

    #: Device class -> the value its pin attribute must have (`--gpu-product`, `--tpu-gen`,
    #: `--pin CLASS=VALUE`); MIG profiles come from the resource name instead.
    pins: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: The claim templates' `resource.k8s.io` version.
    api_version: str = DEFAULT_RESOURCE_API_VERSION
    #: The release they are for, and whether it runs DRAConsumableCapacity (None: its
    #: default): together they decide the exclusivity guard in each request.
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION
    #: kube-apiserver's `--runtime-config` entries (`--runtime-config`), which a beta or alpha
    #: `api_version` needs (a default cluster serves resource.k8s.io/v1 only); None: not set.
    runtime_config: tuple[str, ...] | None = None
    consumable_capacity: bool | None = None
    sanitization: str = DEFAULT_SANITIZATION
    #: Tag each template with its workload's namespace as the tenant.
    tenant_from_namespace: bool = False
    #: Where an object that names no namespace is applied (`--namespace`, as `kubectl apply
    #: -n`): its templates are written for it, since their isolation tag binds the namespace.
    namespace: str | None = None
    hmac_key: str | bytes | None = field(default=None, repr=False)
    #: The scrubber's image (`--scrub-image`): pods given claims of a class it scrubs run it
    #: first (README, "Memory erasure"); None: no scrubber (`--no-scrubber`).
    scrub_image: str | None = DEFAULT_SCRUB_IMAGE
    #: From the dra-guard configuration, so that migrate replaces what `check` reports.
    extra_legacy_resources: frozenset[str] = frozenset()
    non_accelerator_classes: frozenset[str] = frozenset()
    extra_classes: Mapping[str, DeviceClass] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        if self.scrub_image is None and self.sanitization == SCRUB_BEFORE_USE:
            # It would declare an erasure that no pod performs (DRA004, DRA016); the command
            # line refuses `--sanitization ScrubBeforeUse --no-scrubber` alike.
            raise ValueError(
                f"sanitization: {SCRUB_BEFORE_USE} declares that the scrubber runs first in every pod, and "
                "scrub_image=None adds none; give one of them only"
            )

    def is_accelerator(self, device_class: str) -> bool:
        return device_class not in self.non_accelerator_classes

    @property
    def device_class(self) -> Callable[[str], DeviceClass | None]:
        return lambda name: self.extra_classes.get(name) or DEVICE_CLASSES.get(name)

    def claim_options(self) -> dict[str, Any]:
        """The keyword arguments every template shares (see `dra_guard.ClaimSpec`)."""
        return {
            "api_version": self.api_version,
            "kubernetes_version": self.kubernetes_version,
            "runtime_config": self.runtime_config,
            "consumable_capacity": self.consumable_capacity,
            "sanitization": self.sanitization,
            "hmac_key": self.hmac_key,
        }
