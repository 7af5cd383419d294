"""Dagster assets, checks, jobs, schedules and sensors, a folder per domain: `catalog/`,
`events/`, `quality/`, `analytics/`, `drift/` (drift and replay), `maintenance/`; what they share
beside them (`names.py`, `metadata.py`, `failures.py`). The dbt assets live in
`analytics/dbt_assets.py`, imported only by the definitions that include them (dagster-dbt takes
a second to import)."""
