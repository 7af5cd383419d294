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
from typing import Any, Callable, Sequence

import numpy as np
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
    return checked(raw, value)


def checked(raw: bytes | str, value):
    """`value`, orjson's reading of `raw`, once what orjson lets through is ruled out (nesting
    deeper than MAX_DEPTH, a duplicate key, an integer beyond 64 bits); else NotJson."""
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


def unkept(texts: Sequence[bytes], values: Sequence, encode: Callable[[Any], bytes], bounded: bool = False) -> list[int]:
    """The indexes of the texts a typed decoder read as `values` that `checked` may still refuse,
    or that hold a member the decoder did not keep: nested as deep as MAX_DEPTH brackets allow
    (unless the decoder's types are `bounded` below that depth), or with fewer `:` in the value
    written back (`encode`, leaving out members at their default) than in the text: a duplicate
    key, or a member the decoder skips (which may hold an integer beyond 64 bits or nest too
    deep). Judged on the batch joined, then text by text only when the batch is suspect, with
    numpy: `bytes.count` over a batch costs more than its decoding. (A text never has fewer `:`
    than its value written back unless it escapes one, which `u003` catches.)"""
    joined = b"\n".join(texts)
    text = np.frombuffer(joined, np.uint8)
    found: set[int] = set()
    if not bounded:
        bounds = np.cumsum([0, *(len(t) + 1 for t in texts)])
        brackets = np.diff(np.searchsorted(np.flatnonzero((text == ord("{")) | (text == ord("["))), bounds))
        found.update(np.flatnonzero(brackets > MAX_DEPTH).tolist())
    written = np.frombuffer(encode(values), np.uint8)
    escaped = bool(np.any((text[:-3] == ord("u")) & (text[1:-2] == ord("0")) & (text[2:-1] == ord("0")) & (text[3:] == ord("3"))))
    if escaped or np.count_nonzero(text == ord(":")) > np.count_nonzero(written == ord(":")):
        found.update(i for i, (t, v) in enumerate(zip(texts, values)) if t.count(b":") > encode(v).count(b":") or b"u003" in t)
    return sorted(found)


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
