"""The batch path of a task: structured CloudEvents grouped by table and decided in bulk.

Most landed records are ordinary: a structured event of a known type whose attributes and payload
are what its definition says. The classifier hands each parsed record to `Bulk.take` first:

* the match is cached by the attributes the catalog's checks read
  (`CompiledCatalog.deciding_attributes`), so records of a type, source and content type seen
  before are not matched again;
* a matched record joins its table's group; a group becomes one Arrow batch at a time
  (`BulkTable.decide`): attributes, payload (schemas/columns.py) and the suite's expectations
  (quality/evaluation.py) are checked by column, and written as the table's rows.

A record the batch is not sure of goes back to the per-record path (the classifier's
`classify_object`, the referee), which decides it exactly as it decides every other record:
another kind of record, a record fault, an unmatched or ambiguous one, a value of another kind,
a broken expectation. So the rows and dead letters are the per-record path's, and the cost of
the ordinary record is a parse, a dictionary lookup and its share of column operations.
"""

from __future__ import annotations

from itertools import repeat
from typing import Any, Callable

import pyarrow as pa

from ..catalog.matcher import Match, MatchStatus
from ..records import cloudevents
from ..records.attributes import PARSERS, column_value
from ..records import strictjson
from ..records.record import normalize, record_fault
from ..jsonvalues import as_text, rfc3339
from ..schemas.columns import Batch, Node, compile_columns, of_kinds, timestamps

GROUP_ROWS = 4096  # a table's waiting records become one batch when it has this many
HELD_RECORDS = 10_000  # at most this many records of a task wait in groups (then every group goes)
# a batch has a fixed cost (about 0.8 ms: its columns, conversions and counts) that a group this
# small does not repay: its records go one by one (a record costs 30-40 µs there, about 15 in a
# batch of hundreds; benchmarks/RESULTS.md, session 21)
SMALLEST_BATCH = 32
CACHED_MATCHES = 65_536  # distinct attribute combinations remembered (then forgotten all at once)
NON_EMPTY, REQUIRED = frozenset(cloudevents.NON_EMPTY), frozenset(cloudevents.REQUIRED)
JSON_CONTENT = "application/json"  # a structured event's data without datacontenttype (CloudEvents JSON format)
ENVELOPE_FREE = frozenset({"data_base64", "protocol", "topic"})  # members that make a record another kind


