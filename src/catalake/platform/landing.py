"""Reading the landing zone (../shared/docs/landing-zone.md): one daily partition -> raw records.

The landing root is a local folder or a URI (`s3://bucket/prefix`, any filesystem of uris.py).
Where a day's files are below it is the landing layout (layouts.py: by default `<root>/YYYY-MM-DD/`
or `<root>/dt=YYYY-MM-DD/`; Hive-style, Event Hubs Capture and Kafka Connect folders by setting);
every file below a day's folder is the day's, subfolders included. A file's format is read from
its first bytes (formats.py): JSON lines, one JSON document (an object, or an array = CloudEvents
batch), gzip/zstd/snappy-compressed JSON, Avro object container files and Parquet; a file of no
format catalake reads is one `unsupported_format` dead letter naming it. `_SUCCESS`, `.crc` and
dot-files are ignored. A landing root that cannot be listed is an error naming it
(`LocationError`); a day without a folder is an empty day that says so (`DayListing.missing`).

The driver lists the files once, with their sizes, and cuts them into tasks (`plan_tasks`): a
file larger than the split size is cut where its format can be cut (JSON lines at line ends, with
the first line number of each piece counted by the driver; Avro at block boundaries, with the
first record number from the blocks' headers; Parquet at row groups), small files are packed
together, a compressed file or a document is one piece. Every piece ends at a planned byte: a
file that grows while the day runs is read up to the size it was listed with (its last complete
line), and the rest is the next run's. The executors read their pieces by literal path
(`read_piece`): records come out as (position, raw bytes), where the position is the 1-based line
of a JSON lines file, element of a batch array (1 for a single document), or record (row) of an
Avro (Parquet) file.

Files are read by their literal path (no pattern expansion: a file named `rides-*.jsonl` is one
file), and a local landing root is a jail: symbolic links are skipped and reported, never read.
A name that is not valid UTF-8 is read, and shown with its undecodable bytes escaped
(`display_path`). A record longer than the size limit is not read into memory whole: it comes
out as `TooLarge` (its first bytes), and a file that breaks off mid-way gives what could be read,
then one `Corrupt` entry saying where it broke.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import os
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Iterator

import orjson
from pyarrow import fs as pafs

from . import formats, layouts, uris
from .layouts import Layout

# the largest piece one task reads: few tasks mean few files per table (a task writes each table
# it feeds once), and a task's memory does not grow with it (rows become Parquet as it goes)
SPLIT_BYTES = 256 << 20
MIN_TASK_BYTES = 4 << 20  # smaller days are not cut into more tasks than this fills
MAX_RECORD_BYTES = 10 << 20  # a longer record is dead-lettered as record_too_large
SHOWN_BYTES = 4096  # what a dead-letter row keeps of a record too large to store
BLOCK = 8 << 20
REMOTE_BLOCK = 32 << 20  # one ranged GET per this many bytes of a file on object storage


@dataclass(frozen=True)
class Landed:
    """A landed file as the driver listed it: where, its size then (what the day reads), and the
    path fields its layout gives it (layouts.py)."""

    path: str
    size: int
    modified_ns: int = 0
    fields: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass
class DayListing:
    """The landed files of one day, and what was found but not read."""

    files: list[Landed] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)  # the day's folders that exist
    skipped: list[str] = field(default_factory=list)  # symbolic links: never followed
    ignored: list[str] = field(default_factory=list)  # names that are not landed files

    @property
    def missing(self) -> bool:
        """No folder of the day exists (an existing empty folder is a quiet day)."""
        return not self.folders


def is_hidden(name: str) -> bool:
    """Files writers leave beside the data: `_SUCCESS`, `.crc` checksums, dot-files."""
    return name.startswith((".", "_")) or name.lower().endswith(".crc")


def display_path(path: str) -> str:
    """A path as stored and shown: undecodable bytes of a name escaped as `\\xNN`."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return os.fsencode(path).decode("utf-8", "backslashreplace")


def check_root(root: str) -> pafs.FileSystem:
    """The landing root's filesystem; LocationError naming the root and the cause when it does
    not exist, is not a folder, or cannot be read (no such bucket, no credentials, no route)."""
    root = uris.normalize(root)
    filesystem, base = uris.filesystem(root)
    try:
        info = filesystem.get_file_info(base)
        if info.type == pafs.FileType.Directory and uris.is_remote(root):
            filesystem.get_file_info(pafs.FileSelector(base, allow_not_found=True))  # listing is allowed
    except OSError as exc:
        raise uris.LocationError(f"landing {root}: cannot be read: {uris.describe(exc)}") from None
    if info.type == pafs.FileType.NotFound:
        raise uris.LocationError(f"landing {root}: does not exist")
    if info.type != pafs.FileType.Directory:
        raise uris.LocationError(f"landing {root}: is not a folder")
    return filesystem


