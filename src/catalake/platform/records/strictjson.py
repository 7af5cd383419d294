"""Landed text -> a JSON value, read strictly (RFC 8259), with a reason when it is refused.

orjson is the reader (fast, and it already refuses NaN/Infinity, invalid UTF-8 and nesting past
1,024 levels), but it keeps the last of duplicate keys and turns integers beyond 64 bits into
floats, silently. Both are caught by a cheap test on the text and, only when that test fires,
an exact second reading with the standard library's hooks (orjson has none), which also gives
the JSON pointer of the offending member.
"""

from __future__ import annotations

import json
import re

import orjson

from ..errors import NotJson

MAX_DEPTH = 128  # nesting levels of a landed record (objects and arrays)

_NOT_A_NUMBER = re.compile(rb"-?(NaN|Infinity)")



def loads(raw: bytes | str):
    """The JSON value of `raw`, or NotJson saying why not."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _refused(raw, exc) from None
    if not isinstance(value, (dict, list)):
        return value
    text = raw.encode() if isinstance(raw, str) else raw
    if text.count(b"{") + text.count(b"[") > MAX_DEPTH:
        depth = _depth(value)
        if depth > MAX_DEPTH:
            raise NotJson("too_deep", f"nested {depth} levels deep; the limit is {MAX_DEPTH}")
    if _suspect(text, orjson.dumps(value)):
        _exact(text)
    return value


def _suspect(text: bytes, written: bytes) -> bool:
    """Whether `text` may hold a duplicate key or an integer beyond 64 bits, judged from the
    value written back by orjson with byte counts only (a regular expression costs more than
    the parse). A false alarm only costs the exact reading."""
    # orjson writes every float from 1e16 up, big integers read as floats included, as `<m>e+<n>`
    # a dropped duplicate member takes its `:` with it; string values are written back with
    # theirs, unless the text escaped one (`\u003a`)
    return b"e+" in written or text.count(b":") > written.count(b":") or b"u003" in text


def _refused(raw, exc: orjson.JSONDecodeError) -> NotJson:
    message = str(exc)
    if "UTF-8" in message:
        return NotJson("invalid_utf8", f"not valid UTF-8 text: {message}")
    if "depth limit" in message:
        return NotJson("too_deep", f"nested more than {MAX_DEPTH} levels deep ({message})")
    text = raw.encode() if isinstance(raw, str) else bytes(raw)
    word = _NOT_A_NUMBER.match(text, exc.pos)
    if word:
        return NotJson("malformed_json", f"not valid JSON: {word.group().decode()} is not a JSON number (char {exc.pos})")
    if "infinity" in message:
        return NotJson("malformed_json", f"not valid JSON: a number too large for a double ({message})")
    return NotJson("malformed_json", f"not valid JSON: {message}")


def _depth(value) -> int:
    """Nesting depth of `value` (iteratively: no recursion limit)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return deepest


class _Duplicate:
    def __init__(self, key: str):
        self.key = key


class _BigInt:
    def __init__(self, text: str):
        self.text = text


def _pairs(pairs):
    seen = {}
    for key, value in pairs:
        if key in seen:
            return _Duplicate(key)
        seen[key] = value
    return seen


def _integer(text: str):
    number = int(text)
    return number if -(1 << 63) <= number < (1 << 64) else _BigInt(text)


def _exact(text: bytes) -> None:
    """Read again with the standard library to find a duplicate key or an integer beyond 64 bits."""
    value = json.loads(text, object_pairs_hook=_pairs, parse_int=_integer)
    stack = [(value, "")]
    while stack:
        node, pointer = stack.pop()
        if isinstance(node, _Duplicate):
            raise NotJson("malformed_json", f"duplicate key {node.key!r} in the object at {pointer or '/'}")
        if isinstance(node, _BigInt):
            digits = node.text if len(node.text) <= 30 else node.text[:27] + "..."
            raise NotJson("malformed_json", f"integer {digits} at {pointer} is outside the 64-bit range")
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in items:
            stack.append((child, f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}"))
