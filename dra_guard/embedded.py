"""YAML or JSON text inside a manifest's strings (an Argo `podSpecPatch`, a resource
template's `manifest`), read the way the tool that applies it reads it.

Argo converts these strings with sigs.k8s.io/yaml, as kubectl converts files, so they are
read with the loader's YAML reading.  Anything that cannot be read -- a `{{...}}`
placeholder filled in at run time, invalid YAML -- is `Unreadable`: nobody can say what
it will request, and rules report that rather than pass it.
"""

from __future__ import annotations

from typing import Any

import yaml

from dra_guard.loader import yaml_loader


class Unreadable(ValueError):
    """Embedded text that cannot be read; the message says why."""


def read_embedded_documents(text: str) -> list[Any]:
    """The values of the (non-empty) YAML or JSON documents in `text`."""
    try:
        return [document for document in yaml.load_all(text, Loader=yaml_loader()) if document is not None]
    except yaml.YAMLError as error:
        raise Unreadable(_placeholder_note(text) or f"invalid YAML ({_problem(error)})") from None
    except (ValueError, RecursionError) as error:  # e.g. an integer of thousands of digits
        raise Unreadable(str(error)[:200] or type(error).__name__) from None


def read_embedded(text: str) -> Any:
    """The value of the one YAML (or JSON) document in `text` (None when it is empty)."""
    documents = read_embedded_documents(text)
    if len(documents) > 1:
        raise Unreadable("it holds more than one YAML document")
    return documents[0] if documents else None


def _placeholder_note(text: str) -> str:
    return "it holds a {{...}} placeholder filled in at run time" if "{{" in text else ""


def _problem(error: yaml.YAMLError) -> str:
    if isinstance(error, yaml.MarkedYAMLError):
        return " ".join(part for part in (error.context, error.problem) if part) or "invalid YAML"
    return str(error)
