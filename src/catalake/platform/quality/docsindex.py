"""What the data docs' index lists, kept by the day, so that a day's build costs that day.

GX's own site builder lists every stored validation result to find the ones it is asked to
render, and its index builder reads and parses every result to list it (a year of a thousand
tables: 365,000 results read at every build). catalake keeps, per day, the row each of that day's
results has in the index (`gx/uncommitted/data_docs_days/<day>.json`, written as the results are
stored), and builds:
* the day's own page, `day-<day>.html` beside the index: GX's index page of that day's results;
* the index: GX's index page of every suite and of the results of the last `RECENT_DAYS` days
  (as many as fit in `INDEX_ROWS` rows), with a panel linking every day's page (a directory
  listing: no result is read).
The rows are what GX's index builder reads from each result; rendering stays GX's own
(`SiteIndexPageRenderer` and its view, validator.py).
"""

from __future__ import annotations

import datetime as dt
import html
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Sequence

import orjson

from ..config import VALIDATIONS

DAYS = Path("gx") / "uncommitted" / "data_docs_days"  # one JSON file of index rows per day
RECENT_DAYS = 7  # the days whose results the index lists itself (GX's `validation_results_limit`, by day),
INDEX_ROWS = 1000  # as many of them as fit in this many rows (the newest day whatever its rows)
DAY_PAGE = "day-{day}.html"
FROM_STORE = ".rows-from-stored-results"  # marks the one reading of a warehouse's results before this release
PANEL_ANCHOR = '<div id="section-1-content-block-2" class="col-12 ge-index-page-tabs-container" >'


@dataclass(frozen=True)
class IndexRow:
    """A stored validation result as the index lists it: its store key's parts, and what the
    index shows of the result (its success, asset name and batch spec)."""

    suite: str
    run_name: str
    run_time: str
    batch_identifier: str
    success: bool
    asset_name: str
    batch_spec: dict

    @classmethod
    def of(cls, stored: Path, document: dict) -> "IndexRow":
        meta = document["meta"]
        spec = meta.get("batch_spec") or {}
        asset = spec.get("data_asset_name") or (meta.get("active_batch_definition") or {}).get("data_asset_name", "")
        return cls(document["suite_name"], meta["run_id"]["run_name"], meta["run_id"]["run_time"], stored.stem,
                   bool(document["success"]), asset, spec)

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.suite, self.run_name, self.run_time, self.batch_identifier

    def identifier(self):
        """GX's key of the stored result."""
        from great_expectations.core.run_identifier import RunIdentifier
        from great_expectations.data_context.types.resource_identifiers import (ExpectationSuiteIdentifier,
                                                                                ValidationResultIdentifier)

        return ValidationResultIdentifier(ExpectationSuiteIdentifier(self.suite),
                                          RunIdentifier(self.run_name, dt.datetime.fromisoformat(self.run_time)),
                                          self.batch_identifier)


def day_file(local: Path, day: str) -> Path:
    return Path(local) / DAYS / f"{day}.json"


def record(local: Path, day: str, stored: Iterable[tuple[Path, dict]]) -> None:
    """Add the rows of results just stored for `day` to the day's file (one write a day a run);
    the first time in a warehouse, the rows of every result stored before too."""
    index_rows_from_store(local)
    rows = {r.key: r for r in read_day(local, day)}
    rows.update((r.key, r) for r in (IndexRow.of(path, document) for path, document in stored))
    path = day_file(local, day)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_bytes(orjson.dumps([asdict(r) for r in sorted(rows.values(), key=lambda r: r.key)]))
    os.replace(temporary, path)  # a reader sees the old rows or the new, never half


def read_day(local: Path, day: str) -> list[IndexRow]:
    path = day_file(local, day)
    return [IndexRow(**row) for row in orjson.loads(path.read_bytes())] if path.exists() else []


def days(local: Path) -> list[str]:
    """The days that have rows, newest first."""
    folder = Path(local) / DAYS
    return sorted((p.stem for p in folder.glob("*.json")), reverse=True) if folder.is_dir() else []


def index_rows_from_store(local: Path, again: bool = False) -> int:
    """Every stored result's row, read from the results themselves (what GX's index builder did
    at every build): once for a warehouse, whose results before this release have no rows (a
    marker says it was done), or `again` for a whole rebuild. Returns the results read."""
    marker = Path(local) / DAYS / FROM_STORE
    if marker.exists() and not again:
        return 0
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()  # first: `record` below comes back here
    by_day: dict[str, list[tuple[Path, dict]]] = {}
    for path in (Path(local) / VALIDATIONS).rglob("*.json"):
        document = orjson.loads(path.read_bytes())
        day = day_of(document)
        if day:
            by_day.setdefault(day, []).append((path, document))
    for day, stored in by_day.items():
        record(local, day, stored)
    return sum(len(v) for v in by_day.values())


def day_of(document: dict) -> str | None:
    """The partition a stored result is of: the classification pass names it, GX's checkpoint
    (`catalake validate`) runs under a run name that starts with it."""
    meta = document.get("meta", {})
    day = meta.get("catalake", {}).get("partition") or str(meta.get("run_id", {}).get("run_name", ""))[:10]
    try:
        return dt.date.fromisoformat(day).isoformat()
    except ValueError:
        return None


def validation_links(rows: Sequence[IndexRow]) -> list[dict]:
    """The rows as GX's index builder hands them to its renderer (`validations_links`)."""
    from urllib.parse import quote

    links = []
    for row in rows:
        identifier = row.identifier()
        page = Path("validations", *row.suite.split("."), *identifier.run_id.to_tuple(), row.batch_identifier)
        links.append({
            "expectation_suite_name": row.suite, "filepath": quote(page.as_posix() + ".html"),
            "run_id": identifier.run_id, "batch_identifier": row.batch_identifier,
            "validation_success": row.success, "run_time": identifier.run_id.run_time, "run_name": row.run_name,
            "asset_name": row.asset_name, "batch_kwargs": {}, "batch_spec": row.batch_spec,
            "expectation_suite_filepath": str(Path("expectations", *row.suite.split("."))) + ".html",
        })
    return links


def days_panel(all_days: Sequence[str], listed: Sequence[str]) -> str:
    """The index's panel of every day's page, newest first, by month."""
    months: dict[str, list[str]] = {}
    for day in all_days:
        months.setdefault(day[:7], []).append(day)
    lines = "".join(
        f"<div><strong>{month}</strong> " + " ".join(
            f'<a href="{DAY_PAGE.format(day=d)}">{d[8:]}</a>' for d in month_days) + "</div>"
        for month, month_days in months.items())
    if not listed:
        return '<div id="catalake-days" class="col-12 p-1"><h6>Validation results by day</h6><p>none yet</p></div>'
    if len(listed) == 1:
        what = f"the results of {html.escape(listed[0])} (<a href=\"index.html\">the index</a> lists every suite)"
    else:
        what = f"the results of the last {len(listed)} days ({html.escape(listed[-1])} to {html.escape(listed[0])})"
    return (f'<div id="catalake-days" class="col-12 p-1"><h6>Validation results by day</h6>'
            f"<p>The table below lists {what}; each day's page lists that day's.</p>{lines}</div>")


def with_panel(page_html: str, panel: str) -> str:
    return page_html.replace(PANEL_ANCHOR, panel + PANEL_ANCHOR, 1) if PANEL_ANCHOR in page_html else page_html
