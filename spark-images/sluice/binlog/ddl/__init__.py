"""DDL in the binlog into schema change events: the parser (ALTER clauses, column
definitions, MySQL's dialect of names and types), online schema changes, and the DDL reader
that follows tables through them."""
