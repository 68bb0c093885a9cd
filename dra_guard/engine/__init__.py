"""The engine: runs every enabled rule over the objects, resolves cross-object findings and
waivers, and returns the report; `waiver_places` says where the waiver annotations of an
object may be.  `dra_guard.engine` is a public import path (docs/architecture.md).
"""

from dra_guard.engine.run import Checker, LoadedDocument, check_objects, check_stream
from dra_guard.model.pod_templates import waiver_places

__all__ = ["Checker", "LoadedDocument", "check_objects", "check_stream", "waiver_places"]
