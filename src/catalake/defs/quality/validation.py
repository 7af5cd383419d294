"""GX's own engine on stored partitions, as a Dagster job: the second opinion on the classification
pass's quality results. `catalake validate` launches its runs.

No `from __future__ import annotations` here: Dagster reads the op's config class from its
annotation."""

import datetime as dt

from dagster import Config, DailyPartitionsDefinition, OpExecutionContext, job, op

from ..failures import failing_plainly
from ..names import DEFAULT, Names
from .checks import check_evaluation, check_targets


class ValidationConfig(Config):
    """Which tables a validation run checks (SQL or warehouse names; none: every stored table)."""

    tables: list[str] = []


def build_validate_job(partitions_def: DailyPartitionsDefinition, names: Names = DEFAULT):
    @op(name=names.of("validate_stored_partition"),
        required_resource_keys=names.resource_keys("catalog_source", "spark", "warehouse"))
    @failing_plainly
    def validate_stored_partition(context: OpExecutionContext, config: ValidationConfig) -> None:
        """Runs each stored table's expectation suite with Great Expectations' own Spark checkpoint on
        the partition. Each outcome is an evaluation of the table's `expectations` check for the
        partition, tied to the materialization that stored the rows (the results are also stored
        in the GX context, under the run name `<day> (catalake validate)`). Fails when stored rows
        break an ERROR expectation."""
        from catalake.platform.errors import ExpectationsBroken
        from catalake.platform.quality.validator import validate_stored

        day = dt.date.fromisoformat(context.partition_key)
        resources = names.resources(context)
        spark, warehouse = resources.spark, resources.warehouse
        tables = resources.catalog_source.tables()
        store = warehouse.store(spark.session)
        outcomes = validate_stored(spark.session, store, tables, day, config.tables or None,
                                   validator=warehouse.validator())
        by_name = {t.name: t for t in tables}
        keys = {name: names.message(by_name[name].message) for name in outcomes}
        targets = check_targets(context.instance, None, context.partition_key, list(keys.values()))
        for name, outcome in sorted(outcomes.items()):
            context.log_event(check_evaluation(keys[name], outcome, context.partition_key, targets.get(keys[name]),
                                               table=name, evaluated_by="GX checkpoint on the stored partition"))
        context.log.info(f"{day}: GX validated {len(outcomes)} stored partition(s)")
        failing = [n for n, o in outcomes.items() if o.errors]
        if failing:
            raise ExpectationsBroken(failing)

    @job(name=names.of("validate_job"), partitions_def=partitions_def,
         description="Great Expectations' own checkpoint on every stored table of one day (the second opinion on the "
         "classification pass's expectation results): an `expectations` check evaluation per table.")
    def validate_job():
        validate_stored_partition()

    return validate_job
