"""What the runs of a day have read: the ledger incremental runs go on from (issue 28).

`<warehouse>/_catalake/increments/<day>.json` holds the day's `epoch` (the full run the ledger
starts from) and its increments in order, each with what it read of every file: the byte it read
up to (`end`), the line the next read starts at, whether it ended at a line break, a fingerprint
of what it read (its size, its first and last 4 KiB), the pieces it was made of, and its counts
and quality tallies. A full run of the day starts a new ledger (one increment: every file whole).

An incremental run (increment.classify_increment) reads only what no increment read: new files,
and the new complete lines of a JSON lines file that only grew. A file that disappeared, shrank,
changed within what was read, grew after a last line without its line break, or grew while not
being JSON lines, cannot be continued: the run is a full run of the day instead, and says why. A
file listed with the size and modification time it was read at is taken as unchanged without
reading it (on object storage, no request per file already read).

Crash safety: the increment is written to the ledger (pending) before any table is committed;
each table's append carries the Delta application transaction (`catalake:<day>:<epoch>`, the
increment's number), so a run that finds a pending increment reads its very pieces again and
commits only the tables whose log does not have it yet: no range is ever committed twice, none
is lost.

The ledger also keeps, per table, what the day's runs know of it (cadence.py, issue 65):
`staged`, the files an increment wrote and did not commit yet (a table commits when it is due),
`rows`, each table's rows and files of the day (every table that holds any, as the full run that
started the ledger and the increments since committed them), and `tips`, each table's `Tip`
(appends.py: the version and ETag its last commit left). They are saved with the increment's
entry when it is done, so a run stopped before that finds them as they were before it. A staged file is committed by a later
increment or removed with the ledger by a full run (`forget`); recovery and the vacuum never take
one (`staged_names`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import uuid

from pyarrow import fs as pafs

from .. import uris
from ..landing import formats
from ..landing.listing import Landed, open_file
from ..landing.planning import BLOCK, Piece, newlines
from ..uris import Location

LEDGER_DIR = "_catalake/increments"
SAMPLE = 4096


def _path(root: Location, day: dt.date) -> tuple[pafs.FileSystem, str]:
    return root.filesystem, f"{root.path}/{LEDGER_DIR}/{day.isoformat()}.json"


def load(root: Location, day: dt.date) -> dict | None:
    filesystem, path = _path(root, day)
    try:
        with filesystem.open_input_stream(path) as f:
            return json.loads(f.read())
    except FileNotFoundError:
        return None


def save(root: Location, day: dt.date, ledger: dict) -> None:
    """The ledger written whole (one PUT on object storage; a local file replaced atomically)."""
    filesystem, path = _path(root, day)
    uris.make_folders(filesystem, path.rsplit("/", 1)[0])
    if isinstance(filesystem, pafs.LocalFileSystem):
        staged = f"{path}.{uuid.uuid4().hex}.tmp"  # one per writer: two runs of a day may save at once
        with filesystem.open_output_stream(staged) as out:
            out.write(json.dumps(ledger).encode())
        filesystem.move(staged, path)
    else:
        with filesystem.open_output_stream(path) as out:
            out.write(json.dumps(ledger).encode())


def forget(root: Location, day: dt.date) -> None:
    """The day is read anew (a full or subset run): no increment goes on from the old ledger.
    Its staged files are removed after it (they hold rows the new run reads again; should this
    stop in between, they are files no ledger names, which the vacuum removes)."""
    filesystem, path = _path(root, day)
    old = load(root, day)
    with contextlib.suppress(FileNotFoundError):
        filesystem.delete_file(path)
    for name, files in (old or {}).get("staged", {}).items():
        table = root.child(*name.split("/"))
        for f in files:
            with contextlib.suppress(FileNotFoundError):
                table.filesystem.delete_file(table.child(*f["path"].split("/")).path)


def drop_tables(root: Location, day: dt.date) -> None:
    """What the ledger knows of the day's tables is dropped (a replay is about to move rows
    between them): the next increments read their logs again. The staged files stay."""
    day_ledger = load(root, day)
    if day_ledger is not None and ("tips" in day_ledger or "rows" in day_ledger):
        day_ledger.pop("tips", None)
        day_ledger.pop("rows", None)
        save(root, day, day_ledger)


def next_due(root: Location, day: dt.date) -> float | None:
    """When the day's first staged table comes due (seconds since the epoch), or None: nothing
    is staged (one read of the ledger)."""
    return (load(root, day) or {}).get("next_due")


def staged_names(day_ledger: dict | None) -> set[str]:
    """The file names of the ledger's staged files: never an orphan, never vacuumed."""
    return {f["path"].rsplit("/", 1)[-1] for files in (day_ledger or {}).get("staged", {}).values() for f in files}


def all_staged(root: Location) -> set[str]:
    """The names of every staged file of every day's ledger (the vacuum keeps them)."""
    filesystem = root.filesystem
    folder = f"{root.path}/{LEDGER_DIR}"
    names: set[str] = set()
    for info in filesystem.get_file_info(pafs.FileSelector(folder, allow_not_found=True)):
        if info.base_name.endswith(".json"):
            with contextlib.suppress(FileNotFoundError, ValueError):
                names |= staged_names(load(root, dt.date.fromisoformat(info.base_name[:-5])))
    return names


