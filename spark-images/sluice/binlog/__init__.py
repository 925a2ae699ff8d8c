"""Reading the binlog: row changes, the binlog split and the emit rule."""
