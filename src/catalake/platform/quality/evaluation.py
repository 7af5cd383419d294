"""Data quality from the classification pass: the suite's expectations evaluated on every record.

The classifier builds each matched record's table row (typed as Great Expectations would see
it: a value of the wrong JSON kind is null, see payload.py) and evaluates its table's
expectations on it (`SuiteCheck`), with GX's semantics: a row outside an expectation's row
condition is not evaluated; null values are `missing` and not unexpected, except for
`not_be_null`; regexes search (Spark's `rlike`). ERROR expectations are evaluated on every
matched record (a failure dead-letters it as `schema_violation`, naming the expectation), WARN
ones on the records that were kept.

Counts add up per task and per table (`SuiteCheck.tally`, plain data that merges); `results` turns them into
GX's own result numbers: element_count, unexpected_count, unexpected_percent (of the non-null
values, of all rows for `not_be_null`), missing_count, and a few examples with their file and
line. `type` failures (a value of the wrong JSON kind, payload.py) are counted beside the
suite's expectations: a typed table column cannot hold them, so no GX expectation can.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable

from ..patterns import PatternError, compile_pattern
from ..schemas.compiled import failing
from ..schemas.payload import shown
from .expectations import BETWEEN, ERROR, IN_SET, LENGTHS_BETWEEN, MATCH_REGEX, NOT_NULL, OF_TYPE, Expectation

EXAMPLES = 5


def _get(row: dict, path: tuple[str, ...]):
    value = row.get(path[0])
    for name in path[1:]:
        if not isinstance(value, dict):
            return None
        value = value.get(name)
    return value


class _Code:
    """Python source of one suite's checks, built expectation by expectation."""

    def __init__(self):
        self.lines: list[str] = []
        self.constants: dict[str, Any] = {}
        self.values: dict[tuple, str] = {}

    def constant(self, value) -> str:
        name = f"k{len(self.constants)}"
        self.constants[name] = value
        return name

    def value(self, path: tuple[str, ...]) -> str:
        """A variable holding the row's value at `path` (None when a parent is not an object),
        computed once per function."""
        if path not in self.values:
            parent = self.value(path[:-1]) if len(path) > 1 else None
            name = f"v{len(self.values)}"
            if parent is None:
                self.lines.append(f"    {name} = row.get({path[0]!r})")
            else:
                self.lines.append(f"    {name} = {parent}.get({path[-1]!r}) if {parent}.__class__ is dict else None")
            self.values[path] = name
        return self.values[path]


# -- the expectation kinds: each GX expectation type the suites use is one entry of KINDS, carrying
# how the pass evaluates it and what a dead letter says about it (a new kind: one entry here and
# its rule in expectations.py)

def _in_set(e: Expectation, v: str, code: _Code) -> str:
    values = list(e.kwargs["value_set"])
    try:
        allowed = code.constant(frozenset(values))
    except TypeError:
        allowed = code.constant(values)
    return f"{v} not in {allowed}"


def _by_length(e: Expectation) -> bool:
    """A between expectation on a value's length or item count rather than the value."""
    return e.type == LENGTHS_BETWEEN or e.measure == "size"


def _between(e: Expectation, v: str, code: _Code) -> str | None:
    x = f"len({v})" if _by_length(e) else v
    parts = []
    low, high = e.kwargs.get("min_value"), e.kwargs.get("max_value")
    if low is not None:
        parts.append(f"{x} {'<=' if e.kwargs.get('strict_min') else '<'} {code.constant(low)}")
    if high is not None:
        parts.append(f"{x} {'>=' if e.kwargs.get('strict_max') else '>'} {code.constant(high)}")
    return " or ".join(parts) or None


def _regex(e: Expectation, v: str, code: _Code) -> str:
    try:
        regex = code.constant(compile_pattern(e.kwargs["regex"], e.key))
    except PatternError:
        return "True"  # GX fails such an expectation too
    return f"{regex}.search({v} if {v}.__class__ is str else str({v})) is None"


