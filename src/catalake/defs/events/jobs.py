"""The day's job: every table a day's classification writes."""

from dagster import AssetSelection, define_asset_job

from ..names import DEFAULT, Names
from .assets import DEADLETTER_KEY

# What the schedule, the sensor and `catalake run` launch: the job's runs select `deadletter`
# only, and that one step writes and reports every message table of the day (selecting all of
# them would make Dagster plan two events per table before the run starts: 30 s for 1,000).
DAILY_SELECTION = [DEADLETTER_KEY]


def build_events_job(partitions_def, events_asset, names: Names = DEFAULT):
    """All the tables a day's classification writes (the `classify_events` multi-asset), so that
    each message asset shows the job, its schedule and its sensor as what materializes it."""
    return define_asset_job(
        names.of("events_job"),
        selection=AssetSelection.assets(events_asset),
        partitions_def=partitions_def,
        description="Classify one day of landed events into the per-message tables and the dead-letter table, in "
        "one step. The schedule, the sensor and `catalake run` select `deadletter`: the step writes the whole day "
        "and reports the materialization and `expectations` check of every message table it writes. Selecting "
        "message tables re-classifies the day for those tables only.",
    )
