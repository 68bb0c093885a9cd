"""The claims, claim templates and DeviceClasses already in migrate's input.

A pod migrate gives the scrubber may already have claims of its own.  DRA016 requires the
scrubber to hold every claim of a class it scrubs, and `check` reads which those are from the
claim's template or claim among its input (README, "Memory erasure"): so migrate, which reads
the same input, gives the scrubber the pod's existing claims whose template or claim it finds
here, judged as `check` judges them, and reports the ones it cannot find.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, NamedTuple

from dra_guard.contract.catalog import KUBERNETES_RELEASES
from dra_guard.model.manifest import (
    CLAIM_KINDS,
    cel_expressions,
    device_requests,
    in_namespace,
    is_dra_object,
    mapping,
    metadata,
    text,
)


class RequestClass(NamedTuple):
    """A request's device class, and whether it asks for admin access (monitoring)."""

    device_class: str
    admin_access: bool


@dataclass
class InputClaims:
    """What migrate's input holds: each claim and template's request classes, by kind and
    name (several namespaces may share a name), and each DeviceClass's selectors."""

    _requests: dict[tuple[str, str], list[tuple[str, tuple[RequestClass, ...]]]] = field(default_factory=dict)
    _class_selectors: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def note(self, obj: object) -> None:
        if not isinstance(obj, Mapping) or not is_dra_object(obj):
            return
        kind, meta = obj.get("kind"), metadata(obj)
        name = text(meta.get("name"))
        if not name:
            return
        if kind in CLAIM_KINDS:
            requests = tuple(
                RequestClass(request.device_class, request.admin_access) for request in device_requests(obj)
            )
            self._requests.setdefault((str(kind), name), []).append((text(meta.get("namespace")), requests))
        elif kind == "DeviceClass":
            # The last of a name wins, as `kubectl apply` leaves it (and as `check` reads it).
            spec = mapping(obj.get("spec"))
            self._class_selectors[name] = cel_expressions(spec.get("selectors"))

    def classes(self, kind: str, namespace: str, name: str, kubernetes_version: str) -> tuple[str, ...] | None:
        """The device classes the claim or template `name` allocates to the pods that use it
        (not its admin-access requests, where the release honours them: those allocate
        nothing), or None if the input holds no such object.  Matched as `check` matches a
        pod's claim: the same namespace, else the only one of that name where either side
        names no namespace (`kubectl apply -n`)."""
        match = in_namespace(self._requests.get((kind, name), []), namespace, itemgetter(0))
        if match is None:
            return None
        found = match[1]
        monitors = KUBERNETES_RELEASES[kubernetes_version].admin_access_by_default
        return tuple(
            dict.fromkeys(request.device_class for request in found if not (monitors and request.admin_access))
        )

    def class_selectors(self, name: str) -> tuple[str, ...] | None:
        """The selectors of the input's DeviceClass `name`; None if the input has none."""
        return self._class_selectors.get(name)


def pod_claim_target(claim: Mapping[str, Any]) -> tuple[str, str] | None:
    """(kind, name) of what a pod claim names, as DRA016 reads it (the template first)."""
    template, claim_name = claim.get("resourceClaimTemplateName"), claim.get("resourceClaimName")
    if isinstance(template, str) and template:
        return ("ResourceClaimTemplate", template)
    if isinstance(claim_name, str) and claim_name:
        return ("ResourceClaim", claim_name)
    return None
