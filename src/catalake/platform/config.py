"""Settings: one place, read from environment variables with documented defaults."""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit

from . import defaults, layouts, uris
from .errors import SettingsError

DEMO_DIR = Path(str(resources.files("catalake") / "demo"))
# GX data docs site inside the warehouse (quality/validator.py builds it)
DOCS_INDEX = Path("gx") / "uncommitted" / "data_docs" / "local_site" / "index.html"
SUITES_DIR = "expectations"  # expectation suite files inside the warehouse
GX_SUITES = Path("gx") / "expectations"  # the GX context's suite store
VALIDATIONS = Path("gx") / "uncommitted" / "validations"  # the GX context's validation results store
ENGINES = ("spark", "local")  # CATALAKE_ENGINE
DELTA_BACKENDS = ("auto", "delta-spark", "delta-rs")  # CATALAKE_DELTA_BACKEND
DBT_TEMPLATE = Path(str(resources.files("catalake") / "dbt_project"))  # CATALAKE_DBT_PROJECT
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
SPARK_MASTER = re.compile(r"local(\[(\*|\d+)(,\s*\d+)?\])?|(spark|sc|k8s|mesos)://\S+|yarn")
LEASE_VARIABLE = "CATALAKE_RUN_LEASE_SECONDS"  # runs/liveness.py
# the days a backfill's run takes together (one Spark job, one commit per table, one dbt build;
# BackfillPolicy.multi_run of the classification, the dbt models and the data docs, and
# `catalake run --from --to`), a quarter: each run costs about 25 s besides its records (two Dagster
# runs, a dbt build, the data docs' index), so a year of small days is 4 runs (250 s here) where
# ranges of a month made it 12 (490 s) (benchmarks/backfill.py, RESULTS.md)
DAYS_PER_RUN = 92
GX_VERSION = "1.24.1"  # the pinned great-expectations, named in the validation results written without importing it


# One `CATALAKE_*` variable read: each kind of value, its default when unset, and its rule; a
# value that cannot be used is a `SettingsError` naming the variable, the value and what it must be.

def paths(raw: str) -> tuple[Path, ...]:
    return tuple(Path(p).expanduser() for p in raw.split(os.pathsep) if p.strip())


def whole_number(env: dict[str, str], name: str, default: int, least: int = 1) -> int:
    """A whole-number setting of at least `least`, or its default when unset."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < least:
        kind = "positive whole number" if least == 1 else f"whole number of at least {least}"
        raise SettingsError(f"{name}: {raw!r} is not a {kind}")
    return int(raw)


def freshness(env: dict[str, str], name: str, default: str) -> str:
    """The tables' freshness targets (runs/cadence.py), checked; kept as written."""
    raw = (env.get(name) or "").strip()
    try:
        parse_freshness(raw)
    except ValueError as exc:
        raise SettingsError(f"{name}: {exc}") from None
    return raw or default


def parse_freshness(raw: str) -> tuple[float, dict[str, float]]:
    """CATALAKE_FRESHNESS_SECONDS: a number of seconds (every table's target), and/or
    comma-separated `<group>=<seconds>` or `<group>/<message>=<seconds>`; ValueError naming the
    item that is neither."""
    default, by_name = defaults.FRESHNESS_SECONDS, {}
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        name, _, value = item.rpartition("=")
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if seconds < 0 or seconds != seconds or (not name and "=" in item):
            raise ValueError(f"{item!r} is neither <seconds> nor <group>[/<message>]=<seconds>")
        if name:
            by_name[name.strip()] = seconds
        else:
            default = seconds
    return default, by_name


def number(env: dict[str, str], name: str, default: float) -> float:
    """A non-negative number setting, or its default when unset."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value < 0:
        raise SettingsError(f"{name}: {raw!r} is not a number of at least 0")
    return value


def switch(env: dict[str, str], name: str, default: bool) -> bool:
    raw = (env.get(name) or "").strip().lower()
    if not raw:
        return default
    if raw not in _TRUE + _FALSE:
        raise SettingsError(f"{name}: {raw!r} is not one of {', '.join(_TRUE + _FALSE)}")
    return raw in _TRUE


def choice(env: dict[str, str], name: str, default: str, choices: tuple[str, ...]) -> str:
    raw = (env.get(name) or "").strip().lower()
    if not raw:
        return default
    if raw not in choices:
        raise SettingsError(f"{name}: {raw!r} is not one of {', '.join(choices)}")
    return raw


def day(env: dict[str, str], name: str) -> str | None:
    raw = (env.get(name) or "").strip()
    if not raw:
        return None
    try:
        if len(raw) == 10:
            return dt.date.fromisoformat(raw).isoformat()
    except ValueError:
        pass
    raise SettingsError(f"{name}: {raw!r} is not a day (YYYY-MM-DD)")


def location(env: dict[str, str], name: str, default: str) -> str:
    """A local folder or a URI of a store catalake can open."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    if uris.is_remote(raw) and not uris.openable(raw.split("://", 1)[0].lower()):
        raise SettingsError(f"{name}: {raw!r}: no filesystem for its scheme (a local folder, s3://, gs://, abfss://, "
                            f"or a scheme an installed fsspec package provides)")
    return uris.normalize(raw)


