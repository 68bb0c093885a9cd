"""Which of a container's fields the API server keeps, as every gate in the cluster sees them.

Every field of a core/v1 `Container` but `name` is `omitempty` (kubernetes/api @
10b39a39bcee995dfe7cd5e8e7b922be5e46f1e2, core/v1/types.go `Container`), and encoding/json
leaves out a nil pointer, an empty slice, an empty string and `false` under that tag.  So a
container written `args: []`, `env: []`, `workingDir: ""`, `stdin: false` or `lifecycle: null`
is stored, handed to a ValidatingAdmissionPolicy (converted to unstructured by the same
tags) and sent to a webhook without that field: a Helm chart's `env: []` is not an
environment.  A pointer to a struct written empty (`lifecycle: {}`) is kept, and so is
`resources` (a struct, never left out).  A value of another type than the field's is refused
by the API server when it decodes the object, and is kept here (failing closed).

The pods the cluster makes from a controller's or an operator's pod template are typed objects
too, so what they carry is the same whatever kind the template was written in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Slice-typed fields: `[]` is left out.
_LISTS = frozenset(
    {
        "command",
        "args",
        "ports",
        "envFrom",
        "env",
        "resizePolicy",
        "restartPolicyRules",
        "volumeMounts",
        "volumeDevices",
    }
)
#: String-typed fields: `""` is left out.
_STRINGS = frozenset({"image", "workingDir", "terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy"})
#: Bool-typed fields: `false` is left out.
_BOOLS = frozenset({"stdin", "stdinOnce", "tty"})


def kept(field: str, value: Any) -> bool:
    """Whether the API server keeps the container field `field` written with `value`."""
    if value is None:
        return field == "name"
    if field in _LISTS:
        return not (isinstance(value, list) and not value)
    if field in _STRINGS:
        return not (isinstance(value, str) and not value)
    if field in _BOOLS:
        return value is not False
    return True


def kept_fields(container: Mapping[str, Any]) -> list[str]:
    """The container's fields the API server keeps, in the order written."""
    return [str(field) for field, value in container.items() if kept(str(field), value)]


def as_stored(container: Mapping[str, Any]) -> dict[str, Any]:
    """The container without the fields the API server leaves out."""
    return {field: value for field, value in container.items() if kept(str(field), value)}
