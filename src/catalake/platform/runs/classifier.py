"""The per-record work of a partition run, as it runs on a Spark executor (plain Python).

A `Classifier` is compiled once per worker process from the run's `Plan` (the catalog's tables
and the run's day). `classify` takes one landed record: parse (orjson), normalize (record.py),
match (matcher.py), type the payload with its table's schema (payload.py), evaluate the table's
expectations (evaluation.py), and add the row to its table, or to the dead-letter table with the
reason. A task's rows are buffered per table and written as Parquet files into the table's
partition folder (taskio.py); the driver commits them. What leaves the executor is small: per
table its files, row count and quality tally.

Python runs per record here on purpose: the same work as Spark SQL expressions cost 5-10x a
plain Python loop on this kind of machine (benchmarks/RESULTS.md); here Spark schedules the
tasks, one per piece of the day's files, and the executors do the rest.
"""

from __future__ import annotations

import datetime as dt
import gc
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence

import orjson
import pyarrow as pa

from ..catalog.matcher import CompiledCatalog, Match, MatchStatus, placeholder_pairs
from ..landing import formats
from ..landing.listing import display_path
from ..landing.planning import Piece
from ..landing.reading import MAX_RECORD_BYTES, Corrupt, TooLarge, Unsupported, read_piece
from ..patterns import PatternTimeout
from ..quality.evaluation import SuiteCheck, failure_detail
from ..quality.expectations import suite_expectations
from ..records import cloudevents, strictjson
from ..records.attributes import PARSERS, column_value
from ..records.protocols import BINDINGS
from ..records.record import MISSING, Record, batch_events, normalize, record_fault
from ..schemas import keys
from ..schemas.coverage import uncompiled
from ..schemas.languages import BY_FAMILY as LANGUAGES
from ..schemas.payload import compile_payload
from ..schemas.validators import MAX_ERRORS, ValidatorSpec, jsonschema_rule, jsonschema_validator, schema_errors
from ..warehouse.arrowschemas import arrow_schema
from ..warehouse.deadletters import DEADLETTER_TABLE, NOT_JSON, SCHEMA as DEADLETTER_SCHEMA, DeadLetterRow
from ..warehouse.files import PARTITION_COLUMN
from ..warehouse.message_tables import MessageTable
from .bulk import Bulk
from .plan import Plan
from .taskio import TaskOutput, TaskResult, remove_dead_spills

# dead-letter reasons a catalog change can undo (replay); the others are the record's own faults
# (a plain value is `not_an_event` until the catalog has a definition without envelope and protocol)
REPLAYED = frozenset({"not_an_event", "no_match", "ambiguous", "missing_required_attribute", "schema_violation",
                      "malformed_payload", "pattern_timeout"})
AVRO_BINARY = ("application/avro", "avro/binary", "application/vnd.apache.avro+binary")


def validator_spec(table: MessageTable) -> ValidatorSpec | None:
    """What the table's data schema validator and decoder are built from, when its language has them."""
    s = table.data_schema
    language = LANGUAGES.get(s.family) if s is not None else None
    if language is not None and language.validator is not None:
        return ValidatorSpec(s.family, s.content, s.document, s.type_name)
    return None


# -- one table's rows

def _attribute(name: str, kind: str) -> Callable[[Record], Any]:
    if name == "datacontenttype":  # the effective one: JSON format implies application/json
        return lambda rec: rec.attrs.get(name) if rec.attrs.get(name) is not None else rec.fields.get("ce:datacontenttype")
    if name == "time" or kind == "timestamp":
        key = f"ce:{name}"
        return lambda rec: rec.timestamp(key)
    if kind in PARSERS:  # the parse the matcher's type rule applied (attributes.py)
        return lambda rec: column_value(kind, rec.attrs.get(name))
    return lambda rec: rec.attrs.get(name)


def _getter(source: tuple, declared: set, ingested) -> Callable[[Record, Match], Any] | None:
    """One column's value from a record and its match (None: filled in per record)."""
    kind = source[0]
    if kind == "other_attributes":
        return lambda rec, m: {k: v for k, v in rec.attrs.items() if k not in declared}
    if kind == "protocol":
        return lambda rec, m: rec.protocol
    if kind == "protocol_metadata":
        return lambda rec, m: rec.metadata_map()
    if kind == "binding":
        column = source[1]
        return lambda rec, m: rec.metadata(column) if rec.binding is not None and column in rec.binding.columns else None
    if kind == "ingested_at":
        return lambda rec, m: ingested
    if kind == "placeholder":
        return lambda rec, m, p=source[1]: m.placeholders.get(p)
    if kind == "attribute":
        get = _attribute(source[1], source[2])
        return lambda rec, m: get(rec)
    if kind == "dropped":
        return lambda rec, m: None
    return None  # data and lineage


