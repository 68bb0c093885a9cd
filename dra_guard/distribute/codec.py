"""A checked part of the input (`dra_guard.engine.run.Part`) as bytes, and back.

A part holds findings, errors, facts and pending findings; a pending finding holds the
function that resolves it and its arguments, among them the checking process's `Context`
and, through its kind, the `Rule`.  Those two are not copied: the context is written as a
reference that the reading side replaces with the context that resolves the whole input,
and a rule as its ID, looked up in the reader's registry.  Everything else is pickled.

Reading is restricted (the pickle documentation's "Restricting Globals"): a facts file
(`dra-guard check --shard`) may have travelled between CI jobs, and a pickle can name any
callable. The reader accepts only classes and functions defined in the modules of the
model, the rule API, the rules (extra rule modules included), the contract and the engine's
part, a few built-in types, and nothing reached through a dotted name.
"""

from __future__ import annotations

import copyreg
import dataclasses
import functools
import io
import pickle
import types
from enum import Enum
from typing import Any

from dra_guard.engine.run import Part
from dra_guard.ruleapi.config import Config
from dra_guard.ruleapi.context import Context
from dra_guard.rules import RULES, Rule

#: Protocol 5: the newest every supported Python reads (3.8+).
PROTOCOL = 5
_CONTEXT = "context"
_CONFIG = "config"
_RULE = "rule"
#: Where the classes and functions a part may name are defined.
_PACKAGES = ("dra_guard.contract.", "dra_guard.model.", "dra_guard.ruleapi.", "dra_guard.rules.")
#: Classes of the engine and of this package a part or a facts file holds.
_CLASSES = {
    ("dra_guard.engine.run", "Part"),
    ("dra_guard.engine.run", "_Deferred"),
    ("dra_guard.engine.run", "_PendingKind"),
    ("dra_guard.distribute.shards", "UnitFacts"),
    ("dra_guard.distribute.codec", "read_only"),
}
_BUILTINS = {
    ("builtins", "frozenset"),
    ("builtins", "set"),
    ("builtins", "slice"),
    ("builtins", "complex"),
    ("collections", "OrderedDict"),
    ("datetime", "date"),
}


def read_only(items: dict[Any, Any]) -> types.MappingProxyType[Any, Any]:
    """A read-only mapping again (`types.MappingProxyType` cannot be named in a pickle)."""
    return types.MappingProxyType(items)


def _mapping_proxy(proxy: types.MappingProxyType[Any, Any]) -> tuple[Any, tuple[dict[Any, Any]]]:
    return read_only, (dict(proxy),)


# Read-only mappings (the configuration's, the rules' declarations) pickle as copies; a
# worker started by `spawn` gets the configuration this way.
copyreg.pickle(types.MappingProxyType, _mapping_proxy)


@functools.cache  # per class met: the classes of a check are few
def _init_fields(cls: type) -> tuple[str, ...] | None:
    """The fields, in order, of a slotted dataclass that its generated __init__ makes from
    them alone (no __post_init__, no init=False or keyword-only field), else None."""
    if not dataclasses.is_dataclass(cls) or "__slots__" not in vars(cls) or hasattr(cls, "__post_init__"):
        return None
    fields = dataclasses.fields(cls)
    if any(not field.init or field.kw_only for field in fields):
        return None
    return tuple(field.name for field in fields)


def _reference(kind: str, name: str) -> Any:
    """What a reference written by `_Writer` stands for: only a `_Reader` resolves one."""
    raise pickle.UnpicklingError(f"a {kind} reference ({name!r}) read outside a checked part")


class _Writer(pickle.Pickler):
    def __init__(self, file: io.BytesIO, context: Context | None) -> None:
        super().__init__(file, protocol=PROTOCOL)
        self._context = context

    # reducer_override, not persistent_id: pickle asks it only for objects other than
    # strings, numbers, tuples, lists and dicts -- most of a part -- where persistent_id is
    # a Python call for every object (issue 25: a third of a small file's pickling).
    def reducer_override(self, obj: Any) -> Any:
        if obj is self._context and obj is not None:
            return _reference, (_CONTEXT, "")
        if isinstance(obj, Rule):
            return _reference, (_RULE, obj.id)
        if isinstance(obj, Config):
            return _reference, (_CONFIG, "")
        # An enum member (a severity) as its class and value: Enum's own reduction differs
        # between Python releases (3.11.2 names `getattr`, which the reader refuses).
        cls = obj.__class__
        if isinstance(obj, Enum):
            return cls, (obj.value,)
        # A slotted dataclass (a finding, an object's reference, a fact) as its class and
        # fields: read back by its __init__, where pickle's default goes through
        # dataclasses' __setstate__, which looks its fields up again for every object.
        names = _init_fields(cls)
        if names is not None:
            return cls, tuple([getattr(obj, name) for name in names])
        return NotImplemented


class _Reader(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, context: Context) -> None:
        super().__init__(file)
        self._context = context

    def _resolve(self, kind: str, name: str) -> Any:
        if kind == _CONTEXT:
            return self._context
        if kind == _CONFIG:
            return self._context.config
        if kind == _RULE and name in RULES:
            return RULES[name]
        raise pickle.UnpicklingError(f"unknown reference {(kind, name)!r}")

    def find_class(self, module: str, name: str) -> Any:
        if module == __name__ and name == _reference.__name__:
            return self._resolve  # bound to the context this reader resolves with
        if (module, name) in _BUILTINS:
            return super().find_class(module, name)
        allowed = module.startswith(_PACKAGES) or (module, name) in _CLASSES or _is_rule_module(module)
        if not allowed or "." in name:
            raise pickle.UnpicklingError(f"a checked part may not name {module}.{name}")
        try:
            found = super().find_class(module, name)
        except (ImportError, AttributeError):
            raise pickle.UnpicklingError(f"no {module}.{name}") from None
        # Only what the module itself defines: not a module or function it imported.
        if not isinstance(found, type | types.FunctionType) or found.__module__ != module:
            raise pickle.UnpicklingError(f"a checked part may not name {module}.{name}")
        return found


def _is_rule_module(module: str) -> bool:
    """Whether `module` is a registered rule's (an extra rule module's functions resolve too);
    asked only of modules outside dra_guard's own packages, so rarely that it is not kept."""
    return any(rule.module == module for rule in RULES.values())


def dump_value(value: Any, context: Context | None = None) -> bytes:
    """`value` as bytes, `context` (and its rules and configuration) by reference: pickle
    errors (PicklingError, TypeError, AttributeError) when something in it cannot be pickled,
    such as a closure an extra rule module keeps in a pending finding."""
    buffer = io.BytesIO()
    _Writer(buffer, context).dump(value)
    return buffer.getvalue()


def load_value(data: bytes, context: Context) -> Any:
    """What `dump_value` wrote, its references bound to `context`; pickle.UnpicklingError
    (or another error of reading) for anything it did not write."""
    return _Reader(io.BytesIO(data), context).load()


def dump_part(part: Part, context: Context) -> bytes:
    """`part`, checked with `context`, as bytes."""
    return dump_value(part, context)


def load_part(data: bytes, context: Context) -> Part:
    """The part in `data`, its pending findings bound to `context` (which resolves them)."""
    part = load_value(data, context)
    if not isinstance(part, Part):
        raise pickle.UnpicklingError("not a checked part")
    return part
