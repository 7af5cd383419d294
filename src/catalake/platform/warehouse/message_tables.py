"""The per-message Delta tables: one per message definition, its columns derived from the catalog.

Columns, in order:
* the CloudEvents envelope (CloudEvents definitions only): the core attributes, then every
  extension attribute the definition declares, typed per its declaration (`time` timestamp);
  `other_attributes` holds undeclared extension attributes as text;
* one string column per uritemplate placeholder of the definition (`region`, `hubid`, ...);
* `protocol` (how the record arrived) and the protocol metadata of the definition's protocol
  (Kafka topic/partition/offset/key/timestamp/headers, MQTT topic/qos/retain/..., AMQP, HTTP,
  NATS); a definition without a protocol applies to every binding and keeps `protocol_metadata`;
* `data`: the payload, typed from the derived data schema;
* lineage: `source_file`, `source_line`, `source_fields` (the layout's path fields), `ingested_at`;
  the partition column `event_date`.

CloudEvents attribute names are lower-case letters and digits only, so the columns with an
underscore never collide with an attribute; a placeholder named like another column is stored as
`placeholder_<name>`.

Nullability: only what every stored record has is NOT NULL (the four required CloudEvents
attributes, lineage, event_date). Everything else is nullable in Delta, and what the catalog
requires is marked `catalake.required` in the column metadata; Delta cannot relax a NOT NULL
column later, and the matcher and the expectation suites enforce `required` anyway.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Sequence

from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, DataType, DateType, IntegerType, LongType, MapType,
                               StringType, StructField, StructType, TimestampType)

from ..catalog.files import files_state
from ..catalog.model import Catalog, MessageDefinition
from ..catalog.normalize import protocol_family
from ..catalog.rules import SCHEMA_SLOTS
from ..errors import CatalogError
from ..problems import escape
from ..patterns import BUDGET_SECONDS, PatternError, backtracking_construct
from ..problems import Problem
from ..records import cloudevents
from ..records.protocols import BY_FAMILY, TEXT_MAP
from ..schemas import keys
from ..schemas.derive import spark_field
from ..schemas.json_schema import EndlessReference, InvalidConstraint, NeverFollowed, SchemaError
from ..schemas.references import DataSchema, resolve_data_schema
from ..schemas.unions import JSON_STRING
from .deadletters import SOURCE_FIELDS
from .evolution import EvolutionError, plan_evolution
from .files import PARTITION_COLUMN
from .store import DeltaStore

MESSAGES_PREFIX = "messages/"


# CloudEvents attribute type system (spec "Type System") -> Spark
ATTRIBUTE_TYPES: dict[str, DataType] = {
    "boolean": BooleanType(),
    "integer": IntegerType(),  # CloudEvents Integer is 32-bit signed
    "string": StringType(),
    "binary": BinaryType(),
    "uri": StringType(),
    "urireference": StringType(),
    "uritemplate": StringType(),
    "timestamp": TimestampType(),
}

LINEAGE_COLUMNS = [
    StructField("source_file", StringType(), False, {"comment": "Landed file the record was read from, as a path below the landing root (CATALAKE_LANDING)."}),
    StructField("source_line", LongType(), False, {"comment": "Line (JSON lines), element (batch) or record (Avro, Parquet) number in the file, from 1."}),
    StructField("source_fields", TEXT_MAP, True, {"comment": SOURCE_FIELDS}),
    StructField("ingested_at", TimestampType(), False, {"comment": "When the partition run that wrote the row started."}),
    StructField(PARTITION_COLUMN, DateType(), False, {"comment": "Landing partition (day) the record came from."}),
]


@dataclass(frozen=True)
class MessageTable:
    message: MessageDefinition
    schema: StructType
    data_schema: DataSchema | None

    @property
    def name(self) -> str:
        """Name in the warehouse (the folder under its root)."""
        return MESSAGES_PREFIX + self.message.table_name

    @property
    def description(self) -> str:
        text = self.message.get("description") or self.message.get("name") or self.message.message_id
        return f"{text} ({self.message.xid})"

    @cached_property
    def fingerprint(self) -> str:
        """table_fingerprint's value, computed once (the schema's JSON is the cost)."""
        return hashlib.sha256(f"{self.message.fingerprint}|{self.schema.json()}".encode()).hexdigest()[:16]


def _meta(description: str | None, required: bool = False, extra: dict | None = None) -> dict:
    meta = dict(extra or {})
    if description:
        meta["comment"] = description
    if required:
        meta[keys.REQUIRED] = True
    return meta


def relax(dtype: DataType) -> DataType:
    """dtype with every nested field nullable and `catalake.required` marking what was not."""
    if isinstance(dtype, StructType):
        return StructType([
            StructField(f.name, relax(f.dataType), True, {**f.metadata, keys.REQUIRED: True} if not f.nullable else f.metadata)
            for f in dtype.fields
        ])
    if isinstance(dtype, ArrayType):
        return ArrayType(relax(dtype.elementType), True)
    if isinstance(dtype, MapType):
        return MapType(dtype.keyType, relax(dtype.valueType), True)
    return dtype


def envelope_columns(message: MessageDefinition) -> list[StructField]:
    if not cloudevents.is_envelope(message.envelope):
        return []
    declared = message.attributes
    columns = []
    names = list(cloudevents.BY_NAME) + [n for n in declared if n not in cloudevents.BY_NAME]
    for name in names:
        decl = declared.get(name) if isinstance(declared.get(name), dict) else {}
        known = cloudevents.BY_NAME.get(name)
        description, always = (known.description, known.required) if known else (None, False)
        dtype = ATTRIBUTE_TYPES.get(str(decl.get("type", "string")).lower(), StringType())
        if name == "time":
            dtype = TimestampType()
        comment = decl.get("description") or description or f"Extension attribute '{name}'."
        if always:
            columns.append(StructField(name, dtype, False, _meta(comment)))
        else:
            columns.append(StructField(name, dtype, True, _meta(comment, bool(decl.get("required")))))
    columns.append(StructField("other_attributes", TEXT_MAP, True, _meta("Extension attributes the definition does not declare, as text.")))
    return columns


def placeholder_columns(message: MessageDefinition, taken: set[str]) -> list[StructField]:
    columns = []
    for name in message.placeholders:
        column = name if name not in taken else f"placeholder_{name}"
        columns.append(StructField(column, StringType(), True, _meta(f"Value of the uritemplate placeholder {{{name}}}.")))
    return columns


def protocol_columns(message: MessageDefinition) -> list[StructField]:
    columns = [StructField("protocol", StringType(), True, _meta("Protocol binding the record arrived by (null: CloudEvents JSON without one)."))]
    binding = BY_FAMILY.get(protocol_family(message.protocol) or "")
    if binding is not None:
        columns += [StructField(c.name, c.dtype, True, _meta(c.comment)) for c in binding.columns]
    else:
        columns.append(StructField("protocol_metadata", TEXT_MAP, True, _meta("Protocol metadata of the record (topic, partition, ...), as text.")))
    return columns


def data_column(message: MessageDefinition, data_schema: DataSchema | None) -> StructField:
    if data_schema is None:
        return StructField("data", StringType(), True, _meta("Payload as JSON text (the definition declares no data schema).", extra=JSON_STRING))
    if data_schema.family == "xsd":
        return StructField("data", StringType(), True, _meta(f"Payload as XML text ({data_schema.reference or 'inline XSD'}).", extra={keys.XML: True}))
    dtype, nullable, meta = spark_field(data_schema)
    where = data_schema.reference or "inline schema"
    return StructField("data", relax(dtype), True, _meta(f"Payload, typed from {data_schema.format or data_schema.family} {where}.",
                                                         not nullable, meta))


def message_table(message: MessageDefinition, catalog: Catalog, roots: Sequence[Path]) -> MessageTable:
    """The table of one definition. A data schema that cannot be resolved or mapped (SchemaError,
    naming the message and the reference) leaves `data` as JSON text, with the error recorded in
    the column's metadata: the definition still filters records, they are just not typed."""
    try:
        data_schema = resolve_data_schema(message, catalog.schemagroups, roots)
        data = data_column(message, data_schema)
    except (NeverFollowed, InvalidConstraint):
        raise
    except SchemaError as exc:
        data_schema = None
        data = StructField("data", StringType(), True, _meta(
            "Payload as JSON text: the data schema is unavailable.", extra={**JSON_STRING, keys.SCHEMA_ERROR: str(exc)}))
    envelope = envelope_columns(message)
    protocol = protocol_columns(message)
    taken = {f.name for f in envelope + protocol + LINEAGE_COLUMNS} | {"data"}
    fields = envelope + placeholder_columns(message, taken) + protocol + [data] + LINEAGE_COLUMNS
    return MessageTable(message, StructType(fields), data_schema)


