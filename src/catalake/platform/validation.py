"""Validating a table partition against its expectation suite with GX's Spark datasource.

One GX file context lives under the warehouse (`<warehouse>/gx`): the suites, one validation
definition and checkpoint per table, the stored results and the data docs site
(`gx/uncommitted/data_docs/local_site/index.html`), rebuilt once after a run's validations
(`build_docs`): rebuilding the site per suite costs about a second each.

Cost: the checkpoint runs with result format BASIC and no sample values, which GX answers with
two Spark queries per suite however many expectations it has: the table's row count, then one
aggregate computing every expectation's unexpected count together (GX bundles the aggregate
metrics of one domain into a single `agg`). The partition is read from its files once (cached by
the first query). Only expectations that failed are then asked for a few unexpected values (one
more small query each).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .config import DOCS_INDEX
from .expectations import DERIVED, ERROR, expectation_summary, gx, suite_document  # gx: analytics off

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

    def as_json(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v not in (None, [])}


@dataclass
class SuiteOutcome:
    suite: str
    rows: int
    outcomes: list[ExpectationOutcome]
    docs: Path | None = None

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


def validation_frame(frame: DataFrame, suite: gx.ExpectationSuite) -> DataFrame:
    """The partition plus the derived columns the suite's expectations address."""
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
    )


class Validator:
    """GX file context under the warehouse, reusing the running Spark session."""

    def __init__(self, warehouse: Path):
        logging.getLogger("great_expectations").setLevel(logging.ERROR)
        self.root = Path(warehouse)
        self.root.mkdir(parents=True, exist_ok=True)
        self.context = gx.get_context(mode="file", project_root_dir=str(self.root))
        from great_expectations.data_context.types.base import ProgressBarsConfig

        self.context.variables.progress_bars = ProgressBarsConfig(globally=False)  # they flood stderr
        # persist=False: the caller caches the partition and unpersists it afterwards
        self.datasource = self.context.data_sources.add_or_update_spark(name=DATASOURCE, persist=False)

    @property
    def docs_index(self) -> Path:
        return self.root / DOCS_INDEX

    def _checkpoint(self, suite: gx.ExpectationSuite):
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

    def validate(self, frame: DataFrame, suite: gx.ExpectationSuite) -> SuiteOutcome:
        """Validate one partition (a DataFrame of the table's rows) against the suite."""
        # cached lazily: GX's first query (its row count) reads the files, the bundle reads memory
        frame = validation_frame(frame, suite).persist()
        try:
            checkpoint, batch = self._checkpoint(suite)
            run = checkpoint.run(batch_parameters={"dataframe": frame})
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

    def build_docs(self) -> Path:
        """Rebuild the data docs site from every stored suite and validation result."""
        self.context.build_data_docs()
        return self.docs_index

    def _examples(self, frame: DataFrame, batch, name: str, failed: list, outcomes: list[ExpectationOutcome]) -> None:
        """A few unexpected values of the failed expectations (not stored, not in the docs)."""
        probe = gx.ExpectationSuite(name=f"{name}.examples", expectations=[_unbound(c) for c in failed])
        result = batch.get_batch(batch_parameters={"dataframe": frame}).validate(
            probe, result_format={"result_format": "SUMMARY", "partial_unexpected_count": EXAMPLES}
        )
        by_key = {_key(r.expectation_config): r.result.get("partial_unexpected_list") or [] for r in result.results}
        for outcome, config in zip([o for o in outcomes if not o.success and o.unexpected_count], failed):
            outcome.examples = [_plain(v) for v in by_key.get(_key(config), [])][:EXAMPLES]


def _unbound(config):
    expectation = config.to_domain_obj()
    expectation.id = None  # GX refuses an expectation that belongs to another suite
    return expectation


def _key(config) -> str:
    return f"{config.type}:{sorted(config.kwargs.items(), key=lambda kv: kv[0])}"


def _plain(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)

