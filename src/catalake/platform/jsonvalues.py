"""Small conversions of parsed JSON values shared by the record reader, the matcher and the tables."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import re

import orjson

INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
# RFC 3339 `date-time` (section 5.6): full date, `T` (or `t`, or a space as its note allows),
# full time with optional fraction, and a zone: `Z` / `z` or a numeric offset. Required.
RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})"
)
UTC = dt.timezone.utc


def is_integer(value) -> bool:
    """A JSON integer as parsed (a bool is not one)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value) -> bool:
    """A JSON number as parsed (a bool is not one)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def as_text(value) -> str | None:
    """A JSON value as text: strings as they are, other scalars and structures as JSON text
    (what a header or attribute holds when it is not a string)."""
    if value is None or isinstance(value, str):
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    return orjson.dumps(value).decode()


def as_int(value, bits: int = 64) -> int | None:
    """An integer within the signed range of `bits`, from a JSON number or text; else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and INTEGER_TEXT.fullmatch(value.strip()):
        number = int(value)
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    else:
        return None
    limit = 1 << (bits - 1)
    return number if -limit <= number < limit else None


def name_value_map(value) -> dict[str, str] | None:
    """Headers or properties as landed: an object, an array of {name, value}, or kcat's flat
    [n1, v1, n2, v2, ...] -> {lower-case name: text}; a repeated name keeps its last value."""
    if isinstance(value, dict):
        return {str(k).lower(): as_text(v) for k, v in value.items()}
    if isinstance(value, list):
        if all(isinstance(x, dict) for x in value):
            return {str(x["name"]).lower(): as_text(x.get("value")) for x in value if x.get("name") is not None}
        return {(as_text(value[i]) or "").lower(): as_text(value[i + 1]) if i + 1 < len(value) else None
                for i in range(0, len(value), 2)}
    return None


def rfc3339(text) -> dt.datetime | None:
    """An RFC 3339 date-time as an aware datetime, or None when `text` is not one."""
    if not isinstance(text, str):
        return None
    match = RFC3339.fullmatch(text)
    if match is None:
        return None
    if text[10] == "T" and text[-1] != "z" and text[17:19] != "60":
        try:
            return dt.datetime.fromisoformat(text)  # the common form, in C
        except ValueError:
            pass  # decided below (an impossible date is None there too)
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    try:
        offset = UTC if zone in ("Z", "z") else dt.timezone(
            (1 if zone[0] == "+" else -1) * dt.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
        micros = int((fraction[1:] + "000000")[:6]) if fraction else 0
        second = min(int(second), 59)  # a leap second is the last second of its minute
        return dt.datetime(int(year), int(month), int(day), int(hour), int(minute), second, micros, tzinfo=offset)
    except ValueError:
        return None


def iso_datetime(text) -> dt.datetime | None:
    """A date-time in any ISO 8601 form Python reads (a payload's `date-time`, or an Avro
    timestamp as text); without an offset it is UTC."""
    if not isinstance(text, str):
        return None
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def from_base64(text) -> bytes | None:
    if not isinstance(text, str):
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None

