"""Planning a day: the driver cuts the listed files into pieces and packs them into tasks.

The driver lists the files once, with their sizes (listing.py), and cuts them into tasks
(`plan_tasks`): a file larger than the split size is cut where its format can be cut (JSON lines
at line ends, with the first line number of each piece counted by the driver; Avro at block
boundaries, with the first record number from the blocks' headers; Parquet at row groups), small
files are packed together, a compressed file or a document is one piece (a `.json` file of JSON
lines is cut as lines). A task reads consecutive pieces in path order (`pack`), a stretch of the
day, so that each file it writes holds the events of that stretch. Every piece ends at a
planned byte: a file that grows while the day runs is read up to the size it was listed with (its
last complete line), and the rest is the next run's. `tiling_faults` proves a plan reads every
listed byte once.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass
from itertools import accumulate
from typing import Sequence

from ..uris import Location
from . import formats
from .listing import Landed, display_path, head_of, open_file

# the largest piece one task reads: few tasks mean few files per table (a task writes each table
# it feeds once), and a task's memory does not grow with it (rows become Parquet as it goes)
SPLIT_BYTES = 256 << 20
MIN_TASK_BYTES = 4 << 20  # smaller days are not cut into more tasks than this fills
BLOCK = 8 << 20


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



def _cuts(landing: Location | None, landed: Landed, split: int) -> list[Piece]:
    """A JSON lines file cut at the first line break after every `split` bytes, with the line
    number each piece starts at (newlines counted block by block; no line is parsed here)."""
    path, size = landed.path, landed.size
    pieces, start, line = [], 0, 1
    with open_file(landing, path) as f:
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
    """The line breaks in bytes [start, end) of an open file, counted block by block, each block
    read into one reused buffer and counted by numpy (1.6x `bytes.count` on fresh blocks: the
    driver counts every byte of a day's JSON lines to number its lines, 3.8 GB at 10M records)."""
    import numpy as np

    f.seek(start)
    remaining, count = end - start, 0
    buffer = np.empty(min(BLOCK, max(remaining, 0)), np.uint8)
    view = memoryview(buffer)
    while remaining > 0:
        n = f.readinto(view[:min(BLOCK, remaining)])
        if not n:
            break
        count += int(np.count_nonzero(buffer[:n] == 10))  # b"\n"
        remaining -= n
    return count


def _avro_cuts(landing: Location | None, landed: Landed, split: int) -> list[Piece]:
    """An Avro object container file cut at block boundaries after every `split` bytes, with the
    number of the first record of each piece (each block's header says how many records it
    holds; fastavro reads the header and the counts, the data is skipped, not read). A file
    whose blocks cannot be walked is one piece: reading it says where it breaks."""
    import fastavro
    from fastavro.read import HEADER_SCHEMA

    path, size = landed.path, landed.size
    cuts = [(0, 1)]  # (byte, first record)
    try:
        with open_file(landing, path) as f:
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


def row_group_starts(parquet) -> list[int]:
    """The byte each row group of a Parquet file starts at (its first column chunk)."""
    meta = parquet.metadata
    starts = []
    for i in range(meta.num_row_groups):
        group = meta.row_group(i)
        chunk = group.column(0)
        starts.append(min(o for o in (chunk.dictionary_page_offset, chunk.data_page_offset) if o is not None and o > 0))
    return starts


def _parquet_cuts(landing: Location | None, landed: Landed, split: int) -> list[Piece]:
    """A Parquet file cut at row groups after every `split` bytes (only its footer is read)."""
    import pyarrow.parquet as pq

    path, size = landed.path, landed.size
    try:
        with open_file(landing, path) as f:
            starts = row_group_starts(pq.ParquetFile(f))
    except Exception:  # noqa: BLE001 - any fault of the file is reported by reading it
        return [Piece(path, size=size, fields=landed.fields)]
    cuts = [0]
    for start in starts[1:]:
        if start - cuts[-1] >= split:
            cuts.append(start)
    bounds = cuts[1:] + [size]
    return [Piece(path, start, end, kind="parquet", fields=landed.fields) for start, end in zip(cuts, bounds)]


def _document_cuts(landing: Location | None, landed: Landed, split: int) -> list[Piece]:
    """A JSON text file cut as JSON lines when its first line is a whole JSON value and more
    follows (a Kafka Connect sink's `.json` files, one record a line), as reading tells them; one
    piece otherwise (one document, a batch array included, or values back to back)."""
    with open_file(landing, landed.path) as f:
        first = f.readline(FIRST_LINE_BYTES)
        lines = first.endswith(b"\n") and f.tell() < landed.size and formats.is_json_value(first)
    return _cuts(landing, landed, split) if lines else [Piece(landed.path, size=landed.size, fields=landed.fields)]


FIRST_LINE_BYTES = 10 << 20  # a longer first line: not read whole to decide
CUTTERS = {"lines": _cuts, "document": _document_cuts, "avro": _avro_cuts, "parquet": _parquet_cuts}


def plan_tasks(landing: Location | None, files: list[Landed], parallelism: int,
               target: int | None = None) -> list[list[Piece]]:
    """The pieces of the day's files (below `landing`; None: local files) packed into tasks of
    even size, each a run of consecutive pieces in path order (pack): a multiple of `parallelism`
    tasks (so no core idles at the end), each of at most SPLIT_BYTES unless a single compressed
    file is larger. A file larger than `target` bytes (by default the even share of one task) is
    cut where its format allows (its first bytes say which); small files share tasks. Every piece
    ends at the size the file was listed with."""
    total = sum(f.size for f in files)
    parallelism = max(parallelism, 1)
    count = parallelism * max(1, -(-total // (SPLIT_BYTES * parallelism)))
    if target is None:
        count = min(count, max(1, total // MIN_TASK_BYTES)) if total < MIN_TASK_BYTES * parallelism else count
        target = max(1, -(-total // count))
    pieces: list[tuple[int, Piece]] = []
    for f in files:
        cut = CUTTERS.get(formats.sniff(head_of(landing, f.path), f.name)) if f.size > target else None
        if cut is not None:
            pieces += [(p.length, p) for p in cut(landing, f, target)]
        else:
            pieces.append((f.size, Piece(f.path, size=f.size, fields=f.fields)))
    return pack(pieces, max(count, -(-total // target)) if total else 1, arrivals(files))


def arrivals(files: list[Landed]) -> dict[str, int]:
    """Each landed file's time of arrival as the listing saw it (its modification time)."""
    return {f.path: f.modified_ns for f in files}


def pack(pieces: list[tuple[int, Piece]], count: int, arrived: dict[str, int] | None = None) -> list[list[Piece]]:
    """(size, piece)s into at most `count` tasks, each a run of consecutive pieces in the order
    their files arrived (`arrived`: path -> modification time; then path, then start byte), of
    bytes as even as such runs allow (contiguous_runs). So a task reads a stretch of the day and
    the file it writes per table holds the events of that stretch: a query for one hour opens
    the few files of that hour, by their statistics on `time`. Arrival rather than path: a
    capture tool's paths often sort by source or partition first (Event Hubs Capture's
    `{Partition}/{Year}/...`, Kafka Connect's `topics/<topic>/partition=N/...`), which would give
    each task a source's whole day. Packing the largest piece first into the lightest task evens
    the bytes a little more but gives every task pieces from all over the day, and so every file
    the whole day's range."""
    arrived = arrived or {}
    ordered = sorted(pieces, key=lambda p: (arrived.get(p[1].path, 0), p[1].path, p[1].start))
    return [[piece for _, piece in ordered[run.start:run.stop]]
            for run in contiguous_runs([size for size, _ in ordered], count)]


def contiguous_runs(sizes: Sequence[int], count: int) -> list[range]:
    """`sizes` (their indices) cut into min(count, len(sizes)) runs of consecutive indices, none
    empty: the largest sum of a run is the least any such cut allows (the linear partition), and
    within that, each cut falls as near its even share of the total (j * total / count) as it can.
    Also how merges group a partition's files by time (warehouse/merging.py)."""
    n = len(sizes)
    if n == 0:
        return []
    count = max(1, min(count, n))
    prefix = list(accumulate(sizes, initial=0))
    total = prefix[-1]

    def reach(start: int, limit: int) -> int:
        """The end of the longest run from `start` whose sum is at most `limit`."""
        return bisect_right(prefix, prefix[start] + limit) - 1

    def fits(limit: int) -> bool:
        start = 0
        for _ in range(count):
            start = reach(start, limit)
            if start == n:
                return True
        return False

    low, high = max(max(sizes), -(-total // count)), total  # the least largest run: by bisection
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if fits(middle) else (middle + 1, high)
    limit = low
    needed = [0] * (n + 1)  # the fewest runs of at most `limit` that hold sizes[i:]
    for i in range(n - 1, -1, -1):
        needed[i] = 1 + needed[reach(i, limit)]
    cuts = [0]
    for j in range(1, count):
        left = count - j  # runs after this cut
        first = cuts[-1] + 1
        last = min(reach(cuts[-1], limit), n - left)  # within the limit, a size for each run left
        while first < last and needed[first] > left:  # `needed` falls as the cut moves on
            first += 1
        share = total * j / count
        at = min(max(bisect_left(prefix, share, first, last + 1), first), last)
        if at > first and share - prefix[at - 1] <= prefix[at] - share:
            at -= 1
        cuts.append(at)
    cuts.append(n)
    return [range(a, b) for a, b in zip(cuts, cuts[1:])]


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
