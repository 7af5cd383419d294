"""One Great Expectations (1.x) suite per message definition, generated from the catalog.

A pure function of the definition's table (catalog declarations + derived schema with its
`catalake.required` / `catalake.check` column metadata); one named function per rule. Every
expectation carries in `meta` the catalog rule it comes from (`rule`, `source`) and a
`severity`: ERROR for what the catalog requires (GX severity critical), WARN for what it only
describes (JSON Schema `format` is an annotation unless a validator opts in; GX warning).

Columns are addressed by their path (`data.fare.amount`); GX's Spark engine resolves nested
fields. Array sizes (`minItems`/`maxItems`) are checked on derived columns (`size(data.stops)`)
that the suite lists in `meta["catalake.derived_columns"]` and validation adds to the frame.
Constraints inside arrays and maps are per element and stay with the classifier's checks
(payload.py), which dead-letter the record instead.

Suites are serialized with GX's own `to_json_dict()`, without the random ids GX assigns and
with sorted keys, so a definition that did not change gives a byte-identical file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator, Sequence

from pyspark.sql.types import ArrayType, DataType, StructField, StructType

from .matcher import CE_TYPED, registry_reference, template_regex
from .message_table import CORE_ATTRIBUTES, MessageTable
from .payload import FORMATS
from .sql import ident

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")  # no usage reporting to the network

import great_expectations as gx  # noqa: E402
import great_expectations.expectations as gxe  # noqa: E402
from great_expectations.expectations.metadata_types import FailureSeverity  # noqa: E402

ERROR, WARN = "ERROR", "WARN"
GX_SEVERITY = {ERROR: FailureSeverity.CRITICAL, WARN: FailureSeverity.WARNING}
DERIVED = "catalake.derived_columns"
# GX names of the Spark column types behind declared CloudEvents attribute types
SPARK_TYPE_NAMES = {"boolean": "BooleanType", "integer": "IntegerType", "binary": "BinaryType", "timestamp": "TimestampType"}
PAYLOAD_TYPE_FORMATS = {"date-time": "TimestampType", "date": "DateType"}


def _expect(cls, severity: str, rule: str, source: str, **kwargs) -> gxe.Expectation:
    return cls(**kwargs, severity=GX_SEVERITY[severity], meta={"rule": rule, "source": source, "severity": severity})


# --- CloudEvents attribute rules (xRegistry message spec, "metadata" of a message definition)

def _declarations(table: MessageTable) -> Iterator[tuple[str, dict]]:
    """The envelope attributes the table stores, with the definition's declaration (may be {})."""
    columns = set(table.schema.fieldNames())
    for name, decl in table.message.attributes.items():
        if name in columns and isinstance(decl, dict):
            yield name, decl


def rule_required_attributes(table: MessageTable) -> Iterator[gxe.Expectation]:
    """CloudEvents `id`, `source`, `type`, `specversion` always, and every attribute declared
    `required: true`, are not null (a `dataschema` naming the catalog's registry entry excepted,
    as in the matcher: producers do not send it)."""
    columns = table.schema.fieldNames()
    declared = {n: d for n, d in _declarations(table) if not (n == "dataschema" and registry_reference(d.get("value")))}
    for name in [n for n in CORE_ATTRIBUTES if n in columns] + [n for n in declared if n not in CORE_ATTRIBUTES]:
        always = CORE_ATTRIBUTES.get(name, ("", False))[1]
        if always or declared.get(name, {}).get("required"):
            source = "CloudEvents 1.0 required attribute" if always else f"attributes.{name}.required"
            yield _expect(gxe.ExpectColumnValuesToNotBeNull, ERROR, "required attribute", source, column=name)


def rule_attribute_values(table: MessageTable) -> Iterator[gxe.Expectation]:
    """An attribute declared with a constant `value` holds exactly that value. Timestamp values
    are creation-time defaults, not constraints (as in the matcher)."""
    for name, decl in _declarations(table):
        value, kind = decl.get("value"), str(decl.get("type") or "string").lower()
        if value is None or kind in ("timestamp", "uritemplate") or "{" in str(value):
            continue
        yield _expect(gxe.ExpectColumnValuesToBeInSet, ERROR, "attribute value", f"attributes.{name}.value",
                      column=name, value_set=[value])


def rule_uritemplates(table: MessageTable, strict: bool = False) -> Iterator[gxe.Expectation]:
    """An attribute whose `value` is a URI template matches it, placeholders as wildcards (the
    matcher's regex: loose by default, strict on request)."""
    for name, decl in _declarations(table):
        value = decl.get("value")
        if isinstance(value, str) and "{" in value:
            regex, _ = template_regex(value, strict)
            yield _expect(gxe.ExpectColumnValuesToMatchRegex, ERROR, "attribute uritemplate", f"attributes.{name}.value",
                          column=name, regex=regex)


