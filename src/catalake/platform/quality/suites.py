"""The GX (1.x) suites of the message tables and their files: one suite per definition, built
from its expectations (expectations.py), serialized as GX's own `to_json_dict()` does (written
without importing GX for the expectations catalake generates) without the random ids GX assigns
and with sorted keys, so a definition that did not change gives a byte-identical file; the
suite files under the warehouse and in the GX context's store."""

from __future__ import annotations

import functools
import hashlib
import json
import uuid
from pathlib import Path
from typing import Any, Sequence

from ..config import GX_SUITES, GX_VERSION
from ..warehouse.message_tables import MessageTable
from .expectations import DERIVED, ERROR, Expectation, column_sql, gx_severity, import_gx, suite_expectations


def suite_name(table: MessageTable) -> str:
    return table.message.table_name


def suite_digest(table: MessageTable, expectations: Sequence[Expectation]) -> str:
    """What a suite file is made of, hashed: it changes exactly when the suite would."""
    plain = [table.message.xid, table.name, table.message.fingerprint,
             [(e.type, e.gx_kwargs(), e.meta) for e in expectations]]
    return hashlib.sha256(json.dumps(plain, sort_keys=True, default=str).encode()).hexdigest()


def derived_columns(expectations: Sequence[Expectation]) -> dict[str, str]:
    """The columns GX validates that the table computes (array sizes, copies of fields GX cannot
    address): name -> Spark SQL."""
    derived = {e.column: f"CASE WHEN {column_sql(e.path)} IS NULL THEN NULL ELSE size({column_sql(e.path)}) END"
               for e in expectations if e.measure == "size"}
    return derived | {e.column: column_sql(e.path) for e in expectations if e.measure == "copy"}


def _suite_meta(table: MessageTable, expectations: Sequence[Expectation]) -> dict:
    return {
        "catalake.xid": table.message.xid,
        "catalake.table": table.name,
        "catalake.fingerprint": table.message.fingerprint,
        "catalake.digest": suite_digest(table, expectations),
        DERIVED: derived_columns(expectations),
    }


def build_suite(table: MessageTable, strict: bool = False, expectations: Sequence[Expectation] | None = None):
    """The GX suite of one definition's table."""
    gx = import_gx()
    expectations = suite_expectations(table, strict) if expectations is None else expectations
    # built whole: add_expectation() would look for a GX context to save into
    return gx.ExpectationSuite(name=suite_name(table), expectations=[e.to_gx() for e in expectations],
                               meta=_suite_meta(table, expectations))


def plain_suite_document(table: MessageTable, expectations: Sequence[Expectation]) -> dict:
    """`suite_document(build_suite(table))`, assembled from each distinct expectation's
    serialization (`gx_expectation`; the meta is ours) instead of GX serializing every suite
    whole: 16 ms a suite, 16 s for a catalog of 1,000 definitions, where most expectations (the
    CloudEvents attributes', a shared schema's) recur. Tests hold it byte-equal to GX's."""
    return {
        "name": suite_name(table),
        "notes": None,
        "meta": {**_suite_meta(table, expectations), "great_expectations_version": GX_VERSION},
        "expectations": [{**gx_expectation(e.type, json.dumps(e.gx_kwargs(), sort_keys=True), e.severity),
                          "meta": e.meta} for e in expectations],
    }


@functools.lru_cache(maxsize=4096)
def gx_expectation(type_: str, kwargs: str, severity: str) -> dict:
    """GX's serialization of one expectation, without its id and meta: written here for the
    kinds and arguments catalake generates (`_as_gx_writes`), so that a catalog job does not
    wait for GX's import (4.8 s of CPU); GX's own for anything else. Tests hold the two equal for
    every expectation of the public catalogs."""
    written = _as_gx_writes(type_, json.loads(kwargs), severity)
    return written if written is not None else _gx_expectation(type_, kwargs, severity)


# what GX 1.x keeps of each argument: its defaults left out, a column's bounds as floats (a
# length's as whole numbers), a Spark row condition as its pass-through filter
_BOUNDS = {"expect_column_values_to_be_between": float, "expect_column_value_lengths_to_be_between": int}
_KINDS = {"expect_column_values_to_not_be_null", "expect_column_values_to_be_in_set",
          "expect_column_values_to_match_regex", "expect_column_values_to_be_of_type", *_BOUNDS}
_ARGUMENTS = {"column", "row_condition", "condition_parser", "min_value", "max_value", "strict_min", "strict_max",
              "value_set", "regex", "type_", "mostly"}


