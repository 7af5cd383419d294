import json
import time

from dagster import DefaultSensorStatus, RunRequest, SensorEvaluationContext, SkipReason, sensor

from catalake.defs.events.assets import CADENCE_TAG, INCREMENTAL_TAG
from catalake.resources import Configured, at_load

from ..names import DEFAULT, Names

RECENT_DAYS = 2  # the days whose staged tables the sensor looks at (one read of each day's ledger)
CHECKPOINT_SECONDS = 600  # how often the sensor looks for tables due a checkpoint
CHECKED = "checkpoints_checked"  # the cursor's key for when it last did


def checkpoints_due(warehouse: str, days: list[str]) -> bool:
    import datetime as dt

    from catalake.platform.maintenance.checkpoints import due
    from catalake.platform.uris import Location

    return bool(due(Location.of(warehouse), [dt.date.fromisoformat(day) for day in days]))


def due_days(warehouse: str, days: list[str], requested: set[str]) -> dict[str, str]:
    """The days among `days` (not `requested` already) whose first staged table is due now,
    with a run key for it."""
    import datetime as dt

    from catalake.platform.runs.ledger import next_due
    from catalake.platform.uris import Location

    root = Location.of(warehouse)
    found = {}
    for day in days:
        due = None if day in requested else next_due(root, dt.date.fromisoformat(day))
        if due is not None and due <= time.time():
            found[day] = f"{day}:due:{due:.3f}"
    return found


def build_landing_sensor(events_job, checkpoint_job, configured: Configured, partitions_def, names: Names = DEFAULT):
    # the sensor is evaluated in the code location's process: the landing as it loaded there
    root, layout = configured.landing_root
    warehouse = configured.warehouse_root

    @sensor(jobs=[events_job, checkpoint_job], minimum_interval_seconds=at_load(configured.landing.increment_seconds),
            default_status=DefaultSensorStatus.STOPPED, name=names.of("landing_sensor"))
    def landing_sensor(context: SensorEvaluationContext):
        """Requests an incremental run for every landing day that appeared or whose files changed:
        it reads what landed since the day's last run (a full run when a file changed otherwise),
        and commits each table when it is due (CATALAKE_FRESHNESS_SECONDS). A recent day whose
        staged tables come due with nothing new landed gets a run too. Runs of one day are queued,
        never run at once (deploy/dagster.yaml). When a table the increments commit to is due a
        checkpoint, at most every CHECKPOINT_SECONDS, a `checkpoint_job` run."""
        from catalake.platform.landing.listing import landing_partitions

        seen = json.loads(context.cursor) if context.cursor else {}
        now = landing_partitions(root, layout)
        known = set(partitions_def.get_partition_keys())
        changed = {day: f"{day}:{fingerprint}" for day, fingerprint in sorted(now.items())
                   if seen.get(day) != fingerprint and day in known}
        changed.update(due_days(warehouse, sorted(set(now) & known)[-RECENT_DAYS:], set(changed)))
        requests = [RunRequest(run_key=key, partition_key=day, tags={INCREMENTAL_TAG: "true", CADENCE_TAG: "true"},
                               job_name=events_job.name, asset_selection=[names.deadletter])
                    for day, key in sorted(changed.items())]
        checked = seen.pop(CHECKED, 0.0)
        if time.time() - checked >= CHECKPOINT_SECONDS:
            checked = time.time()
            if checkpoints_due(warehouse, sorted(set(now) & known)[-RECENT_DAYS:]):
                requests.append(RunRequest(run_key=f"checkpoints:{checked:.0f}", job_name=checkpoint_job.name))
        context.update_cursor(json.dumps({**now, CHECKED: checked}, sort_keys=True))
        return requests or SkipReason("no new or changed landing folders, and no staged table due")

    return landing_sensor