def _not_null_message(e: Expectation, value) -> str:
    return "data: the payload is required by the data schema" if e.key == "data" else f"{e.key}: is a required property"


def _in_set_message(e: Expectation, value) -> str:
    values = e.kwargs["value_set"]
    if len(values) == 1 and e.source.endswith("const"):
        return f"{e.key}: {shown(value)} was expected to be {values[0]!r}"
    return f"{e.key}: {shown(value)} is not one of {values}"


def _between_message(e: Expectation, value) -> str:
    key, low, high = e.key, e.kwargs.get("min_value"), e.kwargs.get("max_value")
    x = len(value) if _by_length(e) else value
    below = low is not None and (x <= low if e.kwargs.get("strict_min") else x < low)
    if e.measure == "size":
        return f"{key}: has fewer than {low} items" if below else f"{key}: has more than {high} items"
    if e.type == LENGTHS_BETWEEN:
        return f"{key}: {shown(value)} is shorter than {low}" if below else f"{key}: {shown(value)} is longer than {high}"
    if below:
        text = "is less than or equal to the minimum of" if e.kwargs.get("strict_min") else "is less than the minimum of"
        return f"{key}: {shown(value)} {text} {low}"
    text = "is greater than or equal to the maximum of" if e.kwargs.get("strict_max") else "is greater than the maximum of"
    return f"{key}: {shown(value)} {text} {high}"


def _regex_message(e: Expectation, value) -> str:
    return f"{e.key}: {shown(value)} does not match {e.kwargs['regex']!r}"


@dataclass(frozen=True)
class Kind:
    """How the pass evaluates one GX expectation type, with GX's semantics."""

    unexpected: Callable[[Expectation, str, "_Code"], str | None] | None  # the Python condition a non-null value `v` breaks it under
    message: Callable[[Expectation, Any], str] | None  # what a dead letter says about a record that broke it
    nulls_unexpected: bool = False  # not_be_null: a null is unexpected (elsewhere a null is `missing`)
    by_construction: bool = False  # about the column's type: a typed column meets it (one aggregate GX expectation)


KINDS: dict[str, Kind] = {
    NOT_NULL: Kind(None, _not_null_message, nulls_unexpected=True),
    IN_SET: Kind(_in_set, _in_set_message),
    BETWEEN: Kind(_between, _between_message),
    LENGTHS_BETWEEN: Kind(_between, _between_message),
    MATCH_REGEX: Kind(_regex, _regex_message),
    OF_TYPE: Kind(None, None, by_construction=True),
}


def compile_checks(expectations: list[tuple[int, Expectation]]) -> Callable[[dict, list], list[int]]:
    """One function evaluating these expectations on a row: `check(row, counts) -> failed`, where
    counts[i] is [evaluated, missing, unexpected] of expectation i, and failed the i that failed.
    Generated as straight-line code: an interpreted loop over the expectations cost more than
    typing the payload (benchmarks/RESULTS.md)."""
    code = _Code()
    code.lines += ["def check(row, counts):", "    failed = []"]
    for i, e in expectations:
        indent = "    "
        v = code.value(e.path)  # every value variable is assigned at the function's top level
        if e.guard:
            code.lines.append(f"    if {' and '.join(f'{code.value(g)} is not None' for g in e.guard)}:")
            indent = "        "
        code.lines.append(f"{indent}c = counts[{i}]; c[0] += 1")
        kind = KINDS[e.type]
        if kind.nulls_unexpected:
            code.lines.append(f"{indent}if {v} is None: c[2] += 1; failed.append({i})")
            continue
        test = kind.unexpected(e, v, code) if kind.unexpected else None
        code.lines.append(f"{indent}if {v} is None: c[1] += 1")
        if test is not None:
            code.lines.append(f"{indent}elif {test}: c[2] += 1; failed.append({i})")
    code.lines.append("    return failed")
    namespace = dict(code.constants)
    exec(_compiled("\n".join(code.lines)), namespace)  # noqa: S102 - our own generated source, no input text in it
    return namespace["check"]


