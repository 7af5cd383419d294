"""The message catalog itself, materialized as the Delta table `catalog/messages`."""


from dagster import AssetExecutionContext, AssetSelection, Failure, MaterializeResult, MetadataValue, asset, define_asset_job

import catalake.platform.catalog
import catalake.platform.schemas
import catalake.platform.warehouse.catalog_table
import catalake.platform.warehouse.evolution
import catalake.platform.warehouse.message_tables
from catalake.display import catalog_rows, markdown_table
from catalake.platform.catalog import CatalogError
from catalake.platform.warehouse.catalog_table import CATALOG_TABLE, SCHEMA, write_catalog_table
from catalake.platform.warehouse.evolution import EvolutionError
from catalake.platform.warehouse.message_tables import (
    catalog_fingerprint,
    definition_changes,
    message_tables,
    sync_message_tables,
    table_fingerprint,
)

from catalake.resources import Configured

from ..failures import failing_plainly
from ..metadata import code_version, column_schema
from ..names import DEFAULT, Names
from .load_state import keep_first_day, keep_specs
from .messages import CatalogAtLoad, message_specs

PREVIEW_ROWS = 25


def _problems_markdown(problems) -> str:
    rows = [[p.file, p.pointer or "(document)", p.rule, p.message] for p in problems]
    return markdown_table(["file", "pointer", "rule", "problem"], rows)


def _fail(context: AssetExecutionContext, what: str, lines: list[str]) -> Failure:
    for line in lines:
        context.log.error(line)
    return Failure(
        description=f"{what}: {len(lines)} problem(s); no table was changed",
        metadata={"problems": MetadataValue.md("\n".join(f"- {line}" for line in lines))},
    )


def _previous_fingerprints(context: AssetExecutionContext) -> dict[str, str]:
    """The definitions' fingerprints at the previous materialization (none the first time)."""
    event = context.instance.get_latest_materialization_event(context.asset_key)
    materialization = event.asset_materialization if event is not None else None
    value = materialization.metadata.get("definition_fingerprints") if materialization is not None else None
    return dict(value.value) if value is not None else {}


def _changes_markdown(changes: dict[str, list[str]]) -> str:
    lines = [f"- {kind}: `{xid}`" for kind in ("added", "changed", "removed") for xid in changes[kind]]
    return "\n".join(lines) or "no definition changed since the previous materialization"


def build_catalog_asset(names: Names = DEFAULT):
    """The `message_catalog` asset of one instance (its key, group and resources named by `names`)."""

    @asset(key=names.catalog, group_name=names.group_of("catalog"), kinds={"spark", "delta"}, tags={"layer": "catalog"},
           required_resource_keys=names.resource_keys("catalog_source", "landing", "spark", "warehouse"),
           code_version=code_version(catalake.platform.catalog, catalake.platform.warehouse.catalog_table,
                                     catalake.platform.warehouse.message_tables, catalake.platform.schemas,
                                     catalake.platform.warehouse.evolution))
    @failing_plainly
    def message_catalog(context: AssetExecutionContext) -> MaterializeResult:
        """The xRegistry message catalog as a table: one row per (group, message) definition.

        Reads every configured catalog file (all known shapes: 2023 camelCase, 0.5, 1.0-rc),
        validates structure and the spec's rules, resolves basemessage chains and xref aliases,
        fills in implied attributes, and writes `catalog/messages`. Then creates each definition's
        table under `messages/` (schema derived from its data schema; a schema that cannot be
        resolved leaves the payload as JSON text, listed under `untyped_payloads`), or adds the new
        nullable columns of a changed definition. An invalid catalog (a data schema reference to the
        network or outside the configured roots included), or a change that would retype,
        remove or tighten a column, fails with every problem and leaves all tables untouched.
        Its metadata lists the definitions added, changed (definition or derived schema) and
        removed since its previous materialization; each message asset's code version is that
        fingerprint, so the UI marks exactly the tables a catalog change affects. It keeps the
        message specs and the landing zone's first day for the code location's next loads
        (shown while the catalog is invalid; the first daily partition), which read them.
        """
        return _materialize_catalog(context, names)

    return message_catalog


