"""A batch of payloads -> the typed `data` column, decided in bulk where it is surely right.

The batch path of payload.py: `compile_columns` builds one node per schema node (from the same
Spark type and metadata), and a node takes the values of a whole batch at once. It checks
their JSON kinds by `type` over the column (set operations in C, not a call per value), runs
the value constraints of payload.py (`_constraints`, the same functions) once per distinct
value, and converts the column with Arrow. A record it is not sure of is `bad`: a value of
another kind, out of its column's range, breaking a constraint, a date-time that is not the
common RFC 3339 form, a missing required property. Bad records go through payload.py itself
(the classifier's per-record path), which decides what they are: kept (`1.0` is an integer),
or a dead letter with today's detail. So the batch path only ever keeps what the per-record path
would keep, with the same typed values.

A schema with a node this does not type in bulk (maps, decimals, binary, dates, local
date-times, Avro units, string-encoded integers, XML, arrays of numbers checked for unique
items) gives None: its table's records all take the per-record path.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate, chain, repeat
from typing import Any, Callable

import orjson
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import ArrayType, BooleanType, DataType, DoubleType, FloatType, StringType, StructType, TimestampType

from ..jsonvalues import rfc3339
from . import keys
from .payload import INTEGER_BITS, SYNTAX, _constraints

NONE = type(None)
# RFC 3339 date-times Arrow's cast reads exactly as `rfc3339` does: `T`, 1-6 fraction digits,
# `Z` or an offset, years 1000-8999 (the UTC instant stays in Python's range), no leap second;
# any other spelling is parsed by `rfc3339` itself
COMMON_DATETIME = (r"^[1-8][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
                   r"(\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$")


class Batch:
    """What the nodes of one batch report: the records they are not sure of (`bad`), and each
    path's typed values (what the suite's expectations test)."""

    def __init__(self):
        self.bad: set[int] = set()
        self.values: dict[tuple, list] = {}
        self.typed: dict[tuple, Callable[[Any], Any]] = {}  # path -> its raw value -> typed (date-times)

    def mark(self, indexes) -> None:
        self.bad.update(indexes)


def failing(values: list, fails: Callable[[Any], bool]) -> list[int]:
    """The indexes of the non-null values `fails` holds for (or raises on: the per-record path
    decides those), each distinct value tested once."""
    def test(v) -> bool:
        try:
            return bool(fails(v))
        except Exception:  # noqa: BLE001 - a pattern over its budget and the like: not sure
            return True

    try:
        distinct = set(values)
    except TypeError:  # lists: tested one by one
        return [i for i, v in enumerate(values) if v is not None and test(v)]
    distinct.discard(None)
    try:
        broken = {v for v in distinct if fails(v)}
    except Exception:  # noqa: BLE001 - value by value, to find the ones it raises on
        broken = {v for v in distinct if test(v)}
    return [i for i, v in enumerate(values) if v in broken] if broken else []


def of_kinds(values: list, kinds: tuple[type, ...], batch: Batch, owners: list[int] | None = None) -> list:
    """`values` with every value of another JSON kind nulled and its record marked bad (`type`
    is exact here: a bool is not an int)."""
    found = set(map(type, values))
    found.discard(NONE)
    if found.issubset(kinds):
        return values
    values = list(values)
    for i, v in enumerate(values):
        if v is not None and type(v) not in kinds:
            values[i] = None
            batch.bad.add(owners[i] if owners is not None else i)
    return values


def timestamps(values: list, arrow_type: pa.DataType, batch: Batch, owners: list[int] | None = None) -> pa.Array:
    """RFC 3339 text -> an instant column: the common form by Arrow's cast, any other by
    `rfc3339` (None where it does not parse: the record is marked bad)."""
    text = pa.array(values, pa.string())
    common = pc.match_substring_regex(text, COMMON_DATETIME)
    if common.false_count == 0:
        try:
            return pc.cast(text, arrow_type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass  # an impossible day (02-30): rfc3339 says None
    parsed = [None if v is None else rfc3339(v) for v in values]
    for i, (v, p) in enumerate(zip(values, parsed)):
        if v is not None and p is None:
            batch.bad.add(owners[i] if owners is not None else i)
    return pa.array(parsed, arrow_type)


class Node:
    """One schema node of the payload, typing a whole column of raw JSON values."""

    kinds: tuple[type, ...] = ()
    required = False  # a null is a violation the suite does not name (the top node: `data:required`)

    def __init__(self, path: tuple, arrow_type: pa.DataType, checks: list):
        self.path = path
        self.arrow_type = arrow_type
        self.checks = checks  # payload.py's (rule, fails, message) constraints not left to the suite

    def run(self, values: list, batch: Batch, owners: list[int] | None = None) -> pa.Array:
        """The column's Arrow array; records it is not sure of are added to `batch.bad`
        (`owners`: the record of each value, when the values are an array's items)."""
        values = self.typed(of_kinds(values, self.kinds, batch, owners), batch, owners)
        for _, fails, _ in self.checks:
            batch.mark(owners[i] if owners is not None else i for i in failing(values, fails))
        if owners is None:
            batch.values[self.path] = values
        return self.arrow(values, batch, owners)

    def typed(self, values: list, batch: Batch, owners) -> list:
        """The values as payload.py types them (the suite tests these)."""
        return values

    def arrow(self, values: list, batch: Batch, owners) -> pa.Array:
        return pa.array(values, self.arrow_type)


class String(Node):
    kinds = (str,)

    def __init__(self, path, arrow_type, checks, syntax=None):
        super().__init__(path, arrow_type, checks)
        self.syntax = syntax  # a JSON Structure string type's syntax: a value without it is of another type

    def typed(self, values, batch, owners):
        if self.syntax is not None:
            batch.mark(owners[i] if owners is not None else i for i in failing(values, lambda v: not self.syntax.fullmatch(v)))
        return values


class Integer(Node):
    kinds = (int,)  # 1.0 is an integer too: the per-record path converts it

    def __init__(self, path, arrow_type, checks, low: int, high: int):
        super().__init__(path, arrow_type, checks)
        self.low, self.high = low, high

    def typed(self, values, batch, owners):
        present = [v for v in values if v is not None]
        if present and (min(present) < self.low or max(present) > self.high):
            values = list(values)
            for i, v in enumerate(values):
                if v is not None and not self.low <= v <= self.high:
                    values[i] = None
                    batch.bad.add(owners[i] if owners is not None else i)
        return values


class Number(Node):
    kinds = (int, float)

    def typed(self, values, batch, owners):
        return [float(v) if type(v) is int else v for v in values] if int in set(map(type, values)) else values


class Boolean(Node):
    kinds = (bool,)


class Timestamp(Node):
    kinds = (str,)

    def run(self, values, batch, owners=None):
        values = of_kinds(values, self.kinds, batch, owners)
        array = timestamps(values, self.arrow_type, batch, owners)
        if owners is None:
            batch.values[self.path] = values
            batch.typed[self.path] = rfc3339  # what a test of the suite sees: the parsed instant
        for _, fails, _ in self.checks:  # payload.py checks the parsed value
            batch.mark(owners[i] if owners is not None else i for i in failing(values, lambda v, f=fails: f(rfc3339(v))))
        return array


class JsonText(Node):
    """A value kept as JSON text (payload.py `_json_text`)."""

    def __init__(self, path, arrow_type, checks, objects_only: bool):
        super().__init__(path, arrow_type, [])
        self.kinds = (dict,) if objects_only else (dict, list, str, int, float, bool)

    def typed(self, values, batch, owners):
        return [None if v is None else orjson.dumps(v).decode() for v in values]


class Struct(Node):
    kinds = (dict,)

    def __init__(self, path, arrow_type, checks, fields: list, closed):
        super().__init__(path, arrow_type, checks)
        self.fields = fields  # (wire name, node, required and not left to the suite)
        self.closed = frozenset(closed) if closed is not None else None

    def run(self, values, batch, owners=None):
        values = of_kinds(values, self.kinds, batch, owners)
        where = (lambda i: owners[i]) if owners is not None else (lambda i: i)
        if self.closed is not None:
            batch.mark(where(i) for i, v in enumerate(values) if v is not None and not self.closed.issuperset(v))
        children = []
        whole = None not in values
        for wire, node, required in self.fields:
            child = list(map(dict.get, values, repeat(wire))) if whole else [None if v is None else v.get(wire) for v in values]
            if required:
                batch.mark(where(i) for i, (v, c) in enumerate(zip(values, child)) if v is not None and c is None)
            children.append(node.run(child, batch, owners))
        if owners is None:
            batch.values[self.path] = values
        nulls = pa.array([v is None for v in values], pa.bool_()) if None in values else None
        return pa.StructArray.from_arrays(children, fields=list(self.arrow_type), mask=nulls)


class Array(Node):
    kinds = (list,)

    def __init__(self, path, arrow_type, checks, element: Node):
        super().__init__(path, arrow_type, checks)
        self.element = element

    def run(self, values, batch, owners=None):
        values = of_kinds(values, self.kinds, batch, owners)
        lengths = [0 if v is None else len(v) for v in values]
        offsets = [0, *accumulate(lengths)]
        items = list(chain.from_iterable(v for v in values if v is not None))
        # each item's record, looked up for the few items found bad (payload.py `_elements`)
        elements = self.element.run(items, batch, _Owners(offsets, owners))
        own = owners if owners is not None else range(len(values))
        for _, fails, _ in self.checks:
            batch.mark(own[i] for i in failing(values, fails))
        if owners is None:
            batch.values[self.path] = values
        nulls = pa.array([v is None for v in values], pa.bool_()) if None in values else None
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), elements, type=self.arrow_type, mask=nulls)


