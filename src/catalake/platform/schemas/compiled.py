"""A table's compiled decision: landed lines -> its typed rows, by a strict decoder built once
from the table's derived schema.

`compile_columns` turns each schema node (the same Spark type and metadata payload.py compiles)
into a `Node` that says two things:

* its msgspec type (`annotation`): what the decoder accepts there. A line is decoded straight
  into typed values, and the decoder refuses, with no Python per value, whatever the node does
  not surely keep: a value of another JSON kind (a bool is no integer, `1.0` is no integer), an
  integer out of the column's range, a missing required member, a member a closed object does
  not have, a non-finite number, a lone surrogate.
* the column it makes of a batch's decoded values (`run`): the Arrow array, with the checks a
  decoder cannot make run once per distinct value or over the Arrow column (payload.py's
  `_constraints`: bounds, lengths, enums and patterns on RE2; a date-time that is not the common
  RFC 3339 form; a JSON Structure string's syntax).

A line the decoder refuses, and a record a column check is not sure of (`Findings.bad`), goes to
the per-record path (the classifier's referee), which decides what it is: kept (`1.0` is an
integer there), or a dead letter with its exact reason and detail. So the compiled path only
ever keeps what the referee would keep, with the same typed values.

A schema with a node this does not compile (maps, decimals, binary, dates, local date-times,
Avro units, string-encoded integers, XML, arrays of numbers checked for unique items, an enum of
objects) gives None: its table's records all take the per-record path.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate, chain
from typing import Annotated, Any, Callable

import msgspec
import orjson
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import (ArrayType, BooleanType, DataType, DoubleType, FloatType, StringType, StructType,
                               TimestampType)

from ..jsonvalues import rfc3339
from . import keys
from .payload import INTEGER_BITS, SYNTAX, _constraints

# RFC 3339 date-times Arrow's cast reads exactly as `rfc3339` does: `T`, 1-6 fraction digits,
# `Z` or an offset, years 1000-8999 (the UTC instant stays in Python's range), no leap second;
# any other spelling is parsed by `rfc3339` itself
COMMON_DATETIME = (r"^[1-8][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
                   r"(\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$")
# a number this large may have been an integer literal beyond 64 bits, which the strict reading
# refuses (strictjson `_exact`) and a float-typed decoder reads as a float: the referee decides
BIG_NUMBER = float(1 << 63)


class Findings:
    """What the nodes report of one group of lines: the records they are not sure of (`bad`), and each
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


def timestamps(values: list, arrow_type: pa.DataType, findings: Findings, owners=None) -> pa.Array:
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
            findings.bad.add(owners[i] if owners is not None else i)
    return pa.array(parsed, arrow_type)


def column_of(values: list, attribute: str) -> list:
    """One member of a column of decoded structs (None where the struct is)."""
    getters = _GETTERS.get(attribute)
    if getters is None:
        # generated: a comprehension reading `v.<name>` is twice as fast as `map(attrgetter)`
        getters = _GETTERS[attribute] = (eval(f"lambda values: [v.{attribute} for v in values]"),  # noqa: S307
                                         eval(f"lambda values: [None if v is None else v.{attribute} for v in values]"))  # noqa: S307
    return getters[None in values](values)


_GETTERS: dict[str, tuple[Callable, Callable]] = {}  # a struct member's name -> its column's readers


class Node:
    """One schema node of the payload: what its decoder accepts, and the column of a batch."""

    required = False  # a null is a violation the suite does not name (the top node: `data:required`)

    def __init__(self, path: tuple, arrow_type: pa.DataType, checks: list):
        self.path = path
        self.arrow_type = arrow_type
        self.checks = checks  # payload.py's (rule, fails, message) constraints not left to the suite

    def annotation(self) -> Any:
        """The msgspec type of a present, non-null value."""
        raise NotImplementedError

    def depth(self) -> int | None:
        """How deep the values the node accepts nest (objects and arrays), None when unbounded."""
        return 0

    def run(self, values: list, findings: Findings, owners=None) -> pa.Array:
        """The column's Arrow array from decoded values; records it is not sure of are added to
        `findings.bad` (`owners`: the record of each value, when the values are an array's items)."""
        values = self.typed(values, findings, owners)
        for _, fails, _ in self.checks:
            findings.mark(owners[i] if owners is not None else i for i in failing(values, fails))
        if owners is None:
            findings.values[self.path] = values
        return pa.array(values, self.arrow_type)

    def typed(self, values: list, findings: Findings, owners) -> list:
        """The values as payload.py types them (the suite tests these)."""
        return values


class String(Node):
    def __init__(self, path, arrow_type, checks, syntax=None):
        super().__init__(path, arrow_type, checks)
        self.syntax = syntax  # a JSON Structure string type's syntax: a value without it is of another type

    def annotation(self):
        return str

    def typed(self, values, findings, owners):
        if self.syntax is not None:
            findings.mark(owners[i] if owners is not None else i for i in failing(values, lambda v: not self.syntax.fullmatch(v)))
        return values


