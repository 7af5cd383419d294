"""Maintenance in Dagster: `maintenance_job` compacts one day's table-partitions and vacuums the
warehouse; `maintenance_schedule` runs it for yesterday after the nightly run; the
`compaction_sensor` requests a compaction of a day whose increments left a table-partition with
more than CATALAKE_COMPACT_FILES files. Runs of the job carry the day's partition tag, so they
queue behind the day's other runs (deploy/dagster.yaml: one run per partition at a time).

No `from __future__ import annotations` here: Dagster reads the op's config class from its
annotation."""

import datetime as dt

from dagster import (AssetKey, AssetObservation, AssetRecordsFilter, Config, DagsterRunStatus, DefaultSensorStatus,
                     MetadataValue, OpExecutionContext, RunRequest, RunStatusSensorContext, ScheduleEvaluationContext,
                     SkipReason, job, op, run_status_sensor, schedule)

from catalake.resources import CatalogSource

from ..failures import failing_plainly
from ..names import DEFAULT, Names

MAINTAIN_OP = "maintain_day"


class MaintenanceConfig(Config):
    """What a maintenance run does (the schedule's run: all of it)."""

    compact: bool = True  # merge the day's table-partitions down to one file per target size
    closed_day: bool = True  # every partition over its bound; False: only those over CATALAKE_COMPACT_FILES
    vacuum: bool = True  # delete what no version inside retention needs, trim the Delta logs
    retention_hours: float | None = None  # default CATALAKE_RETENTION_HOURS (168)
    dry_run: bool = False  # vacuum: only say what would go
    # record column statistics for the files written without them (a warehouse of an older
    # release; every commit since carries them): off by default, it loads every table's log
    statistics: bool = False
    # delete the increment runs older than `keep_runs_days` whose day a later full run closed
    # (catalake/retention.py): what a year of increments leaves that no one needs
    runs: bool = True
    keep_runs_days: float = 7.0


def build_maintenance_job(partitions_def, names: Names = DEFAULT):
    @op(name=names.of(MAINTAIN_OP), required_resource_keys=names.resource_keys("catalog_source", "spark", "warehouse"))
    @failing_plainly
    def maintain_day(context: OpExecutionContext, config: MaintenanceConfig) -> None:
        """Compacts the day's partition of every table whose files exceed ceil(bytes / target)
        (a Delta commit that changes no row: the rows merged are the rows read, and a partition
        a concurrent run changed is left as it is), then vacuums every table: the files no
        version inside the retention period references are deleted and each Delta log is
        checkpointed and trimmed. Each table's observation shows its files and bytes before and
        after, and the bytes the vacuum removed. Then the increment runs older than a week whose
        day a later full run closed are deleted from the instance, with their events (the full
        runs, which hold each table's day and checks, are kept)."""
        from catalake.platform.warehouse.catalog_table import CATALOG_TABLE
        from catalake.platform.warehouse.queries import warehouse_tables

        resources = names.resources(context)
        store = resources.warehouse.store(resources.spark)
        tables = [t for t in warehouse_tables(store.root).values() if t != CATALOG_TABLE]
        keys = _asset_keys(resources.catalog_source, names)

        def key_of(table: str) -> AssetKey:
            return keys.get(table, names.key(*table.split("/")))

        if config.compact:
            _compact(context, config, resources, store, tables, key_of)
        if config.statistics:
            _statistics(context, store, [*tables, CATALOG_TABLE], key_of)
        if config.runs:
            from catalake.retention import delete_runs

            retained = delete_runs(context.instance, names.of("events_job"), config.keep_runs_days,
                                   progress=context.log.info)
            context.log.info(f"runs: {retained.deleted} superseded increment run(s) deleted, {retained.kept_open} "
                             "kept (their day has no full run yet)")
        if config.vacuum:
            _vacuum(context, config, resources.warehouse, store, [*tables, CATALOG_TABLE], key_of)

    @job(name=names.of("maintenance_job"), partitions_def=partitions_def,
         description="Compact one day's table-partitions to the target file size, then vacuum the warehouse "
         "(files no version inside retention needs) and trim the Delta logs.")
    def maintenance_job():
        maintain_day()

    return maintenance_job


