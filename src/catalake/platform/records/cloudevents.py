"""CloudEvents 1.0 context attributes, listed once for every module that needs them: the record
reader (record.py), the catalog's implied attributes (catalog/resolve.py), the matcher
(matcher.py), the table columns (message_tables.py), the suites (expectations.py) and the
classifier. How an attribute's value is typed and checked is attributes.py."""

from __future__ import annotations

from typing import NamedTuple


class Attribute(NamedTuple):
    name: str
    required: bool  # REQUIRED in CloudEvents 1.0 ("Context Attributes")
    catalog_type: str  # its type in the xRegistry message spec's "CloudEvents/1.0" envelope
    description: str  # the table column's comment


# in the order of the tables' columns
ATTRIBUTES = (
    Attribute("specversion", True, "string", "CloudEvents specification version."),
    Attribute("id", True, "string", "Identifies the event; unique per source."),
    Attribute("source", True, "uritemplate", "Context in which the event happened."),
    Attribute("type", True, "string", "Type of event related to the originating occurrence."),
    Attribute("subject", False, "string", "Subject of the event in the context of the event producer."),
    Attribute("time", False, "timestamp", "When the occurrence happened."),
    Attribute("datacontenttype", False, "string", "Content type of the data value."),
    Attribute("dataschema", False, "uritemplate", "Schema that the data adheres to."),
)
BY_NAME = {a.name: a for a in ATTRIBUTES}
# the required ones, in the order a dead letter names the missing ones
REQUIRED = ("id", "source", "type", "specversion")
# the JSON event format ("Type System Mapping") writes every one of them (String, URI,
# URI-reference, Timestamp) as a JSON string
JSON_STRINGS = ("id", "source", "specversion", "type", "datacontenttype", "dataschema", "subject", "time")
# "Context Attributes": when present, each MUST be a non-empty string
NON_EMPTY = ("id", "source", "type", "subject")
ENVELOPE = "CloudEvents/1.0"  # the xRegistry message spec's name of the envelope


def is_envelope(name) -> bool:
    """Whether a definition's `envelope` is CloudEvents (any spelling of its name)."""
    return isinstance(name, str) and name.lower().startswith("cloudevents")


assert set(REQUIRED) == {a.name for a in ATTRIBUTES if a.required}
