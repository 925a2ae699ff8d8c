"""Flink CDC's `route` block: which target table each source table is written into."""
