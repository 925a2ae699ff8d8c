"""Every option a pipeline definition takes, by block (source, sink, lakehouse sinks,
pipeline): its type, default, allowed values and check. `sluice run` checks definitions
against these tables and the operator builds the CdcPipeline CRD's schema from them, so
the two cannot drift."""

from __future__ import annotations

from collections.abc import Mapping

from sluice.pipeline.jdbc_targets import example_urls
from sluice.pipeline.options import (
    Option,
    parsed_by,
    port_number,
    positive,
    ratio,
    zero_date_rule,
)
from sluice.pipeline.options import duration as duration_check
from sluice.pipeline.partition_key import partition_key_check
from sluice.pipeline.schema_change_types import event_types
from sluice.source.time_zone import parse_zone_id
from sluice.source.tls import TLS_MODES

STARTUP_MODES = (
    "initial",
    "snapshot",
    "latest-offset",
    "earliest-offset",
    "specific-offset",
    "timestamp",
)
SINK_TYPES = ("values", "jdbc", "parquet", "iceberg", "delta")
# The catalogs pyiceberg has, by Flink CDC's `catalog.properties.type` (its `hadoop` has none).
ICEBERG_CATALOG_TYPES = ("rest", "sql", "hive", "glue", "dynamodb", "bigquery", "in-memory")


def _metadata_list(text: str) -> str | None:
    unknown = [name for name in (n.strip() for n in text.split(",")) if name and name != "op_ts"]
    return f"'{unknown[0]}' is not a metadata column of the MySQL source (it has op_ts)" if unknown else None


def tls_options(connections: str, host: str) -> list[Option]:
    """ssl-mode, ssl-ca, ssl-cert, ssl-key (source/tls.py), for `connections` to `host`."""
    return [
        Option(
            "ssl-mode",
            str,
            "preferred",
            choices=TLS_MODES,
            description=f"TLS of {connections}: disabled, preferred (TLS when the server offers it), required (TLS "
            f"or no connection), verify_ca (the server's certificate signed by ssl-ca), verify_identity (and naming "
            f"{host})",
        ),
        Option(
            "ssl-ca",
            str,
            "",
            description="PEM file of the CAs the server's certificate is verified against (default: the system's)",
        ),
        Option(
            "ssl-cert", str, "", description="PEM file of a client certificate to present (ssl-mode required or more)"
        ),
        Option("ssl-key", str, "", description="PEM file of the client certificate's key, if not in ssl-cert's"),
    ]