def _materialize_catalog(context: AssetExecutionContext, names: Names) -> MaterializeResult:
    resources = names.resources(context)
    catalog_source, spark, warehouse = resources.catalog_source, resources.spark, resources.warehouse
    try:
        catalog = catalog_source.load()
        tables, schema_warnings = message_tables(catalog, catalog_source.roots())
    except CatalogError as exc:
        context.log.error(str(exc))
        raise Failure(
            description=f"invalid message catalog: {len(exc.problems)} problem(s); no table was changed",
            metadata={"problems": MetadataValue.md(_problems_markdown(exc.problems))},
        ) from None
    for warning in catalog.warnings:
        context.log.warning(str(warning))
    for warning in schema_warnings:
        context.log.warning(f"payload kept as JSON text: {warning}")
    store = warehouse.store(spark)  # delta-rs writes need no Spark: not waited for
    try:
        synced = sync_message_tables(store, tables)
    except EvolutionError as exc:
        raise _fail(context, "refused table changes", [str(r) for r in exc.refusals]) from None
    result = write_catalog_table(store, catalog)
    kept = Configured(warehouse, catalog_source, resources.landing, spark)  # what the next loads are built from
    specs, _ = message_specs(kept, CatalogAtLoad(catalog, tables), names)
    fingerprint = catalog_fingerprint(tables)
    specs_written = keep_specs(kept, names, specs, fingerprint)
    first_day = keep_first_day(kept, names)
    fingerprints = {t.message.xid: table_fingerprint(t) for t in tables}
    changes = definition_changes(_previous_fingerprints(context), fingerprints)
    headers, rows = catalog_rows(catalog)
    files = [
        [f.path, f.shape, f.messages, f.schemas, "; ".join(f"{k} (x{n})" for k, n in f.notes.items()) or "-"]
        for f in catalog.files
    ]
    return MaterializeResult(
        metadata={
            "dagster/row_count": len(catalog),
            "dagster/column_schema": column_schema(SCHEMA),
            "dagster/table_name": CATALOG_TABLE.replace("/", "."),
            "path": MetadataValue.path(store.path(CATALOG_TABLE)),
            "delta_version": result["version"],
            "catalog_fingerprint": fingerprint,
            "definition_fingerprints": MetadataValue.json(fingerprints),
            "definition_changes": MetadataValue.json(changes),
            "definition_changes_preview": MetadataValue.md(_changes_markdown(changes)),
            "committed": result["committed"],
            "added": len(result["added"]),
            "changed": len(result["changed"]),
            "removed": len(result["removed"]),
            "storage_backend": store.backend,
            "specs_kept": "written" if specs_written else "unchanged",
            "landing_first_day": first_day or "none (no day in the landing zone yet)",
            "groups": len({m.group_id for m in catalog}),
            "preview": MetadataValue.md(markdown_table(headers, rows[:PREVIEW_ROWS])),
            "files": MetadataValue.md(markdown_table(["file", "shape", "messages", "schemas", "normalized"], files)),
            "tables_created": sum(1 for v in synced.values() if v == "created"),
            "tables_evolved": sum(1 for v in synced.values() if isinstance(v, list)),
            "tables": MetadataValue.md(
                markdown_table(
                    ["table", "outcome"],
                    [[name, v if isinstance(v, str) else "added " + ", ".join(v)] for name, v in synced.items()],
                )
            ),
            "untyped_payloads": MetadataValue.md(
                "\n".join(f"- {w}" for w in schema_warnings) or "none: every definition's data schema was derived"
            ),
            "warnings": MetadataValue.md(_problems_markdown(catalog.warnings) if catalog.warnings else "none"),
        }
    )


message_catalog = build_catalog_asset()


def build_catalog_job(names: Names = DEFAULT, analytics: bool = False):
    """The catalog's run: with the analytics, the dbt project too (its manifest is what the code
    location's dbt assets are loaded from)."""
    return define_asset_job(
        names.of("catalake_job"),
        selection=AssetSelection.assets(names.catalog, names.suites, *([names.dbt_project] if analytics else [])),
        description="Materialize the catalog table, create or evolve every per-message table, and write the "
        "expectation suites" + (" and the dbt project." if analytics else "."),
    )


catalake_job = build_catalog_job()