def _column_sources(table: MessageTable, declared: set) -> list[tuple[str, tuple]]:
    """Each stored column of the table (all but the partition column, in order) with where its
    value comes from: `(kind, ...)`, as _getter reads it."""
    message = table.message
    named = message.placeholders  # parsed from the definition's templates on each access
    placeholders = {f"placeholder_{n}": n for n in named}
    binding_columns = {c.name: c for b in BINDINGS.values() for c in b.columns}
    sources = []
    for f in table.schema.fields:
        name = f.name
        if name == PARTITION_COLUMN:
            continue  # a partition value, not stored in the files
        if name in ("data", "other_attributes", "protocol", "protocol_metadata"):
            source: tuple = (name,)
        elif name in binding_columns and name not in named:
            source = ("binding", binding_columns[name])
        elif name in ("source_file", "source_line", "source_fields", "ingested_at"):
            source = (name,)
        elif name in placeholders or (name in named and name not in declared):
            source = ("placeholder", placeholders.get(name, name))
        elif name in declared:
            decl = message.attributes.get(name) if isinstance(message.attributes.get(name), dict) else {}
            source = ("attribute", name, str(decl.get("type", "string")).lower())
        else:  # a column an older catalog version added: kept, null from now on
            source = ("dropped",)
        sources.append((name, source))
    return sources


class TableSpec:
    """How a matched record becomes a row of one table."""

    def __init__(self, table: MessageTable, plan: Plan):
        self.table = table
        self.name = table.name
        message = table.message
        self.expectations = suite_expectations(table, plan.strict)
        self.suite = SuiteCheck(self.expectations)
        covered = frozenset(e.id for e in self.expectations)
        data = table.schema["data"]
        self.payload = compile_payload(data.dataType, data.metadata, covered)
        spec = validator_spec(table)
        decoder = LANGUAGES[spec.family].decoder if spec else None
        self.avro = decoder(spec) if decoder else None
        document = (table.data_schema.document or table.data_schema.content) if table.data_schema else None
        # the keywords jsonschema decides: those not compiled exactly, and every $ref when one
        # recurses (its values are kept as JSON text, unchecked)
        self.uncompiled = (uncompiled(document) | ({"$ref"} if keys.RECURSION in data.json() else set())
                           if spec and spec.family == "jsonschema" else set())
        self.jsonschema = jsonschema_validator(spec.content, spec.document) if self.uncompiled else None
        is_ce = cloudevents.is_envelope(message.envelope)
        declared = (set(message.attributes) | set(cloudevents.BY_NAME)) if is_ce else set()
        ingested = plan.ingested_at
        sources = _column_sources(table, declared)  # per column, where its value comes from (both paths read this)
        self.sources = sources
        self.declared = declared
        names = [name for name, _ in sources]
        getters = [_getter(source, declared, ingested) for _, source in sources]
        self.names = names
        self.getters = getters
        self.data_index = names.index("data")
        self.file_index = names.index("source_file")
        self.line_index = names.index("source_line")
        self.fields_index = names.index("source_fields") if "source_fields" in names else None
        self.schema = arrow_schema(table.schema, exclude=(PARTITION_COLUMN,))

    def source(self, rec: Record) -> tuple[Any, bool]:
        """(payload value or None, undecodable): Avro binary decoded with the definition's schema."""
        if self.avro is not None and rec.data_b64 is not None and (rec.content_type or "").lower().startswith(AVRO_BINARY):
            value = self.avro(rec.data_b64)
            return (None, True) if value is MISSING else (value, False)
        if rec.data is MISSING:
            return None, rec.data_b64 is not None
        if rec.payload_error is not None:
            return None, True
        return rec.data, False

    def jsonschema_errors(self, value, native: list) -> list[tuple[str, str]]:
        """jsonschema's findings that the native typing and checks do not report: those reached
        through a keyword not compiled exactly (`coverage.uncompiled`), but for the ones `native`
        already names."""
        errors = schema_errors(self.jsonschema, value)
        if isinstance(errors, tuple):  # the schema cannot finish: every record it is asked about says why
            return [errors]
        seen = {rule for rule, _ in native}
        found = []
        for e in errors:
            # jsonschema leaves `$ref` out of its paths: a $ref not compiled makes every error count
            if "$ref" not in self.uncompiled and self.uncompiled.isdisjoint(map(str, e.absolute_schema_path)):
                continue  # compiled exactly: the native checks found it
            rule, message = jsonschema_rule(e)
            if rule not in seen:
                seen.add(rule)
                found.append((rule, message))
        return found

    def row(self, rec: Record, m: Match, data, source_file: str, source_line: int) -> list:
        values = [None if g is None else g(rec, m) for g in self.getters]
        values[self.data_index] = data
        values[self.file_index] = source_file
        values[self.line_index] = source_line
        return values


