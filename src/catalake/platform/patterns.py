"""JSON Schema `pattern`s are ECMA 262 regular expressions (JSON Schema validation 6.3.3). The
classifier runs them with Python's `re`, GX with Java's (Spark's `rlike`). What those read
differently from ECMA 262 is translated where it can be, refused with a clear error where not.

Translated for Python: `\\d`, `\\w`, `\\b` are ASCII in ECMA 262 (and Java) but Unicode in
Python, so patterns compile with `re.ASCII`; named groups `(?<name>...)` become `(?P<name>...)`.
Refused (no faithful form in both engines): `[^]` (any character), `\\u{...}` code point
escapes, `\\cX` control escapes, and anything Python cannot compile.
"""

from __future__ import annotations

import re

from .errors import CatalakeError

NAMED_GROUP = re.compile(r"(?<!\\)\(\?<([A-Za-z_][A-Za-z0-9_]*)>")
REFUSED = (
    (re.compile(r"(?<!\\)\[\^\]"), "[^] (any character) is ECMA 262 only"),
    (re.compile(r"(?<!\\)\\u\{"), r"\u{...} code point escapes are ECMA 262 only"),
    (re.compile(r"(?<!\\)\\c[A-Za-z]"), r"\cX control escapes are not read by Python"),
)


class PatternError(CatalakeError, ValueError):
    """A pattern the classifier and GX would not read as ECMA 262 does."""


def python_regex(pattern: str) -> re.Pattern:
    """An ECMA 262 pattern as Python reads it the same way, or PatternError saying why not."""
    for construct, why in REFUSED:
        if construct.search(pattern):
            raise PatternError(f"pattern {pattern!r}: {why}")
    try:
        return re.compile(NAMED_GROUP.sub(r"(?P<\1>", pattern), re.ASCII)
    except re.error as exc:
        raise PatternError(f"pattern {pattern!r} is not a regular expression: {exc}") from None