def _layout(layout: str | Layout | None) -> Layout:
    return layout if isinstance(layout, Layout) else layouts.parse(layout)


def list_day(root: str, day: dt.date, layout: str | Layout | None = None) -> DayListing:
    """The landed files of one day in the layout (default `day`), sorted (subfolders included).
    A root that does not exist or cannot be listed raises LocationError naming it and the cause."""
    root = uris.normalize(root)
    return _list_day(check_root(root), root, day, _layout(layout))


def _list_day(filesystem: pafs.FileSystem, root: str, day: dt.date, layout: Layout) -> DayListing:
    listing = DayListing()
    for _, folder, fields in day_folders(filesystem, root, layout, day, listing):
        _list_folder(filesystem, root, folder, fields, listing)
    listing.files.sort(key=lambda f: f.path)
    return listing


def _list_folder(filesystem, root: str, folder: str, fields: tuple, listing: DayListing) -> None:
    before = len(listing.files)
    if uris.is_remote(root):
        _list_remote(filesystem, folder, listing)
    else:
        _list_local(folder, listing)
    if fields:
        listing.files[before:] = [replace(f, fields=fields) for f in listing.files[before:]]


def _children(filesystem, folder: str, remote: bool) -> list[tuple[str, str, str]]:
    """(name, path, kind: dir | file | link) of a folder's entries that are not hidden."""
    if remote:
        scheme = folder.split("://", 1)[0]
        _, path = uris.filesystem(folder)
        try:
            found = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
        except OSError as exc:
            raise uris.LocationError(f"landing {folder}: cannot be listed: {uris.describe(exc)}") from None
        return [(i.base_name, f"{scheme}://{i.path}", "dir" if i.type == pafs.FileType.Directory else "file")
                for i in found if not is_hidden(i.base_name)]
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [(e.name, e.path, "link" if e.is_symlink() else "dir" if e.is_dir() else "file")
            for e in entries if not is_hidden(e.name)]


def day_folders(filesystem, root: str, layout: Layout, day: dt.date | None,
                listing: DayListing | None = None) -> list[tuple[dt.date, str, tuple]]:
    """(day, folder, path fields) of every folder of the layout below the root (of `day` only,
    when given): folder by folder along the template, listing only what can still match."""
    listing = listing if listing is not None else DayListing()
    remote = uris.is_remote(root)
    level: list[tuple[str, dict]] = [(root, {})]
    for i, segment in enumerate(layout.segments):
        last = i == len(layout.segments) - 1
        following: list[tuple[str, dict]] = []
        for folder, values in level:
            if segment.pattern is None:  # a literal folder: no listing needed
                path = uris.join(folder, segment.text)
                if not remote and os.path.islink(path):
                    listing.skipped.append(path)
                else:
                    following.append((path, values))
                continue
            for name, path, kind in _children(filesystem, folder, remote):
                found = segment.match(name)
                if found is None:
                    continue
                merged = {**values, **found}
                if day is not None and not layouts.agrees(merged, day):
                    continue
                if kind == "link":  # the landing root is a jail: a link is reported, never followed
                    listing.skipped.append(path)
                elif kind == "dir":
                    following.append((path, merged))
                elif last and layouts.day_of(merged) is not None:
                    listing.ignored.append(path + " (a file where the day's folder belongs)")
        level = following
    out = []
    for folder, values in level:
        found_day = layouts.day_of(values)
        if found_day is not None and (day is None or found_day == day):
            out.append((found_day, folder, layouts.fields_of(values)))
    return sorted(out, key=lambda f: f[1])


def _list_remote(filesystem: pafs.FileSystem, folder: str, listing: DayListing) -> None:
    scheme = folder.split("://", 1)[0]
    _, path = uris.filesystem(folder)
    try:
        kind = filesystem.get_file_info(path).type
        if kind == pafs.FileType.File:
            listing.ignored.append(folder + " (a file where the day's folder belongs)")
            return
        if kind != pafs.FileType.Directory:
            return
        listing.folders.append(folder)
        found = filesystem.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
    except OSError as exc:
        raise uris.LocationError(f"landing {folder}: cannot be listed: {uris.describe(exc)}") from None
    for info in found:
        if info.type != pafs.FileType.File:
            continue
        parts = info.path[len(path):].strip("/").split("/")
        if any(is_hidden(p) for p in parts):
            continue
        listing.files.append(Landed(f"{scheme}://{info.path}", info.size, info.mtime_ns or 0))


