"""Runs of a day: the plan, the per-record classifier and a task's files on executors, the Spark
and local tasks, full runs and increments with their ledger and results, crash recovery, replays
of dead letters and drift."""
