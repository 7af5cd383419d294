"""The classification pass's results as Great Expectations (1.x) validation results, and their
data docs pages.

* `validation_result_document` / `store_validation_result`: the classification pass's
  per-expectation numbers (evaluation.py) become GX validation results (`ExpectationSuiteValidationResult`,
  one `ExpectationValidationResult` per expectation) in GX's own serialization, stored per table and
  partition with the partition and the Dagster run as run name, where the GX context under the
  warehouse keeps them (validator.py). Written without importing GX (it takes seconds, and a run
  must not wait for it); tests load them back through GX. No data is read for this: GX's engine
  does not run, only its document format is used.
* `day_page` / `annotate_page`: the data docs page of a stored result
  (`Validator.build_partition_docs` renders it, the `data_docs` asset) and the severity and
  outcome panel written into it.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Sequence

import orjson

from ..config import DOCS_INDEX, GX_VERSION, VALIDATIONS
from .evaluation import KINDS, Counts, ExpectationResult
from .expectations import ERROR, OF_TYPE, Expectation

TYPES = "payload types"  # the classifier's `type` rule, reported beside the suite's expectations


def located(examples: list) -> list[dict]:
    """The classifier's `(value, file, line)` examples as the outcomes and the documents list them."""
    return [{"value": value, "source_file": source_file, "source_line": line} for value, source_file, line in examples]


def validation_result_document(table: str, suite: str, partition: str, run_id: str, results: Sequence[ExpectationResult],
                               types: Counts, rejected: int, now: dt.datetime | None = None) -> dict:
    """One table's pass results as a GX 1.x `ExpectationSuiteValidationResult` document, in GX's
    own serialization (what its validation results store writes; tests load it back through GX).

    What the page shows is what the `expectations` check shows in Dagster: the suite's
    expectations plus the classifier's payload types row, with counts over the records the pass
    matched to the message (`annotate_page` adds each one's severity and outcome)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    matched, type_unexpected, type_examples = types.evaluated, types.unexpected, types.examples
    stored = matched - rejected
    evaluated = [_evaluated(r.expectation.type, r.expectation.gx_kwargs(), r.expectation.meta, r.severity, r.success,
                            _result_dict(r)) for r in results]
    evaluated.append(_evaluated(
        OF_TYPE, {"column": "data", "type_": "StructType"}, _types_meta(), ERROR, type_unexpected == 0,
        _counts(matched, type_unexpected, type_unexpected / matched * 100 if matched else None, None, type_examples)))
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
            # the page's Overview names the data asset from here, "Show more info" lists it all
            "batch_spec": {"data_asset_name": f"{suite} (event_date {partition})", "table": table, "event_date": partition,
                           "records matched": matched, "records dead-lettered": rejected, "rows stored": stored},
            "catalake": {"partition": partition, "dagster_run_id": run_id, "table": table, "records_dropped": rejected,
                         "payload_types": {"evaluated": matched, "unexpected_count": type_unexpected,
                                           "examples": located(type_examples)}},
        },
    }


PANEL_ANCHOR = '<div id="section-1-content-block-3" class="col-12 p-1" >'  # GX's "Show more info..." block


def annotate_page(page: Path, document: dict) -> bool:
    """Add to a validation page's overview what GX's page does not show: each expectation's
    severity, and what the counts are over and what became of the records that broke one (the
    same words as the `expectations` check in Dagster). GX 1.x renders neither its own severity
    field nor expectation notes on validation pages, so the panel is written into the page."""
    html_text = page.read_text(encoding="utf-8")
    if PANEL_ANCHOR not in html_text or 'id="catalake-severity"' in html_text:
        return False
    from html import escape

    spec = document["meta"].get("batch_spec", {})
    results = sorted(document["results"], key=lambda r: r["success"])
    rows = "".join(
        f"<tr><td>{escape(str(r['expectation_config']['kwargs'].get('column', '')))}</td>"
        f"<td>{escape(r['expectation_config']['type'].removeprefix('expect_'))}</td>"
        f"<td>{'ERROR' if r['expectation_config'].get('severity') == 'critical' else 'WARN'}</td>"
        f"<td>{'pass' if r['success'] else '<b>FAIL</b>'}</td>"
        f"<td>{escape(str(r['result'].get('unexpected_count', '')))}</td>"
        f"<td>{escape(_what_happened(r))}</td></tr>"
        for r in results)
    counts = ""
    if "records matched" in spec:
        counts = (f"<p>{spec['records matched']} record(s) of {escape(str(spec.get('event_date', '')))} matched this "
                  f"message; {spec['records dead-lettered']} broke an ERROR expectation and went to the dead-letter "
                  f"table; the table holds {spec['rows stored']} row(s). Counts below are over the matched records.</p>")
    panel = (f'<div id="catalake-severity" class="col-12 p-1"><h6>Severity and outcome</h6>{counts}'
             '<table class="table table-sm"><thead><tr><th>column</th><th>expectation</th><th>severity</th>'
             f'<th>result</th><th>unexpected</th><th>what happened</th></tr></thead><tbody>{rows}</tbody></table></div>')
    page.write_text(html_text.replace(PANEL_ANCHOR, panel + PANEL_ANCHOR, 1), encoding="utf-8")
    return True


def _what_happened(result: dict) -> str:
    unexpected = result["result"].get("unexpected_count")
    if result["success"] or not unexpected:
        return ""
    if result["expectation_config"].get("severity") == "critical":
        return f"{unexpected} record(s) dead-lettered (schema_violation)"
    return f"{unexpected} record(s) stored all the same"


def day_page(warehouse: Path, stored: Path) -> Path:
    """The data docs page GX builds from a stored validation result (the `data_docs` asset)."""
    relative = Path(stored).relative_to(Path(warehouse) / VALIDATIONS)
    return Path(warehouse) / DOCS_INDEX.parent / "validations" / relative.with_suffix(".html")


def _evaluated(type_: str, kwargs: dict, meta: dict, severity: str, success: bool, result: dict) -> dict:
    config = {"type": type_, "kwargs": kwargs, "meta": meta, "severity": "critical" if severity == ERROR else "warning"}
    return {"success": success, "expectation_config": config, "result": result, "meta": {},
            "exception_info": {"raised_exception": False, "exception_traceback": None, "exception_message": None}}


def _types_meta() -> dict:
    return {"id": "data:type", "rule": TYPES, "source": "the message's data schema", "severity": ERROR}


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
    if KINDS[e.type].by_construction:
        return {"observed_value": e.kwargs.get("type_")}
    return _counts(r.element_count, r.unexpected_count, r.unexpected_percent, r.missing_count, r.examples)


def _counts(evaluated: int, unexpected: int, percent: float | None, missing: int | None, examples: list) -> dict:
    out = {"element_count": evaluated, "unexpected_count": unexpected, "unexpected_percent": percent,
           "partial_unexpected_list": [x[0] for x in examples],
           "partial_unexpected_index_list": [{"source_file": f, "source_line": n} for _, f, n in examples]}
    if missing is not None:
        nonnull = evaluated - missing
        out.update(missing_count=missing, missing_percent=missing / evaluated * 100 if evaluated else None,
                   unexpected_percent_total=unexpected / evaluated * 100 if evaluated else None,
                   unexpected_percent_nonmissing=unexpected / nonnull * 100 if nonnull else None)
    return out
