"""The code location's state: what a load needs from the catalog, made once and read by every load.

Dagster loads a code location in the webserver, the daemon, every code server start, every
"Reload" and every run worker. Reading and checking a catalog, deriving its tables and parsing the
dbt project is seconds at thousands of definitions, so that work is done when the state is
refreshed (`dg utils refresh-defs-state`, `dagster dev`, or a `catalake_job` run whose catalog
changed) and a load reads one file:

- the message assets' specs: table names, column schemas, owners, fingerprints as code versions;
- the catalog's fingerprint, and a digest of each catalog file it was read from (a load compares
  them with the disk to say the catalog changed since);
- the landing zone's first day (the first daily partition);
- with the analytics, the dbt project's manifest the dbt assets are built from.

A catalog that is invalid when the state is refreshed keeps the last valid specs, each flagged
with what is wrong (the location still loads; its runs fail until the catalog is fixed)."""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

import orjson
from dagster import AssetKey, AssetSpec, MetadataValue, TableColumn, TableColumnConstraints, TableSchema

from catalake.platform.catalog.files import files_state
from catalake.resources import Configured, at_load

from ..names import Names

ABANDONED_SECONDS = 3600  # a temporary state file this old was left by a killed writer (one takes a minute at most)
STATE_FORMAT = 2  # the document's layout: a state of another format is not read (the slow way, then refreshed)
COLUMNS, PATH = "dagster/column_schema", "path"  # the two metadata values that are not plain JSON


class NoStateWarning(UserWarning):
    """A code location loaded without its state: the catalog was read as it loaded."""


@dataclass(frozen=True)
class DefsState:
    """One instance's state (one JSON document; `digest` is over everything else)."""

    made_for: str  # the settings the specs name (warehouse, owners, prefix, group): another setting, another state
    catalog_files: list[list[str]]  # [path, digest of its bytes] of every catalog file read
    catalog_fingerprint: str | None  # changes exactly when a definition or its derived schema does
    specs: list[dict]  # the message assets' specs, plain
    deadletter: dict  # the dead-letter table's spec, plain
    error: str | None = None  # what is wrong with the catalog the state was refreshed from
    landing: list[str] | None = None  # [root, layout] listed for `first_day`
    first_day: str | None = None
    manifest: dict | None = None  # the dbt project's, with the analytics
    format: int = STATE_FORMAT
    digest: str = ""

    def sealed(self) -> DefsState:
        return replace(self, digest=_digest(self))

    @property
    def message_specs(self) -> list[AssetSpec]:
        columns = {}  # one object per distinct column: tables share their envelope's (Dagster's are immutable)
        return [_spec(plain, columns) for plain in self.specs]

    @property
    def deadletter_spec(self) -> AssetSpec:
        return _spec(self.deadletter, {})


def _digest(state: DefsState) -> str:
    content = asdict(state)
    content.pop("digest")
    return hashlib.sha256(orjson.dumps(content, option=orjson.OPT_SORT_KEYS)).hexdigest()


def made_for(configured: Configured, names: Names) -> str:
    """The settings a state's specs are made for: a load with others builds its own."""
    fields = [configured.warehouse_root, *configured.catalog_source.owners, "|", *names.prefix, "|", names.group or "",
              str(STATE_FORMAT)]
    return hashlib.sha256("\n".join(fields).encode()).hexdigest()[:16]


def catalog_files(configured: Configured) -> list[list[str]]:
    """The catalog files as they are now: path and a digest of the bytes (read, never parsed)."""
    paths = [at_load(p) for p in configured.catalog_source.paths]
    return [[path, digest.hex() if digest is not None else ""] for path, digest in files_state(paths)]


def changed_files(state: DefsState, configured: Configured) -> list[str]:
    """The catalog files added, removed or edited since the state was made (none: it is current)."""
    before, now = dict(map(tuple, state.catalog_files)), dict(map(tuple, catalog_files(configured)))
    return sorted(p for p in before.keys() | now.keys() if before.get(p) != now.get(p))


