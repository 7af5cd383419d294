"""The Dagster code location: `dagster dev` loads `defs` from here (see [tool.dagster])."""

from catalake.location import build_definitions

defs = build_definitions()


def job_of_location(name: str):
    """One job of this code location, rebuilt in the process that runs it (`catalake run`
    launches its runs with dagster.build_reconstructable_job, Dagster's public way)."""
    return defs.resolve_job_def(name)
