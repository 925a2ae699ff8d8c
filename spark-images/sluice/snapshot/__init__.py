"""The lock-free parallel snapshot (DBLog watermarks, as in Flink CDC 2.x)."""