def make_state(configured: Configured, names: Names, analytics: bool, *, prepare_dbt: bool,
               previous: DefsState | None = None, loaded=None) -> DefsState:
    """The state of the catalog as it is now (`loaded`: already read by the caller). With
    `prepare_dbt` the dbt project is prepared and parsed (files written under the warehouse's
    dbt folder); without, the manifest a run last parsed is taken as it is, if any. Without the
    analytics, the `previous` state's manifest is kept for the loads that have them."""
    from catalake.platform.landing.listing import first_day

    from .messages import catalog_at_load, deadletter_spec, message_spec

    files = catalog_files(configured)
    loaded = loaded if loaded is not None else catalog_at_load(configured.catalog_source)
    keep = previous if previous is not None and previous.made_for == made_for(configured, names) else None
    if loaded.error is not None:
        specs, fingerprint = (keep.specs, keep.catalog_fingerprint) if keep else ([], None)
        manifest = keep.manifest if keep else None
    else:
        from catalake.platform.warehouse.message_tables import catalog_fingerprint

        specs = [_plain(message_spec(t.message, loaded.catalog, configured, t, names)) for t in loaded.tables]
        fingerprint = catalog_fingerprint(loaded.tables)
        manifest = (_manifest(configured, loaded.tables, prepare_dbt) if analytics
                    else keep.manifest if keep else None)
    landing, layout = configured.landing_root
    day = None if configured.landing.start_date else first_day(landing, layout)
    return DefsState(made_for=made_for(configured, names), catalog_files=files,
                         catalog_fingerprint=fingerprint, specs=specs,
                         deadletter=_plain(deadletter_spec(configured, names)), error=loaded.error, landing=[landing, layout],
                         first_day=day.isoformat() if day else None, manifest=manifest).sealed()


def _manifest(configured: Configured, tables: list, prepare: bool) -> dict | None:
    from ..analytics.project import manifest_path

    if prepare:
        from ..analytics.dbt_assets import dbt_project, ensure_manifest

        ensure_manifest(dbt_project(configured.warehouse, tables), configured.warehouse)
    path = manifest_path(configured.warehouse)
    return slim_manifest(orjson.loads(path.read_bytes())) if path.exists() else None


SOURCE_DETAIL = ("columns", "unrendered_config", "description", "source_description")  # 85% of a manifest


def slim_manifest(manifest: dict) -> dict:
    """The manifest without what building the dbt assets never reads: the macros and each
    source's columns and descriptions (a source is a message asset: its key is all dagster-dbt
    takes from it, dbt_assets.Translator). A run's `dbt build` reads the project's own files."""
    sources = {uid: {k: v for k, v in props.items() if k not in SOURCE_DETAIL}
               for uid, props in manifest.get("sources", {}).items()}
    return {**manifest, "sources": sources, "macros": {}}


def write_state(path: Path, state: DefsState) -> None:
    """Written whole or not at all: a load in another process reads the old state or the new one.
    What a writer killed midway left (its temporary file) is removed by the next one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for left in path.parent.glob(f"{path.name}.*.tmp"):
        if time.time() - left.stat().st_mtime > ABANDONED_SECONDS:
            left.unlink(missing_ok=True)
    with tempfile.NamedTemporaryFile("wb", dir=path.parent, delete=False, prefix=f"{path.name}.", suffix=".tmp") as out:
        out.write(orjson.dumps(asdict(state)))
    os.chmod(out.name, 0o644)  # read by every process that loads the location, whoever runs it
    os.replace(out.name, path)


def read_state(path: Path | None) -> DefsState | None:
    """The state at `path`, None when there is none or it is of another format."""
    if path is None:
        return None
    try:
        document = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(document, dict) or document.get("format") != STATE_FORMAT:
        return None
    try:
        return DefsState(**document)
    except TypeError:
        return None


def state_for(path: Path | None, configured: Configured, names: Names) -> DefsState | None:
    """The state at `path` if it was made for these settings (None: none, or another warehouse,
    prefix or owners: a load with those builds its own)."""
    state = read_state(path)
    return state if state is not None and state.made_for == made_for(configured, names) else None


def refresh(path: Path, configured: Configured, names: Names, analytics: bool) -> DefsState:
    """The state made now (with the analytics, the dbt project prepared and parsed), written at
    `path` over the one there (whose specs it keeps while the catalog is invalid)."""
    state = make_state(configured, names, analytics, prepare_dbt=analytics, previous=read_state(path))
    write_state(path, state)
    return state


def state_file(configured: Configured, names: Names) -> Path:
    """Where the bundled code location (`definitions.py`, no dg project) keeps its state: the
    warehouse's local folder, one file per instance."""
    return configured.warehouse.local / "catalog" / ".".join(["state", *names.prefix, "json"])


def start_date(configured: Configured, state: DefsState | None) -> str:
    """The first daily partition: the `start_date` setting, else the landing's first day as the
    state found it; without a state, or one made before any day landed, the landing is listed
    (else DEFAULT_START, also when it cannot be listed: the run says why)."""
    from catalake.platform.landing.listing import DEFAULT_START

    if configured.landing.start_date:
        return at_load(configured.landing.start_date)
    if state is not None and state.first_day and state.landing == list(configured.landing_root):
        return state.first_day
    from catalake.platform.landing.listing import first_day

    day = first_day(*configured.landing_root)
    return day.isoformat() if day else DEFAULT_START


