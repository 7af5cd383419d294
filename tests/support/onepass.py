"""A day classified by the executor code itself (no Spark, no Delta commit): a catalog and
landed records written to tmp dirs, one task run, and the Parquet files it wrote read back."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pyarrow.parquet as pq

from catalake.platform.catalog import load_catalog
from catalake.platform.landing.listing import partition_files
from catalake.platform.landing.planning import plan_tasks
from catalake.platform.runs.classifier import Classifier
from catalake.platform.warehouse.message_tables import message_tables
from support.runs import plan_for

DAY = dt.date(2026, 11, 20)


def run_day(tmp_path: Path, messages: dict | None, records: list, group: str = "g", document: dict | None = None) -> tuple:
    """(task result, {table: rows as dicts}) for `records` (objects, or raw lines as str), with
    the definitions `messages` of one group, or a whole catalog `document`."""
    catalog = tmp_path / "catalog"
    catalog.mkdir(exist_ok=True)
    document = document if document is not None else {"messagegroups": {group: {"messages": messages}}}
    (catalog / "c.xreg.json").write_text(json.dumps(document))
    day = tmp_path / "landing" / DAY.isoformat()
    day.mkdir(parents=True, exist_ok=True)
    (day / "a.jsonl").write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    tables, _ = message_tables(load_catalog([catalog]), [catalog])
    warehouse = tmp_path / "warehouse"
    plan = plan_for(tables, warehouse, DAY)
    pieces = [p for task in plan_tasks(None, partition_files(tmp_path / "landing", DAY), 1) for p in task]
    result = Classifier(plan).run("0", pieces)
    rows = {name: [row for rel, *_ in files for row in pq.read_table(warehouse / name / rel).to_pylist()]
            for name, files in result.files.items()}
    return result, rows


def structure_message(schema: dict, ctype: str = "t.T", **more) -> dict:
    """A CloudEvents definition of type `ctype` whose data schema is inline JSON Structure."""
    return {"envelope": "CloudEvents/1.0", "envelopemetadata": {"type": {"value": ctype}},
            "dataschemaformat": "JsonStructure/1.0", "dataschema": schema, **more}


def event(data, ctype: str = "t.T", n: int = 1, **attrs) -> dict:
    return {"specversion": "1.0", "id": str(n), "source": "/s", "type": ctype,
            "datacontenttype": "application/json", "data": data, **attrs}


def _text(decl, placeholder) -> str | None:
    """A declared attribute/option value as a producer fills it in (templates expanded)."""
    if not isinstance(decl, dict):
        return None
    value, kind = decl.get("value"), str(decl.get("type") or "string").lower()
    if value is not None:
        text = str(value).lower() if isinstance(value, bool) else str(value)
        return re.sub(r"\{[^}]*\}", lambda m: placeholder(m.group(0)[1:-1]), text)
    if not decl.get("required"):
        return None
    return {"uri": "https://example.com/x", "timestamp": "2026-11-20T10:00:00Z", "integer": "1",
            "boolean": "true", "binary": "AA=="}.get(kind, "x")


def record_for(message, data, n: int) -> dict:
    """A landed record that matches `message` (a MessageDefinition), carrying `data` as JSON:
    a structured CloudEvent, or a binary-mode protocol record of its binding."""
    def placeholder(name: str) -> str:
        if name.lstrip("+#./;?&").rstrip("*") in ("event_time", "timestamp", "incident_datetime_utc", "entrytime"):
            return "2026-11-20T10:00:00Z"
        return f"v{n}"

    attrs = {}
    if (message.envelope or "").lower().startswith("cloudevents"):
        attrs = {"specversion": "1.0", "id": str(n), "source": "/s", "time": "2026-11-20T10:00:00Z"}
        for name, decl in message.attributes.items():
            text = _text(decl, placeholder)
            if text is not None and not (name == "dataschema" and text.startswith(("#", "/schemagroups/"))):
                attrs[name] = text
        attrs["datacontenttype"] = "application/json"
    protocol = (message.protocol or "").upper()
    options = {name: _text(decl, placeholder) if "value" in decl or "required" in decl else
               {k: _text(v, placeholder) for k, v in decl.items()}
               for name, decl in message.protocol_options.items() if isinstance(decl, dict)}
    payload = json.dumps(data)
    if protocol.startswith("KAFKA"):
        headers = {f"ce_{k}": v for k, v in attrs.items() if k != "datacontenttype"}
        headers.update(options.get("headers") or {})
        return {"topic": options.get("topic") or "t", "partition": 0, "offset": n, "key": options.get("key"),
                "headers": {**headers, "content-type": "application/json"}, "payload": payload}
    if protocol.startswith("MQTT"):
        props = [{"name": k, "value": v} for k, v in attrs.items() if k != "datacontenttype"]
        return {"protocol": message.protocol, "topic_name": options.get("topic_name") or "t", "qos": 1,
                "user_properties": props, "content_type": "application/json", "payload": payload}
    if protocol.startswith("AMQP"):
        app = {f"cloudEvents:{k}": v for k, v in attrs.items() if k != "datacontenttype"}
        app.update({k: v for k, v in (options.get("application_properties") or {}).items() if v is not None})
        props = {k: v for k, v in (options.get("properties") or {}).items() if v is not None}
        annotations = {k: v for k, v in (options.get("message_annotations") or {}).items() if v is not None}
        return {"protocol": message.protocol, "properties": {**props, "content-type": "application/json"},
                "application_properties": app, "message_annotations": annotations, "body": payload}
    return {**attrs, "data": data}
