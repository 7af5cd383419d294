"""A day's classification: the events multi-asset, its job, the nightly schedule and the
landing sensor."""
