"""JSON Schema (draft-04, -06, -07, 2019-09, 2020-12) -> Spark type.

Mapping (documented here because analysts query the result):

* object with properties -> struct; a property is non-nullable only when `required` and its
  type does not admit null. `additionalProperties`/`patternProperties` with a schema and no
  properties -> map<string, T>. An open object with neither -> JSON string.
* array -> array<T> (`items`; tuple forms `prefixItems`/list `items` -> JSON string).
* string -> string; `format: date-time` -> timestamp; `format: date` -> date.
* integer -> long; number -> double; boolean -> boolean; `null` alone -> string.
* `enum`/`const` -> the type of their values (mixed -> string).
* type arrays: "null" makes the column nullable; several other types follow the union rule.
* `allOf` -> the members merged into one schema (properties, required, type).
* `oneOf`/`anyOf` (the union rule): null members only make the result nullable; one member
  left -> that member; all objects -> one struct with every member's fields, all nullable;
  all numbers -> double (integer+number) or the common type; anything else -> JSON string.
* `$ref` (within the document and across documents of the registry) is resolved with the
  `referencing` library; a `$ref` that re-enters a schema already being mapped (recursion), or
  nesting deeper than MAX_DEPTH, becomes a JSON string column.
"""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import urlparse

from pyspark.sql.types import (ArrayType, BooleanType, DataType, DateType, DoubleType, LongType, MapType, StringType,
                               StructField, StructType, TimestampType)
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7, specification_with

from ..errors import EndlessReference, InvalidConstraint, NeverFollowed, PatternError, SchemaError
from ..patterns import compile_pattern
from . import keys
from .unions import JSON_STRING, union_type

MAX_DEPTH = 16






NEVER_FOLLOWED = ("http", "https", "ftp", "ws", "wss", "file")
# keywords whose subschemas apply to the same instance (a cycle through them reads nothing)
SAME_INSTANCE = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "$ref")
# keywords whose subschemas apply to a part of the instance
DESCENDING = ("properties", "patternProperties", "additionalProperties", "items", "prefixItems", "additionalItems",
              "contains", "propertyNames", "dependentSchemas", "unevaluatedItems", "unevaluatedProperties")

COUNTS = ("minLength", "maxLength", "minItems", "maxItems")
BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")

CONSTRAINTS = ("enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
               "minLength", "maxLength", "pattern", "format", "minItems", "maxItems")


def constraints(schema: dict) -> dict:
    """The value constraints of one schema node that the platform checks natively (payload.py)
    and turns into expectations; draft-04's boolean exclusiveMinimum/Maximum become the numbers
    of later drafts."""
    out = {k: schema[k] for k in CONSTRAINTS if k in schema}
    for key in COUNTS:
        if key in out and not valid_count(out[key]):
            raise InvalidConstraint(f"{key} {out[key]!r} is not a non-negative integer")
    for key in BOUNDS:
        if key in out and not (isinstance(out[key], bool) and key.startswith("exclusive")) and not valid_bound(out[key]):
            raise InvalidConstraint(f"{key} {out[key]!r} is not a finite number")
    if "pattern" in out:
        if not isinstance(out["pattern"], str):
            raise InvalidConstraint(f"pattern {out['pattern']!r} is not a string")
        try:
            compile_pattern(out["pattern"])
        except PatternError as exc:
            raise InvalidConstraint(str(exc)) from None
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if out.get(bound) is True and limit in out:
            out[bound] = out.pop(limit)
        elif isinstance(out.get(bound), bool):
            out.pop(bound)
    if schema.get("additionalProperties") is False and isinstance(schema.get("properties"), dict):
        out["closed"] = sorted(schema["properties"])
    return out


def valid_count(value) -> bool:
    """minLength & co: a non-negative integer (JSON Schema validation 6.3.1); a boolean is none."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def valid_bound(value) -> bool:
    """minimum & co: a number (6.2), finite (`1e999` reads as infinity and has no SQL literal)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def resource(schema: dict) -> Resource:
    """A referencing Resource; the dialect comes from `$schema` (draft-07 when absent or unknown)."""
    dialect = schema.get("$schema") if isinstance(schema, dict) else None
    spec = specification_with(dialect, default=DRAFT7) if dialect else DRAFT7
    return spec.create_resource(schema)


