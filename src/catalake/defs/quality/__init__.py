"""Data quality: the `expectations` checks, the suites and data docs assets, `validate_job`."""