def schema_problems(tables: Sequence[MessageTable]) -> list[Problem]:
    """The data schemas that could not be derived (the payload kept as JSON text), and the patterns
    that backtrack, as warnings naming the file and the message."""
    found = [Problem(t.message.source_file, t.message.source_pointer, "schema-derivation",
                     t.schema["data"].metadata[keys.SCHEMA_ERROR], "warning")
             for t in tables if keys.SCHEMA_ERROR in t.schema["data"].metadata]
    for t in tables:
        if t.data_schema is not None:
            found += [Problem(t.message.source_file, t.message.source_pointer, "pattern-backtracks",
                              f"data schema {t.data_schema.reference or '(inline)'}, at {where}: pattern {pattern!r} uses {construct}, which has no "
                              f"linear-time form: each value may take {BUDGET_SECONDS} s, and a value over that is a "
                              f"pattern_timeout dead letter", "warning")
                      for where, pattern, construct in backtracking_patterns(t.data_schema.content)]
    return found


def backtracking_patterns(schema, where: str = "") -> list[tuple[str, str, str]]:
    """(JSON pointer, pattern, construct) of every `pattern` and `patternProperties` pattern in a
    schema document that runs on the backtracking engine (patterns.py)."""
    out = []
    if isinstance(schema, dict):
        patterns = [("pattern", schema["pattern"])] if isinstance(schema.get("pattern"), str) else []
        if isinstance(schema.get("patternProperties"), dict):
            patterns += [(f"patternProperties/{escape(p)}", p) for p in schema["patternProperties"]]
        for at, pattern in patterns:
            try:
                construct = backtracking_construct(pattern)
            except PatternError:
                continue  # refused where the schema is read (json_schema.py constraints)
            if construct is not None:
                out.append((f"{where}/{at}", pattern, construct))
        for key, value in schema.items():
            if isinstance(value, (dict, list)):
                out += backtracking_patterns(value, f"{where}/{escape(key)}")
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            out += backtracking_patterns(value, f"{where}/{i}")
    return out


