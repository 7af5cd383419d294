"""The compiled path of a task: structured CloudEvents grouped by table and decided in bulk.

Most landed records are ordinary: a structured event of a known type whose attributes and payload
are what its definition says. The classifier offers each landed line to `Bulk.take` first:

* its deciding attributes (`CompiledCatalog.deciding_attributes`) are read by a decoder that
  skips everything else (`Bulk.envelope`), and the match is cached by them, so records of a type,
  source and content type seen before are not matched again;
* a matched line joins its table's group; a group is decided a batch at a time
  (`BulkTable.decide`): each line is decoded by the table's own strict decoder straight into
  typed values (schemas/compiled.py), a screen over the batch finds what a strict reading may
  refuse (strictjson `unkept`), and the columns, their checks and the suite's expectations
  (quality/evaluation.py) are computed over the batch and written as the table's rows.

A line the compiled path is not sure of goes to the per-record path (the classifier's
`classify`, the referee), which decides it exactly as it decides every other record: another
kind of record, a record fault, an unmatched or ambiguous one, a value of another kind, a broken
expectation. So the rows and dead letters are the per-record path's, and the cost of the
ordinary record is its decoding and its share of column operations.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Callable

import msgspec
import pyarrow as pa

from ..catalog.matcher import Match, MatchStatus
from ..jsonvalues import as_text, rfc3339
from ..records import cloudevents, strictjson
from ..records.attributes import PARSERS, column_value
from ..records.record import normalize, record_fault
from ..schemas.compiled import Findings, Node, column_of, compile_columns, timestamps

GROUP_ROWS = 4096  # a table's waiting records become one batch when it has this many
# at most this many lines, and this many of their bytes, of a task wait in groups (then every
# group goes): enough for a thousand tables' groups to reach a batch, with memory bounded for
# lines of any size
HELD_RECORDS = 65_536
HELD_BYTES = 64 << 20
# a batch has a fixed cost (its columns, conversions and counts: about 0.1 ms for the benchmark's
# tables) that a group this small does not repay: its lines go one by one (benchmarks/RESULTS.md,
# session 24)
SMALLEST_BATCH = 8
DECODED_LINES = 512  # a table's lines decoded in one call (a refused one costs decoding those before it again)
# what a decoder raises on a line it refuses (msgspec recurses: a deep enough nesting is a RecursionError)
DECODE_ERRORS = (msgspec.ValidationError, msgspec.DecodeError, RecursionError)
_LINE = re.compile(r"at `\$\[(\d+)\]")  # the line of a chunk a ValidationError is about
CACHED_MATCHES = 65_536  # distinct attribute combinations remembered (then forgotten all at once)
JSON_CONTENT = "application/json"  # a structured event's data without datacontenttype (CloudEvents JSON format)
ENVELOPE_FREE = ("data_base64", "protocol", "topic")  # members that make a record another kind
INT64 = Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)]
# an extension attribute's value: a scalar (a structure, or an integer the strict reading may
# refuse, goes to the referee)
SCALAR = str | bool | INT64 | float | None


def _envelope_type(attributes: dict[str, str], payload: Node) -> type:
    """The msgspec type of one table's structured events: its CloudEvents attributes as the JSON
    event format writes them (strings; the required ones present, the non-empty ones non-empty),
    its declared extension attributes as scalars (`attributes`: each one's member name), `data`
    as the payload's node; no other member (an undeclared attribute, `data_base64`: the referee
    decides)."""
    members = []
    for name, member in attributes.items():
        kind: Any = SCALAR
        if name in cloudevents.JSON_STRINGS:
            kind = Annotated[str, msgspec.Meta(min_length=1)] if name in cloudevents.NON_EMPTY else str
        if name in cloudevents.REQUIRED:
            members.append((member, kind, msgspec.field(name=name)))
        else:
            members.append((member, kind | None, msgspec.field(name=name, default=None)))
    data = payload.annotation()
    members.append(("data", data, msgspec.field()) if payload.required else ("data", data | None, None))
    return msgspec.defstruct("Event", members, kw_only=True, forbid_unknown_fields=True, omit_defaults=True, gc=False)


class BulkTable:
    """One table's compiled path: how a group of its matched lines becomes rows."""

    def __init__(self, spec, ingested_at):  # spec: the classifier's TableSpec
        self.spec = spec
        self.ingested_at = ingested_at
        data = spec.table.schema["data"]
        covered = frozenset(e.id for e in spec.expectations)
        self.payload: Node | None = None
        self.decoder: msgspec.json.Decoder | None = None
        if spec.jsonschema is None and spec.declared:  # jsonschema decides some keywords: per record
            self.payload = compile_columns(data.dataType, data.metadata, spec.schema.field("data").type, covered)
        if self.payload is not None and "data" not in spec.declared:
            self.attributes = {name: f"a{i}" for i, name in enumerate(sorted(spec.declared))}
            try:
                self.decoder = msgspec.json.Decoder(_envelope_type(self.attributes, self.payload))
            except (TypeError, ValueError):  # two members of one key (wire names alike): per record
                self.payload = None
            depth = self.payload.depth() if self.payload is not None else None  # the event's object holds the payload
            self.bounded = depth is not None and depth + 1 < strictjson.MAX_DEPTH
        else:
            self.payload = None

    @property
    def eligible(self) -> bool:
        return self.payload is not None

    def decode(self, raws: list[bytes]) -> tuple[list, list[int]]:
        """The lines decoded as this table's events, and the indexes of those its decoder refuses.
        Decoded as newline-delimited JSON, a chunk at a time (half the cost of a call a line);
        a chunk with a refused line is decoded again up to it and goes on after it."""
        decoder, events, refused = self.decoder, [], []
        start = 0
        while start < len(raws):
            chunk = raws[start:start + DECODED_LINES]
            try:
                events += decoder.decode_lines(b"\n".join(chunk))
                start += len(chunk)
                continue
            except msgspec.ValidationError as exc:
                found = _LINE.search(str(exc))
            except DECODE_ERRORS:  # malformed past what the match read, nested too deep: no line given
                found = None
            if found is None:
                for i, raw in enumerate(chunk, start):
                    try:
                        events.append(decoder.decode(raw))
                    except DECODE_ERRORS:
                        refused.append(i)
                start += len(chunk)
            else:
                at = int(found.group(1))
                if at:
                    events += decoder.decode_lines(b"\n".join(chunk[:at]))
                refused.append(start + at)
                start += at + 1
        return events, refused

    def decide(self, events: list, matches: tuple, files: tuple, lines: tuple, fields: tuple) -> tuple[pa.RecordBatch, set[int], dict, dict]:
        """The group's rows as one batch, the records it is not sure of, and the typed values by
        path (what the suite tests)."""
        findings = Findings()
        arrays = []
        for (name, source), field in zip(self.spec.sources, self.spec.schema):
            arrays.append(self._column(name, source, field.type, events, matches, files, lines, fields, findings))
        for name in cloudevents.JSON_STRINGS:  # what an expectation on an attribute without a column tests
            if (name,) not in findings.values and name in self.attributes:
                findings.values[(name,)] = column_of(events, self.attributes[name])
        return pa.RecordBatch.from_arrays(arrays, schema=self.spec.schema), findings.bad, findings.values, findings.typed

    def _column(self, name: str, source: tuple, arrow_type: pa.DataType, events, matches, files, lines, fields, findings: Findings) -> pa.Array:
        kind, size = source[0], len(events)
        if kind == "data":
            return self.payload.run(column_of(events, "data"), findings)
        if kind == "attribute":
            return self._attribute(source[1], source[2], arrow_type, events, findings)
        if kind == "other_attributes":  # the decoder took no undeclared attribute: every map empty
            return pa.MapArray.from_arrays(pa.array([0] * (size + 1), pa.int32()), pa.array([], pa.string()),
                                           pa.array([], pa.string()), type=arrow_type)
        if kind == "placeholder":
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
            findings.values[(name,)] = [None] * size
            return pa.nulls(size, arrow_type)
        findings.values[(name,)] = values
        return pa.array(values, arrow_type)

    def _attribute(self, name: str, kind: str, arrow_type: pa.DataType, events, findings: Findings) -> pa.Array:
        """A CloudEvents attribute's column, as classifier `_attribute` reads it."""
        values = column_of(events, self.attributes[name])
        if name not in cloudevents.JSON_STRINGS:  # an extension attribute: as text (record.py)
            values = list(map(as_text, values))
        if name == "datacontenttype":
            values = [JSON_CONTENT if v is None else v for v in values]
        elif name == "time" or kind == "timestamp":
            findings.values[(name,)] = values
            findings.typed[(name,)] = rfc3339
            return timestamps(values, arrow_type, findings)
        elif kind in PARSERS:
            values = [column_value(kind, v) for v in values]
        findings.values[(name,)] = values
        return pa.array(values, arrow_type)


