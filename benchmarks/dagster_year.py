"""A year of history in the production Dagster instance (issue 73, item 3): what a year of catalake's
runs leaves in PostgreSQL, and what the UI's own queries cost against it.

    .venv/bin/python benchmarks/dagster_year.py --definitions 1000 5000 [--days 365] [--repeats 5]
    .venv/bin/python benchmarks/dagster_year.py --definitions 100 --days 30             # a quick check
    .venv/bin/python benchmarks/dagster_year.py --definitions 1000 --days 3 --increments-per-day 48 \\
        --increment-days 1 --increment-events tables --no-queries                     # today's increments
    .venv/bin/python benchmarks/dagster_year.py --definitions 5000 --days 4 --increments-per-day 96 \\
        --increment-days 2 --increment-events few --no-queries                        # catalake now
    .venv/bin/python benchmarks/dagster_year.py --definitions 100 --days 5 --increments-per-day 4 \\
        --increment-days 2 --verify-bulk                                              # bulk rows == Dagster's
    .venv/bin/python benchmarks/dagster_year.py --definitions 5000 --keep --work DIR    # then, to time again:
    .venv/bin/python benchmarks/dagster_year.py --definitions 5000 --queries-only --work DIR

PostgreSQL is started with `deploy/postgres.sh start` (a fresh database per catalog) and the
instance is deploy/dagster.yaml's (`CatalakePostgresStorage`: a step's batch of asset and check
events stored in one transaction, src/catalake/eventlog.py), stopped at the end.

**What is simulated.** A catalog of N definitions (benchmarks/workload.py's: one group, the same
eight-field schema), each its asset `messages/<group>/<message>` as the code location names it.
Every day D of `--days` (the last days before today, so that each is a partition of the code
location's `DailyPartitionsDefinition`, CATALAKE_START_DATE the first), one run of `events_job`
for the partition D (a `DagsterRun` with the tags the daily schedule's run carries, among them
`dagster/partition`, added with `instance.add_run`), whose events are those a single-day run of
`events_job` records (as `catalake run --date` recorded them here, local engine): the planned
`deadletter` materialization and its three planned checks; enqueued, dequeued, starting, started;
the engine, resource and log-capture events, the step's start, its info lines; then, in one
`event_batch` as `report_days` stores them, the materialization of every table (built by
catalake's own `report_tables`: `dagster/partition_row_count`, `dagster/table_name`, `dagster/uri`,
`path`, `delta_version`, `run_kind`, `partition_files`), then, tied to them by catalake's
`run_targets`, every table's `expectations` check evaluation (catalake's `check_evaluation` of a
pass outcome of the table's own generated suite, every expectation passing, with its `data_docs`
page); then `deadletter`'s output and materialization (catalake's `deadletter_materialization`:
`per_table`, `result`, `by_reason`, ...) and its `conservation`, `landing` and `freshness` check
evaluations (catalake's `deadletter_checks`), the step's success and the run's. Every table is
fed every day (1B events a day over N definitions, rows by a Zipf law of exponent 1, the same
each day).

**How it is stored.** `--store exact`: every event an `EventLogEntry` of a `DagsterEvent` stored
through `instance.handle_new_event` (the tables' events inside catalake's `event_batch`, as
`report_days` stores them): Dagster's own path into its tables, 100-200 events a second here, a
year of 5,000 definitions in hours. `--store bulk` (the default): the runs and every event but
the tables' own go the same way; each table's materialization, its `asset_keys` record and its
`expectations` evaluation are built as above once per table and kind of run, with sentinel values
where a run, a day, a time, a storage id or a count goes, serialized by Dagster's
`serialize_value`; each run then puts its values in and writes the rows dagster-postgres would
(its `_event_to_row` columns, `asset_keys` upserted as `_store_asset_event` does, the execution
row `_update_asset_check_evaluation` inserts) with COPY, in one transaction for the
materializations and one for the checks. `--verify-bulk` fills the same days both ways into two
databases and compares every row of event_logs, asset_keys, asset_event_tags,
asset_check_executions, runs and run_tags (ids and serialized events included; only the columns
saying when a row was written are left out): identical, or it exits 1.

**Increments** (`--increments-per-day K`, for the last `--increment-days` days; 0 by default): K
runs of `events_job` for the day before its nightly run, tagged as the landing sensor's
(`catalake/incremental`, `catalake/cadence`), each with the same run events, and:
- `--increment-events tables` (catalake before issue 73): the materialization and `expectations`
  check of every table the increment commits (`--increment-tables`, default all: at 1B events a
  day every table is fed every increment), `run_kind: incremental` with `rows_added`, the lag and
  the partition's total, then `deadletter`'s materialization and its three checks;
- `--increment-events few` (catalake now, `report_increment`): `deadletter`'s materialization
  (`deadletter_materialization`'s summary of an increment) and its three checks, logged (no
  output each).
In both, the step's output carries no metadata (`days_materialized`: it is the
materialization's). The growth of the database over a day's increments is measured between two
plain VACUUMs (what autovacuum leaves: the dead rows' space reused, not returned), and the last
increment day's is the one reported (`--increment-days 2`: the steady state, the day before's
dead rows reused).

**Not simulated**: the Spark job's own log lines; failed or partial runs and failing expectations
(their examples); `catalake_job`, dbt, data docs, replay, validation and maintenance runs (the
code location has no dbt models: its state is made without the dbt project); sensor and schedule
ticks, daemon heartbeats, compute logs; run snapshots (`add_run` stores none; Dagster's are one
per code version, not per run). Timestamps are the simulated ones (a day's run at 01:00 the next
day).

**What is timed**, each a GraphQL query of the webserver's own, taken from the UI that
dagster-webserver ships (its source maps, `gql` documents with their fragments), executed with
dagster-graphql's `execute_dagster_graphql` in a `WorkspaceRequestContext` of workspace.yaml's code
location (`catalake.definitions` in a code server process, as the webserver starts it) on this
instance: warm (the median of `--repeats` after one discarded), and with the asset status cache
cleared before each (`instance.wipe_asset_cached_status`: the `cached_status_data` column of
`asset_keys` that partition statuses are built from; and catalake's own of each partitioned
check's statuses, `catalake/asset_check_state/<check>` in the instance's kvs, which open-source
Dagster does not keep: `CheckStateCheckpoints` in src/catalake/eventlog.py):
- the asset catalog (open-source `AssetsCatalogTable`): `AssetRecordsQuery` in the UI's pages of
  1,000, plus `AssetGraphLiveQuery` for the rows on screen (`--visible-rows`, in the UI's batches
  of 10); `LocationWorkspaceAssetsQuery` (the definitions, kept by the UI in IndexedDB) apart;
- an asset's page (overview): `AssetViewDefinitionQuery`, `AssetGraphLiveQuery` of the asset and
  of its upstream neighbour, `AssetOverviewMetadataEventsQuery`; for a message asset and for
  `deadletter`;
- its partitions' health (the Partitions tab): `PartitionHealthQuery`; and the `expectations`
  check's partitions (`AssetCheckPartitionHealthQuery`) apart.
A page's seconds are its queries' sum (the browser sends some at once). Also a few instance calls
their resolvers make, and one evaluation of `deadletter`'s `FreshnessPolicy.cron` as Dagster's
freshness daemon makes it (its `freshness` check is computed by each run from its own result:
nothing to time). Targets (issue 73) are in the first line.

JSON lines on stdout (progress on stderr); RESULTS.md keeps them with the machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import functools
import glob
import json
import logging
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from workload import catalog as workload_catalog  # noqa: E402

JOB, STEP = "events_job", "classify_events"
EVENTS_A_DAY = 1_000_000_000
LANDED_FILES = 9216  # a day of 32 Event Hubs partitions, a file each every 5 minutes (docs/capacity.md)
TARGETS = {"catalog_warm_s": 3.0, "asset_page_s": 1.5, "partitions_cached_s": 1.0, "partitions_cleared_s": 5.0,
           "bytes_per_day": 200e6}
PG_BIN = sorted(Path("/usr/lib/postgresql").glob("*/bin"))


def say(text: str) -> None:
    print(f"# {text}", file=sys.stderr, flush=True)


def emit(row: dict) -> None:
    """A result line, with the machine's load (2 cores shared: the 1-minute load average)."""
    print(json.dumps({**row, "load_1m": round(os.getloadavg()[0], 2)}), flush=True)