def schema_warnings(tables: Sequence[MessageTable]) -> list[str]:
    """The data schemas that could not be derived, each naming the message and the reference."""
    return [p.message for p in schema_problems(tables)]


_DERIVED: dict[tuple, tuple] = {}  # the tables of the last catalog a process derived, by the roots' files' state


def message_tables(catalog: Catalog, roots: Sequence[Path]) -> tuple[list[MessageTable], list[str]]:
    """Every definition's table, and the warnings of the definitions whose schema does not derive.
    A reference to the network or outside the roots, or a constraint its keyword does not allow,
    is a CatalogError naming every such one. Derived once a process for one catalog (load_catalog
    reads it once) while the schema roots' files stay as they were."""
    key = (id(catalog), tuple(map(str, roots)), files_state(roots))
    if key in _DERIVED and _DERIVED[key][0] is catalog:
        tables, warnings = _DERIVED[key][1]
        return list(tables), list(warnings)
    derived = _derive_tables(catalog, roots)
    _DERIVED.clear()
    _DERIVED[key] = (catalog, derived)
    return list(derived[0]), list(derived[1])


def _derive_tables(catalog: Catalog, roots: Sequence[Path]) -> tuple[list[MessageTable], list[str]]:
    tables, forbidden = [], []
    for message in catalog:
        try:
            tables.append(message_table(message, catalog, roots))
        except (NeverFollowed, InvalidConstraint) as exc:
            slot = next((k for k in SCHEMA_SLOTS if k in message.definition), "dataschema")
            rule = ("schema-reference-forbidden" if isinstance(exc, NeverFollowed) else
                    "schema-reference-endless" if isinstance(exc, EndlessReference) else "schema-constraint-invalid")
            forbidden.append(Problem(message.source_file, f"{message.source_pointer}/{slot}", rule, str(exc)))
    if forbidden:
        raise CatalogError(forbidden)
    return tables, schema_warnings(tables)