def _key_function(values: tuple[str, ...], present: tuple[str, ...]) -> Callable[[Any], tuple | None]:
    """A line's deciding attributes as one tuple, from its `_deciding_type` decoding, or None
    when it is no structured CloudEvent of version 1.0 (generated: one call; a loop of calls per
    record cost more than the rest of taking it)."""
    parts = [f"e.v{i}" for i in range(len(values))] + [f"e.p{i} is not None" for i in range(len(present))]
    version = f"e.v{values.index('specversion')}" if "specversion" in values else "e.specversion"
    plain = " and ".join(f"e.f{i} is None" for i in range(len(ENVELOPE_FREE)))
    return eval(f"lambda e: ({', '.join(parts)},) if {version} == '1.0' and {plain} else None")  # noqa: S307 - our own names


def _deciding_type(values: tuple[str, ...], present: tuple[str, ...]) -> type:
    """The msgspec type of what the match of a structured event depends on: the attributes whose
    text the catalog's checks read (`v<i>`; text only: a value of another kind is the referee's),
    those whose presence they test (`p<i>`), `specversion` and the members that make a record
    another kind (`f<i>`). Everything else in a line is skipped, not built."""
    members = [(f"v{i}", str | None, msgspec.field(name=name, default=None)) for i, name in enumerate(values)]
    members += [(f"p{i}", Any, msgspec.field(name=name, default=None)) for i, name in enumerate(present)]
    # present at all, null or not: never parsed (a Raw is its text)
    members += [(f"f{i}", msgspec.Raw, msgspec.field(name=name, default=None)) for i, name in enumerate(ENVELOPE_FREE)]
    if "specversion" not in values:
        members.append(("specversion", str | None, None))
    return msgspec.defstruct("Deciding", members, kw_only=True, gc=False)


