"""The validator: Great Expectations (1.x)'s own engine over a table's stored rows, and the GX
file context under the warehouse.

One GX file context lives under the warehouse (`<warehouse>/gx`): the suites, the validation
results and the data docs site (`gx/uncommitted/data_docs/local_site/index.html`). `Validator`
opens it; its `build_partition_docs` renders the pages of the validation results datadocs.py
stored (the `data_docs` asset).

* `Validator.validate` / `validate_stored`: GX's own engine on a stored partition (a Spark
  DataFrame), the second opinion (`catalake validate`, tests) on what the classification pass
  (evaluation.py) decided record by record. It answers with two Spark queries per suite however
  many expectations it has: the row count, then one aggregate computing every expectation's
  unexpected count together. Only expectations that failed are then asked for a few unexpected
  values (one more small query each).
* `SuiteOutcome` / `ExpectationOutcome`: a suite's results as the Dagster checks and the CLI
  report them, from GX's validation or from the classification pass (`pass_outcome`).
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import orjson

from ..config import DOCS_INDEX, GX_SUITES, VALIDATIONS
from .datadocs import TYPES, annotate_page, day_page, located
from .evaluation import Counts, ExpectationResult
from .expectations import DERIVED, ERROR, import_gx
from .suites import expectation_summary, suite_document
from .webassets import localize

DATASOURCE = "catalake"
BATCH = "partition"
EXAMPLES = 5


@dataclass
class ExpectationOutcome:
    type: str
    column: str | None
    rule: str
    severity: str
    success: bool
    unexpected_count: int | None = None
    unexpected_percent: float | None = None
    examples: list = field(default_factory=list)
    observed: Any = None
    error: str | None = None
    evaluated: int | None = None
    id: str | None = None

    def as_json(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v not in (None, [])}


@dataclass
class SuiteOutcome:
    suite: str
    rows: int  # records evaluated: the records matched (the pass), the stored rows (GX)
    outcomes: list[ExpectationOutcome]
    docs: Path | None = None  # the data docs page of these results, or the site's index
    dropped: int | None = None  # from the classification pass: records dead-lettered for a rule (None: GX on stored rows)

    @property
    def stored(self) -> int:
        """Rows of the partition in the table: the matched records less those dead-lettered."""
        return self.rows - (self.dropped or 0)

    @property
    def success(self) -> bool:
        return all(o.success for o in self.outcomes)

    @property
    def errors(self) -> list[ExpectationOutcome]:
        """Failed expectations of what the catalog requires (they block downstream assets)."""
        return [o for o in self.outcomes if not o.success and o.severity == ERROR]

    @property
    def warnings(self) -> list[ExpectationOutcome]:
        return [o for o in self.outcomes if not o.success and o.severity != ERROR]


def pass_outcome(suite: str, results: Sequence[ExpectationResult], types: Counts, rejected: int,
                 docs: Path | None = None) -> SuiteOutcome:
    """A table's results from the classification pass, in the shape of a GX validation's.

    Records the classifier rejected count as unexpected for the ERROR expectations they broke:
    a failed ERROR expectation says records were dead-lettered (`dropped`); the stored rows meet
    the suite by construction."""
    outcomes = [
        ExpectationOutcome(r.expectation.type, r.expectation.column, r.expectation.rule, r.severity, r.success,
                           r.unexpected_count, r.unexpected_percent, located(r.examples), evaluated=r.element_count,
                           id=r.expectation.id)
        for r in results
    ]
    evaluated, unexpected, examples = types.evaluated, types.unexpected, types.examples
    outcomes.append(ExpectationOutcome(TYPES, "data", "payload type", ERROR, unexpected == 0, unexpected,
                                       unexpected / evaluated * 100 if evaluated else None, located(examples),
                                       evaluated=evaluated, id="data:type"))
    return SuiteOutcome(suite, evaluated, outcomes, docs, rejected)


def validation_frame(frame, suite):
    """The partition plus the derived columns the suite's expectations address."""
    from pyspark.sql import functions as F

    derived = (suite.meta or {}).get(DERIVED) or {}
    return frame.select("*", *[F.expr(sql).alias(name) for name, sql in derived.items()]) if derived else frame