@dataclass
class Checked:
    """A matched record typed for its table and checked (Classifier.typed)."""

    spec: TableSpec
    values: list  # the row, in the table's column order (without the partition column)
    row: dict  # the same, by column name
    type_errors: list
    failed: list  # (expectation, value) of the ERROR expectations it fails
    undecodable: bool

    @property
    def kept(self) -> bool:
        return not (self.undecodable or self.type_errors or self.failed)


@contextmanager
def _few_collections():
    """Python's cyclic collector runs a thousand times less often while a task runs: the batch
    path holds thousands of parsed records (acyclic JSON values), which every collection would
    traverse again (a fifth of a task's time at the default threshold)."""
    threshold = gc.get_threshold()
    gc.set_threshold(max(threshold[0], 100_000), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)


@dataclass
class Outcome:
    """What a record is (Classifier.decide): a row of its table (`reason` None) or a dead letter."""

    reason: str | None
    detail: str | None
    rec: Record | None = None
    candidates: list[str] | None = None
    broken: list[str] | None = None
    checked: Checked | None = None  # a matched record's typed row, kept or not


class Classifier:
    """The catalog compiled for one run: landed records in, table files out."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.matcher = CompiledCatalog([t.message for t in plan.tables], plan.strict)
        self.specs: dict[int, TableSpec] = {}
        self.validators: dict[int, Callable] = {}
        self.deadletter_schema = arrow_schema(DEADLETTER_SCHEMA, exclude=(PARTITION_COLUMN,))
        self.last_table: str | None = None  # the table the last row went to
        self.writes_deadletter = plan.write is None or DEADLETTER_TABLE in plan.write
        self.seq = 0  # the read order of the record being classified (the suites' examples keep the first)
        self.source(None, None)

    def source(self, source_file: str | None, fields) -> None:
        """The file the next records come from, with its path fields: their lineage, and for a
        file of a Kafka topic's values (Kafka Connect), the topic, partition and first offset."""
        self.fields = dict(fields) if fields else None
        self.topic = self.fields.get("topic") if self.fields else None
        name = source_file.rsplit("/", 1)[-1] if source_file else ""
        self.origin = formats.kafka_origin(self.fields, name) if self.topic is not None else None

    def source_file(self, piece: Piece) -> str:
        """A piece's file as rows name it (`source_file`): below the landing root, shown escaped."""
        return display_path(self.plan.landing.relative(piece.path) if self.plan.landing else piece.path)

    def landed(self, obj, line: int):
        """A landed JSON value as the record it is: a value of a Kafka topic's file that is no
        record of its own is the Kafka record it was (formats.kafka_value_record)."""
        if self.topic is None or isinstance(obj, list) or formats.is_kafka_record(obj):
            return obj
        return formats.kafka_value_record(obj, self.topic, self.origin, line)

    def spec(self, idx: int) -> TableSpec:
        spec = self.specs.get(idx)
        if spec is None:
            spec = self.specs[idx] = TableSpec(self.plan.tables[idx], self.plan)
        return spec

    def writes(self, name: str) -> bool:
        return self.plan.write is None or name in self.plan.write

    # -- one task
    def run(self, task: str, pieces: Sequence[Piece], day: dt.date | None = None) -> TaskResult:
        """Classify the records of one task's pieces of `day` (the plan's by default) and write
        their tables' files into that day's partitions (`task` names the files: task number and
        attempt). The ordinary records are decided in bulk (bulk.py) unless the plan says
        otherwise; every other one record by record."""
        def records() -> Iterator[tuple[str, int, Any]]:
            for piece in pieces:
                shown = self.source_file(piece)
                self.source(shown, piece.fields)
                for line, raw in read_piece(self.plan.landing, piece):
                    yield shown, line, raw

        bulk = Bulk(self) if self.plan.compiled else None
        return self._task(task, records(), self.classify if bulk is None else bulk.offer, bulk, day)

    def replay(self, task: str, rows: Iterable[dict]) -> TaskResult:
        """Dead-letter rows of a day classified again (replay.py): a row of a reason the catalog
        decides is its raw record classified anew, with its file and line; any other row is
        kept as it is. `result.moved` counts, by old reason and table, the rows that now match."""
        moved: dict[str, int] = {}

        def again(source_file: str, line: int, row: dict) -> None:
            if row["reason"] not in REPLAYED or row["raw"] is None:
                self._add(DEADLETTER_TABLE, self.deadletter_schema, [row[f.name] for f in self.deadletter_schema])
                return
            self.last_table = None
            self.source(source_file, row.get("source_fields"))
            self.classify(source_file, line, row["raw"].encode())
            if self.last_table not in (None, DEADLETTER_TABLE):
                key = f"{row['reason']} -> {self.last_table}"
                moved[key] = moved.get(key, 0) + 1

        result = self._task(task, ((r["source_file"], r["source_line"], r) for r in rows), again)
        result.moved = moved
        return result

    def _task(self, task: str, records: Iterable[tuple[str, int, Any]], handle: Callable, bulk: Bulk | None = None,
              day: dt.date | None = None) -> TaskResult:
        day = day or self.plan.day
        self.result = result = TaskResult(day=day.isoformat())
        for spec in self.specs.values():
            spec.suite.reset()
        with _few_collections(), TaskOutput(self.plan.warehouse, day, f"{self.plan.run}-{task}") as self.output:
            for seq, (source_file, line, raw) in enumerate(records):
                self.seq = seq
                result.records += 1
                result.per_file[source_file] = result.per_file.get(source_file, 0) + 1
                handle(source_file, line, raw)
                self.output.bound()
            if bulk is not None:
                bulk.flush()
            result.files = self.output.write()  # one Parquet file per table the task fed
        result.tallies = {spec.name: spec.suite.tally() for spec in self.specs.values() if spec.suite.used}
        return result

    def add_rows(self, name: str, schema: pa.Schema, rows: pa.RecordBatch) -> None:
        """A batch of rows the compiled path kept."""
        self.result.rows[name] = self.result.rows.get(name, 0) + rows.num_rows
        self.output.add_batch(name, schema, rows)

    def kept_in_bulk(self, count: int) -> None:
        self.result.batched += count

    def _add(self, name: str, schema: pa.Schema, values: list) -> None:
        self.last_table = name  # where the record just classified went (replay counts the moves)
        self.result.rows[name] = self.result.rows.get(name, 0) + 1
        self.output.add(name, schema, values)

    # -- one record
    def deadletter(self, reason: str, detail: str | None, source_file: str, source_line: int, raw, rec: Record | None = None,
                   candidates: list[str] | None = None, broken: list[str] | None = None) -> None:
        self.result.deadletter[reason] = self.result.deadletter.get(reason, 0) + 1
        if not self.writes_deadletter:
            return
        attrs = rec.attrs if rec is not None and rec.attrs is not None else {}
        kind = rec.kind if rec is not None else ("malformed_json" if reason in NOT_JSON else None)
        text = raw.decode("utf-8", "replace") if isinstance(raw, (bytes, bytearray)) else raw
        self._add(DEADLETTER_TABLE, self.deadletter_schema, DeadLetterRow(
            reason, detail, candidates or [], kind, rec.protocol if rec is not None else None, attrs.get("type"),
            attrs.get("id"), source_file, source_line, text, self.plan.ingested_at, broken or [], self.fields,
        ))

    def classify(self, source_file: str, line: int, raw) -> None:
        if isinstance(raw, TooLarge):
            self.deadletter("record_too_large", f"the record has {raw.size} bytes; the limit is {MAX_RECORD_BYTES} "
                            f"(the first {len(raw.head)} are kept here)", source_file, line, raw.head)
            return
        if isinstance(raw, Corrupt):
            self.deadletter("corrupt_file", raw.detail, source_file, line, None)
            return
        if isinstance(raw, Unsupported):
            self.deadletter("unsupported_format", raw.detail, source_file, line, None)
            return
        try:
            obj = self.landed(strictjson.loads(raw), line)
        except strictjson.NotJson as exc:
            self.deadletter(exc.reason, exc.detail, source_file, line, raw)
            return
        self.classify_parsed(obj, source_file, line, raw)

    def classify_parsed(self, obj, source_file: str, line: int, raw) -> None:
        batch = batch_events(obj)
        if batch is None:
            self.classify_object(obj, source_file, line, raw)
        elif not batch:
            self.deadletter("not_an_event", "an HTTP batch (application/cloudevents-batch+json) holding no event",
                            source_file, line, raw)
        else:  # each event of the batch is a record, with the batch's line as its lineage
            self.result.records += len(batch) - 1
            self.result.per_file[source_file] = self.result.per_file.get(source_file, 0) + len(batch) - 1
            for event in batch:
                self.classify_object(event, source_file, line, orjson.dumps(event))

    def classify_object(self, obj, source_file: str, line: int, raw) -> None:
        outcome = self.decide(obj, source_file, line)
        if outcome.reason is None:
            spec, checked = outcome.checked.spec, outcome.checked
            spec.suite.kept(checked.row, source_file, line)
            if self.writes(spec.name):
                self._add(spec.name, spec.schema, checked.values)
        else:
            self.deadletter(outcome.reason, outcome.detail, source_file, line, raw, outcome.rec, outcome.candidates, outcome.broken)

    def decide(self, obj, source_file: str, line: int) -> "Outcome":
        """What one parsed landed record is: its table's row, or a dead letter and why. The one
        decision of the per-record path: classify, the replay and the rows GX is compared with
        (`matched_rows`) all take it from here."""
        rec = normalize(obj)
        fault = record_fault(rec, self.matcher.takes_plain)
        if fault is not None:
            return Outcome(*fault, rec)
        m = self.matcher.match(rec)
        candidates = [d.xid for d in m.candidates]
        try:
            if m.status == MatchStatus.AMBIGUOUS:
                m = self.resolve(rec, m)
            if m.status != MatchStatus.MATCHED:
                return self.unmatched(rec, m)
            checked = self.typed(rec, m, source_file, line)
        except PatternTimeout as exc:  # a backtracking pattern over its budget: this record, never the task
            if m.status == MatchStatus.MATCHED:
                self.spec(m.winner.idx).suite.rejected += 1
            return Outcome("pattern_timeout", str(exc), rec, candidates)
        spec = checked.spec
        if checked.kept:
            return Outcome(None, None, rec, candidates, checked=checked)
        spec.suite.rejected += 1
        if checked.undecodable:
            return Outcome("malformed_payload", rec.payload_error or "the payload cannot be decoded", rec, candidates, checked=checked)
        detail, broken = failure_detail(checked.type_errors, checked.failed, MAX_ERRORS)
        return Outcome("schema_violation", detail, rec, candidates, broken, checked)

    def typed(self, rec: Record, m: Match, source_file: str, line: int, counted: bool = True) -> "Checked":
        """A matched record as its table's row, typed as GX would see it (a value of the wrong
        kind is null), with the ERROR expectations it fails: what the table gets if it is kept.
        Not `counted`: the suite's tallies are left as they were (a candidate it did not go to)."""
        spec = self.spec(m.winner.idx)
        spec.suite.seq = self.seq
        value, undecodable = spec.source(rec)
        type_errors: list = []
        data = spec.payload(value, type_errors)
        values = spec.row(rec, m, data, source_file, line)
        if spec.fields_index is not None:
            values[spec.fields_index] = self.fields
        row = dict(zip(spec.names, values))
        found = spec.jsonschema_errors(value, type_errors) if spec.jsonschema is not None and value is not None else []
        failed = spec.suite.check(row, type_errors + found, source_file, line) if counted else spec.suite.failures(row)
        named = {e.id for e, _ in failed}  # a required property the suite names already
        type_errors += [f for f in found if f[0] not in named]
        return Checked(spec, values, row, type_errors, failed, undecodable)

    def matched_rows(self, pieces: Sequence[Piece]) -> dict[str, list["Checked"]]:
        """Every record of the pieces that matches a definition, typed and checked but not
        filtered, by table: the rows GX's own validation of the pass is compared with."""
        out: dict[str, list[Checked]] = {}
        for piece in pieces:
            shown = self.source_file(piece)
            self.source(shown, piece.fields)
            for line, raw in read_piece(self.plan.landing, piece):
                if not isinstance(raw, bytes):
                    continue
                try:
                    obj = self.landed(strictjson.loads(raw), line)
                except strictjson.NotJson:
                    continue
                for event in batch_events(obj) or [obj]:
                    checked = self.decide(event, shown, line).checked
                    if checked is not None:  # a pattern_timeout dead letter has none: GX never sees its row either
                        out.setdefault(checked.spec.name, []).append(checked)
        return out

    def unmatched(self, rec: Record, m: Match) -> "Outcome":
        candidates = [d.xid for d in m.candidates]
        if m.status == MatchStatus.MISSING:
            names = ", ".join(dict.fromkeys(k.split(":", 1)[1] for k in m.missing))
            return Outcome("missing_required_attribute", f"missing: {names}", rec, candidates)
        if m.status == MatchStatus.AMBIGUOUS:
            return Outcome("ambiguous", m.detail or "several definitions match", rec, candidates)
        if m.status == MatchStatus.REJECTED:
            return Outcome("schema_violation", m.detail, rec, candidates, self.broken_by_each(rec, m))
        detail = (f"no definition matches type={rec.attrs.get('type') if rec.attrs else None or '-'}"
                  f" protocol={rec.protocol or '-'} address={rec.address or '-'}")
        return Outcome("no_match", detail, rec, candidates)

    def broken_by_each(self, rec: Record, m: Match) -> list[str]:
        """The expectations each of several candidates finds broken by a record none of them
        accepts, as `<candidate xid>#<expectation id>`: what a single candidate's row names, per
        candidate (checked without counting: the record is in none of their tables)."""
        broken: list[str] = []
        for d in m.candidates:
            one = Match(MatchStatus.MATCHED, d, m.candidates, placeholders=dict(placeholder_pairs(d, rec)))
            checked = self.typed(rec, one, "", 0, counted=False)
            if not checked.undecodable:
                broken += [f"{d.xid}#{rule}" for rule in failure_detail(checked.type_errors, checked.failed, 0)[1]]
        return broken

    def resolve(self, rec: Record, m: Match) -> Match:
        """Several candidates, none derived from the others: their data schemas decide (one accepts:
        matched; several: ambiguous; every one rejects: a schema violation naming each one's first).
        A candidate without a data schema accepts any payload: nothing of it refuses one."""
        value = None if rec.data is MISSING else rec.data
        valid, notes, rejected = [], [], 0
        for d in m.candidates:
            check = self.validators.get(d.idx)
            if check is None:
                spec = validator_spec(self.plan.tables[d.idx])
                if spec is None:
                    notes.append(f"{d.xid}: no schema to decide with, takes any payload")
                    valid.append(d)
                    continue
                check = self.validators[d.idx] = LANGUAGES[spec.family].validator(spec)
            problems = check(value)
            if problems:
                notes.append(f"{d.xid}: {problems[0]}")
                rejected += 1
            else:
                valid.append(d)
        if len(valid) == 1:
            return Match(MatchStatus.MATCHED, valid[0], m.candidates, placeholders=dict(placeholder_pairs(valid[0], rec)))
        if rejected == len(m.candidates):  # nothing is ambiguous: no definition takes this payload
            return Match(MatchStatus.REJECTED, None, m.candidates,
                         detail=f"none of {len(m.candidates)} candidates accepts the payload: " + "; ".join(notes))
        m.detail = f"{len(valid)} of {len(m.candidates)} candidates accept the payload" + ("; " + "; ".join(notes) if notes else "")
        return m


_cache: dict = {}


def classifier_for(plan: Plan) -> Classifier:
    """One compiled classifier per run in a worker process (Python workers are reused across tasks)."""
    key = plan.run
    if key not in _cache:
        _cache.clear()
        remove_dead_spills()
        _cache[key] = Classifier(plan)
    return _cache[key]