SOURCE_OPTIONS = [
    Option(
        "type",
        str,
        choices=("mysql",),
        description="the source connector: mysql (MySQL 8.0.14+ and MariaDB 10.5+, which log full row metadata)",
    ),
    Option("hostname", str, description="the source server's host name or address"),
    Option("port", int, 3306, check=port_number, description="the source server's port"),
    Option(
        "username",
        str,
        description="the user Sluice connects as: REPLICATION SLAVE, BINLOG MONITOR (REPLICATION CLIENT before "
        "MariaDB 10.5 and on MySQL) and SELECT on the captured tables",
    ),
    Option(
        "password",
        str,
        "",
        description="the user's password: ${NAME} reads it from the environment (on Kubernetes: passwordSecretRef)",
    ),
    Option(
        "tables",
        str,
        description="the captured tables: comma-separated db.table regexes (the first . parts database and table; "
        "\\. is "
        "the regex's any character, as in Flink CDC)",
    ),
    Option("tables.exclude", str, "", description="tables left out of those `tables` selects, as regexes on db.table"),
    Option(
        "server-id",
        str,
        "5400-5499",
        description="replication server ids, one or a range (5400-5404): the binlog reader takes the first, "
        "verification and re-reads the next",
    ),
    Option(
        "server-time-zone",
        str,
        "UTC",
        check=parsed_by(parse_zone_id),
        description="the zone the values sink shows TIMESTAMPs in (a Java ZoneId); TIMESTAMPs reach every target as "
        "the same instant whatever it says",
    ),
    Option(
        "scan.startup.mode",
        str,
        "initial",
        choices=STARTUP_MODES,
        description="where a new pipeline starts: a snapshot then the binlog (initial), a snapshot alone, or the "
        "binlog from now, its oldest file, a position or a time",
    ),
    Option("scan.startup.specific-offset.file", str, "", description="specific-offset: the binlog file to start in"),
    Option(
        "scan.startup.specific-offset.pos",
        int,
        4,
        check=positive,
        description="specific-offset: the position in that file",
    ),
    Option(
        "scan.startup.specific-offset.gtid-set",
        str,
        "",
        description="specific-offset: start after this GTID set (MariaDB 0-1-42, MySQL uuid:1-42) instead of a file "
        "and position",
    ),
    Option(
        "scan.startup.timestamp-millis",
        int,
        0,
        description="timestamp: start at the first binlog event of this second (milliseconds since the epoch)",
    ),
    Option(
        "scan.incremental.snapshot.chunk.size",
        int,
        8096,
        check=positive,
        description="rows a snapshot chunk (and a verification range) holds at most",
    ),
    Option(
        "scan.incremental.snapshot.chunk.key-column",
        str,
        "",
        description="the column a table's chunks are ranges of, per table (db.tbl:col;db.other:col2); default: the "
        "first primary-key column",
    ),
    Option(
        "scan.snapshot.fetch.size",
        int,
        1024,
        check=positive,
        description="rows fetched from the source at a time while a chunk streams",
    ),
    Option(
        "scan.snapshot.read-on-driver",
        bool,
        True,
        description="the driver reads snapshot splits while Spark starts (false: executors read every split)",
    ),
    Option(
        "treat-tinyint1-as-boolean.enabled",
        bool,
        True,
        description="transforms read TINYINT(1) columns as BOOLEAN (0 false, else true), as Flink CDC's source "
        "does; the column itself reaches its target as it is",
    ),
    Option(
        "scan.parse.online.schema.changes.enabled",
        bool,
        False,
        description="read a gh-ost or pt-online-schema-change migration as one schema change at its cut-over",
    ),
    Option(
        "scan.newly-added-table.enabled",
        bool,
        False,
        description="taken as Flink CDC's: a table a widened `tables` list adds is snapshotted, then streamed (Sluice "
        "does so whatever the value: a table the list selects is captured)",
    ),
    Option(
        "scan.binlog.newly-added-table.enabled",
        bool,
        False,
        description="taken as Flink CDC's: a table created while streaming that `tables` selects is read from the "
        "binlog (Sluice does so whatever the value)",
    ),
    Option(
        "metadata.list",
        str,
        "",
        check=_metadata_list,
        description="Flink CDC's metadata columns to read: op_ts (transforms may always use it in Sluice)",
    ),
    Option(
        "heartbeat.interval",
        str,
        "30s",
        check=duration_check,
        description="how often the server sends a heartbeat on a quiet binlog: the reader knows the connection is "
        "alive and moves its position",
    ),
    Option(
        "connect.timeout", str, "30s", check=duration_check, description="how long opening a source connection may take"
    ),
    Option(
        "connect.max-retries",
        int,
        3,
        check=lambda v: None if v >= 0 else "must be >= 0",
        description="how often opening a connection at start is tried again before the run fails",
    ),
    Option(
        "connect.reconnect.timeout",
        str,
        "5min",
        check=duration_check,
        description="how long the binlog reader keeps reconnecting a lost connection before the pipeline fails",
    ),
    *tls_options("every source connection, the binlog's and the snapshot readers' included", "hostname"),
]


def _schema_change_types(names: tuple[str, ...]) -> str | None:
    try:
        event_types(names)
    except ValueError as exc:
        return str(exc)
    return None


SINK_TYPE = Option("type", str, description="the sink: " + ", ".join(SINK_TYPES))


def sink_name(default: str) -> Option:
    return Option("name", str, default, description="the sink's name, as logs and messages show it")


# Which schema change event types the sink's metadata applier is given (Flink CDC's options).
SCHEMA_CHANGE_FILTERS = [
    Option(
        "include.schema.changes",
        tuple,
        (),
        check=_schema_change_types,
        description="schema change types the sink is given (Flink CDC's names and families: add.column, drop, "
        "column, table, ...); default: all",
    ),
    Option(
        "exclude.schema.changes",
        tuple,
        (),
        check=_schema_change_types,
        description="schema change types the sink is not given, after include.schema.changes",
    ),
]

ZERO_DATE_OPTION = Option(
    "sink.zero-date",
    str,
    "",
    check=zero_date_rule,
    description="what a zero or partial date ('0000-00-00', '2020-00-15') becomes where the target has no such "
    "date: empty for NULL where nullable and the epoch where NOT NULL, 'fail', or a date such as 1900-01-01 "
    "(a MySQL-dialect target keeps it)",
)