def _outcome(result) -> ExpectationOutcome:
    summary = expectation_summary(result.expectation_config)
    info = result.exception_info or {}
    error = info.get("exception_message") if info.get("raised_exception") else None
    detail = result.result or {}
    return ExpectationOutcome(
        type=summary["type"],
        column=summary["kwargs"].get("column"),
        rule=summary["meta"].get("rule", ""),
        severity=summary["meta"].get("severity", ERROR),
        success=bool(result.success),
        unexpected_count=detail.get("unexpected_count"),
        unexpected_percent=detail.get("unexpected_percent"),
        observed=detail.get("observed_value"),
        error=error,
        evaluated=detail.get("element_count"),
        id=summary["meta"].get("id"),
    )


class Validator:
    """GX file context under the warehouse."""

    def __init__(self, warehouse: Path):
        gx = import_gx()
        logging.getLogger("great_expectations").setLevel(logging.ERROR)
        self.root = Path(warehouse)
        self.root.mkdir(parents=True, exist_ok=True)
        self.context = gx.get_context(mode="file", project_root_dir=str(self.root))
        from great_expectations.data_context.types.base import ProgressBarsConfig

        self.context.variables.progress_bars = ProgressBarsConfig(globally=False)  # they flood stderr
        self._datasource = None

    @property
    def docs_index(self) -> Path:
        return self.root / DOCS_INDEX

    @property
    def datasource(self):
        # persist=False: the caller caches the partition and unpersists it afterwards
        if self._datasource is None:
            self._datasource = self.context.data_sources.add_or_update_spark(name=DATASOURCE, persist=False)
        return self._datasource

    def build_partition_docs(self, partitions: Sequence[str]) -> tuple[Path, list[Path], list[Path]]:
        """Render the data docs pages of some partitions' stored results that have none yet, each
        day's page, the index, and the page of every suite that has none or changed since, in one
        build however many the days, at the cost of those days' results whatever the results
        stored before (docsindex.py). Returns the index, the days' validation pages, and those GX
        did not write (GX logs a page it fails to render and goes on)."""
        from .docsindex import index_rows_from_store, read_day

        index_rows_from_store(self.root)  # once, for a warehouse of an earlier release
        results = [row.identifier() for day in partitions for row in read_day(self.root, day)]
        stored = [self.root / VALIDATIONS / Path(*k.to_tuple()).with_suffix(".json") for k in results]
        built = [day_page(self.root, path) for path in stored]
        # a stored result never changes: its page is rendered once (a day run again adds its own)
        new = [(key, path, page) for key, path, page in zip(results, stored, built) if not page.exists()]
        pages = self.docs_index.parent / "expectations"
        suites = []
        for key in self.context.expectations_store.list_keys():
            suite_page, suite_file = pages / f"{key.name}.html", self.root / GX_SUITES / f"{key.name}.json"
            if not suite_page.exists() or (suite_file.exists() and suite_file.stat().st_mtime > suite_page.stat().st_mtime):
                suites.append(key)
        started = time.time() - 1  # file times may be rounded to the second
        builder = self._site_builder()
        _render(builder, [key for key, _, _ in new] + suites)
        missing = [page for _, _, page in new if not page.exists() or page.stat().st_mtime < started]
        for _, path, page in new:
            if page not in missing:
                annotate_page(page, orjson.loads(path.read_bytes()))
        written = self._write_index(builder, partitions)
        site = self.docs_index.parent
        localize(site, [p for p in [*(page for _, _, page in new), *(pages / f"{k.name}.html" for k in suites),
                                    *written] if p.exists() and p.stat().st_mtime >= started])
        return self.docs_index, built, missing

    def build_docs(self) -> Path:
        """The whole data docs site rebuilt: every page GX renders, each day's page and the index
        (`catalake docs --build`; a run builds its days only, build_partition_docs)."""
        from .docsindex import days, index_rows_from_store

        started = time.time() - 1
        self.context.build_data_docs(build_index=False)
        index_rows_from_store(self.root, again=True)
        self._write_index(self._site_builder(), days(self.root))
        site = self.docs_index.parent
        localize(site, [p for p in site.rglob("*.html") if p.stat().st_mtime >= started])
        return self.docs_index

    def _site_builder(self):
        """GX's builder of the context's (one) data docs site, made as `build_data_docs` makes it
        (GX has no public call that returns it)."""
        name, config = next(iter(self.context.variables.data_docs_sites.items()))
        builder = self.context._init_site_builder_for_data_docs_site_creation(site_name=name, site_config=config)
        if not (self.docs_index.parent / "static").is_dir():
            builder.target_store.copy_static_assets()
        return builder

    def _write_index(self, builder, built_days: Sequence[str]) -> list[Path]:
        """The page of each day of `built_days` and the index, rendered by GX's index renderer and
        view from the days' kept rows (docsindex.py). Returns the pages written."""
        from collections import OrderedDict

        from .docsindex import DAY_PAGE, INDEX_ROWS, RECENT_DAYS, days, days_panel, read_day, validation_links, with_panel

        index_builder = builder.site_index_builder
        suites = [{"expectation_suite_name": key.name, "filepath": f"expectations/{key.name}.html"}
                  for key in sorted(self.context.expectations_store.list_keys(), key=lambda k: k.name)]

        def page(rows, with_suites: bool) -> str:
            links = OrderedDict(site_name=index_builder.site_name, validations_links=validation_links(rows))
            if with_suites:
                links["expectations_links"] = suites
            rendered = index_builder.renderer_class.render(links)
            return index_builder.view_class.render(rendered, data_context_id=index_builder.data_context_id,
                                                   show_how_to_buttons=False)

        every_day = days(self.root)
        listed, recent = [], []
        for day in every_day[:RECENT_DAYS]:  # the newest days, as many as the index's rows allow
            rows = read_day(self.root, day)
            if listed and len(recent) + len(rows) > INDEX_ROWS:
                break
            listed.append(day)
            recent += rows
        site = self.docs_index.parent
        written = []
        for day in built_days:
            path = site / DAY_PAGE.format(day=day)
            path.write_text(with_panel(page(read_day(self.root, day), False), days_panel(every_day, [day])),
                            encoding="utf-8")
            written.append(path)
        self.docs_index.write_text(with_panel(page(recent, True), days_panel(every_day, listed)), encoding="utf-8")
        return [*written, self.docs_index]

    # -- GX's own engine, on stored data
    def _checkpoint(self, suite):
        gx = import_gx()
        try:
            asset = self.datasource.get_asset(suite.name)
        except LookupError:
            asset = self.datasource.add_dataframe_asset(name=suite.name)
        try:
            batch = asset.get_batch_definition(BATCH)
        except KeyError:
            batch = asset.add_batch_definition_whole_dataframe(BATCH)
        stored = self.context.suites.add_or_update(gx.ExpectationSuite(**suite_document(suite)))
        definition = self.context.validation_definitions.add_or_update(
            gx.ValidationDefinition(name=suite.name, data=batch, suite=stored)
        )
        checkpoint = gx.Checkpoint(
            name=suite.name,
            validation_definitions=[definition],
            result_format={"result_format": "BASIC", "partial_unexpected_count": 0},
        )
        return self.context.checkpoints.add_or_update(checkpoint), batch

    def validate(self, frame, suite, run_name: str | None = None) -> SuiteOutcome:
        """Validate one partition (a DataFrame of the table's rows) against the suite with GX's engine."""
        # cached lazily: GX's first query (its row count) reads the files, the bundle reads memory
        frame = validation_frame(frame, suite).persist()
        try:
            checkpoint, batch = self._checkpoint(suite)
            run = checkpoint.run(batch_parameters={"dataframe": frame}, run_id=_run_id(run_name))
            self._index(run.run_results)
            results = [r for v in run.run_results.values() for r in v.results]
            outcomes = [_outcome(r) for r in results]
            counted = [r.result["element_count"] for r in results if (r.result or {}).get("element_count") is not None]
            rows = counted[0] if counted else frame.count()
            failed = [r.expectation_config for r, o in zip(results, outcomes) if not o.success and o.unexpected_count]
            if failed:
                self._examples(frame, batch, suite.name, failed, outcomes)
        finally:
            frame.unpersist()
        return SuiteOutcome(suite.name, rows, outcomes, self.docs_index)

    def _index(self, stored_results: dict) -> None:
        """The rows of results GX's checkpoint stored, in their day's index rows (docsindex.py)."""
        from .docsindex import day_of, record

        for key in stored_results:
            path = self.root / VALIDATIONS / Path(*key.to_tuple()).with_suffix(".json")
            document = orjson.loads(path.read_bytes()) if path.exists() else {}
            day = day_of(document)
            if day:
                record(self.root, day, [(path, document)])

    def _examples(self, frame, batch, name: str, failed: list, outcomes: list[ExpectationOutcome]) -> None:
        """A few unexpected values of the failed expectations (not stored, not in the docs)."""
        gx = import_gx()
        probe = gx.ExpectationSuite(name=f"{name}.examples", expectations=[_unbound(c) for c in failed])
        result = batch.get_batch(batch_parameters={"dataframe": frame}).validate(
            probe, result_format={"result_format": "SUMMARY", "partial_unexpected_count": EXAMPLES}
        )
        by_key = {_key(r.expectation_config): r.result.get("partial_unexpected_list") or [] for r in result.results}
        for outcome, config in zip([o for o in outcomes if not o.success and o.unexpected_count], failed):
            outcome.examples = [_plain(v) for v in by_key.get(_key(config), [])][:EXAMPLES]


