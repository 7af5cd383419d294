"""The expectation suites, one GX suite file per message definition, generated from the catalog."""

from dagster import (AssetExecutionContext, BackfillPolicy, DailyPartitionsDefinition, Failure, MaterializeResult,
                     MetadataValue, asset)

from catalake.display import markdown_table
from catalake.platform.config import DAYS_PER_RUN

from ..failures import failing_plainly
from ..metadata import code_version
from ..names import DEFAULT, Names

DATA_DOCS_KEY = "data_docs"


def build_suites_asset(names: Names = DEFAULT):
    """The `expectation_suites` asset of one instance."""

    @asset(key=names.suites, group_name=names.group_of("catalog"), kinds={"great_expectations"},
           deps=[names.catalog], tags={"layer": "catalog"},
           required_resource_keys=names.resource_keys("catalog_source", "warehouse"),
           code_version=code_version("catalake.platform.quality.expectations", "catalake.platform.records.attributes"))
    @failing_plainly
    def expectation_suites(context: AssetExecutionContext) -> MaterializeResult:
        """One Great Expectations suite per message definition, generated from the catalog: required
        attributes not null, constant values, uritemplates as regexes, declared attribute types, and
        the payload schema's required fields, enums, ranges, lengths, patterns, formats and item counts.
        Written as GX JSON (stable key order) under `expectations/` in the warehouse; a definition that
        did not change keeps a byte-identical file (and is not even rebuilt). The classifier checks
        every record against the same expectations; each per-message asset's `expectations` check
        shows their results per partition."""
        from catalake.platform.quality.suites import store_suite_documents, sync_suites

        resources = names.resources(context)
        catalog_source, warehouse = resources.catalog_source, resources.warehouse
        tables = catalog_source.tables(catalog_source.load())  # an invalid catalog: failing_plainly says why
        outcome, counts, written = sync_suites(warehouse.suites_dir, tables)
        store_suite_documents(warehouse.local, written)  # the GX context lists every suite in its data docs
        rows = [[name, counts.get(name, 0), what] for name, what in outcome.items()]
        return MaterializeResult(metadata={
            "suites": len(counts),
            "expectations": sum(counts.values()),
            "written": sum(1 for v in outcome.values() if v == "written"),
            "unchanged": sum(1 for v in outcome.values() if v == "unchanged"),
            "removed": sum(1 for v in outcome.values() if v == "removed"),
            "path": MetadataValue.path(str(warehouse.suites_dir)),
            "per_suite": MetadataValue.md(markdown_table(["suite", "expectations", "file"], rows)),
        })

    return expectation_suites


expectation_suites = build_suites_asset()


def build_data_docs_asset(partitions_def: DailyPartitionsDefinition, names: Names = DEFAULT):
    # the dbt models of the same job run a backfill's range of days in one run: so does this
    @asset(key=names.key(DATA_DOCS_KEY), group_name=names.group_of("quality"), kinds={"great_expectations"},
           partitions_def=partitions_def, deps=[names.deadletter], tags={"layer": "quality"},
           required_resource_keys=names.resource_keys("warehouse"),
           backfill_policy=BackfillPolicy.multi_run(DAYS_PER_RUN))
    @failing_plainly
    def data_docs(context: AssetExecutionContext) -> MaterializeResult:
        """The Great Expectations data docs of one day (or of each day of a backfill's range, in
        one build): a validation page per table the day fed
        (every expectation with its records evaluated, unexpected ones and examples, from the
        classification pass), listed in the site's index with every suite. Offline HTML under
        `gx/uncommitted/data_docs/local_site/`."""
        validator = names.resources(context).warehouse.validator()
        index, pages, missing = validator.build_partition_docs(context.partition_keys)
        if missing:
            raise Failure(description=f"GX did not render {len(missing)} of {len(pages)} validation page(s) (its log above "
                          "says why)", metadata={"missing": MetadataValue.md("\n".join(f"- `{p}`" for p in missing))})
        metadata = {"index": MetadataValue.path(str(index)), "days": len(context.partition_keys), "pages": len(pages)}
        if len(pages) and len(context.partition_keys) == 1:
            metadata["pages_of_the_day"] = MetadataValue.md("\n".join(f"- [{p.stem}]({p.as_uri()})" for p in pages))
        return MaterializeResult(metadata=metadata)

    return data_docs
