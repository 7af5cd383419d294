"""Protobuf (.proto text) -> Spark.

The text is compiled by protoc (grpcio-tools, the compiler Google maintains, run in a
subprocess so its diagnostics are captured) into a FileDescriptorSet, and the descriptors are
mapped; a hand-written .proto parser would have to re-implement type resolution, imports and
well-known types. Only the bundled well-known types may be imported: a schema never reaches
another file.

Mapping (field names as declared, like Spark's own `from_protobuf`):
* double/float -> double/float; int32, sint32, sfixed32 -> int; uint32, fixed32, int64, sint64,
  sfixed64 -> long; uint64, fixed64 -> decimal(20,0) (no Spark integer holds them); bool;
  string; bytes -> binary; enum -> string (the value name);
* message -> struct; `repeated` -> array; `map<K, V>` -> map; oneof members -> nullable fields;
* well-known types: Timestamp -> timestamp, Duration -> string (JSON form "1.5s"), wrappers
  (StringValue, Int64Value, ...) -> the nullable scalar, Struct/Value/ListValue -> JSON text,
  Any -> struct<type_url, value>, Empty -> empty struct;
* every field is nullable (proto3 JSON omits defaults) except proto2 `required` fields;
* leading comments become column comments; recursion deeper than MAX_DEPTH -> JSON text.

Without a `:TypeName` suffix the payload is the first message declared in the file.
"""

from __future__ import annotations

import functools
import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

from google.protobuf import descriptor_pb2
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, DataType, DecimalType, DoubleType, FloatType,
                               IntegerType, LongType, MapType, StringType, StructField, StructType, TimestampType)

from . import keys
from .json_schema import SchemaError
from .unions import JSON_STRING

MAX_DEPTH = 16

F = descriptor_pb2.FieldDescriptorProto
SCALARS: dict[int, DataType] = {
    F.TYPE_DOUBLE: DoubleType(),
    F.TYPE_FLOAT: FloatType(),
    F.TYPE_INT32: IntegerType(),
    F.TYPE_SINT32: IntegerType(),
    F.TYPE_SFIXED32: IntegerType(),
    F.TYPE_UINT32: LongType(),
    F.TYPE_FIXED32: LongType(),
    F.TYPE_INT64: LongType(),
    F.TYPE_SINT64: LongType(),
    F.TYPE_SFIXED64: LongType(),
    F.TYPE_UINT64: DecimalType(20, 0),
    F.TYPE_FIXED64: DecimalType(20, 0),
    F.TYPE_BOOL: BooleanType(),
    F.TYPE_STRING: StringType(),
    F.TYPE_BYTES: BinaryType(),
    F.TYPE_ENUM: StringType(),
}
WRAPPERS = {
    f".google.protobuf.{name}Value": dtype
    for name, dtype in {
        "Double": DoubleType(), "Float": FloatType(), "Int64": LongType(), "UInt64": DecimalType(20, 0),
        "Int32": IntegerType(), "UInt32": LongType(), "Bool": BooleanType(), "String": StringType(),
        "Bytes": BinaryType(),
    }.items()
}
WELL_KNOWN: dict[str, tuple[DataType, dict]] = {
    ".google.protobuf.Timestamp": (TimestampType(), {}),
    ".google.protobuf.Duration": (StringType(), {}),
    ".google.protobuf.Struct": (StringType(), dict(JSON_STRING)),
    ".google.protobuf.Value": (StringType(), dict(JSON_STRING)),
    ".google.protobuf.ListValue": (StringType(), dict(JSON_STRING)),
    ".google.protobuf.Any": (
        StructType([StructField("type_url", StringType(), True), StructField("value", BinaryType(), True)]),
        {},
    ),
    ".google.protobuf.Empty": (StructType([]), {}),
    **{name: (dtype, {}) for name, dtype in WRAPPERS.items()},
}


def _include_dir() -> str:
    import grpc_tools

    return str(Path(grpc_tools.__file__).parent / "_proto")