class Integer(Node):
    def __init__(self, path, arrow_type, checks, low: int, high: int):
        super().__init__(path, arrow_type, checks)
        self.low, self.high = low, high

    def annotation(self):
        # msgspec bounds fit in an int64: a wider unsigned column's top values go to the referee
        return Annotated[int, msgspec.Meta(ge=max(self.low, -(1 << 63)), le=min(self.high, (1 << 63) - 1))]


class Number(Node):
    def annotation(self):
        return float  # an integer is a number too: read as a float, as payload.py types it

    def typed(self, values, findings, owners):
        present = [v for v in values if v is not None] if None in values else values
        if present and (max(present) >= BIG_NUMBER or min(present) <= -BIG_NUMBER):
            findings.mark(owners[i] if owners is not None else i for i, v in enumerate(values)
                       if v is not None and abs(v) >= BIG_NUMBER)
        return values


class Boolean(Node):
    def annotation(self):
        return bool


class Timestamp(Node):
    def annotation(self):
        return str  # the text: Arrow's cast or `rfc3339` reads it (`timestamps`)

    def run(self, values, findings, owners=None):
        array = timestamps(values, self.arrow_type, findings, owners)
        if owners is None:
            findings.values[self.path] = values
            findings.typed[self.path] = rfc3339  # what a test of the suite sees: the parsed instant
        for _, fails, _ in self.checks:  # payload.py checks the parsed value
            findings.mark(owners[i] if owners is not None else i for i in failing(values, lambda v, f=fails: f(rfc3339(v))))
        return array


class JsonText(Node):
    """A value kept as JSON text (payload.py `_json_text`)."""

    def __init__(self, path, arrow_type, checks, objects_only: bool):
        super().__init__(path, arrow_type, [])
        self.objects_only = objects_only

    def annotation(self):
        return dict if self.objects_only else Any

    def depth(self):
        return None

    def typed(self, values, findings, owners):
        out = []
        for i, v in enumerate(values):
            try:
                out.append(None if v is None else orjson.dumps(v).decode())
            except TypeError:  # an integer beyond 64 bits: the strict reading refuses the record
                out.append(None)
                findings.bad.add(owners[i] if owners is not None else i)
        return out


class Struct(Node):
    def __init__(self, path, arrow_type, checks, fields: list, closed: bool):
        super().__init__(path, arrow_type, checks)
        self.fields = fields  # (wire name, node, required and not left to the suite)
        self.closed = closed
        self._type = None

    def annotation(self):
        if self._type is None:
            members = [(f"m{i}", node.annotation(), msgspec.field(name=wire)) if required
                       else (f"m{i}", node.annotation() | None, msgspec.field(name=wire, default=None))
                       for i, (wire, node, required) in enumerate(self.fields)]
            self._type = msgspec.defstruct("Payload", members, kw_only=True, forbid_unknown_fields=self.closed, omit_defaults=True, gc=False)
        return self._type

    def depth(self):
        depths = [node.depth() for _, node, _ in self.fields]
        return None if None in depths else 1 + max(depths, default=0)

    def run(self, values, findings, owners=None):
        children = [node.run(column_of(values, f"m{i}"), findings, owners) for i, (_, node, _) in enumerate(self.fields)]
        if owners is None:
            findings.values[self.path] = values
        nulls = pa.array([v is None for v in values], pa.bool_()) if None in values else None
        return pa.StructArray.from_arrays(children, fields=list(self.arrow_type), mask=nulls)


class Array(Node):
    def __init__(self, path, arrow_type, checks, element: Node):
        super().__init__(path, arrow_type, checks)
        self.element = element

    def annotation(self):
        return list[self.element.annotation()]

    def depth(self):
        depth = self.element.depth()
        return None if depth is None else 1 + depth

    def run(self, values, findings, owners=None):
        lengths = [0 if v is None else len(v) for v in values]
        offsets = [0, *accumulate(lengths)]
        items = list(chain.from_iterable(v for v in values if v is not None))
        # each item's record, looked up for the few items found bad (payload.py `_elements`)
        elements = self.element.run(items, findings, _Owners(offsets, owners))
        own = owners if owners is not None else range(len(values))
        for _, fails, _ in self.checks:
            findings.mark(own[i] for i in failing(values, fails))
        if owners is None:
            findings.values[self.path] = values
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
    """The compiled node of one schema node (payload.py `compile_node`), or None."""
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
        closed = (meta.get(keys.CHECK) or {}).get("closed")
        if closed is not None and set(closed) != {wire for wire, _, _ in fields}:
            return None  # allowed members the column does not hold: per record
        return Struct(path, arrow_type, [], fields, closed is not None)
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
    """The compiled typing of a table's `data` column (payload.py `compile_payload`), or None when
    some node of its schema is typed only record by record. `data` itself must be present
    when the data schema requires it and the suite does not say so."""
    node = _node(dtype, meta, arrow_type, ("data",), "data", covered)
    if node is not None and meta.get(keys.REQUIRED) and "data:required" not in covered:
        node.required = True
    return node
