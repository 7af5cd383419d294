"""Helpers the tests share, imported as `support.<module>` (tests/ is on pytest's pythonpath)."""
