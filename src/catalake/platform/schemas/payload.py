"""A payload (a parsed JSON value) -> the typed `data` of its table row, and its schema violations.

The derived Spark type drives it, field by field (`compile_payload` builds one closure per schema
node, once per definition): JSON kinds are checked exactly (an integer field takes an integer,
not 1.5 nor "1"), Avro's JSON encodings of logical types are converted (`catalake.unit`:
timestamp millis/micros, date days), and what the catalog requires is `catalake.required`.

A value of the wrong kind is typed as null and reported (rule `type`); the row then looks to the
expectations exactly as it would to Great Expectations (evaluation.py evaluates the suite's
expectations on these typed values). The value constraints carried in the column metadata
(`catalake.check`: enum/const, minimum/maximum and exclusive forms, minLength/maxLength,
pattern, minItems/maxItems, unique items, closed objects) are checked here only where no
expectation of the suite covers them: inside arrays and maps (`catalake.items` /
`catalake.values` hold their elements' metadata), on a payload that is not an object, and
`closed` objects. `format` is an annotation (a WARN expectation), never a reason to reject here.
What a type needs beyond its Spark type is metadata too (JSON Structure, schemas/json_structure.py):
`catalake.encoding: string` (integers as decimal text), `catalake.range` (unsigned types),
`catalake.format` (the syntax of uuid, uri, jsonpointer, time, duration), `catalake.wire` (the
key a property has in the record).

A data schema using keywords this does not compile exactly (coverage.py `uncompiled`) is also
validated by jsonschema itself (the classifier), and every error it finds counts; so is a
recursive one (`catalake.recursion`: kept as JSON text).
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from typing import Any, Callable

import orjson
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, ByteType, DataType, DateType, DecimalType,
                               DoubleType, FloatType, IntegerType, LongType, MapType, ShortType, StringType, StructType,
                               TimestampNTZType, TimestampType)

from ..jsonvalues import UTC, from_base64, is_integer, is_number, iso_datetime, rfc3339
from ..patterns import PatternError, compile_pattern
from . import keys

FORMATS = {
    "uuid": r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
    "email": r"^[^@\s]+@[^@\s]+$",
    "uri": r"^[A-Za-z][A-Za-z0-9+.-]*:\S*$",
    "hostname": r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$",
    "ipv4": r"^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$",
}
INTEGER_BITS = {ByteType: 8, ShortType: 16, IntegerType: 32, LongType: 64}
JSON_INT = re.compile(r"-?(0|[1-9][0-9]*)")  # RFC 8259 section 6 `[minus] int`
# JSON Structure string types with a syntax (core, "Primitive types"): a value without it is
# not of the type
SYNTAX = {
    "uuid": re.compile(FORMATS["uuid"][1:-1]),
    "uri": re.compile(r"[^\s<>\"{}|\\^`]*"),  # RFC 3986 uri-reference: no character it excludes
    "jsonpointer": re.compile(r"#?(/([^~/]|~[01])*)*"),  # RFC 6901: the string (5) or URI fragment (6) form
    "time": re.compile(r"([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?"),  # RFC 3339 partial/full-time
    "duration": re.compile(r"P(?!$)((\d+Y)?(\d+M)?(\d+W)?(\d+D)?)(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?"),  # RFC 3339 appendix A
}
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
# the default context holds 28 digits; a decimal(38, s) column holds 38
WIDE = decimal.Context(prec=80)
EPOCH_DAY = dt.date(1970, 1, 1)

Errors = list  # of (rule id, message)
Conversion = Callable[[Any, Errors], Any]  # a present, non-null JSON value -> its typed value



def shown(value) -> str:
    """A value as the messages show it: JSON text, strings bare."""
    if isinstance(value, str):
        return value
    if isinstance(value, (dt.date, decimal.Decimal, bytes)):
        return str(value)
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


def _type_error(path: str, expected: str) -> Callable[[Any, Errors], None]:
    rule = f"{path}:type"

    def report(value, errors: Errors) -> None:
        errors.append((rule, f"{path}: {shown(value)} {expected}"))

    return report


def _comparable(v) -> bool:
    """A typed value a numeric bound applies to (decimals included)."""
    return isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool)


def _scalar(dtype: DataType, meta: dict, path: str) -> Conversion:
    """A leaf column's conversion: its JSON value checked for the column's type and made its
    typed value (a kind the column does not take is a `type` error)."""
    if isinstance(dtype, StringType):
        if meta.get(keys.FORMAT) in SYNTAX:
            return _formatted(meta, path)
        return _accepting(path, "is not of type 'string'", str.__instancecheck__)
    if type(dtype) in INTEGER_BITS or meta.get(keys.RANGE):
        return _integer(dtype, meta, path)
    if isinstance(dtype, (DoubleType, FloatType)):
        return _accepting(path, "is not of type 'number'", is_number, float)
    if isinstance(dtype, DecimalType):
        return _decimal(dtype, path)
    if isinstance(dtype, BooleanType):
        return _accepting(path, "is not of type 'boolean'", bool.__instancecheck__)
    if isinstance(dtype, (TimestampType, TimestampNTZType)):
        return _timestamp(isinstance(dtype, TimestampNTZType), meta.get(keys.UNIT), path)
    if isinstance(dtype, DateType):
        return _date(meta.get(keys.UNIT), path)
    if isinstance(dtype, BinaryType):
        return _binary(path)
    return lambda v, errors: orjson.dumps(v).decode()


def _accepting(path: str, expected: str, accepts: Callable[[Any], Any], convert=None) -> Conversion:
    """A value `accepts` holds for, as it is (or `convert`ed); any other is a `type` error saying
    what was `expected`."""
    bad = _type_error(path, expected)

    def accepted(v, errors):
        if accepts(v):
            return v if convert is None else convert(v)
        bad(v, errors)
    return accepted


def _formatted(meta: dict, path: str) -> Conversion:
    syntax, name = SYNTAX[meta[keys.FORMAT]], meta[keys.FORMAT]
    return _accepting(path, f"is not a {name!r}", lambda v: isinstance(v, str) and syntax.fullmatch(v))


def _decimal(dtype: DecimalType, path: str) -> Conversion:
    """A number (or its text) of at most the column's precision, never rounded to its scale."""
    bad = _type_error(path, f"is not a {dtype.simpleString()}")
    quantum, digits = decimal.Decimal(1).scaleb(-dtype.scale), dtype.precision
    inexact_rule, inexact = f"{path}:scale", f"has more decimal places than the column's scale {dtype.scale} (never rounded)"

    def decimal_(v, errors):
        if is_number(v) or isinstance(v, str):
            try:
                given = decimal.Decimal(str(v))
                value = given.quantize(quantum, rounding=decimal.ROUND_HALF_UP, context=WIDE)
                if value.is_finite() and value != given:
                    errors.append((inexact_rule, f"{path}: {shown(v)} {inexact}"))
                    return None
                if value.is_finite() and len(value.as_tuple().digits) <= digits:
                    return value
            except (decimal.InvalidOperation, ValueError):
                pass
        bad(v, errors)
    return decimal_