class BulkTable:
    """One table's batch path: how a group of its matched records becomes rows."""

    def __init__(self, spec, ingested_at):  # spec: the classifier's TableSpec
        self.spec = spec
        self.ingested_at = ingested_at
        data = spec.table.schema["data"]
        covered = frozenset(e.id for e in spec.expectations)
        self.payload: Node | None = None
        if spec.jsonschema is None and spec.declared:  # jsonschema decides some keywords: per record
            self.payload = compile_columns(data.dataType, data.metadata, spec.schema.field("data").type, covered)
        self.known = frozenset(spec.declared) | {"data"}

    @property
    def eligible(self) -> bool:
        return self.payload is not None

    def decide(self, objs: tuple, matches: tuple, files: tuple, lines: tuple, fields: tuple) -> tuple[pa.RecordBatch, set[int], dict, dict]:
        """The group's rows as one batch, the records it is not sure of, and the typed values by
        path (what the suite tests)."""
        batch = Batch()
        self._envelope(objs, batch)
        arrays = []
        for (name, source), field in zip(self.spec.sources, self.spec.schema):
            arrays.append(self._column(name, source, field.type, objs, matches, files, lines, fields, batch))
        return pa.RecordBatch.from_arrays(arrays, schema=self.spec.schema), batch.bad, batch.values, batch.typed

    def _envelope(self, objs: tuple, batch: Batch) -> None:
        """What `record_fault` refuses, by column: an attribute the JSON event format writes as a
        string carried as another value, a missing or empty required one, a time that does not parse."""
        for name in cloudevents.JSON_STRINGS:
            column = of_kinds(list(map(dict.get, objs, repeat(name))), (str,), batch)
            if name in NON_EMPTY and "" in column:
                batch.mark(i for i, v in enumerate(column) if v == "")
            if name in REQUIRED and None in column:
                batch.mark(i for i, v in enumerate(column) if v is None)
            batch.values[(name,)] = column

    def _column(self, name: str, source: tuple, arrow_type: pa.DataType, objs, matches, files, lines, fields, batch: Batch) -> pa.Array:
        kind, size = source[0], len(objs)
        if kind == "data":
            values = list(map(dict.get, objs, repeat("data")))
            if self.payload.required:
                batch.mark(i for i, v in enumerate(values) if v is None)
            return self.payload.run(values, batch)
        if kind == "attribute":
            return self._attribute(source[1], source[2], arrow_type, objs, batch)
        if kind == "other_attributes":
            known = self.known
            plain = list(map(known.issuperset, objs))
            if False not in plain:  # no extension attributes: every map empty
                return pa.MapArray.from_arrays(pa.array([0] * (size + 1), pa.int32()), pa.array([], pa.string()),
                                               pa.array([], pa.string()), type=arrow_type)
            values: list[Any] = [{} if p else {k: as_text(v) for k, v in o.items() if k not in known and v is not None}
                                 for o, p in zip(objs, plain)]  # extension attributes, as text (record.py)
        elif kind == "placeholder":
            values = [m.placeholders.get(source[1]) for m in matches]
        elif kind == "source_file":
            values = list(files)
        elif kind == "source_line":
            values = list(lines)
        elif kind == "source_fields":
            values = list(fields)
        elif kind == "ingested_at":
            return pa.repeat(pa.scalar(self.ingested_at, arrow_type), size)
        else:  # protocol, its metadata and binding columns, dropped columns: a structured event has none
            batch.values[(name,)] = [None] * size
            return pa.nulls(size, arrow_type)
        batch.values[(name,)] = values
        return pa.array(values, arrow_type)

    def _attribute(self, name: str, kind: str, arrow_type: pa.DataType, objs, batch: Batch) -> pa.Array:
        """A CloudEvents attribute's column, as classifier `_attribute` reads it."""
        values = batch.values.get((name,))  # the CloudEvents ones, checked to be text
        if values is None:  # an extension attribute the definition declares: as text (record.py)
            values = [as_text(o.get(name)) for o in objs]
        if name == "datacontenttype":
            values = [JSON_CONTENT if v is None else v for v in values]
        elif name == "time" or kind == "timestamp":
            batch.values[(name,)] = values
            batch.typed[(name,)] = rfc3339
            return timestamps(values, arrow_type, batch)
        elif kind in PARSERS:
            values = [column_value(kind, as_text(v)) for v in values]
        batch.values[(name,)] = values
        return pa.array(values, arrow_type)


def _key_function(values: tuple[str, ...], present: tuple[str, ...]) -> Callable[[dict], tuple]:
    """A record's deciding attributes as one tuple, in one call (generated: a loop of calls per
    record cost more than the rest of taking it)."""
    parts = [f"o.get({name!r})" for name in values] + [f"o.get({name!r}) is not None" for name in present]
    return eval(f"lambda o: ({', '.join(parts)},)")  # noqa: S307 - attribute names as string literals