def _compact(context: OpExecutionContext, config: MaintenanceConfig, resources, store, tables: list[str], key_of) -> None:
    """The day's compaction, each table's outcome an observation of its asset."""
    from catalake.platform.maintenance import compact_day

    day = dt.date.fromisoformat(context.partition_key)
    spark, warehouse = resources.spark, resources.warehouse
    engine = None if spark.engine == "local" else (lambda: spark.session)
    done = compact_day(engine, store, tables, day, target=warehouse.target_file_bytes,
                       min_files=2 if config.closed_day else warehouse.compact_files + 1, progress=context.log.info)
    for c in done:
        context.log_event(AssetObservation(asset_key=key_of(c.table), partition=context.partition_key, metadata={
            "compaction": "skipped" if c.skipped else "compacted", "files_before": c.files_before,
            "files_after": c.files_after, "bytes_before": c.bytes_before, "bytes_after": c.bytes_after,
            "rows_merged": c.rows_merged, **({"delta_version": c.version} if c.version is not None else {}),
            **({"skipped": c.skipped} if c.skipped else {})}))
    context.log.info(f"{day}: compacted {sum(1 for c in done if not c.skipped)} table-partition(s): "
                     f"{sum(c.files_before for c in done)} -> {sum(c.files_after for c in done)} file(s); "
                     f"{sum(1 for c in done if c.skipped)} skipped")


def _statistics(context: OpExecutionContext, store, tables: list[str], key_of) -> None:
    """Column statistics recorded for the files without them, each table given them an
    observation of its asset."""
    from catalake.platform.maintenance import analyze_warehouse

    analyzed = analyze_warehouse(store, tables, progress=context.log.info)
    for a in analyzed:
        if a.files:
            context.log_event(AssetObservation(asset_key=key_of(a.table), metadata={
                "statistics_recorded_files": a.files, "live_files": a.live_files,
                "delta_version": a.version}))
    context.log.info(f"statistics: recorded for {sum(a.files for a in analyzed)} file(s) in "
                     f"{sum(1 for a in analyzed if a.files)} of {len(analyzed)} table(s)")


def _vacuum(context: OpExecutionContext, config: MaintenanceConfig, warehouse, store, tables: list[str],
            key_of) -> None:
    """The warehouse's vacuum, each table that lost files an observation of its asset."""
    from catalake.platform.maintenance import vacuum_warehouse

    hours = warehouse.retention_hours if config.retention_hours is None else config.retention_hours
    vacuumed = vacuum_warehouse(store, tables, retention_hours=hours, dry_run=config.dry_run, progress=context.log.info)
    for v in vacuumed:
        if v.files:
            context.log_event(AssetObservation(asset_key=key_of(v.table), metadata={
                "vacuum": "dry run" if v.dry_run else "deleted", "vacuum_files": v.files,
                "vacuum_bytes": MetadataValue.int(v.bytes), "retention_hours": hours}))
    context.log.info(f"vacuum (retention {hours} h{', dry run' if config.dry_run else ''}): "
                     f"{sum(v.files for v in vacuumed)} file(s), {sum(v.bytes for v in vacuumed)} bytes "
                     f"over {len(vacuumed)} table(s)")


def _asset_keys(catalog_source: CatalogSource, names: Names) -> dict[str, AssetKey]:
    """Warehouse table name -> the asset whose observations show its maintenance."""
    from catalake.platform.warehouse.catalog_table import CATALOG_TABLE
    from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE

    keys = {DEADLETTER_TABLE: names.deadletter, CATALOG_TABLE: names.catalog}
    try:
        keys.update({t.name: names.message(t.message) for t in catalog_source.tables()})
    except Exception:  # noqa: BLE001 - an invalid catalog: its tables are maintained all the same
        pass
    return keys


