"""A Delta snapshot's Parquet files on object storage, read by Spark's executors through pyarrow.

Spark reads `s3://` only through Hadoop's `s3a` jars, which cannot be installed here (and need
not be on a cluster that has them): this Python data source (Spark 4's Data Source API) gives
Spark the files of one snapshot, one input partition per file, and each executor reads its files
with pyarrow and the store's settings the driver had (they travel with the table's
`uris.Location`), adding the partition columns
Delta keeps in its log. Only the list of files passes through the driver.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ..uris import Location

NAME = "catalake_files"


class FilesPartition(InputPartition):
    def __init__(self, path: str, values: dict):
        super().__init__(path)
        self.path = path  # as the Delta log names it
        self.values = values


class FilesSource(DataSource):
    """Options: `schema` (Spark schema JSON), `table` (the table's location) and `files` (JSON list of
    [path as the Delta log names it, {partition column: value}])."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return StructType.fromJson(json.loads(self.options["schema"]))

    def reader(self, schema: StructType) -> DataSourceReader:
        return FilesReader(schema, Location.of(self.options["table"]), json.loads(self.options["files"]))


class FilesReader(DataSourceReader):
    def __init__(self, schema: StructType, table: Location, files: list):
        from pyspark.sql.pandas.types import to_arrow_schema

        self.arrow = to_arrow_schema(schema, timestamp_utc=True)
        self.table = table  # travels pickled with the reader, the driver's storage settings with it
        self.files = files

    def partitions(self) -> list[InputPartition]:
        return [FilesPartition(path, values) for path, values in self.files]

    def read(self, partition: FilesPartition):
        # a path of the log is relative to the table, unless it is a URI (a shallow clone's files)
        file = Location.of(partition.path) if "://" in partition.path else self.table.child(partition.path)
        parquet = pq.ParquetFile(file.filesystem.open_input_file(file.path))
        stored = [f for f in self.arrow if f.name not in partition.values]
        for batch in parquet.iter_batches(batch_size=8192, columns=[f.name for f in stored]):
            columns = []
            for field in self.arrow:
                if field.name in partition.values:
                    columns.append(pa.array([partition.values[field.name]] * batch.num_rows, pa.string()).cast(field.type))
                else:
                    columns.append(batch.column(field.name).cast(field.type))
            yield pa.RecordBatch.from_arrays(columns, schema=self.arrow)


def register(spark) -> None:
    """Make the source known to the session (once per session)."""
    spark.dataSource.register(FilesSource)