class Bulk:
    """A task's compiled path: landed lines grouped by table, decided a group at a time."""

    def __init__(self, classifier):  # the task's Classifier: the referee, and where rows go
        self.classifier = classifier
        self.values, self.present = classifier.matcher.deciding_attributes()
        self.key = _key_function(self.values, self.present)
        self.envelope = msgspec.json.Decoder(_deciding_type(self.values, self.present)).decode
        self.matches: dict[tuple, Match | None] = {}
        self.tables: dict[int, BulkTable] = {}
        self.groups: dict[int, list] = {}
        self.held = self.held_bytes = 0

    def table(self, idx: int) -> BulkTable:
        table = self.tables.get(idx)
        if table is None:
            table = self.tables[idx] = BulkTable(self.classifier.spec(idx), self.classifier.plan.ingested_at)
        return table

    def offer(self, source_file: str, line: int, raw) -> None:
        """One landed line: taken by the compiled path, or classified by the per-record path (a
        line of a Kafka topic's file is a Kafka record: the per-record path reads it)."""
        c = self.classifier
        if type(raw) is not bytes or c.topic is not None or not self.take(raw, source_file, line, c.seq, c.fields):
            c.classify(source_file, line, raw)

    def take(self, raw: bytes, source_file: str, line: int, seq: int, fields) -> bool:
        """Whether the compiled path takes this landed line (else the caller classifies it)."""
        try:
            key = self.key(self.envelope(raw))
        except DECODE_ERRORS:  # not an object, an attribute of another kind, nested too deep
            return False
        if key is None:
            return False
        m = self.matches.get(key, False)
        if m is False:
            m = self._match(raw, key)
        if m is None:
            return False
        group = self.groups.get(m.winner.idx)
        if group is None:
            group = self.groups[m.winner.idx] = []
        group.append((raw, source_file, line, seq, fields, m))
        self.held += 1
        self.held_bytes += len(raw)
        if len(group) >= GROUP_ROWS:
            self.flush(m.winner.idx)
        elif self.held >= HELD_RECORDS or self.held_bytes >= HELD_BYTES:
            self.flush()
        return True

    def _match(self, raw: bytes, key: tuple) -> Match | None:
        """The match of the lines with these deciding attributes (remembered), or None when the
        per-record path decides them. A record fault is the record's own: decided, never remembered."""
        try:
            obj = strictjson.loads(raw)
        except strictjson.NotJson:
            return None
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
        """Decides the waiting lines of one table (all tables: None); a group too small to
        repay a batch goes one by one."""
        for i in ([idx] if idx is not None else list(self.groups)):
            group = self.groups.pop(i, None)
            if group:
                self.held -= len(group)
                self.held_bytes -= sum(len(g[0]) for g in group)
                if len(group) < SMALLEST_BATCH:
                    self._referee(group)
                else:
                    self._decide(self.table(i), group)

    def _decide(self, table: BulkTable, group: list) -> None:
        c, spec = self.classifier, table.spec
        if not table.eligible:  # found out in an earlier batch of the task
            self._referee(group)
            return
        raws = [g[0] for g in group]
        events, refused = table.decode(raws)
        if refused:
            group, raws = self._set_aside(group, refused, raws)
        unsure = strictjson.unkept(raws, events, msgspec.json.encode, table.bounded)
        if unsure:  # a member the decoder did not keep, maybe a duplicate key: read strictly
            refused = []
            for i in unsure:
                try:
                    strictjson.loads(raws[i])
                except strictjson.NotJson:
                    refused.append(i)
            if refused:
                group, events = self._set_aside(group, refused, events)
        if not group:
            return
        _, files, lines, seqs, fields, matches = zip(*group)
        rows, bad, values, typed = table.decide(events, matches, files, lines, fields)
        try:
            bad |= spec.suite.broken_in_bulk(values, typed)
        except KeyError:  # an expectation on a column the compiled path does not hold: per record
            table.payload = None
            bad = set(range(len(events)))
        kept_seqs, kept_files, kept_lines = seqs, files, lines
        if bad:
            keep = [i for i in range(len(events)) if i not in bad]
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

    def _set_aside(self, group: list, refused: list[int], aligned: list) -> tuple[list, list]:
        """The referee decides the `refused` lines of a group; the group's other lines, and the
        same of `aligned` (a list index for index with the group), go on."""
        self._referee([group[i] for i in refused])
        out = set(refused)
        return ([g for i, g in enumerate(group) if i not in out],
                [x for i, x in enumerate(aligned) if i not in out])

    def _referee(self, group: list) -> None:
        """The per-record path decides these lines, each with its own lineage and read order."""
        c = self.classifier
        reading = c.fields, c.topic  # the piece being read, while these come from earlier ones
        c.topic = None  # the compiled path takes no line of a Kafka topic's file
        for raw, source_file, line, seq, fields, _ in group:
            c.fields, c.seq = fields, seq
            c.classify(source_file, line, raw)
        c.fields, c.topic = reading
