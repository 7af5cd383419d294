"""A payload (VARIANT) -> the typed `data` column of its table, and the schema violations, in Spark.

The derived Spark type drives it, field by field: JSON kinds are checked exactly (an integer
field takes an integer, not 1.5 nor "1"), Avro's JSON encodings of logical types are converted
(`catalake.unit`: timestamp millis/micros, date days), and the value constraints carried in the
column metadata (`catalake.check`: enum/const, minimum/maximum and exclusive forms,
minLength/maxLength, pattern, format, minItems/maxItems, closed objects) are evaluated. What the
catalog requires is `catalake.required`.

The checks are generated as Spark SQL text over three projections (`typed_payloads`): an
object's members read out of the payload VARIANT once, the typed values, then the checks, whose
messages are built only for the rows that fail one.

A data schema using keywords this does not compile (`not`, `if`, `dependentRequired`,
`uniqueItems`, `multipleOf`, ...) is validated by jsonschema itself in Python instead
(classify.py); `needs_python_validation` tells which.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterator

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from .sql import ident, literal, string

INTEGER_KINDS = r"^(TINYINT|SMALLINT|INT|BIGINT|DECIMAL\(\d+,0\))$"
NUMBER_KINDS = r"^(TINYINT|SMALLINT|INT|BIGINT|DECIMAL\(\d+,\d+\)|DOUBLE|FLOAT)$"
FORMATS = {
    "uuid": r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
    "email": r"^[^@\s]+@[^@\s]+$",
    "uri": r"^[A-Za-z][A-Za-z0-9+.-]*:\S*$",
    "hostname": r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$",
    "ipv4": r"^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$",
}
# keywords that constrain values but are not compiled here -> jsonschema in Python
PYTHON_KEYWORDS = {
    "not", "if", "then", "else", "dependentRequired", "dependentSchemas", "dependencies", "uniqueItems",
    "multipleOf", "contains", "propertyNames", "minProperties", "maxProperties", "oneOf", "anyOf",
    "unevaluatedProperties", "unevaluatedItems", "prefixItems", "additionalItems", "minContains", "maxContains",
}


def needs_python_validation(schema: Any) -> bool:
    """Whether a JSON Schema document uses a keyword the native checks do not cover."""
    if isinstance(schema, dict):
        if PYTHON_KEYWORDS & schema.keys():
            return True
        if isinstance(schema.get("patternProperties"), dict) and schema.get("properties"):
            return True
        if isinstance(schema.get("items"), list):
            return True
        return any(needs_python_validation(v) for k, v in schema.items() if k not in ("enum", "const", "examples", "default"))
    if isinstance(schema, list):
        return any(needs_python_validation(v) for v in schema)
    return False


def _present(var: str) -> str:
    return f"({var} IS NOT NULL AND NOT is_variant_null({var}))"


def _kind(var: str) -> str:
    return f"schema_of_variant({var})"


def _members(var: str, dtype: DataType) -> str | None:
    """An object's members, each as its own small VARIANT (null when absent); None unless
    `dtype` is an object's."""
    if not isinstance(dtype, StructType):
        return None
    members = ", ".join(f"{ident(f.name)}: variant" for f in dtype.fields)
    return f"try_variant_get({var}, '$', {string(f'struct<{members}>')})"


def _get(var: str, type_name: str) -> str:
    return f"try_variant_get({var}, '$', {string(type_name)})"


def _msg(path: str, text: str, value: str | None = None) -> str:
    if value is None:
        return string(f"{path}: {text}")
    return f"concat({string(path + ': ')}, coalesce(CAST({value} AS STRING), 'null'), {string(' ' + text)})"


