"""One partition run: landed records -> per-message tables and the dead-letter table.

The day's files are read once by the executors, normalized (records.py) and matched against the
compiled catalog (matcher.py); the matched records are spilled to scratch Parquet while their
counts tell which tables the day feeds. Then one pass routes every record to exactly one table
(`route`: a struct column per table, typed by the table's schema); the routed rows are spilled
too and each table is written from them with one Delta commit replacing the day. Python runs
only where it must (payloads that several definitions match, schemas with keywords the native
checks do not cover, Avro binary payloads), through Arrow-batched pandas UDFs that see only
those rows' values.

Every record read ends in exactly one table, and re-running a partition gives identical tables
(every table the run touches has that partition replaced, including tables the partition no
longer feeds). `conservation` checks it afterwards from the tables themselves.
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from .catalog.model import Catalog
from .deadletter import DEADLETTER_TABLE, SCHEMA as DEADLETTER_SCHEMA
from .landing import partition_files, read_records
from .matcher import compile_catalog, match
from .message_table import CORE_ATTRIBUTES, PARTITION_COLUMN, MessageTable, sync_message_tables
from .payload import needs_python_validation, typed_payloads
from .records import normalize
from .schemas.avro import named_type
from .storage import DeltaStore

MAX_ERRORS = 3  # validation errors kept in the dead-letter detail
SETTLED = ("is_structured", "is_ce", "address", "rec_family", "match_status", "missing")  # decided by then
AVRO_BINARY = ("application/avro", "avro/binary", "application/vnd.apache.avro+binary")


@dataclass
class PartitionResult:
    partition: str
    records: int
    tables: dict[str, int] = field(default_factory=dict)  # message xid -> rows written
    deadletter: dict[str, int] = field(default_factory=dict)  # reason -> rows
    written: list[str] = field(default_factory=list)  # warehouse table names overwritten

    def as_json(self) -> dict:
        return {"partition": self.partition, "records": self.records, "tables": self.tables, "deadletter": self.deadletter}


# -- record-level reasons (before any definition is consulted)

def record_reason() -> Column:
    attrs = F.col("attrs")
    missing_core = F.filter(
        F.array(*[F.when(attrs[a].isNull(), F.lit(a)) for a in ("id", "source", "type", "specversion")]), lambda x: x.isNotNull()
    )
    return (
        F.when(F.col("record_kind") == "malformed_json", F.struct(F.lit("malformed_json").alias("reason"), F.lit("not valid JSON").alias("detail")))
        .when(F.col("record_kind") == "not_an_event", F.struct(F.lit("not_an_event").alias("reason"), F.lit("neither a CloudEvent nor a protocol record").alias("detail")))
        .when(F.col("is_ce") & (F.size(missing_core) > 0), F.struct(
            F.lit("missing_required_attribute").alias("reason"),
            F.concat(F.lit("missing CloudEvents attribute(s): "), F.array_join(missing_core, ", ")).alias("detail")))
        .when(F.col("is_ce") & (attrs["specversion"] != "1.0"), F.struct(
            F.lit("unsupported_specversion").alias("reason"),
            F.concat(F.lit("specversion "), attrs["specversion"], F.lit(" (1.0 is supported)")).alias("detail")))
        .when(F.col("match_status") == "missing_required_attribute", F.struct(
            F.lit("missing_required_attribute").alias("reason"),
            F.concat(F.lit("missing: "), F.array_join(F.transform("missing", lambda k: F.regexp_replace(k, "^(ce|opt):", "")), ", ")).alias("detail")))
        .when(F.col("match_status") == "no_match", F.struct(
            F.lit("no_match").alias("reason"),
            F.concat(F.lit("no definition matches type="), F.coalesce(attrs["type"], F.lit("-")),
                     F.lit(" protocol="), F.coalesce(F.col("protocol"), F.lit("-")),
                     F.lit(" address="), F.coalesce(F.col("address"), F.lit("-"))).alias("detail")))
        .when(F.col("match_status") == "ambiguous", F.struct(
            F.lit("ambiguous").alias("reason"), F.lit("several definitions match").alias("detail")))
    )


# -- Python validators, built on the executors from plain data

def _validator_specs(tables: Sequence[MessageTable]) -> dict[str, tuple]:
    specs = {}
    for t in tables:
        s = t.data_schema
        if s is not None and s.family in ("jsonschema", "avro"):
            specs[t.message.xid] = (s.family, s.content, s.document, s.type_name)
    return specs


def _make_validator(spec: tuple):
    family, content, document, type_name = spec
    if family == "jsonschema":
        import jsonschema
        from referencing import Registry

        from .schemas.json_schema import resource

        root = document if isinstance(document, dict) else content
        registry = Registry().with_resource("urn:catalake:data-schema", resource(root))
        cls = jsonschema.validators.validator_for(content if isinstance(content, dict) else {})
        validator = cls(content, registry=registry, format_checker=cls.FORMAT_CHECKER)

        def errors(value) -> list[str]:
            found = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
            return [f"data{''.join(f'.{p}' for p in e.absolute_path)}: {e.message}" for e in found[:MAX_ERRORS]]

        return errors
    import fastavro
    from fastavro.validation import ValidationError, validate

    parsed = fastavro.parse_schema(named_type(content, type_name))

    def avro_errors(value) -> list[str]:
        try:
            validate(value, parsed, raise_errors=True)
            return []
        except ValidationError as exc:
            return [f"data: {e}" for e in exc.errors[:MAX_ERRORS]] or ["data: does not match the Avro schema"]
        except Exception as exc:  # fastavro raises plain errors for some shapes
            return [f"data: {exc}"]

    return avro_errors


def _resolve_ambiguous(specs: dict[str, tuple]):
    """pandas UDF: (payload JSON, candidate xids) -> struct(winner, detail)."""
    out = StructType([StructField("winner", StringType()), StructField("detail", StringType())])

    @F.pandas_udf(out)
    def resolve(payloads: pd.Series, candidates: pd.Series) -> pd.DataFrame:
        validators: dict = {}
        winners, details = [], []
        for text, cands in zip(payloads, candidates):
            value = json.loads(text) if isinstance(text, str) else None
            valid, notes = [], []
            for xid in list(cands):
                if xid not in specs:
                    notes.append(f"{xid}: no schema to decide with")
                    continue
                check = validators.setdefault(xid, _make_validator(specs[xid]))
                problems = check(value)
                if problems:
                    notes.append(f"{xid}: {problems[0]}")
                else:
                    valid.append(xid)
            winners.append(valid[0] if len(valid) == 1 else None)
            details.append(None if len(valid) == 1 else
                           f"{len(valid)} of {len(cands)} candidates accept the payload" + ("; " + "; ".join(notes) if notes else ""))
        return pd.DataFrame({"winner": winners, "detail": details})

    return resolve


def _python_errors(spec: tuple):
    """pandas UDF: (is this table's row, payload JSON) -> validation errors (jsonschema / fastavro)."""
    @F.pandas_udf("array<string>")
    def validate(mine: pd.Series, payloads: pd.Series) -> pd.Series:
        check = _make_validator(spec)
        return pd.Series([
            (check(json.loads(t)) if isinstance(t, str) else ["data: the payload is missing"]) if m else None
            for m, t in zip(mine, payloads)
        ])

    return validate


def _avro_decoder(spec: tuple):
    """pandas UDF: base64 Avro binary (schemaless, per the definition's schema) -> JSON text."""
    _, content, _, type_name = spec

    @F.pandas_udf("string")
    def decode(blobs: pd.Series) -> pd.Series:
        import fastavro

        parsed = fastavro.parse_schema(named_type(content, type_name))

        def one(blob):
            if not isinstance(blob, str):
                return None
            try:
                record = fastavro.schemaless_reader(io.BytesIO(base64.b64decode(blob)), parsed, parsed)
            except Exception:
                return None
            return json.dumps(record, default=_avro_json)

        return pd.Series([one(b) for b in blobs])

    return decode


def _avro_json(value):
    # logical types back to the JSON encoding the table reader expects (payload.py)
    if isinstance(value, dt.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, dt.date):
        return (value - dt.date(1970, 1, 1)).days
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return str(value)


# -- table rows

def _attribute(name: str, dtype) -> Column:
    value = F.col("attrs")[name]
    if name == "datacontenttype":  # the effective one: JSON format implies application/json
        return F.coalesce(value, F.col("fields")["ce:datacontenttype"])
    if name == "time" or dtype.simpleString() == "timestamp":
        return F.try_to_timestamp(value)
    if dtype.simpleString() == "binary":
        return F.try_to_binary(value, F.lit("base64"))
    if dtype.simpleString() == "string":
        return value
    return value.try_cast(dtype)


def table_columns(table: MessageTable, schema: StructType, data: Column, ingested_at: dt.datetime, day: dt.date) -> list[Column]:
    """The table's columns, in its stored order, from a matched record."""
    message = table.message
    is_ce = (message.envelope or "").lower().startswith("cloudevents")
    declared = set(message.attributes) | set(CORE_ATTRIBUTES) if is_ce else set()
    placeholder_names = {f"placeholder_{n}": n for n in message.placeholders}
    pm_fields = {"kafka_", "mqtt_", "amqp_", "http_", "nats_", "rocketmq_"}
    columns = []
    for f in schema.fields:
        name = f.name
        if name == "data":
            col = data
        elif name == "other_attributes":
            col = F.map_filter("attrs", lambda k, v: ~k.isin(sorted(declared)))
        elif name == "protocol":
            col = F.col("protocol")
        elif name == "protocol_metadata":
            col = F.col("pm_map")
        elif any(name.startswith(p) for p in pm_fields) and name not in message.placeholders:
            col = F.col("pm")[name]
        elif name == "source_file":
            col = F.col("source_file")
        elif name == "source_line":
            col = F.col("source_line")
        elif name == "ingested_at":
            col = F.lit(ingested_at).cast("timestamp")
        elif name == PARTITION_COLUMN:
            col = F.lit(day).cast("date")
        elif name in placeholder_names or (name in message.placeholders and name not in declared):
            col = F.col("placeholders")[placeholder_names.get(name, name)]
        elif name in declared:
            col = _attribute(name, f.dataType)
        else:  # a column an older catalog version added: kept, null from now on
            col = F.lit(None)
        columns.append(col.cast(f.dataType).alias(name))
    return columns


def payload_source(table: MessageTable, mine: Column, specs: dict) -> tuple[Column, Column]:
    """(payload VARIANT, payload undecodable) of the rows `mine` of one table; Avro binary
    payloads are decoded with the definition's schema (Python, these rows only)."""
    spec = specs.get(table.message.xid)
    if not (spec and spec[0] == "avro"):
        return F.when(mine, F.col("data_v")), F.col("data_v").isNull() & F.col("data_b64").isNotNull()
    content_type = F.lower(F.coalesce(F.col("content_type"), F.lit("")))
    is_binary = F.lit(False)
    for kind in AVRO_BINARY:
        is_binary = is_binary | content_type.startswith(kind)
    avro_json = _avro_decoder(spec)(F.when(mine & is_binary, F.col("data_b64")))
    return F.when(mine, F.when(is_binary, F.try_parse_json(avro_json)).otherwise(F.col("data_v"))), is_binary & avro_json.isNull()


def _mine_sql(idx: int) -> str:
    """The records that go to target `idx` (unless their payload is rejected)."""
    return f"rec_reason IS NULL AND winner = {idx}"


def typed_data(df: DataFrame, targets: list[tuple[int, MessageTable, StructType]], specs: dict) -> DataFrame:
    """Adds `_typed<idx>` and `_typed<idx>_errors` from each target's payload `_p<idx>`."""
    native, untyped, python = [], [], {}
    for idx, table, schema in targets:
        data_field, spec = schema["data"], specs.get(table.message.xid)
        if data_field.metadata.get("catalake.json") or table.data_schema is None:
            untyped.append(idx)
        else:
            native.append((f"_p{idx}", data_field.dataType, data_field.metadata, f"_typed{idx}", _mine_sql(idx)))
        if spec and spec[0] == "jsonschema" and needs_python_validation(table.data_schema.document or table.data_schema.content):
            python[idx] = spec
    df = typed_payloads(df, native)
    df = df.select("*", *[x for idx in untyped for x in (
        F.to_json(f"_p{idx}").alias(f"_typed{idx}"), F.array().cast("array<string>").alias(f"_typed{idx}_errors"))])
    for idx, spec in python.items():  # jsonschema itself, for the keywords the native checks do not cover
        df = df.withColumn(f"_typed{idx}_errors", _python_errors(spec)(F.expr(_mine_sql(idx)), F.to_json(f"_p{idx}")))
    return df


def deadletter_row(reason: Column, detail: Column, ingested_at: dt.datetime, day: dt.date) -> Column:
    return F.struct(
        reason.alias("reason"), detail.alias("detail"), F.col("candidates"), F.col("record_kind"), F.col("protocol"),
        F.col("attrs")["type"].alias("event_type"), F.col("attrs")["id"].alias("event_id"),
        F.col("source_file"), F.col("source_line"), F.col("raw"),
        F.lit(ingested_at).cast("timestamp").alias("ingested_at"), F.lit(day).cast("date").alias(PARTITION_COLUMN),
    )


def _by_winner(values: dict[int, Column], default: Column) -> Column:
    """Each record's value from its own table's column: CASE winner WHEN idx THEN value ... END."""
    out = None
    for idx, value in values.items():
        out = (F.when if out is None else out.when)(F.col("winner") == idx, value)
    return default if out is None else out.otherwise(default)


def route(
    resolved: DataFrame, targets: list[tuple[int, MessageTable, StructType]], specs: dict,
    deadletter: bool, ingested_at: dt.datetime, day: dt.date,
) -> tuple[DataFrame, dict[str, str]]:
    """Every record as a row of exactly one table: one struct column per target table (null where
    the record is not that table's) and `deadletter`; returns the frame and column -> table."""
    matched = F.col("rec_reason").isNull()
    sources = {idx: payload_source(table, F.expr(_mine_sql(idx)), specs) for idx, table, _ in targets}
    df = resolved.select("*", *[payload.alias(f"_p{idx}") for idx, (payload, _) in sources.items()],
                         _by_winner({idx: bad for idx, (_, bad) in sources.items()}, F.lit(False)).alias("_undecodable"))
    df = typed_data(df, targets, specs)
    df = df.withColumn("_errors", _by_winner({idx: F.col(f"_typed{idx}_errors") for idx in sources}, F.lit(None).cast("array<string>")))
    rejected = matched & (F.col("_undecodable") | (F.coalesce(F.size("_errors"), F.lit(0)) > 0))
    df = df.withColumn("_rejected", rejected)
    columns, routes = [], {}
    for idx, table, schema in targets:
        row = F.struct(*table_columns(table, schema, F.col(f"_typed{idx}"), ingested_at, day))
        columns.append(F.when(F.expr(_mine_sql(idx)) & ~F.col("_rejected"), row).alias(f"t{idx}"))
        routes[f"t{idx}"] = table.name
    if deadletter:
        reason = F.coalesce(F.col("rec_reason.reason"), F.when(F.col("_undecodable"), F.lit("malformed_payload")).otherwise(F.lit("schema_violation")))
        detail = F.when(~matched, F.col("rec_reason.detail")).when(F.col("_undecodable"), F.lit("the payload cannot be decoded")).otherwise(
            F.array_join(F.slice("_errors", 1, MAX_ERRORS), "; "))
        columns.append(F.when(~matched | F.col("_rejected"), deadletter_row(reason, detail, ingested_at, day)).alias("deadletter"))
        routes["deadletter"] = DEADLETTER_TABLE
    return df.select(*columns), routes


def _has_partition(store: DeltaStore, name: str, day: dt.date) -> bool:
    """Whether the table may hold rows of `day` (a cheap directory check on local warehouses;
    a false positive only costs an overwrite with nothing)."""
    path = store.path(name)
    if "://" in path:
        return store.exists(name)
    return os.path.isdir(os.path.join(path, f"{PARTITION_COLUMN}={day.isoformat()}"))


# Session settings of a partition run, restored afterwards (the Dagster run shares the session)
RUN_CONF = {
    "spark.sql.mapKeyDedupPolicy": "LAST_WIN",  # repeated header names: the last one wins
    # Dynamic partition pruning finds nothing to prune in these plans (text files joined to small
    # broadcast catalogs) yet took 13 s per query to rule that out over the normalize/match
    # expression tree (RuleExecutor metrics, benchmarks/RESULTS.md)
    "spark.sql.optimizer.dynamicPartitionPruning.enabled": "false",
}


@contextmanager
def _run_conf(spark: SparkSession):
    before = {key: spark.conf.get(key, None) for key in RUN_CONF}
    for key, value in RUN_CONF.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def classify_partition(
    spark: SparkSession,
    store: DeltaStore,
    catalog: Catalog,
    tables: Sequence[MessageTable],
    landing: Path,
    day: dt.date,
    *,
    only: set[str] | None = None,
    strict: bool = False,
    ingested_at: dt.datetime | None = None,
    progress=lambda message: None,
) -> PartitionResult:
    """Classify and write one day. `only`: table names to write (a subset run); None = all,
    the dead-letter table included."""
    with _run_conf(spark), store.scratch() as scratch:
        return _classify_partition(spark, store, scratch, catalog, tables, landing, day, only=only, strict=strict,
                                   ingested_at=ingested_at, progress=progress)


def _classify_partition(spark, store, scratch, catalog, tables, landing, day, *, only, strict, ingested_at, progress) -> PartitionResult:
    ingested_at = ingested_at or dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    by_xid = {t.message.xid: t for t in tables}
    messages = [t.message for t in tables]
    compiled = compile_catalog(messages, strict=strict)
    files = partition_files(landing, day)
    progress(f"{day}: {len(files)} landed file(s)")

    matched = match(normalize(read_records(spark, files)), compiled)
    # kept for the write: only what the table rows and dead-letter rows are made of
    matched = scratch.spill(matched.withColumn("rec_reason", record_reason()).drop(*SETTLED))
    summary = matched.groupBy(F.col("rec_reason.reason").alias("reason"), "winner").count().collect()
    total = sum(r["count"] for r in summary)
    progress(f"{day}: {total} record(s) read and matched")

    # several candidates, none derived from the others: their data schemas decide (Python, these rows only)
    specs = _validator_specs(tables)
    resolved = matched
    if any(r["reason"] == "ambiguous" for r in summary):
        ambiguous = matched.where(F.col("rec_reason.reason") == "ambiguous")
        decided = ambiguous.withColumn("decision", _resolve_ambiguous(specs)(F.to_json("data_v"), F.col("candidates")))
        xids = F.create_map(*[x for i, m in enumerate(messages) for x in (F.lit(m.xid), F.lit(i))])
        decided = decided.withColumn("winner", F.element_at(xids, F.col("decision.winner"))).withColumn(
            "rec_reason",
            F.when(F.col("winner").isNull(), F.struct(F.lit("ambiguous").alias("reason"), F.col("decision.detail").alias("detail"))),
        ).drop("decision")
        resolved = matched.where(~F.coalesce(F.col("rec_reason.reason") == "ambiguous", F.lit(False))).unionByName(decided)
        resolved = scratch.spill(resolved)
        summary = resolved.groupBy(F.col("rec_reason.reason").alias("reason"), "winner").count().collect()

    result = PartitionResult(partition=day.isoformat(), records=total)
    winners = {r["winner"] for r in summary if r["reason"] is None and r["winner"] is not None}
    # every table the partition feeds, and every table that held rows of it before (emptied)
    writing = [
        (idx, by_xid[m.xid]) for idx, m in enumerate(messages)
        if (only is None or by_xid[m.xid].name in only) and (idx in winners or _has_partition(store, by_xid[m.xid].name, day))
    ]
    sync_message_tables(store, [t for _, t in writing])  # created / evolved as the catalog says
    targets = [(idx, t, store.spark_schema(t.name)) for idx, t in writing]
    with_deadletter = only is None or DEADLETTER_TABLE in only
    if with_deadletter:
        store.create(DEADLETTER_TABLE, DEADLETTER_SCHEMA, partition_by=[PARTITION_COLUMN],
                     description="Landed records no message table takes, with the reason.")
    routed, routes = route(resolved, targets, specs, with_deadletter, ingested_at, day)
    progress(f"{day}: writing {len(routes)} table(s)")
    store.overwrite_partitions(routed, routes, PARTITION_COLUMN, day)
    for idx, table, _ in targets:
        written = store.partition_rows(table.name, PARTITION_COLUMN, day)
        result.written.append(table.name)
        result.tables[table.message.xid] = written
        progress(f"{day}: wrote {written} row(s) to {table.name}")
    if with_deadletter:
        result.written.append(DEADLETTER_TABLE)
        result.deadletter = {r["reason"]: r["count"] for r in
                             store.read(DEADLETTER_TABLE).where(F.col(PARTITION_COLUMN) == F.lit(day)).groupBy("reason").count().collect()}
    return result


def conservation(store: DeltaStore, tables: Sequence[MessageTable], day: dt.date, records: int) -> tuple[bool, dict]:
    """Records read == rows of `day` in the per-message tables + dead-letter rows."""
    counts = {}
    for name in [t.name for t in tables] + [DEADLETTER_TABLE]:
        if _has_partition(store, name, day) and store.exists(name):
            counts[name] = store.read(name).where(F.col(PARTITION_COLUMN) == F.lit(day)).count()
    stored = sum(counts.values())
    return stored == records, {"records_read": records, "rows_stored": stored, "per_table": counts}
