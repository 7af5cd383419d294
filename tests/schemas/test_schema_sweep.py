"""Every message definition of the valid public catalogs: its schema resolves and maps, or says why not."""

from collections import Counter

from catalake.platform.catalog import load_catalog
from catalake.platform.schemas.derive import spark_type
from catalake.platform.schemas.json_schema import SchemaError
from catalake.platform.schemas.references import SchemaReferenceError, resolve_data_schema
from support.public_catalogs import VALID


def test_public_catalog_schemas(shared_data):
    outcome: Counter = Counter()
    for path, _, _ in VALID:
        catalog = load_catalog([shared_data / path])
        for message in catalog:
            try:
                schema = resolve_data_schema(message, catalog.schemagroups, [shared_data / path.split("/")[0]])
            except SchemaReferenceError as exc:
                assert message.xid in str(exc)  # a clear error names the message and the reference
                outcome["unresolvable reference"] += 1
                continue
            if schema is None:
                outcome["no schema"] += 1
                continue
            try:
                spark_type(schema)
                outcome[f"{schema.family} mapped"] += 1
            except SchemaError as exc:
                assert message.xid in str(exc)
                outcome[f"{schema.family} not mapped"] += 1
    assert outcome["jsonschema mapped"] == 140
    assert outcome["jsonstructure mapped"] == 259
    assert outcome["avro mapped"] == 138
    assert outcome["protobuf mapped"] == 19
    assert outcome["jsonschema not mapped"] == outcome["jsonstructure not mapped"] == outcome["avro not mapped"] == 0
    # minimal-proto.* (both copies) has a stray '}' in each of its 3 schemas: protoc's error, with line and column
    assert outcome["protobuf not mapped"] == 6
    # XSD is not mapped to Spark; the references that do not resolve are broken in the samples
    assert outcome["xsd not mapped"] == 5
    assert outcome["unresolvable reference"] == 40