def _base_type(types: set[str]) -> str | None:
    return next(iter(types)) if len(types) == 1 else None


def forbid_external(ref) -> None:
    """A `$ref` to the network or to a file that the catalog's own schemas do not answer (by
    their `$id`) is refused as a `dataschemauri` to the same is (schemas/references.py):
    nothing outside the catalog is read."""
    if isinstance(ref, str) and urlparse(ref).scheme.lower() in NEVER_FOLLOWED:
        raise NeverFollowed(f"$ref {ref!r} points to the network or a file; it is never followed "
                            "(put the schema in the catalog's registry)")


def _subschemas(schema: dict, keywords: tuple[str, ...]) -> list:
    """The subschemas of `schema` under these keywords (maps and lists of schemas flattened)."""
    out = []
    for key in keywords:
        value = schema.get(key)
        if key in ("properties", "patternProperties", "dependentSchemas") and isinstance(value, dict):
            out += list(value.values())
        elif isinstance(value, list):
            out += value
        elif isinstance(value, dict):
            out.append(value)
    return out


class _Mapper:
    def __init__(self, registry: Registry, base_uri: str):
        self.registry = registry
        self.base_uri = base_uri

    # -- schema plumbing
    def deref(self, schema: Any, resolver, seen: tuple[int, ...]):
        """Follow `$ref`s; returns (schema, resolver, seen) or a recursion marker."""
        while isinstance(schema, dict) and "$ref" in schema:
            ref = schema["$ref"]
            try:
                resolved = resolver.lookup(ref)
            except Exception as exc:  # noqa: BLE001 - referencing raises several Unresolvable subclasses
                forbid_external(ref)
                raise SchemaError(f"$ref {ref!r} does not resolve: {exc}") from None
            key = id(resolved.contents)  # registry contents are stable objects: identity names the sub-schema
            if key in seen:
                return None, resolver, seen
            siblings = {k: v for k, v in schema.items() if k not in ("$ref", "$schema", "$id", "definitions", "$defs")}
            schema = {**resolved.contents, **siblings} if siblings and isinstance(resolved.contents, dict) else resolved.contents
            resolver, seen = resolved.resolver, seen + (key,)
        return schema, resolver, seen

    def merge_all_of(self, schema: dict, resolver, seen) -> dict:
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            part, _, _ = self.deref(part, resolver, seen)
            if not isinstance(part, dict):
                continue
            if "allOf" in part:
                part = self.merge_all_of(part, resolver, seen)
            for key, value in part.items():
                if key == "properties":
                    merged["properties"] = {**merged.get("properties", {}), **value}
                elif key == "required":
                    merged["required"] = sorted(set(merged.get("required", [])) | set(value))
                elif key == "type" and "type" in merged and merged["type"] != value:
                    left = set(merged["type"]) if isinstance(merged["type"], list) else {merged["type"]}
                    right = set(value) if isinstance(value, list) else {value}
                    both = left & right or (left | right)
                    merged["type"] = sorted(both) if len(both) > 1 else next(iter(both))
                else:
                    merged.setdefault(key, value)
        return merged

    def refuse_endless(self, schema: Any, resolver, chain: tuple[int, ...], done: set[int]) -> None:
        """EndlessReference when some `$ref` leads back to a schema applying to the same instance
        without reading any of it (through `$ref`, `allOf`, `anyOf`, `oneOf`, `not`, `if`...)."""
        if not isinstance(schema, dict):
            return
        key = id(schema)
        if key in chain:
            raise EndlessReference("the data schema refers to itself without end (a $ref cycle that reads no data)")
        if key in done:
            return
        chain += (key,)
        for member in _subschemas(schema, SAME_INSTANCE[:-1]):
            self.refuse_endless(member, resolver, chain, done)
        if isinstance(schema.get("$ref"), str):
            try:
                resolved = resolver.lookup(schema["$ref"])
            except Exception:  # noqa: BLE001 - the mapping reports an unresolvable $ref
                forbid_external(schema["$ref"])
                resolved = None
            if resolved is not None:
                self.refuse_endless(resolved.contents, resolved.resolver, chain, done)
        done.add(key)
        for child in _subschemas(schema, DESCENDING):
            self.refuse_endless(child, resolver, (), done)

    # -- mapping
    def map(self, schema: Any, resolver, seen: tuple[int, ...], depth: int) -> tuple[DataType, bool, dict]:
        """(Spark type, nullable, field metadata) for one schema; its value constraints ride along
        in the metadata (`catalake.check`, see constraints())."""
        dtype, nullable, meta = self._map(schema, resolver, seen, depth)
        deref, _, _ = self.deref(schema, resolver, seen)
        checks = constraints(deref) if isinstance(deref, dict) else {}
        if checks and keys.JSON not in meta:
            meta = {**meta, keys.CHECK: checks}
        return dtype, nullable, meta

    def _map(self, schema: Any, resolver, seen: tuple[int, ...], depth: int) -> tuple[DataType, bool, dict]:
        schema, resolver, seen = self.deref(schema, resolver, seen)
        if schema is None or depth > MAX_DEPTH:
            return StringType(), True, {**JSON_STRING, keys.RECURSION: True}
        if schema is True or schema == {} or not isinstance(schema, dict):
            return StringType(), True, dict(JSON_STRING)
        if "allOf" in schema:
            schema = self.merge_all_of(schema, resolver, seen)
        for key in ("oneOf", "anyOf"):
            if key in schema:
                return self.union(schema[key], schema, resolver, seen, depth)
        types = schema.get("type")
        types = set(types) if isinstance(types, list) else {types} if types else set()
        nullable = "null" in types
        types.discard("null")
        if not types:
            types = self.infer_types(schema)
        if len(types) > 1:
            members = [{**schema, "type": t} for t in sorted(types)]
            dtype, _, meta = self.union(members, {}, resolver, seen, depth)
            return dtype, True, meta
        kind = _base_type(types)
        if kind == "object":
            dtype, meta = self.object(schema, resolver, seen, depth)
            return dtype, nullable, meta
        if kind == "array":
            dtype, meta = self.array(schema, resolver, seen, depth)
            return dtype, nullable, meta
        if kind == "string":
            fmt = schema.get("format")
            return (TimestampType() if fmt == "date-time" else DateType() if fmt == "date" else StringType()), nullable, {}
        if kind == "integer":
            return LongType(), nullable, {}
        if kind == "number":
            return DoubleType(), nullable, {}
        if kind == "boolean":
            return BooleanType(), nullable, {}
        return StringType(), True, dict(JSON_STRING)

    @staticmethod
    def infer_types(schema: dict) -> set[str]:
        if "properties" in schema or "additionalProperties" in schema or "patternProperties" in schema:
            return {"object"}
        if "items" in schema or "prefixItems" in schema:
            return {"array"}
        values = schema.get("enum", [schema["const"]] if "const" in schema else None)
        if values:
            kinds = set()
            for v in values:
                if v is None:
                    continue
                kinds.add("boolean" if isinstance(v, bool) else "integer" if isinstance(v, int) else "number"
                          if isinstance(v, float) else "string" if isinstance(v, str) else "json")
            if kinds == {"integer", "number"}:
                return {"number"}
            return kinds if len(kinds) == 1 and "json" not in kinds else {"json"}
        return set()

    def object(self, schema: dict, resolver, seen, depth):
        props = schema.get("properties") or {}
        if not props:
            extra = schema.get("additionalProperties")
            patterns = list((schema.get("patternProperties") or {}).values())
            value_schema = extra if isinstance(extra, dict) else patterns[0] if len(patterns) == 1 else None
            if value_schema is not None:
                vtype, _, vmeta = self.map(value_schema, resolver, seen, depth + 1)
                return MapType(StringType(), vtype, True), {keys.VALUES: vmeta} if vmeta else {}
            return StringType(), {**JSON_STRING, keys.KIND: "object"}  # open object without properties: kept as JSON text
        required = set(schema.get("required") or [])
        fields = []
        for name, prop in props.items():
            dtype, nullable, meta = self.map(prop, resolver, seen, depth + 1)
            description = prop.get("description") if isinstance(prop, dict) else None
            if description:
                meta = {**meta, "comment": description}
            fields.append(StructField(name, dtype, nullable or name not in required, meta))
        return StructType(fields), {}

    def array(self, schema: dict, resolver, seen, depth) -> tuple[DataType, dict]:
        """The array type, and its items' metadata (`catalake.items`: their checks)."""
        items = schema.get("items")
        if isinstance(items, list) or "prefixItems" in schema:
            return StringType(), dict(JSON_STRING)  # tuples have no Spark equivalent: JSON text
        if items is None:
            return ArrayType(StringType(), True), {keys.ITEMS: dict(JSON_STRING)}
        dtype, _, meta = self.map(items, resolver, seen, depth + 1)
        return ArrayType(dtype, True), {keys.ITEMS: meta} if meta else {}

    def union(self, members: list, parent: dict, resolver, seen, depth) -> tuple[DataType, bool, dict]:
        nullable = False
        mapped: list[tuple[DataType, dict]] = []
        for member in members:
            base = {k: v for k, v in parent.items() if k not in ("oneOf", "anyOf")}
            deref, mres, mseen = self.deref(member, resolver, seen)
            if deref is None:
                mapped.append((StringType(), {**JSON_STRING, keys.RECURSION: True}))
                continue
            if isinstance(deref, dict) and (deref.get("type") == "null" or deref.get("const", 0) is None):
                nullable = True
                continue
            if isinstance(deref, dict) and base:
                deref = {**base, **deref}
            dtype, mnull, meta = self.map(deref, mres, mseen, depth)
            nullable = nullable or mnull
            mapped.append((dtype, meta))
        if not mapped:
            return StringType(), True, dict(JSON_STRING)
        if len(mapped) == 1:
            return mapped[0][0], nullable, mapped[0][1]
        dtype, meta = union_type(mapped)
        return unchecked(dtype), nullable or meta == JSON_STRING, _unchecked_meta(meta)


