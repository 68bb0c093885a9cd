"""YAML or JSON text inside a manifest's strings and a kustomization's patch files, read
the way the tool that applies it reads it.

Argo converts a `podSpecPatch` or a resource template's `manifest` with sigs.k8s.io/yaml,
as kubectl converts files, and kustomize's patches are YAML of the same dialect: each is
read with the kubectl reader's documents and decoding (`dra_guard.kubectl_yaml`: YAML 1.1
booleans, merge keys applied in order, !!binary decoded).  Anything that cannot be read
-- a `{{...}}` placeholder filled in at run time, invalid YAML, a value the reader refuses
-- is `Unreadable`: nobody can say what it will request, and rules report that rather than
pass it.

Argo fills `{{...}}` placeholders in as text before it reads the string, so one in a name
(`name: job-{{workflow.name}}`, which YAML alone would read as a flow mapping) changes
nothing a rule reads: `fill_placeholders` puts a plain word in each place, and the callers
decide where a placeholder could still matter (a resource name, a whole value that the text
filled in could turn into fields).
"""

from __future__ import annotations

import re
from typing import Any

from dra_guard.kubectl_yaml.construct import decode
from dra_guard.kubectl_yaml.errors import Refusal
from dra_guard.kubectl_yaml.framing import BadSeparator, kubectl_lines, yaml_chunks
from dra_guard.kubectl_yaml.parser import parse

#: An Argo template expression: `{{inputs.parameters.x}}`, `{{=sprig.trim(x)}}`.
ARGO_PLACEHOLDER = re.compile(r"\{\{.*?\}\}")
#: What `fill_placeholders` writes instead: a plain YAML word that no manifest holds.
PLACEHOLDER_WORD = "dra-guard-argo-placeholder"


class Unreadable(ValueError):
    """Embedded text that cannot be read; the message says why."""


def read_embedded_documents(text: str) -> list[Any]:
    """The values of the (non-empty) YAML or JSON documents in `text`."""
    lines = kubectl_lines(text)
    values = []
    for chunk in yaml_chunks(lines):
        if isinstance(chunk, BadSeparator):
            raise Unreadable(_placeholder_note(text) or f"a line starting with '---' followed by {chunk.rest!r}")
        parsed = parse(lines[chunk.start : chunk.end])
        if parsed.error is not None:
            raise Unreadable(_placeholder_note(text) or f"invalid YAML ({parsed.error.message})")
        for root in parsed.documents:
            try:
                value, _ = decode(root)
            except Refusal as refusal:
                raise Unreadable(_placeholder_note(text) or refusal.message) from None
            if value is not None:
                values.append(value)
    return values


def read_embedded(text: str) -> Any:
    """The value of the one YAML (or JSON) document in `text` (None when it is empty)."""
    documents = read_embedded_documents(text)
    if len(documents) > 1:
        raise Unreadable("it holds more than one YAML document")
    return documents[0] if documents else None


def _placeholder_note(text: str) -> str:
    return "it holds a {{...}} placeholder filled in at run time" if "{{" in text else ""


def fill_placeholders(text: str) -> str:
    """`text` with each `{{...}}` placeholder replaced by `PLACEHOLDER_WORD`, as Argo
    replaces it by a parameter's text before reading."""
    return ARGO_PLACEHOLDER.sub(PLACEHOLDER_WORD, text)


def is_filled(value: object) -> bool:
    """Whether a string read from filled text held a placeholder."""
    return isinstance(value, str) and PLACEHOLDER_WORD in value
