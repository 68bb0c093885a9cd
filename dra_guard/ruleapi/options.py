"""Typed configuration options: one declaration gives the parser, its errors, schema and docs.

A rule module declares the options only it reads (`OPTIONS = (Option(...),)`); options
several rules share are declared in `dra_guard.ruleapi.config`.  An option's *type* owns what
its values look like: how a configuration value is parsed (and the error when it cannot
be), its JSON-schema fragment (the Pulumi pack's config schema) and how the docs name it.
Rules read values through `Config.get(option)`, typed by the option.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from fnmatch import fnmatchcase
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from dra_guard.contract.catalog import has_visible_character
from dra_guard.contract.waivers import parse_expiry

T_co = TypeVar("T_co", covariant=True)
T = TypeVar("T")

_KEY = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RULE_ID = re.compile(r"DRA(\d{3})")


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the source and the key."""


#: Reads one file of manifests: the objects in it, in order (see `ParseContext.read_manifests`).
ReadManifests = Callable[[str], Sequence[Any]]


@dataclass(frozen=True)
class ParseContext:
    """What parsing needs besides the value itself."""

    #: The registry's rule IDs, in order (for options that name rules).
    rule_ids: Sequence[str]
    #: Where options that name an environment variable read it (os.environ by default).
    environ: Mapping[str, str | bytes]
    #: The folder relative paths in the values are relative to: the configuration file's
    #: (None: the working directory, for values that come from no file).
    directory: str | None = None
    #: Reads a file of manifests that an option names (resource-slices), for its parse: the
    #: objects it holds, or ConfigError naming the file and line.  Given by the reading layer
    #: (`dra_guard.read.config_file`), so that no option, and no rule, opens a file itself;
    #: None where nothing may be read.
    read_manifests: ReadManifests | None = None
    #: The registry's rule names, each to its ID (for options that name rules by name).
    rule_names: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


class OptionType(ABC, Generic[T_co]):
    """The kind of value an option takes."""

    #: How the docs name the accepted values ("list of strings").
    description: str

    @abstractmethod
    def parse(self, key: str, value: object, context: ParseContext) -> T_co:
        """The parsed value; raises ConfigError with a message that starts with `key`."""

    @abstractmethod
    def json_schema(self) -> dict[str, Any]:
        """The JSON-schema fragment for a value as written in a configuration."""

    def to_json(self, value: object) -> Any:
        """A parsed value as it would be written in a configuration (docs, schema defaults)."""
        return value


class StringSet(OptionType[frozenset[str]]):
    description = "list of strings"

    def parse(self, key: str, value: object, context: ParseContext) -> frozenset[str]:
        # A bare string is refused, not read as a list of its characters.
        if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
            raise ConfigError(f"{key}: must be a list of strings")
        return frozenset(value)

    def json_schema(self) -> dict[str, Any]:
        return {"type": "array", "items": {"type": "string"}}

    def to_json(self, value: object) -> Any:
        return sorted(value) if isinstance(value, frozenset) else value


class StringMap(OptionType[Mapping[str, str]]):
    """A mapping of non-empty strings to non-empty strings."""

    def __init__(self, description: str = "mapping of strings to strings") -> None:
        self.description = description

    def parse(self, key: str, value: object, context: ParseContext) -> Mapping[str, str]:
        if not isinstance(value, Mapping) or not all(
            isinstance(name, str) and name and isinstance(item, str) and item for name, item in value.items()
        ):
            raise ConfigError(f"{key}: must be a {self.description}")
        return MappingProxyType(dict(value))

    def json_schema(self) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": {"type": "string"}}

    def to_json(self, value: object) -> Any:
        return dict(sorted(value.items())) if isinstance(value, Mapping) else value


class StringList(OptionType[tuple[str, ...]]):
    """Strings whose order matters (exclude patterns: a later `!pattern` re-includes)."""

    description = "list of strings"

    def parse(self, key: str, value: object, context: ParseContext) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
            raise ConfigError(f"{key}: must be a list of strings")
        return tuple(value)

    def json_schema(self) -> dict[str, Any]:
        return {"type": "array", "items": {"type": "string"}}

    def to_json(self, value: object) -> Any:
        return list(value) if isinstance(value, tuple) else value


class RuleIdSet(StringSet):
    description = "list of rule IDs"

    def parse(self, key: str, value: object, context: ParseContext) -> frozenset[str]:
        names = super().parse(key, value, context)
        unknown = sorted(name for name in names if name not in context.rule_ids)
        if unknown:
            raise ConfigError(f"{key}: unknown rule {', '.join(unknown)}; known rules are {_ranges(context.rule_ids)}")
        return names


def _ranges(rule_ids: Sequence[str]) -> str:
    """Consecutive IDs as one range (`<first>-<last>`), the runs joined by commas."""
    numbers = sorted(int(match.group(1)) for rule_id in rule_ids if (match := _RULE_ID.fullmatch(rule_id)))
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ", ".join(f"DRA{run[0]:03d}" + (f"-DRA{run[-1]:03d}" if len(run) > 1 else "") for run in runs)


