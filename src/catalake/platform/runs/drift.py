"""Catalog drift: what producers send that the catalog does not describe, as proposed definitions.

A day's `no_match` dead letters are grouped into candidates by CloudEvents `type` and protocol
(protocol records without an envelope by protocol and address). For each candidate:
* `source`, `subject` and the protocol address become URI templates where the records' values
  differ in some path segments (`https://x/sites/a`, `https://x/sites/b` ->
  `https://x/sites/{site}`; the placeholder is named after the segment before it), literal values
  where they agree, and are left undeclared where their shapes differ;
* the payloads' JSON Schema is inferred by genson (types, `required` where always present), then
  strings get `format: date-time` when every value is an RFC 3339 timestamp and an `enum` when
  a few values repeat (a small closed set);
* counts, first and last `time` seen, and examples with their file and line.
`proposals_document` writes them as an xRegistry 1.0 catalog (a message group `catalake.drift`
and its schema group) that `catalake catalog validate` accepts and that, once added to the
catalog, matches those records. `ambiguous` dead letters are reported, never proposed: another
definition would only add a candidate.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from genson import SchemaBuilder

from ..jsonvalues import rfc3339
from ..records import strictjson
from ..records.record import MISSING, normalize

ENUM_LIMIT = 5  # at most this many distinct values make a closed set...
ENUM_REPEATS = 2  # ...when each is seen this many times on average
EXAMPLES = 3
GROUP = "catalake.drift"
SCHEMA_FORMAT = "JsonSchema/draft-07"
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


@dataclass
class Candidate:
    """Unmatched records of one kind: their attributes, payloads and where they were."""

    type: str | None
    protocol: str | None
    reason: str = "no_match"
    count: int = 0
    attributes: dict[str, list[str]] = field(default_factory=dict)  # source, subject -> values seen
    addresses: list[str] = field(default_factory=list)
    payloads: list = field(default_factory=list)
    times: list[dt.datetime] = field(default_factory=list)
    examples: list[dict] = field(default_factory=list)
    candidates: set[str] = field(default_factory=set)  # the definitions an ambiguous record matched

    @property
    def message_id(self) -> str:
        if self.type:
            return self.type
        address = re.sub(r"[^A-Za-z0-9_.-]+", ".", (self.addresses or ["record"])[0]).strip(".")
        return f"{(self.protocol or 'record').split('/')[0].lower()}.{address or 'record'}"


def candidates(rows: Iterable[dict]) -> list[Candidate]:
    """Dead-letter rows (reason, raw, source_file, source_line) -> candidates, largest first."""
    found: dict[tuple, Candidate] = {}
    for row in rows:
        if row.get("reason") not in ("no_match", "ambiguous") or row.get("raw") is None:
            continue
        try:
            rec = normalize(strictjson.loads(row["raw"].encode()))
        except strictjson.NotJson:
            continue
        attrs = rec.attrs or {}
        key = (row["reason"], attrs.get("type"), rec.protocol, None if attrs.get("type") else rec.address)
        cand = found.get(key)
        if cand is None:
            cand = found[key] = Candidate(attrs.get("type"), rec.protocol, row["reason"])
        cand.count += 1
        cand.candidates.update(row.get("candidates") or [])
        for name in ("source", "subject"):
            if attrs.get(name) is not None:
                cand.attributes.setdefault(name, []).append(attrs[name])
        if rec.address is not None:
            cand.addresses.append(rec.address)
        if rec.data is not MISSING and isinstance(rec.data, (dict, list)):
            cand.payloads.append(rec.data)
        when = rfc3339(attrs.get("time"))
        if when is not None:
            cand.times.append(when)
        if len(cand.examples) < EXAMPLES:
            cand.examples.append({"source_file": row.get("source_file"), "source_line": row.get("source_line"),
                                  "raw": row["raw"][:500]})
    return sorted(found.values(), key=lambda c: (c.reason != "no_match", -c.count, c.message_id))


def placeholder_name(previous: str | None, taken: set[str]) -> str:
    """A placeholder named after the path segment before it (`sites` -> `site`), unique."""
    base = previous[:-1] if previous and previous.endswith("s") and len(previous) > 3 else previous
    base = base if base and NAME.fullmatch(base) else "segment"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}{n}", n + 1
    taken.add(name)
    return name


def generalize(values: list[str], taken: set[str]) -> str | None:
    """One value for all: the value itself when they agree; a URI template when they differ only
    in whole path segments (each such segment a placeholder); None when their shapes differ."""
    distinct = list(dict.fromkeys(values))
    if len(distinct) == 1:
        return distinct[0].replace("{", "%7B").replace("}", "%7D")
    split = [v.split("/") for v in distinct]
    if len({len(s) for s in split}) != 1:
        return None
    out = []
    for segments in zip(*split):
        if len(set(segments)) == 1:
            out.append(segments[0].replace("{", "%7B").replace("}", "%7D"))
        elif any(s == "" for s in segments):
            return None  # an empty segment is no value a placeholder takes
        else:
            out.append("{" + placeholder_name(out[-1] if out else None, taken) + "}")
    return "/".join(out)


def infer_schema(payloads: list) -> dict | None:
    """The payloads' JSON Schema (genson), with date-time formats and small enums."""
    if not payloads:
        return None
    builder = SchemaBuilder(schema_uri="http://json-schema.org/draft-07/schema#")
    for payload in payloads:
        builder.add_object(payload)
    schema = builder.to_schema()
    _refine(schema, payloads)
    return schema