def _unchecked_meta(meta: dict) -> dict:
    """Column metadata without value checks, at any depth: a check of one member of a union is
    no check of the union (jsonschema decides those keywords, coverage.uncompiled)."""
    return {k: _unchecked_meta(v) if k in (keys.ITEMS, keys.VALUES) and isinstance(v, dict) else v
            for k, v in meta.items() if k != keys.CHECK}


def unchecked(dtype: DataType) -> DataType:
    """A union's type with no member's value checks in its fields (`_unchecked_meta`)."""
    if isinstance(dtype, StructType):
        return StructType([StructField(f.name, unchecked(f.dataType), f.nullable, _unchecked_meta(f.metadata)) for f in dtype.fields])
    if isinstance(dtype, ArrayType):
        return ArrayType(unchecked(dtype.elementType), dtype.containsNull)
    if isinstance(dtype, MapType):
        return MapType(dtype.keyType, unchecked(dtype.valueType), dtype.valueContainsNull)
    return dtype


def json_schema_to_spark(
    schema: dict,
    registry: Registry | None = None,
    base_uri: str = "urn:catalake:data-schema",
    document: dict | None = None,
) -> tuple[DataType, bool]:
    dtype, nullable, _ = json_schema_field(schema, registry, base_uri, document)
    return dtype, nullable


