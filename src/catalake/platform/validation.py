"""Great Expectations (1.x) under the warehouse: stored results, data docs, and GX's own validation.

One GX file context lives under the warehouse (`<warehouse>/gx`): the suites, the validation
results and the data docs site (`gx/uncommitted/data_docs/local_site/index.html`).

* `validation_result_document` / `store_validation_result`: the classification pass's
  per-expectation numbers (quality.py) become GX validation results (`ExpectationSuiteValidationResult`,
  one `ExpectationValidationResult` per expectation) in GX's own serialization, stored per table and
  partition with the partition and the Dagster run as run name. Written without importing GX (it
  takes seconds, and a run must not wait for it); tests load them back through GX. No data is
  read for this. `build_partition_docs` renders their data docs pages (the `data_docs` asset).
* `Validator.validate`: GX's own engine on a stored partition (a Spark DataFrame), the referee
  (`catalake validate`, tests). It answers with two Spark queries per suite however many
  expectations it has: the row count, then one aggregate computing every expectation's
  unexpected count together. Only expectations that failed are then asked for a few unexpected
  values (one more small query each).
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import orjson

from .config import DOCS_INDEX, GX_SUITES, GX_VERSION, VALIDATIONS
from .expectations import DERIVED, ERROR, Expectation, import_gx, expectation_summary, suite_document
from .quality import ExpectationResult
from .webassets import localize

DATASOURCE = "catalake"
BATCH = "partition"
EXAMPLES = 5
TYPES = "payload types"  # the classifier's `type` rule, reported beside the suite's expectations


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
    rows: int
    outcomes: list[ExpectationOutcome]
    docs: Path | None = None
    dropped: int | None = None  # from the classification pass: records dead-lettered for a rule (None: GX on stored rows)

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


def pass_outcome(suite: str, results: Sequence[ExpectationResult], types: list, rejected: int,
                 docs: Path | None = None) -> SuiteOutcome:
    """A table's results from the classification pass, in the shape of a GX validation's.

    Records the classifier rejected count as unexpected for the ERROR expectations they broke:
    a failed ERROR expectation says records were dead-lettered (`dropped`); the stored rows meet
    the suite by construction."""
    outcomes = [
        ExpectationOutcome(r.expectation.type, r.expectation.column, r.expectation.rule, r.severity, r.success,
                           r.unexpected_count, r.unexpected_percent, _located(r.examples), evaluated=r.element_count,
                           id=r.expectation.id)
        for r in results
    ]
    evaluated, _, unexpected, examples = types
    outcomes.append(ExpectationOutcome(TYPES, "data", "payload type", ERROR, unexpected == 0, unexpected,
                                       unexpected / evaluated * 100 if evaluated else None, _located(examples),
                                       evaluated=evaluated, id="data:type"))
    return SuiteOutcome(suite, evaluated, outcomes, docs, rejected)


def _located(examples: list) -> list[dict]:
    return [{"value": value, "source_file": source_file, "source_line": line} for value, source_file, line in examples]


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

    def build_partition_docs(self, partition: str) -> Path:
        """Rebuild the data docs pages of one partition's stored results and the index, and the
        page of every suite that has none or changed since (the index lists the suites that
        have a page: all of them, fed that day or not)."""
        from great_expectations.data_context.types.resource_identifiers import ValidationResultIdentifier

        keys = [k for k in self.context.validation_results_store.list_keys()
                if isinstance(k, ValidationResultIdentifier) and k.run_id.run_name.startswith(f"{partition} ")]
        pages = self.docs_index.parent / "expectations"
        for key in self.context.expectations_store.list_keys():
            page, stored = pages / f"{key.name}.html", self.root / GX_SUITES / f"{key.name}.json"
            if not page.exists() or (stored.exists() and stored.stat().st_mtime > page.stat().st_mtime):
                keys.append(key)
        return self.build_docs(keys)

    def build_docs(self, keys: Sequence | None = None) -> Path:
        """Rebuild the data docs site (only the pages of `keys` and the index, when given), the
        pages built pointing at the site's own copies of their JS/CSS (webassets.py)."""
        started = time.time() - 1  # file times may be rounded to the second
        if keys is None:
            self.context.build_data_docs()
        else:
            self.context.build_data_docs(resource_identifiers=list(keys))
        site = self.docs_index.parent
        localize(site, [p for p in site.rglob("*.html") if p.stat().st_mtime >= started])
        return self.docs_index

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


