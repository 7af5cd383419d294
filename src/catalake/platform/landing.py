"""Reading the landing zone (../shared/docs/landing-zone.md): one daily partition -> raw records.

Layout: `<root>/YYYY-MM-DD/` or `<root>/dt=YYYY-MM-DD/` (the same partition); `.jsonl`,
`.jsonl.gz` (JSON lines) and `.json` (one document: an object, or an array = CloudEvents
batch). `_SUCCESS`, `.crc`, dot-files and other names are ignored; a missing folder is an empty
partition.

The driver lists the files and cuts them into tasks (`plan_tasks`): a JSON lines file larger
than the split size is cut at line boundaries into splits whose first line number is known
(the driver counts the newlines before each cut; nothing is parsed there), small files are
packed together, a gzip file or a document is one piece. The executors read their pieces by
literal path (`read_piece`): records come out as (source_file, source_line, raw bytes), where
`source_line` is the 1-based line of a JSON lines file, or the 1-based element of a batch array
(1 for a single document).

Files are read by their literal path (no pattern expansion: a file named `rides-*.jsonl` is one
file), and the landing root is a jail: symbolic links are skipped and reported, never read.
A record longer than the size limit is not read into memory whole: it comes out as `TooLarge`
(its first bytes), and a compressed file that breaks off mid-way gives what could be read, then
one `Corrupt` entry saying where it broke.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import os
import re
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import orjson

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


def partition_folders(root: Path, day: dt.date) -> list[Path]:
    names = (day.isoformat(), f"dt={day.isoformat()}")
    return [root / n for n in names if (root / n).is_dir()]


def is_landed_file(path: Path) -> bool:
    name = path.name
    if name.startswith((".", "_")) or name.endswith(".crc"):
        return False
    return name.endswith(LINE_FILES + DOCUMENT_FILES)


def partition_files(root: Path, day: dt.date, skipped: list | None = None) -> list[Path]:
    """The landed files of one day, sorted (subfolders included). The landing root is a jail: a
    symbolic link (file or folder) is never followed, and is added to `skipped`."""
    files = []
    for folder in partition_folders(Path(root), day):
        if folder.is_symlink():
            (skipped if skipped is not None else []).append(folder)
            continue
        for path in _walk(folder, skipped if skipped is not None else []):
            relative = path.relative_to(folder).parts
            if is_landed_file(path) and not any(part.startswith((".", "_")) for part in relative[:-1]):
                files.append(path)
    return sorted(files)


def _walk(folder: Path, skipped: list) -> Iterator[Path]:
    """Regular files under folder, links skipped (os.walk does not follow them into folders)."""
    for base, dirs, names in os.walk(folder):
        here = Path(base)
        for name in [*dirs, *names]:
            if (here / name).is_symlink():
                skipped.append(here / name)
        dirs[:] = [d for d in dirs if not (here / d).is_symlink()]
        for name in names:
            path = here / name
            if not path.is_symlink() and path.is_file():
                yield path


def landing_partitions(root: Path) -> dict[str, str]:
    """Every partition folder of the landing root -> fingerprint of its files (names, sizes, mtimes)."""
    root = Path(root)
    out: dict[str, str] = {}
    if not root.is_dir():
        return out
    for folder in sorted(root.iterdir()):
        match = FOLDER.match(folder.name)
        if not (match and folder.is_dir()):
            continue
        day = dt.date.fromisoformat(match.group(1))
        digest = hashlib.sha256()
        for f in partition_files(root, day):
            stat = f.stat()
            digest.update(f"{f}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
        out[day.isoformat()] = digest.hexdigest()
    return out


# -- the driver: pieces and tasks

@dataclass(frozen=True)
class Piece:
    """Part of a landed file: bytes [start, end) of a JSON lines file whose first line is
    `first_line`, or (end = -1) the whole file."""

    path: str
    start: int = 0
    end: int = -1
    first_line: int = 1


def _cuts(path: Path, size: int, split: int) -> list[Piece]:
    """A JSON lines file cut at the first line break after every `split` bytes, with the line
    number each piece starts at (newlines counted block by block; no line is parsed here)."""
    pieces, start, line = [], 0, 1
    with open(path, "rb") as f:
        while start < size:
            target = start + split
            if target >= size:
                pieces.append(Piece(str(path), start, size, line))
                break
            f.seek(target)
            f.readline()  # to the end of the line the cut falls into
            end = f.tell()
            pieces.append(Piece(str(path), start, end, line))
            f.seek(start)
            remaining, count = end - start, 0
            while remaining > 0:
                block = f.read(min(BLOCK, remaining))
                count += block.count(b"\n")
                remaining -= len(block)
            start, line = end, line + count
    return pieces


def plan_tasks(files: list[Path], parallelism: int, target: int | None = None) -> list[list[Piece]]:
    """The pieces of the day's files packed into tasks of even size: a multiple of `parallelism`
    tasks (so no core idles at the end), each of at most SPLIT_BYTES unless a single compressed
    file is larger. JSON lines files are cut at `target` bytes (by default the even share of one
    task); small files share tasks."""
    sizes = {f: f.stat().st_size for f in files}
    total = sum(sizes.values())
    parallelism = max(parallelism, 1)
    count = parallelism * max(1, -(-total // (SPLIT_BYTES * parallelism)))
    if target is None:
        count = min(count, max(1, total // MIN_TASK_BYTES)) if total < MIN_TASK_BYTES * parallelism else count
        target = max(1, -(-total // count))
    pieces: list[tuple[int, Piece]] = []
    for f in files:
        if f.name.endswith(".jsonl") and sizes[f] > target:
            pieces += [(p.end - p.start, p) for p in _cuts(f, sizes[f], target)]
        else:
            pieces.append((sizes[f], Piece(str(f))))
    count = max(count, -(-total // target)) if total else 1
    tasks: list[list[Piece]] = [[] for _ in range(count)]
    loads = [0] * count
    for size, piece in sorted(pieces, key=lambda p: -p[0]):  # largest first, into the lightest task
        i = loads.index(min(loads))
        tasks[i].append(piece)
        loads[i] += size
    return [sorted(t, key=lambda p: (p.path, p.start)) for t in tasks if t]


def tiling_faults(files: list[Path], tasks: list[list[Piece]]) -> list[str]:
    """Why the planned tasks would not read every byte of every landed file exactly once; []
    when they do. With every task's result counted once, this is what makes the records read
    the landed records, so that conservation (records read = rows stored) catches a file read
    twice or partly, independently of what the tasks counted."""
    landed = {str(f): f for f in files}
    faults = [f"{path}: listed {n} times" for path, n in sorted(Counter(map(str, files)).items()) if n > 1]
    by_file: dict[str, list[Piece]] = {}
    for piece in (p for task in tasks for p in task):
        by_file.setdefault(piece.path, []).append(piece)
    faults += [f"{path}: landed, not read" for path in sorted(set(landed) - set(by_file))]
    faults += [f"{path}: read, not landed" for path in sorted(set(by_file) - set(landed))]
    for path, pieces in sorted(by_file.items()):
        if any(p.end < 0 for p in pieces):
            if len(pieces) > 1:
                faults.append(f"{path}: read {len(pieces)} times")
            continue
        at = 0
        for piece in sorted(pieces, key=lambda p: p.start):
            if piece.start != at:
                faults.append(f"{path}: bytes {min(at, piece.start)}-{max(at, piece.start)} read "
                              f"{'twice' if piece.start < at else 'never'}")
            at = max(at, piece.end)
        size = landed[path].stat().st_size if path in landed else at
        if at != size:
            faults.append(f"{path}: read up to byte {at} of {size}")
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
    line = first_line
    while end is None or f.tell() < end:
        raw = f.readline(MAX_RECORD_BYTES + 1)
        if not raw:
            return
        if len(raw) > MAX_RECORD_BYTES and not raw.endswith(b"\n"):
            size = len(raw)
            head = raw[:SHOWN_BYTES]
            while raw and not raw.endswith(b"\n"):  # the rest of the record, block by block
                raw = f.readline(BLOCK)
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
    if path.endswith(".jsonl.gz"):
        line = 0
        try:
            with gzip.open(path, "rb") as f:
                for line, raw in _lines(f, 1, None):
                    yield line, raw
        except (EOFError, OSError, zlib.error) as exc:
            yield line + 1, Corrupt(f"compressed file breaks off at line {line + 1}: {exc}")
        return
    if path.endswith(".jsonl"):
        with open(path, "rb") as f:
            f.seek(piece.start)
            yield from _lines(f, piece.first_line, None if piece.end < 0 else piece.end)
        return
    with open(path, "rb") as f:
        text = f.read()
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