def _refine(schema: dict, values: list) -> None:
    """Formats and enums from the values seen at this node (objects recursed into)."""
    if schema.get("type") == "object" and isinstance(schema.get("properties"), dict):
        for name, prop in schema["properties"].items():
            _refine(prop, [v[name] for v in values if isinstance(v, dict) and name in v])
        return
    if schema.get("type") != "string" or not values or not all(isinstance(v, str) for v in values):
        return
    if all(rfc3339(v) is not None for v in values):
        schema["format"] = "date-time"
        return
    seen = Counter(values)
    if len(seen) <= ENUM_LIMIT and len(values) >= ENUM_REPEATS * len(seen) and len(seen) > 0:
        schema["enum"] = sorted(seen)


def definition(cand: Candidate) -> tuple[dict, dict | None]:
    """(message definition, its schema or None) of a candidate."""
    taken: set[str] = set()
    seen = f", seen from {min(cand.times).isoformat()} to {max(cand.times).isoformat()}" if cand.times else ""
    message: dict = {"messageid": cand.message_id, "description": f"Proposed from {cand.count} unmatched record(s){seen}."}
    if cand.type:
        metadata: dict = {"type": {"value": cand.type}}
        for name in ("source", "subject"):
            values = cand.attributes.get(name)
            value = generalize(values, taken) if values else None
            if value is not None:
                metadata[name] = {"type": "uritemplate", "value": value} if "{" in value else {"value": value}
        message["envelope"] = "CloudEvents/1.0"
        message["envelopemetadata"] = metadata
    if cand.protocol:
        from ..catalog.normalize import ADDRESS_OPTIONS, protocol_family

        option = ADDRESS_OPTIONS.get(protocol_family(cand.protocol) or "")
        address = generalize(cand.addresses, taken) if cand.addresses else None
        message["protocol"] = cand.protocol
        if option and address is not None:
            message["protocoloptions"] = {option: {"value": address}}
    schema = infer_schema(cand.payloads)
    if schema is not None:
        message["dataschemaformat"] = SCHEMA_FORMAT
        message["dataschemauri"] = f"#/schemagroups/{GROUP}/schemas/{cand.message_id}"
    return message, schema


def proposals_document(found: list[Candidate], day: dt.date) -> dict:
    """The no_match candidates as an xRegistry 1.0 catalog document."""
    messages, schemas = {}, {}
    for cand in found:
        if cand.reason != "no_match":
            continue
        message, schema = definition(cand)
        messages[cand.message_id] = message
        if schema is not None:
            schemas[cand.message_id] = {"schemaid": cand.message_id, "format": SCHEMA_FORMAT, "defaultversionid": "1",
                                        "versions": {"1": {"versionid": "1", "format": SCHEMA_FORMAT, "schema": schema}}}
    document: dict = {"specversion": "1.0", "registryid": "catalake-drift",
                      "description": f"Message definitions proposed from the unmatched records of {day.isoformat()}",
                      "messagegroups": {GROUP: {"messagegroupid": GROUP, "messages": messages}}}
    if schemas:
        document["schemagroups"] = {GROUP: {"schemagroupid": GROUP, "schemas": schemas}}
    return document


def markdown(found: list[Candidate], proposals: dict) -> str:
    """The report as a table (the `catalog_drift` asset's preview), with each candidate's
    proposed attribute values from `proposals` (proposals_document's, not inferred again)."""
    if not found:
        return "No unmatched records."
    messages = proposals["messagegroups"][GROUP]["messages"]
    lines = ["| kind | type | protocol | records | first seen | last seen | proposal |", "|---|---|---|---|---|---|---|"]
    for cand in found:
        attrs = messages.get(cand.message_id, {}).get("envelopemetadata", {}) if cand.reason == "no_match" else {}
        proposal = ", ".join(f"{k}=`{v['value']}`" for k, v in attrs.items() if k != "type") if cand.reason == "no_match" \
            else "matches " + ", ".join(sorted(cand.candidates))
        lines.append(f"| {cand.reason} | `{cand.type or '-'}` | {cand.protocol or '-'} | {cand.count} | "
                     f"{min(cand.times).isoformat() if cand.times else '-'} | {max(cand.times).isoformat() if cand.times else '-'} | "
                     f"{proposal or '-'} |")
    return "\n".join(lines)


def deadletter_rows(warehouse, day: dt.date) -> list[dict]:
    """The day's `no_match` and `ambiguous` dead letters (the columns the report reads)."""
    from deltalake import DeltaTable

    from ..uris import Location
    from ..warehouse.deadletters import DEADLETTER_TABLE
    from ..warehouse.files import read_snapshot

    location = Location.of(warehouse).child(DEADLETTER_TABLE)
    options = location.delta_options()
    if not DeltaTable.is_deltatable(location.uri, storage_options=options):
        return []
    table = read_snapshot(
        DeltaTable(location.uri, storage_options=options), location, partitions=[("event_date", "=", day.isoformat())],
        columns=["reason", "raw", "source_file", "source_line", "candidates"],
        filters=[("reason", "in", ["no_match", "ambiguous"])],
    )
    return table.to_pylist()
