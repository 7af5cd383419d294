"""The expectation suites, one GX suite file per message definition, generated from the catalog."""

from dagster import AssetExecutionContext, Failure, MaterializeResult, MetadataValue, asset

from catalake.platform.catalog import CatalogError
from catalake.platform.message_table import message_tables
from catalake.platform.report import markdown_table
from catalake.resources import CatalogSource, Warehouse

from .messages import CATALOG_KEY


@asset(group_name="catalog", kinds={"great_expectations"}, deps=[CATALOG_KEY], tags={"layer": "catalog"})
def expectation_suites(context: AssetExecutionContext, catalog_source: CatalogSource, warehouse: Warehouse) -> MaterializeResult:
    """One Great Expectations suite per message definition, generated from the catalog: required
    attributes not null, constant values, uritemplates as regexes, declared attribute types, and
    the payload schema's required fields, enums, ranges, lengths, patterns, formats and item counts.
    Written as GX JSON (stable key order) under `expectations/` in the warehouse; a definition that
    did not change keeps a byte-identical file. Each per-message asset's `expectations` check
    validates its partitions against its suite."""
    from catalake.platform.expectations import build_suite, write_suites

    try:
        catalog = catalog_source.load()
    except CatalogError as exc:
        raise Failure(description=f"invalid message catalog: {len(exc.problems)} problem(s)") from None
    tables, _ = message_tables(catalog, catalog_source.roots())
    suites = [build_suite(t) for t in tables]
    outcome = write_suites(warehouse.suites_dir, suites)
    rows = [[s.name, len(s.expectations), outcome[s.name]] for s in suites]
    rows += [[name, 0, "removed"] for name, what in outcome.items() if what == "removed"]
    return MaterializeResult(metadata={
        "suites": len(suites),
        "expectations": sum(len(s.expectations) for s in suites),
        "written": sum(1 for v in outcome.values() if v == "written"),
        "unchanged": sum(1 for v in outcome.values() if v == "unchanged"),
        "removed": sum(1 for v in outcome.values() if v == "removed"),
        "path": MetadataValue.path(str(warehouse.suites_dir)),
        "per_suite": MetadataValue.md(markdown_table(["suite", "expectations", "file"], rows)),
    })
