"""The binlog as the server sends it: the replication connection's packets, each file's
format (checksums, compressed events, transaction payloads), event types and the event
stream. Knows nothing of tables."""
