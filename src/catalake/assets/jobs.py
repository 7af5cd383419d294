from dagster import AssetSelection, define_asset_job

catalake_job = define_asset_job(
    "catalake_job",
    selection=AssetSelection.all(),
    description="Materialize the whole lakehouse from the configured catalog.",
)