def _column(plain: tuple, made: dict) -> TableColumn:
    column = made.get(plain)
    if column is None:
        name, kind, description, nullable = plain
        column = made[plain] = TableColumn(name=name, type=kind, description=description,
                                           constraints=TableColumnConstraints(nullable=nullable))
    return column


def _plain(spec: AssetSpec) -> dict:
    metadata = dict(spec.metadata)
    schema = metadata.get(COLUMNS)
    if isinstance(schema, TableSchema):
        metadata[COLUMNS] = [[c.name, c.type, c.description, c.constraints.nullable] for c in schema.columns]
    if PATH in metadata:
        metadata[PATH] = metadata[PATH].path
    return {"key": list(spec.key.path), "description": spec.description, "group": spec.group_name,
            "kinds": sorted(spec.kinds), "deps": [list(d.asset_key.path) for d in spec.deps], "metadata": metadata,
            "tags": dict(spec.tags), "owners": list(spec.owners), "code_version": spec.code_version}


def _spec(plain: dict, columns: dict) -> AssetSpec:
    metadata = dict(plain["metadata"])
    if COLUMNS in metadata:
        metadata[COLUMNS] = TableSchema(columns=[_column(tuple(c), columns) for c in metadata[COLUMNS]])
    if PATH in metadata:
        metadata[PATH] = MetadataValue.path(metadata[PATH])
    return AssetSpec(key=AssetKey(plain["key"]), description=plain["description"], group_name=plain["group"],
                     kinds=set(plain["kinds"]), deps=[AssetKey(d) for d in plain["deps"]], metadata=metadata,
                     tags=plain["tags"], owners=plain["owners"], code_version=plain["code_version"], skippable=True)


@dataclass(frozen=True)
class StateKeeper:
    """Where one instance's state is kept and how a run stores a new one: the one path from a
    state (or none) to what a load builds, for the dg component and the bundled location alike.
    `load` gives this keeper with the state a load builds from (`loaded`: `stored` at `path`, or
    made in memory when there is none); a `catalake_job` run's `refresh` stores the catalog it
    read through `store` (state, the step's context -> what was done)."""

    configured: Configured
    names: Names
    analytics: bool
    path: Path | None  # where a load reads the state (None: nothing stored yet)
    store: Callable[[DefsState, object], str]
    loaded: DefsState | None = None
    stored: bool = False

    def load(self, *, refresh_first: bool, how: str) -> StateKeeper:
        """This keeper with its state loaded: refreshed at `path` first when `refresh_first` (a
        load under `dagster dev`); without a state the catalog is read now (never written: a load
        writes nothing but a refresh), and a warning says `how` a state is written."""
        if refresh_first and self.path is not None:
            refresh(self.path, self.configured, self.names, self.analytics)
        state = state_for(self.path, self.configured, self.names)
        if state is not None:
            return replace(self, loaded=state, stored=True)
        warnings.warn(f"catalake{'/'.join(('', *self.names.prefix))}: no state for this code location yet: the catalog "
                      f"is read as it loads (seconds at thousands of definitions). {how} writes it.", NoStateWarning,
                      stacklevel=3)
        return replace(self, loaded=make_state(self.configured, self.names, self.analytics, prepare_dbt=False),
                       stored=False)

    def refresh(self, context, configured: Configured, loaded_catalog) -> tuple[DefsState, str]:
        """The state of the catalog a run read (`loaded_catalog`, with the run's resources
        `configured`), stored unless it is the one loaded; and what was done."""
        state = make_state(configured, self.names, self.analytics, prepare_dbt=self.analytics, previous=self.loaded,
                           loaded=loaded_catalog)
        if self.stored and self.loaded is not None and state.digest == self.loaded.digest:
            return state, "current: the code location loaded this state"
        return state, self.store(state, context)


def file_keeper(configured: Configured, names: Names, analytics: bool) -> StateKeeper:
    """The bundled code location's: a file beside the warehouse (`state_file`)."""
    path = state_file(configured, names)

    def store(state: DefsState, context) -> str:
        write_state(path, state)
        return f"written to {path}"

    return StateKeeper(configured, names, analytics, path, store)


def flagged(spec: AssetSpec, error: str) -> AssetSpec:
    note = (f"**{error}.** Shown as the last valid catalog defined it; runs fail until the catalog is fixed "
            "(materialize `message_catalog` for every problem).")
    return spec.replace_attributes(description=f"{note}\n\n{spec.description}",
                                   metadata={**spec.metadata, "catalog_error": error})
