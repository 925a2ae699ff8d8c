"""Sinks: where changelog rows go (values, jdbc, parquet)."""