def _as_gx_writes(type_: str, kwargs: dict, severity: str) -> dict | None:
    """GX's serialization of an expectation catalake generates; None where unsure (another kind,
    argument or value type): GX then serializes it."""
    if type_ not in _KINDS or not set(kwargs) <= _ARGUMENTS:
        return None
    kept = {}
    for key, value in kwargs.items():
        if value is None or (key in ("strict_min", "strict_max") and value is False):
            continue
        if key == "mostly":
            if value != 1 or isinstance(value, bool):
                return None
            continue
        if key in ("min_value", "max_value"):
            bound = _BOUNDS.get(type_)
            if bound is None or isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    (bound is int and not isinstance(value, int)):
                return None
            value = bound(value)
        elif key == "row_condition":
            if not isinstance(value, str):
                return None
            value = {"pass_through_filter": value, "type": "pass_through"}
        kept[key] = value
    return {"kwargs": kept, "severity": "critical" if severity == ERROR else "warning", "type": type_}


@functools.lru_cache(maxsize=4096)
def _gx_expectation(type_: str, kwargs: str, severity: str) -> dict:
    """GX's own serialization of one expectation (kwargs normalized as GX does: numbers as
    floats, defaults left out, row conditions as objects), without its id and meta."""
    import_gx()
    from great_expectations.expectations.registry import get_expectation_impl

    expectation = get_expectation_impl(type_)(**json.loads(kwargs), severity=gx_severity(severity))
    document = expectation.configuration.to_json_dict()
    return {k: v for k, v in document.items() if k not in ("id", "meta")}


def _stored_digest(path: Path) -> str | None:
    try:
        return json.loads(path.read_text()).get("meta", {}).get("catalake.digest")
    except (OSError, ValueError):
        return None


def sync_suites(folder: Path, tables: Sequence[MessageTable], strict: bool = False) -> tuple[dict[str, str], dict[str, int], list]:
    """The suite files of `tables` under folder, current: a suite whose digest matches its file
    is left alone without building it, the others are written (GX's document, built as plain
    data), and files of definitions gone from the catalog are removed. Returns suite name -> written/unchanged/removed,
    suite name -> number of expectations, and the suite documents written."""
    folder.mkdir(parents=True, exist_ok=True)
    outcome: dict[str, str] = {}
    counts: dict[str, int] = {}
    changed = []
    for table in tables:
        expectations = suite_expectations(table, strict)
        name = suite_name(table)
        counts[name] = len(expectations)
        if _stored_digest(folder / f"{name}.json") == suite_digest(table, expectations):
            outcome[name] = "unchanged"
        else:
            changed.append((table, expectations))
    documents = [plain_suite_document(t, e) for t, e in changed]
    for document in documents:
        (folder / f"{document['name']}.json").write_text(document_json(document))
        outcome[document["name"]] = "written"
    for stale in folder.glob("*.json"):
        if stale.stem not in outcome:
            stale.unlink()
            outcome[stale.stem] = "removed"
    return outcome, counts, documents


def document_json(document: dict) -> str:
    """A suite file: id-less, keys sorted, so diffable and stable."""
    return json.dumps(document, indent=2, sort_keys=True, default=str) + "\n"


def store_suite_documents(gx_root: Path, documents: Sequence[dict]) -> None:
    """The suites (`suite_document`s) in the GX context's file store
    (`gx/expectations/<suite>.json`, what `context.suites.add_or_update` writes), so the data docs
    list every one; a suite already there keeps its id. Written directly: through the context it
    costs 20 ms a suite, 100 s for a catalog of 5,000 definitions (benchmarks/RESULTS.md)."""
    folder = Path(gx_root) / GX_SUITES
    folder.mkdir(parents=True, exist_ok=True)
    for document in documents:
        path = folder / f"{document['name']}.json"
        try:
            known = json.loads(path.read_text()).get("id")
        except (OSError, ValueError):
            known = None
        stored = {**document, "id": known or str(uuid.uuid4()),
                  "expectations": [{**e, "id": str(uuid.uuid4())} for e in document["expectations"]]}
        path.write_text(document_json(stored))


def suite_document(suite) -> dict:
    """GX's own serialization without the random ids GX assigns (suite and expectations)."""
    document = {k: v for k, v in suite.to_json_dict().items() if k != "id"}
    document["expectations"] = [{k: v for k, v in e.items() if k != "id"} for e in document.get("expectations", [])]
    return document


def suite_json(suite) -> str:
    """A GX suite as its suite file."""
    return document_json(suite_document(suite))


def load_suite(path: Path):
    return import_gx().ExpectationSuite(**json.loads(path.read_text()))


def expectation_summary(expectation: Any) -> dict:
    """Type, kwargs and meta of one expectation as GX sees it, as plain data (for tests and metadata)."""
    if isinstance(expectation, Expectation):
        expectation = expectation.to_gx()
    config = expectation.configuration if hasattr(expectation, "configuration") else expectation
    return {"type": config.type, "kwargs": dict(config.kwargs), "meta": dict(config.meta or {})}
