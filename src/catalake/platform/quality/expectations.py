"""One expectation suite per message definition, generated from the catalog: the one source of
truth for the Great Expectations (1.x) suites and for the classifier's checks (evaluation.py).

A pure function of the definition's table (catalog declarations + derived schema with its
`catalake.required` / `catalake.check` column metadata); one named function per rule. Each rule
yields plain `Expectation`s: a GX expectation type and kwargs, where the value lives in a table
row (`path`, `measure`), the optional parents that must be present (`guard`, GX's row
condition), and the catalog rule it comes from (`rule`, `source`) with a `severity`: ERROR for
what the catalog requires (GX severity critical), WARN for what it only describes (JSON Schema
`format` is an annotation unless a validator opts in; GX warning). `build_suite` turns them into
a GX suite; evaluation.py evaluates the same objects on every classified record, so a suite and the
check the classifier runs cannot drift apart.

Columns are addressed by their path (`data.fare.amount`); GX's Spark engine resolves nested
fields. Array sizes (`minItems`/`maxItems`) are checked on derived columns (`size(data.stops)`)
that the suite lists in `meta["catalake.derived_columns"]` and the validator adds to the frame.
Constraints inside arrays and maps are per element: they are no column expectation and stay with
the payload typing (payload.py), which dead-letters the record instead.

The GX suites and their files are suites.py. GX itself is imported only where a suite is built
(it takes seconds to import; the classifier's workers never need it).
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Iterator

from pyspark.sql.types import ArrayType, DataType, DateType, StringType, StructField, StructType, TimestampType

from ..catalog.matcher import CE_TYPED, declared_content_type, is_registry_pointer, template_regex
from ..patterns import BUDGET_SECONDS, PatternError, backtracking_construct
from ..records import cloudevents
from ..records.attributes import TEXT_SYNTAX, declared_text, is_content_type, media_type_regex, value_set
from ..schemas import keys
from ..schemas.payload import FORMATS
from ..sql import ident
from ..warehouse.message_tables import MessageTable


class Severity(StrEnum):
    """ERROR: what the catalog requires (a record breaking it is dead-lettered); WARN: what it
    only describes (counted, the record is stored)."""

    ERROR = "ERROR"
    WARN = "WARN"


ERROR, WARN = Severity.ERROR, Severity.WARN
DERIVED = "catalake.derived_columns"
# GX names of the Spark column types behind declared CloudEvents attribute types
SPARK_TYPE_NAMES = {"boolean": "BooleanType", "integer": "IntegerType", "binary": "BinaryType", "timestamp": "TimestampType"}
PAYLOAD_TYPE_FORMATS = {"date-time": "TimestampType", "date": "DateType"}

FieldPath = tuple[str, ...]
TEXTLESS = (TimestampType, DateType)  # `format: date-time` / `date` columns: the text is parsed


@dataclass(frozen=True)
class Expectation:
    """One expectation of a suite, as plain data."""

    type: str  # GX expectation type, e.g. expect_column_values_to_be_between
    column: str  # as GX addresses it: `data.fare.amount`, `size(data.stops)`, `source`
    kwargs: dict  # the other GX kwargs (value_set, min_value, regex, ...)
    rule: str
    source: str
    severity: Severity
    key: str  # what the check is about: `data.fare.amount`, `source`
    path: FieldPath  # where the value is in a table row
    guard: tuple[FieldPath, ...] = ()  # optional parents that must be present (the row condition)
    measure: str | None = None  # "size": about the array's size; "copy": GX validates a derived copy of the field

    @property
    def id(self) -> str:
        """Stable and readable: `<column>:<keyword>`, e.g. `data.fare.amount:range`."""
        return f"{self.key}:{self.rule.split()[-1]}"

    @property
    def meta(self) -> dict:
        meta = {"id": self.id, "rule": self.rule, "source": self.source, "severity": self.severity}
        construct = _backtracks(self.kwargs["regex"]) if self.type == MATCH_REGEX else None
        if construct is not None:
            meta["notes"] = (f"The pattern backtracks ({construct}): the pass evaluated it on every record with a "
                             f"budget of {BUDGET_SECONDS} s a value (a value over it is a pattern_timeout dead letter); "
                             "GX runs it on stored rows, which matched it.")
        return meta

    @property
    def row_condition(self) -> str | None:
        return " AND ".join(f"{column_sql(p)} IS NOT NULL" for p in self.guard) or None

    def gx_kwargs(self) -> dict:
        kwargs = {"column": self.column, **self.kwargs}
        if self.guard:
            kwargs.update(row_condition=self.row_condition, condition_parser="spark")
        return kwargs

    def to_gx(self):
        """The GX expectation object."""
        import_gx()
        from great_expectations.expectations.registry import get_expectation_impl

        cls = get_expectation_impl(self.type)
        return cls(**self.gx_kwargs(), severity=gx_severity(self.severity), meta=self.meta)


def column_sql(path: FieldPath) -> str:
    """A field path as Spark SQL (each name quoted)."""
    return ".".join(ident(p) for p in path)


def import_gx():
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")  # no usage reporting to the network
    import great_expectations as gx

    return gx



def gx_severity(severity: str):
    from great_expectations.expectations.metadata_types import FailureSeverity

    return FailureSeverity.CRITICAL if severity == ERROR else FailureSeverity.WARNING


@functools.lru_cache(maxsize=None)
def _backtracks(pattern: str) -> str | None:
    try:
        return backtracking_construct(pattern)
    except PatternError:
        return None  # GX fails such an expectation (evaluation.py)


def _expect(expectation_type: str, severity: str, rule: str, source: str, column: str, path: FieldPath | None = None,
            guard: tuple[FieldPath, ...] = (), measure: str | None = None, **kwargs) -> Expectation:
    path = path if path is not None else (column,)
    if measure is None and any("`" in p for p in path):
        # GX on Spark cannot address a field whose name holds a backtick, quoted or not: it
        # validates a derived top-level copy of it instead (validator.validation_frame)
        column, measure = "__".join(re.sub(r"[^A-Za-z0-9_]", "_", p) for p in path), "copy"
    return Expectation(expectation_type, column, kwargs, rule, source, severity, ".".join(path), path, guard, measure)


NOT_NULL = "expect_column_values_to_not_be_null"
IN_SET = "expect_column_values_to_be_in_set"
MATCH_REGEX = "expect_column_values_to_match_regex"
OF_TYPE = "expect_column_values_to_be_of_type"
BETWEEN = "expect_column_values_to_be_between"
LENGTHS_BETWEEN = "expect_column_value_lengths_to_be_between"


# --- CloudEvents attribute rules (xRegistry message spec, "metadata" of a message definition)

def _declarations(table: MessageTable) -> Iterator[tuple[str, dict]]:
    """The envelope attributes the table stores, with the definition's declaration (may be {})."""
    columns = set(table.schema.fieldNames())
    for name, decl in table.message.attributes.items():
        if name in columns and isinstance(decl, dict):
            yield name, decl