class Bulk:
    """A task's batch path: parsed records grouped by table, decided a group at a time."""

    def __init__(self, classifier):  # the task's Classifier: the referee, and where rows go
        self.classifier = classifier
        self.values, self.present = classifier.matcher.deciding_attributes()
        self.key = _key_function(self.values, self.present)
        self.matches: dict[tuple, Match | None] = {}
        self.tables: dict[int, BulkTable] = {}
        self.groups: dict[int, list] = {}
        self.held = 0

    def table(self, idx: int) -> BulkTable:
        table = self.tables.get(idx)
        if table is None:
            table = self.tables[idx] = BulkTable(self.classifier.spec(idx), self.classifier.plan.ingested_at)
        return table

    def take(self, obj, source_file: str, line: int, raw, seq: int, fields) -> bool:
        """Whether the batch path takes this parsed record (else the caller classifies it)."""
        if type(obj) is not dict or obj.get("specversion") != "1.0" or not ENVELOPE_FREE.isdisjoint(obj):
            return False
        key = self.key(obj)
        m = self.matches.get(key, False)
        if m is False:
            m = self._match(obj, key)
        if m is None:
            return False
        group = self.groups.get(m.winner.idx)
        if group is None:
            group = self.groups[m.winner.idx] = []
        group.append((obj, source_file, line, raw, seq, fields, m))
        self.held += 1
        if len(group) >= GROUP_ROWS:
            self.flush(m.winner.idx)
        elif self.held >= HELD_RECORDS:
            self.flush()
        return True

    def _match(self, obj: dict, key: tuple) -> Match | None:
        """The match of the records with these deciding attributes (remembered), or None when the
        per-record path decides them. A record fault is the record's own: decided, never remembered."""
        if any(v is not None and type(v) is not str for v in key[:len(self.values)]):
            return None  # 1 == 1.0 == True as keys: only text is remembered
        rec = normalize(obj)
        if record_fault(rec, self.classifier.matcher.takes_plain) is not None:
            return None
        m = self.classifier.matcher.match(rec)
        if m.status != MatchStatus.MATCHED or not self.table(m.winner.idx).eligible:
            m = None
        if len(self.matches) >= CACHED_MATCHES:
            self.matches.clear()
        self.matches[key] = m
        return m

    def flush(self, idx: int | None = None) -> None:
        """Decides the waiting records of one table (all tables: None); a group too small to
        repay a batch goes one by one."""
        for i in ([idx] if idx is not None else list(self.groups)):
            group = self.groups.pop(i, None)
            if group:
                self.held -= len(group)
                if len(group) < SMALLEST_BATCH:
                    self._referee(group, read=True)
                else:
                    self._decide(self.table(i), group)

    def _decide(self, table: BulkTable, group: list) -> None:
        c, spec = self.classifier, table.spec
        unsure = strictjson.suspects([g[3] for g in group], [g[0] for g in group])
        if unsure:  # a duplicate key or a big integer, maybe: read strictly, record by record
            reading = c.fields
            for i in unsure:
                c.fields, c.seq = group[i][5], group[i][4]
                c.classify(group[i][1], group[i][2], group[i][3])
            c.fields = reading
            unsure = set(unsure)
            group = [g for i, g in enumerate(group) if i not in unsure]
            if not group:
                return
        objs, files, lines, raws, seqs, fields, matches = zip(*group)
        if not table.eligible:  # found out in an earlier batch of the task
            self._referee(group)
            return
        rows, bad, values, typed = table.decide(objs, matches, files, lines, fields)
        try:
            bad |= spec.suite.broken_in_bulk(values, typed)
        except KeyError:  # an expectation on a column the batch path does not hold: per record
            table.payload = None
            bad = set(range(len(objs)))
        kept_seqs, kept_files, kept_lines = seqs, files, lines
        if bad:
            keep = [i for i in range(len(objs)) if i not in bad]
            rows = rows.take(pa.array(keep, pa.int32()))
            values = {path: [column[i] for i in keep] for path, column in values.items()}
            kept_seqs, kept_files, kept_lines = ([x[i] for i in keep] for x in (seqs, files, lines))
        if rows.num_rows:
            c.kept_in_bulk(rows.num_rows)
            spec.suite.kept_in_bulk(values, typed, kept_seqs, kept_files, kept_lines)
            if c.writes(spec.name):
                c.add_rows(spec.name, spec.schema, rows)
        if bad:
            self._referee([group[i] for i in sorted(bad)])

    def _referee(self, group: list, read: bool = False) -> None:
        """The per-record path decides these records, each with its own lineage and read order
        (`read`: from their strict reading on, which no batch completed)."""
        c = self.classifier
        reading = c.fields  # the piece being read, while these come from earlier ones
        for obj, source_file, line, raw, seq, fields, _ in group:
            c.fields, c.seq = fields, seq
            if read:
                c.classify_read(obj, obj, source_file, line, raw)
            else:
                c.classify_object(obj, source_file, line, raw)
        c.fields = reading
