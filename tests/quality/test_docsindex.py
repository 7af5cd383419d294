"""The data docs a year in: a run renders its own days' pages and an index that reads none of the
results stored before (platform/quality/docsindex.py), and the index still reaches every page."""

import datetime as dt
import re

from catalake.platform.config import DOCS_INDEX, VALIDATIONS
from catalake.platform.quality import docsindex
from catalake.platform.quality.datadocs import store_validation_result, validation_result_document
from catalake.platform.quality.evaluation import Counts
from catalake.platform.quality.validator import Validator

TABLES = ["shop_orders__created", "shop_orders__paid"]
DAYS = [(dt.date(2026, 1, 1) + dt.timedelta(days=i)).isoformat() for i in range(12)]


def _store_day(local, day: str) -> list:
    """What a day's classification stores: a result per table, and the day's index rows."""
    stored = []
    for table in TABLES:
        document = validation_result_document(f"messages/{table}", table, day, f"run-{day}", [],
                                              Counts(evaluated=10, unexpected=1 if table.endswith("paid") else 0), 0)
        stored.append((store_validation_result(local, document), document))
    docsindex.record(local, day, stored)
    return stored


def test_a_days_build_reads_only_its_days_results_and_the_index_reaches_every_day(tmp_path):
    for day in DAYS:
        _store_day(tmp_path, day)
    # a result of an earlier day that cannot be read: a build that lists or reads it would say so
    old = next((tmp_path / VALIDATIONS).rglob(f"*-{DAYS[0]}.json"))
    old.write_text("{ not json")

    index, pages, missing = Validator(tmp_path).build_partition_docs([DAYS[-1]])

    assert index == tmp_path / DOCS_INDEX and not missing
    assert sorted(p.name for p in pages) == sorted(f"{t}-{DAYS[-1]}.html" for t in TABLES)
    assert all(p.exists() for p in pages)
    site = index.parent
    assert not list((site / "validations").rglob(f"*-{DAYS[0]}.html"))  # no other day's page rendered
    html = index.read_text()
    listed = set(re.findall(r'validations/[^"]*?-(\d{4}-\d{2}-\d{2})\.html', html))
    assert listed == set(DAYS[-docsindex.RECENT_DAYS:])  # the table lists the last days' results
    assert all(f'href="day-{day}.html"' in html for day in DAYS)  # and links every day's page
    day_page = (site / f"day-{DAYS[-1]}.html").read_text()
    assert all(f"{t}-{DAYS[-1]}.html" in day_page for t in TABLES)
    # the failed result shows as failed, read from the kept row
    rows = {r.suite: r for r in docsindex.read_day(tmp_path, DAYS[-1])}
    assert rows["shop_orders__paid"].success is False and rows["shop_orders__created"].success is True
    # a page is rendered once: the day built again renders only what a new run of it stored
    rendered = {p: p.stat().st_mtime_ns for p in pages}
    again = _store_day(tmp_path, DAYS[-1])
    _, pages_again, missing = Validator(tmp_path).build_partition_docs([DAYS[-1]])
    assert not missing and len(pages_again) == 4 and all(p.stat().st_mtime_ns == t for p, t in rendered.items())
    assert {p.parent.parent.name for p in pages_again} == {f"{DAYS[-1]} (run run-{DAYS[-1]})"}
    assert all(docsindex.IndexRow.of(path, d).key in {r.key for r in docsindex.read_day(tmp_path, DAYS[-1])}
               for path, d in again)


def test_a_warehouse_of_an_earlier_release_gets_its_rows_once_from_the_stored_results(tmp_path):
    for day in DAYS[:2]:  # results an earlier release stored: no rows kept
        for table in TABLES:
            store_validation_result(tmp_path, validation_result_document(
                f"messages/{table}", table, day, f"run-{day}", [], Counts(evaluated=3), 0))
    _store_day(tmp_path, DAYS[2])  # this release's first day: every stored result gets its row

    assert [len(docsindex.read_day(tmp_path, day)) for day in DAYS[:3]] == [2, 2, 2]
    assert docsindex.index_rows_from_store(tmp_path) == 0  # once: the rows are there now
    Validator(tmp_path).build_partition_docs([DAYS[2]])
    html = (tmp_path / DOCS_INDEX).read_text()
    assert all(f'href="day-{day}.html"' in html for day in DAYS[:3])


def test_a_second_run_of_a_day_adds_its_results_to_the_days_rows(tmp_path):
    first = _store_day(tmp_path, DAYS[0])
    second = _store_day(tmp_path, DAYS[0])
    rows = docsindex.read_day(tmp_path, DAYS[0])
    assert len(rows) == len(first) + len(second) == 4
    assert {r.batch_identifier for r in rows} == {f"{t}-{DAYS[0]}" for t in TABLES}
