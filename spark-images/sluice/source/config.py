"""The source's configuration, as the definition's `source` block gives it (read and
checked by pipeline/definition): where the server is, which tables to capture, where to
start, how to split the snapshot, and the server ids each reader of the binlog takes."""

from __future__ import annotations

from dataclasses import dataclass, field

from sluice.errors import DefinitionError
from sluice.source.endpoint import SourceEndpoint
from sluice.source.table_selector import TableSelector
from sluice.source.tls import TlsSettings


@dataclass(frozen=True)
class ServerIdRange:
    start: int
    end: int

    def __len__(self) -> int:
        return self.end - self.start + 1

    def pick(self, index: int) -> int:
        """The server id for the index-th concurrent binlog connection."""
        if index >= len(self):
            raise DefinitionError(
                f"source.server-id: range {self.start}-{self.end} has {len(self)} ids but "
                f"{index + 1} concurrent readers need one each; widen the range"
            )
        return self.start + index

    @property
    def binlog_reader(self) -> int:
        """The id of the pipeline's binlog reader: the range's first."""
        return self.pick(0)

    def snapshot_reader(self, slot: int) -> int:
        """The id of the `slot`-th split reader of a snapshot (a split's backfill window reads
        the binlog), sharing the range's first ids with the binlog reader, which only starts
        after the snapshot."""
        return self.pick(slot)

    @property
    def beside_the_reader(self) -> int:
        """The id of a driver's split reads while the binlog reader runs (tables joining,
        deferred splits): the range's second, or its only one."""
        return self.pick(min(1, len(self) - 1))

    @property
    def verifier(self) -> int:
        """The id of `sluice verify` and online verification, reading beside the pipeline:
        the range's last, which must not be the binlog reader's."""
        if len(self) < 2:
            raise DefinitionError(
                f"source.server-id: verify reads the binlog beside the pipeline's reader, with an id of its own: "
                f"widen the range {self.start}-{self.end} by one"
            )
        return self.pick(len(self) - 1)


@dataclass(frozen=True)
class StartupOptions:
    mode: str
    specific_file: str = ""
    specific_pos: int = 4
    specific_gtid_set: str = ""
    timestamp_millis: int = 0

    @property
    def takes_snapshot(self) -> bool:
        return self.mode in ("initial", "snapshot")

    @property
    def streams(self) -> bool:
        return self.mode != "snapshot"


@dataclass(frozen=True)
class SourceConfig:
    hostname: str
    port: int
    username: str
    password: str = field(repr=False)
    tables: TableSelector
    online_schema_changes: bool  # a migration tool's statements read as one schema change
    server_ids: ServerIdRange
    server_time_zone: str  # a Java ZoneId; how the values sink shows TIMESTAMPs (they are instants)
    startup: StartupOptions
    chunk_size: int
    chunk_key_columns: tuple[tuple[TableSelector, str], ...]
    fetch_size: int
    read_on_driver: bool
    heartbeat_seconds: float
    connect_timeout_seconds: float
    connect_max_retries: int
    reconnect_timeout_seconds: float
    tls: TlsSettings = field(default_factory=TlsSettings)

    def endpoint(self) -> SourceEndpoint:
        return SourceEndpoint(
            self.hostname,
            self.port,
            self.username,
            self.password,
            self.connect_timeout_seconds,
            self.connect_max_retries,
            self.reconnect_timeout_seconds,
            self.tls,
        )

    def chunk_key_column_for(self, database: str, table: str) -> str | None:
        for selector, column in self.chunk_key_columns:
            if selector.selects(database, table):
                return column
        return None
