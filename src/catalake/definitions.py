"""The Dagster code location: `dagster dev` loads `defs` from here (see [tool.dagster])."""

from catalake.location import build_definitions

defs = build_definitions()
