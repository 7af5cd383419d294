import json

from dagster import DefaultSensorStatus, RunRequest, SensorEvaluationContext, SkipReason, sensor

from catalake.defs.events.assets import INCREMENTAL_TAG
from catalake.resources import Configured, at_load

from ..names import DEFAULT, Names


def build_landing_sensor(events_job, configured: Configured, partitions_def, names: Names = DEFAULT):
    # the sensor is evaluated in the code location's process: the landing as it loaded there
    root, layout = configured.landing_root

    @sensor(job=events_job, minimum_interval_seconds=at_load(configured.landing.increment_seconds),
            default_status=DefaultSensorStatus.STOPPED, name=names.of("landing_sensor"))
    def landing_sensor(context: SensorEvaluationContext):
        """Requests an incremental run for every landing day that appeared or whose files changed:
        it reads what landed since the day's last run (a full run when a file changed otherwise).
        Runs of one day are queued, never run at once (deploy/dagster.yaml)."""
        from catalake.platform.landing.listing import landing_partitions

        seen = json.loads(context.cursor) if context.cursor else {}
        now = landing_partitions(root, layout)
        known = set(partitions_def.get_partition_keys())
        requests = [
            RunRequest(run_key=f"{day}:{fingerprint}", partition_key=day, tags={INCREMENTAL_TAG: "true"},
                       asset_selection=[names.deadletter])
            for day, fingerprint in sorted(now.items())
            if seen.get(day) != fingerprint and day in known
        ]
        context.update_cursor(json.dumps(now, sort_keys=True))
        return requests or SkipReason("no new or changed landing folders")

    return landing_sensor
