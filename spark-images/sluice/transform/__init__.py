"""Flink CDC's `transform` block: each source table's rows projected, computed and filtered
before they reach their target table."""
