"""CloudEvents attribute types and declared values: one function per rule, shared by everything that
applies it, so that a record the matcher takes is never refused by its own table's suite.

* the matcher (matcher.py) asks `accepts(kind, text)` and `value_rule(name, kind, declared)` of
  the attribute's text as the record carries it;
* the table row (classifier.py) stores `column_value(kind, text)`: the same parse, so a typed
  column holds exactly the values the matcher accepted;
* the suite (expectations.py, and through it the classifier's compiled checks in evaluation.py and
  GX) expects `TEXT_SYNTAX[kind]` of a text column, a declared value as `value_set(kind, declared)`
  of the typed column, and a content type as `media_type_regex(declared)`.

Types (CloudEvents 1.0 "Type System", xRegistry message spec "Type System"):
* integer: optional sign and decimal digits, within 32 bits (CloudEvents Integer);
* boolean: `true` or `false`, case-sensitive;
* binary: base64 (RFC 4648 section 4, padded) that decodes;
* timestamp: RFC 3339 with its offset (`jsonvalues.rfc3339`);
* uri: an absolute URI (RFC 3986 4.3: a scheme, `:`, then no character RFC 3986 leaves out of
  URIs: controls, space, `<>"{}|\\^` and backtick); urireference: the same without the scheme;
* string, uritemplate: any text.

Regexes are written for both engines that run them, Python's `re` (matcher, compiled checks) and
Java's (GX on Spark): explicit ASCII classes, no inline flags, no `$` (see END).
"""

from __future__ import annotations

import re
from typing import Any, Callable

from ..jsonvalues import INTEGER_TEXT, from_base64, rfc3339
from ..patterns import compile_pattern

INT32 = 1 << 31
# the absolute end of the text: `$` also matches before a final line break, and Java counts `\r`
# (and a few more) as one where Python does not
END = r"(?![\s\S])"
# RFC 3986 section 2: no URI holds a control character, a space or one of these
URI_CHARACTER = r"""[^\x00-\x20\x7f<>"{}|\\^`]"""
URI = rf"^[A-Za-z][A-Za-z0-9+.-]*:{URI_CHARACTER}*{END}"
URI_REFERENCE = rf"^{URI_CHARACTER}*{END}"
# text-typed attributes with a syntax: the matcher's rule and the suite's regex
TEXT_SYNTAX = {"uri": URI, "urireference": URI_REFERENCE}
OWS = r"[ \t]*"  # RFC 9110 5.6.3 optional white space


def parse_integer(text: str) -> int | None:
    if INTEGER_TEXT.fullmatch(text) is None:
        return None
    number = int(text)
    return number if -INT32 <= number < INT32 else None


def parse_boolean(text: str) -> bool | None:
    return {"true": True, "false": False}.get(text)


# typed attributes: text -> the column's value, None when the text is not of the type
PARSERS: dict[str, Callable[[str], Any]] = {
    "integer": parse_integer,
    "boolean": parse_boolean,
    "binary": from_base64,
    "timestamp": rfc3339,
}


def accepts(kind: str, text: str) -> bool:
    """Whether an attribute's text is of its declared type (an unknown type takes any text)."""
    if kind in PARSERS:
        return PARSERS[kind](text) is not None
    if kind in TEXT_SYNTAX:
        return compile_pattern(TEXT_SYNTAX[kind]).search(text) is not None
    return True


def column_value(kind: str, text: str | None) -> Any:
    """What the table's column holds for the attribute's text: the parsed value of a typed
    attribute (None when it does not parse), the text of any other."""
    if text is None or kind not in PARSERS:
        return text
    return PARSERS[kind](text)


def is_content_type(name: str) -> bool:
    """An attribute or protocol option naming the payload's media type (CloudEvents
    `datacontenttype`, a binding's `content-type`)."""
    return name.lower() in ("datacontenttype", "content-type", "content_type", "contenttype")