def rule_attribute_types(table: MessageTable) -> Iterator[gxe.Expectation]:
    """Declared attribute types hold: typed columns (timestamp, integer, boolean, binary) are of
    that Spark type, so every value parsed; `uri` values are absolute URIs."""
    columns = table.schema.fieldNames()
    declared = dict(_declarations(table))
    for name in [*declared, *(n for n in CE_TYPED if n in columns and n not in declared)]:
        decl = {**CE_TYPED.get(name, {}), **declared.get(name, {})}
        kind = str(decl.get("type") or "string").lower()
        source = f"attributes.{name}.type" if "type" in declared.get(name, {}) else "CloudEvents 1.0 attribute type"
        if kind in SPARK_TYPE_NAMES:
            yield _expect(gxe.ExpectColumnValuesToBeOfType, ERROR, "attribute type", source,
                          column=name, type_=SPARK_TYPE_NAMES[kind])
        elif kind == "uri":
            yield _expect(gxe.ExpectColumnValuesToMatchRegex, ERROR, "attribute type", source,
                          column=name, regex=FORMATS["uri"])


# --- payload rules (the data schema, through the derived column metadata)

def payload_fields(dtype: DataType, path: str, guard: str | None) -> Iterator[tuple[str, StructField, str | None]]:
    """(column path, field, row condition) for every field reachable through structs; the
    condition is set when an optional parent may be null (a missing parent is not a missing
    child)."""
    if not isinstance(dtype, StructType):
        return
    for field in dtype.fields:
        child = f"{path}.{field.name}"
        yield child, field, guard
        nested_guard = guard if field.metadata.get("catalake.required") else _and(guard, f"{_sql(child)} IS NOT NULL")
        yield from payload_fields(field.dataType, child, nested_guard)


def _sql(path: str) -> str:
    return ".".join(ident(p) for p in path.split("."))


def _and(a: str | None, b: str) -> str:
    return b if a is None else f"{a} AND {b}"


def _payload(table: MessageTable) -> Iterator[tuple[str, StructField, str | None, dict]]:
    data = table.schema["data"] if "data" in table.schema.fieldNames() else None
    if data is None or not isinstance(data.dataType, StructType):
        return
    top = None if data.metadata.get("catalake.required") else "data IS NOT NULL"
    for path, field, guard in payload_fields(data.dataType, "data", top):
        yield path, field, guard, field.metadata.get("catalake.check") or {}


def _conditioned(guard: str | None) -> dict:
    return {"row_condition": guard, "condition_parser": "spark"} if guard else {}


def _source(table: MessageTable, path: str, keyword: str) -> str:
    where = table.data_schema.reference if table.data_schema and table.data_schema.reference else "inline data schema"
    return f"{where}: {path.removeprefix('data.')} {keyword}"


def rule_payload_required(table: MessageTable) -> Iterator[gxe.Expectation]:
    """Required payload fields (JSON Schema `required`, non-optional Avro/Protobuf fields) are not
    null wherever their parent object is present."""
    data = table.schema["data"] if "data" in table.schema.fieldNames() else None
    if data is not None and data.metadata.get("catalake.required"):
        yield _expect(gxe.ExpectColumnValuesToNotBeNull, ERROR, "payload required", _source(table, "data", "required"), column="data")
    for path, field, guard, _ in _payload(table):
        if field.metadata.get("catalake.required"):
            yield _expect(gxe.ExpectColumnValuesToNotBeNull, ERROR, "payload required", _source(table, path, "required"),
                          column=path, **_conditioned(guard))


def rule_payload_enum(table: MessageTable) -> Iterator[gxe.Expectation]:
    """`enum` / `const` (JSON Schema) and Avro enum symbols: values in the set."""
    for path, _, _, check in _payload(table):
        values = check.get("enum") if "enum" in check else ([check["const"]] if "const" in check else None)
        if values is not None:
            yield _expect(gxe.ExpectColumnValuesToBeInSet, ERROR, "payload enum", _source(table, path, "enum" if "enum" in check else "const"),
                          column=path, value_set=[v for v in values if v is not None])


def rule_payload_range(table: MessageTable) -> Iterator[gxe.Expectation]:
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
            yield _expect(gxe.ExpectColumnValuesToBeBetween, ERROR, "payload range", _source(table, path, keywords),
                          column=path, **bounds)


def rule_payload_length(table: MessageTable) -> Iterator[gxe.Expectation]:
    """`minLength` / `maxLength`: string lengths between."""
    for path, _, _, check in _payload(table):
        if "minLength" in check or "maxLength" in check:
            yield _expect(gxe.ExpectColumnValueLengthsToBeBetween, ERROR, "payload length", _source(table, path, "minLength/maxLength"),
                          column=path, min_value=check.get("minLength"), max_value=check.get("maxLength"))


