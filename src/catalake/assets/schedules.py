from dagster import build_schedule_from_partitioned_job


def build_daily_schedule(events_job):
    """Yesterday's partition, every night at 01:00 (the day is complete by then)."""
    return build_schedule_from_partitioned_job(events_job, hour_of_day=1, name="daily_events_schedule")