def rule_required_attributes(table: MessageTable) -> Iterator[Expectation]:
    """CloudEvents `id`, `source`, `type`, `specversion` always, and every attribute declared
    `required: true`, are not null (a `dataschema` naming the catalog's registry entry excepted,
    as in the matcher: producers do not send it)."""
    columns = table.schema.fieldNames()
    declared = {n: d for n, d in _declarations(table) if not (n == "dataschema" and is_registry_pointer(d.get("value")))}
    for name in [n for n in cloudevents.BY_NAME if n in columns] + [n for n in declared if n not in cloudevents.BY_NAME]:
        always = name in cloudevents.REQUIRED
        if always or declared.get(name, {}).get("required"):
            source = "CloudEvents 1.0 required attribute" if always else f"attributes.{name}.required"
            yield _expect(NOT_NULL, ERROR, "attribute required", source, column=name)


def _declared_values(table: MessageTable) -> Iterator[tuple[str, dict, str]]:
    """(attribute, declaration, where the value is declared) of the attributes the table stores,
    the definition's own `datacontenttype` standing for the attribute's value when the attribute
    declares none (as in the matcher: rc2 "datacontenttype" implies the attribute's value)."""
    declared = dict(_declarations(table))
    content_type = declared_content_type(table.message)
    if content_type is not None and "datacontenttype" in table.schema.fieldNames():
        own = declared.get("datacontenttype", {})
        if own.get("value") is None:
            declared["datacontenttype"] = {**own, "value": content_type}
    for name, decl in declared.items():
        written = table.message.attributes.get(name)
        from_attribute = isinstance(written, dict) and written.get("value") is not None
        yield name, decl, f"attributes.{name}.value" if from_attribute else "datacontenttype"


def rule_attribute_values(table: MessageTable) -> Iterator[Expectation]:
    """An attribute declared with a constant `value` holds exactly that value, by the matcher's
    rule (attributes.value_rule): a typed column holds the parsed value (`value_set`), a content
    type is a media type the declared one accepts (`media_type_regex`). A timestamp value and a
    binary column's bytes have no form in a suite file (JSON) that every engine compares with the
    typed column alike, so the matcher alone compares them (attributes.timestamp_value_filters)."""
    for name, decl, source in _declared_values(table):
        value, kind = decl.get("value"), str(decl.get("type") or "string").lower()
        if value is None or kind in ("timestamp", "uritemplate", "binary") or "{" in str(value):
            continue
        text = declared_text(value)
        if is_content_type(name):
            yield _expect(MATCH_REGEX, ERROR, "attribute value", source, column=name, regex=media_type_regex(text))
        else:
            yield _expect(IN_SET, ERROR, "attribute value", source, column=name, value_set=value_set(kind, text))