def json_schema_field(
    schema: dict,
    registry: Registry | None = None,
    base_uri: str = "urn:catalake:data-schema",
    document: dict | None = None,
) -> tuple[DataType, bool, dict]:
    """The Spark type of values valid against `schema`, whether the value itself may be null,
    and the value's own metadata (its checks: a closed root object, a root enum, ...).

    `registry` holds the other documents `$ref` may point to (e.g. every JSON schema of the
    catalog's schema registry, under their `$id`s); `schema` is added to it under `base_uri`
    unless it has an `$id` of its own. When `schema` is a part of a larger `document` (a
    `:definitions/X` reference), `document` is what `#` refers to.
    """
    if not isinstance(schema, (dict, bool)):
        raise SchemaError(f"a JSON Schema must be an object or a boolean, not {type(schema).__name__}")
    registry = registry or Registry()
    root = document if document is not None else schema  # `$ref: "#/..."` is relative to the whole document
    if isinstance(root, dict) and isinstance(root.get("$id"), str) and root["$id"]:
        base_uri = root["$id"]
    registry = registry.with_resource(base_uri, resource(root) if isinstance(root, dict) else DRAFT7.create_resource(root))
    mapper = _Mapper(registry, base_uri)
    mapper.refuse_endless(schema, registry.resolver(base_uri), (), set())
    return mapper.map(schema, registry.resolver(base_uri), (), 0)
