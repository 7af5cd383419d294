"""Expectation suites as Dagster asset checks: the adapter from GX 1.x validation results to
`AssetCheckResult` (dagster-ge only supports GX before 1.0)."""

from dagster import AssetCheckResult, AssetCheckSeverity, AssetCheckSpec, AssetKey, MetadataValue

from catalake.platform.report import markdown_table

CHECK_NAME = "expectations"
SHOWN = 50  # expectations listed in the markdown table; all of them are in the JSON


def expectation_check_spec(key: AssetKey, suite: str) -> AssetCheckSpec:
    return AssetCheckSpec(
        CHECK_NAME,
        asset=key,
        blocking=True,
        description=f"The partition meets the Great Expectations suite `{suite}` generated from the catalog. "
        "A failed ERROR expectation (what the catalog requires) blocks downstream assets; WARN ones only warn.",
    )


def check_result(key: AssetKey, outcome) -> AssetCheckResult:
    """One check result per suite: failed ERROR expectations -> failed, severity ERROR (blocking);
    only WARN ones failed -> failed, severity WARN; per-expectation results in the metadata."""
    rows = [
        [o.type.removeprefix("expect_"), o.column or "", o.severity, "pass" if o.success else "FAIL",
         "" if o.unexpected_count is None else o.unexpected_count,
         "" if o.unexpected_percent is None else f"{o.unexpected_percent:.2f}",
         ", ".join(map(str, o.examples)) or (o.error or "")]
        for o in sorted(outcome.outcomes, key=lambda o: o.success)[:SHOWN]
    ]
    metadata = {
        "rows": outcome.rows,
        "expectations": len(outcome.outcomes),
        "failed_error": len(outcome.errors),
        "failed_warn": len(outcome.warnings),
        "results": MetadataValue.md(markdown_table(
            ["expectation", "column", "severity", "result", "unexpected", "unexpected %", "examples"], rows)),
        "details": MetadataValue.json([o.as_json() for o in outcome.outcomes]),
    }
    if outcome.docs is not None:
        metadata["data_docs"] = MetadataValue.path(str(outcome.docs))
    return AssetCheckResult(
        asset_key=key,
        check_name=CHECK_NAME,
        passed=outcome.success,
        severity=AssetCheckSeverity.ERROR if outcome.errors or outcome.success else AssetCheckSeverity.WARN,
        metadata=metadata,
    )
