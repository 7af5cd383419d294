"""Data quality: the expectations a definition implies (one function per rule), their evaluation
on every record, the Great Expectations suites, GX's validation of stored rows and the data docs."""
