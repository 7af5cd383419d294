"""What a `catalake_job` run leaves for the code location's next loads, so that a load writes
nothing and lists nothing: the message specs of the catalog it materialized (shown while the
catalog is invalid) and the landing zone's first day (the first daily partition). Both live in the
warehouse's local folder, under `catalog/`, one set per instance.

Dagster loads the code location in the webserver, the daemon and every run worker: each of those
loads only reads these files (written atomically: another process sees all of one or nothing)."""

import hashlib
import json
import os
import tempfile
from pathlib import Path

from dagster import AssetKey, AssetSpec, deserialize_value, serialize_value

from catalake.platform.landing.listing import DEFAULT_START, first_day
from catalake.resources import Configured, at_load

from ..names import Names

SPECS_FORMAT = 1  # the specs snapshot's layout (_plain): a new one is written when it changes


def _path(configured: Configured, names: Names, stem: str, suffix: str) -> Path:
    """One file per instance: two prefixes over one warehouse keep their own."""
    return configured.warehouse.local / "catalog" / ".".join([stem, *names.prefix, suffix])



def _write(target: Path, content: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=target.parent, delete=False, suffix=".tmp") as out:
        out.write(content)
    os.replace(out.name, target)


def keep_specs(configured: Configured, names: Names, specs: list[AssetSpec], fingerprint: str) -> bool:
    """Keep the specs of a valid catalog the run materialized, written only when they changed
    (what they were made from, the catalog's fingerprint and the settings they name, is kept
    beside them). True when written."""
    path = _path(configured, names, "specs", "json")
    warehouse, owners = configured.warehouse_root, tuple(configured.catalog_source.owners)
    made_from = hashlib.sha256(f"{fingerprint}|{warehouse}|{owners}|{names}|{SPECS_FORMAT}".encode()).hexdigest()
    stamp = path.with_suffix(".from")
    if path.exists() and stamp.exists() and stamp.read_text() == made_from:
        return False
    _write(path, serialize_value([_plain(spec) for spec in specs]))
    _write(stamp, made_from)
    return True


def last_valid_specs(configured: Configured, names: Names) -> list[AssetSpec]:
    """The specs the last `catalake_job` run kept (none before the first, or from another release)."""
    try:
        plain = deserialize_value(_path(configured, names, "specs", "json").read_text())
    except Exception:  # noqa: BLE001 - none yet, or unreadable (another version wrote it): no specs
        return []
    return [AssetSpec(key=AssetKey(p["key"]), description=p["description"], group_name=p["group"], kinds=set(p["kinds"]),
                      deps=[names.catalog], metadata=p["metadata"], tags=p["tags"], owners=p["owners"],
                      code_version=p["code_version"], skippable=True) for p in plain]


def _plain(spec: AssetSpec) -> dict:
    return {"key": list(spec.key.path), "description": spec.description, "group": spec.group_name,
            "kinds": sorted(spec.kinds), "metadata": dict(spec.metadata), "tags": dict(spec.tags),
            "owners": list(spec.owners), "code_version": spec.code_version}


def keep_first_day(configured: Configured, names: Names) -> str | None:
    """The landing zone's first day, listed by the run and kept for the loads (None: no day yet,
    or the landing cannot be listed: nothing kept)."""
    landing, layout = configured.landing_root
    day = first_day(landing, layout)
    if day is None:
        return None
    path = _path(configured, names, "landing", "json")
    state = {"landing": landing, "layout": layout, "first_day": day.isoformat()}
    try:
        if json.loads(path.read_text()) == state:
            return state["first_day"]
    except (OSError, ValueError):
        pass
    _write(path, json.dumps(state, sort_keys=True))
    return state["first_day"]


def start_date_at_load(configured: Configured, names: Names) -> str:
    """The first daily partition: CATALAKE_START_DATE (the `start_date` attribute), else the
    landing's first day as the last `catalake_job` run found it; before the first such run, the
    landing is listed (else DEFAULT_START, also when it cannot be listed: the run says why)."""
    if configured.landing.start_date:
        return at_load(configured.landing.start_date)
    landing, layout = configured.landing_root
    try:
        state = json.loads(_path(configured, names, "landing", "json").read_text())
        if state["landing"] == landing and state["layout"] == layout:
            return state["first_day"]
    except (OSError, ValueError, KeyError):
        pass
    day = first_day(landing, layout)
    return day.isoformat() if day else DEFAULT_START
