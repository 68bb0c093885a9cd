"""How the kubectl reader says no."""

from __future__ import annotations


class Refusal(Exception):
    """Input the reader will not turn into objects.

    Either kubectl itself rejects it (`kubectl_stops=True` when kubectl then stops reading
    the file, as it does for every YAML-level error), or dra-guard cannot be sure what
    kubectl would send (`kubectl_stops=False`: kubectl would go on, and so do we, with the
    next document).
    """

    def __init__(self, message: str, *, kubectl_stops: bool = True, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.kubectl_stops = kubectl_stops
        #: 0-based line within the parsed text, when known.
        self.line = line
