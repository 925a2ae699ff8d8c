"""Every binlog event type MariaDB and MySQL write, and what the reader does with each.

Nothing is passed over by default. A type the reader reads is READ; a type it may pass
over is in PASSED_OVER with the reason it changes no row; any other type stops the
pipeline, naming it and its position (binlog_format.UnknownEvent). A server that starts
writing a new kind of event must never look like a quiet source.

Numbers and names as MariaDB's log_event.h and MySQL's binlog_event.h give them.
"""

from __future__ import annotations

NAMES = {
    1: "Start_v3",
    2: "Query",
    3: "Stop",
    4: "Rotate",
    5: "Intvar",
    6: "Load",
    7: "Slave",
    8: "Create_file",
    9: "Append_block",
    10: "Exec_load",
    11: "Delete_file",
    12: "New_load",
    13: "RAND",
    14: "User var",
    15: "Format_desc",
    16: "Xid",
    17: "Begin_load_query",
    18: "Execute_load_query",
    19: "Table_map",
    20: "Write_rows_event_old",
    21: "Update_rows_event_old",
    22: "Delete_rows_event_old",
    23: "Write_rows_v1",
    24: "Update_rows_v1",
    25: "Delete_rows_v1",
    26: "Incident",
    27: "Heartbeat",
    28: "Ignorable",
    29: "Rows_query",
    30: "Write_rows",
    31: "Update_rows",
    32: "Delete_rows",
    33: "Gtid (MySQL)",
    34: "Anonymous_Gtid",
    35: "Previous_gtids",
    36: "Transaction_context",
    37: "View_change",
    38: "XA_prepare",
    39: "Partial_update_rows",
    40: "Transaction_payload",
    41: "Heartbeat_v2",
    42: "Gtid_tagged",
    160: "Annotate_rows",
    161: "Binlog_checkpoint",
    162: "Gtid",
    163: "Gtid_list",
    164: "Start_encryption",
    165: "Query_compressed",
    166: "Write_rows_compressed_v1",
    167: "Update_rows_compressed_v1",
    168: "Delete_rows_compressed_v1",
    169: "Write_rows_compressed",
    170: "Update_rows_compressed",
    171: "Delete_rows_compressed",
}

QUERY, ROTATE, FORMAT_DESCRIPTION, TABLE_MAP, EXECUTE_LOAD_QUERY, TRANSACTION_PAYLOAD = 2, 4, 15, 19, 18, 40
ROWS = frozenset({23, 24, 25, 30, 31, 32})
QUERY_COMPRESSED = 165
ROWS_COMPRESSED = {166: 23, 167: 24, 168: 25, 169: 30, 170: 31, 171: 32}  # MariaDB's: each to its plain twin

# What the reader reads (compressed events as their plain twins, Execute_load_query as a
# Query, a transaction payload as the events it holds).
_XID, _HEARTBEAT, _MYSQL_GTID, _XA_PREPARE, _MYSQL_GTID_TAGGED, _MARIADB_GTID = 16, 27, 33, 38, 42, 162
READ = frozenset(
    {QUERY, ROTATE, FORMAT_DESCRIPTION, _XID, TABLE_MAP, _HEARTBEAT, _MYSQL_GTID, _XA_PREPARE, _MYSQL_GTID_TAGGED}
    | {_MARIADB_GTID}
    | {QUERY_COMPRESSED, *ROWS_COMPRESSED, EXECUTE_LOAD_QUERY, TRANSACTION_PAYLOAD}
    | ROWS
)

PASSED_OVER = {
    1: "an old server's file header",
    3: "the server stopped; the next file goes on",
    5: "a value for the statement that follows it, which the reader judges",
    13: "a value for the statement that follows it, which the reader judges",
    14: "a value for the statement that follows it, which the reader judges",
    17: "a block of a file LOAD DATA loads; the Execute_load_query event after it is judged",
    28: "the server marks it as safe to ignore",
    29: "the text of the statement whose rows events follow",
    34: "a transaction's start on a server without GTIDs",
    35: "the GTIDs of earlier files",
    36: "group replication's certification data",
    37: "a group replication membership change",
    41: "a heartbeat",
    160: "the text of the statement whose rows events follow",
    161: "which files crash recovery needs",
    163: "the GTIDs of earlier files",
    164: "the server decrypts what it sends to replicas",
}


def name(event_type: int) -> str:
    return NAMES.get(event_type, f"unknown type {event_type}")


# What the reader takes as the server sends it: neither rewritten nor refused (the rest go
# through binlog_format.BinlogFormat).
AS_SENT = (READ | PASSED_OVER.keys()) - {
    FORMAT_DESCRIPTION,
    ROTATE,
    TABLE_MAP,
    QUERY_COMPRESSED,
    *ROWS_COMPRESSED,
    EXECUTE_LOAD_QUERY,
    TRANSACTION_PAYLOAD,
}
