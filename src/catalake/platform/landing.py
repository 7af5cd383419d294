"""Reading the landing zone (../shared/docs/landing-zone.md): one daily partition -> raw records.

The landing root is a local folder or a URI (`s3://bucket/prefix`, any filesystem of uris.py).
Layout: `<root>/YYYY-MM-DD/` or `<root>/dt=YYYY-MM-DD/` (the same partition); `.jsonl`,
`.jsonl.gz` (JSON lines) and `.json` (one document: an object, or an array = CloudEvents
batch), extensions in any case. `_SUCCESS`, `.crc` and dot-files are ignored; other names are
listed as not read. A landing root that cannot be listed is an error naming it (`LocationError`);
a missing day folder is an empty day that says so (`DayListing.missing`).

The driver lists the files once, with their sizes, and cuts them into tasks (`plan_tasks`): a
JSON lines file larger than the split size is cut at line boundaries into splits whose first
line number is known (the driver counts the newlines before each cut; nothing is parsed there),
small files are packed together, a gzip file or a document is one piece. Every piece ends at a
planned byte: a file that grows while the day runs is read up to the size it was listed with
(its last complete line), and the rest is the next run's. The executors read their pieces by
literal path (`read_piece`): records come out as (source_line, raw bytes), where `source_line` is
the 1-based line of a JSON lines file, or the 1-based element of a batch array (1 for a single
document).

Files are read by their literal path (no pattern expansion: a file named `rides-*.jsonl` is one
file), and a local landing root is a jail: symbolic links are skipped and reported, never read.
A name that is not valid UTF-8 is read, and shown with its undecodable bytes escaped
(`display_path`). A record longer than the size limit is not read into memory whole: it comes
out as `TooLarge` (its first bytes), and a compressed file that breaks off mid-way gives what
could be read, then one `Corrupt` entry saying where it broke.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import io
import os
import re
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator

import orjson
from pyarrow import fs as pafs

from . import uris

LINE_FILES = (".jsonl", ".jsonl.gz")
DOCUMENT_FILES = (".json",)
FOLDER = re.compile(r"^(?:dt=)?(\d{4}-\d{2}-\d{2})$")
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
    """A landed file as the driver listed it: where, and its size then (what the day reads)."""

    path: str
    size: int
    modified_ns: int = 0

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


def is_landed_name(name: str) -> bool:
    lower = name.lower()
    return lower.endswith(LINE_FILES + DOCUMENT_FILES) and not is_hidden(name)


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


def list_day(root: str, day: dt.date) -> DayListing:
    """The landed files of one day, sorted (subfolders included). A root that does not exist or
    cannot be listed raises LocationError naming it and the cause."""
    root = uris.normalize(root)
    return _list_day(check_root(root), root, day)


def _list_day(filesystem: pafs.FileSystem, root: str, day: dt.date) -> DayListing:
    listing = DayListing()
    for name in (day.isoformat(), f"dt={day.isoformat()}"):
        folder = uris.join(root, name)
        if uris.is_remote(root):
            _list_remote(filesystem, folder, listing)
        else:
            _list_local(folder, listing)
    listing.files.sort(key=lambda f: f.path)
    return listing


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
        if any(is_hidden(p) for p in parts[:-1]) or is_hidden(parts[-1]):
            continue
        uri = f"{scheme}://{info.path}"
        if is_landed_name(parts[-1]):
            listing.files.append(Landed(uri, info.size, info.mtime_ns or 0))
        else:
            listing.ignored.append(uri)


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
            if is_landed_name(name):
                stat = os.stat(path)
                listing.files.append(Landed(path, stat.st_size, stat.st_mtime_ns))
            else:
                listing.ignored.append(path)


def partition_files(root: str, day: dt.date, skipped: list | None = None) -> list[Landed]:
    """The landed files of one day (see list_day); symbolic links found are added to `skipped`."""
    listing = list_day(root, day)
    if skipped is not None:
        skipped.extend(listing.skipped)
    return listing.files


def landing_partitions(root: str) -> dict[str, str]:
    """Every partition folder of the landing root -> fingerprint of its files (names, sizes,
    modification times). A root that cannot be read raises LocationError."""
    root = uris.normalize(root)
    filesystem = check_root(root)
    _, base = uris.filesystem(root)
    out: dict[str, str] = {}
    try:
        children = filesystem.get_file_info(pafs.FileSelector(base, allow_not_found=True))
    except OSError as exc:
        raise uris.LocationError(f"landing {root}: cannot be listed: {uris.describe(exc)}") from None
    for child in sorted(children, key=lambda i: i.path):
        match = FOLDER.match(child.base_name)
        if not (match and child.type == pafs.FileType.Directory):
            continue
        day = dt.date.fromisoformat(match.group(1))
        digest = hashlib.sha256()
        for f in _list_day(filesystem, root, day).files:  # the root was checked once above
            digest.update(f"{display_path(f.path)}|{f.size}|{f.modified_ns}\n".encode())
        out[day.isoformat()] = digest.hexdigest()
    return out


# -- the driver: pieces and tasks

@dataclass(frozen=True)
class Piece:
    """Part of a landed file: bytes [start, end) of a JSON lines file whose first line is
    `first_line`, or (end = -1) the whole file as it was listed (`size` bytes)."""

    path: str
    start: int = 0
    end: int = -1
    first_line: int = 1
    size: int = -1


def is_line_file(path: str) -> bool:
    return path.lower().endswith(".jsonl")


def _open(path: str):
    """A seekable binary reader of a local or remote file."""
    if not uris.is_remote(path):
        return open(path, "rb")
    filesystem, inner = uris.filesystem(path)
    return io.BufferedReader(filesystem.open_input_file(inner), buffer_size=REMOTE_BLOCK)


def _cuts(landed: Landed, split: int) -> list[Piece]:
    """A JSON lines file cut at the first line break after every `split` bytes, with the line
    number each piece starts at (newlines counted block by block; no line is parsed here)."""
    path, size = landed.path, landed.size
    pieces, start, line = [], 0, 1
    with _open(path) as f:
        while start < size:
            target = start + split
            if target >= size:
                pieces.append(Piece(path, start, size, line))
                break
            f.seek(target)
            f.readline()  # to the end of the line the cut falls into
            end = min(f.tell(), size)
            pieces.append(Piece(path, start, end, line))
            f.seek(start)
            remaining, count = end - start, 0
            while remaining > 0:
                block = f.read(min(BLOCK, remaining))
                if not block:
                    break
                count += block.count(b"\n")
                remaining -= len(block)
            start, line = end, line + count
    return pieces


def plan_tasks(files: list[Landed], parallelism: int, target: int | None = None) -> list[list[Piece]]:
    """The pieces of the day's files packed into tasks of even size: a multiple of `parallelism`
    tasks (so no core idles at the end), each of at most SPLIT_BYTES unless a single compressed
    file is larger. JSON lines files are cut at `target` bytes (by default the even share of one
    task); small files share tasks. Every piece ends at the size the file was listed with."""
    total = sum(f.size for f in files)
    parallelism = max(parallelism, 1)
    count = parallelism * max(1, -(-total // (SPLIT_BYTES * parallelism)))
    if target is None:
        count = min(count, max(1, total // MIN_TASK_BYTES)) if total < MIN_TASK_BYTES * parallelism else count
        target = max(1, -(-total // count))
    pieces: list[tuple[int, Piece]] = []
    for f in files:
        if is_line_file(f.path) and f.size > target:
            pieces += [(p.end - p.start, p) for p in _cuts(f, target)]
        elif is_line_file(f.path):
            pieces.append((f.size, Piece(f.path, 0, f.size)))
        else:
            pieces.append((f.size, Piece(f.path, size=f.size)))
    count = max(count, -(-total // target)) if total else 1
    tasks: list[list[Piece]] = [[] for _ in range(count)]
    loads = [0] * count
    for size, piece in sorted(pieces, key=lambda p: -p[0]):  # largest first, into the lightest task
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


def read_piece(piece: Piece) -> Iterator[tuple[int, object]]:
    """(source_line, raw bytes | TooLarge | Corrupt) of every record of a piece; blank lines skipped."""
    path = piece.path
    lower = path.lower()
    if lower.endswith(".jsonl.gz"):
        line = 0
        try:
            with _open(path) as raw, gzip.GzipFile(fileobj=raw, mode="rb") as f:
                for line, record in _lines(f, 1, None):
                    yield line, record
        except (EOFError, OSError, zlib.error) as exc:
            yield line + 1, Corrupt(f"compressed file breaks off at line {line + 1}: {exc}")
        return
    if is_line_file(path):
        with _open(path) as f:
            f.seek(piece.start)
            yield from _lines(f, piece.first_line, None if piece.end < 0 else piece.end)
        return
    with _open(path) as f:
        text = f.read() if piece.size < 0 else f.read(piece.size)
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