def rule_uritemplates(table: MessageTable, strict: bool = False) -> Iterator[Expectation]:
    """An attribute whose `value` is a URI template matches it, placeholders as wildcards (the
    matcher's regex: loose by default, strict on request)."""
    text = {f.name for f in table.schema.fields if isinstance(f.dataType, StringType)}
    for name, decl in _declarations(table):
        value = decl.get("value")
        # a typed column (`time`) no longer holds the text the template matched: the matcher
        # checked it on the record, the placeholders have their own columns
        if isinstance(value, str) and "{" in value and name in text:
            regex, _ = template_regex(value, strict)
            yield _expect(MATCH_REGEX, ERROR, "attribute uritemplate", f"attributes.{name}.value", column=name, regex=regex)


def rule_attribute_types(table: MessageTable) -> Iterator[Expectation]:
    """Declared attribute types hold: typed columns (timestamp, integer, boolean, binary) are of
    that Spark type, so every value parsed; `uri` and `urireference` values have their syntax
    (attributes.TEXT_SYNTAX, the matcher's regex)."""
    columns = table.schema.fieldNames()
    declared = dict(_declarations(table))
    for name in [*declared, *(n for n in CE_TYPED if n in columns and n not in declared)]:
        decl = {**CE_TYPED.get(name, {}), **declared.get(name, {})}
        kind = str(decl.get("type") or "string").lower()
        source = f"attributes.{name}.type" if "type" in declared.get(name, {}) else "CloudEvents 1.0 attribute type"
        if kind in SPARK_TYPE_NAMES:
            yield _expect(OF_TYPE, ERROR, "attribute type", source, column=name, type_=SPARK_TYPE_NAMES[kind])
        elif kind in TEXT_SYNTAX:
            yield _expect(MATCH_REGEX, ERROR, "attribute type", source, column=name, regex=TEXT_SYNTAX[kind])


# --- payload rules (the data schema, through the derived column metadata)

def payload_fields(dtype: DataType, path: FieldPath, guard: tuple[FieldPath, ...]) -> Iterator[tuple[FieldPath, StructField, tuple[FieldPath, ...]]]:
    """(path, field, optional parents) for every field reachable through structs; the parents
    are those that may be null (a missing parent is not a missing child)."""
    if not isinstance(dtype, StructType):
        return
    for f in dtype.fields:
        child = (*path, f.name)
        yield child, f, guard
        nested = guard if f.metadata.get(keys.REQUIRED) else (*guard, child)
        yield from payload_fields(f.dataType, child, nested)


def _payload(table: MessageTable) -> Iterator[tuple[FieldPath, StructField, tuple[FieldPath, ...], dict]]:
    data = table.schema["data"] if "data" in table.schema.fieldNames() else None
    if data is None or not isinstance(data.dataType, StructType):
        return
    top = () if data.metadata.get(keys.REQUIRED) else (("data",),)
    for path, f, guard in payload_fields(data.dataType, ("data",), top):
        yield path, f, guard, f.metadata.get(keys.CHECK) or {}


def _source(table: MessageTable, path: FieldPath, keyword: str) -> str:
    where = table.data_schema.reference if table.data_schema and table.data_schema.reference else "inline data schema"
    return f"{where}: {'.'.join(path[1:]) or 'data'} {keyword}"


def _column(path: FieldPath) -> str:
    """The column path as Spark (and so GX on Spark) resolves it: a field whose name holds a dot
    or a backtick is backtick-quoted (`data.`geo.lat``), or it would read as nested fields."""
    return ".".join(f"`{p.replace('`', '``')}`" if "." in p or "`" in p else p for p in path)


def rule_payload_required(table: MessageTable) -> Iterator[Expectation]:
    """Required payload fields (JSON Schema `required`, non-optional Avro/Protobuf fields) are not
    null wherever their parent object is present."""
    data = table.schema["data"] if "data" in table.schema.fieldNames() else None
    if data is not None and data.metadata.get(keys.REQUIRED):
        yield _expect(NOT_NULL, ERROR, "payload required", _source(table, ("data",), "required"), column="data")
    for path, f, guard, _ in _payload(table):
        if f.metadata.get(keys.REQUIRED):
            yield _expect(NOT_NULL, ERROR, "payload required", _source(table, path, "required"),
                          column=_column(path), path=path, guard=guard)


