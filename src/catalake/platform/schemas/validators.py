"""A data schema's own validator and decoder, as executors run them (plain Python): jsonschema
for JSON Schema, fastavro for Avro. The classifier asks them where the compiled payload checks
cannot decide (keywords not compiled exactly, several candidate definitions) and to decode
Avro binary payloads. Which language has which is its entry in languages.py."""

from __future__ import annotations

import base64
import datetime as dt
import io
from functools import lru_cache
from typing import Any, Callable, NamedTuple

import orjson
from referencing.exceptions import Unresolvable

from ..patterns import compile_pattern
from ..records.record import MISSING
from .avro import named_type

MAX_ERRORS = 3  # validation errors kept in a dead-letter detail
ENDLESS_REF = ("data:$ref", "data: the data schema refers to itself without end (a $ref cycle that reads no data)")
UNRESOLVED_REF = ("data:$ref", "data: a $ref of the data schema points nowhere")
# jsonschema's keyword -> the rule the native checks and the suite name it by
NATIVE_RULES = {"minimum": "range", "maximum": "range", "exclusiveMinimum": "range", "exclusiveMaximum": "range",
                "minLength": "length", "maxLength": "length", "const": "enum", "minItems": "items", "maxItems": "items"}


class ValidatorSpec(NamedTuple):
    """What a data schema's validator (and decoder) is built from, on an executor."""

    family: str  # the schema language (languages.py)
    content: Any  # the schema (the referenced part of its document)
    document: Any  # the whole document it is part of (JSON Schema `$ref`s resolve in it)
    type_name: str | None  # the Avro named type the definition refers to


def jsonschema_validator(content, document):
    import jsonschema
    from referencing import Registry

    from .json_schema import resource

    root = document if isinstance(document, dict) else content
    registry = Registry().with_resource("urn:catalake:data-schema", resource(root))
    # without `$schema`, draft-07, as the mapping reads it (json_schema.py `resource`)
    cls = _linear_patterns(jsonschema.validators.validator_for(root if isinstance(root, dict) else {},
                                                               default=jsonschema.Draft7Validator))
    return cls(content, registry=registry, format_checker=cls.FORMAT_CHECKER)


@lru_cache(maxsize=None)
def _linear_patterns(cls):
    """jsonschema's validator class with its three pattern keywords on catalake's patterns (RE2, or
    a time budget: patterns.py): jsonschema runs them with Python's backtracking `re`, where one
    hostile value could stall a task. Their bodies follow jsonschema's own `_keywords`."""
    import jsonschema
    from jsonschema.exceptions import ValidationError

    def additional(instance, schema):
        properties, patterns = schema.get("properties", {}), [compile_pattern(p) for p in schema.get("patternProperties", {})]
        return [k for k in instance if k not in properties and not any(p.search(k) for p in patterns)]

    def pattern(validator, patrn, instance, schema):
        if validator.is_type(instance, "string") and compile_pattern(patrn).search(instance) is None:
            yield ValidationError(f"{instance!r} does not match {patrn!r}")

    def pattern_properties(validator, pattern_properties, instance, schema):
        if validator.is_type(instance, "object"):
            for patrn, subschema in pattern_properties.items():
                for k, v in instance.items():
                    if compile_pattern(patrn).search(k):
                        yield from validator.descend(v, subschema, path=k, schema_path=patrn)

    def additional_properties(validator, ap, instance, schema):
        if not validator.is_type(instance, "object"):
            return
        extras = set(additional(instance, schema))
        if validator.is_type(ap, "object"):
            for extra in extras:
                yield from validator.descend(instance[extra], ap, path=extra)
        elif not ap and extras:
            if "patternProperties" in schema:
                verb = "does" if len(extras) == 1 else "do"
                joined = ", ".join(repr(each) for each in sorted(extras))
                patterns = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
                yield ValidationError(f"{joined} {verb} not match any of the regexes: {patterns}")
            else:
                names = sorted(extras, key=str)
                verb = "was" if len(names) == 1 else "were"
                yield ValidationError(f"Additional properties are not allowed ({', '.join(map(repr, names))} {verb} unexpected)")

    return jsonschema.validators.extend(cls, {"pattern": pattern, "patternProperties": pattern_properties,
                                              "additionalProperties": additional_properties})


def schema_errors(validator, value) -> list | tuple[str, str]:
    """jsonschema's errors for `value`, by path; or, when the schema cannot finish, the one
    (rule, message) that says why: it recurses without end (`{"$ref": "#"}` is a valid schema
    that no validator can finish), or a `$ref` it reaches points nowhere (the schema's own fault,
    for every record it is asked about: never the task's)."""
    try:
        return sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    except RecursionError:
        return ENDLESS_REF
    except Unresolvable as exc:
        return UNRESOLVED_REF[0], f"{UNRESOLVED_REF[1]} ({exc})"


def jsonschema_rule(error) -> tuple[str, str]:
    """A jsonschema error as (rule id, message), named as the native checks name theirs
    (`data.a:type`; a missing property at the property: `data.a:required`)."""
    path = "data" + "".join(f".{p}" for p in error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [n for n in error.validator_value if n not in error.instance]
        name = next((n for n in missing if error.message.startswith(repr(n))), None)
        if name is not None:
            return f"{path}.{name}:required", f"{path}.{name}: is a required property"
    return f"{path}:{NATIVE_RULES.get(error.validator, error.validator)}", f"{path}: {error.message}"


def jsonschema_errors(spec: ValidatorSpec) -> Callable[[Any], list[str]]:
    """The JSON Schema's validator: value -> its first error messages."""
    validator = jsonschema_validator(spec.content, spec.document)

    def errors(value) -> list[str]:
        found = schema_errors(validator, value)
        if isinstance(found, tuple):
            return [found[1]]
        return [f"data{''.join(f'.{p}' for p in e.absolute_path)}: {e.message}" for e in found[:MAX_ERRORS]]

    return errors


def avro_errors(spec: ValidatorSpec) -> Callable[[Any], list[str]]:
    """The Avro schema's validator: value -> its first error messages."""
    import fastavro
    from fastavro.validation import ValidationError, validate

    parsed = fastavro.parse_schema(named_type(spec.content, spec.type_name))

    def errors(value) -> list[str]:
        try:
            validate(value, parsed, raise_errors=True)
            return []
        except ValidationError as exc:
            return [f"data: {e}" for e in exc.errors[:MAX_ERRORS]] or ["data: does not match the Avro schema"]
        except Exception as exc:  # noqa: BLE001 - fastavro raises plain errors for some shapes
            return [f"data: {exc}"]

    return errors


def _avro_json(value):
    # logical types back to the JSON encoding the payload typing expects (payload.py)
    if isinstance(value, dt.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, dt.date):
        return (value - dt.date(1970, 1, 1)).days
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return str(value)


def avro_decoder(spec: ValidatorSpec) -> Callable[[str], Any]:
    """Base64 Avro binary (schemaless, per the definition's schema) -> its JSON value, or MISSING."""
    import fastavro

    parsed = fastavro.parse_schema(named_type(spec.content, spec.type_name))

    def decode(blob: str):
        try:
            record = fastavro.schemaless_reader(io.BytesIO(base64.b64decode(blob)), parsed, parsed)
            return orjson.loads(orjson.dumps(record, default=_avro_json))
        except Exception:  # noqa: BLE001 - any decoding failure is a malformed payload
            return MISSING

    return decode