class Checks:
    """(ok, message) pairs, as SQL, collected while walking a payload's schema."""

    def __init__(self):
        self.items: list[tuple[str, str]] = []

    def add(self, ok: str, message: str) -> None:
        self.items.append((ok, message))

    def all_ok(self) -> str:
        return " AND ".join(f"coalesce({ok}, false)" for ok, _ in self.items) or "true"

    def messages(self) -> str:
        """The messages of the failed checks, in schema order (built only for rows that fail one)."""
        if not self.items:
            return "CAST(array() AS array<string>)"
        failed = ", ".join(f"CASE WHEN NOT coalesce({ok}, false) THEN {msg} END" for ok, msg in self.items)
        return f"CASE WHEN {self.all_ok()} THEN CAST(array() AS array<string>) ELSE filter(array({failed}), m -> m IS NOT NULL) END"


def _element(fresh: Iterator[int]) -> str:
    """A lambda variable name no enclosing array or map lambda uses."""
    return f"e{next(fresh)}"


def typed_sql(dtype: DataType, meta: dict, var: str, view: str | None, fresh: Iterator[int]) -> str:
    """The typed value of the node whose VARIANT is `var` (`view`: its members, for an object)."""
    if meta.get("catalake.json"):
        return f"to_json({var})"
    if meta.get("catalake.xml"):
        return _get(var, "string")
    if isinstance(dtype, StructType):
        if not dtype.fields:
            return f"CAST(NULL AS {dtype.simpleString()})"
        members = []
        for field in dtype.fields:
            child = f"{view}.{ident(field.name)}"
            members += [string(field.name), typed_sql(field.dataType, field.metadata, child, _members(child, field.dataType), fresh)]
        return f"CASE WHEN {view} IS NOT NULL THEN named_struct({', '.join(members)}) END"
    if isinstance(dtype, ArrayType):
        e = _element(fresh)
        return f"transform({_get(var, 'array<variant>')}, {e} -> {typed_sql(dtype.elementType, {}, e, _members(e, dtype.elementType), fresh)})"
    if isinstance(dtype, MapType):
        e = _element(fresh)
        return f"transform_values({_get(var, 'map<string,variant>')}, (k, {e}) -> {typed_sql(dtype.valueType, {}, e, _members(e, dtype.valueType), fresh)})"
    return _scalar_typed(dtype, meta, var)


def _scalar_typed(dtype: DataType, meta: dict, var: str) -> str:
    unit = meta.get("catalake.unit")
    kind = _kind(var)
    if isinstance(dtype, (StringType, LongType, IntegerType, DoubleType, FloatType, DecimalType, BooleanType)):
        return _get(var, dtype.simpleString())
    if isinstance(dtype, (TimestampType, TimestampNTZType)):
        name = dtype.simpleString()
        number = {"millis": "timestamp_millis", "micros": "timestamp_micros"}.get(unit)
        out = f"CASE WHEN {kind} = 'STRING' THEN {_get(var, name)}"
        if number:
            out += f" WHEN {kind} RLIKE {string(INTEGER_KINDS)} THEN CAST({number}({_get(var, 'bigint')}) AS {name})"
        return out + " END"
    if isinstance(dtype, DateType):
        out = f"CASE WHEN {kind} = 'STRING' THEN {_get(var, 'date')}"
        if unit == "days":
            out += f" WHEN {kind} RLIKE {string(INTEGER_KINDS)} THEN date_add(DATE'1970-01-01', {_get(var, 'int')})"
        return out + " END"
    if isinstance(dtype, BinaryType):
        return f"try_to_binary({_get(var, 'string')}, 'base64')"
    return f"to_json({var})"