# -- the UI's queries --------------------------------------------------------------------------

def ui_queries(names: list[str]) -> dict[str, str]:
    """Each named operation of the UI dagster-webserver ships, with the fragments it spreads: the
    `gql` documents of its sources (in the bundle's source maps), interpolations dropped (they
    only insert fragments, each also defined on its own)."""
    import dagster_webserver

    chunks = Path(dagster_webserver.__file__).parent / "webapp" / "build" / "_next" / "static" / "chunks"
    definitions: dict[str, str] = {}
    for path in glob.glob(str(chunks / "**" / "*.js.map"), recursive=True):
        source_map = json.loads(Path(path).read_text())
        for source, text in zip(source_map.get("sources", []), source_map.get("sourcesContent") or []):
            if not text or "node_modules" in source or "gql`" not in text:
                continue
            for body in re.findall(r"gql`(.*?)`", text, re.S):
                body = re.sub(r"\$\{[^}]*\}", "", body)
                for found in re.finditer(r"\b(?:query|fragment|mutation|subscription)\s+(\w+)", body):
                    depth, start = 0, body.index("{", found.start())
                    for end in range(start, len(body)):
                        depth += {"{": 1, "}": -1}.get(body[end], 0)
                        if depth == 0:
                            break
                    definitions.setdefault(found.group(1), body[found.start():end + 1])
    documents = {}
    for name in names:
        parts, todo, seen = [], [name], set()
        while todo:
            part = todo.pop()
            if part not in seen:
                seen.add(part)
                parts.append(definitions[part])
                todo += re.findall(r"\.\.\.\s*(?!on\b)(\w+)", definitions[part])
        documents[name] = "\n\n".join(parts)
    return documents


QUERIES = ["AssetRecordsQuery", "AssetGraphLiveQuery", "LocationWorkspaceAssetsQuery", "AssetViewDefinitionQuery",
           "AssetOverviewMetadataEventsQuery", "PartitionHealthQuery", "AssetCheckPartitionHealthQuery"]


def python_errors(data) -> list[str]:
    """The PythonError results in a response (the UI's queries spread PythonErrorFragment)."""
    if isinstance(data, dict):
        found = [data["message"]] if "stack" in data and "message" in data else []
        return found + [e for v in data.values() for e in python_errors(v)]
    if isinstance(data, list):
        return [e for v in data for e in python_errors(v)]
    return []


# -- what a run records ------------------------------------------------------------------------

# values no real event holds, put where a template's run, day, time, storage id or counts go
SENTINEL_RUN = "00000000-5e17-4e17-8e17-5e175e175e17"
SENTINEL_DAY = dt.date(1999, 12, 31)
SENTINEL_TS, SENTINEL_TARGET_TS = 9999999001.5, 9999999002.5
SENTINEL_ROWS, SENTINEL_VERSION, SENTINEL_FILES, SENTINEL_ID, SENTINEL_TARGET = (
    9999990001, 9999990002, 9999990003, 9999990004, 9999990005)
EVENT_COLUMNS = ["id", "run_id", "event", "dagster_event_type", "timestamp", "step_key", "asset_key", "partition"]
EXECUTION_COLUMNS = ["asset_key", "check_name", "partition", "run_id", "execution_status", "evaluation_event",
                     "evaluation_event_timestamp", "evaluation_event_storage_id", "materialization_event_storage_id"]


def put(template: str, swaps: list[tuple[str, str]]) -> str:
    for sentinel, value in swaps:
        template = template.replace(sentinel, value)
    return template


def naive(ts: float) -> dt.datetime:
    """A time as Dagster's PostgreSQL tables keep it (`_event_insert_timestamp`: UTC, no zone)."""
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).replace(tzinfo=None)


class Namer:
    """What report_tables and table_location ask of the warehouse's store: where a table is."""

    def __init__(self, root: str):
        from catalake.platform.uris import Location

        self.location = Location.of(root)

    def path(self, name: str) -> str:
        return self.location.child(*name.split("/")).uri


class Collector:
    """The step context report_tables logs its materializations to."""

    def __init__(self):
        self.logged = []

    def log_event(self, event) -> None:
        self.logged.append(event)