def _list_local(folder: str, listing: DayListing) -> None:
    if os.path.islink(folder):
        listing.skipped.append(folder)
        return
    if os.path.isfile(folder):
        listing.ignored.append(folder + " (a file where the day's folder belongs)")
        return
    if not os.path.isdir(folder):
        return
    listing.folders.append(folder)
    for base, dirs, names in os.walk(folder):  # os.walk does not follow links into folders
        for name in [*dirs, *names]:
            if os.path.islink(os.path.join(base, name)):
                listing.skipped.append(os.path.join(base, name))
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(base, d)) and not is_hidden(d)]
        for name in names:
            path = os.path.join(base, name)
            if os.path.islink(path) or not os.path.isfile(path) or is_hidden(name):
                continue
            stat = os.stat(path)
            listing.files.append(Landed(path, stat.st_size, stat.st_mtime_ns))


def partition_files(root: str, day: dt.date, skipped: list | None = None, layout: str | Layout | None = None) -> list[Landed]:
    """The landed files of one day (see list_day); symbolic links found are added to `skipped`."""
    listing = list_day(root, day, layout)
    if skipped is not None:
        skipped.extend(listing.skipped)
    return listing.files


def landing_partitions(root: str, layout: str | Layout | None = None) -> dict[str, str]:
    """Every day of the landing root in the layout -> fingerprint of its files (names, sizes,
    modification times). A root that cannot be read raises LocationError."""
    root = uris.normalize(root)
    filesystem = check_root(root)
    layout = _layout(layout)
    by_day: dict[dt.date, DayListing] = {}
    for day, folder, fields in day_folders(filesystem, root, layout, None):
        _list_folder(filesystem, root, folder, fields, by_day.setdefault(day, DayListing()))
    out: dict[str, str] = {}
    for day, listing in sorted(by_day.items()):
        digest = hashlib.sha256()
        for f in sorted(listing.files, key=lambda f: f.path):
            digest.update(f"{display_path(f.path)}|{f.size}|{f.modified_ns}\n".encode())
        out[day.isoformat()] = digest.hexdigest()
    return out


def first_day(root: str, layout: str | Layout | None = None) -> dt.date | None:
    """The landing zone's earliest day in the layout, or None (also when it cannot be listed)."""
    try:
        root = uris.normalize(root)
        found = day_folders(check_root(root), root, _layout(layout), None)
    except (OSError, uris.LocationError):
        return None
    return min((d for d, _, _ in found), default=None)


# -- the driver: pieces and tasks

@dataclass(frozen=True)
class Piece:
    """Part of a landed file: bytes [start, end) of a file cut by its format (`kind`: `lines`, a
    JSON lines file whose first line there is `first_line`; `avro`, whole blocks, the first
    record's number `first_line`; `parquet`, the row groups starting in the range), or
    (end = -1, kind "") the whole file as it was listed (`size` bytes), its format read from it."""

    path: str
    start: int = 0
    end: int = -1
    first_line: int = 1
    size: int = -1
    kind: str = ""
    fields: tuple[tuple[str, str], ...] = ()  # the file's path fields (Landed.fields)

    @property
    def length(self) -> int:
        """The bytes the piece reads."""
        return self.end - self.start if self.end >= 0 else self.size


def _open(path: str):
    """A seekable binary reader of a local or remote file."""
    if not uris.is_remote(path):
        return open(path, "rb")
    filesystem, inner = uris.filesystem(path)
    return io.BufferedReader(filesystem.open_input_file(inner), buffer_size=REMOTE_BLOCK)


def head_of(path: str) -> bytes:
    """A file's first bytes (its magic), in one small read (no buffer filled on object storage)."""
    if not uris.is_remote(path):
        with open(path, "rb") as f:
            return f.read(formats.HEAD_BYTES)
    filesystem, inner = uris.filesystem(path)
    with filesystem.open_input_file(inner) as f:
        return f.read_at(formats.HEAD_BYTES, 0)


def _cuts(landed: Landed, split: int) -> list[Piece]:
    """A JSON lines file cut at the first line break after every `split` bytes, with the line
    number each piece starts at (newlines counted block by block; no line is parsed here)."""
    path, size = landed.path, landed.size
    pieces, start, line = [], 0, 1
    with _open(path) as f:
        while start < size:
            target = start + split
            if target >= size:
                pieces.append(Piece(path, start, size, line, kind="lines", fields=landed.fields))
                break
            f.seek(target)
            f.readline()  # to the end of the line the cut falls into
            end = min(f.tell(), size)
            pieces.append(Piece(path, start, end, line, kind="lines", fields=landed.fields))
            start, line = end, line + newlines(f, start, end)
    return pieces


