"""Expectation suites as Dagster asset checks: the adapter from GX 1.x validation results to
`AssetCheckResult` (dagster-ge only supports GX before 1.0)."""

import warnings

from dagster import AssetCheckEvaluation, AssetCheckResult, AssetCheckSeverity, AssetCheckSpec, AssetKey, MetadataValue
from dagster._utils.warnings import PreviewWarning

from catalake.platform.report import markdown_table

CHECK_NAME = "expectations"
SHOWN = 50  # expectations listed in the markdown table; all of them are in the JSON


def partitioned_check_spec(name: str, **kwargs) -> AssetCheckSpec:
    """A check with one result per partition (a preview feature of Dagster 1.13: without it a
    partition run's check result is recorded for no partition)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PreviewWarning)
        return AssetCheckSpec(name, **kwargs)


def expectation_check_spec(key: AssetKey, suite: str, partitions_def=None) -> AssetCheckSpec:
    return partitioned_check_spec(
        CHECK_NAME,
        asset=key,
        blocking=True,
        partitions_def=partitions_def,
        description=f"The partition meets the Great Expectations suite `{suite}` generated from the catalog. "
        "A failed ERROR expectation (what the catalog requires) blocks downstream assets; WARN ones only warn.",
    )


def _example(example) -> str:
    """An unexpected value, with where it was landed when the classification pass found it."""
    if isinstance(example, dict):
        return f"{example['value']} ({example['source_file'].rsplit('/', 1)[-1]}:{example['source_line']})"
    return str(example)


def check_evaluation(key: AssetKey, outcome, partition: str | None) -> AssetCheckEvaluation:
    """The check result as an event of the partition (the run that computes it need not select
    the check, see events.py)."""
    result = check_result(key, outcome)
    return AssetCheckEvaluation(asset_key=key, check_name=CHECK_NAME, passed=result.passed, metadata=result.metadata,
                                severity=result.severity, description=result.description, partition=partition)


def check_result(key: AssetKey, outcome) -> AssetCheckResult:
    """One check result per suite, per-expectation results in the metadata. Failed ERROR
    expectations on stored rows -> failed, severity ERROR (blocking). From the classification
    pass, the records that broke an ERROR expectation were dead-lettered and the table meets its
    suite: failed, severity WARN, with the records dropped. Only WARN ones failed -> WARN."""
    rows = [
        [o.id or "", o.type.removeprefix("expect_"), o.severity, "pass" if o.success else "FAIL",
         "" if o.evaluated is None else o.evaluated,
         "" if o.unexpected_count is None else o.unexpected_count,
         "" if o.unexpected_percent is None else f"{o.unexpected_percent:.2f}",
         ", ".join(map(_example, o.examples)) or (o.error or "")]
        for o in sorted(outcome.outcomes, key=lambda o: o.success)[:SHOWN]
    ]
    metadata = {
        "rows": outcome.rows,
        "expectations": len(outcome.outcomes),
        "failed_error": len(outcome.errors),
        "failed_warn": len(outcome.warnings),
        "results": MetadataValue.md(markdown_table(
            ["expectation", "type", "severity", "result", "evaluated", "unexpected", "unexpected %", "examples"], rows)),
        "details": MetadataValue.json([o.as_json() for o in outcome.outcomes]),
    }
    if outcome.dropped is not None:
        metadata["records_matched"] = outcome.rows
        metadata["records_dropped"] = outcome.dropped
    if outcome.docs is not None:
        metadata["data_docs"] = MetadataValue.path(str(outcome.docs))
    stored_rows_fail = outcome.errors and outcome.dropped is None
    return AssetCheckResult(
        asset_key=key,
        check_name=CHECK_NAME,
        passed=outcome.success,
        severity=AssetCheckSeverity.ERROR if stored_rows_fail or outcome.success else AssetCheckSeverity.WARN,
        metadata=metadata,
        description=(f"{outcome.dropped} of {outcome.rows} matched record(s) broke an ERROR expectation and were "
                     "dead-lettered; the stored rows meet the suite") if outcome.dropped else None,
    )