def rule_payload_enum(table: MessageTable) -> Iterator[Expectation]:
    """`enum` / `const` (JSON Schema) and Avro enum symbols: values in the set (not of a
    timestamp or date column, which holds no text: jsonschema checks those, coverage.uncompiled)."""
    for path, f, _, check in _payload(table):
        values = check.get("enum") if "enum" in check else ([check["const"]] if "const" in check else None)
        if values is not None and not isinstance(f.dataType, TEXTLESS):
            yield _expect(IN_SET, ERROR, "payload enum", _source(table, path, "enum" if "enum" in check else "const"),
                          column=_column(path), path=path, value_set=[v for v in values if v is not None])


def rule_payload_range(table: MessageTable) -> Iterator[Expectation]:
    """`minimum` / `maximum` and their exclusive forms: values between."""
    for path, _, _, check in _payload(table):
        bounds = {}
        if "minimum" in check or "exclusiveMinimum" in check:
            exclusive = "exclusiveMinimum" in check and ("minimum" not in check or check["exclusiveMinimum"] >= check["minimum"])
            bounds.update(min_value=check["exclusiveMinimum"] if exclusive else check["minimum"], strict_min=exclusive)
        if "maximum" in check or "exclusiveMaximum" in check:
            exclusive = "exclusiveMaximum" in check and ("maximum" not in check or check["exclusiveMaximum"] <= check["maximum"])
            bounds.update(max_value=check["exclusiveMaximum"] if exclusive else check["maximum"], strict_max=exclusive)
        if bounds:
            keywords = "/".join(k for k in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum") if k in check)
            yield _expect(BETWEEN, ERROR, "payload range", _source(table, path, keywords), column=_column(path), path=path, **bounds)


def rule_payload_length(table: MessageTable) -> Iterator[Expectation]:
    """`minLength` / `maxLength`: string lengths between (of a string column)."""
    for path, f, _, check in _payload(table):
        if ("minLength" in check or "maxLength" in check) and isinstance(f.dataType, StringType):
            yield _expect(LENGTHS_BETWEEN, ERROR, "payload length", _source(table, path, "minLength/maxLength"),
                          column=_column(path), path=path, min_value=check.get("minLength"), max_value=check.get("maxLength"))


def rule_payload_pattern(table: MessageTable) -> Iterator[Expectation]:
    """`pattern`: values match the regex (JSON Schema patterns are unanchored searches), of a
    string column."""
    for path, f, _, check in _payload(table):
        if "pattern" in check and isinstance(f.dataType, StringType):
            yield _expect(MATCH_REGEX, ERROR, "payload pattern", _source(table, path, "pattern"),
                          column=_column(path), path=path, regex=check["pattern"])


def rule_payload_format(table: MessageTable) -> Iterator[Expectation]:
    """`format`: uuid, email, uri (and hostname, ipv4) by regex; date-time and date are typed
    columns, so they parsed when they are of that type. A description, not a requirement: WARN."""
    for path, _field, _, check in _payload(table):
        fmt = check.get("format")
        if fmt in FORMATS:
            yield _expect(MATCH_REGEX, WARN, "payload format", _source(table, path, f"format {fmt}"),
                          column=_column(path), path=path, regex=FORMATS[fmt])
        elif fmt in PAYLOAD_TYPE_FORMATS:
            yield _expect(OF_TYPE, WARN, "payload format", _source(table, path, f"format {fmt}"),
                          column=_column(path), path=path, type_=PAYLOAD_TYPE_FORMATS[fmt])


def rule_payload_items(table: MessageTable) -> Iterator[Expectation]:
    """`minItems` / `maxItems`: the array's size (a derived column) between."""
    for path, f, _, check in _payload(table):
        if isinstance(f.dataType, ArrayType) and ("minItems" in check or "maxItems" in check):
            yield _expect(BETWEEN, ERROR, "payload items", _source(table, path, "minItems/maxItems"),
                          column=size_column(_column(path)), path=path, measure="size",
                          min_value=check.get("minItems"), max_value=check.get("maxItems"))


def size_column(path: str) -> str:
    return f"size({path})"


RULES = (
    rule_required_attributes, rule_attribute_values, rule_uritemplates, rule_attribute_types,
    rule_payload_required, rule_payload_enum, rule_payload_range, rule_payload_length,
    rule_payload_pattern, rule_payload_format, rule_payload_items,
)


def suite_expectations(table: MessageTable, strict: bool = False) -> list[Expectation]:
    """The suite of one definition's table as plain data (rules in RULES order, each in
    declaration order)."""
    return [e for rule in RULES for e in (rule(table, strict) if rule is rule_uritemplates else rule(table))]