SINK_OPTIONS = {
    "values": [
        SINK_TYPE,
        sink_name("values"),
        *SCHEMA_CHANGE_FILTERS,
    ],
    "jdbc": [
        SINK_TYPE,
        sink_name("jdbc"),
        *SCHEMA_CHANGE_FILTERS,
        Option(
            "url",
            str,
            description=f"the target database: {example_urls()} (jdbc: prefixes accepted)",
        ),
        *tls_options("the target's connections", "the url's host"),
        Option(
            "username", str, description="the target user: creates the target's tables and sluice_meta, and writes them"
        ),
        Option(
            "password",
            str,
            "",
            description="the target user's password: ${NAME} reads it from the environment (on Kubernetes: "
            "passwordSecretRef)",
        ),
        Option(
            "sink.batch-size",
            int,
            5000,
            check=positive,
            description="changes a binlog batch commits at most (it grows to ten times this while the target is "
            "still committing the one before)",
        ),
        Option(
            "sink.nul-replacement",
            str,
            "",
            description="what a NUL character in a string becomes in PostgreSQL, whose text cannot hold it "
            "(default: removed; a MySQL-dialect target keeps it)",
        ),
        ZERO_DATE_OPTION,
    ],
    "parquet": [
        SINK_TYPE,
        sink_name("parquet"),
        *SCHEMA_CHANGE_FILTERS,
        Option("path", str, description="directory of the changelog; a local path or a mounted volume"),
        ZERO_DATE_OPTION,
    ],
}


def _iceberg_catalog(properties: Mapping[str, str]) -> str | None:
    kind = properties.get("type", "")
    if not kind and "uri" not in properties:
        return "set catalog.properties.type (one of " + ", ".join(ICEBERG_CATALOG_TYPES) + ") and its uri"
    if kind and kind not in ICEBERG_CATALOG_TYPES:
        return (
            f"catalog type '{kind}' is not one pyiceberg has; use one of {', '.join(ICEBERG_CATALOG_TYPES)} "
            "(a file-system warehouse: type sql with a SQLite or PostgreSQL uri)"
        )
    return None


COMMIT_INTERVAL = Option(
    "sink.commit.interval",
    str,
    "5s",
    check=duration_check,
    description="how long changes gather before one table commit: each commit adds files (a shorter interval "
    "means less latency and more, smaller files, which sink.maintenance compacts)",
)
LAKEHOUSE_OPTIONS = [
    SINK_TYPE,
    *SCHEMA_CHANGE_FILTERS,
    Option("table.properties.", dict, {}, description="properties of the tables Sluice creates"),
    Option(
        "partition.key",
        str,
        "",
        check=partition_key_check,
        description="partition fields per table, as Flink CDC writes them: db.tbl:col,bucket[16](id);db.other:"
        "month(created) (Iceberg's transforms year, month, day, hour, bucket[N], truncate[W]; Delta: columns)",
    ),
    COMMIT_INTERVAL,
    Option(
        "sink.maintenance.interval",
        str,
        "1h",
        check=duration_check,
        description="how often each table is compacted and its old snapshots or versions expired (0: never)",
    ),
    Option(
        "sink.maintenance.retention",
        str,
        "24h",
        check=duration_check,
        description="how long a replaced snapshot or version stays readable (time travel, a reader in the middle "
        "of a scan); its files are deleted after",
    ),
    Option(
        "sink.maintenance.small-file-size",
        int,
        32 << 20,
        check=positive,
        description="bytes: smaller files are compacted",
    ),
    Option(
        "sink.maintenance.min-small-files",
        int,
        10,
        check=positive,
        description="a table is compacted once it has this many small files",
    ),
    Option(
        "sink.maintenance.delete-ratio",
        float,
        0.3,
        check=ratio,
        description="Iceberg: a data file is rewritten without its deleted rows once the position deletes of "
        "merge-on-read commits remove this share of them (Iceberg's delete-ratio-threshold; a reader's cost "
        "stays bounded)",
    ),
    ZERO_DATE_OPTION,
]
SINK_OPTIONS["iceberg"] = [
    *LAKEHOUSE_OPTIONS,
    sink_name("iceberg"),
    Option(
        "catalog.name",
        str,
        "iceberg",
        description="the catalog's name: a SQL (JDBC) catalog keeps its tables under it, so it is the name Spark "
        "or Trino give this catalog",
    ),
    Option(
        "catalog.properties.",
        dict,
        {},
        check=_iceberg_catalog,
        description="the catalog's properties, as pyiceberg's load_catalog takes them (type, uri, warehouse, ...)",
    ),
    Option(
        "password",
        str,
        "",
        description="the catalog's secret: a sql catalog's database password (put into its uri), a rest catalog's "
        "credential",
    ),
]
SINK_OPTIONS["delta"] = [
    *LAKEHOUSE_OPTIONS,
    sink_name("delta"),
    Option("path", str, description="root URI of the tables: db.tbl is at <path>/db/tbl"),
    Option("storage.options.", dict, {}, description="delta-rs storage options (credentials, endpoint, ...)"),
]
