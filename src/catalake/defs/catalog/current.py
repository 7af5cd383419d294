"""Whether the definitions a code location shows are the catalog on disk: the `message_catalog`
asset's `state_current` check, evaluated by every `catalake_job` run and by the instance's
`catalog_state_sensor` as soon as a catalog file changes (the catalog files are compared by a
digest of their bytes with the ones the state was made from; nothing is parsed)."""

import hashlib

from dagster import (AssetCheckEvaluation, AssetCheckResult, AssetCheckSeverity, DefaultSensorStatus, MetadataValue,
                     SensorEvaluationContext, SensorResult, SkipReason, asset_check, sensor)

from catalake.resources import Configured

from ..names import Names
from .state import DefsState, changed_files

CHECK = "state_current"


def _outcome(state: DefsState, configured: Configured) -> dict:
    changed = changed_files(state, configured)
    shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    return {
        "passed": not changed,
        "severity": AssetCheckSeverity.WARN,
        "description": None if not changed else (
            f"The catalog changed since the code location's state was made ({shown}): the definitions shown are the "
            "catalog as it was. A `catalake_job` run refreshes the state; then reload the code location."),
        "metadata": {"changed_files": MetadataValue.json(changed), "state_digest": state.digest[:16],
                     "catalog_fingerprint": state.catalog_fingerprint or "none"},
    }


def build_current_check(names: Names, state: DefsState, configured: Configured):
    @asset_check(asset=names.catalog, name=CHECK, blocking=False,
                 description="The definitions this code location shows were made from the catalog as it is on disk "
                 "(WARN when a catalog file changed since its state was made: materialize `message_catalog`, then "
                 "reload the code location).")
    def state_current() -> AssetCheckResult:
        return AssetCheckResult(**_outcome(state, configured))

    return state_current


def build_current_sensor(names: Names, state: DefsState, configured: Configured):
    @sensor(name=names.of("catalog_state_sensor"), minimum_interval_seconds=30,
            default_status=DefaultSensorStatus.RUNNING)
    def catalog_state_sensor(context: SensorEvaluationContext):
        """Evaluates `state_current` of `message_catalog` when it changes: a catalog edited after
        the code location's state was made fails it at once, a reload with a current state passes it."""
        outcome = _outcome(state, configured)
        seen = hashlib.sha256(f"{state.digest}|{outcome['metadata']['changed_files'].data}".encode()).hexdigest()
        if context.cursor == seen:
            return SkipReason("the catalog files are as at the last evaluation")
        return SensorResult(cursor=seen, asset_events=[
            AssetCheckEvaluation(asset_key=names.catalog, check_name=CHECK, blocking=False, **outcome)])

    return catalog_state_sensor