def _scalar_checks(dtype: DataType, var: str, typed: str, path: str, checks: Checks) -> None:
    kind, shown = _kind(var), f"to_json({var})"
    if isinstance(dtype, StringType):
        checks.add(f"{kind} = 'STRING'", _msg(path, "is not of type 'string'", shown))
    elif isinstance(dtype, (LongType, IntegerType)):
        checks.add(f"({kind} RLIKE {string(INTEGER_KINDS)} AND {typed} IS NOT NULL)", _msg(path, "is not of type 'integer'", shown))
    elif isinstance(dtype, (DoubleType, FloatType)):
        checks.add(f"{kind} RLIKE {string(NUMBER_KINDS)}", _msg(path, "is not of type 'number'", shown))
    elif isinstance(dtype, DecimalType):
        checks.add(f"{typed} IS NOT NULL", _msg(path, f"is not a {dtype.simpleString()}", shown))
    elif isinstance(dtype, BooleanType):
        checks.add(f"{kind} = 'BOOLEAN'", _msg(path, "is not of type 'boolean'", shown))
    elif isinstance(dtype, (TimestampType, TimestampNTZType)):
        checks.add(f"{typed} IS NOT NULL", _msg(path, "is not a 'date-time'", shown))
    elif isinstance(dtype, DateType):
        checks.add(f"{typed} IS NOT NULL", _msg(path, "is not a 'date'", shown))
    elif isinstance(dtype, BinaryType):
        checks.add(f"{typed} IS NOT NULL", _msg(path, "is not base64 text", shown))


def _constraints(typed: str, dtype: DataType, meta: dict, path: str, checks: Checks) -> None:
    rules = meta.get("catalake.check") or {}
    if not rules:
        return
    if "enum" in rules and isinstance(rules["enum"], list):
        allowed = [x for x in rules["enum"] if isinstance(x, (str, int, float)) and not isinstance(x, bool)]
        if allowed and len(allowed) == len([x for x in rules["enum"] if x is not None]):
            checks.add(f"{typed} IN ({', '.join(map(literal, allowed))})", _msg(path, f"is not one of {allowed}", typed))
    if "const" in rules and isinstance(rules["const"], (str, int, float)) and not isinstance(rules["const"], bool):
        checks.add(f"{typed} = {literal(rules['const'])}", _msg(path, f"was expected to be {rules['const']!r}", typed))
    for key, op, text in (
        ("minimum", ">=", "is less than the minimum of"),
        ("maximum", "<=", "is greater than the maximum of"),
        ("exclusiveMinimum", ">", "is less than or equal to the minimum of"),
        ("exclusiveMaximum", "<", "is greater than or equal to the maximum of"),
    ):
        limit = rules.get(key)
        if isinstance(limit, (int, float)) and not isinstance(limit, bool):
            checks.add(f"{typed} {op} {literal(limit)}", _msg(path, f"{text} {limit}", typed))
    if isinstance(dtype, StringType):
        if isinstance(rules.get("minLength"), int):
            checks.add(f"length({typed}) >= {rules['minLength']}", _msg(path, f"is shorter than {rules['minLength']}", typed))
        if isinstance(rules.get("maxLength"), int):
            checks.add(f"length({typed}) <= {rules['maxLength']}", _msg(path, f"is longer than {rules['maxLength']}", typed))
        if isinstance(rules.get("pattern"), str):
            checks.add(f"regexp_like({typed}, {string(rules['pattern'])})", _msg(path, f"does not match {rules['pattern']!r}", typed))
        if rules.get("format") in FORMATS:
            checks.add(f"regexp_like({typed}, {string(FORMATS[rules['format']])})", _msg(path, f"is not a {rules['format']!r}", typed))
    if isinstance(dtype, (ArrayType, MapType)):
        if isinstance(rules.get("minItems"), int):
            checks.add(f"size({typed}) >= {rules['minItems']}", _msg(path, f"has fewer than {rules['minItems']} items"))
        if isinstance(rules.get("maxItems"), int):
            checks.add(f"size({typed}) <= {rules['maxItems']}", _msg(path, f"has more than {rules['maxItems']} items"))