def table_fingerprint(table: MessageTable) -> str:
    """Changes exactly when the resolved definition or the schema derived for its table does
    (the message asset's code version: Dagster shows what a catalog change affects)."""
    return table.fingerprint


def catalog_fingerprint(tables: Sequence[MessageTable]) -> str:
    """Changes exactly when a definition or the schema derived for its table does."""
    digest = hashlib.sha256()
    for table in sorted(tables, key=lambda t: t.message.xid):
        digest.update(f"{table.message.xid}|{table_fingerprint(table)}\n".encode())
    return digest.hexdigest()


def definition_changes(before: dict[str, str], after: dict[str, str]) -> dict[str, list[str]]:
    """added / changed / removed definitions (by xid) between two {xid: table_fingerprint}."""
    return {"added": sorted(set(after) - set(before)), "removed": sorted(set(before) - set(after)),
            "changed": sorted(x for x in set(after) & set(before) if after[x] != before[x])}


def sync_message_tables(store: DeltaStore, tables: Sequence[MessageTable]) -> dict[str, list[str] | str]:
    """Create missing tables and add new nullable columns to existing ones.

    Every change is checked first: one refused evolution (EvolutionError, naming table, column,
    old and new type) leaves every table untouched. Returns, per table, "created", "unchanged"
    or the list of added column paths.
    """
    plans: dict[str, list[str] | None] = {}
    refusals = []
    for table in tables:
        if not store.exists(table.name):
            plans[table.name] = None
            continue
        if store.has_schema(table.name, table.schema):
            plans[table.name] = []
            continue
        try:
            plans[table.name] = plan_evolution(table.name, store.spark_schema(table.name), table.schema)
        except EvolutionError as exc:
            refusals += exc.refusals
    if refusals:
        raise EvolutionError(refusals)
    def apply(table: MessageTable) -> list[str] | str:
        added = plans[table.name]
        if added is None:
            store.create(table.name, table.schema, partition_by=[PARTITION_COLUMN], description=table.description)
            return "created"
        if added:
            store.add_columns(table.name, table.schema)
            return added
        return "unchanged"

    # a table's creation is a commit of its own: on object storage a few requests each, which
    # threads overlap (on a local disk it is bound by the GIL: 4.2 s for 1,000 either way)
    changing = [t for t in tables if plans[t.name] != []]
    with ThreadPoolExecutor(max(1, min(store.commit_threads, len(changing)))) as pool:
        done = dict(zip([t.name for t in changing], pool.map(apply, changing)))
    return {t.name: done.get(t.name, "unchanged") for t in tables}


def create_unfed(store: DeltaStore, tables: Sequence[MessageTable]) -> list[str]:
    """The tables of `tables` the warehouse has no folder of, created empty with their schema (a
    full run's, before its commits): every table of the catalog then exists, fed or not, so a
    reader of all of them (the dbt models) finds each, on a deployment whose catalog job never
    ran too. One listing of the message tables' folder; a table is created once."""
    import pyarrow.fs as pafs

    folder = store.location.child(MESSAGES_PREFIX.rstrip("/"))
    listed = folder.filesystem.get_file_info(pafs.FileSelector(folder.path, allow_not_found=True))
    present = {MESSAGES_PREFIX + info.base_name for info in listed if info.type == pafs.FileType.Directory}
    missing = [t for t in tables if t.name not in present]
    if missing:
        sync_message_tables(store, missing)
    return [t.name for t in missing]

