from dagster import AssetSelection, define_asset_job

from .event_assets import DEADLETTER_KEY
from .names import DEFAULT, Names


def build_catalog_job(names: Names = DEFAULT, analytics: bool = False):
    """The catalog's run: with the analytics, the dbt project too (its manifest is what the code
    location's dbt assets are loaded from)."""
    return define_asset_job(
        names.of("catalake_job"),
        selection=AssetSelection.assets(names.catalog, names.suites, *([names.dbt_project] if analytics else [])),
        description="Materialize the catalog table, create or evolve every per-message table, and write the "
        "expectation suites" + (" and the dbt project." if analytics else "."),
    )


catalake_job = build_catalog_job()

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


def build_analytics_job(partitions_def, assets: list, names: Names = DEFAULT):
    return define_asset_job(
        names.of("analytics_job"),
        selection=AssetSelection.assets(*assets),
        partitions_def=partitions_def,
        description="dbt build of one day's analytics models over the per-message tables, and the day's GX data docs.",
    )
