"""The message catalog itself, materialized as the Delta table `catalog/messages`.

The engine is imported by the step that runs, not here: a code location's load imports none of it."""


from dagster import AssetExecutionContext, AssetSelection, MaterializeResult, MetadataValue, asset, define_asset_job

from catalake.display import markdown_table

from ..failures import failing_plainly, problems_markdown
from ..metadata import code_version, column_schema
from ..names import DEFAULT, Names
from .state import StateKeeper

PREVIEW_ROWS = 25

DESCRIPTION = """The xRegistry message catalog as a table: one row per (group, message) definition.

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
fingerprint, so the UI marks exactly the tables a catalog change affects. It refreshes the code
location's state when the catalog changed (the message specs, the landing zone's first day and,
with the analytics, the dbt project's manifest: what every load reads; `state`).
"""


def _previous_fingerprints(context: AssetExecutionContext) -> dict[str, str]:
    """The definitions' fingerprints at the previous materialization (none the first time)."""
    event = context.instance.get_latest_materialization_event(context.asset_key)
    materialization = event.asset_materialization if event is not None else None
    value = materialization.metadata.get("definition_fingerprints") if materialization is not None else None
    return dict(value.value) if value is not None else {}


def _changes_markdown(changes: dict[str, list[str]]) -> str:
    lines = [f"- {kind}: `{xid}`" for kind in ("added", "changed", "removed") for xid in changes[kind]]
    return "\n".join(lines) or "no definition changed since the previous materialization"


def build_catalog_asset(names: Names = DEFAULT, keeper: StateKeeper | None = None, changed: list[str] = ()):
    """The `message_catalog` asset of one instance (its key, group and resources named by `names`):
    its runs refresh the code location's state through `keeper`; `changed` are the catalog files
    edited since the state the location loaded (its description says so)."""
    stale = (f"**The catalog changed since this code location's state was made** ({', '.join(changed[:3])}"
             f"{' ...' if len(changed) > 3 else ''}): the message assets shown are the catalog as it was. "
             "Materialize this asset (`catalake_job`) to refresh the state, then reload the code location.\n\n"
             if changed else "")

    @asset(key=names.catalog, group_name=names.group_of("catalog"), kinds={"spark", "delta"}, tags={"layer": "catalog"},
           required_resource_keys=names.resource_keys("catalog_source", "landing", "spark", "warehouse"),
           code_version=code_version("catalake.platform.catalog", "catalake.platform.warehouse.catalog_table",
                                     "catalake.platform.warehouse.message_tables", "catalake.platform.schemas",
                                     "catalake.platform.warehouse.evolution"),
           description=stale + DESCRIPTION,
           metadata={"catalog_changed": ", ".join(changed)} if changed else None)
    @failing_plainly
    def message_catalog(context: AssetExecutionContext) -> MaterializeResult:
        """The catalog table and every message table (the UI shows DESCRIPTION)."""
        return _materialize_catalog(context, names, keeper)

    return message_catalog


def _materialize_catalog(context: AssetExecutionContext, names: Names, keeper: StateKeeper | None) -> MaterializeResult:
    """The catalog checked and resolved, every message table created or evolved, the catalog
    table written and the code location's state refreshed. An invalid catalog (CatalogError) or a
    refused table change (EvolutionError) fails the step before any table changes, with every
    problem (`failing_plainly`)."""
    from catalake.platform.warehouse.catalog_table import write_catalog_table
    from catalake.platform.warehouse.message_tables import message_tables, sync_message_tables

    resources = names.resources(context)
    catalog_source, spark, warehouse = resources.catalog_source, resources.spark, resources.warehouse
    catalog = catalog_source.load()
    tables, schema_warnings = message_tables(catalog, catalog_source.roots())
    for warning in catalog.warnings:
        context.log.warning(str(warning))
    for warning in schema_warnings:
        context.log.warning(f"payload kept as JSON text: {warning}")
    store = warehouse.store(spark)  # delta-rs writes need no Spark: not waited for
    synced = sync_message_tables(store, tables)
    result = write_catalog_table(store, catalog)
    state, refreshed = _refresh_state(context, resources, keeper, catalog, tables)
    return MaterializeResult(
        metadata={
            **_catalog_table_metadata(context, store, catalog, tables, result),
            "state": refreshed,
            **({"landing_first_day": state.first_day or "none (no day in the landing zone yet)"} if state else {}),
            **_contents_metadata(catalog, synced, schema_warnings),
        }
    )


def _refresh_state(context: AssetExecutionContext, resources, keeper: StateKeeper | None, catalog, tables):
    """The code location's state made from this catalog, stored when it changed (`keeper`: the
    definitions were built from a state), and what was done."""
    from catalake.resources import Configured

    from .messages import CatalogAtLoad

    if keeper is None:
        return None, "not kept: these definitions were not built from a state"
    # what the next loads are built from
    kept = Configured(resources.warehouse, resources.catalog_source, resources.landing, resources.spark)
    state, refreshed = keeper.refresh(context, kept, CatalogAtLoad(catalog, tables))
    context.log.info(f"the code location's state: {refreshed}")
    return state, refreshed


def _catalog_table_metadata(context: AssetExecutionContext, store, catalog, tables, result: dict) -> dict:
    """The catalog table: its rows, schema, name, location and commit, and the definitions'
    fingerprints with what changed since the previous materialization."""
    from catalake.platform.warehouse.catalog_table import CATALOG_TABLE, SCHEMA
    from catalake.platform.warehouse.message_tables import catalog_fingerprint, definition_changes, table_fingerprint

    fingerprints = {t.message.xid: table_fingerprint(t) for t in tables}
    changes = definition_changes(_previous_fingerprints(context), fingerprints)
    return {
        "dagster/row_count": len(catalog),
        "dagster/column_schema": column_schema(SCHEMA),
        "dagster/table_name": CATALOG_TABLE.replace("/", "."),
        "path": MetadataValue.path(store.path(CATALOG_TABLE)),
        "delta_version": result["version"],
        "catalog_fingerprint": catalog_fingerprint(tables),
        "definition_fingerprints": MetadataValue.json(fingerprints),
        "definition_changes": MetadataValue.json(changes),
        "definition_changes_preview": MetadataValue.md(_changes_markdown(changes)),
        "committed": result["committed"],
        "added": len(result["added"]),
        "changed": len(result["changed"]),
        "removed": len(result["removed"]),
        "storage_backend": store.backend,
    }


def _contents_metadata(catalog, synced: dict, schema_warnings: list) -> dict:
    """What the catalog holds (groups, a preview, the files read and what each needed
    normalizing), the message tables created or evolved, the payloads kept as JSON text and the
    catalog's warnings."""
    from catalake.display import catalog_rows

    headers, rows = catalog_rows(catalog)
    files = [
        [f.path, f.shape, f.messages, f.schemas, "; ".join(f"{k} (x{n})" for k, n in f.notes.items()) or "-"]
        for f in catalog.files
    ]
    return {
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
        "warnings": MetadataValue.md(problems_markdown(catalog.warnings) if catalog.warnings else "none"),
    }


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
