"""The changelog contract between the readers and the sinks: row kinds, change rows."""