class _Listed:
    """A GX store whose listing is the given keys. GX's section builder lists its whole source
    store to find the keys it is asked to render, a year of results at every build: handed this,
    it renders those keys with its own renderer, view and target store, and lists nothing."""

    def __init__(self, store, keys: list):
        self._store, self._keys = store, keys

    def list_keys(self) -> list:
        return self._keys

    def __getattr__(self, name: str):
        return getattr(self._store, name)


def _render(builder, keys: Sequence) -> None:
    """The pages of `keys` (validation results and suites), through GX's section builders."""
    from great_expectations.data_context.types.resource_identifiers import (ExpectationSuiteIdentifier,
                                                                            ValidationResultIdentifier)

    kinds = {"expectations": ExpectationSuiteIdentifier, "validations": ValidationResultIdentifier}
    for name, kind in kinds.items():
        section, chosen = builder.site_section_builders.get(name), [k for k in keys if isinstance(k, kind)]
        if section is None or not chosen:
            continue
        source = section.source_store
        section.source_store = _Listed(source, chosen)
        try:
            section.build(resource_identifiers=set(chosen))
        finally:
            section.source_store = source


def _run_id(run_name: str | None):
    if run_name is None:
        return None
    from great_expectations.core.run_identifier import RunIdentifier

    return RunIdentifier(run_name=run_name, run_time=dt.datetime.now(dt.timezone.utc))