@lru_cache(maxsize=4096)
def _compiled(source: str):
    """Generated source compiled once: tables of one shape share their checks' code (their
    constants differ, in the namespace each `exec` gets)."""
    return compile(source, "<generated check>", "exec")


def _message(e: Expectation, value) -> str:
    """What a dead-letter detail says about one failed expectation."""
    kind = KINDS.get(e.type)
    return kind.message(e, value) if kind is not None and kind.message else f"{e.key}: fails {e.type}"


@dataclass
class Counts:
    """One expectation's numbers in one partition (merged across tasks)."""

    evaluated: int = 0
    missing: int = 0
    unexpected: int = 0
    examples: list = field(default_factory=list)  # [value, source_file, source_line]

    def merge(self, other: "Counts") -> None:
        self.evaluated += other.evaluated
        self.missing += other.missing
        self.unexpected += other.unexpected
        self.examples = (self.examples + other.examples)[:EXAMPLES]


def _plain(value):
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return shown(value)


class SuiteCheck:
    """A table's expectations compiled for the classifier: `check(row)` counts and returns the
    failed ERROR expectations of one record's row; `broken_in_bulk` and `kept_in_bulk` do the
    same for a batch of rows given by column (the classifier's compiled path).

    Examples are the first ones in the order the task read its records (`seq`, set by the
    classifier for each record), whichever path decided them."""

    def __init__(self, expectations: list[Expectation]):
        self.expectations = expectations
        self._errors = compile_checks([(i, e) for i, e in enumerate(expectations) if e.severity == ERROR])
        self._warnings = compile_checks([(i, e) for i, e in enumerate(expectations) if e.severity != ERROR])
        self._tests = [compile_test(e) for e in expectations]
        self.seq = 0  # the read order of the record being checked
        self.reset()

    def reset(self) -> None:
        """Counting starts again (a worker classifies several tasks with one compiled check)."""
        self.counts = [[0, 0, 0] for _ in self.expectations]
        self.examples: list[list] = [[] for _ in self.expectations]  # (seq, example), the first EXAMPLES by seq
        self.types = Counts()  # the `type` rule: values of the wrong JSON kind
        self.type_examples: list = []
        self.rejected = 0  # records of the table dead-lettered (schema_violation, malformed_payload)
        self.used = False

    def _example(self, i: int, row: dict, source_file: str, source_line: int):
        e = self.expectations[i]
        value = _get(row, e.path)
        _first(self.examples[i], self.seq, [_plain(len(value) if e.measure == "size" else value), source_file, source_line])
        return e, value

    def check(self, row: dict, type_errors: list, source_file: str, source_line: int) -> list[tuple[Expectation, Any]]:
        """Evaluates the ERROR expectations (and `type`) of a matched record's row; returns the failures."""
        self.used = True
        failed = self._errors(row, self.counts)
        self.types.evaluated += 1
        if type_errors:
            self.types.unexpected += 1
            _first(self.type_examples, self.seq, [_plain(type_errors[0][1]), source_file, source_line])
        return [self._example(i, row, source_file, source_line) for i in failed] if failed else []

    def failures(self, row: dict) -> list[tuple[Expectation, Any]]:
        """The ERROR expectations a row fails, counted nowhere: a candidate's verdict on a record
        that went to none of several candidates (its row never reaches the table)."""
        scratch = [[0, 0, 0] for _ in self.expectations]
        return [(self.expectations[i], _get(row, self.expectations[i].path)) for i in self._errors(row, scratch)]

    def kept(self, row: dict, source_file: str, source_line: int) -> None:
        """Evaluates the WARN expectations of a row that was written to the table."""
        for i in self._warnings(row, self.counts):
            self._example(i, row, source_file, source_line)

    # -- the compiled path: rows given as columns, `values[path]` (raw values, `typed[path]` typing
    # one when the suite sees another value, as a date-time's instant)

    def broken_in_bulk(self, values: dict, typed: dict) -> set[int]:
        """The rows of a batch that break an ERROR expectation (the per-record path decides
        them); a KeyError when an expectation's column is not in `values`."""
        broken: set[int] = set()
        for e, test in zip(self.expectations, self._tests):
            if e.severity != ERROR:
                continue
            column, ok = values[e.path], _guarded(values, e.guard)
            if KINDS[e.type].nulls_unexpected:
                found = [i for i, v in enumerate(column) if v is None] if None in column else []
            elif test is None or (e.path not in typed and _surely_met(e, column)):
                continue
            else:
                found = failing(column, _typed_test(test, typed.get(e.path)))
            broken.update(i for i in found if ok is None or ok[i])
        return broken

    def kept_in_bulk(self, values: dict, typed: dict, seqs, files, lines) -> None:
        """Counts a batch's kept rows (every one meets the ERROR expectations) as `check` and
        `kept` count each row, with the WARN expectations' examples."""
        self.used = True
        size = len(files)
        self.types.evaluated += size
        for i, (e, test) in enumerate(zip(self.expectations, self._tests)):
            column, ok = values[e.path], _guarded(values, e.guard)
            c = self.counts[i]
            nulls = ([] if None not in column else [j for j, v in enumerate(column) if v is None] if ok is None
                     else [j for j, v in enumerate(column) if v is None and ok[j]])
            c[0] += size if ok is None else sum(ok)
            if KINDS[e.type].nulls_unexpected:
                c[2] += len(nulls)
                unexpected = nulls
            else:
                c[1] += len(nulls)
                unexpected = []
                if test is not None and e.severity != ERROR:
                    unexpected = [j for j in failing(column, _typed_test(test, typed.get(e.path))) if ok is None or ok[j]]
                    c[2] += len(unexpected)
            if e.severity == ERROR:
                continue
            to_value = typed.get(e.path) or (lambda v: v)
            for j in unexpected[:EXAMPLES]:
                value = to_value(column[j]) if column[j] is not None else None
                _first(self.examples[i], seqs[j], [_plain(len(value) if e.measure == "size" else value), files[j], lines[j]])

    def tally(self) -> dict:
        """The counts as plain data: {"expectations": [[evaluated, missing, unexpected, examples]...], "type": [...]}."""
        examples = [[x for _, x in sorted(found, key=lambda s: s[0])] for found in self.examples]
        type_examples = [x for _, x in sorted(self.type_examples, key=lambda s: s[0])]
        return {"expectations": [[*c, x] for c, x in zip(self.counts, examples)],
                "type": [self.types.evaluated, self.types.missing, self.types.unexpected, type_examples],
                "rejected": self.rejected}