@dataclass(frozen=True)
class Secret:
    """A value read from the environment (or handed over in memory); never printed."""

    #: Where it came from, for messages: the environment variable's name.
    variable: str
    value: bytes = field(repr=False)


class EnvSecret(OptionType[Secret | None]):
    """The name of an environment variable whose value is a secret; parsing reads it.

    A variable that is not set is a configuration error in every front end, so a
    misconfigured key can never quietly mean "no key".
    """

    description = "environment variable name"

    def __init__(self, needed_for: str) -> None:
        #: What cannot work without the value, said in the error when it is missing.
        self.needed_for = needed_for

    def parse(self, key: str, value: object, context: ParseContext) -> Secret | None:
        if not isinstance(value, str) or not _ENV_NAME.fullmatch(value):
            raise ConfigError(f"{key}: must be an environment variable name")
        secret = context.environ.get(value)
        if not secret:
            raise ConfigError(f"{key} names {value}, which is not set or empty; {self.needed_for}")
        return Secret(value, secret.encode("utf-8") if isinstance(secret, str) else secret)

    def json_schema(self) -> dict[str, Any]:
        return {"type": "string"}

    def to_json(self, value: object) -> Any:
        return value.variable if isinstance(value, Secret) else value


@dataclass(frozen=True)
class Option(Generic[T]):
    """One configuration key: `Option(key="admin-namespaces", type=STRING_SET, default=frozenset(), doc=...)`."""

    #: kebab-case, as written in .dra-guard.yaml and [tool.dra-guard].
    key: str
    type: OptionType[T]
    default: T
    doc: str
    #: Shown in the docs instead of the default's value, when that says little (None).
    default_doc: str | None = None
    #: Chooses which rules run.  The Pulumi pack does not take these: it chooses with
    #: each policy's enforcement level instead.
    selects_rules: bool = False
    #: Chooses which files the CLI reads.  Only the CLI takes these: enforce() and the
    #: Pulumi pack check objects, not files.
    selects_files: bool = False
    #: Read by `dra-guard check` alone (how it exits: `fail-on`), not by the checking it
    #: shares with enforce() and the Pulumi pack, which do not take it.
    cli_only: bool = False
    #: The `dra-guard check` flag whose values add to this option (`--slices`), so that the
    #: CLI finds the option by its flag, not by the key of a rule's option.
    command_line: str | None = None

    def __post_init__(self) -> None:
        if not _KEY.fullmatch(self.key):
            raise ValueError(f"option key {self.key!r} is not kebab-case")
        if not isinstance(self.type, OptionType):
            raise TypeError(f"option {self.key}: type must be an OptionType, not {type(self.type).__name__}")

    @property
    def camel_key(self) -> str:
        """The key in the Pulumi pack's config: `admin-namespaces` -> `adminNamespaces`."""
        first, *rest = self.key.split("-")
        return first + "".join(word.capitalize() for word in rest)

    def parse(self, key: str, value: object, context: ParseContext) -> T:
        return self.type.parse(key, value, context)

    def schema(self) -> dict[str, Any]:
        """The option's JSON schema, with its default when the default can be written."""
        schema = {**self.type.json_schema(), "description": self.doc}
        if self.default is not None:
            schema["default"] = self.type.to_json(self.default)
        return schema


class OneOf(OptionType[str]):
    """One string of a fixed list; YAML and TOML numbers such as `1.36` are read as their text."""

    def __init__(self, choices: Sequence[str], what: str) -> None:
        self.choices = tuple(choices)
        self.description = what

    def parse(self, key: str, value: object, context: ParseContext) -> str:
        # An unquoted `1.36` arrives as a float; `1.30` would arrive as 1.3, so a number is
        # accepted only when its shortest text is one of the choices.
        text = repr(value) if isinstance(value, float) else value
        if not isinstance(text, str) or text not in self.choices:
            raise ConfigError(f"{key}: must be one of {', '.join(self.choices)}; got {value!r}")
        return text

    def json_schema(self) -> dict[str, Any]:
        return {"type": "string", "enum": list(self.choices)}


class OptionalFlag(OptionType[bool | None]):
    """true, false, or unset (None: the documented default applies)."""

    description = "true or false"

    def parse(self, key: str, value: object, context: ParseContext) -> bool | None:
        if value is not None and not isinstance(value, bool):
            raise ConfigError(f"{key}: must be true or false, got {value!r}")
        return value

    def json_schema(self) -> dict[str, Any]:
        return {"type": "boolean"}


class PositiveInteger(OptionType[int]):
    """A whole number of at least 1 (a YAML or TOML integer, not a boolean, not a string)."""

    def __init__(self, description: str = "positive integer") -> None:
        self.description = description

    def parse(self, key: str, value: object, context: ParseContext) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{key}: must be a positive integer, got {value!r}")
        return value

    def json_schema(self) -> dict[str, Any]:
        return {"type": "integer", "minimum": 1}