def declared_text(value) -> str | None:
    """A declared `value` as the text a record's attribute would carry (`true`, `5`)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def value_rule(name: str, kind: str, declared: str) -> Callable[[str], bool]:
    """Whether an attribute's text equals its declared `value` (xRegistry "value": the attribute
    is a constant): a content type as a media type (`media_type_matches`), a typed attribute by
    its parsed value (`5` and `+5` are the integer 5), any other as the same text."""
    if is_content_type(name):
        regex = compile_pattern(media_type_regex(declared))
        return lambda text: regex.search(text) is not None
    if kind in PARSERS:
        want = PARSERS[kind](declared)
        parse = PARSERS[kind]
        return lambda text: want is not None and parse(text) == want
    return lambda text: text == declared


# xRegistry message spec "value": a timestamp attribute whose value is 0000-01-01T00:00:00Z is
# given the current time when a message is created. Also read as that placeholder: the 0.5
# draft's spelling (01-01-0000T00:00:00Z) and 0001-01-01T00:00:00Z, which the xRegistry tools
# write (xregistry-codegen's and xregistry-cli's Microsoft.Storage catalogs); any zero offset
CREATION_TIME = re.compile(r"(?:000[01]-01-01|01-01-0000)[Tt]00:00:00(?:\.0+)?(?:[Zz]|[+-]00:?00)")


def timestamp_value_filters(declared: str | None) -> bool:
    """Whether a `timestamp` attribute's declared `value` is a filter. rc2 "value": setting a
    value makes it constant for every instance of the message, so a plain timestamp is compared
    as an instant (`value_rule`: `10:00:00Z` equals `11:00:00+01:00`); the exception is the
    creation-time placeholder (`CREATION_TIME`), which producers replace with the current time,
    so it filters nothing. A template (`{view_date}T00:00:00Z`) is matched as a template."""
    return declared is not None and CREATION_TIME.fullmatch(declared.strip()) is None


def value_set(kind: str, declared: str) -> list:
    """The declared `value` as its typed column holds it (the suite's `value_set`); a value that
    does not parse stays text, which no value of the column equals."""
    typed = column_value(kind, declared)
    return [declared if typed is None else typed]


# -- media types (RFC 9110 8.3.1, RFC 2046)

def _caseless(text: str) -> str:
    """`text` as a regex matching it in any ASCII case (`[tT][eE][xX][tT]`): inline flags differ
    between the engines (Python's `(?i)` folds non-ASCII letters too)."""
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isascii() and c.isalpha() else re.escape(c) for c in text)


def _media_type(text: str) -> tuple[str, list[tuple[str, str]]]:
    """A declared media type as (type/subtype, [(parameter, value)]), its parts trimmed and a
    quoted value unquoted."""
    head, *params = text.split(";")
    parsed = []
    for param in params:
        name, _, val = param.partition("=")
        if name.strip():
            parsed.append((name.strip(), val.strip().strip('"')))
    return head.strip(), parsed


def media_type_regex(declared: str) -> str:
    """The regex of the content types a declared one accepts: the same type and subtype, and
    every parameter it declares with the same value, in any order and among any others
    (`application/json` takes `application/json; charset=utf-8`). Type, subtype, parameter names
    and the `charset` value compare case-insensitively (RFC 9110 8.3.1, 8.3.2); other values
    exactly, quoted or not."""
    head, params = _media_type(declared)
    required = []
    for name, val in params:
        value = _caseless(val) if name.lower() == "charset" else re.escape(val)
        required.append(f'(?=(?:;[^;]*)*?;{OWS}{_caseless(name)}{OWS}={OWS}"?{value}"?{OWS}(?:;|{END}))')
    return f"^{OWS}{_caseless(head)}{OWS}{''.join(required)}(?:;[\\s\\S]*)?{END}"


def media_type_matches(declared: str, value: str) -> bool:
    """Whether a content type is one the declared one accepts (`media_type_regex`)."""
    return compile_pattern(media_type_regex(declared)).search(value) is not None


def same_media_type(a: str, b: str) -> bool:
    """Two declarations of the same media type: each accepts the other."""
    return media_type_matches(a, b) and media_type_matches(b, a)