def _first(found: list, seq: int, example: list) -> None:
    """Keeps `example` if it is among the first EXAMPLES by read order."""
    if len(found) < EXAMPLES:
        found.append((seq, example))
        return
    last = max(range(len(found)), key=lambda k: found[k][0])
    if seq < found[last][0]:
        found[last] = (seq, example)


def _surely_met(e: Expectation, column: list) -> bool:
    """Whether every non-null value of a column meets `e`, judged from the whole column at once
    (C-level set and min/max over the values): a set of allowed values holding them all, bounds
    holding the least and the greatest value or length. False: not sure (tested value by value)."""
    present = [v for v in column if v is not None] if None in column else column
    if not present:
        return True
    try:
        if e.type == IN_SET:
            return set(present) <= frozenset(e.kwargs["value_set"])
        if e.type in (BETWEEN, LENGTHS_BETWEEN):
            measured = list(map(len, present)) if _by_length(e) else present
            least, most = min(measured), max(measured)
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (least, most)):
                return False
            low, high = e.kwargs.get("min_value"), e.kwargs.get("max_value")
            return ((low is None or (least > low if e.kwargs.get("strict_min") else least >= low))
                    and (high is None or (most < high if e.kwargs.get("strict_max") else most <= high)))
    except TypeError:  # values of kinds that do not compare, unhashable ones: value by value
        return False
    return False


