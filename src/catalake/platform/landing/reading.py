"""Reading a piece on the executors: records come out as (position, raw bytes).

The executors read their pieces by literal path (`read_piece`). A file's format is read from its
first bytes (formats.py): JSON lines, one JSON document (an object, or an array = CloudEvents
batch) or JSON values one after another (`_values`), gzip/zstd/snappy-compressed JSON, Avro
object container files and Parquet; a file of no format catalake reads is one
`unsupported_format` dead letter naming it. The position is the 1-based line of a JSON lines
file, element of a batch array (1 for a single document), value of a sequence, or record (row)
of an Avro (Parquet) file. A record longer than the size limit is not read into memory
whole: it comes out as `TooLarge` (its first bytes), and a file that breaks off mid-way gives what
could be read, then one `Corrupt` entry saying where it broke.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from typing import Iterator

import orjson

from ..uris import Location
from . import formats
from .listing import open_file
from .planning import BLOCK, Piece, row_group_starts

MAX_RECORD_BYTES = 10 << 20  # a longer record is dead-lettered as record_too_large
SHOWN_BYTES = 4096  # what a dead-letter row keeps of a record too large to store
LINES_BLOCK = 1 << 20  # JSON lines are read this many bytes at a time


@dataclass(frozen=True)
class TooLarge:
    head: bytes  # the record's first bytes
    size: int


@dataclass(frozen=True)
class Corrupt:
    detail: str


def _lines(f, first_line: int, end: int | None, read: bytes | None = None) -> Iterator[tuple[int, object]]:
    """The lines of `f` from where it stands to byte `end` (None: its end), the first one
    `read` already when given. A last line that reaches `end` without its line break while the
    file goes on is being written: it is left for the next run.

    Read a block at a time and split in C: a `readline` and two `tell` a line cost more than
    parsing the line. A line over the size limit is never held whole: its head is kept and the
    rest counted (`_too_large`)."""
    line = first_line
    pos = f.tell() if end is not None else 0
    tail = read or b""
    # a stream (decompressed) a buffer at a time: what precedes a break in it is still read
    read_block = f.read if end is not None or not hasattr(f, "read1") else f.read1
    while True:
        want = LINES_BLOCK if end is None else min(LINES_BLOCK, end - pos)
        chunk = read_block(want) if want > 0 else b""
        pos += len(chunk)
        if not chunk and b"\n" not in tail:
            break
        lines = (tail + chunk if tail else chunk).split(b"\n")
        tail = lines.pop()
        for raw in lines:
            if len(raw) > MAX_RECORD_BYTES:
                yield line, TooLarge(raw[:SHOWN_BYTES], len(raw))
            else:
                raw = raw.rstrip(b"\r\n")
                if raw.strip():
                    yield line, raw
            line += 1
        if len(tail) > MAX_RECORD_BYTES:
            record, tail, pos = _too_large(f, tail, end, pos)
            yield line, record
            line += 1
    if not tail:
        return
    if end is not None and pos >= end and f.read(1):
        return  # the file grew past its listed size mid-line
    raw = tail.rstrip(b"\r\n")
    if raw.strip():
        yield line, raw


def _too_large(f, head: bytes, end: int | None, pos: int) -> tuple[TooLarge, bytes, int]:
    """A line longer than the limit, from its first `head` bytes on: the record (its head and
    size), what follows its line break in the last block read, and the position reached."""
    size, rest = len(head), b""
    while True:
        want = BLOCK if end is None else min(BLOCK, end - pos)
        block = f.read(want) if want > 0 else b""
        pos += len(block)
        if not block:
            break
        cut = block.find(b"\n")
        if cut >= 0:
            size, rest = size + cut, block[cut + 1:]
            break
        size += len(block)
    return TooLarge(head[:SHOWN_BYTES], size), rest, pos


@dataclass(frozen=True)
class Unsupported:
    detail: str


class _Window(io.RawIOBase):
    """An Avro file as fastavro reads it for one piece: its header, then bytes [start, end)."""

    def __init__(self, f, header: int, start: int, end: int):
        self.f, self.parts, self.at = f, [(0, header), (max(start, header), end)], 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while self.parts:
            start, end = self.parts[0]
            if self.at < start:
                self.at = start
            if self.at >= end:
                self.parts.pop(0)
                continue
            self.f.seek(self.at)
            data = self.f.read(min(len(buffer), end - self.at))
            if not data:
                return 0
            buffer[:len(data)] = data
            self.at += len(data)
            return len(data)
        return 0


def _avro(piece: Piece, f) -> Iterator[tuple[int, object]]:
    import fastavro
    from fastavro.read import HEADER_SCHEMA

    position = piece.first_line - 1
    try:
        if piece.kind == "avro":
            fastavro.schemaless_reader(f, HEADER_SCHEMA, None)
            stream = io.BufferedReader(_Window(f, f.tell(), piece.start, piece.end), buffer_size=BLOCK)
        else:
            stream = io.BufferedReader(_Window(f, 0, 0, piece.size), buffer_size=BLOCK)
        reader = fastavro.reader(stream)
        convert = formats.converter(formats.avro_field_names(reader.writer_schema))
        for record in reader:
            position += 1
            yield position, orjson.dumps(convert(record))
    except Exception as exc:  # noqa: BLE001 - a broken Avro file: what was read is kept, the break said
        yield position + 1, Corrupt(f"Avro file breaks off at record {position + 1}: {type(exc).__name__}: {exc}")


def _parquet(piece: Piece, f) -> Iterator[tuple[int, object]]:
    import pyarrow.parquet as pq

    position = 0
    try:
        parquet = pq.ParquetFile(f)
        starts = row_group_starts(parquet)
        groups = ([i for i, at in enumerate(starts) if piece.start <= at < piece.end] if piece.kind == "parquet"
                  else list(range(len(starts))))
        meta = parquet.metadata
        position = sum(meta.row_group(i).num_rows for i in range(groups[0])) if groups else 0
        convert = formats.converter(set(parquet.schema_arrow.names))
        for batch in parquet.iter_batches(batch_size=4096, row_groups=groups) if groups else ():
            names = batch.schema.names
            for values in zip(*(column.to_pylist() for column in batch.columns)):  # a column at a time: 25% faster than rows
                position += 1
                yield position, orjson.dumps(convert(dict(zip(names, values))))
    except Exception as exc:  # noqa: BLE001 - a broken Parquet file: what was read is kept, the break said
        yield position + 1, Corrupt(f"Parquet file breaks off at row {position + 1}: {type(exc).__name__}: {exc}")


def _json_text(kind: str, f, size: int) -> Iterator[tuple[int, object]]:
    """A JSON text file as its records, up to `size` bytes (-1: all): a file named as JSON lines
    line by line; any other JSON lines too, once its first line is a whole value and more
    follows (streamed, never read whole); else one document, or values one after another."""
    end = None if size < 0 else size
    if kind == "lines":
        yield from _lines(f, 1, end)
        return
    first = f.readline(MAX_RECORD_BYTES + 1 if end is None else max(0, min(MAX_RECORD_BYTES + 1, end)))
    if len(first) > MAX_RECORD_BYTES or formats.is_json_value(first) and _more(f, end):
        yield from _lines(f, 1, end, read=first)
        return
    text = first + (f.read() if end is None else f.read(max(0, end - len(first))))
    if not text.strip():
        return
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError:
        yield from _values(text)
        return
    if isinstance(document, list):  # a CloudEvents batch: one record per element
        for i, element in enumerate(document, start=1):
            yield i, orjson.dumps(element)
    else:
        yield 1, text


def _more(f, end: int | None) -> bool:
    """Whether non-blank text follows in `f` (within `end`), judged from what its buffer holds."""
    if end is not None and f.tell() >= end:
        return False
    peek = getattr(f, "peek", None)
    return bool(peek(1 << 16).strip()) if peek is not None else False


RECORD_SEPARATOR = b"\x1e"  # RFC 7464: a JSON text sequence puts one before every value
_OPENING = re.compile(r"[{\[]")
_BLANK = re.compile(r"[ \t\r\n]*")


def _values(text: bytes) -> Iterator[tuple[int, object]]:
    """A JSON text file that is not one JSON document, as the values it holds one after another:
    JSON lines (a Kafka Connect sink's `.json`: their line numbers are their positions, as for a
    `.jsonl` file), an RFC 7464 sequence or values written back to back (Amazon Data Firehose,
    `jq` output: their ordinals are). What does not parse is one record, up to where the next
    value starts (`_next_value`): its dead letter, never the file's."""
    if RECORD_SEPARATOR in text:
        chunks = (chunk.strip() for chunk in text.split(RECORD_SEPARATOR))
        yield from enumerate((chunk for chunk in chunks if chunk), start=1)
        return
    if formats.is_json_value(text.split(b"\n", 1)[0]):
        yield from _lines(io.BytesIO(text), 1, None)  # one value a line
        return
    # values back to back: the standard library's raw_decode says where each ends (orjson reads
    # whole documents only, and counts characters, not bytes, where it stops)
    decoder = json.JSONDecoder()
    chars = text.decode("utf-8", "surrogateescape")
    at, ordinal = 0, 0
    while True:
        at = _BLANK.match(chars, at).end()
        if at >= len(chars):
            return
        ordinal += 1
        try:
            end = decoder.raw_decode(chars, at)[1]
        except ValueError:  # JSONDecodeError, or a number too long for int()
            end = _next_value(decoder, chars, at + 1)
        yield ordinal, chars[at:end].strip().encode("utf-8", "surrogateescape")
        at = end