def folder(env: dict[str, str], name: str) -> Path | None:
    """A folder catalake creates when missing; never a file."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return None
    path = Path(raw).expanduser().absolute()
    if path.exists() and not path.is_dir():
        raise SettingsError(f"{name}: {raw!r} is a file, not a folder")
    return path


def spark_master(env: dict[str, str], name: str, default: str) -> str:
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    if not SPARK_MASTER.fullmatch(raw):
        raise SettingsError(f"{name}: {raw!r} is not a Spark master (local[*], local[N], spark://host:port, "
                            f"sc://host:port for Spark Connect, yarn, k8s://...)")
    return raw


def run_lease_seconds(env: dict[str, str] | None = None) -> int:
    """How long a run on another host may go without a heartbeat (runs/liveness.py): read from
    the environment by any process, the daemon's run launcher too, which has no Settings."""
    return whole_number(dict(os.environ if env is None else env), LEASE_VARIABLE, defaults.RUN_LEASE_SECONDS)


@dataclass(frozen=True)
class Settings:
    """Everything configurable, with the bundled demo as the default: each field is a `CATALAKE_*`
    variable (the README's Configuration table says what each does), its default in `defaults`."""

    catalog: tuple[Path, ...] = field(default_factory=lambda: (DEMO_DIR / "catalog",))  # CATALAKE_CATALOG
    landing: str = str(DEMO_DIR / "landing")  # CATALAKE_LANDING
    layout: str = defaults.LAYOUT  # CATALAKE_LANDING_LAYOUT
    warehouse: str = defaults.WAREHOUSE  # CATALAKE_WAREHOUSE
    spark_master: str = defaults.SPARK_MASTER  # CATALAKE_SPARK_MASTER
    spark_conf: tuple[tuple[str, str], ...] = ()  # CATALAKE_SPARK_CONF
    delta_backend: str = defaults.DELTA_BACKEND  # CATALAKE_DELTA_BACKEND
    schema_roots: tuple[Path, ...] = ()  # CATALAKE_SCHEMA_ROOTS; else the catalog's folders
    start_date: str | None = None  # CATALAKE_START_DATE; else the landing's first day (landing.listing.start_date)
    dbt: Path | None = None  # CATALAKE_DBT_DIR
    dbt_template: Path = DBT_TEMPLATE  # CATALAKE_DBT_PROJECT
    record_empty: bool = defaults.RECORD_EMPTY  # CATALAKE_RECORD_EMPTY
    local_dir: Path | None = None  # CATALAKE_LOCAL_DIR
    engine: str = defaults.ENGINE  # CATALAKE_ENGINE
    local_task_bytes: int = defaults.LOCAL_TASK_BYTES  # CATALAKE_LOCAL_TASK_BYTES
    compiled_path: bool = defaults.COMPILED_PATH  # CATALAKE_COMPILED_PATH
    owners: tuple[str, ...] = ()  # CATALAKE_OWNERS
    target_file_bytes: int = defaults.TARGET_FILE_BYTES  # CATALAKE_TARGET_FILE_BYTES
    compact_files: int = defaults.COMPACT_FILES  # CATALAKE_COMPACT_FILES
    retention_hours: float = defaults.RETENTION_HOURS  # CATALAKE_RETENTION_HOURS
    commit_threads: int = defaults.COMMIT_THREADS  # CATALAKE_COMMIT_THREADS
    increment_seconds: int = defaults.INCREMENT_SECONDS  # CATALAKE_INCREMENT_SECONDS
    freshness: str = str(int(defaults.FRESHNESS_SECONDS))  # CATALAKE_FRESHNESS_SECONDS

    def __post_init__(self):
        # locations are kept as uris.normalize says (tests and callers may pass Paths)
        object.__setattr__(self, "landing", uris.normalize(self.landing))
        object.__setattr__(self, "warehouse", uris.normalize(self.warehouse))
        layouts.parse(self.layout)  # a layout that cannot be used fails here, naming the rule
        if self.engine not in ENGINES:
            raise SettingsError(f"CATALAKE_ENGINE: {self.engine!r} is not one of {', '.join(ENGINES)}")

    @property
    def roots(self) -> tuple[Path, ...]:
        return self.schema_roots or catalog_roots(self.catalog)

    @property
    def local(self) -> Path:
        """Where the files a person opens live (see CATALAKE_LOCAL_DIR)."""
        return local_folder(self.warehouse, self.local_dir)

    @property
    def dbt_dir(self) -> Path:
        return (self.dbt or self.local / "dbt").absolute()

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> "Settings":
        """The settings of the environment: every `CATALAKE_*` value is checked here, and one that
        cannot be used is a `SettingsError` naming the variable, the value and the rule."""
        env = dict(os.environ if env is None else env)
        default = cls()
        uris.storage_options(env)  # read where it is used; checked here with the rest
        run_lease_seconds(env)  # likewise (runs/liveness.py)
        template = folder(env, "CATALAKE_DBT_PROJECT")
        if template is not None and not (template / "dbt_project.yml").is_file():
            raise SettingsError(f"CATALAKE_DBT_PROJECT: {str(template)!r} holds no dbt_project.yml")
        return cls(
            # paths are the catalog's to check: a missing one is a problem of the catalog, which
            # the code location still loads with (the catalog job reports it)
            catalog=paths(env.get("CATALAKE_CATALOG") or "") or default.catalog,
            landing=location(env, "CATALAKE_LANDING", default.landing),
            layout=(env.get("CATALAKE_LANDING_LAYOUT") or default.layout).strip(),
            warehouse=location(env, "CATALAKE_WAREHOUSE", default.warehouse),
            spark_master=spark_master(env, "CATALAKE_SPARK_MASTER", default.spark_master),
            spark_conf=spark_conf(env.get("CATALAKE_SPARK_CONF", "")),
            delta_backend=choice(env, "CATALAKE_DELTA_BACKEND", default.delta_backend, DELTA_BACKENDS),
            schema_roots=paths(env.get("CATALAKE_SCHEMA_ROOTS") or ""),
            start_date=day(env, "CATALAKE_START_DATE"),
            dbt=folder(env, "CATALAKE_DBT_DIR"),
            dbt_template=template or default.dbt_template,
            record_empty=switch(env, "CATALAKE_RECORD_EMPTY", default.record_empty),
            local_dir=folder(env, "CATALAKE_LOCAL_DIR"),
            engine=choice(env, "CATALAKE_ENGINE", default.engine, ENGINES),
            local_task_bytes=whole_number(env, "CATALAKE_LOCAL_TASK_BYTES", default.local_task_bytes, least=0),
            compiled_path=switch(env, "CATALAKE_COMPILED_PATH", default.compiled_path),
            owners=tuple(o.strip() for o in env.get("CATALAKE_OWNERS", "").split(",") if o.strip()),
            target_file_bytes=whole_number(env, "CATALAKE_TARGET_FILE_BYTES", default.target_file_bytes),
            compact_files=whole_number(env, "CATALAKE_COMPACT_FILES", default.compact_files),
            retention_hours=number(env, "CATALAKE_RETENTION_HOURS", default.retention_hours),
            commit_threads=whole_number(env, "CATALAKE_COMMIT_THREADS", default.commit_threads),
            increment_seconds=whole_number(env, "CATALAKE_INCREMENT_SECONDS", default.increment_seconds),
            freshness=freshness(env, "CATALAKE_FRESHNESS_SECONDS", default.freshness),
        )

    def local_bytes(self, incremental: bool) -> int:
        return local_bytes(self.engine, self.local_task_bytes, self.spark_master, incremental)


