"""Pulumi props to plain Kubernetes objects.

Props arrive as the policy SDK's read-only proxies (`Mapping`/`Sequence`, numbers as
floats).  During `preview` a value may be unknown: reading it raises the SDK's
`UnknownValueError`, which it reports as an advisory diagnostic; here it becomes
`CannotVerifyUntilApply`, with the path of the unknown value in its message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import proxy
from pulumi_policy.proxy import UnknownValueError


def kubernetes_api_version(resource_type: str) -> str | None:
    """`kubernetes:apps/v1:Deployment` -> `apps/v1`; `kubernetes:core/v1:Pod` -> `v1`.

    None for anything that is not a Kubernetes object type (providers, components such as
    `kubernetes:yaml/v2:ConfigGroup` or `kubernetes:helm.sh/v4:Chart`, whose children are
    validated one by one).
    """
    parts = resource_type.split(":")
    if len(parts) != 3 or parts[0] != "kubernetes" or "/" not in parts[1]:
        return None
    group, _, version = parts[1].partition("/")
    if group in ("yaml", "helm.sh", "kustomize"):
        return None
    return version if group == "core" else f"{group}/{version}"


class CannotVerifyUntilApply(UnknownValueError):
    """An unknown value: the SDK reports this as an advisory diagnostic, not a failure."""

    def __init__(self, unknown: UnknownValueError) -> None:
        super().__init__(unknown.unknown_type_sentinel, unknown.props)
        self.message = f"cannot verify until apply: {super().__getattribute__('message')}"

    def __str__(self) -> str:
        return self.message


_UNKNOWN_SENTINELS = frozenset(
    getattr(proxy, name)
    for name in dir(proxy)
    if name.startswith("UNKNOWN_") and name.endswith("_VALUE") and isinstance(getattr(proxy, name), str)
)
# The SDK's proxy classes expose their target under "__target"; if they are ever renamed,
# the generic Mapping/Sequence path below (checked reads) still gives the same result.
_PROXY_CLASSES: tuple[type, ...] = tuple(
    cls for cls in (getattr(proxy, "_DictProxy", None), getattr(proxy, "_ListProxy", None)) if isinstance(cls, type)
)


class _UnknownSeen(Exception):
    """Raised by the fast walk; the slow walk then finds where, for the message."""


def _plain(value: Any) -> Any:
    """Proxies to plain dicts and lists; an unknown value raises UnknownValueError.

    The SDK's proxies check every read; reading their targets and checking the leaves
    here does the same job in one pass.  Paths are only worked out when an unknown is
    actually there (rare, and only during preview).
    """
    try:
        return _fast_plain(value)
    except _UnknownSeen:
        _checked_walk(value, [])
        raise AssertionError("unknown value not found again") from None  # pragma: no cover


def _fast_plain(value: Any) -> Any:
    kind = type(value)
    if kind in _PROXY_CLASSES:
        value = value["__target"]
        kind = type(value)
    if kind is dict:
        return {key: _fast_plain(item) for key, item in value.items()}
    if kind is list:
        return [_fast_plain(item) for item in value]
    if kind is str:
        if value in _UNKNOWN_SENTINELS:
            raise _UnknownSeen
        return value
    if isinstance(value, Mapping):
        return {key: _fast_plain(value[key]) for key in value}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [_fast_plain(item) for item in value]
    return value


def _checked_walk(value: Any, path: list[str]) -> None:
    """Reads everything through the SDK's own checks, which raise with the exact path."""
    if isinstance(value, str) and value in _UNKNOWN_SENTINELS:
        raise UnknownValueError(value, path)
    if isinstance(value, Mapping):
        for key in value:
            _checked_walk(value[key], [*path, str(key)])
    elif isinstance(value, Sequence) and not isinstance(value, str | bytes):
        for index in range(len(value)):
            _checked_walk(value[index], [*path, str(index)])


def kubernetes_object(resource_type: str, props: Mapping[str, Any]) -> dict[str, Any] | None:
    """The Kubernetes object a resource's props describe, as plain dicts and lists.

    None when the type is no Kubernetes object; CannotVerifyUntilApply when a value is
    not known yet.  apiVersion and kind come from the type when the props leave them out.
    """
    api_version = kubernetes_api_version(resource_type)
    if api_version is None:
        return None
    try:
        obj = _plain(props)
    except UnknownValueError as unknown:
        raise CannotVerifyUntilApply(unknown) from None
    obj.setdefault("apiVersion", api_version)
    obj.setdefault("kind", resource_type.rsplit(":", 1)[1])
    return dict(obj)
