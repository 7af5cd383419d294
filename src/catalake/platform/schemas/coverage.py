"""Which JSON Schema keywords the compiled payload checks (payload.py) decide exactly: a data
schema using others (`not`, `if`, `dependentRequired`, `uniqueItems`, `multipleOf`, a `required`
name not under `properties`, a type list, ...: `uncompiled`) is also validated by jsonschema itself
(the classifier), and every error it finds counts."""

from __future__ import annotations

from typing import Any

from ..jsonvalues import is_number

# every JSON Schema keyword (draft-04 to 2020-12) that asserts something of an instance; the
# others (title, $comment, format, vendor keywords, ...) only describe it
ASSERTIONS = {
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
    "maxProperties", "minProperties", "required", "dependentRequired", "dependencies", "properties",
    "patternProperties", "additionalProperties", "items", "prefixItems", "additionalItems", "contains",
    "propertyNames", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas",
    "unevaluatedItems", "unevaluatedProperties", "$ref", "$recursiveRef", "$dynamicRef",
}
# the ones the typing and the suite compile (json_schema.py maps them, `constraints` carries their
# values), each under the conditions `_uncompiled_here` checks
COMPILED = {
    "type", "enum", "const", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength",
    "minLength", "pattern", "maxItems", "minItems", "required", "properties", "additionalProperties", "items", "$ref",
}
# the keywords whose values are schemas (or maps or lists of schemas), walked for more keywords
SUBSCHEMAS = {
    "properties", "patternProperties", "additionalProperties", "items", "prefixItems", "additionalItems",
    "contains", "propertyNames", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas",
    "dependencies", "unevaluatedItems", "unevaluatedProperties", "definitions", "$defs", "contentSchema",
}
BY_KIND = {"number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
           "string": {"minLength", "maxLength", "pattern"}, "array": {"minItems", "maxItems", "items"},
           "object": {"properties", "additionalProperties", "required"}}


def uncompiled(schema: Any) -> set[str]:
    """The assertion keywords of a JSON Schema document that the native typing and checks do not
    compile exactly (`not`, `multipleOf`, a `required` name not under `properties`, a type
    list, ...), anywhere in it."""
    found: set[str] = set()
    if isinstance(schema, dict):
        found |= _uncompiled_here(schema)
        for key in SUBSCHEMAS & schema.keys():
            value = schema[key]
            children = value.values() if key in ("properties", "patternProperties", "definitions", "$defs",
                                                 "dependentSchemas", "dependencies") and isinstance(value, dict) else [value]
            for child in children:
                found |= uncompiled(child)
    elif isinstance(schema, list):
        for child in schema:
            found |= uncompiled(child)
    elif schema is False:
        found.add("false")
    return found


def _scalar_kind(values: list) -> str | None:
    """'string' or 'number' when every value of an enum/const is of that JSON kind (null aside),
    the values the native check compares; None otherwise."""
    kinds = {"string" if isinstance(v, str) else "number" if is_number(v) else "other" for v in values if v is not None}
    return next(iter(kinds)) if len(kinds) == 1 and "other" not in kinds else None


def _not_null(schema) -> bool:
    """Whether a property's column is null only when the property is absent (its schema has one
    type, not null; a `$ref` is taken to name such a schema): then `required` is its not-null check."""
    if not isinstance(schema, dict):
        return False
    if set(schema) & ASSERTIONS == {"$ref"}:
        return True
    declared = schema.get("type")
    if declared is None:  # an enum or const of one scalar kind without null: never a null column when present
        values = schema["enum"] if isinstance(schema.get("enum"), list) else [schema["const"]] if "const" in schema else None
        return values is not None and None not in values and _scalar_kind(values) is not None
    return isinstance(declared, str) and declared != "null"


def _uncompiled_here(node: dict) -> set[str]:
    """One schema node's assertion keywords that its mapping (json_schema.py) does not check exactly."""
    found = (ASSERTIONS & node.keys()) - COMPILED
    declared = node.get("type")
    types = declared if isinstance(declared, list) else [declared] if declared is not None else []
    kinds = [t for t in types if t != "null"]
    if len(kinds) > 1 or (types and not kinds):  # a union kept as JSON text, or null alone: nothing checked
        found |= ASSERTIONS & node.keys()
    values = node["enum"] if isinstance(node.get("enum"), list) else [node["const"]] if "const" in node else None
    if values is not None and _scalar_kind(values) is None:
        found.add("enum" if "enum" in node else "const")
    kind = kinds[0] if len(kinds) == 1 else None
    kind = "number" if kind == "integer" else kind
    if not types:  # the type is inferred, for every instance; JSON Schema applies keywords by kind
        inferred = {k for k, names in BY_KIND.items() if names & node.keys()}
        if inferred or (values is None and ASSERTIONS & node.keys() - {"$ref"}):
            found |= ASSERTIONS & node.keys() - {"$ref"}
    if kind == "string" and node.get("format") in ("date-time", "date"):
        found |= {"minLength", "maxLength", "pattern", "enum", "const"} & node.keys()  # a timestamp or date column: no text left
    properties = node.get("properties") if isinstance(node.get("properties"), dict) else {}
    if kind == "object":
        required = node.get("required") or []
        if not isinstance(required, list) or not all(name in properties and _not_null(properties[name]) for name in required):
            found.add("required")  # a property not mapped, or whose column is null when present
        extra = node.get("additionalProperties", True)
        if not (extra is True or (extra is False and properties) or (isinstance(extra, dict) and not properties
                                                                       and "patternProperties" not in node)):
            found.add("additionalProperties")
    if kind == "array" and not (node.get("items", True) is True or isinstance(node.get("items"), dict)):
        found.add("items")
    if "$ref" in node and ASSERTIONS & node.keys() - {"$ref"}:
        found |= ASSERTIONS & node.keys()  # siblings of a $ref: merged by the mapping, both apply in 2019-09 and later
    return found
