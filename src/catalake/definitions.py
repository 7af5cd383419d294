"""The Dagster code location: `dagster dev` loads `defs` from here (see [tool.dagster]). It is
one `CatalakeComponent` without a prefix, configured by the environment (CATALAKE_*: the bundled
demo by default); a team's own project has a `defs.yaml` per catalog instead."""

from catalake.component import CatalakeComponent

defs = CatalakeComponent().definitions()


def job_of_code_location(name: str):
    """One job of this code location, rebuilt in the process that runs it (`catalake run`
    launches its runs with dagster.build_reconstructable_job, Dagster's public way)."""
    return defs.resolve_job_def(name)
