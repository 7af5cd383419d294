"""A payload (VARIANT) -> the typed `data` column of its table, and the schema violations, in Spark.

The derived Spark type drives it, field by field: JSON kinds are checked exactly (an integer
field takes an integer, not 1.5 nor "1"), Avro's JSON encodings of logical types are converted
(`catalake.unit`: timestamp millis/micros, date days), and the value constraints carried in the
column metadata (`catalake.check`: enum/const, minimum/maximum and exclusive forms,
minLength/maxLength, pattern, format, minItems/maxItems, closed objects) are evaluated. What the
catalog requires is `catalake.required`.

A data schema using keywords this does not compile (`not`, `if`, `dependentRequired`,
`uniqueItems`, `multipleOf`, ...) is validated by jsonschema itself in Python instead
(classify.py); `needs_python_validation` tells which.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column
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


def _present(v: Column) -> Column:
    return v.isNotNull() & ~F.is_variant_null(v)


def _kind(v: Column) -> Column:
    return F.schema_of_variant(v)


def _msg(path: str, text: str, value: Column | None = None) -> Column:
    if value is None:
        return F.lit(f"{path}: {text}")
    return F.concat(F.lit(f"{path}: "), F.coalesce(value.cast("string"), F.lit("null")), F.lit(f" {text}"))


class Checks:
    """(ok, message) pairs collected while building a typed value."""

    def __init__(self):
        self.items: list[tuple[Column, Column]] = []

    def add(self, ok: Column, message: Column) -> None:
        self.items.append((ok, message))

    def all_ok(self) -> Column:
        out = F.lit(True)
        for ok, _ in self.items:
            out = out & F.coalesce(ok, F.lit(False))
        return out

    def messages(self) -> Column:
        """The messages of the failed checks, in schema order."""
        if not self.items:
            return F.array().cast("array<string>")
        return F.filter(
            F.array(*[F.when(~F.coalesce(ok, F.lit(False)), msg) for ok, msg in self.items]), lambda m: m.isNotNull()
        )


def _scalar(dtype: DataType, v: Column, meta: dict, path: str, checks: Checks) -> Column:
    kind = _kind(v)
    if meta.get("catalake.json"):
        return F.to_json(v)
    if meta.get("catalake.xml"):
        return F.try_variant_get(v, "$", "string")
    unit = meta.get("catalake.unit")
    if isinstance(dtype, StringType):
        checks.add(kind == "STRING", _msg(path, "is not of type 'string'", F.to_json(v)))
        return F.try_variant_get(v, "$", "string")
    if isinstance(dtype, (LongType, IntegerType)):
        typed = F.try_variant_get(v, "$", dtype.simpleString())
        checks.add(F.regexp_like(kind, F.lit(INTEGER_KINDS)) & typed.isNotNull(), _msg(path, "is not of type 'integer'", F.to_json(v)))
        return typed
    if isinstance(dtype, (DoubleType, FloatType)):
        checks.add(F.regexp_like(kind, F.lit(NUMBER_KINDS)), _msg(path, "is not of type 'number'", F.to_json(v)))
        return F.try_variant_get(v, "$", dtype.simpleString())
    if isinstance(dtype, DecimalType):
        typed = F.try_variant_get(v, "$", dtype.simpleString())
        checks.add(typed.isNotNull(), _msg(path, f"is not a {dtype.simpleString()}", F.to_json(v)))
        return typed
    if isinstance(dtype, BooleanType):
        checks.add(kind == "BOOLEAN", _msg(path, "is not of type 'boolean'", F.to_json(v)))
        return F.try_variant_get(v, "$", "boolean")
    if isinstance(dtype, (TimestampType, TimestampNTZType)):
        number = F.try_variant_get(v, "$", "bigint")
        from_number = F.timestamp_millis(number) if unit == "millis" else F.timestamp_micros(number) if unit == "micros" else None
        from_text = F.try_variant_get(v, "$", dtype.simpleString())
        typed = F.when(kind == "STRING", from_text)
        if from_number is not None:
            typed = typed.when(F.regexp_like(kind, F.lit(INTEGER_KINDS)), from_number.cast(dtype.simpleString()))
        checks.add(typed.isNotNull(), _msg(path, "is not a 'date-time'", F.to_json(v)))
        return typed
    if isinstance(dtype, DateType):
        typed = F.when(kind == "STRING", F.try_variant_get(v, "$", "date"))
        if unit == "days":
            typed = typed.when(F.regexp_like(kind, F.lit(INTEGER_KINDS)), F.date_add(F.lit("1970-01-01").cast("date"), F.try_variant_get(v, "$", "int")))
        checks.add(typed.isNotNull(), _msg(path, "is not a 'date'", F.to_json(v)))
        return typed
    if isinstance(dtype, BinaryType):
        typed = F.try_to_binary(F.try_variant_get(v, "$", "string"), F.lit("base64"))
        checks.add(typed.isNotNull(), _msg(path, "is not base64 text", F.to_json(v)))
        return typed
    return F.to_json(v)


def _constraints(typed: Column, dtype: DataType, meta: dict, path: str, checks: Checks) -> None:
    rules = meta.get("catalake.check") or {}
    if not rules:
        return
    if "enum" in rules and isinstance(rules["enum"], list):
        allowed = [x for x in rules["enum"] if isinstance(x, (str, int, float)) and not isinstance(x, bool)]
        if allowed and len(allowed) == len([x for x in rules["enum"] if x is not None]):
            checks.add(typed.isin(allowed), _msg(path, f"is not one of {allowed}", typed))
    if "const" in rules and isinstance(rules["const"], (str, int, float)) and not isinstance(rules["const"], bool):
        checks.add(typed == F.lit(rules["const"]), _msg(path, f"was expected to be {rules['const']!r}", typed))
    for key, op, text in (
        ("minimum", lambda t, x: t >= x, "is less than the minimum of"),
        ("maximum", lambda t, x: t <= x, "is greater than the maximum of"),
        ("exclusiveMinimum", lambda t, x: t > x, "is less than or equal to the minimum of"),
        ("exclusiveMaximum", lambda t, x: t < x, "is greater than or equal to the maximum of"),
    ):
        limit = rules.get(key)
        if isinstance(limit, (int, float)) and not isinstance(limit, bool):
            checks.add(op(typed, F.lit(limit)), _msg(path, f"{text} {limit}", typed))
    if isinstance(dtype, StringType):
        if isinstance(rules.get("minLength"), int):
            checks.add(F.length(typed) >= rules["minLength"], _msg(path, f"is shorter than {rules['minLength']}", typed))
        if isinstance(rules.get("maxLength"), int):
            checks.add(F.length(typed) <= rules["maxLength"], _msg(path, f"is longer than {rules['maxLength']}", typed))
        if isinstance(rules.get("pattern"), str):
            checks.add(F.regexp_like(typed, F.lit(rules["pattern"])), _msg(path, f"does not match {rules['pattern']!r}", typed))
        if rules.get("format") in FORMATS:
            checks.add(F.regexp_like(typed, F.lit(FORMATS[rules["format"]])), _msg(path, f"is not a {rules['format']!r}", typed))
    if isinstance(dtype, (ArrayType, MapType)):
        if isinstance(rules.get("minItems"), int):
            checks.add(F.size(typed) >= rules["minItems"], _msg(path, f"has fewer than {rules['minItems']} items"))
        if isinstance(rules.get("maxItems"), int):
            checks.add(F.size(typed) <= rules["maxItems"], _msg(path, f"has more than {rules['maxItems']} items"))


def build(dtype: DataType, v: Column, meta: dict, path: str, checks: Checks) -> Column:
    """The typed value of variant `v` (null when absent), adding its checks to `checks`.

    A check only fails on a value that is present: absence is the caller's `required` check."""
    local = Checks()
    if meta.get("catalake.json") or meta.get("catalake.xml"):
        typed = _scalar(dtype, v, meta, path, local)
    elif isinstance(dtype, StructType):
        local.add(F.startswith(_kind(v), F.lit("OBJECT")), _msg(path, "is not of type 'object'", F.to_json(v)))
        members = []
        for field in dtype.fields:
            fv = F.try_variant_get(v, "$['" + field.name.replace("'", "\\'") + "']", "variant")
            sub = f"{path}.{field.name}"
            if field.metadata.get("catalake.required") or not field.nullable:
                local.add(_present(fv), F.lit(f"{sub}: is a required property"))
            members.append(build(field.dataType, fv, field.metadata, sub, local).alias(field.name))
        closed = (meta.get("catalake.check") or {}).get("closed")
        if closed:
            keys = F.map_keys(F.try_variant_get(v, "$", "map<string,variant>"))
            local.add(F.forall(keys, lambda k: k.isin(closed)), _msg(path, f"has properties other than {closed}"))
        typed = F.when(_kind(v).startswith("OBJECT"), F.struct(*members))
    elif isinstance(dtype, ArrayType):
        arr = F.try_variant_get(v, "$", "array<variant>")
        local.add(arr.isNotNull(), _msg(path, "is not of type 'array'", F.to_json(v)))
        # typed values and checks live in separate lambdas: each is built from the element
        typed = F.transform(arr, lambda e: build(dtype.elementType, e, {}, f"{path}[]", Checks()))
        local.add(F.forall(arr, lambda e: _ok(dtype.elementType, e, f"{path}[]")), _msg(path, "has an item that does not match its schema"))
    elif isinstance(dtype, MapType):
        m = F.try_variant_get(v, "$", "map<string,variant>")
        local.add(m.isNotNull(), _msg(path, "is not of type 'object'", F.to_json(v)))
        typed = F.transform_values(m, lambda k, e: build(dtype.valueType, e, {}, f"{path}{{}}", Checks()))
        local.add(F.forall(F.map_values(m), lambda e: _ok(dtype.valueType, e, f"{path}{{}}")), _msg(path, "has a value that does not match its schema"))
    else:
        typed = _scalar(dtype, v, meta, path, local)
    _constraints(typed, dtype, meta, path, local)
    for ok, message in local.items:
        checks.add(~_present(v) | ok, message)
    return typed


def _ok(dtype: DataType, e: Column, path: str) -> Column:
    """Whether one array element / map value passes its checks (absent values pass)."""
    inner = Checks()
    build(dtype, e, {}, path, inner)
    return ~_present(e) | inner.all_ok()


def typed_payload(dtype: DataType, data_meta: dict, v: Column) -> tuple[Column, Column]:
    """(typed data, array of violation messages) for payload variant `v`."""
    checks = Checks()
    if data_meta.get("catalake.required"):
        checks.add(_present(v), F.lit("data: the payload is required by the data schema"))
    typed = build(dtype, v, data_meta, "data", checks)
    return typed, checks.messages()