def _unbound(config):
    expectation = config.to_domain_obj()
    expectation.id = None  # GX refuses an expectation that belongs to another suite
    return expectation


def _key(config) -> str:
    return f"{config.type}:{sorted(config.kwargs.items(), key=lambda kv: kv[0])}"


def _plain(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)


def validate_stored(spark, store, tables, day, names: Sequence[str] | None = None, validator: Validator | None = None,
                    run_name: str | None = None) -> dict[str, SuiteOutcome]:
    """GX's own checkpoint on the stored partition `day` of each table (or of the tables named
    by warehouse name or SQL name), the second opinion on the classification pass's results."""
    from ..config import local_folder
    from ..warehouse.files import PARTITION_COLUMN
    from .suites import build_suite

    validator = validator or Validator(local_folder(store.root))
    chosen = [t for t in tables if names is None or t.name in names or t.message.table_name in names]
    outcomes = {}
    for table in chosen:
        if not (store.exists(table.name) and store.partition_rows(table.name, PARTITION_COLUMN, day)):
            continue
        partition = store.read(table.name).where(f"{PARTITION_COLUMN} = DATE'{day.isoformat()}'")
        outcomes[table.name] = validator.validate(partition, build_suite(table), run_name=run_name or f"{day} (catalake validate)")
    return outcomes
