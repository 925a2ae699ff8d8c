"""Rows events into rows: column readers, the row image decoder (its loop in C), partial
images made whole, system-versioned tables, and the rows events read from the stream."""