def validation_result_document(table: str, suite: str, partition: str, run_id: str, results: Sequence[ExpectationResult],
                               types: list, rejected: int, now: dt.datetime | None = None) -> dict:
    """One table's pass results as a GX 1.x `ExpectationSuiteValidationResult` document, in GX's
    own serialization (what its validation results store writes; tests load it back through GX)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    evaluated = [{
        "success": r.success,
        "expectation_config": {"type": r.expectation.type, "kwargs": r.expectation.gx_kwargs(), "meta": r.expectation.meta,
                               "severity": "critical" if r.severity == ERROR else "warning"},
        "result": _result_dict(r),
        "meta": {},
        "exception_info": {"raised_exception": False, "exception_traceback": None, "exception_message": None},
    } for r in results]
    passed = sum(1 for r in evaluated if r["success"])
    return {
        "id": None,
        "success": passed == len(evaluated),
        "suite_name": suite,
        "suite_parameters": {},
        "results": evaluated,
        "statistics": {"evaluated_expectations": len(evaluated), "successful_expectations": passed,
                       "unsuccessful_expectations": len(evaluated) - passed,
                       "success_percent": passed / len(evaluated) * 100 if evaluated else None},
        "meta": {
            "great_expectations_version": GX_VERSION,
            "expectation_suite_name": suite,
            "run_id": {"run_name": f"{partition} (run {run_id})", "run_time": now.isoformat()},
            "validation_time": now.strftime("%Y%m%dT%H%M%S.%fZ"),
            "active_batch_definition": {"datasource_name": "catalake classification pass", "data_connector_name": "landing",
                                        "data_asset_name": table, "batch_identifiers": {"event_date": partition}},
            "batch_spec": {"table": table, "event_date": partition},
            "catalake": {"partition": partition, "dagster_run_id": run_id, "table": table, "records_dropped": rejected,
                         "payload_types": {"evaluated": types[0], "unexpected_count": types[2], "examples": _located(types[3])}},
        },
    }


def store_validation_result(warehouse: Path, document: dict) -> Path:
    """Write a validation result where the GX context's file store keeps it
    (`validations/<suite>/<run name>/<run time>/<batch>.json`); a store key holds no '/', so the
    batch is named by the suite (the table's SQL name) and the day."""
    meta = document["meta"]
    partition = meta["catalake"]["partition"]
    suite = document["suite_name"]
    path = (Path(warehouse) / VALIDATIONS / suite / meta["run_id"]["run_name"] / meta["validation_time"]
            / f"{suite}-{partition}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    # orjson: the standard library's indented encoder is pure Python, a tenth of the speed
    path.write_bytes(orjson.dumps(document, default=str, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    return path


def _result_dict(r: ExpectationResult) -> dict:
    """GX's `result` of a map expectation (BASIC/SUMMARY shape), from the pass's numbers."""
    e: Expectation = r.expectation
    if e.type == "expect_column_values_to_be_of_type":
        return {"observed_value": e.kwargs.get("type_")}
    out = {"element_count": r.element_count, "unexpected_count": r.unexpected_count,
           "unexpected_percent": r.unexpected_percent,
           "partial_unexpected_list": [x[0] for x in r.examples],
           "partial_unexpected_index_list": [{"source_file": f, "source_line": n} for _, f, n in r.examples]}
    if r.missing_count is not None:
        nonnull = r.element_count - r.missing_count
        out.update(missing_count=r.missing_count,
                   missing_percent=r.missing_count / r.element_count * 100 if r.element_count else None,
                   unexpected_percent_total=r.unexpected_count / r.element_count * 100 if r.element_count else None,
                   unexpected_percent_nonmissing=r.unexpected_count / nonnull * 100 if nonnull else None)
    return out


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
    by warehouse name or SQL name), the referee of the classification pass's results."""
    from .expectations import build_suite
    from .message_table import PARTITION_COLUMN

    from .config import local_folder

    validator = validator or Validator(local_folder(store.root))
    chosen = [t for t in tables if names is None or t.name in names or t.message.table_name in names]
    outcomes = {}
    for table in chosen:
        if not (store.exists(table.name) and store.partition_rows(table.name, PARTITION_COLUMN, day)):
            continue
        partition = store.read(table.name).where(f"{PARTITION_COLUMN} = DATE'{day.isoformat()}'")
        outcomes[table.name] = validator.validate(partition, build_suite(table), run_name=run_name or f"{day} (catalake validate)")
    return outcomes