@dataclass(frozen=True)
class ConfiguredWaiver:
    """One entry of the `waivers` option: a rule's findings on the objects its globs match,
    accepted for a reason (until `expires`, when it has one)."""

    #: Its place in the list, for messages and reports (`waivers[2]`).
    index: int
    #: The rule's ID (the configuration may name it by name).
    rule: str
    reason: str
    #: fnmatch globs, matched case-sensitively; None matches every value.
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    owner: str | None = None
    #: The last day it waives (UTC).
    expires: date | None = None

    def matches(self, rule: str, kind: str, namespace: str, name: str) -> bool:
        """Whether it covers a finding of `rule` on the object `kind`/`namespace`/`name`."""
        return (
            rule == self.rule
            and (self.kind is None or fnmatchcase(kind, self.kind))
            and (self.namespace is None or fnmatchcase(namespace, self.namespace))
            and (self.name is None or fnmatchcase(name, self.name))
        )


class WaiverList(OptionType[tuple[ConfiguredWaiver, ...]]):
    """`waivers`: a list of {rule, kind, namespace, name, reason, owner, expires}."""

    description = "list of {rule, kind, namespace, name, reason, owner, expires}"
    _GLOBS = ("kind", "namespace", "name")
    _KEYS = ("rule", *_GLOBS, "reason", "owner", "expires")

    def parse(self, key: str, value: object, context: ParseContext) -> tuple[ConfiguredWaiver, ...]:
        if not isinstance(value, list):
            raise ConfigError(f"{key}: must be a list of waivers, each {{rule, reason, ...}}")
        return tuple(self._entry(f"{key}[{index}]", index, entry, context) for index, entry in enumerate(value))

    def _entry(self, where: str, index: int, entry: object, context: ParseContext) -> ConfiguredWaiver:
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{where}: must be a mapping with rule and reason, not a {type(entry).__name__}")
        unknown = sorted(str(name) for name in entry if name not in self._KEYS)
        if unknown:
            raise ConfigError(f"{where}: unknown key {', '.join(unknown)}; the keys are {', '.join(self._KEYS)}")
        if "rule" not in entry:
            raise ConfigError(f"{where}.rule: required: the ID or name of the rule it waives")
        rule = entry["rule"]
        rule_id = rule if isinstance(rule, str) and rule in context.rule_ids else None
        if isinstance(rule, str) and rule_id is None:
            rule_id = context.rule_names.get(rule)
        if rule_id is None:
            raise ConfigError(
                f"{where}.rule: unknown rule {rule!r}; known rules are {_ranges(context.rule_ids)} or their names"
            )
        if "reason" not in entry:
            raise ConfigError(f"{where}.reason: required: why the rule's findings are accepted there")
        reason = entry["reason"]
        if not isinstance(reason, str) or not has_visible_character(reason):
            raise ConfigError(f"{where}.reason: must be a reason that shows something, got {reason!r}")
        globs: dict[str, str] = {}
        for name in self._GLOBS:
            glob = entry.get(name)
            if glob is not None and (not isinstance(glob, str) or not glob):
                raise ConfigError(f"{where}.{name}: must be a non-empty string (an fnmatch glob), got {glob!r}")
            if glob is not None:
                globs[name] = glob
        owner = entry.get("owner")
        if owner is not None and (not isinstance(owner, str) or not has_visible_character(owner)):
            raise ConfigError(f"{where}.owner: must be a non-empty string (a team, a ticket), got {owner!r}")
        return ConfiguredWaiver(
            index,
            rule_id,
            reason.strip(),
            kind=globs.get("kind"),
            namespace=globs.get("namespace"),
            name=globs.get("name"),
            owner=owner.strip() if owner is not None else None,
            expires=self._expiry(f"{where}.expires", entry.get("expires")),
        )

    @staticmethod
    def _expiry(where: str, value: object) -> date | None:
        if value is None:
            return None
        # YAML and TOML read an unquoted 2027-03-01 as a date; a date and time is refused.
        if isinstance(value, datetime):
            raise ConfigError(f"{where}: must be a date YYYY-MM-DD, not a date and time ({value.isoformat()})")
        if isinstance(value, date):
            return value
        expires = parse_expiry(value) if isinstance(value, str) else None
        if expires is None:
            raise ConfigError(f"{where}: must be a date YYYY-MM-DD, got {value!r}")
        return expires

    def json_schema(self) -> dict[str, Any]:
        text = {"type": "string", "minLength": 1}
        return {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    **dict.fromkeys(("rule", *self._GLOBS, "reason", "owner"), text),
                    "expires": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
                },
                "required": ["rule", "reason"],
                "additionalProperties": False,
            },
        }

    def to_json(self, value: object) -> Any:
        if not isinstance(value, tuple):
            return value
        written = []
        for item in value:
            entry: dict[str, str] = {"rule": item.rule}
            entry.update({name: getattr(item, name) for name in self._GLOBS if getattr(item, name) is not None})
            entry["reason"] = item.reason
            if item.owner is not None:
                entry["owner"] = item.owner
            if item.expires is not None:
                entry["expires"] = item.expires.isoformat()
            written.append(entry)
        return written


STRING_SET = StringSet()
STRING_LIST = StringList()
RULE_IDS = RuleIdSet()
OPTIONAL_FLAG = OptionalFlag()
WAIVER_LIST = WaiverList()