def newlines(f, start: int, end: int) -> int:
    """The line breaks in bytes [start, end) of an open file, counted block by block."""
    f.seek(start)
    remaining, count = end - start, 0
    while remaining > 0:
        block = f.read(min(BLOCK, remaining))
        if not block:
            break
        count += block.count(b"\n")
        remaining -= len(block)
    return count


def _avro_cuts(landed: Landed, split: int) -> list[Piece]:
    """An Avro object container file cut at block boundaries after every `split` bytes, with the
    number of the first record of each piece (each block's header says how many records it
    holds; fastavro reads the header and the counts, the data is skipped, not read). A file
    whose blocks cannot be walked is one piece: reading it says where it breaks."""
    import fastavro
    from fastavro.read import HEADER_SCHEMA

    path, size = landed.path, landed.size
    cuts = [(0, 1)]  # (byte, first record)
    try:
        with _open(path) as f:
            fastavro.schemaless_reader(f, HEADER_SCHEMA, None)
            record = 1
            while f.tell() < size:
                at = f.tell()
                if at - cuts[-1][0] >= split:
                    cuts.append((at, record))
                count = fastavro.schemaless_reader(f, "long", None)
                length = fastavro.schemaless_reader(f, "long", None)
                f.seek(length + 16, 1)  # the block's data and its sync marker
                record += count
    except Exception:  # noqa: BLE001 - any fault of the file is reported by reading it
        return [Piece(path, size=size, fields=landed.fields)]
    bounds = [c[0] for c in cuts[1:]] + [size]
    return [Piece(path, start, end, first, kind="avro", fields=landed.fields) for (start, first), end in zip(cuts, bounds)]


def _row_group_starts(parquet) -> list[int]:
    """The byte each row group of a Parquet file starts at (its first column chunk)."""
    meta = parquet.metadata
    starts = []
    for i in range(meta.num_row_groups):
        group = meta.row_group(i)
        chunk = group.column(0)
        starts.append(min(o for o in (chunk.dictionary_page_offset, chunk.data_page_offset) if o is not None and o > 0))
    return starts


def _parquet_cuts(landed: Landed, split: int) -> list[Piece]:
    """A Parquet file cut at row groups after every `split` bytes (only its footer is read)."""
    import pyarrow.parquet as pq

    path, size = landed.path, landed.size
    try:
        with _open(path) as f:
            starts = _row_group_starts(pq.ParquetFile(f))
    except Exception:  # noqa: BLE001 - any fault of the file is reported by reading it
        return [Piece(path, size=size, fields=landed.fields)]
    cuts = [0]
    for start in starts[1:]:
        if start - cuts[-1] >= split:
            cuts.append(start)
    bounds = cuts[1:] + [size]
    return [Piece(path, start, end, kind="parquet", fields=landed.fields) for start, end in zip(cuts, bounds)]


CUTTERS = {"lines": _cuts, "avro": _avro_cuts, "parquet": _parquet_cuts}