def _guarded(values: dict, guard: tuple) -> list[bool] | None:
    """Per row, whether the expectation's row condition holds (its optional parents are
    present); None without a condition."""
    if not guard:
        return None
    parents = [values[g] for g in guard]
    return [all(p[j] is not None for p in parents) for j in range(len(parents[0]))]


def _typed_test(test: Callable[[Any], bool], typed: Callable[[Any], Any] | None) -> Callable[[Any], bool]:
    return test if typed is None else (lambda v: test(typed(v)))


def compile_test(e: Expectation) -> Callable[[Any], bool] | None:
    """The condition a non-null value breaks `e` under, as one function (the same condition
    `compile_checks` writes into a row's check); None for a kind without one."""
    kind = KINDS[e.type]
    code = _Code()
    test = kind.unexpected(e, "v", code) if kind.unexpected else None
    if test is None:
        return None
    namespace = dict(code.constants)
    exec(_compiled(f"def test(v):\n    return {test}"), namespace)  # noqa: S102 - our own generated source
    return namespace["test"]


def merge_tallies(tallies: list[dict], size: int) -> tuple[list[Counts], Counts, int]:
    """Per-task tallies of one table -> its partition's counts per expectation, for `type`, and
    the records rejected."""
    counts, types = [Counts() for _ in range(size)], Counts()
    for tally in tallies:
        for c, (evaluated, missing, unexpected, examples) in zip(counts, tally["expectations"]):
            c.merge(Counts(evaluated, missing, unexpected, examples))
        types.merge(Counts(*tally["type"]))
    return counts, types, sum(t["rejected"] for t in tallies)


def failure_detail(type_errors: list, failed: list[tuple[Expectation, Any]], limit: int) -> tuple[str, list[str]]:
    """A dead-letter row's detail (the first `limit` messages) and the ids of every rule broken.

    A value of the wrong kind is also null to a not-null expectation: that expectation is
    counted and named, but its message would only repeat the type error."""
    typed_wrong = {rule.rsplit(":", 1)[0] for rule, _ in type_errors}
    messages = [m for _, m in type_errors]
    messages += [_message(e, v) for e, v in failed if not (KINDS[e.type].nulls_unexpected and e.key in typed_wrong)]
    ids = list(dict.fromkeys([rule for rule, _ in type_errors] + [e.id for e, _ in failed]))
    return "; ".join(messages[:limit]), ids


@dataclass
class ExpectationResult:
    """One expectation's outcome in a partition, with GX's numbers."""

    expectation: Expectation
    success: bool
    element_count: int
    unexpected_count: int
    missing_count: int | None
    unexpected_percent: float | None
    examples: list

    @property
    def severity(self) -> str:
        return self.expectation.severity

    def as_json(self) -> dict:
        e = self.expectation
        return {"id": e.id, "type": e.type, "column": e.column, "rule": e.rule, "severity": e.severity,
                "success": self.success, "evaluated": self.element_count, "unexpected_count": self.unexpected_count,
                "unexpected_percent": self.unexpected_percent, "examples": self.examples}


def results(expectations: list[Expectation], counts: list[Counts]) -> list[ExpectationResult]:
    """GX's result numbers (`_format_map_output`) from the pass's counts."""
    out = []
    for e, c in zip(expectations, counts):
        kind = KINDS[e.type]
        if kind.by_construction:
            out.append(ExpectationResult(e, True, c.evaluated, 0, None, None, []))
            continue
        if kind.nulls_unexpected:
            missing, percent = None, (c.unexpected / c.evaluated * 100 if c.evaluated else None)
        else:
            missing = c.missing
            nonnull = c.evaluated - c.missing
            percent = c.unexpected / nonnull * 100 if nonnull else None
        out.append(ExpectationResult(e, c.unexpected == 0, c.evaluated, c.unexpected, missing, percent, c.examples))
    return out