def local_bytes(engine: str, local_task_bytes: int, master: str, incremental: bool) -> int:
    """Runs of at most this many landed bytes are classified by local Python processes, not by
    Spark: any run with CATALAKE_ENGINE=local; else small increments, and only when Spark runs
    on this machine too (a cluster's executors are where the landing is read from)."""
    if engine == "local":
        return sys.maxsize
    return local_task_bytes if incremental and spark_on_this_machine(master) else 0


def spark_on_this_machine(master: str) -> bool:
    """A local master, or a Spark Connect server on the loopback (`make serve` starts one)."""
    if master.startswith("local"):
        return True
    host = urlsplit(master).hostname if master.startswith("sc://") else None
    return host in ("localhost", "127.0.0.1", "::1")


def local_folder(warehouse: str, configured: Path | None = None) -> Path:
    """The local folder for the files a person opens: configured, the warehouse folder, or
    ./.catalake beside a warehouse on object storage."""
    if configured is not None:
        return Path(configured).absolute()
    return Path(warehouse) if not uris.is_remote(warehouse) else Path(".catalake").absolute()


def spark_conf(raw: str) -> tuple[tuple[str, str], ...]:
    """`key=value` pairs separated by whitespace (Spark values such as memory sizes have no spaces)."""
    pairs = []
    for item in raw.split():
        key, sep, value = item.partition("=")
        if not sep or not key.startswith("spark.") or not value:
            raise SettingsError(f"CATALAKE_SPARK_CONF: {item!r} is not a spark.<key>=<value> pair")
        pairs.append((key, value))
    return tuple(pairs)


def catalog_roots(paths) -> tuple[Path, ...]:
    """The folders catalog paths live in: where their relative schema references may point."""
    return tuple(Path(p) if Path(p).is_dir() else Path(p).parent for p in paths)
