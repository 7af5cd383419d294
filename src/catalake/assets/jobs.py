from dagster import AssetSelection, define_asset_job

from .events import DEADLETTER_KEY

catalake_job = define_asset_job(
    "catalake_job",
    selection=AssetSelection.assets("message_catalog", "expectation_suites"),
    description="Materialize the catalog table, create or evolve every per-message table, and write the expectation suites.",
)


def build_events_job(partitions_def):
    return define_asset_job(
        "events_job",
        selection=AssetSelection.assets(DEADLETTER_KEY),
        partitions_def=partitions_def,
        description="Classify one day of landed events into the per-message tables and the dead-letter table "
        "(one step; it reports the materialization and expectations check of every message table it writes).",
    )