def rule_payload_pattern(table: MessageTable) -> Iterator[gxe.Expectation]:
    """`pattern`: values match the regex (JSON Schema patterns are unanchored searches)."""
    for path, _, _, check in _payload(table):
        if "pattern" in check:
            yield _expect(gxe.ExpectColumnValuesToMatchRegex, ERROR, "payload pattern", _source(table, path, "pattern"),
                          column=path, regex=check["pattern"])


def rule_payload_format(table: MessageTable) -> Iterator[gxe.Expectation]:
    """`format`: uuid, email, uri (and hostname, ipv4) by regex; date-time and date are typed
    columns, so they parsed when they are of that type. A description, not a requirement: WARN."""
    for path, field, _, check in _payload(table):
        fmt = check.get("format")
        if fmt in FORMATS:
            yield _expect(gxe.ExpectColumnValuesToMatchRegex, WARN, "payload format", _source(table, path, f"format {fmt}"),
                          column=path, regex=FORMATS[fmt])
        elif fmt in PAYLOAD_TYPE_FORMATS:
            yield _expect(gxe.ExpectColumnValuesToBeOfType, WARN, "payload format", _source(table, path, f"format {fmt}"),
                          column=path, type_=PAYLOAD_TYPE_FORMATS[fmt])


def rule_payload_items(table: MessageTable) -> Iterator[gxe.Expectation]:
    """`minItems` / `maxItems`: the array's size (a derived column) between."""
    for path, field, _, check in _payload(table):
        if isinstance(field.dataType, ArrayType) and ("minItems" in check or "maxItems" in check):
            yield _expect(gxe.ExpectColumnValuesToBeBetween, ERROR, "payload items", _source(table, path, "minItems/maxItems"),
                          column=size_column(path), min_value=check.get("minItems"), max_value=check.get("maxItems"))


def size_column(path: str) -> str:
    return f"size({path})"


RULES = (
    rule_required_attributes, rule_attribute_values, rule_uritemplates, rule_attribute_types,
    rule_payload_required, rule_payload_enum, rule_payload_range, rule_payload_length,
    rule_payload_pattern, rule_payload_format, rule_payload_items,
)


def suite_name(table: MessageTable) -> str:
    return table.message.table_name


def build_suite(table: MessageTable, strict: bool = False) -> gx.ExpectationSuite:
    """The suite of one definition's table (rules in RULES order, each in declaration order)."""
    expectations, derived = [], {}
    for rule in RULES:
        for expectation in (rule(table, strict) if rule is rule_uritemplates else rule(table)):
            column = getattr(expectation, "column", None)
            if column and column.startswith("size("):
                derived[column] = f"CASE WHEN {_sql(column[5:-1])} IS NULL THEN NULL ELSE size({_sql(column[5:-1])}) END"
            expectations.append(expectation)
    # built whole: add_expectation() would look for a GX context to save into
    return gx.ExpectationSuite(name=suite_name(table), expectations=expectations, meta={
        "catalake.xid": table.message.xid,
        "catalake.table": table.name,
        "catalake.fingerprint": table.message.fingerprint,
        DERIVED: derived,
    })


def suite_document(suite: gx.ExpectationSuite) -> dict:
    """GX's own serialization without the random ids GX assigns (suite and expectations)."""
    document = {k: v for k, v in suite.to_json_dict().items() if k != "id"}
    document["expectations"] = [{k: v for k, v in e.items() if k != "id"} for e in document.get("expectations", [])]
    return document


def suite_json(suite: gx.ExpectationSuite) -> str:
    """The suite file: id-less, keys sorted, so diffable and stable."""
    return json.dumps(suite_document(suite), indent=2, sort_keys=True, default=str) + "\n"


def load_suite(path: Path) -> gx.ExpectationSuite:
    return gx.ExpectationSuite(**json.loads(path.read_text()))


def write_suites(folder: Path, suites: Sequence[gx.ExpectationSuite]) -> dict[str, str]:
    """One `<suite>.json` per suite under folder; only changed files are rewritten, suites of
    definitions gone from the catalog are removed. Returns suite name -> written/unchanged/removed."""
    folder.mkdir(parents=True, exist_ok=True)
    outcome: dict[str, str] = {}
    for suite in suites:
        path = folder / f"{suite.name}.json"
        text = suite_json(suite)
        if path.exists() and path.read_text() == text:
            outcome[suite.name] = "unchanged"
            continue
        path.write_text(text)
        outcome[suite.name] = "written"
    for stale in folder.glob("*.json"):
        if stale.stem not in outcome:
            stale.unlink()
            outcome[stale.stem] = "removed"
    return outcome


def expectation_summary(expectation: Any) -> dict:
    """Type, kwargs and meta of one expectation, as plain data (for tests and metadata)."""
    config = expectation.configuration if hasattr(expectation, "configuration") else expectation
    return {"type": config.type, "kwargs": dict(config.kwargs), "meta": dict(config.meta or {})}