def _timestamp(naive: bool, unit: str | None, path: str) -> Conversion:
    """An instant needs its offset (RFC 3339); a local timestamp (`naive`) has none. An integer
    counts `unit`s (Avro's millis or micros) since the epoch."""
    bad = _type_error(path, "is not a 'date-time'" if naive else "is not a 'date-time' (RFC 3339, with its offset)")
    per_second = {"millis": 1_000, "micros": 1_000_000}.get(unit)

    def timestamp(v, errors):
        value = None
        if isinstance(v, str):
            value = iso_datetime(v) if naive else rfc3339(v)
        elif per_second and is_integer(v):
            try:
                value = EPOCH + dt.timedelta(microseconds=v * (1_000_000 // per_second))
            except OverflowError:
                value = None
        if value is not None:
            return value.astimezone(UTC).replace(tzinfo=None) if naive else value
        bad(v, errors)
    return timestamp


def _date(unit: str | None, path: str) -> Conversion:
    bad = _type_error(path, "is not a 'date'")

    def date(v, errors):
        try:
            if isinstance(v, str):
                return dt.date.fromisoformat(v[:10]) if len(v) == 10 else iso_datetime(v).date()
            if unit == "days" and is_integer(v):
                return EPOCH_DAY + dt.timedelta(days=v)
        except (ValueError, AttributeError, OverflowError):
            pass
        bad(v, errors)
    return date


def _binary(path: str) -> Conversion:
    bad = _type_error(path, "is not base64 text")

    def binary(v, errors):
        value = from_base64(v)
        if value is not None:
            return value
        bad(v, errors)
    return binary


def _integer(dtype: DataType, meta: dict, path: str) -> Conversion:
    """An integer within its type's range (`catalake.range`, else the Spark type's bits); a
    string-encoded type (`catalake.encoding: string`, JSON Structure int64 & co) takes its
    decimal text as well as a JSON number."""
    bits = INTEGER_BITS.get(type(dtype), 0)
    low, high = meta.get(keys.RANGE) or (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    text = meta.get(keys.ENCODING) == "string"
    as_decimal = isinstance(dtype, DecimalType)
    if as_decimal:  # wider than the column can hold: the column's digits decide
        digits = 10 ** dtype.precision - 1
        low, high = max(low, -digits), min(high, digits)
    ranged = meta.get(keys.RANGE)
    bad = _type_error(path, "is not of type 'integer'" if not ranged else f"is not an integer in [{low}, {high}]")
    column = f"{bits}-bit integer" if bits else dtype.simpleString()
    too_wide = _type_error(path, f"does not fit the column's {column} ({low} to {high})") if not ranged else bad

    def integer(v, errors):
        if text and isinstance(v, str) and JSON_INT.fullmatch(v):
            v = int(v)
        elif isinstance(v, float) and v.is_integer():  # 1.0 is an integer (JSON Schema draft 6 on; JSON has one number type)
            v = int(v)
        if is_integer(v) and low <= v <= high:
            return decimal.Decimal(v) if as_decimal else v
        (too_wide if is_integer(v) else bad)(v, errors)
    return integer


def _constraints(dtype: DataType, rules: dict, path: str) -> list[Callable[[Any], str | None]]:
    """Checks of a typed value against `catalake.check` rules: each returns a message or None."""
    checks = []

    def add(rule: str, fails: Callable[[Any], bool], message: Callable[[Any], str]) -> None:
        checks.append((f"{path}:{rule}", fails, message))

    if isinstance(dtype, (TimestampType, TimestampNTZType, DateType)):
        rules = {k: v for k, v in rules.items() if k not in ("enum", "const")}  # parsed text: jsonschema checks these
    if isinstance(rules.get("enum"), list):
        allowed = [x for x in rules["enum"] if isinstance(x, (str, int, float)) and not isinstance(x, bool)]
        if allowed and len(allowed) == len([x for x in rules["enum"] if x is not None]):
            add("enum", lambda v: v not in allowed, lambda v: f"{path}: {shown(v)} is not one of {allowed}")
    const = rules.get("const")
    if isinstance(const, (str, int, float)) and not isinstance(const, bool):
        add("enum", lambda v: v != const, lambda v: f"{path}: {shown(v)} was expected to be {const!r}")
    for key, fails, text in (
        ("minimum", lambda v, x: v < x, "is less than the minimum of"),
        ("maximum", lambda v, x: v > x, "is greater than the maximum of"),
        ("exclusiveMinimum", lambda v, x: v <= x, "is less than or equal to the minimum of"),
        ("exclusiveMaximum", lambda v, x: v >= x, "is greater than or equal to the maximum of"),
    ):
        limit = rules.get(key)
        if is_number(limit):
            add("range", lambda v, f=fails, x=limit: _comparable(v) and f(v, x), lambda v, t=text, x=limit: f"{path}: {shown(v)} {t} {x}")
    if isinstance(dtype, StringType):
        if is_integer(rules.get("minLength")):
            n = rules["minLength"]
            add("length", lambda v: len(v) < n, lambda v: f"{path}: {shown(v)} is shorter than {n}")
        if is_integer(rules.get("maxLength")):
            m = rules["maxLength"]
            add("length", lambda v: len(v) > m, lambda v: f"{path}: {shown(v)} is longer than {m}")
        if isinstance(rules.get("pattern"), str):
            try:
                regex = compile_pattern(rules["pattern"], path)
            except PatternError:
                regex = None  # a catalog error (schemas/json_schema.py constraints)
            if regex is not None:
                add("pattern", lambda v: regex.search(v) is None, lambda v: f"{path}: {shown(v)} does not match {regex.pattern!r}")
    if isinstance(dtype, (ArrayType, MapType)):
        if is_integer(rules.get("minItems")):
            n = rules["minItems"]
            add("items", lambda v: len(v) < n, lambda v: f"{path}: has fewer than {n} items")
        if is_integer(rules.get("maxItems")):
            m = rules["maxItems"]
            add("items", lambda v: len(v) > m, lambda v: f"{path}: has more than {m} items")
    if isinstance(dtype, ArrayType) and rules.get("unique") is True:
        add("unique", lambda v: len({shown(x) for x in v}) < len(v), lambda v: f"{path}: has repeated items")
    return checks


def compile_node(dtype: DataType, meta: dict, path: str, covered: frozenset[str] = frozenset()) -> Conversion:
    """The typing closure of one schema node at `path`; constraints whose `<path>:<rule>` is in
    `covered` are left to the suite's expectations."""
    if meta.get(keys.JSON):
        node: Conversion = _json_text(meta, path)
    elif meta.get(keys.XML):
        node = _xml_text
    elif isinstance(dtype, StructType):
        node = _struct(dtype, meta, path, covered)
    elif isinstance(dtype, ArrayType):
        node = _array(dtype, meta, path)
    elif isinstance(dtype, MapType):
        node = _map(dtype, meta, path)
    else:
        node = _scalar(dtype, meta, path)
    checks = [c for c in _constraints(dtype, meta.get(keys.CHECK) or {}, path) if c[0] not in covered]
    if not checks or meta.get(keys.JSON) or meta.get(keys.XML):
        return node

    def checked(v, errors):
        typed = node(v, errors)
        if typed is not None:
            for rule, fails, message in checks:
                if fails(typed):
                    errors.append((rule, message(typed)))
        return typed

    return checked


def _xml_text(value, errors):
    """An XML payload's text as it came; a value decoded from JSON written back as JSON text."""
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def _json_text(meta: dict, path: str) -> Conversion:
    """A value kept as JSON text; one declared an object (`catalake.kind`, an open object) must be one."""
    if meta.get(keys.KIND) != "object":
        return lambda v, errors: orjson.dumps(v).decode()
    bad = _type_error(path, "is not of type 'object'")

    def json_object(v, errors):
        if isinstance(v, dict):
            return orjson.dumps(v).decode()
        bad(v, errors)
    return json_object


def _struct(dtype: StructType, meta: dict, path: str, covered: frozenset[str]) -> Conversion:
    fields = []
    for f in dtype.fields:
        child = f"{path}.{f.name}"
        required = (f.metadata.get(keys.REQUIRED) or not f.nullable) and f"{child}:required" not in covered
        missing = (f"{child}:required", f"{child}: is a required property") if required else None
        wire = f.metadata.get(keys.WIRE, f.name)  # an alternate JSON name (JSON Structure altnames)
        fields.append((f.name, wire, compile_node(f.dataType, f.metadata, child, covered), missing))
    closed = (meta.get(keys.CHECK) or {}).get("closed")
    allowed = frozenset(closed or ())
    bad = _type_error(path, "is not of type 'object'")

    def struct(v, errors):
        if not isinstance(v, dict):
            bad(v, errors)
            return None
        out = {}
        for name, wire, node, missing in fields:
            x = v.get(wire)
            if x is None:
                out[name] = None
                if missing:
                    errors.append(missing)
            else:
                out[name] = node(x, errors)
        if closed is not None and not allowed.issuperset(v):
            errors.append((f"{path}:closed", f"{path}: has properties other than {closed}"))
        return out

    return struct


def _elements(dtype: DataType, meta: dict, path: str, inner: str, what: str) -> Callable[[Any, Errors], Any]:
    """One array element / map value (at `inner`, with its own metadata) checked on its own: a
    failure is one error of the container at `path`."""
    node = compile_node(dtype, meta, inner)

    def element(x, bad: list):
        if x is None:
            return None
        local: Errors = []
        typed = node(x, local)
        if local and not bad:
            bad.append((f"{inner}:{local[0][0].rsplit(':', 1)[1]}", f"{path}: has {what} that does not match its schema"))
        return typed

    return element


def _array(dtype: ArrayType, meta: dict, path: str) -> Conversion:
    element = _elements(dtype.elementType, meta.get(keys.ITEMS) or {}, path, f"{path}[]", "an item")
    bad = _type_error(path, "is not of type 'array'")

    def array(v, errors):
        if not isinstance(v, list):
            bad(v, errors)
            return None
        failed: Errors = []
        out = [element(x, failed) for x in v]
        errors += failed
        return out

    return array


def _map(dtype: MapType, meta: dict, path: str) -> Conversion:
    value = _elements(dtype.valueType, meta.get(keys.VALUES) or {}, path, f"{path}{{}}", "a value")
    bad = _type_error(path, "is not of type 'object'")

    def mapping(v, errors):
        if not isinstance(v, dict):
            bad(v, errors)
            return None
        failed: Errors = []
        out = {k: value(x, failed) for k, x in v.items()}
        errors += failed
        return out

    return mapping


def compile_payload(dtype: DataType, meta: dict, covered: frozenset[str] = frozenset()) -> Callable[[Any, Errors], Any]:
    """The typing of a table's `data` column: (payload, or MISSING / None, errors) -> typed value."""
    node = compile_node(dtype, meta, "data", covered)
    required = meta.get(keys.REQUIRED) and "data:required" not in covered

    def payload(v, errors):
        if v is None:
            if required:
                errors.append(("data:required", "data: the payload is required by the data schema"))
            return None
        return node(v, errors)

    return payload
