"""The warehouse: Delta tables (the store, its backends and commit protocol, the Parquet files
executors write), the message tables and their evolution, the dead-letter table, the catalog as a
table, and the names and dbt sources analysts read them by."""
