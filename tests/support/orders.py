"""The shop catalog of the expectation tests (a rule of every kind on shop.Order, an Avro
shop.Tick) and its orders as CloudEvents."""

from __future__ import annotations

from support.classify import ce

ORDER_SCHEMA = {
    "type": "object",
    "required": ["order_id", "amount", "status", "placed_at"],
    "properties": {
        "order_id": {"type": "string", "pattern": "^O-[0-9]+$", "minLength": 3, "maxLength": 12},
        "amount": {"type": "number", "minimum": 0, "exclusiveMaximum": 10000},
        "status": {"enum": ["new", "paid"]},
        "channel": {"const": "web"},
        "placed_at": {"type": "string", "format": "date-time"},
        "customer": {"type": "object", "required": ["email"], "properties": {
            "email": {"type": "string", "format": "email"}, "id": {"type": "string", "format": "uuid"}}},
        "items": {"type": "array", "minItems": 1, "maxItems": 50, "items": {"type": "string"}},
    },
}
CATALOG = {
    "specversion": "1.0-rc2",
    "messagegroups": {
        "shop": {"messages": {
            "shop.Order": {
                "envelope": "CloudEvents/1.0",
                "envelopemetadata": {
                    "type": {"value": "shop.Order"},
                    "source": {"type": "uritemplate", "value": "/shops/{shop}"},
                    "subject": {"required": True},
                    "priority": {"type": "integer"},
                    "callback": {"type": "uri"},
                },
                "dataschemaformat": "JsonSchema/draft-07",
                "dataschema": ORDER_SCHEMA,
            },
            "shop.Tick": {
                "envelope": "CloudEvents/1.0",
                "envelopemetadata": {"type": {"value": "shop.Tick"}},
                "dataschemaformat": "Avro/1.11.1",
                "dataschema": {"type": "record", "name": "Tick", "fields": [
                    {"name": "level", "type": {"type": "enum", "name": "Level", "symbols": ["LOW", "HIGH"]}}]},
            },
        }},
    },
}


def _order(i, **data):
    payload = {"order_id": f"O-{i}", "amount": 10.0 + i, "status": "new", "placed_at": "2026-11-20T10:00:00Z",
               "customer": {"email": "a@b.example"}, "items": ["x"], **data}
    return ce("shop.Order", f"/shops/s{i % 2}", id=str(i), subject=f"order-{i}", time="2026-11-20T10:00:00Z",
              datacontenttype="application/json", data=payload)
