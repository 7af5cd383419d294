"""Listing the landing zone (../shared/docs/landing-zone.md): the files of one daily partition.

The landing root is a local folder or a URI (`s3://bucket/prefix`, any filesystem of uris.py).
Where a day's files are below it is the landing layout (layouts.py: by default `<root>/YYYY-MM-DD/`
or `<root>/dt=YYYY-MM-DD/`; Hive-style, Event Hubs Capture and Kafka Connect folders by setting);
every file below a day's folder is the day's, subfolders included. `_SUCCESS`, `.crc` and
dot-files are ignored. A landing root that cannot be listed is an error naming it
(`LocationError`); a day without a folder is an empty day that says so (`DayListing.missing`).

Files are read by their literal path (no pattern expansion: a file named `rides-*.jsonl` is one
file), and a local landing root is a jail: symbolic links are skipped and reported, never read.
A name that is not valid UTF-8 is read, and shown with its undecodable bytes escaped
(`display_path`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import os
from dataclasses import dataclass, field, replace

from pyarrow import fs as pafs

from .. import layouts, uris
from ..errors import LocationError
from ..layouts import Layout
from ..uris import Location
from . import formats

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


def check_root(root: str | Location) -> Location:
    """The landing root; LocationError naming it and the cause when it does not exist, is not a
    folder, or cannot be read (no such bucket, no credentials, no route)."""
    landing = Location.of(root)
    try:
        info = landing.filesystem.get_file_info(landing.path)
        if info.type == pafs.FileType.Directory and landing.remote:  # listing is allowed
            landing.filesystem.get_file_info(pafs.FileSelector(landing.path, allow_not_found=True))
    except OSError as exc:
        raise LocationError(f"landing {landing.uri}: cannot be read: {uris.describe(exc)}") from None
    if info.type == pafs.FileType.NotFound:
        raise LocationError(f"landing {landing.uri}: does not exist")
    if info.type != pafs.FileType.Directory:
        raise LocationError(f"landing {landing.uri}: is not a folder")
    return landing


def _inside(landing: Location, location: str) -> str:
    """The path inside the landing's filesystem of a folder or file below its root."""
    return landing.path + location[len(landing.uri):] if landing.remote else location


def _child(landing: Location, folder: str, name: str) -> str:
    return f"{folder}/{name}" if landing.remote else os.path.join(folder, name)


def _layout(layout: str | Layout | None) -> Layout:
    return layout if isinstance(layout, Layout) else layouts.parse(layout)


def list_day(root: str | Location, day: dt.date, layout: str | Layout | None = None) -> DayListing:
    """The landed files of one day in the layout (default `day`), sorted (subfolders included).
    A root that does not exist or cannot be listed raises LocationError naming it and the cause."""
    landing = check_root(root)
    listing = DayListing()
    for _, folder, fields, landed in day_folders(landing, _layout(layout), day, listing):
        _list_folder(landing, folder, fields, listing, landed)
    listing.files.sort(key=lambda f: f.path)
    return listing


def _list_folder(landing: Location, folder: str, fields: tuple, listing: DayListing, landed: Landed | None = None) -> None:
    """The files below a day's folder into `listing`; or, where the layout named the file
    itself (`landed`), that file (its folder is then a folder of the day)."""
    if landed is not None:
        parent = os.path.dirname(folder)  # a URI's too: its separator is `/`
        if not listing.folders or listing.folders[-1] != parent:
            listing.folders.append(parent)
        listing.files.append(replace(landed, fields=fields))
        return
    before = len(listing.files)
    if landing.remote:
        _list_remote(landing, folder, listing)
    else:
        _list_local(folder, listing)
    if fields:
        listing.files[before:] = [replace(f, fields=fields) for f in listing.files[before:]]


def _children(landing: Location, folder: str) -> list[tuple[str, str, str, object]]:
    """(name, path, kind: dir | file | link, pyarrow FileInfo or os.DirEntry) of a folder's
    entries that are not hidden."""
    if landing.remote:
        path = _inside(landing, folder)
        try:
            found = landing.filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
        except OSError as exc:
            raise LocationError(f"landing {folder}: cannot be listed: {uris.describe(exc)}") from None
        return [(i.base_name, folder + i.path[len(path):], "dir" if i.type == pafs.FileType.Directory else "file", i)
                for i in found if not is_hidden(i.base_name)]
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [(e.name, e.path, "link" if e.is_symlink() else "dir" if e.is_dir() else "file", e)
            for e in entries if not is_hidden(e.name)]


def _landed(path: str, entry) -> Landed:
    """A listed file as Landed, from its listing entry (one stat of a local file)."""
    if isinstance(entry, pafs.FileInfo):
        return Landed(path, entry.size, entry.mtime_ns or 0)
    stat = entry.stat()
    return Landed(path, stat.st_size, stat.st_mtime_ns)


