"""JSON Schema `pattern`s are ECMA 262 regular expressions (JSON Schema validation 6.3.3). A
catalog's pattern runs on every value a producer sends, so what it costs must not depend on how
the pattern is written: the classifier runs patterns on RE2 (google-re2), whose automata take time
linear in the value whatever the pattern (`^(a+)+$` on 100,000 characters: under a millisecond,
where a backtracking engine never finishes). GX runs the suites' regexes with Java's engine
(Spark's `rlike`) on stored rows, which matched them in the pass already.

Translated: named groups `(?<name>...)` become `(?P<name>...)`; `\\uXXXX` becomes RE2's
`\\x{XXXX}`; `\\d`, `\\w`, `\\b` and `\\s` are ASCII as in ECMA 262 (RE2's Perl classes are ASCII,
Python's `re` is checked with `re.ASCII`); `$` is the end of the value, as in ECMA 262 (Python's
`$` also matches before a final line break).
Backtracking (no linear-time form, so RE2 refuses them): backreferences (`\\1`) and
lookaround (`(?=`, `(?!`, `(?<=`, `(?<!`). Such a pattern runs on the `regex` module with a time
budget per value (`BUDGET_SECONDS`): a value over it raises `PatternTimeout`, and its record is a
`pattern_timeout` dead letter; `catalake catalog validate` warns of such patterns
(`backtracking_construct`).
Refused (no faithful form in both engines): `[^]` (any character), `\\u{...}` code point
escapes, `\\cX` control escapes, and anything Python cannot compile.
"""

from __future__ import annotations

import re
from functools import lru_cache

import regex as backtracking
from re2 import (
    _re2,  # the binding itself: re2.py builds match objects and offsets (9 us a value), we need yes or no (1.7 us)
)

from .errors import PatternError, PatternTimeout

NAMED_GROUP = re.compile(r"(?<!\\)\(\?<([A-Za-z_][A-Za-z0-9_]*)>")
UNICODE_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u([0-9A-Fa-f]{4})")
REFUSED = (
    (re.compile(r"(?<!\\)\[\^\]"), "[^] (any character) is ECMA 262 only"),
    (re.compile(r"(?<!\\)\\u\{"), r"\u{...} code point escapes are ECMA 262 only"),
    (re.compile(r"(?<!\\)\\c[A-Za-z]"), r"\cX control escapes are not read by Python"),
)
BACKTRACKING = (
    (re.compile(r"(?<!\\)((?:\\\\)*)\\[1-9]"), "a backreference (\\N)"),
    (re.compile(r"(?<!\\)\(\?<?[=!]"), "lookaround ((?=, (?!, (?<=, (?<!)"),
)
BUDGET_SECONDS = 0.1  # what one value may take on a backtracking pattern before its record is dead-lettered
ANYWHERE = _re2.RE2.Anchor.UNANCHORED
SEEN_VALUES, SEEN_LENGTH = 4096, 64  # verdicts kept per pattern: at most this many values, this short
MISSING = object()




class LinearPattern:
    """A pattern on RE2: `search` answers in time linear in the value (True, or None)."""

    __slots__ = ("pattern", "where", "_compiled", "_seen")

    def __init__(self, pattern: str, where: str, compiled):
        self.pattern, self.where, self._compiled = pattern, where, compiled
        self._seen: dict[str, bool | None] = {}

    def search(self, text: str) -> bool | None:
        # RE2 answers in ~1.3 us a call through its binding (Python's re: ~0.4 us); events repeat
        # their short values (statuses, currencies, kinds), so the verdicts of the first ones are kept
        found = self._seen.get(text, MISSING)
        if found is not MISSING:
            return found
        encoded = text.encode("utf-8", "surrogatepass")
        found = True if self._compiled.Match(ANYWHERE, encoded, 0, len(encoded))[0][0] >= 0 else None
        if len(self._seen) < SEEN_VALUES and len(text) <= SEEN_LENGTH:
            self._seen[text] = found
        return found

    def __reduce__(self):
        return compile_pattern, (self.pattern, self.where)


class BudgetedPattern:
    """A pattern RE2 cannot run, on the backtracking `regex` module with a time budget per value."""

    __slots__ = ("pattern", "where", "_compiled")

    def __init__(self, pattern: str, where: str, compiled):
        self.pattern, self.where, self._compiled = pattern, where, compiled

    def search(self, text: str) -> bool | None:
        try:
            return True if self._compiled.search(text, timeout=BUDGET_SECONDS) is not None else None
        except TimeoutError:
            raise PatternTimeout(self.pattern, self.where, len(text), BUDGET_SECONDS,
                                 backtracking_construct(self.pattern)) from None

    def __reduce__(self):
        return compile_pattern, (self.pattern, self.where)


def _translated(pattern: str) -> str:
    """An ECMA 262 pattern in the syntax Python and RE2 share, or PatternError saying why not."""
    for construct, why in REFUSED:
        if construct.search(pattern):
            raise PatternError(f"pattern {pattern!r}: {why}")
    translated = NAMED_GROUP.sub(r"(?P<\1>", pattern)
    try:
        re.compile(translated, re.ASCII)
    except re.error as exc:
        raise PatternError(f"pattern {pattern!r} is not a regular expression: {exc}") from None
    return translated


def _linear(translated: str):
    """RE2's compiled form, or None where RE2 has no linear-time form of the pattern."""
    options = _re2.RE2.Options()
    options.never_capture = True
    options.log_errors = False
    compiled = _re2.RE2(UNICODE_ESCAPE.sub(r"\1\\x{\2}", translated).encode(), options)
    return compiled if compiled.ok() else None


@lru_cache(maxsize=None)  # one compiled form (and one verdict memo) per pattern and field, however many ask
def compile_pattern(pattern: str, where: str = "") -> LinearPattern | BudgetedPattern:
    """An ECMA 262 pattern ready to `search` values: on RE2, or with a time budget where RE2
    cannot run it. `where` (a field) is named when a value runs over the budget."""
    translated = _translated(pattern)
    compiled = _linear(translated)
    if compiled is not None:
        return LinearPattern(pattern, where, compiled)
    try:
        return BudgetedPattern(pattern, where, backtracking.compile(translated, backtracking.ASCII | backtracking.V0))
    except backtracking.error as exc:
        raise PatternError(f"pattern {pattern!r} is not a regular expression: {exc}") from None


def backtracking_construct(pattern: str) -> str | None:
    """What makes a valid pattern backtrack (a backreference, lookaround), or None when it runs
    in linear time."""
    translated = _translated(pattern)
    if _linear(translated) is not None:
        return None
    for construct, name in BACKTRACKING:
        if construct.search(translated):
            return name
    return "a construct RE2 cannot run"
