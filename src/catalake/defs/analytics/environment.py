"""What dbt sees of the warehouse: the environment its parse and its builds run with, and
whether the project's last parse was made with it (a parse made otherwise makes every build
parse the whole project again). Kept apart from dbt_assets.py, which imports dagster-dbt."""

import json
from pathlib import Path

from catalake.platform import uris
from catalake.resources import Warehouse


def dbt_environment(warehouse: Warehouse) -> dict[str, str]:
    """What the project's profile and sources read from the environment: dbt-duckdb reads the
    Delta tables from CATALAKE_WAREHOUSE (profiles.yml, sources.yml) into CATALAKE_ANALYTICS_DB,
    its sources' views kept in CATALAKE_DBT_SOURCES_DB.
    A parse and the builds after it see the same values: dbt parses the whole project again
    when the profile it renders changes."""
    return {"CATALAKE_WAREHOUSE": uris.normalize(warehouse.path),
            "CATALAKE_ANALYTICS_DB": str(warehouse.local / "analytics.duckdb"),
            "CATALAKE_DBT_SOURCES_DB": str(warehouse.dbt_dir / "target" / "sources.duckdb")}


def parsed_with(warehouse: Warehouse) -> Path:
    """Where the environment of the project's last `dbt parse` is kept (in dbt's target/)."""
    return warehouse.dbt_dir / "target" / "catalake_parsed_with.json"


def parsed_as_built(warehouse: Warehouse) -> bool:
    """Whether the project was last parsed with the environment its builds run with: its
    `partial_parse.msgpack` then spares every build a parse of the whole project."""
    path = parsed_with(warehouse)
    return path.exists() and json.loads(path.read_text()) == dbt_environment(warehouse)