class _Owners:
    """The record of each item of an array column, by its offsets (looked up, never listed)."""

    def __init__(self, offsets: list[int], owners):
        self.offsets, self.owners = offsets, owners

    def __getitem__(self, item: int) -> int:
        row = bisect_right(self.offsets, item) - 1
        return self.owners[row] if self.owners is not None else row


def _node(dtype: DataType, meta: dict, arrow_type: pa.DataType, path: tuple, text: str, covered: frozenset[str]) -> Node | None:
    """The bulk node of one schema node (payload.py `compile_node`), or None."""
    if meta.get(keys.XML) or meta.get(keys.UNIT) or meta.get(keys.ENCODING):
        return None
    if meta.get(keys.JSON):
        return JsonText(path, arrow_type, [], meta.get(keys.KIND) == "object")
    checks = [c for c in _constraints(dtype, meta.get(keys.CHECK) or {}, text) if c[0] not in covered]
    if isinstance(dtype, StructType):
        if checks:
            return None  # an enum or const of an object: per record
        fields = []
        for f, af in zip(dtype.fields, arrow_type):
            child = f"{text}.{f.name}"
            node = _node(f.dataType, f.metadata, af.type, path + (f.name,), child, covered)
            if node is None:
                return None
            required = bool(f.metadata.get(keys.REQUIRED) or not f.nullable) and f"{child}:required" not in covered
            fields.append((f.metadata.get(keys.WIRE, f.name), node, required))
        return Struct(path, arrow_type, [], fields, (meta.get(keys.CHECK) or {}).get("closed"))
    if isinstance(dtype, ArrayType):
        items = meta.get(keys.ITEMS) or {}
        element = _node(dtype.elementType, items, arrow_type.value_type, path + ("[]",), f"{text}[]", frozenset())
        if element is None or isinstance(element, Number) and (meta.get(keys.CHECK) or {}).get("unique"):
            return None  # unique items compare typed numbers as text (1 vs 1.0): per record
        return Array(path, arrow_type, checks, element)
    if isinstance(dtype, StringType):
        syntax = SYNTAX.get(meta.get(keys.FORMAT)) if meta.get(keys.FORMAT) in SYNTAX else None
        return String(path, arrow_type, checks, syntax)
    if type(dtype) in INTEGER_BITS or meta.get(keys.RANGE):
        if type(dtype) not in INTEGER_BITS:
            return None  # a decimal column of integers
        bits = INTEGER_BITS[type(dtype)]
        low, high = meta.get(keys.RANGE) or (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        return Integer(path, arrow_type, checks, low, high)
    if isinstance(dtype, (DoubleType, FloatType)):
        return Number(path, arrow_type, checks)
    if isinstance(dtype, BooleanType):
        return Boolean(path, arrow_type, checks)
    if isinstance(dtype, TimestampType):
        return Timestamp(path, arrow_type, checks)
    return None


def compile_columns(dtype: DataType, meta: dict, arrow_type: pa.DataType, covered: frozenset[str] = frozenset()) -> Node | None:
    """The bulk typing of a table's `data` column (payload.py `compile_payload`), or None when
    some node of its schema is typed only record by record. `data` itself must be present
    when the data schema requires it and the suite does not say so."""
    node = _node(dtype, meta, arrow_type, ("data",), "data", covered)
    if node is not None and meta.get(keys.REQUIRED) and "data:required" not in covered:
        node.required = True
    return node

