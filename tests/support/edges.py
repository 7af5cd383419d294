"""Hypothesis strategies for records at the edges of a table's schema, whatever the schema's
language: payloads drawn from the table's derived `data` type and the checks its metadata carries
(bounds and one past them, enum members and a near miss, lengths at and past their limits,
date-times in every RFC 3339 spelling and some that are not), mixed with values of the wrong
JSON kind (`1.0` for an integer, `"1"`, `true`, a list for a string), missing and null
members, extra members; and envelopes at theirs (no time, an unparseable one, an empty id, a
number for a string attribute, extension attributes, no datacontenttype, no data)."""

from __future__ import annotations

import json

from hypothesis import strategies as st
from pyspark.sql.types import (ArrayType, BooleanType, DataType, DateType, DecimalType, DoubleType, FloatType, MapType,
                               StringType, StructType, TimestampNTZType, TimestampType)

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
WRONG_KIND = st.sampled_from([1.0, 1.5, "1", True, False, [], {}, "", 0, -1, 2**63, 2**64 - 1, "x" * 70])
DATETIMES = st.sampled_from([
    "2026-11-20T10:00:00Z", "2026-11-20T10:00:00.5+02:00", "2026-11-20T10:00:00.123456-05:30",
    "2026-11-20t10:00:00z", "2026-11-20 10:00:00Z", "2026-11-20T10:00:60Z", "2026-02-30T10:00:00Z",
    "2026-11-20T10:00:00", "2026-11-20T10:00:00.1234567Z", "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00",
    "2026-11-20", "not a time", "2026-11-20T24:00:00Z",
])
_BUILT: dict = {}  # the strategies built, by what they were built from


def _bounds(checks: dict) -> list:
    edges = []
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        limit = checks.get(key)
        if isinstance(limit, (int, float)) and not isinstance(limit, bool):
            edges += [limit, limit - 1, limit + 1, limit - 0.5, limit + 0.5]
    return edges


def _scalar(dtype: DataType, checks: dict):
    enum = [v for v in checks.get("enum", []) if v is not None] if isinstance(checks.get("enum"), list) else []
    near = [v + "x" for v in enum if isinstance(v, str)] + ([checks["const"]] if "const" in checks else [])
    if isinstance(dtype, StringType):
        lengths = [checks[k] for k in ("minLength", "maxLength") if isinstance(checks.get(k), int)]
        sized = [("a" * max(0, n + d)) for n in lengths for d in (-1, 0, 1)]
        base = TEXT | DATETIMES if checks.get("format") == "date-time" else TEXT
        return base | st.sampled_from(enum + near + sized or ["v"])
    if isinstance(dtype, (TimestampType, TimestampNTZType, DateType)):
        return DATETIMES | st.integers(-10**12, 10**12)
    if isinstance(dtype, BooleanType):
        return st.booleans()
    if isinstance(dtype, (DoubleType, FloatType, DecimalType)):
        return st.floats(allow_nan=False, allow_infinity=False, width=32) | st.integers(-1000, 1000) | st.sampled_from(
            _bounds(checks) + enum or [0.0])
    # integers of every width
    return st.integers(-2**31 - 1, 2**31) | st.sampled_from(_bounds(checks) + enum + [2**63 - 1, -2**63, 2**63, 2**64 - 1])


def payloads(dtype: DataType, meta: dict, depth: int = 0):
    """JSON values for a node of the derived type (`meta`: its column metadata). Built once per
    node and kept: a test draws from it many times, and building costs more than drawing."""
    key = (dtype.json(), json.dumps(meta, sort_keys=True, default=repr), depth)
    if key not in _BUILT:
        _BUILT[key] = _payloads(dtype, meta, depth)
    return _BUILT[key]


def _payloads(dtype: DataType, meta: dict, depth: int):
    checks = meta.get("catalake.check") or {}
    if meta.get("catalake.json") or depth > 4:
        value = st.none() | st.booleans() | st.integers(-5, 5) | TEXT | st.lists(TEXT, max_size=2)
    elif isinstance(dtype, StructType):
        members = {f.metadata.get("catalake.wire", f.name): payloads(f.dataType, f.metadata, depth + 1) for f in dtype.fields}
        value = st.fixed_dictionaries({}, optional=members) if members else st.just({})
        value = st.tuples(value, st.dictionaries(st.sampled_from(["extra", "zz"]), TEXT, max_size=1)).map(lambda p: {**p[0], **p[1]}) | value
    elif isinstance(dtype, ArrayType):
        items = payloads(dtype.elementType, meta.get("catalake.items") or {}, depth + 1)
        value = st.lists(items | st.none(), max_size=checks.get("maxItems", 3) + 1 if isinstance(checks.get("maxItems"), int) else 3)
    elif isinstance(dtype, MapType):
        value = st.dictionaries(TEXT, payloads(dtype.valueType, meta.get("catalake.values") or {}, depth + 1), max_size=2)
    else:
        value = _scalar(dtype, checks)
    return st.one_of(value, value, value, st.none(), WRONG_KIND)


def envelopes(base: dict):
    """A structured event's attributes from `base` (one that matches), some at their edges (built
    once per `base`, as `payloads`)."""
    key = ("envelope", json.dumps(base, sort_keys=True, default=repr))
    if key not in _BUILT:
        _BUILT[key] = _envelopes(base)
    return _BUILT[key]


def _envelopes(base: dict):
    edits = st.sampled_from([
        {}, {}, {}, {"time": None}, {"time": "yesterday"}, {"time": "2026-11-20 10:00:00Z"}, {"id": ""}, {"id": 5},
        {"subject": ""}, {"subject": "s"}, {"traceparent": "00-ab"}, {"sequence": 7}, {"datacontenttype": None},
        {"specversion": "0.3"}, {"source": None}, {"dataschema": 3},
    ])
    return edits.map(lambda e: {k: v for k, v in {**base, **e}.items() if v is not None})
