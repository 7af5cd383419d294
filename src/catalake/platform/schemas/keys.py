"""The keys catalake writes into a Spark field's metadata, named once: the schema mappings
(json_schema.py, json_structure.py, avro.py, protobuf.py, unions.py) write them, the payload
typing (payload.py), the tables (message_tables.py), the suites (expectations.py) and the
classifier read them. Delta keeps them in the table's schema."""

REQUIRED = "catalake.required"  # the catalog requires the field (not NOT NULL: Delta could not relax that later)
CHECK = "catalake.check"  # JSON Schema / JSON Structure validation keywords the suite and payload check
JSON = "catalake.json"  # the value is kept as JSON text
XML = "catalake.xml"  # the payload is kept as XML text
KIND = "catalake.kind"  # the JSON kind a JSON-text column holds ("object": an open object)
RECURSION = "catalake.recursion"  # a recursive type, cut off and kept as JSON text
FORMAT = "catalake.format"  # a string syntax (JSON Structure string-encoded types, uuid, ...)
RANGE = "catalake.range"  # the [min, max] of a type wider or narrower than its Spark column
ENCODING = "catalake.encoding"  # "string": the number arrives as a JSON string
UNIT = "catalake.unit"  # an Avro logical type's unit (millis, micros)
WIRE = "catalake.wire"  # the property's name on the wire (JSON Structure altnames)
ITEMS = "catalake.items"  # the metadata of an array's items
VALUES = "catalake.values"  # the metadata of a map's values
SCHEMA_ERROR = "catalake.schema_error"  # why the data schema is unavailable (payload kept as JSON text)
