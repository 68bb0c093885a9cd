"""What a waiver says: the value of an `ignore-<rule>` annotation read as a reason, an owner
and an expiry date, and the dates waivers expire on.

The annotation's value is one string.  Today's form, a plain reason
(`"node burn-in, see OPS-142"`), stays a reason with no owner and no expiry.  A value that
starts with `reason=`, `owner=` or `expires=` is structured: fields `key=value` separated
by `;`, in any order, each at most once, `reason` required, `expires` a date YYYY-MM-DD
(the waiver holds through that day, UTC):

    dra-guard.io/ignore-DRA001: "reason=the vendor chart pins this; owner=OPS-142; expires=2027-03-01"

A `;` followed by anything but `<word>=` belongs to the field before it (a reason may hold
`;`); a `;` followed by a word other than the three keys is an error, not part of the
reason, so that a misspelt `expire=` can never leave a waiver without its expiry.
"""

from __future__ import annotations

import re
from datetime import date
from typing import NamedTuple

from dra_guard.contract.catalog import has_visible_character

__all__ = ["WAIVER_FIELDS", "WaiverText", "parse_expiry", "read_waiver"]

#: The fields of a structured waiver, in the order the docs give them.
WAIVER_FIELDS = ("reason", "owner", "expires")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
#: A field's start: `<word>=`, blanks allowed around the word.
_FIELD = re.compile(r"\s*([A-Za-z][A-Za-z0-9_-]*)\s*=")


class WaiverText(NamedTuple):
    """An annotation's value as a waiver: what it gives, or why it waives nothing."""

    #: The reason, stripped ("" when the value gives none that shows).
    reason: str = ""
    owner: str | None = None
    expires: date | None = None
    #: Why the value waives nothing, said after "the <annotation> annotation" ("gives no
    #: reason"); None when it is a waiver.
    problem: str | None = None


def parse_expiry(text: str) -> date | None:
    """`YYYY-MM-DD` as a date; None for anything else (2027-3-1, 2027-02-30, a time)."""
    if not _DATE.fullmatch(text):
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def _fields(value: str) -> dict[str, str] | str:
    """The fields of a structured value, or the problem with them."""
    fields: dict[str, str] = {}
    current: str | None = None
    for segment in value.split(";"):
        start = _FIELD.match(segment)
        if start is None:
            if current is None:  # pragma: no cover - a structured value starts with a field
                return "gives no field"
            fields[current] += ";" + segment
            continue
        key = start.group(1)
        if key not in WAIVER_FIELDS:
            return f"has an unknown field {key!r} (the fields are {', '.join(WAIVER_FIELDS)})"
        if key in fields:
            return f"gives {key} twice"
        fields[key] = segment[start.end() :]
        current = key
    return fields


def read_waiver(value: object) -> WaiverText:
    """An `ignore-<rule>` annotation's value as a waiver (see the module's docstring)."""
    if not isinstance(value, str):
        return WaiverText(problem="gives no reason")
    start = _FIELD.match(value)
    if start is None or start.group(1) not in WAIVER_FIELDS:
        # A reason that shows nothing (blanks, a zero-width space) gives no reason.
        if not has_visible_character(value):
            return WaiverText(problem="gives no reason")
        return WaiverText(value.strip())
    fields = _fields(value)
    if isinstance(fields, str):
        return WaiverText(problem=fields)
    reason = fields.get("reason", "")
    if not has_visible_character(reason):
        return WaiverText(problem="gives no reason")
    owner = fields.get("owner")
    if owner is not None and not has_visible_character(owner):
        return WaiverText(problem="gives an empty owner")
    expires = None
    if "expires" in fields:
        written = fields["expires"].strip()
        expires = parse_expiry(written)
        if expires is None:
            return WaiverText(problem=f"gives expires={written!r}, which is not a date YYYY-MM-DD")
    return WaiverText(reason.strip(), owner.strip() if owner is not None else None, expires)
