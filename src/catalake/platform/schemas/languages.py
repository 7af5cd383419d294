"""The data schema languages, one entry each: what a definition's `dataschemaformat` is called,
the payload's content type when the definition names none, how the schema becomes the Spark type
of `data` (derive.py calls it), and the schema's own validator and decoder on executors
(validators.py). Adding a language is an entry here and its module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

from pyspark.sql.types import DataType

from .avro import avro_to_spark, named_type
from .json_schema import SchemaError, json_schema_field
from .json_structure import json_structure_field
from .protobuf import protobuf_to_spark
from .validators import avro_decoder, avro_errors, jsonschema_errors


class Mapped(NamedTuple):
    """A data schema as the table's `data` column: what every language's `derive` answers."""

    type: DataType
    nullable: bool
    meta: dict  # the payload's own field metadata (its root checks, schemas/keys.py)


@dataclass(frozen=True)
class Language:
    family: str
    names: tuple[str, ...]  # `dataschemaformat` names (before the "/", lower case, no "-" or spaces)
    content_type: str | None  # the payload's content type when the definition names none
    derive: Callable[[Any], tuple] | None  # schema -> (Spark type, nullable, metadata), as a Mapped; None: kept as text
    json_text: bool = False  # a registry may hold the schema as JSON text
    validator: Callable | None = None  # ValidatorSpec -> (value -> error messages), for what compiled checks leave open
    decoder: Callable | None = None  # ValidatorSpec -> (base64 payload -> its JSON value), for binary encodings
    aliases: tuple[str, ...] = ()  # names also read as this language, that imply no content type


def _avro(schema) -> tuple:
    try:
        content = named_type(schema.content, schema.type_name)
    except SchemaError as exc:
        raise SchemaError(f"{schema.message}: {exc} in {schema.reference!r}") from None
    return (*avro_to_spark(content, {} if content is not schema.content else None), {})


LANGUAGES = (
    Language("jsonschema", ("jsonschema",), "application/json",
             lambda s: json_schema_field(s.content, document=s.document), json_text=True, validator=jsonschema_errors,
             aliases=("json",)),
    Language("jsonstructure", ("jsonstructure",), "application/json",
             lambda s: json_structure_field(s.content, s.document, s.type_name), json_text=True),
    Language("avro", ("avro",), "avro/binary", _avro, json_text=True, validator=avro_errors, decoder=avro_decoder),
    Language("protobuf", ("protobuf", "proto"), "application/protobuf",
             lambda s: (*protobuf_to_spark(s.content, s.type_name), {})),
    Language("xsd", ("xsd", "xmlschema"), "application/xml", None),  # the payload stays XML text
)
BY_FAMILY = {language.family: language for language in LANGUAGES}


def format_name(fmt: str) -> str:
    """A `dataschemaformat`'s name as the registry keys it (`JsonSchema/draft-07` -> `jsonschema`)."""
    return fmt.split("/")[0].lower().replace("-", "").replace(" ", "")


def language_of(fmt: str | None, aliases: bool = True) -> Language | None:
    """The language a `dataschemaformat` names, or None (not mapped)."""
    if not fmt:
        return None
    name = format_name(fmt)
    return next((lang for lang in LANGUAGES if name in lang.names or (aliases and name in lang.aliases)), None)
