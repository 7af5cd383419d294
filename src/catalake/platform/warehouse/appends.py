"""A table's append at a version the writer knows: one `HEAD` and one conditional `PUT` (issue 65).

delta-rs (1.6) loads a table's log before each commit, reading every JSON entry since the last
checkpoint twice, and after the commit lists the log and reads its own entry back: 28 requests
a table commit on object storage (benchmarks/commits.py --s3). A blind append needs none of that
when the writer knows the table's newest version and what it is. The day's ledger keeps, per
table, the `Tip` its last commit left: the version N, the ETag of entry N, and what was checked
of the table at N (its schema's key, a protocol this writer honours). An append then:

1. `HEAD`s entry N: the same ETag says the table was not made again since (a new table's entry
   N is another object);
2. creates entry N+1 only if no entry N+1 exists (S3's `If-None-Match: *`, an exclusive create on
   disk: Delta's own mutual exclusion between writers on object storage). The create succeeding
   proves N was the newest version, so the append, which read nothing of the table, conflicts with
   no commit.

Any doubt sends the commit through delta-rs as before (commit.py, which checks it against every
commit since its snapshot): another ETag, an entry N+1 there already (a full run, a compaction,
another increment committed), a schema that changed. Nothing else reads or lists the log.

Checkpoints are off every commit's path (commit.py turns delta-rs' post-commit hooks off): a table
is checkpointed on a cadence of its own once its tip is as many commits past its last checkpoint
as the table's `delta.checkpointInterval` says (maintenance/checkpoints.py), and by `catalake
maintain`, which also removes expired log entries.

The entry is written here, not by delta-rs, because delta-rs' Python API has no commit at a
known version; it holds the actions delta-rs itself writes for an append (Delta's PROTOCOL.md:
`commitInfo`, `txn`, `add`), and only tables whose protocol asks nothing more of a blind append
(`honoured`) take this path.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import asdict, dataclass, replace
from typing import Sequence
from urllib.parse import quote

from deltalake import DeltaTable

from ..uris import Location
from .commit import COMMIT_KEY
from .files import WrittenFile
from .statistics import rows_only

CHECKPOINT_INTERVAL = 100  # Delta's default delta.checkpointInterval
# writer features that ask nothing of a blind append of files in the table's schema
HONOURED_FEATURES = frozenset({"appendOnly", "timestampNtz", "changeDataFeed"})
CLIENT = "catalake"


@dataclass(frozen=True)
class Tip:
    """What a writer knows of a table's newest version: its number, its log entry's ETag, the
    key of the schema it was checked against, the rows and files of the day's partition then,
    and the table's checkpoint interval."""

    version: int
    tag: str
    schema: str
    rows: int | None
    files: int
    checkpoint_interval: int = CHECKPOINT_INTERVAL

    def as_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, value: dict) -> "Tip":
        return cls(**value)


def schema_key(schema) -> str:
    """A table schema's key (a Spark `StructType`): a tip's schema is compared with it."""
    return hashlib.sha256(schema.json().encode()).hexdigest()[:16]


def entry_path(root: Location, table: Location, version: int) -> str:
    """Log entry `version` of `table`, as a path in `root`'s object store."""
    return f"{root.relative(table.uri)}/_delta_log/{version:020d}.json"


def honoured(table: DeltaTable) -> int | None:
    """The table's checkpoint interval when a blind append written here is all its protocol
    asks (no invariants or check constraints to enforce, no column mapping, row tracking or
    in-commit timestamps); else None."""
    protocol = table.protocol()
    if protocol.min_writer_version > 2 and (
            protocol.min_writer_version != 7 or not set(protocol.writer_features or ()) <= HONOURED_FEATURES):
        return None
    configuration = table.metadata().configuration
    if "delta.invariants" in table.schema().to_json() or any(k.startswith("delta.constraints.") for k in configuration):
        return None
    try:
        return max(1, int(configuration.get("delta.checkpointInterval") or CHECKPOINT_INTERVAL))
    except ValueError:
        return CHECKPOINT_INTERVAL


def tip_of(root: Location, table_location: Location, version: int, schema: str, rows: int | None, files: int,
           checkpoint_interval: int) -> Tip | None:
    """The tip a commit through delta-rs left, of a table whose protocol is `honoured`: entry
    `version`'s ETag, one `HEAD`."""
    import obstore

    tag = obstore.head(root.object_store, entry_path(root, table_location, version))["e_tag"]
    return Tip(version, tag, schema, rows, files, checkpoint_interval) if tag else None


def append(root: Location, table_location: Location, tip: Tip, files: Sequence[WrittenFile],
           transaction: tuple[str, int] | None, commit_key: str) -> Tip | None:
    """Append `files` as version `tip.version + 1` (with application transaction `transaction`):
    the new tip, or None when the table is not as `tip` says (then nothing was written)."""
    import obstore
    from obstore.exceptions import AlreadyExistsError, NotFoundError

    store = root.object_store
    try:
        if obstore.head(store, entry_path(root, table_location, tip.version))["e_tag"] != tip.tag:
            return None
    except (FileNotFoundError, NotFoundError):  # obstore raises either, by store
        return None
    entry = log_entry(files, transaction, commit_key, tip.version)
    try:
        made = obstore.put(store, entry_path(root, table_location, tip.version + 1), entry, mode="create")
    except AlreadyExistsError:
        return None
    added = [f.num_records for f in files]
    rows = None if tip.rows is None or None in added else tip.rows + sum(added)
    return replace(tip, version=tip.version + 1, tag=made["e_tag"] or "", rows=rows, files=tip.files + len(files))


def log_entry(files: Sequence[WrittenFile], transaction: tuple[str, int] | None, commit_key: str,
              read_version: int) -> bytes:
    """A blind append's commit file: `commitInfo`, the application transaction, one `add` per
    file (paths percent-encoded as delta-rs writes them, each with its column statistics)."""
    now = int(time.time() * 1000)
    actions: list[dict] = [{"commitInfo": {
        "timestamp": now, "operation": "WRITE", "operationParameters": {"mode": "Append"},
        "readVersion": read_version, "isBlindAppend": True, "engineInfo": CLIENT, "clientVersion": CLIENT,
        COMMIT_KEY: commit_key}}]
    if transaction is not None:
        actions.append({"txn": {"appId": transaction[0], "version": transaction[1], "lastUpdated": now}})
    actions += [{"add": {"path": quote(f.path, safe="/="), "partitionValues": f.partition_values, "size": f.size,
                         "modificationTime": now, "dataChange": True,
                         "stats": f.stats or rows_only(f.num_records)}} for f in files]
    return b"".join(json.dumps(action, separators=(",", ":")).encode() + b"\n" for action in actions)


def new_commit_key() -> str:
    return uuid.uuid4().hex