def app_id(day: dt.date, epoch: str) -> str:
    """The Delta application transaction id of the day's increments since full run `epoch`."""
    return f"catalake:{day.isoformat()}:{epoch}"


def fingerprint(landing: Location, path: str, end: int) -> tuple[str, bool]:
    """What a read of [0, end) saw, in one open and two small reads: a digest of its size, first
    and last 4 KiB; and whether it ends at a line break."""
    digest = hashlib.sha256(str(end).encode())
    with open_file(landing, path) as f:
        digest.update(f.read(min(SAMPLE, end)))
        f.seek(max(0, end - SAMPLE))
        tail = f.read(end - max(0, end - SAMPLE))
    digest.update(tail)
    return digest.hexdigest(), end == 0 or tail.endswith(b"\n")


def last_line_end(landing: Location, path: str, start: int, size: int) -> int:
    """The byte after the last line break in [start, size), or `start` when there is none (a
    line still being written is left for a later run)."""
    at = size
    with open_file(landing, path) as f:
        while at > start:
            begin = max(start, at - BLOCK)
            f.seek(begin)
            block = f.read(at - begin)
            found = block.rfind(b"\n")
            if found >= 0:
                return begin + found + 1
            at = begin
    return start


def count_lines(landing: Location, path: str, start: int, end: int) -> int:
    with open_file(landing, path) as f:
        return newlines(f, start, end)


def is_lines(landing: Location, path: str) -> bool:
    from ..landing.listing import head_of

    return formats.sniff(head_of(landing, path), path.rsplit("/", 1)[-1]) == "lines"


def record_full(root: Location, landing: Location, day: dt.date, run: str, files: list[Landed], kept: dict,
                rows: dict[str, list] | None = None, tips: dict[str, dict] | None = None) -> None:
    """A new ledger after a full run of the day: every file read whole, as listed; `kept`: the
    run's counts and quality tallies (results.Merged.kept); `rows`: [rows, files] of the day in
    every table the run committed; `tips`: the tables' tips its commits left (appends.Tip)."""
    reads = {}
    for f in files:
        seen, newline = fingerprint(landing, f.path, f.size)
        reads[f.path] = {"end": f.size, "line": None, "newline": newline, "fingerprint": seen, "modified": f.modified_ns}
    save(root, day, {"day": day.isoformat(), "epoch": run, "increments": [
        {"n": 1, "kind": "full", "run": run, "reads": reads, "pieces": [], "done": True, **kept}],
        **({"rows": rows} if rows is not None else {}), **({"tips": tips} if tips else {})})


def state(ledger: dict) -> dict[str, dict]:
    """Per file, what the day's increments read of it (the last read wins)."""
    out: dict[str, dict] = {}
    for increment in ledger["increments"]:
        out.update(increment["reads"])
    return out


def plan(landing: Location, ledger: dict, files: list[Landed]) -> tuple[list[Piece], dict[str, dict], str | None]:
    """(pieces to read, what they read per file, None) for an increment; or ([], {}, why) when
    the day cannot be continued and needs a full run."""
    read = state(ledger)
    landed = {f.path: f for f in files}
    for path, before in read.items():
        now = landed.get(path)
        if now is None:
            return [], {}, f"{path}: read before, gone now"
        if now.size < before["end"]:
            return [], {}, f"{path}: {now.size} bytes, {before['end']} read before"
        if now.size == before["end"] and now.modified_ns and now.modified_ns == before.get("modified"):
            continue  # not written to since it was read (no request on object storage)
        if fingerprint(landing, path, before["end"])[0] != before["fingerprint"]:
            return [], {}, f"{path}: changed within the {before['end']} bytes read before"
        if now.size > before["end"] and not before["newline"]:
            return [], {}, f"{path}: grew after a last line without its line break"
        if now.size > before["end"] and not is_lines(landing, path):
            return [], {}, f"{path}: grew, and only JSON lines files are read on from where they were"
    pieces, reads = [], {}
    for f in files:
        before = read.get(f.path)
        start = before["end"] if before else 0
        if before is not None and f.size == start:
            continue
        if before is None and not is_lines(landing, f.path):  # read whole, as a full run reads it
            pieces.append(Piece(f.path, size=f.size, fields=f.fields))
            reads[f.path] = {"end": f.size, "line": None, "newline": True,
                             "fingerprint": fingerprint(landing, f.path, f.size)[0], "modified": f.modified_ns}
            continue
        end = last_line_end(landing, f.path, start, f.size)
        if end == start:
            continue  # only an unfinished line: the next run's
        counted = before["line"] if before and before["line"] is not None else None
        line = (counted if counted is not None else 1 + count_lines(landing, f.path, 0, start)) if start else 1
        pieces.append(Piece(f.path, start, end, line, kind="lines", fields=f.fields))
        reads[f.path] = {"end": end, "line": line + count_lines(landing, f.path, start, end), "newline": True,
                         "fingerprint": fingerprint(landing, f.path, end)[0],
                         "modified": f.modified_ns if end == f.size else None}
    return pieces, reads, None


def as_json(piece: Piece) -> list:
    return [piece.path, piece.start, piece.end, piece.first_line, piece.size, piece.kind, [list(f) for f in piece.fields]]


def from_json(row: list) -> Piece:
    path, start, end, first, size, kind, fields = row
    return Piece(path, start, end, first, size, kind, tuple(tuple(f) for f in fields))
