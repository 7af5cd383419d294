"""The delta-rs commit protocol: the driver adds files already written (files.py) to a Delta
table in one transaction.

On S3, delta-rs (1.x) makes each commit with a conditional put (`If-None-Match`): two writers of
one table never both create the same log entry, so no lock table is needed. A partition overwrite
that loses that race to another commit is made again on the new snapshot (``commit``): the
partition ends with exactly one writer's files. A commit that is the only version after the
snapshot it was made from (``only_new_version``, one request) does not read the log again: at
thousands of tables a commit each, that read was a third of an increment's commit phase.

No commit checkpoints the log or removes expired entries (``NO_HOOKS``): delta-rs' post-commit
hooks list the log on every commit. Checkpoints have a cadence of their own (appends.py) and
`catalake maintain` removes expired entries.

An append at a version the day's ledger knows skips all of this (appends.py).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Iterator
from urllib.parse import unquote

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, PostCommitHookProperties, Transaction
from deltalake.exceptions import CommitFailedError
from deltalake.transaction import AddAction, RemoveAction

from ..errors import AlreadyCommitted, Conflict, StorageError
from ..uris import Location
from .files import WrittenFile, partition_value, remove_files
from .statistics import rows_only

COMMIT_ATTEMPTS = 10  # a commit that keeps losing the race to other writers fails after these
COMMIT_KEY = "catalake.commit"  # names a commit in the log's commitInfo, to find its version
NO_HOOKS = PostCommitHookProperties(create_checkpoint=False, cleanup_expired_logs=False)


def only_new_version(root: Location, read_version: int) -> bool:
    """Whether a commit made from the snapshot at `read_version` is the log's only entry after
    it: no entry `read_version + 2` exists (the commit is at `read_version + 1` or later, so
    it is that one). One metadata request on object storage, against reading the log again."""
    try:  # an open is one request on object storage; get_file_info of a missing key is two
        root.filesystem.open_input_file(f"{root.path}/_delta_log/{read_version + 2:020d}.json").close()
    except FileNotFoundError:
        return True
    return False


def _committed_version(table: DeltaTable, commit: str, read_version: int) -> int:
    """The version a commit made from the snapshot at `read_version`: the snapshot a
    transaction starts from is not updated by it, and other writers may have committed since
    (the log's newest entries are searched, unless the log has just the one new entry)."""
    table.update_incremental()  # reads only the log entries added since the table was loaded
    if table.version() == read_version + 1:
        return read_version + 1  # the commit made a version after read_version: this one
    for limit in (1, 50):  # almost always the newest: each entry read is one request on object storage
        for entry in table.history(limit):
            if entry.get(COMMIT_KEY) == commit:
                return int(entry["version"])
    return table.version()


def replaced(replace: dict) -> tuple[str, set[str]]:
    """The column and the values of the partitions an overwrite replaces: `{column: value}`, or
    `{column: [values]}` for a run of a range of days (one commit for all of them)."""
    (column, values), = replace.items()
    return column, set(values) if isinstance(values, (list, tuple, set, frozenset)) else {values}


def _remove_concurrent(root: Location, table: DeltaTable, read_version: int, version: int, mine: set[str],
                       replace: dict) -> None:
    """After a partition overwrite committed at `version` from the snapshot `read_version`: the
    files another writer added to those partitions in between were not in the snapshot, so the
    overwrite did not remove them (delta-rs checks a transaction of given actions as a blind
    append). They are removed now, in one more commit, so the partition holds exactly one
    writer's rows. A writer that commits later does the same for these files: the last one wins.
    `table` is left loaded at the newest version."""
    if version <= read_version + 1:
        return
    column, values = replaced(replace)
    added = {unquote(action["path"]) for action in _actions_between(root, read_version, version, "add")
             if partition_value((action.get("partitionValues") or {}).get(column)) in values}
    for attempt in range(COMMIT_ATTEMPTS):
        table.update_incremental()
        current = pa.table(table.get_add_actions(flatten=True)).to_pydict()
        stale = [(p, n) for p, n in zip(current.get("path", []), current.get("size_bytes", [None] * len(current.get("path", []))))
                 if unquote(p) in added and unquote(p) not in mine]
        if not stale:
            return
        now = int(time.time() * 1000)
        of = {unquote(p): v for p, v in zip(current.get("path", []), current.get(f"partition.{column}", []))}
        removes = [RemoveAction(path=p, data_change=True, deletion_timestamp=now, size=n,
                                partition_values={column: partition_value(of[unquote(p)])})
                   for p, n in stale]
        try:
            table.create_write_transaction(removes, mode="append", schema=table.schema(),
                                           partition_by=list(table.metadata().partition_columns) or None,
                                           post_commithook_properties=NO_HOOKS)
            table.update_incremental()
            return
        except CommitFailedError:
            if attempt + 1 == COMMIT_ATTEMPTS:
                raise
            time.sleep(0.05 * (attempt + 1))


def commit(root: Location, files: list[WrittenFile], partition_by: list[str], replace: dict | None, overwrite: bool,
           table: DeltaTable | None = None, transaction: tuple[str, int] | None = None) -> tuple[int, DeltaTable, bool]:
    """Driver side: one Delta transaction adding `files` (replacing the partitions in `replace`,
    `{column: value}` or `{column: [values]}`);
    returns the table's new version, the table, and whether the table was loaded again after
    the commit. It was not when the commit is the only version after the snapshot it was made
    from (only_new_version): the table is then that snapshot, and the new version is it plus
    this commit's actions. `table`: the table as just loaded (on object storage each load is
    several requests)."""
    filters = _partition_filters(root, files, replace) if replace else None
    actions = _add_actions(files, int(time.time() * 1000))
    commit = uuid.uuid4().hex
    for attempt in range(COMMIT_ATTEMPTS):
        if table is None or attempt:
            table = DeltaTable(root.uri, storage_options=root.delta_options())
        read_version = table.version()
        try:
            _write_transaction(table, actions, partition_by, filters, overwrite, commit, transaction)
            if only_new_version(root, read_version):
                return read_version + 1, table, False
            version = _committed_version(table, commit, read_version)
            if overwrite and replace:
                _remove_concurrent(root, table, read_version, version, {f.path for f in files}, replace)
            return version, table, True
        except CommitFailedError:
            # another writer committed first (delta-rs retried what it could): an overwrite is
            # made again on the new snapshot, so the partition holds exactly these files; an
            # append of a transaction another writer committed meanwhile is not made again
            if transaction is not None:
                _refuse_committed(root, transaction)
            if attempt + 1 == COMMIT_ATTEMPTS:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


def _partition_filters(root: Location, files: list[WrittenFile], replace: dict) -> list[tuple]:
    """delta-rs' filters of the partitions an overwrite replaces. Files of any other partition
    are removed and the commit refused."""
    col, values = replaced(replace)
    stray = {f.partition_values.get(col) for f in files} - values
    if stray:
        remove_files(root, files)
        raise StorageError(f"overwrite of partition {col}={', '.join(sorted(values))} in {root.uri} got rows for "
                           f"{sorted(map(str, stray))}")
    return [(col, "=", *values)] if len(values) == 1 else [(col, "in", sorted(values))]


def _add_actions(files: list[WrittenFile], now: int) -> list[AddAction]:
    return [
        AddAction(
            path=f.path,
            size=f.size,
            partition_values=f.partition_values,
            modification_time=now,
            data_change=True,
            stats=f.stats or rows_only(f.num_records),
        )
        for f in files
    ]


def _write_transaction(table: DeltaTable, actions: list[AddAction], partition_by: list[str], filters: list | None,
                       overwrite: bool, commit: str, transaction: tuple[str, int] | None) -> None:
    """The commit's one attempt on `table`'s snapshot, named by `commit` in its commitInfo."""
    table.create_write_transaction(
        actions,
        mode="overwrite" if overwrite else "append",
        schema=table.schema(),
        partition_by=partition_by or None,
        partition_filters=filters,
        commit_properties=CommitProperties(
            custom_metadata={COMMIT_KEY: commit},
            app_transactions=[Transaction(*transaction)] if transaction else None),
        post_commithook_properties=NO_HOOKS,
    )


def _refuse_committed(root: Location, transaction: tuple[str, int]) -> None:
    """Raises AlreadyCommitted when the table's log has application transaction `transaction`
    (another writer committed it)."""
    done = DeltaTable(root.uri, storage_options=root.delta_options()).transaction_version(transaction[0])
    if done is not None and done >= transaction[1]:
        raise AlreadyCommitted(f"{root.uri}: transaction {transaction[0]} {transaction[1]} is committed") from None


def commit_compaction(root: Location, removed: list[WrittenFile], added: list[WrittenFile], table: DeltaTable,
                      operation: dict[str, str]) -> int:
    """Driver side: one Delta transaction that replaces files by the files merged from them,
    marked as no data change (readers of the change feed and streaming readers skip it). delta-rs
    checks it against commits since `table`'s snapshot: when one of them removed a file this one
    removes (a full run replaced the partition, another compaction took it), it fails and raises
    `Conflict`; appends in between are kept (their files are not touched). Returns the version."""
    now = int(time.time() * 1000)
    actions = [RemoveAction(path=f.path, data_change=False, deletion_timestamp=now, size=f.size,
                            partition_values=f.partition_values)
               for f in removed]
    actions += [AddAction(path=f.path, size=f.size, partition_values=f.partition_values, modification_time=now,
                          data_change=False, stats=f.stats or rows_only(f.num_records))
                for f in added]
    commit = uuid.uuid4().hex
    read_version = table.version()
    try:
        table.create_write_transaction(actions, mode="append", schema=table.schema(),
                                       partition_by=list(table.metadata().partition_columns) or None,
                                       commit_properties=CommitProperties(custom_metadata={COMMIT_KEY: commit, **operation}),
                                       post_commithook_properties=NO_HOOKS)
    except CommitFailedError as exc:
        raise Conflict(f"{root.uri}: {str(exc).splitlines()[0]}") from None
    return _committed_version(table, commit, read_version)


def commit_statistics(root: Location, table: DeltaTable, files: list[WrittenFile]) -> int:
    """Driver side: one Delta transaction that adds `files` again, each already in `table`'s
    snapshot, with their column statistics and `dataChange: false`, as Databricks' `ANALYZE ...
    COMPUTE DELTA STATISTICS` does: a path added again replaces its add action, no row changes.
    delta-rs checks such a commit as a blind append, so a file another writer removed meanwhile
    (a full run's overwrite, a compaction) would be made live again: those are removed again in
    one more commit (``_remove_concurrent``'s way). Returns the version of the statistics."""
    now = int(time.time() * 1000)
    actions = [AddAction(path=f.path, size=f.size, partition_values=f.partition_values, modification_time=now,
                         data_change=False, stats=f.stats or rows_only(f.num_records)) for f in files]
    commit = uuid.uuid4().hex
    read_version = table.version()
    table.create_write_transaction(actions, mode="append", schema=table.schema(),
                                   partition_by=list(table.metadata().partition_columns) or None,
                                   commit_properties=CommitProperties(custom_metadata={
                                       COMMIT_KEY: commit, "catalake.operation": "statistics"}),
                                   post_commithook_properties=NO_HOOKS)
    version = _committed_version(table, commit, read_version)
    removed = {unquote(a["path"]) for a in _actions_between(root, read_version, version, "remove")} & {f.path for f in files}
    if removed:
        now = int(time.time() * 1000)
        table.create_write_transaction(
            [RemoveAction(path=f.path, data_change=False, deletion_timestamp=now, size=f.size,
                          partition_values=f.partition_values) for f in files if f.path in removed],
            mode="append", schema=table.schema(), partition_by=list(table.metadata().partition_columns) or None,
            post_commithook_properties=NO_HOOKS)
    return version


def _actions_between(root: Location, after: int, before: int, kind: str) -> Iterator[dict]:
    """The `kind` actions ("add", "remove") of the log's versions `after + 1 .. before - 1`."""
    for between in range(after + 1, before):
        with root.filesystem.open_input_stream(f"{root.path}/_delta_log/{between:020d}.json") as log:
            for line in log.read().splitlines():
                action = json.loads(line).get(kind)
                if action:
                    yield action