def day_folders(landing: Location, layout: Layout, day: dt.date | None,
                listing: DayListing | None = None) -> list[tuple[dt.date, str, tuple, Landed | None]]:
    """(day, folder, path fields, None) of every folder of the layout below the root (of `day`
    only, when given), and (day, path, path fields, Landed) of every file the layout's last
    segment names: folder by folder along the template, listing only what can still match."""
    listing = listing if listing is not None else DayListing()
    level: list[tuple[str, dict, Landed | None]] = [(landing.uri, {}, None)]
    for i, segment in enumerate(layout.segments):
        last = i == len(layout.segments) - 1
        following: list[tuple[str, dict, Landed | None]] = []
        for folder, values, _ in level:
            if segment.pattern is None:  # a literal folder: no listing needed
                path = _child(landing, folder, segment.text)
                if not landing.remote and os.path.islink(path):
                    listing.skipped.append(path)
                else:
                    following.append((path, values, None))
                continue
            for name, path, kind, entry in _children(landing, folder):
                found = segment.match_file(name) if kind == "file" and segment.files else segment.match(name)
                if found is None:
                    continue
                merged = {**values, **found}
                if day is not None and not layouts.agrees(merged, day):
                    continue
                if kind == "link":  # the landing root is a jail: a link is reported, never followed
                    listing.skipped.append(path)
                elif kind == "dir":
                    following.append((path, merged, None))
                elif segment.files:
                    following.append((path, merged, _landed(path, entry)))
                elif last and layouts.day_of(merged) is not None:
                    listing.ignored.append(path + " (a file where the day's folder belongs)")
        level = following
    out = []
    for folder, values, landed in level:
        found_day = layouts.day_of(values)
        if found_day is not None and (day is None or found_day == day):
            out.append((found_day, folder, layouts.fields_of(values), landed))
    return sorted(out, key=lambda f: f[1])


def _list_remote(landing: Location, folder: str, listing: DayListing) -> None:
    filesystem, path = landing.filesystem, _inside(landing, folder)
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
        raise LocationError(f"landing {folder}: cannot be listed: {uris.describe(exc)}") from None
    for info in found:
        if info.type != pafs.FileType.File:
            continue
        parts = info.path[len(path):].strip("/").split("/")
        if any(is_hidden(p) for p in parts):
            continue
        listing.files.append(Landed(folder + info.path[len(path):], info.size, info.mtime_ns or 0))


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


def partition_files(root: str | Location, day: dt.date, skipped: list | None = None, layout: str | Layout | None = None) -> list[Landed]:
    """The landed files of one day (see list_day); symbolic links found are added to `skipped`."""
    listing = list_day(root, day, layout)
    if skipped is not None:
        skipped.extend(listing.skipped)
    return listing.files


def landing_partitions(root: str | Location, layout: str | Layout | None = None) -> dict[str, str]:
    """Every day of the landing root in the layout -> fingerprint of its files (names, sizes,
    modification times). A root that cannot be read raises LocationError."""
    landing = check_root(root)
    by_day: dict[dt.date, DayListing] = {}
    for day, folder, fields, landed in day_folders(landing, _layout(layout), None):
        _list_folder(landing, folder, fields, by_day.setdefault(day, DayListing()), landed)
    out: dict[str, str] = {}
    for day, listing in sorted(by_day.items()):
        digest = hashlib.sha256()
        for f in sorted(listing.files, key=lambda f: f.path):
            digest.update(f"{display_path(f.path)}|{f.size}|{f.modified_ns}\n".encode())
        out[day.isoformat()] = digest.hexdigest()
    return out


def first_day(root: str | Location, layout: str | Layout | None = None) -> dt.date | None:
    """The landing zone's earliest day in the layout, or None (also when it cannot be listed)."""
    try:
        found = day_folders(check_root(root), _layout(layout), None)
    except (OSError, LocationError):
        return None
    return min((d for d, *_ in found), default=None)


DEFAULT_START = "2026-11-01"  # the first partition of a landing zone with no day in it yet


def open_file(landing: Location | None, path: str):
    """A seekable binary reader of a file below the landing root (`path` as listed; no root: a
    local file)."""
    if landing is None or not landing.remote:
        return open(path, "rb")
    return io.BufferedReader(landing.filesystem.open_input_file(_inside(landing, path)), buffer_size=REMOTE_BLOCK)


def head_of(landing: Location | None, path: str) -> bytes:
    """A file's first bytes (its magic), in one small read (no buffer filled on object storage)."""
    if landing is None or not landing.remote:
        with open(path, "rb") as f:
            return f.read(formats.HEAD_BYTES)
    with landing.filesystem.open_input_file(_inside(landing, path)) as f:
        return f.read_at(formats.HEAD_BYTES, 0)