def _next_value(decoder: json.JSONDecoder, chars: str, start: int) -> int:
    """Where the first whole value from `start` on begins: an object or array that parses and is
    followed by another one or the end (an object nested in a broken record is followed by `,`,
    `}`, `]` or a member); the end when none does."""
    for opening in _OPENING.finditer(chars, start):
        try:
            end = decoder.raw_decode(chars, opening.start())[1]
        except ValueError:
            continue
        follows = _BLANK.match(chars, end).end()
        if follows == len(chars) or chars[follows] in "{[":
            return opening.start()
    return len(chars)


def _compressed(piece: Piece, kind: str, f) -> Iterator[tuple[int, object]]:
    line = 0
    try:
        with formats.decompressed(kind, f) as content:
            inner = formats.sniff(content.peek(formats.HEAD_BYTES)[:formats.HEAD_BYTES],
                                  formats.inner_name(piece.path.rsplit("/", 1)[-1]))
            if inner not in ("lines", "document"):
                yield 1, Unsupported(f"{kind}-compressed {inner} content: only JSON lines or a JSON document are read compressed")
                return
            for line, record in _json_text(inner, content, -1):
                yield line, record
    except formats.corrupt_errors() as exc:
        yield line + 1, Corrupt(f"compressed file ({kind}) breaks off at line {line + 1}: {exc}")


def read_piece(landing: Location | None, piece: Piece) -> Iterator[tuple[int, object]]:
    """(position, raw bytes | TooLarge | Corrupt | Unsupported) of every record of a piece of a
    file below `landing` (None: a local file); blank lines skipped."""
    with open_file(landing, piece.path) as f:
        if piece.kind == "lines":
            f.seek(piece.start)
            yield from _lines(f, piece.first_line, piece.end)
            return
        kind = piece.kind or formats.sniff(f.read(formats.HEAD_BYTES), piece.path.rsplit("/", 1)[-1])
        f.seek(0)
        if kind == "avro":
            yield from _avro(piece, f)
        elif kind == "parquet":
            yield from _parquet(piece, f)
        elif kind in formats.COMPRESSED:
            yield from _compressed(piece, kind, f)
        elif kind in ("lines", "document"):
            yield from _json_text(kind, f, piece.size)
        else:
            head = f.read(formats.HEAD_BYTES)
            yield 1, Unsupported(f"not a format catalake reads (JSON lines or document, gzip/zstd/snappy JSON, Avro, "
                                 f"Parquet); the file starts with {head!r}")
