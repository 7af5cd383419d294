"""Compaction and vacuum: `maintenance_job`, its nightly schedule and the compaction sensor."""
