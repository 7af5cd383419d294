"""Great Expectations (1.x) under the warehouse: stored results, data docs, and GX's own validation.

One GX file context lives under the warehouse (`<warehouse>/gx`): the suites, the validation
results and the data docs site (`gx/uncommitted/data_docs/local_site/index.html`).

* `store_pass_results`: the classification pass's per-expectation numbers (quality.py) become real
  GX validation results (`ExpectationSuiteValidationResult`, one `ExpectationValidationResult` per
  expectation), stored per table and partition with the Dagster run as run name, so the data docs
  show them day by day. No data is read for this.
* `Validator.validate`: GX's own engine on a stored partition (a Spark DataFrame), the referee
  (`catalake validate`, tests). It answers with two Spark queries per suite however many
  expectations it has: the row count, then one aggregate computing every expectation's
  unexpected count together. Only expectations that failed are then asked for a few unexpected
  values (one more small query each).
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from .config import DOCS_INDEX
from .expectations import DERIVED, ERROR, Expectation, import_gx, expectation_summary, suite_document
from .quality import ExpectationResult

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

    def store_suites(self, suites: Sequence) -> None:
        """The suites in the GX context, so the data docs list every one of them."""
        gx = import_gx()
        for suite in suites:
            self.context.suites.add_or_update(gx.ExpectationSuite(**suite_document(suite)))

    # -- results of the classification pass
    def store_pass_results(self, table: str, suite_name: str, partition: str, run_id: str,
                           results: Sequence[ExpectationResult], types: list) -> Any:
        """Store one table's pass results for a partition as a GX validation result; returns its key."""
        from great_expectations.core import ExpectationSuiteValidationResult, ExpectationValidationResult
        from great_expectations.core.batch import LegacyBatchDefinition
        from great_expectations.core.id_dict import IDDict
        from great_expectations.core.run_identifier import RunIdentifier
        from great_expectations.data_context.types.resource_identifiers import (
            ExpectationSuiteIdentifier,
            ValidationResultIdentifier,
        )

        gx = import_gx()
        now = dt.datetime.now(dt.timezone.utc)
        run = RunIdentifier(run_name=f"{partition} (run {run_id})", run_time=now)
        evaluated = [
            ExpectationValidationResult(
                success=r.success,
                expectation_config=r.expectation.to_gx().configuration,
                result=_result_dict(r),
            )
            for r in results
        ]
        passed = sum(1 for r in evaluated if r.success)
        batch = LegacyBatchDefinition(
            datasource_name="catalake classification pass", data_connector_name="landing",
            data_asset_name=table, batch_identifiers=IDDict({"event_date": partition}))
        suite_result = ExpectationSuiteValidationResult(
            success=passed == len(evaluated),
            results=evaluated,
            suite_name=suite_name,
            statistics={"evaluated_expectations": len(evaluated), "successful_expectations": passed,
                        "unsuccessful_expectations": len(evaluated) - passed,
                        "success_percent": passed / len(evaluated) * 100 if evaluated else None},
            meta={"great_expectations_version": gx.__version__, "expectation_suite_name": suite_name, "run_id": run,
                  "validation_time": now.strftime("%Y%m%dT%H%M%S.%fZ"), "active_batch_definition": batch,
                  "batch_spec": {"table": table, "event_date": partition},
                  "catalake": {"partition": partition, "dagster_run_id": run_id, "table": table,
                               "payload_types": {"evaluated": types[0], "unexpected_count": types[2], "examples": types[3]}}},
            batch_id=f"{suite_name}-{partition}",
        )
        # a store key holds no '/': the batch is named by the suite (the table's SQL name) and the day
        key = ValidationResultIdentifier(ExpectationSuiteIdentifier(suite_name), run, f"{suite_name}-{partition}")
        self.context.validation_results_store.set(key, suite_result)
        return key

    def build_docs(self, keys: Sequence | None = None) -> Path:
        """Rebuild the data docs site (only the pages of `keys` and the index, when given)."""
        if keys is None:
            self.context.build_data_docs()
        else:
            self.context.build_data_docs(resource_identifiers=list(keys))
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


def _result_dict(r: ExpectationResult) -> dict:
    """GX's `result` of a map expectation (BASIC/SUMMARY shape), from the pass's numbers."""
    e: Expectation = r.expectation
    if e.type == "expect_column_values_to_be_of_type":
        return {"observed_value": e.kwargs.get("type_")}
    out = {"element_count": r.element_count, "unexpected_count": r.unexpected_count,
           "unexpected_percent": r.unexpected_percent,
           "partial_unexpected_list": [x[0] for x in r.examples]}
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