def check_sql(dtype: DataType, meta: dict, var: str, view: str | None, typed: str, path: str, checks: Checks, fresh: Iterator[int]) -> None:
    """Adds the checks of the node whose VARIANT is `var` (`view`: its members, for an object;
    `typed`: its typed value) to `checks`. A check only fails on a value that is present:
    absence is the caller's `required` check."""
    local = Checks()
    if meta.get("catalake.json") or meta.get("catalake.xml"):
        pass
    elif isinstance(dtype, StructType):
        local.add(f"{view} IS NOT NULL", _msg(path, "is not of type 'object'", f"to_json({var})"))
        for field in dtype.fields:
            child, sub = f"{view}.{ident(field.name)}", f"{path}.{field.name}"
            if field.metadata.get("catalake.required") or not field.nullable:
                local.add(_present(child), _msg(sub, "is a required property"))
            check_sql(field.dataType, field.metadata, child, _members(child, field.dataType), f"{typed}.{ident(field.name)}", sub, local, fresh)
        closed = (meta.get("catalake.check") or {}).get("closed")
        if closed:
            keys = f"map_keys({_get(var, 'map<string,variant>')})"
            local.add(f"forall({keys}, k -> k IN ({', '.join(map(string, closed))}))", _msg(path, f"has properties other than {closed}"))
    elif isinstance(dtype, ArrayType):
        arr, e = _get(var, "array<variant>"), _element(fresh)
        local.add(f"{arr} IS NOT NULL", _msg(path, "is not of type 'array'", f"to_json({var})"))
        local.add(f"forall({arr}, {e} -> {_element_ok(dtype.elementType, e, f'{path}[]', fresh)})",
                  _msg(path, "has an item that does not match its schema"))
    elif isinstance(dtype, MapType):
        m, e = _get(var, "map<string,variant>"), _element(fresh)
        local.add(f"{m} IS NOT NULL", _msg(path, "is not of type 'object'", f"to_json({var})"))
        local.add(f"forall(map_values({m}), {e} -> {_element_ok(dtype.valueType, e, path + '{}', fresh)})",
                  _msg(path, "has a value that does not match its schema"))
    else:
        _scalar_checks(dtype, var, typed, path, local)
    _constraints(typed, dtype, meta, path, local)
    for ok, message in local.items:
        checks.add(f"(NOT {_present(var)} OR {ok})", message)


def _element_ok(dtype: DataType, e: str, path: str, fresh: Iterator[int]) -> str:
    """Whether one array element / map value passes its checks (absent values pass)."""
    view = _members(e, dtype)
    inner = Checks()
    check_sql(dtype, {}, e, view, typed_sql(dtype, {}, e, view, fresh), path, inner, fresh)
    return f"(NOT {_present(e)} OR ({inner.all_ok()}))"


def typed_payloads(df: DataFrame, payloads: list[tuple[str, DataType, dict, str, str]]) -> DataFrame:
    """For each (payload VARIANT column, data type, data column metadata, name, rows): adds
    `name`, the typed payload, and `name_errors`, its violation messages, on the rows where the
    SQL condition `rows` holds (null elsewhere).

    Three projections, each for every payload at once: an object payload's members are read
    out of its VARIANT once per row (the view), typed from those small values, then checked
    against the typed values. Spark keeps the projections apart because each column is used
    several times (it does not duplicate non-trivial expressions when collapsing projections);
    in one expression every check would copy the whole payload out of the row again. The
    expressions are generated as SQL text: building them call by call through py4j took
    seconds per run on the driver."""
    views, typed, errors = [], [], []
    for column, dtype, meta, name, rows in payloads:
        var, view, fresh = ident(column), None, itertools.count(1)
        members = _members(var, dtype)
        if members and not (meta.get("catalake.json") or meta.get("catalake.xml")):
            view = ident(f"{name}_view")
            views.append(F.expr(f"CASE WHEN {rows} THEN {members} END").alias(f"{name}_view"))
        typed.append(F.expr(f"CASE WHEN {rows} THEN {typed_sql(dtype, meta, var, view, fresh)} END").alias(name))
        checks = Checks()
        if meta.get("catalake.required"):
            checks.add(_present(var), string("data: the payload is required by the data schema"))
        check_sql(dtype, meta, var, view, ident(name), "data", checks, fresh)
        errors.append(F.expr(f"CASE WHEN {rows} THEN {checks.messages()} END").alias(f"{name}_errors"))
    out = df.select("*", *views).select("*", *typed).select("*", *errors)
    return out.drop(*[f"{name}_view" for *_, name, _ in payloads])
