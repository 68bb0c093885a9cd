"""The engine: runs every enabled rule over the objects, resolves cross-object findings and
waivers, and returns the report.  `dra_guard.engine` is a public import path (docs/architecture.md).
"""

from dra_guard.engine.run import Checker, LoadedDocument, check_objects, check_stream

__all__ = ["Checker", "LoadedDocument", "check_objects", "check_stream"]