@functools.lru_cache(maxsize=256)
def compile_proto(text: str) -> descriptor_pb2.FileDescriptorSet:
    """The FileDescriptorSet of one .proto text (with the well-known types it imports)."""
    name = f"schema_{hashlib.sha256(text.encode()).hexdigest()[:12]}.proto"
    with tempfile.TemporaryDirectory(prefix="catalake-proto-") as tmp:
        Path(tmp, name).write_text(text, encoding="utf-8")
        out = Path(tmp, "set.pb")
        done = subprocess.run(
            [sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp}", f"-I{_include_dir()}",
             f"--descriptor_set_out={out}", "--include_imports", "--include_source_info", name],
            capture_output=True, text=True, cwd=tmp,
        )
        if done.returncode != 0:
            detail = (done.stderr or done.stdout).strip().replace(f"{tmp}/", "").replace(f"{name}:", "line ")
            raise SchemaError(f"Protobuf schema does not compile: {detail}")
        descriptors = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    main = descriptors.file[-1]
    if main.syntax == "editions":
        raise SchemaError("Protobuf editions are not mapped (yet); use proto2 or proto3 syntax")
    return descriptors


class _Mapper:
    def __init__(self, descriptors: descriptor_pb2.FileDescriptorSet):
        self.messages: dict[str, descriptor_pb2.DescriptorProto] = {}
        self.comments: dict[tuple[str, int], str] = {}  # (message full name, field index) -> comment
        for file in descriptors.file:
            prefix = f".{file.package}" if file.package else ""
            self._collect(file, prefix)

    def _collect(self, file: descriptor_pb2.FileDescriptorProto, prefix: str) -> None:
        locations = {tuple(loc.path): loc.leading_comments.strip() for loc in file.source_code_info.location}

        def walk(message, full: str, path: tuple[int, ...]):
            self.messages[full] = message
            for i, _ in enumerate(message.field):
                comment = locations.get(path + (2, i))  # DescriptorProto.field = 2
                if comment:
                    self.comments[(full, i)] = comment
            for j, nested in enumerate(message.nested_type):  # DescriptorProto.nested_type = 3
                walk(nested, f"{full}.{nested.name}", path + (3, j))

        for k, message in enumerate(file.message_type):  # FileDescriptorProto.message_type = 4
            walk(message, f"{prefix}.{message.name}", (4, k))

    def message(self, full: str, stack: tuple[str, ...]) -> tuple[DataType, dict]:
        if full in WELL_KNOWN:
            return WELL_KNOWN[full]
        if full in stack or len(stack) > MAX_DEPTH:
            return StringType(), {**JSON_STRING, keys.RECURSION: True}
        descriptor = self.messages[full]
        fields = []
        for i, field in enumerate(descriptor.field):
            dtype, meta = self.field(field, stack + (full,))
            comment = self.comments.get((full, i))
            if comment:
                meta = {**meta, "comment": comment}
            fields.append(StructField(field.name, dtype, field.label != F.LABEL_REQUIRED, meta))
        return StructType(fields), {}

    def single(self, field: F, stack) -> tuple[DataType, dict]:
        if field.type in (F.TYPE_MESSAGE, F.TYPE_GROUP):
            return self.message(field.type_name, stack)
        return SCALARS[field.type], {}

    def field(self, field: F, stack) -> tuple[DataType, dict]:
        if field.label != F.LABEL_REPEATED:
            return self.single(field, stack)
        entry = self.messages.get(field.type_name) if field.type == F.TYPE_MESSAGE else None
        if entry is not None and entry.options.map_entry:
            key, value = entry.field
            value_type, _ = self.single(value, stack)
            return MapType(SCALARS[key.type], value_type, True), {}
        element, meta = self.single(field, stack)
        return ArrayType(element, bool(meta.get(keys.JSON))), meta


def _find(mapper: _Mapper, descriptors, type_name: str | None) -> str:
    main = descriptors.file[-1]
    package = f".{main.package}" if main.package else ""
    if not type_name:
        if not main.message_type:
            raise SchemaError("Protobuf schema declares no message")
        return f"{package}.{main.message_type[0].name}"
    wanted = type_name.lstrip(".")
    for candidate in (f".{wanted}", f"{package}.{wanted}"):
        if candidate in mapper.messages:
            return candidate
    short = [name for name in mapper.messages if name.rsplit(".", 1)[-1] == wanted.rsplit(".", 1)[-1]]
    if len(short) == 1:
        return short[0]
    raise SchemaError(f"Protobuf message {type_name!r} not found (declared: {', '.join(sorted(mapper.messages))})")


def protobuf_to_spark(text: str, type_name: str | None = None) -> tuple[DataType, bool]:
    """(type, nullable) of the message `type_name` (default: the first declared) of a .proto text."""
    if not isinstance(text, str):
        raise SchemaError("a Protobuf schema must be .proto text")
    descriptors = compile_proto(text)
    mapper = _Mapper(descriptors)
    dtype, _ = mapper.message(_find(mapper, descriptors, type_name), ())
    return dtype, True
