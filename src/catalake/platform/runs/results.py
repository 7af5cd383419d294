"""What a run of a day reports: the tasks' summaries merged (`Merged`), the result of a full run
or an increment (`PartitionResult`), the `Engine` that ran it, and each table's expectations in the partition
(`TableQuality`, from the tasks' quality tallies)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..quality.evaluation import Counts, ExpectationResult, merge_tallies, results
from ..quality.expectations import suite_expectations
from ..warehouse.files import PartFile
from ..warehouse.message_tables import MessageTable


@dataclass(frozen=True)
class Engine:
    """What classified a run: Spark (its application and UI), or local Python processes."""

    name: str  # "spark", "local", or "none" (nothing was read)
    master: str | None = None
    app_id: str | None = None
    ui: str | None = None

    def describe(self) -> str:
        if self.name == "none":
            return "no engine (nothing to read)"
        if self.name == "local":
            return "local Python processes (no Spark job)"
        return f"Spark {self.master} (application {self.app_id}" + (f", Spark UI {self.ui})" if self.ui else ")")

    def metadata(self) -> dict[str, str]:
        """The engine, and for Spark its master, application id and UI address (what is known)."""
        return {k: v for k, v in {"engine": self.name, "spark_master": self.master, "spark_application": self.app_id,
                                  "spark_ui": self.ui}.items() if v}


LOCAL, NOTHING = Engine("local"), Engine("none")


@dataclass
class TableQuality:
    """A table's expectations in one partition, from the classification pass."""

    table: MessageTable
    results: list[ExpectationResult]
    types: Counts  # the classifier's `type` rule: payload values of the wrong JSON kind
    rejected: int  # records dead-lettered for breaking a rule (schema_violation, malformed_payload)


@dataclass
class PartitionResult:
    partition: str
    records: int
    tables: dict[str, int] = field(default_factory=dict)  # message xid -> rows written
    deadletter: dict[str, int] = field(default_factory=dict)  # reason -> rows
    written: list[str] = field(default_factory=list)  # warehouse table names overwritten
    quality: dict[str, TableQuality] = field(default_factory=dict)  # table name -> expectations
    files: dict[str, int] = field(default_factory=dict)  # landed file -> records read
    versions: dict[str, int] = field(default_factory=dict)  # table name -> Delta version committed
    stored: dict[str, int | None] = field(default_factory=dict)  # table name -> the day's rows after its commit
    skipped: list[str] = field(default_factory=list)  # landing paths not read (symbolic links)
    ignored: list[str] = field(default_factory=list)  # landing paths that are not landed files
    landing: str = "read"  # "missing": no folder of the day; "empty": its folders hold no file
    tasks: int = 0
    seconds: dict[str, float] = field(default_factory=dict)  # phase -> wall seconds (listing, job, commits)
    kind: str = "full"  # or "incremental" (classify_increment)
    fallback: str | None = None  # why an incremental run was a full run
    read: dict = field(default_factory=dict)  # files and bytes the run read
    rows_added: dict[str, int] = field(default_factory=dict)  # table name -> rows an increment appended
    day_records: int | None = None  # records the day's runs read, all increments together
    engine: Engine = NOTHING  # what classified the records
    partition_files: dict[str, int] = field(default_factory=dict)  # table name -> the day's files after the commit
    staged: dict[str, int] = field(default_factory=dict)  # table name -> rows written, not committed yet (cadence.py)
    freshness: dict[str, "Freshness"] = field(default_factory=dict)  # table name -> its lag after the increment
    held: set[str] | None = None  # every table holding rows of the day, when the day's ledger knows them
    tips: dict[str, dict] = field(default_factory=dict)  # table name -> its tip after a full run (appends.Tip)

    @property
    def records_of_day(self) -> int:
        return self.records if self.day_records is None else self.day_records

    def as_json(self) -> dict:
        out = {"partition": self.partition, "landing": self.landing, "records": self.records,
               "tables": self.tables, "deadletter": self.deadletter,
               "engine": self.engine.name}
        if self.kind == "incremental" or self.fallback:
            out.update(kind=self.kind, fallback=self.fallback, records_of_day=self.records_of_day, read=self.read)
        return out


@dataclass(frozen=True)
class Freshness:
    """A table's lag after an increment (cadence.py): the age of its oldest landed record not
    yet committed (0: none), the oldest age among the records this increment committed, and the
    table's target."""

    lag: float
    committed_lag: float | None
    target: float
    staged_rows: int = 0
    staged_files: int = 0
    due: str | None = None  # why the increment committed the table: "size", "freshness", "flush"

    @property
    def fresh(self) -> bool:
        return self.lag <= self.target and (self.committed_lag is None or self.committed_lag <= self.target)


@dataclass
class Merged:
    """The tasks' summaries of one run added up, each task counted once."""

    records: int = 0
    tasks: int = 0
    written: dict[str, list[PartFile]] = field(default_factory=dict)  # table -> Parquet files written
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows
    tallies: dict[str, list] = field(default_factory=dict)  # table -> the tasks' quality tallies
    deadletter: dict[str, int] = field(default_factory=dict)  # reason -> rows
    per_file: dict[str, int] = field(default_factory=dict)  # landed file -> records read
    moved: dict[str, int] = field(default_factory=dict)  # replay: "<old reason> -> <table>" -> rows

    @classmethod
    def of(cls, summaries: list[dict]) -> "Merged":
        merged = cls(tasks=len(summaries))
        for s in summaries:
            merged.records += s["records"]
            for name, files in s["files"].items():
                merged.written.setdefault(name, []).extend(PartFile(*f) for f in files)
            for name, tally in s["tallies"].items():
                merged.tallies.setdefault(name, []).append(tally)
            for counts, into in ((s["rows"], merged.rows), (s["deadletter"], merged.deadletter), (s["per_file"], merged.per_file),
                                 (s["moved"], merged.moved)):
                for key, n in counts.items():
                    into[key] = into.get(key, 0) + n
        return merged

    def kept(self) -> dict:
        """What the day's ledger keeps of the run (ledger.py): counts and quality tallies."""
        return {"records": self.records, "rows": self.rows, "deadletter": self.deadletter, "tallies": self.tallies}


def table_quality(table: MessageTable, tallies: list, strict: bool) -> TableQuality:
    """A table's expectations in a partition, from the tasks' tallies merged."""
    expectations = suite_expectations(table, strict)
    counts, types, rejected = merge_tallies(tallies, len(expectations))
    return TableQuality(table, results(expectations, counts), types, rejected)