def build_maintenance_schedule(maintenance_job, partitions_def, names: Names = DEFAULT):
    @schedule(job=maintenance_job, cron_schedule="0 3 * * *", name=names.of("maintenance_schedule"))
    def maintenance_schedule(context: ScheduleEvaluationContext):
        """Yesterday's partition every night at 03:00, after the nightly run (01:00): the closed
        day compacted, then the warehouse vacuumed."""
        day = (context.scheduled_execution_time.date() - dt.timedelta(days=1)).isoformat()
        if day not in partitions_def.get_partition_keys(current_time=context.scheduled_execution_time):
            return SkipReason(f"{day} is not a partition (before CATALAKE_START_DATE)")
        return RunRequest(run_key=day, partition_key=day)

    return maintenance_schedule


def build_compaction_sensor(events_job, maintenance_job, names: Names = DEFAULT):
    @run_status_sensor(run_status=DagsterRunStatus.SUCCESS, monitored_jobs=[events_job], request_job=maintenance_job,
                       name=names.of("compaction_sensor"), default_status=DefaultSensorStatus.STOPPED)
    def compaction_sensor(context: RunStatusSensorContext):
        """After a day's run, when a table's partition of that day holds more than
        CATALAKE_COMPACT_FILES files (the run's `deadletter` metadata: `compaction_due`):
        a compaction of the day's over-full partitions, queued behind the day's other runs."""
        run = context.dagster_run
        day = run.tags.get("dagster/partition")
        records = context.instance.fetch_materializations(
            AssetRecordsFilter(asset_key=names.deadletter, asset_partitions=[day]), limit=1).records if day else []
        if not records or records[0].run_id != run.run_id:
            return SkipReason("the run reported no deadletter materialization of its day")
        due = records[0].asset_materialization.metadata.get("compaction_due")
        if due is None or not due.value:
            return SkipReason(f"{day}: no table-partition over the file threshold")
        return RunRequest(run_key=f"compact:{day}:{run.run_id}", partition_key=day, run_config={
            "ops": {names.of(MAINTAIN_OP): {"config": {"closed_day": False, "vacuum": False, "runs": False}}}})

    return compaction_sensor


def build_checkpoint_job(names: Names = DEFAULT):
    """`checkpoint_job`: the tables whose tip is a checkpoint interval past their last checkpoint
    checkpointed (platform/maintenance/checkpoints.py); the landing sensor asks for it."""

    @op(name=names.of("checkpoint_tables"), required_resource_keys=names.resource_keys("catalog_source", "spark", "warehouse"))
    @failing_plainly
    def checkpoint_tables(context: OpExecutionContext) -> None:
        """Checkpoints each table whose newest version, as the increments of the last two days
        left it, is at least its `delta.checkpointInterval` past its last checkpoint: no commit
        checkpoints on its own path, and a reader loads a table's log from its last checkpoint
        on. Each table's observation shows the version checkpointed and the versions since the
        one before."""
        from catalake.platform.maintenance import checkpoints

        resources = names.resources(context)
        store = resources.warehouse.store(resources.spark)
        today = dt.datetime.now(dt.timezone.utc).date()
        due = checkpoints.due(store.location, [today - dt.timedelta(days=1), today])
        keys = _asset_keys(resources.catalog_source, names)
        for done in checkpoints.checkpoint_tables(store, sorted(due), progress=context.log.info):
            context.log_event(AssetObservation(asset_key=keys.get(done.table, names.key(*done.table.split("/"))),
                                               metadata={"checkpoint_version": done.version,
                                                         "versions_since_the_last": done.since}))
        if not due:
            context.log.info("no table is due a checkpoint")

    @job(name=names.of("checkpoint_job"),
         description="Checkpoint the Delta log of each table that increments have committed to a checkpoint "
         "interval's times since its last checkpoint.")
    def checkpoint_job():
        checkpoint_tables()

    return checkpoint_job
