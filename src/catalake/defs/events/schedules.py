import datetime as dt

from dagster import RunRequest, ScheduleEvaluationContext, SkipReason, schedule

from ..names import DEFAULT, Names


def build_daily_schedule(events_job, partitions_def, names: Names = DEFAULT):
    @schedule(job=events_job, cron_schedule="0 1 * * *", name=names.of("daily_events_schedule"))
    def daily_events_schedule(context: ScheduleEvaluationContext):
        """Yesterday's partition, every night at 01:00 (the day is complete by then): the whole
        day, every message table and the dead-letter table."""
        day = (context.scheduled_execution_time.date() - dt.timedelta(days=1)).isoformat()
        if day not in partitions_def.get_partition_keys(current_time=context.scheduled_execution_time):
            return SkipReason(f"{day} is not a partition (before CATALAKE_START_DATE)")
        return RunRequest(run_key=day, partition_key=day, asset_selection=[names.deadletter])

    return daily_events_schedule