class Year:
    """Runs of `events_job` as catalake records them, stored in an instance."""

    def __init__(self, instance, tables, key_of, partitions, warehouse: Path, landing: Path, bulk: bool):
        from catalake.defs.names import DEFAULT
        from catalake.platform.quality.expectations import suite_expectations
        from catalake.platform.runs.results import Engine
        from dagster._core.remote_origin import (ManagedGrpcPythonEnvCodeLocationOrigin, RemoteJobOrigin,
                                                 RemoteRepositoryOrigin)
        from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

        self.instance, self.tables, self.key_of, self.partitions = instance, tables, key_of, partitions
        self.deadletter = DEFAULT.deadletter
        self.store, self.warehouse, self.landing = Namer(str(warehouse)), warehouse, landing
        harmonic = sum(1 / (i + 1) for i in range(len(tables)))
        # a table's name is computed from its definition on each use: once here
        self.names, self.xids = [t.name for t in tables], [t.message.xid for t in tables]
        self.keys = [key_of[name].to_string() for name in self.names]
        self.rows = {name: max(1, int(EVENTS_A_DAY / harmonic / (i + 1) * 0.999)) for i, name in enumerate(self.names)}
        self.dead = {"no_match": EVENTS_A_DAY // 2000, "schema_violation": EVENTS_A_DAY // 5000, "malformed_json": 1200}
        self.expectations = {t.name: suite_expectations(t) for t in tables}
        self.engine = Engine("spark", "sc://127.0.0.1:15002", "app-20260101010000-0000", "http://127.0.0.1:4040")
        self.pid = os.getpid()
        self.origin = RemoteJobOrigin(repository_origin=RemoteRepositoryOrigin(
            code_location_origin=ManagedGrpcPythonEnvCodeLocationOrigin(
                loadable_target_origin=LoadableTargetOrigin(executable_path=sys.executable, module_name="catalake.definitions",
                                                            working_directory=str(REPO)),
                location_name="catalake"), repository_name="__repository__"), job_name=JOB)
        self._indexed = None
        self._indexes: list = []  # (asset_key, partition) columns filled: for a materialization, a check (_templates)
        self._made: dict = {}  # (kind, records, tables) -> per table, its events templates (_templates)
        self._xid = {t.name: t.message.xid for t in tables}
        self._checks: dict[str, object] = {}  # table -> its expectations evaluation (the same counts every day)
        self.bulk = bulk  # the tables' events written with COPY, their rows made by Dagster's own code
        self.build_s = self.store_s = 0.0
        self.events = self.runs = 0

    # events
    def _event(self, run_id: str, ts: float, kind, data=None, message: str = "", step: bool = True,
               compute: bool = True):
        from dagster import EventLogEntry
        from dagster._core.events import DagsterEvent
        from dagster._core.execution.plan.handle import StepHandle
        from dagster._core.definitions.dependency import NodeHandle

        node = NodeHandle(STEP, None)
        event = DagsterEvent(
            event_type_value=kind.value, job_name=JOB, step_handle=StepHandle(node, STEP) if step else None,
            node_handle=node if step and compute else None, step_kind_value="COMPUTE" if step and compute else None,
            logging_tags={"job_name": JOB, "op_name": STEP, "resource_fn_name": "None", "resource_name": "None",
                          "run_id": run_id, "step_key": STEP} if step and compute else {},
            event_specific_data=data, message=message, pid=self.pid, step_key=STEP if step else None)
        return EventLogEntry(error_info=None, level=logging.DEBUG, user_message=message, run_id=run_id, timestamp=ts,
                             step_key=STEP if step else None, job_name=JOB, dagster_event=event)

    def _line(self, run_id: str, ts: float, text: str):
        from dagster import EventLogEntry

        return EventLogEntry(error_info=None, level=logging.INFO, user_message=text, run_id=run_id, timestamp=ts,
                             step_key=STEP, job_name=JOB, dagster_event=None)

    def _materialization(self, run_id: str, ts: float, materialization):
        from dagster._core.events import DagsterEventType, StepMaterializationData

        return self._event(run_id, ts, DagsterEventType.ASSET_MATERIALIZATION, StepMaterializationData(materialization),
                           f"Materialized value {materialization.label}.")

    def _check(self, run_id: str, ts: float, evaluation):
        from dagster._core.events import DagsterEventType

        verdict = "passed" if evaluation.passed else "failed"
        described = f" Description: '{evaluation.description}'" if evaluation.description else ""
        return self._event(run_id, ts, DagsterEventType.ASSET_CHECK_EVALUATION, evaluation,
                           f"Asset check '{evaluation.check_name}' on '{evaluation.asset_key.to_user_string()}' "
                           f"{verdict}.{described}")

    def _output(self, run_id: str, ts: float, name: str, metadata: dict):
        from dagster._core.events import DagsterEventType
        from dagster._core.execution.plan.outputs import StepOutputData, StepOutputHandle
        from dagster._core.execution.plan.objects import TypeCheckData

        kind = "Nothing" if name == "deadletter" else "Any"
        return self._event(run_id, ts, DagsterEventType.STEP_OUTPUT, StepOutputData(
            StepOutputHandle(STEP, name), TypeCheckData(success=True, label=name, description=None, metadata={}),
            metadata=metadata), f'Yielded output "{name}" of type "{kind}". (Type check passed).')

    def _store(self, entries, batch: bool = False) -> None:
        from catalake.eventlog import event_batch

        clock = time.perf_counter()
        if batch:
            with event_batch(self.instance):
                for entry in entries:
                    self.instance.handle_new_event(entry)
        else:
            for entry in entries:
                self.instance.handle_new_event(entry)
        self.store_s += time.perf_counter() - clock
        self.events += len(entries)

    # results
    def result(self, day: dt.date, kind: str, fed: list, index: int, increment: int = 0, increments: int = 0):
        """A run's PartitionResult: a full run feeding every table, or the `increment`-th of `increments`."""
        from catalake.platform.runs.results import Freshness, PartitionResult

        share = 1 / increments if kind == "incremental" else 1
        result = PartitionResult(partition=day.isoformat(), records=int(EVENTS_A_DAY * share), kind=kind,
                                 engine=self.engine)
        assert fed == self.tables[:len(fed)], "the tables fed are the first ones"
        names, xids = self.names[:len(fed)], self.xids[:len(fed)]
        result.tables = {xid: max(1, int(self.rows[name] * share)) for name, xid in zip(names, xids)}
        result.deadletter = {r: max(1, int(n * share)) for r, n in self.dead.items()}
        result.written = list(names)
        version = index * (increments + 1) + increment + 1
        result.versions = dict.fromkeys(names, version)
        result.partition_files = dict.fromkeys(names, increment + 1 if kind == "incremental" else 1)
        result.files = {str(self.landing / day.isoformat() / f"p{p:02d}" / f"{m:04d}.avro"): 1
                        for p in range(32) for m in range(LANDED_FILES // 32 if kind == "full" else 1)}
        result.tasks = 1491 if kind == "full" else 32
        result.seconds = {"listing": 0.8, "job": 238.0, "commits": 88.2, "quality_docs": 0.0, "events": 10.0} \
            if kind == "full" else {"listing": 0.1, "job": 0.12, "commits": 8.4, "events": 9.5}
        if kind == "incremental":
            done = (increment + 1) / increments
            result.day_records = int(EVENTS_A_DAY * done)
            result.stored = {name: max(1, int(self.rows[name] * done)) for name in names}
            result.rows_added = {name: result.tables[xid] for name, xid in zip(names, xids)}
            result.read = {"files": 32, "bytes": int(EVENTS_A_DAY * share * 400)}
            result.freshness = dict.fromkeys(names, Freshness(lag=0.0, committed_lag=41.5, target=60.0, due="freshness"))
        return result

    def expectations_check(self, table, day: str, run_id: str, target):
        """The table's `expectations` evaluation, as quality_checks logs it: catalake's own
        check_evaluation of a pass outcome of its suite (every expectation met)."""
        from catalake.defs.quality.checks import check_evaluation
        from catalake.platform.quality.evaluation import Counts, results
        from catalake.platform.quality.validator import pass_outcome
        from dagster import MetadataValue
        from dagster._core.definitions.asset_checks.asset_check_evaluation import AssetCheckEvaluation

        docs = (self.warehouse / "gx" / "uncommitted" / "data_docs" / "local_site" / "validations" /
                table.message.table_name / f"{day} (run {run_id})" / "20260101T010500.000000Z" /
                f"{table.message.table_name}-{day}.html")
        template = self._checks.get(table.name)
        if template is None:
            rows = self.rows[table.name]
            expectations = self.expectations[table.name]
            outcome = pass_outcome(table.message.table_name, results(expectations, [Counts(rows) for _ in expectations]),
                                   Counts(rows), 0, docs)
            template = self._checks[table.name] = check_evaluation(self.key_of[table.name], outcome, day, target)
        return AssetCheckEvaluation(
            asset_key=template.asset_key, check_name=template.check_name, passed=template.passed,
            metadata={**template.metadata, "data_docs": MetadataValue.path(str(docs))}, severity=template.severity,
            description=template.description, partition=day, target_materialization_data=target, blocking=True)

    # every table's events
    def _tables_exact(self, run_id: str, day: dt.date, t: float, result) -> None:
        """Every reported table's materialization, then its `expectations` check tied to it, each
        built by catalake's code and stored through `instance.handle_new_event` in one batch, as
        report_days does."""
        from catalake.defs.events.assets import report_tables
        from catalake.defs.quality.checks import run_targets

        clock, partition = time.perf_counter(), day.isoformat()
        collector = Collector()
        reported = report_tables(collector, True, self.store, self.tables, self.key_of, True, day, result)
        materializations = [self._materialization(run_id, t + i * 1e-3, m) for i, m in enumerate(collector.logged)]
        self.build_s += time.perf_counter() - clock
        self._store(materializations, batch=True)
        clock = time.perf_counter()
        targets = run_targets(self.instance, run_id)
        self.store_s += time.perf_counter() - clock
        clock = time.perf_counter()
        evaluations = [self._check(run_id, t + 5 + i * 1e-3, self.expectations_check(
            table, partition, run_id, targets.get((self.key_of[table.name], partition)))) for i, table in enumerate(reported)]
        self.build_s += time.perf_counter() - clock
        self._store(evaluations, batch=True)

    def _templates(self, result, fed: list) -> dict:
        """Per table, its events of a run like `result` serialized once by Dagster's
        `serialize_value` (the materialization, the `asset_keys` record of it, the `expectations`
        evaluation), built as `_tables_exact` builds them but with sentinel values where a run, a
        day, a time, a storage id or a count goes."""
        from catalake.defs.events.assets import report_tables
        from dagster._core.definitions.asset_checks.asset_check_evaluation import (
            AssetCheckEvaluationTargetMaterializationData)
        from dagster._core.storage.event_log.base import EventLogRecord
        from dagster._serdes import serialize_value

        key = (result.kind, result.records, tuple(t.name for t in fed))  # an increment's rows_added: its share
        if key in self._made:
            return self._made[key]
        result = dataclasses.replace(result, versions={t.name: SENTINEL_VERSION for t in fed},
                                     partition_files={t.name: SENTINEL_FILES for t in fed})
        if result.kind == "full":
            result.tables = {t.message.xid: SENTINEL_ROWS for t in fed}
        else:
            result.stored = {t.name: SENTINEL_ROWS for t in fed}
        collector = Collector()
        reported = report_tables(collector, True, self.store, self.tables, self.key_of, True, SENTINEL_DAY, result)
        assert [t.name for t in reported] == [t.name for t in fed], "a full run feeds every table here"
        made = {}
        for table, materialization in zip(reported, collector.logged):
            entry = self._materialization(SENTINEL_RUN, SENTINEL_TS, materialization)
            target = AssetCheckEvaluationTargetMaterializationData(storage_id=SENTINEL_TARGET, run_id=SENTINEL_RUN,
                                                                   timestamp=SENTINEL_TARGET_TS)
            check = self._check(SENTINEL_RUN, SENTINEL_TS, self.expectations_check(
                table, SENTINEL_DAY.isoformat(), SENTINEL_RUN, target))
            made[table.name] = (serialize_value(entry),
                                serialize_value(EventLogRecord(storage_id=SENTINEL_ID, event_log_entry=entry)),
                                serialize_value(check))
            # the asset_key and partition columns Dagster fills (`_event_to_row`): a check evaluation's are null
            columns = [self.instance.event_log_storage._event_to_row(e) for e in (entry, check)]
            self._indexes = [(r["asset_key"] is not None, r["partition"] is not None) for r in columns]
            assert all(str(v) in made[table.name][0] for v in (SENTINEL_RUN, SENTINEL_DAY.isoformat(), SENTINEL_TS,
                                                              SENTINEL_VERSION, SENTINEL_FILES, SENTINEL_ROWS))
        self._made[key] = made
        return made

    def _tables_bulk(self, run_id: str, day: dt.date, t: float, result) -> None:
        """The same rows `_tables_exact` leaves, written with COPY: every event the template of its
        table and kind with this run's values put in (`--verify-bulk` compares every table with
        `_tables_exact`'s), the `asset_keys` rows as dagster-postgres' `_store_asset_event` upserts
        them, the check executions as `_update_asset_check_evaluation` inserts them (no planned
        execution: the run does not select the tables' checks); in one transaction each, the
        materializations then the checks."""
        from dagster._core.storage.event_log.migration import ASSET_KEY_INDEX_COLS
        from dagster._core.storage.event_log.schema import AssetKeyTable
        from dagster._time import datetime_from_timestamp
        from sqlalchemy.dialects import postgresql

        clock, partition = time.perf_counter(), day.isoformat()
        count = len(result.written)
        assert result.written == self.names[:count]
        fed, names, keys = self.tables[:count], self.names[:count], self.keys[:count]
        made = self._templates(result, fed)
        storage = self.instance.event_log_storage
        if self._indexed is None:
            self._indexed = storage.has_secondary_index(ASSET_KEY_INDEX_COLS)
        rows_of = (lambda name: result.stored[name]) if result.kind == "incremental" else \
            (lambda name: result.tables[self._xid[name]])
        common = [(SENTINEL_RUN, run_id), (SENTINEL_DAY.isoformat(), partition)]
        stamps = [t + i * 1e-3 for i in range(count)]
        swaps = [common + [(repr(SENTINEL_TS), repr(ts)), (str(SENTINEL_VERSION), str(result.versions[name])),
                           (str(SENTINEL_FILES), str(result.partition_files[name])),
                           (str(SENTINEL_ROWS), str(rows_of(name)))] for name, ts in zip(names, stamps)]
        events = [put(made[name][0], swap) for name, swap in zip(names, swaps)]
        self.build_s += time.perf_counter() - clock
        clock = time.perf_counter()
        with storage._engine.begin() as conn:
            ids = self._reserve(conn, len(fed))
            (keyed, partitioned), _ = self._indexes
            copy_rows(conn.connection.cursor(), "event_logs", EVENT_COLUMNS, [
                [i, run_id, event, "ASSET_MATERIALIZATION", naive(ts), STEP, key if keyed else None,
                 partition if partitioned else None] for i, event, ts, key in zip(ids, events, stamps, keys)])
            values = []
            for name, swap, i, ts, key in zip(names, swaps, ids, stamps, keys):
                record = put(made[name][1], swap + [(str(SENTINEL_ID), str(i))])
                values.append({"asset_key": key, "last_materialization": record, "last_run_id": run_id,
                               **({"last_materialization_timestamp": datetime_from_timestamp(ts)} if self._indexed else {})})
            upsert = postgresql.insert(AssetKeyTable).values(values)
            conn.execute(upsert.on_conflict_do_update(index_elements=[AssetKeyTable.c.asset_key],
                                                      set_={c: upsert.excluded[c] for c in values[0] if c != "asset_key"}))
        self.store_s += time.perf_counter() - clock
        clock = time.perf_counter()
        checks = [(t + 5 + n * 1e-3, put(made[name][2], common + [
            (repr(SENTINEL_TS), repr(t + 5 + n * 1e-3)), (str(SENTINEL_TARGET), str(i)),
            (repr(SENTINEL_TARGET_TS), repr(ts))])) for n, (name, i, ts) in enumerate(zip(names, ids, stamps))]
        self.build_s += time.perf_counter() - clock
        clock = time.perf_counter()
        with storage._engine.begin() as conn:
            check_ids = self._reserve(conn, len(fed))
            cursor = conn.connection.cursor()
            _, (keyed, partitioned) = self._indexes
            copy_rows(cursor, "event_logs", EVENT_COLUMNS, [
                [i, run_id, event, "ASSET_CHECK_EVALUATION", naive(ts), STEP, key if keyed else None,
                 partition if partitioned else None] for i, (ts, event), key in zip(check_ids, checks, keys)])
            copy_rows(cursor, "asset_check_executions", EXECUTION_COLUMNS, [
                [key, "expectations", partition, run_id, "SUCCEEDED", event, naive(ts), i, target]
                for i, (ts, event), key, target in zip(check_ids, checks, keys, ids)])
        self.store_s += time.perf_counter() - clock
        self.events += 2 * len(fed)

    @staticmethod
    def _reserve(conn, n: int) -> list[int]:
        """`n` storage ids of event_logs, as `n` inserts would take them."""
        from sqlalchemy import text

        return sorted(r[0] for r in conn.execute(text(
            "SELECT nextval('event_logs_id_seq') FROM generate_series(1, :n)"), {"n": n}))

    # a run
    def run(self, day: dt.date, start: float, result, design: str = "tables", increment: int = -1) -> str:
        """One run of events_job for `day` (an increment's, numbered), its events stored as the run
        stores them. Run ids are made from the day and the increment (`--verify-bulk` compares two
        databases filled alike)."""
        from catalake.defs.events.assets import deadletter_checks, deadletter_materialization
        from catalake.platform.warehouse.deadletters import DEADLETTER_TABLE
        from dagster import DagsterRun
        from dagster._core.definitions.asset_checks.asset_check_evaluation import (
            AssetCheckEvaluationPlanned, AssetCheckEvaluationTargetMaterializationData)
        from dagster._core.events import (AssetMaterializationPlannedData, ComputeLogsCaptureData, DagsterEventType,
                                          EngineEventData, StepSuccessData)
        from dagster._core.storage.dagster_run import DagsterRunStatus
        from dagster import MetadataValue

        clock = time.perf_counter()
        partition = day.isoformat()
        run_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"catalake-year/{partition}/{increment}"))
        incremental = result.kind == "incremental"
        tags = {"dagster/partition": partition, "dagster/partition_set": f"{JOB}_partition_set",
                "dagster/code_location": "catalake", "catalake/host": "vm", "catalake/pid": str(self.pid),
                "catalake/process": f"{run_id[:8]}/1198951"}
        if incremental:
            tags.update({"catalake/incremental": "true", "catalake/cadence": "true", "dagster/sensor_name": "landing_sensor"})
        else:
            tags.update({"dagster/schedule_name": "daily_events_schedule"})
        subset = self.partitions.subset_with_partition_keys([partition]).to_serializable_subset()
        self.instance.add_run(DagsterRun(job_name=JOB, run_id=run_id, asset_selection=frozenset({self.deadletter}),
                                         step_keys_to_execute=[STEP], status=DagsterRunStatus.NOT_STARTED, tags=tags,
                                         partitions_subset=subset, remote_job_origin=self.origin))
        checks = ["conservation", "landing", "freshness"]
        t = start
        ev = self._event
        E = DagsterEventType
        head = [ev(run_id, t, E.ASSET_MATERIALIZATION_PLANNED,
                   AssetMaterializationPlannedData(self.deadletter, partition=partition),
                   f'{JOB} intends to materialize asset ["deadletter"]', step=False)]
        head += [ev(run_id, t, E.ASSET_CHECK_EVALUATION_PLANNED,
                    AssetCheckEvaluationPlanned(asset_key=self.deadletter, check_name=name, partitions_subset=subset),
                    f'{JOB} intends to execute asset check {name} on asset ["deadletter"]', step=False) for name in checks]
        resources = "catalog_source, io_manager, landing, spark, warehouse"
        head += [
            ev(run_id, t + 0.1, E.RUN_ENQUEUED, step=False), ev(run_id, t + 0.2, E.RUN_DEQUEUED, step=False),
            ev(run_id, t + 0.3, E.RUN_STARTING, step=False),
            ev(run_id, t + 2.0, E.RUN_START, message=f'Started execution of run for "{JOB}".', step=False),
            ev(run_id, t + 2.1, E.ENGINE_EVENT, EngineEventData(metadata={"pid": MetadataValue.text(str(self.pid)),
                                                                             "step_keys": MetadataValue.text(f"['{STEP}']")}),
               f"Executing steps in process (pid: {self.pid})", step=False),
            ev(run_id, t + 2.2, E.RESOURCE_INIT_STARTED, EngineEventData(metadata={}, marker_start="resources"),
               f"Starting initialization of resources [{resources}].", compute=False),
            ev(run_id, t + 2.3, E.RESOURCE_INIT_SUCCESS, EngineEventData(metadata={
                name: MetadataValue.text(f"{name}:init_time") for name in resources.split(", ")}, marker_end="resources"),
               f"Finished initialization of resources [{resources}].", compute=False),
            ev(run_id, t + 2.4, E.LOGS_CAPTURED, ComputeLogsCaptureData(file_key="abcdefgh", step_keys=[STEP]),
               f"Capturing logs for process (pid: {self.pid}).", step=False),
            ev(run_id, t + 2.5, E.STEP_START, message=f'Started execution of step "{STEP}".'),
            self._line(run_id, t + 3, f"{partition}: {len(result.files)} landed file(s) in {result.tasks} task(s) on "
                                      f"Spark {self.engine.master} (application {self.engine.app_id})"),
            self._line(run_id, t + 240, f"{partition}: {result.records} record(s) classified in {result.tasks} task(s)"),
            self._line(run_id, t + 330, f"{partition}: committed {len(result.written) + 1} table(s)"),
        ]
        t += 330
        self._store(head)
        if not (design == "few" and incremental):
            (self._tables_bulk if self.bulk else self._tables_exact)(run_id, day, t, result)
        clock = time.perf_counter()
        t += 10
        material = deadletter_materialization(result, self.store, self.tables, 32, self.deadletter)
        self.build_s += time.perf_counter() - clock
        self._store([self._line(run_id, t, f"{partition}: seconds per phase: {result.seconds}"),
                     self._output(run_id, t + 0.1, "deadletter", {}),  # its metadata is the materialization's
                     self._materialization(run_id, t + 0.2, material)])
        clock = time.perf_counter()
        last = self.instance.get_asset_records([self.deadletter])[0].asset_entry.last_materialization_record
        target = AssetCheckEvaluationTargetMaterializationData(storage_id=last.storage_id, run_id=run_id,
                                                               timestamp=last.timestamp)
        held = self.rows
        per_table = {**(result.stored if incremental else held), DEADLETTER_TABLE: sum(result.deadletter.values())}
        counts = {"records_read": result.records_of_day, "rows_stored": result.records_of_day,
                  **({"rows_staged": 0} if incremental else {}),
                  "per_table": {name: rows for name, rows in per_table.items()}}
        landing = SimpleNamespace(layout="day", root=str(self.landing))
        evaluations = list(deadletter_checks(result, True, counts, landing, day, self.deadletter, target))
        tail = []
        for i, evaluation in enumerate(evaluations):
            # a single day's full run yields its checks (an output each); an increment logs them
            tail += [] if incremental and design == "few" else [
                self._output(run_id, t + 0.3 + i * 0.01, f"deadletter_{evaluation.check_name}", {})]
            tail += [self._check(run_id, t + 0.305 + i * 0.01, evaluation)]
        tail += [ev(run_id, t + 1, E.STEP_SUCCESS, StepSuccessData(duration_ms=(t + 1 - start - 2.5) * 1000),
                    f'Finished execution of step "{STEP}" in {int((t + 1 - start - 2.5) * 1000)}ms.'),
                 ev(run_id, t + 1.1, E.ENGINE_EVENT, EngineEventData(metadata={
                     "pid": MetadataValue.text(str(self.pid))}), f"Finished steps in process (pid: {self.pid}) in "
                     f"{int((t + 1 - start) * 1000)}ms", step=False),
                 ev(run_id, t + 1.2, E.RUN_SUCCESS, message=f'Finished execution of run for "{JOB}".', step=False)]
        self.build_s += time.perf_counter() - clock
        self._store(tail)
        self.runs += 1
        return run_id


# -- PostgreSQL ----------------------------------------------------------------------------------

def copy_rows(cursor, table: str, columns: list[str], rows: list[list]) -> None:
    """COPY rows into a table (CSV: None unquoted, which is NULL; anything else but an int quoted)."""
    import io

    def field(value) -> str:
        if value is None:
            return ""
        if isinstance(value, int):
            return str(value)
        return '"' + str(value).replace('"', '""') + '"'

    buffer = io.StringIO("".join(",".join(map(field, row)) + "\n" for row in rows))
    cursor.copy_expert(f"COPY {table} ({', '.join(columns)}) FROM STDIN WITH (FORMAT csv)", buffer)


def as_postgres(*command: str) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.getuid() == 0 else list(command)


def sizes(engine) -> dict:
    """Every table's total size (with its indexes and TOAST), the database's, and row counts."""
    from sqlalchemy import text

    with engine.connect() as conn:
        tables = {name: int(size) for name, size in conn.execute(text(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY 2 DESC"))}
        database = int(conn.execute(text("SELECT pg_database_size(current_database())")).scalar())
        rows = {name: int(conn.execute(text(f"SELECT count(*) FROM {name}")).scalar())
                for name in ("runs", "run_tags", "asset_keys", "asset_event_tags", "asset_check_executions")
                if name in tables}
        rows["event_logs"] = int(conn.execute(text("SELECT coalesce(max(id), 0) FROM event_logs")).scalar())
    return {"database_bytes": database, "table_bytes": tables, "rows": rows}


def event_bytes(engine, where: str = "") -> dict:
    """Events and their stored bytes (pg_column_size of the serialized event) by type."""
    from sqlalchemy import text

    with engine.connect() as conn:
        return {str(kind or "log"): {"events": int(n), "bytes": int(b)} for kind, n, b in conn.execute(text(
            f"SELECT dagster_event_type, count(*), sum(pg_column_size(event)) FROM event_logs {where} "
            "GROUP BY 1 ORDER BY 3 DESC"))}


# -- timing the UI ---------------------------------------------------------------------------------

class UI:
    def __init__(self, process, documents: dict, instance):
        self.process, self.documents, self.instance = process, documents, instance

    def query(self, name: str, variables: dict | None = None) -> tuple[float, dict]:
        from dagster_graphql.test.utils import execute_dagster_graphql

        context = self.process.create_request_context()
        clock = time.perf_counter()
        result = execute_dagster_graphql(context, self.documents[name], variables)
        seconds = time.perf_counter() - clock
        errors = python_errors(result.data)
        if errors:
            raise RuntimeError(f"{name}: {errors[0]}")
        return seconds, result.data

    def records(self) -> tuple[float, list[list[str]]]:
        """AssetRecordsQuery in the UI's pages of 1,000 (FetchManager in useAllAssets)."""
        seconds, keys, cursor = 0.0, [], None
        while True:
            s, data = self.query("AssetRecordsQuery", {"cursor": cursor, "limit": 1000})
            seconds += s
            page = data["assetRecordsOrError"]["assets"]
            keys += [a["key"]["path"] for a in page]
            cursor = data["assetRecordsOrError"]["cursor"]
            if len(page) < 1000:
                return seconds, keys

    def live(self, keys: list[list[str]]) -> float:
        """AssetGraphLiveQuery in the UI's batches of 10 keys (live-data-provider/util.ts)."""
        return sum(self.query("AssetGraphLiveQuery", {"assetKeys": [{"path": k} for k in keys[i:i + 10]]})[0]
                   for i in range(0, len(keys), 10))

    def page(self, key: list[str], upstream: list[str]) -> dict:
        variables = {"assetKey": {"path": key}}
        return {
            "AssetViewDefinitionQuery": self.query("AssetViewDefinitionQuery", variables)[0],
            "AssetGraphLiveQuery (the asset)": self.live([key]),
            "AssetGraphLiveQuery (upstream)": self.live([upstream]),
            "AssetOverviewMetadataEventsQuery": self.query("AssetOverviewMetadataEventsQuery", variables)[0],
        }

    def wipe(self, keys: list[list[str]]) -> None:
        """Dagster's status cache of the assets, and catalake's of their checks (eventlog.py)."""
        from catalake.eventlog import CHECK_STATE_KEY
        from dagster import AssetCheckKey, AssetKey

        self.instance.wipe_asset_cached_status([AssetKey(k) for k in keys])
        self.instance.run_storage.set_cursor_values({
            CHECK_STATE_KEY + AssetCheckKey(AssetKey(k), name).to_user_string(): ""
            for k in keys for name in ("expectations", "conservation", "landing", "freshness")})


def timed(measure, repeats: int, before=None) -> dict:
    """`measure()` -> seconds or {part: seconds}: once discarded, then `repeats` times (each after
    `before()`); the median of the total and of each part."""
    def once():
        if before is not None:
            before()
        out = measure()
        return out if isinstance(out, dict) else {"total": out}

    once()
    runs = [once() for _ in range(repeats)]
    parts = {p: round(statistics.median(r[p] for r in runs), 4) for p in runs[0]}
    totals = [sum(r.values()) for r in runs]
    return {"median_s": round(statistics.median(totals), 4), "min_s": round(min(totals), 4),
            "max_s": round(max(totals), 4), **({"parts_median_s": parts} if len(parts) > 1 else {})}


def time_ui(instance, definitions: int, repeats: int, visible: int, sample: list[str]) -> list[dict]:
    from dagster import AssetKey
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import WorkspaceFileTarget

    documents = ui_queries(QUERIES)
    rows = []

    def row(page: str, what: str, cache: str, result: dict) -> None:
        rows.append({"definitions": definitions, "phase": "ui", "page": page, "what": what, "cache": cache, **result})
        emit(rows[-1])

    clock = time.perf_counter()
    sys.stdout.flush()
    out = os.dup(1)
    os.dup2(2, 1)  # the code server started here inherits stderr as its stdout: stdout stays JSON lines
    try:
        workspace_context = WorkspaceProcessContext(instance, WorkspaceFileTarget(paths=[str(REPO / "workspace.yaml")]))
    finally:
        os.dup2(out, 1)
        os.close(out)
    with workspace_context as process:
        loaded = time.perf_counter() - clock
        ui = UI(process, documents, instance)
        _, workspace = ui.query("LocationWorkspaceAssetsQuery", {"name": "catalake"})
        location = workspace["workspaceLocationEntryOrError"]["locationOrLoadError"]
        defined = sorted(node["assetKey"]["path"] for repository in location["repositories"]
                         for node in repository["assetNodes"])
        emit({"definitions": definitions, "phase": "code location", "load_s": round(loaded, 2), "assets": len(defined)})
        shown = defined[:visible]  # the catalog's first rows, by key

        def catalog() -> dict:
            return {"AssetRecordsQuery": ui.records()[0], "AssetGraphLiveQuery": ui.live(shown)}

        row("asset catalog", f"AssetRecordsQuery (pages of 1,000) + AssetGraphLiveQuery of the first {len(shown)} "
            f"of {len(defined)} rows (batches of 10)", "warm", timed(catalog, repeats))
        row("asset catalog", "the same", "cleared (the rows shown)", timed(catalog, repeats, lambda: ui.wipe(shown)))
        row("asset catalog", "LocationWorkspaceAssetsQuery (the definitions; the UI keeps them in IndexedDB)", "warm",
            timed(lambda: ui.query("LocationWorkspaceAssetsQuery", {"name": "catalake"})[0], repeats))
        for name in sample:
            asset_rows(ui, name, repeats, row)
        # the instance calls the resolvers make, for attribution
        keys = [AssetKey(k) for k in defined]
        message = AssetKey(sample[0].split("/"))
        calls = {
            "instance.get_asset_records(every asset)": lambda: instance.get_asset_records(keys),
            "instance.get_latest_materialization_events(every asset)":
                lambda: instance.get_latest_materialization_events(keys),
            f"instance.get_materialized_partitions({sample[0]})": lambda: instance.get_materialized_partitions(message),
        }
        for what, call in calls.items():
            row("instance", what, "-", timed(functools.partial(_seconds, call), repeats))
        state = []
        result = timed(lambda: _freshness(process, state), repeats)
        row("freshness", "deadletter's FreshnessPolicy.cron evaluated as the freshness daemon does "
            "(CronFreshnessPolicyEvaluator, a new request context each)", "-", {**result, "state": state[-1]})
    return rows


def _freshness(process, state: list) -> float:
    """One evaluation of `deadletter`'s freshness policy (the `freshness` check itself is computed
    by the runs, from their own results: nothing read)."""
    import asyncio

    from dagster import AssetKey
    from dagster._core.definitions.freshness_evaluator import CronFreshnessPolicyEvaluator

    context = process.create_request_context()
    node = context.asset_graph.get(AssetKey(["deadletter"]))
    clock = time.perf_counter()
    state.append(str(asyncio.run(CronFreshnessPolicyEvaluator().evaluate_freshness(context, node)).value))
    return time.perf_counter() - clock


def asset_rows(ui: UI, name: str, repeats: int, row) -> None:
    """An asset's page and its partitions' health, warm and with its status cache cleared."""
    key, upstream = name.split("/"), ["message_catalog"]
    variables = {"assetKey": {"path": key}}
    check = "expectations" if key[0] == "messages" else "conservation"
    row(f"asset page {name}", "AssetViewDefinitionQuery + AssetGraphLiveQuery (asset, upstream) + "
        "AssetOverviewMetadataEventsQuery", "warm", timed(lambda: ui.page(key, upstream), repeats))
    row(f"asset page {name}", "the same", "cleared",
        timed(lambda: ui.page(key, upstream), repeats, lambda: ui.wipe([key, upstream])))
    row(f"partitions {name}", "PartitionHealthQuery", "warm",
        timed(lambda: ui.query("PartitionHealthQuery", variables)[0], repeats))
    row(f"partitions {name}", "PartitionHealthQuery", "cleared",
        timed(lambda: ui.query("PartitionHealthQuery", variables)[0], repeats, lambda: ui.wipe([key])))
    row(f"partitions {name}", f"AssetCheckPartitionHealthQuery ({check})", "warm",
        timed(lambda: ui.query("AssetCheckPartitionHealthQuery", {**variables, "checkName": check})[0], repeats))
    row(f"partitions {name}", f"AssetCheckPartitionHealthQuery ({check})", "cleared",
        timed(lambda: ui.query("AssetCheckPartitionHealthQuery", {**variables, "checkName": check})[0], repeats,
              lambda: ui.wipe([key])))


def _seconds(call) -> float:
    clock = time.perf_counter()
    call()
    return time.perf_counter() - clock


# -- one catalog -------------------------------------------------------------------------------------

def prepare(args, definitions: int, work: Path) -> SimpleNamespace:
    """The catalog of `definitions` and its code location's settings and state; its tables."""
    from catalake.defs.catalog.state import refresh, state_file
    from catalake.defs.names import DEFAULT

    today = dt.datetime.now(dt.timezone.utc).date()
    first = today - dt.timedelta(days=args.days)
    folder = work / f"catalog-{definitions}"
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "catalog").mkdir(parents=True)
    (folder / "landing").mkdir()
    (folder / "catalog" / "bench.xreg.json").write_text(json.dumps(workload_catalog(definitions)))
    (folder / "dagster_home").mkdir()
    shutil.copy(REPO / "deploy" / "dagster.yaml", folder / "dagster_home" / "dagster.yaml")
    configured = location_settings(folder, first)
    clock = time.perf_counter()
    refresh(state_file(configured, DEFAULT), configured, DEFAULT, False)  # as loading.py: without the dbt models
    state_s = time.perf_counter() - clock
    tables = configured.catalog_source.tables(configured.catalog_source.load())
    return SimpleNamespace(definitions=definitions, folder=folder, first=first, tables=tables, state_s=state_s,
                           key_of={t.name: DEFAULT.message(t.message) for t in tables})


def location_settings(folder: Path, first: dt.date):
    """The code location's environment (this process's, and the code server's it starts)."""
    from catalake.platform.config import Settings
    from catalake.resources import Configured

    home = folder / "dagster_home"
    os.environ.update({"CATALAKE_CATALOG": str(folder / "catalog"), "CATALAKE_LANDING": str(folder / "landing"),
                       "CATALAKE_WAREHOUSE": str(folder / "warehouse"), "CATALAKE_START_DATE": first.isoformat(),
                       "DAGSTER_HOME": str(home), "DAGSTER_COMPUTE_LOGS": str(home / "compute_logs")})
    os.environ.pop("DAGSTER_IS_DEV_CLI", None)
    return Configured.from_settings(Settings.from_env(dict(os.environ)))


def open_database(setup: SimpleNamespace, port: int, database: str, bulk: bool, create: bool = True):
    """A new database on the server (or the one kept), the instance of deploy/dagster.yaml on it,
    and a Year to fill it."""
    from dagster import DagsterInstance, DailyPartitionsDefinition
    from sqlalchemy import create_engine

    if create:
        subprocess.run(as_postgres(str(PG_BIN[-1] / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "catalake",
                                   database), check=True)
    os.environ.update({"DAGSTER_PG_HOST": "127.0.0.1", "DAGSTER_PG_PORT": str(port), "DAGSTER_PG_USERNAME": "catalake",
                       "DAGSTER_PG_PASSWORD": "catalake", "DAGSTER_PG_DB": database})
    instance = DagsterInstance.get()
    assert type(instance.event_log_storage).__name__ == "BatchingPostgresEventLogStorage", instance.event_log_storage
    engine = create_engine(f"postgresql://catalake:catalake@127.0.0.1:{port}/{database}")
    year = Year(instance, setup.tables, setup.key_of, DailyPartitionsDefinition(start_date=setup.first.isoformat()),
                setup.folder / "warehouse", setup.folder / "landing", bulk)
    return instance, engine, year


def fill(args, setup: SimpleNamespace, year: Year, engine, store: str) -> None:
    """The year: a nightly run a day; the last `--increment-days` days with their increments first."""
    from sqlalchemy import text

    definitions, days, first, tables = setup.definitions, args.days, setup.first, setup.tables
    base = {"definitions": definitions, "store": store}
    empty = sizes(engine)
    emit({**base, "phase": "setup", "days": days, "first_day": first.isoformat(), "tables": len(tables),
          "state_s": round(setup.state_s, 2), "empty_database_bytes": empty["database_bytes"]})
    with_increments = min(args.increment_days, days) if args.increments_per_day else 0
    plain = days - with_increments
    clock = time.perf_counter()
    for index in range(plain):
        day = first + dt.timedelta(days=index)
        year.run(day, _nightly(day), year.result(day, "full", tables, index))
        if (index + 1) % args.progress == 0 or index + 1 == plain:
            spent = time.perf_counter() - clock
            say(f"{definitions} definitions ({store}): day {index + 1}/{plain}, {year.events:,} events in {spent:.0f} s "
                f"({year.events / spent:,.0f}/s; build {year.build_s:.0f} s, store {year.store_s:.0f} s), "
                f"ETA {spent / (index + 1) * (plain - index - 1) / 60:.1f} min")
    fill_s = time.perf_counter() - clock
    with engine.begin() as conn:  # what autovacuum's analyze does after a bulk load: the planner's statistics
        conn.execute(text("ANALYZE"))
    filled = sizes(engine)
    grown = filled["database_bytes"] - empty["database_bytes"]
    emit({**base, "phase": "fill", "days": plain, "runs": year.runs, "events": year.events,
          "seconds": round(fill_s, 1), "build_s": round(year.build_s, 1), "store_s": round(year.store_s, 1),
          "events_per_s": round(year.events / fill_s) if fill_s else None,
          "events_per_day": year.events // max(plain, 1), **filled, "bytes_per_day": grown // max(plain, 1),
          "event_bytes_by_type": event_bytes(engine)})
    if not with_increments:
        return
    runs, events, clock = year.runs, year.events, time.perf_counter()
    fed = tables[:args.increment_tables] if args.increment_tables else tables
    grown_by_day = []  # the database's growth over each day's increments, before its nightly run
    for offset in range(with_increments):
        index = plain + offset
        day = first + dt.timedelta(days=index)
        start = dt.datetime.combine(day, dt.time(), dt.timezone.utc).timestamp()
        vacuum(engine)  # as autovacuum would have by then: the dead rows' space is reused
        before = database_bytes(engine)
        for k in range(args.increments_per_day):
            year.run(day, start + k * 86400 / args.increments_per_day,
                     year.result(day, "incremental", fed, index, k, args.increments_per_day), args.increment_events, k)
            if (k + 1) % max(1, args.increments_per_day // 10) == 0:
                spent = time.perf_counter() - clock
                say(f"increments of day {offset + 1}/{with_increments}: {k + 1}/{args.increments_per_day}, "
                    f"{year.events - events:,} events in {spent:.0f} s")
        vacuum(engine)
        grown_by_day.append(database_bytes(engine) - before)
        year.run(day, _nightly(day), year.result(day, "full", tables, index))
    spent = time.perf_counter() - clock
    with engine.begin() as conn:
        conn.execute(text("ANALYZE"))
    after = sizes(engine)
    increments = with_increments * args.increments_per_day
    increment_runs = "(SELECT run_id FROM run_tags WHERE key = 'catalake/incremental' AND value = 'true')"
    by_type = event_bytes(engine, f"WHERE run_id IN {increment_runs}")
    with engine.connect() as conn:
        executions = int(conn.execute(text(f"SELECT coalesce(sum(pg_column_size(evaluation_event)), 0) FROM "
                                           f"asset_check_executions WHERE run_id IN {increment_runs}")).scalar())
    # steady state: the last day's, its dead rows' space left by the day before reused
    per_increment = grown_by_day[-1] // args.increments_per_day
    emit({**base, "phase": "increments", "design": args.increment_events, "days": with_increments,
          "increments_per_day": args.increments_per_day, "tables_per_increment": len(fed),
          "runs": year.runs - runs, "events": year.events - events, "seconds": round(spent, 1),
          "database_bytes": after["database_bytes"], "table_bytes": after["table_bytes"],
          # the database's growth over each day's increments (not their day's nightly run), vacuumed
          "bytes_grown_by_day": grown_by_day, "bytes_per_increment": per_increment,
          # what the increments' events hold: event_logs.event and asset_check_executions.evaluation_event
          # as stored (pg_column_size: compressed), indexes and the runs' rows left out
          "event_bytes_per_increment": (sum(v["bytes"] for v in by_type.values()) + executions) // increments,
          # a day of increments every 30 s (the landing sensor's), and its nightly run (the fill's bytes_per_day)
          "bytes_per_day_at_2880": per_increment * 2880 + grown // max(plain, 1),
          "increment_event_bytes_by_type": by_type, "increment_execution_bytes": executions})


def vacuum(engine) -> None:
    """A plain VACUUM (not FULL: the files keep their size, their dead rows' space is free for new rows)."""
    from sqlalchemy import text

    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM"))


def database_bytes(engine) -> int:
    from sqlalchemy import text

    with engine.connect() as conn:
        return int(conn.execute(text("SELECT pg_database_size(current_database())")).scalar())


def drop(port: int, database: str) -> None:
    subprocess.run(as_postgres(str(PG_BIN[-1] / "dropdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "catalake",
                               database), check=False)


def one(args, definitions: int, port: int, work: Path) -> None:
    if args.queries_only:  # a year kept by --keep
        from catalake.defs.names import DEFAULT

        folder = work / f"catalog-{definitions}"
        kept = json.loads((folder / "year.json").read_text())
        configured = location_settings(folder, dt.date.fromisoformat(kept["first_day"]))
        tables = configured.catalog_source.tables(configured.catalog_source.load())
        setup = SimpleNamespace(definitions=definitions, folder=folder, first=dt.date.fromisoformat(kept["first_day"]),
                                tables=tables, key_of={t.name: DEFAULT.message(t.message) for t in tables})
        database = kept["database"]
        instance, engine, year = open_database(setup, port, database, True, create=False)
        emit({"definitions": definitions, "phase": "kept", **kept, **sizes(engine)})
    else:
        setup = prepare(args, definitions, work)
        database = f"year_{definitions}_{args.days}_{os.getpid()}"
        (setup.folder / "year.json").write_text(json.dumps({"database": database, "first_day": setup.first.isoformat(),
                                                            "days": args.days}))
        instance, engine, year = open_database(setup, port, database, args.store == "bulk")
        fill(args, setup, year, engine, args.store)
    if not args.no_queries:
        sample = [setup.key_of[setup.tables[len(setup.tables) // 2].name].to_user_string(), "deadletter"]
        time_ui(instance, definitions, args.repeats, args.visible_rows, sample)
    engine.dispose()
    if not args.keep:
        drop(port, database)
        shutil.rmtree(setup.folder, ignore_errors=True)


COMPARED = {"event_logs": "id", "asset_keys": "asset_key", "asset_event_tags": "id", "asset_check_executions": "id",
            "runs": "run_id", "run_tags": "run_id, key", "dynamic_partitions": "id"}
WALL_CLOCK = {"create_timestamp", "update_timestamp"}  # when a row was written, not what it says


def verify(args, definitions: int, port: int, work: Path) -> bool:
    """The same year stored by `store_event` (catalake's batches) and by `--store bulk`, each in a
    database of its own: every row of Dagster's event and run tables compared, but the columns
    saying when it was written."""
    from sqlalchemy import text

    setup = prepare(args, definitions, work)
    engines = {}
    for store in ("exact", "bulk"):
        database = f"verify_{store}_{definitions}_{os.getpid()}"
        _, engines[store], year = open_database(setup, port, database, store == "bulk")
        fill(args, setup, year, engines[store], store)
    different, counts = {}, {}
    for table, order in COMPARED.items():
        tables = []
        for engine in engines.values():
            with engine.connect() as conn:
                columns = [c for (c,) in conn.execute(text(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = :t ORDER BY ordinal_position"),
                    {"t": table}) if c not in WALL_CLOCK]
                tables.append([tuple(r) for r in conn.execute(text(
                    f"SELECT {', '.join(columns)} FROM {table} ORDER BY {order}"))])
        counts[table] = len(tables[0])
        if tables[0] != tables[1]:
            rows = [i for i, (a, b) in enumerate(zip(*tables)) if a != b]
            first = [str(t[rows[0]]) for t in tables] if rows else None
            at = next((i for i, (x, y) in enumerate(zip(*first)) if x != y), 0) if first else 0
            different[table] = {"rows": [len(t) for t in tables], "rows_differing": len(rows),
                                "first": [f[max(0, at - 150):at + 150] for f in first] if first else None}
    for store, engine in engines.items():
        engine.dispose()
        drop(port, f"verify_{store}_{definitions}_{os.getpid()}")
    emit({"definitions": definitions, "phase": "verify bulk", "days": args.days,
          "increments_per_day": args.increments_per_day, "rows_compared": counts, "identical": not different,
          "differences": different})
    return not different


def _nightly(day: dt.date) -> float:
    """The daily schedule's run of `day`: 01:00 UTC the next day."""
    return dt.datetime.combine(day + dt.timedelta(days=1), dt.time(1), dt.timezone.utc).timestamp()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--definitions", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--increments-per-day", type=int, default=0)
    parser.add_argument("--increment-days", type=int, default=1, help="the last days that also get increments")
    parser.add_argument("--increment-events", choices=["tables", "few"], default="tables",
                        help="tables: each committed table's materialization and check, and deadletter's four events "
                             "(today); few: deadletter's materialization and freshness check only")
    parser.add_argument("--increment-tables", type=int, default=0, help="tables an increment commits (0: all)")
    parser.add_argument("--store", choices=["bulk", "exact"], default="bulk",
                        help="exact: every event through instance.handle_new_event (catalake's batches); bulk: the "
                             "tables' materializations and checks with COPY, their rows made by Dagster's own code")
    parser.add_argument("--verify-bulk", action="store_true",
                        help="fill the first --definitions both ways, compare the databases, and stop")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--visible-rows", type=int, default=30, help="catalog rows on screen (live data fetched)")
    parser.add_argument("--no-queries", action="store_true", help="fill and measure sizes only")
    parser.add_argument("--progress", type=int, default=10, help="a progress line every this many days")
    parser.add_argument("--work", type=Path, default=None, help="folder for PostgreSQL and the homes (default: temporary)")
    parser.add_argument("--keep", action="store_true", help="leave the server stopped with its data, and the homes")
    parser.add_argument("--queries-only", action="store_true",
                        help="time the UI again on the years --keep left in --work (implies --keep)")
    args = parser.parse_args()
    if args.queries_only:
        if args.work is None:
            parser.error("--queries-only needs the --work of a run with --keep")
        args.keep = True
    work = args.work or Path(tempfile.mkdtemp(prefix="catalake-year-"))
    work.mkdir(parents=True, exist_ok=True)
    os.chmod(work, 0o755)  # the server's user reads the data folder below it
    server = work / "postgres"
    port = 5400 + os.getpid() % 500
    script = REPO / "deploy" / "postgres.sh"
    subprocess.run(["bash", str(script), "start", str(server), str(port)], check=True, stdout=subprocess.DEVNULL)
    emit({"machine": os.uname().nodename, "cores": os.cpu_count(), "python": sys.version.split()[0],
          "postgresql": subprocess.run([str(PG_BIN[-1] / "postgres"), "--version"], capture_output=True,
                                       text=True).stdout.strip(),
          "command": " ".join([Path(sys.executable).name, *sys.argv]), "targets": TARGETS})
    try:
        if args.verify_bulk:
            if not verify(args, args.definitions[0], port, work):
                sys.exit(1)
            return
        for definitions in args.definitions:
            one(args, definitions, port, work)
    finally:
        subprocess.run(["bash", str(script), "stop", str(server)], check=False)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