def plan_tasks(files: list[Landed], parallelism: int, target: int | None = None) -> list[list[Piece]]:
    """The pieces of the day's files packed into tasks of even size: a multiple of `parallelism`
    tasks (so no core idles at the end), each of at most SPLIT_BYTES unless a single compressed
    file is larger. A file larger than `target` bytes (by default the even share of one task) is
    cut where its format allows (its first bytes say which); small files share tasks. Every
    piece ends at the size the file was listed with."""
    total = sum(f.size for f in files)
    parallelism = max(parallelism, 1)
    count = parallelism * max(1, -(-total // (SPLIT_BYTES * parallelism)))
    if target is None:
        count = min(count, max(1, total // MIN_TASK_BYTES)) if total < MIN_TASK_BYTES * parallelism else count
        target = max(1, -(-total // count))
    pieces: list[tuple[int, Piece]] = []
    for f in files:
        cut = CUTTERS.get(formats.sniff(head_of(f.path), f.name)) if f.size > target else None
        if cut is not None:
            pieces += [(p.length, p) for p in cut(f, target)]
        else:
            pieces.append((f.size, Piece(f.path, size=f.size, fields=f.fields)))
    return pack(pieces, max(count, -(-total // target)) if total else 1)


def pack(pieces: list[tuple[int, Piece]], count: int) -> list[list[Piece]]:
    """(size, piece)s into at most `count` tasks of even size: largest first, into the lightest."""
    tasks: list[list[Piece]] = [[] for _ in range(max(count, 1))]
    loads = [0] * len(tasks)
    for size, piece in sorted(pieces, key=lambda p: -p[0]):
        i = loads.index(min(loads))
        tasks[i].append(piece)
        loads[i] += size
    return [sorted(t, key=lambda p: (p.path, p.start)) for t in tasks if t]


def tiling_faults(files: list[Landed], tasks: list[list[Piece]]) -> list[str]:
    """Why the planned tasks would not read every byte of every landed file exactly once; []
    when they do. The bytes are those of the listing (a file that grew since is read up to the
    size it was listed with). With every task's result counted once, this is what makes the
    records read the landed records, so that conservation (records read = rows stored) catches
    a file read twice or partly, independently of what the tasks counted."""
    landed = {f.path: f for f in files}
    shown = display_path
    faults = [f"{shown(path)}: listed {n} times" for path, n in sorted(Counter(f.path for f in files).items()) if n > 1]
    by_file: dict[str, list[Piece]] = {}
    for piece in (p for task in tasks for p in task):
        by_file.setdefault(piece.path, []).append(piece)
    faults += [f"{shown(path)}: landed, not read" for path in sorted(set(landed) - set(by_file))]
    faults += [f"{shown(path)}: read, not landed" for path in sorted(set(by_file) - set(landed))]
    for path, pieces in sorted(by_file.items()):
        if any(p.end < 0 for p in pieces):
            if len(pieces) > 1:
                faults.append(f"{shown(path)}: read {len(pieces)} times")
            elif path in landed and pieces[0].size != landed[path].size:
                faults.append(f"{shown(path)}: planned {pieces[0].size} bytes of {landed[path].size}")
            continue
        at = 0
        for piece in sorted(pieces, key=lambda p: p.start):
            if piece.start != at:
                faults.append(f"{shown(path)}: bytes {min(at, piece.start)}-{max(at, piece.start)} read "
                              f"{'twice' if piece.start < at else 'never'}")
            at = max(at, piece.end)
        size = landed[path].size if path in landed else at
        if at != size:
            faults.append(f"{shown(path)}: read up to byte {at} of {size}")
    return faults


# -- the executors: records of a piece

@dataclass(frozen=True)
class TooLarge:
    head: bytes  # the record's first bytes
    size: int


@dataclass(frozen=True)
class Corrupt:
    detail: str


def _lines(f, first_line: int, end: int | None) -> Iterator[tuple[int, object]]:
    """The lines of `f` from where it stands to byte `end` (None: its end). A last line that
    reaches `end` without its line break while the file goes on is being written: it is left
    for the next run."""
    line = first_line
    while end is None or f.tell() < end:
        limit = MAX_RECORD_BYTES + 1 if end is None else min(MAX_RECORD_BYTES + 1, end - f.tell())
        raw = f.readline(limit)
        if not raw:
            return
        if not raw.endswith(b"\n") and end is not None and f.tell() >= end and len(raw) <= MAX_RECORD_BYTES:
            if f.read(1):  # the file grew past its listed size mid-line
                return
        if len(raw) > MAX_RECORD_BYTES and not raw.endswith(b"\n"):
            size = len(raw)
            head = raw[:SHOWN_BYTES]
            while raw and not raw.endswith(b"\n"):  # the rest of the record, block by block
                raw = f.readline(BLOCK if end is None else max(0, min(BLOCK, end - f.tell())))
                size += len(raw)
            yield line, TooLarge(head, size - (1 if raw.endswith(b"\n") else 0))
        else:
            raw = raw.rstrip(b"\r\n")
            if raw.strip():
                yield line, raw
        line += 1


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
        starts = _row_group_starts(parquet)
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
    """A JSON text file (lines or one document) as its records, up to `size` bytes (-1: all)."""
    if kind == "lines":
        yield from _lines(f, 1, None if size < 0 else size)
        return
    text = f.read() if size < 0 else f.read(size)
    if not text.strip():
        return
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError:
        yield 1, text
        return
    if isinstance(document, list):  # a CloudEvents batch: one record per element
        for i, element in enumerate(document, start=1):
            yield i, orjson.dumps(element)
    else:
        yield 1, text


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


def read_piece(piece: Piece) -> Iterator[tuple[int, object]]:
    """(position, raw bytes | TooLarge | Corrupt | Unsupported) of every record of a piece;
    blank lines skipped."""
    with _open(piece.path) as f:
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
