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

from catalake.platform.config import Settings
from catalake.platform.landing.listing import first_day, start_date

from .names import Names

SPECS_FORMAT = 1  # the specs snapshot's layout (_plain): a new one is written when it changes


def _path(settings: Settings, names: Names, stem: str, suffix: str) -> Path:
    """One file per instance: two prefixes over one warehouse keep their own."""
    return settings.local / "catalog" / ".".join([stem, *names.prefix, suffix])


def _write(target: Path, content: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=target.parent, delete=False, suffix=".tmp") as out:
        out.write(content)
    os.replace(out.name, target)


def keep_specs(settings: Settings, names: Names, specs: list[AssetSpec], fingerprint: str) -> bool:
    """Keep the specs of a valid catalog the run materialized, written only when they changed
    (what they were made from, the catalog's fingerprint and the settings they name, is kept
    beside them). True when written."""
    path = _path(settings, names, "specs", "json")
    made_from = hashlib.sha256(
        f"{fingerprint}|{settings.warehouse}|{settings.owners}|{names}|{SPECS_FORMAT}".encode()).hexdigest()
    stamp = path.with_suffix(".from")
    if path.exists() and stamp.exists() and stamp.read_text() == made_from:
        return False
    _write(path, serialize_value([_plain(spec) for spec in specs]))
    _write(stamp, made_from)
    return True


def last_valid_specs(settings: Settings, names: Names) -> list[AssetSpec]:
    """The specs the last `catalake_job` run kept (none before the first, or from another release)."""
    try:
        plain = deserialize_value(_path(settings, names, "specs", "json").read_text())
    except Exception:  # noqa: BLE001 - none yet, or unreadable (another version wrote it): no specs
        return []
    return [AssetSpec(key=AssetKey(p["key"]), description=p["description"], group_name=p["group"], kinds=set(p["kinds"]),
                      deps=[names.catalog], metadata=p["metadata"], tags=p["tags"], owners=p["owners"],
                      code_version=p["code_version"], skippable=True) for p in plain]


def _plain(spec: AssetSpec) -> dict:
    return {"key": list(spec.key.path), "description": spec.description, "group": spec.group_name,
            "kinds": sorted(spec.kinds), "metadata": dict(spec.metadata), "tags": dict(spec.tags),
            "owners": list(spec.owners), "code_version": spec.code_version}


def keep_first_day(settings: Settings, names: Names) -> str | None:
    """The landing zone's first day, listed by the run and kept for the loads (None: no day yet,
    or the landing cannot be listed: nothing kept)."""
    day = first_day(settings.landing, settings.layout)
    if day is None:
        return None
    path = _path(settings, names, "landing", "json")
    state = {"landing": settings.landing, "layout": settings.layout, "first_day": day.isoformat()}
    try:
        if json.loads(path.read_text()) == state:
            return state["first_day"]
    except (OSError, ValueError):
        pass
    _write(path, json.dumps(state, sort_keys=True))
    return state["first_day"]


def start_date_at_load(settings: Settings, names: Names) -> str:
    """The first daily partition: CATALAKE_START_DATE (the `start_date` attribute), else the
    landing's first day as the last `catalake_job` run found it; before the first such run, the
    landing is listed (`landing.listing.start_date`)."""
    if settings.start_date:
        return settings.start_date
    try:
        state = json.loads(_path(settings, names, "landing", "json").read_text())
        if state["landing"] == settings.landing and state["layout"] == settings.layout:
            return state["first_day"]
    except (OSError, ValueError, KeyError):
        pass
    return start_date(settings)
