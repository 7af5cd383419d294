"""Reading the landing zone (../shared/docs/landing-zone.md): one daily partition -> raw records.

Layout: `<root>/YYYY-MM-DD/` or `<root>/dt=YYYY-MM-DD/` (the same partition); `.jsonl`,
`.jsonl.gz` (JSON lines) and `.json` (one document: an object, or an array = CloudEvents
batch). `_SUCCESS`, `.crc`, dot-files and other names are ignored; a missing folder is an empty
partition.

Records come out as (source_file, source_line, raw): `source_line` is the 1-based line of a JSON
lines file, or the 1-based element of a batch array (1 for a single document). JSON lines files
are read in splits by Spark executors (gzip decoded by Spark, one task per gzip file), with line
numbers rebuilt per split (`numbered_lines`); `.json` documents are read whole. Nothing but a
few counts per file reaches the driver.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

LINE_FILES = (".jsonl", ".jsonl.gz")
DOCUMENT_FILES = (".json",)
FOLDER = re.compile(r"^(?:dt=)?(\d{4}-\d{2}-\d{2})$")

RECORDS = StructType([
    StructField("source_file", StringType(), False),
    StructField("source_line", LongType(), False),
    StructField("raw", StringType(), True),
])


def partition_folders(root: Path, day: dt.date) -> list[Path]:
    names = (day.isoformat(), f"dt={day.isoformat()}")
    return [root / n for n in names if (root / n).is_dir()]


def is_landed_file(path: Path) -> bool:
    name = path.name
    if name.startswith((".", "_")) or name.endswith(".crc"):
        return False
    return name.endswith(LINE_FILES + DOCUMENT_FILES)


def partition_files(root: Path, day: dt.date) -> list[Path]:
    """The landed files of one day, sorted (subfolders included)."""
    files = []
    for folder in partition_folders(Path(root), day):
        files += [p for p in folder.rglob("*") if p.is_file() and is_landed_file(p)
                  and not any(part.startswith((".", "_")) for part in p.relative_to(folder).parts[:-1])]
    return sorted(files)


def landing_partitions(root: Path) -> dict[str, str]:
    """Every partition folder of the landing root -> fingerprint of its files (names, sizes, mtimes)."""
    root = Path(root)
    out: dict[str, str] = {}
    if not root.is_dir():
        return out
    for folder in sorted(root.iterdir()):
        match = FOLDER.match(folder.name)
        if not (match and folder.is_dir()):
            continue
        day = dt.date.fromisoformat(match.group(1))
        digest = hashlib.sha256()
        for f in partition_files(root, day):
            stat = f.stat()
            digest.update(f"{f}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
        out[day.isoformat()] = digest.hexdigest()
    return out


def numbered_lines(spark: SparkSession, paths: list[str]) -> DataFrame:
    """(source_file, source_line, raw) of JSON lines files, read in splits like any text file
    (a large file is read by several tasks and never held whole in memory).

    Spark gives no line numbers, so they are rebuilt: within one split the rows keep their order,
    and `monotonically_increasing_id` numbers them consecutively in their partition; a first,
    cheap query counts the lines of every split (a few rows per file, to the driver), and each
    split's first line number is the sum of the splits before it in the same file."""
    text = spark.read.text(paths).select(
        F.input_file_name().alias("source_file"),
        F.expr("input_file_block_start()").alias("block"),
        F.monotonically_increasing_id().alias("pos"),
        F.col("value").alias("raw"),
    )
    blocks = text.groupBy("source_file", "block").agg(F.min("pos").alias("first"), F.count(F.lit(1)).alias("lines")).collect()
    starts, line = [], {}
    for b in sorted(blocks, key=lambda b: (b["source_file"], b["block"])):
        begin = line.get(b["source_file"], 1)
        starts.append((b["source_file"], b["block"], b["first"], begin))
        line[b["source_file"]] = begin + b["lines"]
    offsets = spark.createDataFrame(starts, "source_file string, block long, first long, begin long")
    return text.join(F.broadcast(offsets), ["source_file", "block"]).select(
        "source_file",
        (F.col("begin") + F.col("pos") - F.col("first")).alias("source_line"),
        F.regexp_replace("raw", "\r$", "").alias("raw"),
    ).where(F.trim("raw") != "")


def read_records(spark: SparkSession, files: list[Path]) -> DataFrame:
    """(source_file, source_line, raw) for every record of `files`."""
    lines = [str(f) for f in files if f.name.endswith(LINE_FILES)]
    docs = [str(f) for f in files if f.name.endswith(DOCUMENT_FILES)]
    parts = []
    if lines:
        parts.append(numbered_lines(spark, lines))
    if docs:
        whole = spark.read.text(docs, wholetext=True).select(
            F.input_file_name().alias("source_file"), F.col("value").alias("raw")
        )
        parsed = whole.withColumn("doc", F.expr("try_parse_json(raw)"))
        elements = F.expr("try_variant_get(doc, '$', 'array<variant>')")
        batch = parsed.where(elements.isNotNull()).select(
            "source_file", F.posexplode(elements).alias("pos", "element")
        ).select(
            "source_file", (F.col("pos") + 1).cast("long").alias("source_line"), F.to_json("element").alias("raw")
        )
        single = parsed.where(elements.isNull() & (F.trim("raw") != "")).select(
            "source_file", F.lit(1).cast("long").alias("source_line"), "raw"
        )
        parts += [batch, single]
    if not parts:
        return spark.createDataFrame([], RECORDS)
    out = parts[0]
    for part in parts[1:]:
        out = out.unionByName(part)
    # input_file_name() is a URI; lineage shows plain paths
    return out.withColumn("source_file", F.regexp_replace("source_file", "^file:(//)?", ""))
