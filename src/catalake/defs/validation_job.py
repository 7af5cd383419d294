"""GX's own engine on stored partitions, as a Dagster job: the referee of the classification
pass's quality results (`catalake validate` does the same from the command line)."""

import datetime as dt

from dagster import AssetObservation, DailyPartitionsDefinition, OpExecutionContext, job, op

from catalake.platform.quality.referee import validate_stored

from .checks import check_result
from .names import DEFAULT, Names


def build_validate_job(partitions_def: DailyPartitionsDefinition, names: Names = DEFAULT):
    @op(name=names.of("validate_stored_partition"),
        required_resource_keys=names.resource_keys("catalog_source", "spark", "warehouse"))
    def validate_stored_partition(context: OpExecutionContext) -> None:
        """Runs each stored table's expectation suite with Great Expectations' own Spark checkpoint on
        the partition, and records the outcome as an observation of the table (the results are also
        stored in the GX context, under the run name `<day> (catalake validate)`)."""
        day = dt.date.fromisoformat(context.partition_key)
        resources = names.resources(context)
        spark, warehouse = resources.spark, resources.warehouse
        tables = resources.catalog_source.tables()
        store = warehouse.store(spark.session)
        outcomes = validate_stored(spark.session, store, tables, day, validator=warehouse.validator())
        by_name = {t.name: t for t in tables}
        for name, outcome in sorted(outcomes.items()):
            key = names.message(by_name[name].message)
            context.log_event(AssetObservation(asset_key=key, partition=context.partition_key,
                                               metadata={"gx_validation": "passed" if outcome.success else "failed",
                                                         **check_result(key, outcome).metadata}))
        failing = [n for n, o in outcomes.items() if o.errors]
        if failing:
            raise RuntimeError(f"stored rows break ERROR expectations in {', '.join(sorted(failing))}")

    @job(name=names.of("validate_job"), partitions_def=partitions_def,
         description="Great Expectations' own checkpoint on every stored table of one day (the referee of the classification pass's expectation results).")
    def validate_job():
        validate_stored_partition()

    return validate_job
